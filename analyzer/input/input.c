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
 * input both end up with a complete file; what is added to a cached database later (`sql`'s
 * categories of every block) is written the same way, into a copy renamed over it, so a published
 * cache file is never written in place: a kill at any moment leaves it as it was, and readers
 * never wait on a writer. The cache is ours and disposable: a cached file that fails the checks
 * every command makes is built again, saying so; the temporaries of killed builds are removed by
 * the next one (base/db_file.h). The folder is the user's alone: made 0700, its files 0600, and
 * the fallback in /tmp, which anyone could have made first, refused unless it is a directory of
 * the user's own that nobody else may use. */
#include "input.h"

#include "db_file.h"
#include "db_query.h"
#include "db_writer.h"
#include "gmt_clock.h"
#include "gmt_env.h"
#include "gmt_hash.h"
#include "gmt_kill_point.h"
#include "progress.h"
#include "replay.h"
#include "replay_key.h" /* generated: GMT_REPLAY_KEY */
#include "schema_check.h"
#include "snapshot_import.h"

#include <sqlite3.h>

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
#include <sys/file.h>
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

/* mkdir -p, each folder it makes 0700 (as the XDG base directory rules ask): the cache is the
 * user's alone. */
static int make_dirs(const char *path, char *err, size_t errlen) {
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p)
            continue;
        char c = *p;
        *p = 0;
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create cache directory %s: %s", tmp, strerror(errno));
            return -1;
        }
        if (!c)
            break;
        *p = c;
    }
    return 0;
}

/* The fallback folder in TMPDIR, where anyone may have made it first: used only when it is a
 * directory (not a link to one) of the user's that nobody else may use (tmux's rule for its
 * socket folder). 0, or -1 with the reason. */
static int private_dir(const char *dir, char *err, size_t errlen) {
    struct stat st;
    char why[64] = "";
    if (lstat(dir, &st) != 0)
        snprintf(why, sizeof why, "%s", strerror(errno));
    else if (S_ISLNK(st.st_mode))
        snprintf(why, sizeof why, "it is a symbolic link");
    else if (!S_ISDIR(st.st_mode))
        snprintf(why, sizeof why, "it is not a directory");
    else if (st.st_uid != geteuid())
        snprintf(why, sizeof why, "it belongs to uid %ld", (long)st.st_uid);
    else if (st.st_mode & 077)
        snprintf(why, sizeof why, "others may use it (mode %04o)", (unsigned)(st.st_mode & 07777));
    if (!why[0])
        return 0;
    snprintf(err, errlen,
             "cache directory %s is not yours alone: %s (set " GMT_ENV_CACHE_DIR " to use another)",
             dir, why);
    return -1;
}

static int cache_dir(char *out, size_t len, char *err, size_t errlen) {
    const char *dir = getenv(GMT_ENV_CACHE_DIR);
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    const char *tmp = getenv("TMPDIR");
    int fallback = 0;
    if (dir && *dir) {
        snprintf(out, len, "%s", dir);
    } else if (xdg && *xdg) {
        snprintf(out, len, "%s/gpumemtrace", xdg);
    } else if (home && *home) {
        snprintf(out, len, "%s/.cache/gpumemtrace", home);
    } else {
        snprintf(out, len, "%s/gpumemtrace-%d", tmp && *tmp ? tmp : "/tmp", (int)getuid());
        fallback = 1;
    }
    if (make_dirs(out, err, errlen) != 0)
        return -1;
    return fallback ? private_dir(out, err, errlen) : 0;
}

static void show_progress(void *ctx, uint64_t done, uint64_t total) {
    progress_update(ctx, done, total);
}

