/* input.c — input detection and the database cache (see input.h).
 *
 * The cache file name is a hash of everything the database depends on: the
 * input's real path, size and modification time, the step rule, and
 * GMT_REPLAY_KEY, a hash of the sources that make the database (every source
 * linked into gmt_an_input and gmt_an_store, the categories a build keeps,
 * and the headers beside them) generated at build time by
 * cmake/replay_key.cmake. So a stale database is never reused: a changed
 * input or a memanalyze built from other sources simply gets a new file. A database is built under
 * a temporary name and renamed into place (db_writer.c), so two memanalyze processes racing on one
 * input both end up with a complete file. */
#include "input.h"

#include "db_writer.h"
#include "gmt_clock.h"
#include "gmt_env.h"
#include "gmt_hash.h"
#include "progress.h"
#include "replay.h"
#include "replay_key.h" /* generated: GMT_REPLAY_KEY */
#include "schema_check.h"
#include "snapshot_import.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int input_detect(const char *path, input_kind *kind, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        snprintf(err, errlen, "%s is a directory", path);
        return -1;
    }
    unsigned char head[16] = {0};
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    if (n <= 0) {
        snprintf(err, errlen, "%s is empty: not a trace, snapshot or database", path);
        return -1;
    }
    if (n >= 4 && memcmp(head, "\x28\xb5\x2f\xfd", 4) == 0)
        *kind = INPUT_TRACE;
    else if (n >= 16 && memcmp(head, "SQLite format 3", 16) == 0)
        *kind = INPUT_DATABASE;
    else if (n >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5)
        *kind = INPUT_SNAPSHOT; /* pickle protocol 2-5, as torch writes */
    else {
        snprintf(err, errlen,
                 "%s is not a gpumemtrace trace, a PyTorch memory snapshot or a memanalyze "
                 "database",
                 path);
        return -1;
    }
    return 0;
}

static int cache_dir(char *out, size_t len, char *err, size_t errlen) {
    const char *dir = getenv(GMT_ENV_CACHE_DIR);
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (dir && *dir)
        snprintf(out, len, "%s", dir);
    else if (xdg && *xdg)
        snprintf(out, len, "%s/gpumemtrace", xdg);
    else if (home && *home)
        snprintf(out, len, "%s/.cache/gpumemtrace", home);
    else
        snprintf(out, len, "/tmp/gpumemtrace-%d", (int)getuid());
    /* mkdir -p */
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", out);
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p)
            continue;
        char c = *p;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create cache directory %s: %s", tmp, strerror(errno));
            return -1;
        }
        if (!c)
            break;
        *p = c;
    }
    return 0;
}

static void show_progress(void *ctx, uint64_t done, uint64_t total) {
    progress_update(ctx, done, total);
}

