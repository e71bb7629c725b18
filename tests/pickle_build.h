/* pickle_build.h — what test_pickle.c and test_snapshot.c share: a tiny
 * pickle writer for hand-assembled inputs (pb_* helpers), the source tree
 * the test runs against (argv[1], GMT_SOURCE_DIR or this file's path), the
 * pickles tests/make_pickles.py writes into a temporary folder, and the real
 * snapshots in ../shared/data/pytorch.
 *
 * Header-only, like check.h: include it after check.h. */
#ifndef GMT_TESTS_PICKLE_BUILD_H
#define GMT_TESTS_PICKLE_BUILD_H

#include "check.h"

#include <sys/stat.h>
#include <unistd.h>

/* ---- a tiny pickle writer ----------------------------------------------- */

typedef struct pb {
    unsigned char *b;
    size_t len, cap;
    uint32_t memo; /* next MEMOIZE index (test_snapshot.c) */
} pb;

static inline void pb_raw(pb *w, const void *p, size_t n) {
    if (w->len + n > w->cap) {
        w->cap = (w->len + n) * 2 + 64;
        w->b = realloc(w->b, w->cap);
        if (!w->b)
            abort();
    }
    memcpy(w->b + w->len, p, n);
    w->len += n;
}

static inline void pb_op(pb *w, int op) {
    unsigned char c = (unsigned char)op;
    pb_raw(w, &c, 1);
}

/* v in n little-endian bytes (zeros past the 8th). */
static inline void pb_le(pb *w, uint64_t v, int n) {
    for (int i = 0; i < n; i++)
        pb_op(w, i < 8 ? (int)((v >> (8 * i)) & 0xFF) : 0);
}

/* SHORT_BINUNICODE, or BINUNICODE from 256 bytes on. */
static inline void pb_str(pb *w, const char *s) {
    size_t n = strlen(s);
    if (n < 256) {
        pb_op(w, 0x8c);
        pb_op(w, (int)n);
    } else {
        pb_op(w, 'X');
        pb_le(w, n, 4);
    }
    pb_raw(w, s, n);
}

/* An int in few bytes: BININT1, BININT2 (when binint2 is set), BININT, else
 * LONG1 of 8 bytes. Python uses BININT2; the hand-made snapshots of
 * test_snapshot.c are written without it. */
static inline void pb_int_with(pb *w, int64_t v, int binint2) {
    if (v >= 0 && v < 256) {
        pb_op(w, 'K');
        pb_op(w, (int)v);
    } else if (binint2 && v >= 0 && v < 65536) {
        pb_op(w, 'M');
        pb_le(w, (uint64_t)v, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        pb_op(w, 'J');
        pb_le(w, (uint64_t)v, 4);
    } else {
        pb_op(w, 0x8a);
        pb_op(w, 8);
        pb_le(w, (uint64_t)v, 8);
    }
}

/* An int as Python writes it. */
static inline void pb_int(pb *w, int64_t v) { pb_int_with(w, v, 1); }

/* ---- the source tree ------------------------------------------------------ */

static char source_dir[4096];

static inline void find_source_dir(int argc, char **argv) {
    if (argc > 1) {
        snprintf(source_dir, sizeof source_dir, "%s", argv[1]);
        return;
    }
#ifdef GMT_SOURCE_DIR
    snprintf(source_dir, sizeof source_dir, "%s", GMT_SOURCE_DIR);
#else
    snprintf(source_dir, sizeof source_dir, "%s", __FILE__);
    char *slash = strrchr(source_dir, '/');
    if (slash)
        *slash = '\0';
    slash = strrchr(source_dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(source_dir, sizeof source_dir, ".");
#endif
}

/* ---- pickles written by Python ---------------------------------------------- */

/* Runs tests/make_pickles.py into a new folder made from tmpl (as mkdtemp
 * does) and returns it; NULL when python3 or the script is absent (a note
 * names `what`, which goes unchecked) or the folder cannot be made. */
static inline char *python_pickles_make(char *tmpl, const char *what) {
    char script[4200], cmd[8600];
    snprintf(script, sizeof script, "%s/tests/make_pickles.py", source_dir);
    if (access(script, R_OK) != 0 || system("python3 -c pass >/dev/null 2>&1") != 0) {
        fprintf(stderr, "note: no python3 or %s: %s not checked\n", script, what);
        return NULL;
    }
    char *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    if (!dir)
        return NULL;
    snprintf(cmd, sizeof cmd, "python3 '%s' --out '%s'", script, dir);
    CHECK(system(cmd) == 0);
    return dir;
}

/* Removes what python_pickles_make wrote, and its folder. */
static inline void python_pickles_remove(const char *dir) {
    static const char *const names[] = {
        "values-p2.pickle", "values-p3.pickle",   "values-p4.pickle",  "values-p5.pickle",
        "object.pickle",    "snapshot-p2.pickle", "snapshot-p4.pickle"};
    char path[4200];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* ---- the real snapshots ------------------------------------------------------ */

/* Writes the folder of the real snapshots into dir; 0 when it is absent. */
static inline int real_snapshots_dir(char *dir, size_t size) {
    snprintf(dir, size, "%s/../shared/data/pytorch", source_dir);
    struct stat st;
    return stat(dir, &st) == 0;
}

/* Ends main(): check_finish, but a skip (77) when the real snapshots were
 * absent (real_files_checked 0) and nothing else failed. */
static inline int finish_or_skip(const char *name, int real_files_checked) {
    if (!real_files_checked && !check_failures)
        CHECK_SKIP("%s/../shared/data/pytorch is absent (all other checks passed)", source_dir);
    return check_finish(name);
}

#endif
