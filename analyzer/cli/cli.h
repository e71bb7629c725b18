/* cli.h — what every memanalyze command does the same way: print an error
 * as one line, and get a read-only SQLite handle on the database of any
 * input (building it on first use, see input.h). */
#ifndef GMT_CLI_H
#define GMT_CLI_H

#include "db_query.h"
#include "input.h"

#include <sqlite3.h>
#include <stdint.h>

/* Prints "memanalyze: <message>" on stderr and returns 2 (the exit status
 * for a user error), so commands can `return cli_error(...)`. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses a non-negative integer option (--device, --top, --width ...) no
 * larger than max. Returns 0, or prints "bad --NAME 'text'" and returns 2. */
int cli_parse_count(const char *name, const char *text, long max, long *out);

/* The options report, leaks and the pictures share, with the same letters
 * in their getopt tables: 'd' --device, 'f' --from, 't' --to, 'j' --json,
 * 'n' --top, 's' --step-rule. */
typedef struct cli_window {
    int device; /* -1: not given */
    const char *from, *to;
    int json;
    long top; /* -1: not given */
    input_options io;
} cli_window;

#define CLI_WINDOW_INIT                                                                            \
    { .device = -1, .top = -1 }

/* Handles option `c` when it is one of the shared ones: returns 1 (taken),
 * 0 (not one of them), or 2 (a bad value, error printed). */
int cli_window_option(cli_window *w, int c, const char *arg);

/* Opens the database of `input` read-only into *db (built first when needed, with its
 * category sums, category_store_file, unless opt->finish says otherwise). Returns 0, or prints
 * the error and returns 2. */
int cli_open_db(const char *input, const input_options *opt, sqlite3 **db);

/* Opens the database file at `path` as cli_open_db does (read-only, one read transaction, ours
 * by its schema version), printing nothing. 0, or -1 with a one-line message in err. */
int cli_open_db_file(const char *path, sqlite3 **db, char *err, size_t errlen);

/* cli_open_db, and the device a command looks at: `wanted`, which must have events there
 * (else "INPUT: no device N"), or the one with the highest peak when wanted < 0. Returns 0, or
 * prints the error and returns 2 with *db closed. */
int cli_open_device(const char *input, const input_options *opt, long wanted, sqlite3 **db,
                    int *device);

#endif
