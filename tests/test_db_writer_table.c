/* test_db_writer_table.c — db_writer in table mode (`import -o`): event_rows written as pages,
 * the other rows through a staging database copied in at the end (analyzer/replay/event_table.h).
 *
 * A database of a few chunks of events and rows of other tables must come out sound (PRAGMA
 * integrity_check), with every event row as given (NULLs too) and the alloc_event_id index
 * answering, the other tables whole (meta keeps schema.sql's rows and the writer's), and nothing
 * left beside it. A writer that fails (events out of order, a NULL where schema.sql says NOT
 * NULL) or is aborted leaves no file at all: not the database, not its staging twin. */
#include "check.h"
#include "check_sqlite.h"

#include "db_writer.h"

#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EVENTS 10000 /* a few chunks of 4,096 */

static char dir[] = "/tmp/test_db_writer_table_XXXXXX";

static int files_in_dir(void) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (d)
        closedir(d);
    return n;
}

/* Event i: an alloc (even) or the free of the alloc before it (odd); event_id i - 3, so the
 * first rows are seed rows. */
static db_event_row event(int i) {
    db_event_row r = {.event_id = i - 3,
                      .ts_ns = i * 10,
                      .device = 0,
                      .op = i % 2,
                      .level = 1,
                      .kind = 0,
                      .source = 1,
                      .addr = 0x7f0000000000 + (int64_t)(i / 2) * 512,
                      .size = 512,
                      .requested_size = i % 3 ? 500 : DB_NULL,
                      .stream = DB_NULL,
                      .pool = DB_NULL,
                      .tid = 4242,
                      .stack_id = i % 7,
                      .segment_id = 1,
                      .alloc_event_id = i % 2 ? i - 4 : DB_NULL,
                      .allocated_bytes = (i % 2) ? 0 : 512,
                      .requested_bytes = 0,
                      .reserved_bytes = 1 << 20,
                      .segments = 1,
                      .largest_free_bytes = DB_NULL};
    return r;
}

static void sound_database(void) {
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/t.db", dir);
    db_writer *w = db_writer_open(path, DB_EVENTS_TABLE, err, sizeof err);
    CHECK(w != NULL);
    if (!w) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    for (int i = 0; i < EVENTS; i++) {
        db_event_row r = event(i);
        CHECK(db_writer_event(w, &r) == 0);
        if (i % 1000 == 0)
            CHECK(db_writer_warning(w, r.event_id, "test", "a warning") == 0);
    }
    CHECK(db_writer_meta_text(w, "test_key", "test value") == 0);
    CHECK(db_writer_finish(w, err, sizeof err) == 0);
    CHECK(files_in_dir() == 1);

    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL);
    CHECK(sqlite3_step(st) == SQLITE_ROW);
    CHECK_STR_EQ((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    CHECK(check_query_int(db, "SELECT count(*) FROM event_rows") == EVENTS);
    CHECK(check_query_int(db, "SELECT min(event_id) FROM event_rows") == -3);
    /* every row as given: compare a few columns of each against the generator */
    sqlite3_prepare_v2(db,
                       "SELECT event_id, ts_ns, op, addr, requested_size, alloc_event_id,"
                       " largest_free_bytes, typeof(stream) FROM event_rows ORDER BY event_id",
                       -1, &st, NULL);
    int i = 0, same = 1;
    for (; sqlite3_step(st) == SQLITE_ROW; i++) {
        db_event_row r = event(i);
        same &= sqlite3_column_int64(st, 0) == r.event_id &&
                sqlite3_column_int64(st, 1) == r.ts_ns && sqlite3_column_int64(st, 2) == r.op &&
                sqlite3_column_int64(st, 3) == r.addr &&
                (r.requested_size == DB_NULL ? sqlite3_column_type(st, 4) == SQLITE_NULL
                                             : sqlite3_column_int64(st, 4) == r.requested_size) &&
                (r.alloc_event_id == DB_NULL ? sqlite3_column_type(st, 5) == SQLITE_NULL
                                             : sqlite3_column_int64(st, 5) == r.alloc_event_id) &&
                sqlite3_column_type(st, 6) == SQLITE_NULL &&
                !strcmp((const char *)sqlite3_column_text(st, 7), "null");
    }
    sqlite3_finalize(st);
    CHECK(i == EVENTS);
    CHECK(same);
    /* the index: a free found from its alloc, and through the allocations view */
    CHECK(check_query_int(db, "SELECT event_id FROM event_rows WHERE alloc_event_id = 4995") ==
          4996);
    CHECK(check_query_int(db, "SELECT count(*) FROM allocations WHERE free_event_id IS NOT NULL") ==
          EVENTS / 2);
    /* the other tables came from staging, whole */
    CHECK(check_query_int(db, "SELECT count(*) FROM warnings") == EVENTS / 1000);
    CHECK(check_query_int(db, "SELECT count(*) FROM meta WHERE key = 'test_key'") == 1);
    CHECK(check_query_int(db, "SELECT count(*) FROM meta") > 1); /* schema.sql's own rows stay */
    CHECK(check_query_int(db, "SELECT count(*) FROM ops") > 5);
    CHECK(check_query_int(db, "SELECT count(*) FROM event_chunks") == (EVENTS + 4095) / 4096);
    sqlite3_close(db);
    unlink(path);
}

static void failures(void) {
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/bad.db", dir);
    /* out of order: the thread fails; finish says so and removes everything */
    db_writer *w = db_writer_open(path, DB_EVENTS_TABLE, err, sizeof err);
    CHECK(w != NULL);
    db_event_row a = event(10), b = event(5);
    db_writer_event(w, &a);
    db_writer_event(w, &b);
    CHECK(db_writer_finish(w, err, sizeof err) == -1);
    CHECK(strstr(err, "out of order") != NULL);
    CHECK(files_in_dir() == 0);

    /* NULL in a NOT NULL column (ts_ns): refused as SQLite's constraint would */
    w = db_writer_open(path, DB_EVENTS_TABLE, err, sizeof err);
    db_event_row c = event(2);
    c.ts_ns = DB_NULL;
    db_writer_event(w, &c);
    CHECK(db_writer_finish(w, err, sizeof err) == -1);
    CHECK(strstr(err, "NOT NULL") != NULL);
    CHECK(files_in_dir() == 0);

    /* aborted after some rows */
    w = db_writer_open(path, DB_EVENTS_TABLE, err, sizeof err);
    for (int i = 0; i < EVENTS; i++) {
        db_event_row r = event(i);
        db_writer_event(w, &r);
    }
    db_writer_abort(w);
    CHECK(files_in_dir() == 0);

    /* nowhere to write */
    CHECK(db_writer_open("/nonexistent/dir/x.db", DB_EVENTS_TABLE, err, sizeof err) == NULL);
    CHECK(err[0] != 0);
}

int main(void) {
    if (!mkdtemp(dir))
        CHECK_SKIP("cannot create a temporary directory");
    sound_database();
    failures();
    rmdir(dir);
    return check_finish("test_db_writer_table");
}
