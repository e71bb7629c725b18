/* input.h — what the user gave memanalyze, and the database for it.
 *
 * Every command takes any supported input, recognized by content (not by
 * extension): a gpumemtrace trace, a PyTorch memory snapshot pickle, or a
 * database made earlier by memanalyze. For a trace or a snapshot the
 * database is built on first use and kept in the user's cache directory
 * ($GMT_CACHE_DIR, else $XDG_CACHE_HOME/gpumemtrace, else
 * ~/.cache/gpumemtrace), keyed by the input's path, size and modification
 * time, and reused while those are unchanged — never written beside the
 * input, which may be read-only. A cached file is never written in place: it is built, or
 * changed, in a file of its own renamed over it; one that fails its checks is built again,
 * saying so on stderr. The folder is made 0700 and its files 0600; without HOME and
 * XDG_CACHE_HOME it is $TMPDIR/gpumemtrace-UID (TMPDIR else /tmp), used only when it is the
 * user's own directory that nobody else may use. */
#ifndef GMT_INPUT_H
#define GMT_INPUT_H

#include <stddef.h>

typedef enum input_kind {
    INPUT_TRACE,
    INPUT_SNAPSHOT,
    INPUT_DATABASE,
} input_kind;

typedef struct input_options {
    const char *step_word; /* step rule word; NULL: "step" */
    int quiet;             /* no progress line on stderr */
    /* 1: event_rows a plain table any SQLite client reads (`import -o`); 0: the event store,
     * which only memanalyze reads (the cache: built twice as fast, ~5x smaller). */
    int plain_events;
    /* Called on a database just built (complete and closed, at its temporary path) before it
     * is renamed into place: what the layers above keep in it (the categories). NULL:
     * nothing. 0, or -1 with a one-line message, which fails the build (nothing is
     * published). */
    int (*finish)(const char *db_path, void *ctx, char *err, size_t errlen);
    void *finish_ctx;
} input_options;

/* Recognizes the input by its first bytes. Returns 0 and sets *kind, or -1
 * with a one-line message (missing, empty, or not a supported input). */
int input_detect(const char *path, input_kind *kind, char *err, size_t errlen);

/* Builds the database for a trace or snapshot at `db_path`, replacing a regular file there,
 * never anything else (a symbolic link, a device, a FIFO, a directory) nor the input itself; what
 * killed builds of `db_path` left beside it is removed first. 0, or -1 with a one-line
 * message. */
int input_build_database(const char *path, input_kind kind, const char *db_path,
                         const input_options *opt, char *err, size_t errlen);

/* The database of any input when it needs no building (a database input, or a trace or
 * snapshot cached and unchanged): 0 with its path in db_path; 1 when it must be built
 * (input_database does); -1 with a one-line message (missing, not a supported input). */
int input_find_database(const char *path, const input_options *opt, char *db_path, size_t db_len,
                        char *err, size_t errlen);

/* Finds or builds the database for any input; writes its path to db_path.
 * A database input is used as it is. 0, or -1 with a one-line message. */
int input_database(const char *path, const input_options *opt, char *db_path, size_t db_len,
                   char *err, size_t errlen);

/* Adds to the cached database of a trace or snapshot (built first if need be) what `change`
 * writes into a database file (`sql`: every block's category), the way a build makes one:
 * `change` runs on a private copy, renamed over the cached file once it returns 0 — so a kill
 * at any moment leaves the cache as it was, and the commands reading it keep the file they
 * opened. Processes changing one cached database at once take turns (a lock on the file), each
 * on the file the one before published. `change`: 0 (publish the copy), 1 (the database has it
 * already: the copy is dropped), or -1 with a one-line message. A database input is never
 * changed (-1). 0, or -1 with a one-line message. */
int input_change_cache(const char *path, const input_options *opt,
                       int (*change)(const char *db_path, void *ctx, char *err, size_t errlen),
                       void *ctx, char *err, size_t errlen);

/* Where a file made from the database db_path of `path` goes (view's blocks index: `suffix`
 * ".blocks"): beside it for a cached database (the cache folder), or, for a database the user
 * gave, in the cache folder under a name of its real path (nothing is written beside a user's
 * file). 0, or -1 with a one-line message. */
int input_sidecar_path(const char *path, const char *db_path, const char *suffix, char *out,
                       size_t len, char *err, size_t errlen);

#endif