/* The process's peak resident set so far, KB (for GMT_TIMING). */
static long peak_rss_kb(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

int input_build_database(const char *path, input_kind kind, const char *db_path,
                         const input_options *opt, char *err, size_t errlen) {
    snapshot_facts facts;
    snapshot_import *snap = NULL;
    if (kind == INPUT_SNAPSHOT) {
        /* A snapshot becomes a trace, handed to the replay record by record as it is written
         * (twice: the replay's two passes), with no file between them. */
        double ts = gmt_seconds();
        if (!(snap = snapshot_import_open(path, &facts, err, errlen)))
            return -1;
        if (getenv(GMT_ENV_TIMING))
            fprintf(stderr, "snapshot read: %.3f s\n", gmt_seconds() - ts);
    }
    double t0 = gmt_seconds();
    db_writer *db = db_writer_open(
        db_path, opt && opt->plain_events ? DB_EVENTS_TABLE : DB_EVENTS_STORE, err, errlen);
    if (!db) {
        snapshot_import_close(snap);
        return -1;
    }
    replay_options ro = {.step_word = opt ? opt->step_word : NULL, .timestamps = -1, .history = -1};
    if (kind == INPUT_SNAPSHOT) { /* what the snapshot says beyond its events */
        ro.settings = &facts.settings;
        ro.settings_source = facts.settings_source;
        ro.timestamps = facts.timestamps;
        ro.history = facts.history;
    }
    /* A progress line for people waiting at a terminal on a large input. */
    struct stat in_st;
    progress line;
    progress_start(&line, NULL, path);
    if ((!opt || !opt->quiet) && isatty(2) && stat(path, &in_st) == 0 &&
        in_st.st_size > (16 << 20)) {
        progress_start(&line, stderr, path);
        ro.progress = show_progress;
        ro.progress_ctx = &line;
        progress_phase(&line, "reading"); /* the replay's first pass: until it reports */
    }
    replay_summary sum;
    int replayed = snap ? replay_records(snapshot_import_source, snap, db, &ro, &sum, err, errlen)
                        : replay_trace(path, db, &ro, &sum, err, errlen);
    snapshot_import_close(snap);
    if (replayed != 0) {
        progress_clear(&line);
        db_writer_abort(db);
        return -1;
    }
    char real[PATH_MAX];
    struct stat st;
    db_writer_meta_text(db, "input_format",
                        kind == INPUT_SNAPSHOT ? "pytorch_snapshot" : "gpumemtrace");
    db_writer_meta_text(db, "input_path", realpath(path, real) ? real : path);
    if (stat(path, &st) == 0) {
        db_writer_meta_int(db, "input_size", (int64_t)st.st_size);
        db_writer_meta_int(db, "input_mtime_ns",
                           (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
    }
    db_writer_meta_text(db, "analyzer_version", GMT_REPLAY_KEY);
    progress_phase(&line,
                   opt && opt->finish ? "indexing and categorizing" : "building the indexes of");
    double t1 = gmt_seconds();
    long rss_replay = peak_rss_kb();
    if (opt && opt->finish) /* on the file before anyone else can see it */
        db_writer_before_rename(db, opt->finish, opt->finish_ctx);
    int rc = db_writer_finish(db, err, errlen);
    progress_clear(&line);
    /* What the build freed (the writer thread's arena above all) goes back to the system now,
     * not after the command that follows has added its own on top: a cold `report` of 16 M
     * events peaked at 68.6 MB this way, the build alone at 57 MB. */
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    if (getenv(GMT_ENV_TIMING)) /* for bench/: where an import's time goes */
        fprintf(stderr,
                "import: %llu events, replay+load %.3f s (peak RSS %ld KB), commit+indexes %.3f s "
                "(%ld KB)\n",
                (unsigned long long)sum.events, t1 - t0, rss_replay, gmt_seconds() - t1,
                peak_rss_kb());
    return rc;
}

/* The database of path: 0 when it is there (a database input, or a fresh cache), 1 when it
 * must be built first (*kind set), -1 on an error. */
static int find_database(const char *path, const input_options *opt, input_kind *kind,
                         char *db_path, size_t db_len, char *err, size_t errlen) {
    if (input_detect(path, kind, err, errlen) != 0)
        return -1;
    if (*kind == INPUT_DATABASE) { /* the user's: untrusted until its schema is ours */
        if (schema_check_file(path, err, errlen) != 0)
            return -1;
        snprintf(db_path, db_len, "%s", path);
        return 0;
    }
    char real[PATH_MAX], dir[PATH_MAX];
    struct stat st;
    if (!realpath(path, real) || stat(real, &st) != 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (cache_dir(dir, sizeof dir, err, errlen) != 0)
        return -1;
    uint64_t h = GMT_HASH_SEED;
    int64_t facts[2] = {(int64_t)st.st_size,
                        (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec};
    const char *word = opt && opt->step_word ? opt->step_word : "step";
    h = gmt_hash_bytes(h, real, strlen(real));
    h = gmt_hash_bytes(h, facts, sizeof facts);
    h = gmt_hash_bytes(h, word, strlen(word) + 1);
    h = gmt_hash_bytes(h, GMT_REPLAY_KEY, sizeof GMT_REPLAY_KEY);
    const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
    snprintf(db_path, db_len, "%s/%.64s-%016llx.db", dir, base, (unsigned long long)h);
    return access(db_path, R_OK) == 0 ? 0 : 1;
}

int input_find_database(const char *path, const input_options *opt, char *db_path, size_t db_len,
                        char *err, size_t errlen) {
    input_kind kind;
    return find_database(path, opt, &kind, db_path, db_len, err, errlen);
}

int input_database(const char *path, const input_options *opt, char *db_path, size_t db_len,
                   char *err, size_t errlen) {
    input_kind kind;
    int found = find_database(path, opt, &kind, db_path, db_len, err, errlen);
    if (found != 1)
        return found;
    return input_build_database(path, kind, db_path, opt, err, errlen);
}