/* The process's peak resident set so far, KB (for GMT_TIMING). */
static long peak_rss_kb(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* input_build_database's work, into a new file of `mode` (less the umask). */
/* What the cache key and the check after a build know of an input's content: its identity and
 * times (ctime: a rewrite that restores the mtime still moves it), and a hash of its first and
 * last 64 KiB (a trace's first frames and its end record), read as the replay reads them. */
typedef struct input_fingerprint {
    int64_t size, mtime_ns, ctime_ns;
    uint64_t dev, ino, content;
} input_fingerprint;

#define FINGERPRINT_SPAN ((size_t)64 << 10)

static int fingerprint(const char *path, input_fingerprint *fp, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *fp = (input_fingerprint){
        .size = (int64_t)st.st_size,
        .mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
        .ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec,
        .dev = (uint64_t)st.st_dev,
        .ino = (uint64_t)st.st_ino,
        .content = GMT_HASH_SEED};
    static char buf[FINGERPRINT_SPAN];
    off_t at[2] = {0,
                   st.st_size > (off_t)FINGERPRINT_SPAN ? st.st_size - (off_t)FINGERPRINT_SPAN : 0};
    for (int i = 0; i < 2 && (i == 0 || at[1] > 0); i++) {
        ssize_t n = pread(fd, buf, sizeof buf, at[i]);
        if (n > 0)
            fp->content = gmt_hash_bytes(fp->content, buf, (size_t)n);
    }
    close(fd);
    return 0;
}

/* The input changed while it was read: the two passes of the replay may have seen two files. */
static int changed_while_read(const char *path, const input_fingerprint *before, char *err,
                              size_t errlen) {
    input_fingerprint after;
    char ignored[256];
    if (fingerprint(path, &after, ignored, sizeof ignored) == 0 && after.size == before->size &&
        after.mtime_ns == before->mtime_ns && after.ctime_ns == before->ctime_ns &&
        after.ino == before->ino && after.dev == before->dev && after.content == before->content)
        return 0;
    snprintf(err, errlen,
             "%s changed while it was read (still being recorded?): nothing kept; run again, or "
             "analyze a copy",
             path);
    return 1;
}

/* `before` is the input as the cache key saw it (find_database's fingerprint), so that the key
 * and the check after the replay speak of one file; NULL: taken here (import -o). */
static int build(const char *path, input_kind kind, const char *db_path, const input_options *opt,
                 int mode, const input_fingerprint *key_fp, char *err, size_t errlen) {
    snapshot_facts facts;
    snapshot_import *snap = NULL;
    input_fingerprint before;
    if (key_fp)
        before = *key_fp;
    else if (fingerprint(path, &before, err, errlen) != 0)
        return -1;
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
    db_writer *db = db_writer_open_mode(
        db_path, opt && opt->plain_events ? DB_EVENTS_TABLE : DB_EVENTS_STORE, mode, err, errlen);
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
    gmt_kill_point("replayed");
    if (replayed != 0 || changed_while_read(path, &before, err, errlen)) {
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
    gmt_kill_point("build"); /* the rows loaded, no index yet */
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

/* The folder of path (its name's part before the last '/'), and its base name. */
static void split_path(const char *path, char *dir, size_t len, const char **base) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, len, ".");
    else if (slash == path)
        snprintf(dir, len, "/");
    else
        snprintf(dir, len, "%.*s", (int)(slash - path), path);
    *base = slash ? slash + 1 : path;
}

int input_build_database(const char *path, input_kind kind, const char *db_path,
                         const input_options *opt, char *err, size_t errlen) {
    struct stat in, out;
    if (stat(path, &in) == 0 && stat(db_path, &out) == 0 && in.st_dev == out.st_dev &&
        in.st_ino == out.st_ino) {
        snprintf(err, errlen, "%s is the input %s: not replaced", db_path, path);
        return -1;
    }
    char dir[PATH_MAX];
    const char *base;
    split_path(db_path, dir, sizeof dir, &base);
    db_file_sweep(dir, base); /* what killed builds of this file left */
    return build(path, kind, db_path, opt, 0666, NULL, err, errlen);
}

/* Whether the cached database at db_path passes the checks every command makes (cli.c): a
 * regular file, an SQLite database SQLite can read as it is (no hot journal beside it, which a
 * read-only open cannot roll back), of this schema and this build's key. 1 yes, 0 there is none,
 * -1 no (the reason in why). */
static int cache_usable(const char *db_path, char *why, size_t len) {
    struct stat st;
    if (lstat(db_path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(why, len, "%s", strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, len, "not a regular file");
        return -1;
    }
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    int rc = -1;
    db_failures_expected(1); /* a damaged file is an answer here, not the command's failure */
    if (sqlite3_open_v2(db_path, &db,
                        SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT (SELECT value FROM meta WHERE key = 'schema_version'),"
                           " (SELECT value FROM meta WHERE key = 'analyzer_version')",
                           -1, &q, NULL) != SQLITE_OK ||
        sqlite3_step(q) != SQLITE_ROW) {
        snprintf(why, len, "%s",
                 !db ? "out of memory"
                 : sqlite3_extended_errcode(db) == SQLITE_READONLY_ROLLBACK
                     ? "a hot journal beside it, of a write that never finished"
                     : sqlite3_errmsg(db));
    } else if (sqlite3_column_type(q, 0) != SQLITE_INTEGER || sqlite3_column_int64(q, 0) != 1) {
        snprintf(why, len, "not a memanalyze database of this schema");
    } else if (!sqlite3_column_text(q, 1) ||
               strcmp((const char *)sqlite3_column_text(q, 1), GMT_REPLAY_KEY) != 0) {
        snprintf(why, len, "made by another build of memanalyze");
    } else {
        rc = 1;
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    db_failures_expected(0);
    return rc;
}

/* The database of path: 0 when it is there (a database input, or a fresh cache), 1 when it
 * must be built first (*kind set; stale[] says why when a cached file failed its checks, else
 * ""), -1 on an error. */
static int find_database(const char *path, const input_options *opt, input_kind *kind,
                         char *db_path, size_t db_len, char *stale, size_t stale_len,
                         input_fingerprint *fp_out, char *err, size_t errlen) {
    stale[0] = '\0';
    if (input_detect(path, kind, err, errlen) != 0)
        return -1;
    if (*kind == INPUT_DATABASE) { /* the user's: untrusted until its schema is ours */
        if (schema_check_file(path, err, errlen) != 0)
            return -1;
        snprintf(db_path, db_len, "%s", path);
        return 0;
    }
    char real[PATH_MAX], dir[PATH_MAX];
    input_fingerprint fp_local, *fp = fp_out ? fp_out : &fp_local;
    if (!realpath(path, real)) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (fingerprint(real, fp, err, errlen) != 0 || cache_dir(dir, sizeof dir, err, errlen) != 0)
        return -1;
    uint64_t h = GMT_HASH_SEED;
    int64_t facts[6] = {fp->size,         fp->mtime_ns,     fp->ctime_ns,
                        (int64_t)fp->dev, (int64_t)fp->ino, (int64_t)fp->content};
    const char *word = opt && opt->step_word ? opt->step_word : "step";
    h = gmt_hash_bytes(h, real, strlen(real));
    h = gmt_hash_bytes(h, facts, sizeof facts);
    h = gmt_hash_bytes(h, word, strlen(word) + 1);
    h = gmt_hash_bytes(h, GMT_REPLAY_KEY, sizeof GMT_REPLAY_KEY);
    const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
    snprintf(db_path, db_len, "%s/%.64s-%016llx.db", dir, base, (unsigned long long)h);
    return cache_usable(db_path, stale, stale_len) > 0 ? 0 : 1;
}

int input_sidecar_path(const char *path, const char *db_path, const char *suffix, char *out,
                       size_t len, char *err, size_t errlen) {
    input_kind kind;
    if (input_detect(path, &kind, err, errlen) != 0)
        return -1;
    if (kind != INPUT_DATABASE) {
        snprintf(out, len, "%s%s", db_path, suffix);
        return 0;
    }
    char real[PATH_MAX], dir[PATH_MAX];
    if (!realpath(db_path, real)) {
        snprintf(err, errlen, "cannot open %s: %s", db_path, strerror(errno));
        return -1;
    }
    if (cache_dir(dir, sizeof dir, err, errlen) != 0)
        return -1;
    uint64_t h = gmt_hash_bytes(GMT_HASH_SEED, real, strlen(real));
    const char *base = strrchr(real, '/') + 1; /* realpath's answer is absolute */
    snprintf(out, len, "%s/%.64s-%016llx%s", dir, base, (unsigned long long)h, suffix);
    return 0;
}

int input_find_database(const char *path, const input_options *opt, char *db_path, size_t db_len,
                        char *err, size_t errlen) {
    input_kind kind;
    char stale[256];
    return find_database(path, opt, &kind, db_path, db_len, stale, sizeof stale, NULL, err, errlen);
}

/* Builds the cached database db_path of path (found missing or stale): the cache folder's
 * temporaries of dead processes removed first, the file the user's alone (0600). */
static int build_cached(const char *path, input_kind kind, const char *db_path,
                        const input_options *opt, const char *stale,
                        const input_fingerprint *key_fp, char *err, size_t errlen) {
    struct stat st;
    if (stale[0]) { /* a regular file is replaced by the rename (readers keep theirs) */
        fprintf(stderr, "memanalyze: the cached database %s is unusable (%s): building it again\n",
                db_path, stale);
        if (lstat(db_path, &st) == 0 && !S_ISREG(st.st_mode))
            unlink(db_path); /* a link, in the cache: the link goes, not what it names */
    }
    char dir[PATH_MAX];
    const char *base;
    split_path(db_path, dir, sizeof dir, &base);
    db_file_sweep(dir, NULL);
    return build(path, kind, db_path, opt, 0600, key_fp, err, errlen);
}

int input_database(const char *path, const input_options *opt, char *db_path, size_t db_len,
                   char *err, size_t errlen) {
    input_kind kind;
    char stale[256];
    input_fingerprint fp;
    int found =
        find_database(path, opt, &kind, db_path, db_len, stale, sizeof stale, &fp, err, errlen);
    if (found != 1)
        return found;
    return build_cached(path, kind, db_path, opt, stale, &fp, err, errlen);
}

/* The bytes of the file open at from into the empty file open at to: in the kernel where it can
 * (copy_file_range; a reflink on file systems that share blocks), else through a buffer. */
static int copy_file(int from, int to, char *err, size_t errlen) {
    for (;;) {
        ssize_t n = copy_file_range(from, NULL, to, NULL, (size_t)1 << 30, 0);
        if (n > 0)
            continue;
        if (n == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
            break;
        char buf[1 << 16];
        ssize_t r;
        while ((r = read(from, buf, sizeof buf)) != 0) {
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                goto failed;
            for (ssize_t at = 0; at < r;) {
                ssize_t w = write(to, buf + at, (size_t)(r - at));
                if (w < 0 && errno != EINTR)
                    goto failed;
                at += w > 0 ? w : 0;
            }
        }
        return 0;
    }
failed:
    snprintf(err, errlen, "copying the cached database: %s", strerror(errno));
    return -1;
}

int input_change_cache(const char *path, const input_options *opt,
                       int (*change)(const char *db_path, void *ctx, char *err, size_t errlen),
                       void *ctx, char *err, size_t errlen) {
    input_kind kind;
    char db_path[PATH_MAX + 64], stale[256];
    input_fingerprint fp;
    int found = find_database(path, opt, &kind, db_path, sizeof db_path, stale, sizeof stale, &fp,
                              err, errlen);
    if (found == 0 && kind == INPUT_DATABASE) {
        snprintf(err, errlen, "%s is a database given as input: it is not changed", path);
        return -1;
    }
    if (found < 0 ||
        (found == 1 && build_cached(path, kind, db_path, opt, stale, &fp, err, errlen) != 0))
        return -1;
    /* The published file, locked: one change at a time, each on what the one before published
     * (a file renamed over it while this waited is the one to lock). Without locks (some network
     * file systems), changes made at once all succeed, the last one's file staying. */
    int fd = -1;
    for (int tries = 0; fd < 0; tries++) {
        if ((fd = open(db_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
            snprintf(err, errlen, "cannot open %s: %s", db_path, strerror(errno));
            return -1;
        }
        while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
            ;
        struct stat locked, now;
        if (fstat(fd, &locked) != 0 || stat(db_path, &now) != 0 || locked.st_dev != now.st_dev ||
            locked.st_ino != now.st_ino) {
            close(fd);
            fd = -1;
            if (tries == 100) {
                snprintf(err, errlen, "%s keeps being replaced", db_path);
                return -1;
            }
        }
    }
    char dir[PATH_MAX], tmp[PATH_MAX + 96];
    const char *base;
    split_path(db_path, dir, sizeof dir, &base);
    db_file_sweep(dir, NULL);
    int tmp_fd = db_file_temp(db_path, "", 0600, tmp, sizeof tmp, err, errlen);
    int rc = tmp_fd < 0 ? -1 : copy_file(fd, tmp_fd, err, errlen);
    if (rc == 0)
        rc = change(tmp, ctx, err, errlen);
    if (rc == 0 && db_file_publish(tmp, db_path, err, errlen) != 0)
        rc = -1;
    if (rc != 0 && tmp_fd >= 0)
        unlink(tmp);
    if (tmp_fd >= 0)
        close(tmp_fd);
    close(fd);
    return rc < 0 ? -1 : 0;
}
