/* ranks_import.h — the databases of many inputs at once, as `ranks` needs them: one child
 * process per input, at most `jobs` at a time, each finding or building its input's database
 * as any command would (input_database: the cache, so a second run is instant). A process per
 * input, not a thread: one input that crashes the importer, or runs out of memory, takes only
 * itself down, and the others' databases are there for the next run. It lives in input/, next
 * to the cache it fills: building databases is input's job, the command only prints. */
#ifndef GMT_RANKS_IMPORT_H
#define GMT_RANKS_IMPORT_H

#include "input.h"

#include <limits.h>
#include <stddef.h>

typedef struct rank_input {
    const char *path;
    char db_path[PATH_MAX + 64]; /* when ok */
    char error[512];             /* one line, when not ok */
    int ok;
} rank_input;

/* Fills db_path or error of each input; jobs < 1 means one. 0, or -1 when no process could
 * be started at all (each input's own failure is in its error). */
int ranks_import_all(rank_input *inputs, size_t n, int jobs, const input_options *opt);

/* The inputs of a job as `ranks` is given them: each argument a file (kept as given: a missing
 * one fails in its import, with its message), or a directory, for the traces, snapshots and
 * databases in it (by their names' endings; sorted). An input named twice (a file and its
 * directory) is read once, as first named. 0, or -1 out of memory. */
typedef struct input_list {
    char **paths;
    size_t count, cap;
} input_list;

int input_list_expand(input_list *l, const char *arg);
void input_list_drop_repeats(input_list *l);
void input_list_free(input_list *l);

#endif
