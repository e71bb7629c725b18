/* trace_build.h — what test_layout.c and test_replay.c share: a temporary
 * folder for the trace and the database, hand-built traces written with the
 * codec (begin(), then ev() and friends, one event a microsecond apart),
 * their replay into a database that `db` then holds open, and one-number
 * SQL queries against it.
 *
 * Header-only, like check.h: include it after check.h. */
#ifndef GMT_TESTS_TRACE_BUILD_H
#define GMT_TESTS_TRACE_BUILD_H

#include "check.h"
#include "db_writer.h"
#include "replay.h"
#include "trace_format.h"

#include <sqlite3.h>
#include <unistd.h>

#define MiB (1024ULL * 1024)

static char tmpdir[64];
static char trace_path[300], db_path[300];
static trace_writer *w;
static uint64_t now_ns = 1000000;
static sqlite3 *db;

/* Makes /tmp/gmt-NAME-XXXXXX with t.zst and t.db in it; -1 when it cannot. */
static int tmpdir_make(const char *name) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gmt-%s-XXXXXX", name);
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(trace_path, sizeof trace_path, "%s/t.zst", tmpdir);
    snprintf(db_path, sizeof db_path, "%s/t.db", tmpdir);
    return 0;
}

/* Ends main(): closes the database, removes the folder, then check_finish. */
static int tmpdir_finish(const char *name) {
    sqlite3_close(db);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        return 1;
    return check_finish(name);
}

/* Starts a new trace at trace_path. */
static void begin(void) {
    char err[256];
    w = trace_writer_open(trace_path, NULL, err, sizeof err);
    CHECK(w != NULL);
    now_ns = 1000000;
}

/* Writes e, a microsecond after the event before. */
static void write_event(trace_event e) {
    now_ns += 1000;
    e.ts_ns = now_ns;
    CHECK(trace_writer_event(w, &e) == 0);
}

/* One event; requested 0 means `size`. */
static void ev(trace_op op, trace_level level, trace_source source, uint64_t addr, uint64_t size,
               uint64_t requested, uint32_t stack) {
    write_event((trace_event){.addr = addr,
                              .size = size,
                              .requested = requested ? requested : size,
                              .stack_id = stack,
                              .tid = 7,
                              .op = (uint8_t)op,
                              .level = (uint8_t)level,
                              .source = (uint8_t)source});
}

/* A segment event as CUPTI reports it, without a stack. */
static void cupti_segment(trace_op op, uint64_t addr, uint64_t size) {
    ev(op, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, addr, size, 0, 0);
}

enum { DB_READ_WRITE, DB_READ_ONLY };

/* Closes the trace, replays it with `opt` (may be NULL) into a new database
 * at path and opens that as `db` (closing the one before), read-only or as
 * sqlite3_open() would. */
static void replay_with(const char *path, int mode, const replay_options *opt) {
    char err[512];
    CHECK(trace_writer_close(w, NULL, err, sizeof err) == 0);
    db_writer *dw = db_writer_open(path, DB_EVENTS_STORE, err, sizeof err);
    CHECK(dw != NULL);
    replay_summary sum;
    int rc = replay_trace(trace_path, dw, opt, &sum, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "replay: %s\n", err);
    CHECK(rc == 0);
    rc = db_writer_finish(dw, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "db_writer_finish: %s\n", err);
    CHECK(rc == 0);
    if (db)
        sqlite3_close(db);
    int flags =
        mode == DB_READ_ONLY ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    CHECK(sqlite3_open_v2(path, &db, flags, NULL) == SQLITE_OK);
}

/* replay_with, without options. */
static void replay_it(const char *path, int mode) { replay_with(path, mode, NULL); }

/* The first column of the first row: -1 for NULL, -999 for no row, -998 for an error. */
static int64_t q(const char *sql) {
    sqlite3_stmt *st;
    int64_t v = -999;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "SQL error in %s: %s\n", sql, sqlite3_errmsg(db));
        return -998;
    }
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

#endif
