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

#endif
