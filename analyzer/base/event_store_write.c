/* event_store_write.c — chunks of events into event_chunks, and the alloc_event_id index into
 * event_ends (see event_store.h).
 *
 * The index is the one thing that cannot be written as the events come: it is ordered by the
 * alloc an event ends, and frees come in any order. Its pairs go through sorted_pairs.h (sorted
 * runs spilled beside the database, so memory stays flat however long the trace, merged at the
 * end). */
#include "event_store.h"

#include "event_store_chunk.h"
#include "sorted_pairs.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define ZSTD_LEVEL 1 /* bench/README.md: level 1 against negative levels */

/* The two covering indexes: a chunk's row is mostly its blob (a leaf page each), so the
 * directory the store reads when it opens (event_store_vtab.c) and the chunks a scan picks
 * (event_scan.c) read a page per chunk without them: ~0.1 s each at 100 M events; with them a
 * few pages. */
#define STORE_TABLES_SQL                                                                           \
    "CREATE TABLE event_chunks (chunk INTEGER PRIMARY KEY, first_event_id INTEGER NOT NULL,"       \
    " last_event_id INTEGER NOT NULL, rows INTEGER NOT NULL, raw_bytes INTEGER NOT NULL,"          \
    " data BLOB NOT NULL);\n"                                                                      \
    "CREATE TABLE event_ends (part INTEGER PRIMARY KEY, first_alloc_event_id INTEGER NOT NULL,"    \
    " pairs INTEGER NOT NULL, data BLOB NOT NULL);\n"                                              \
    "CREATE INDEX event_chunks_bounds ON event_chunks (chunk, first_event_id, last_event_id);\n"   \
    "CREATE INDEX event_ends_first ON event_ends (part, first_alloc_event_id);\n"

const char event_store_tables_sql[] = STORE_TABLES_SQL;
const char event_store_schema_sql[] =
    STORE_TABLES_SQL "CREATE VIRTUAL TABLE event_rows USING gmt_event_rows;\n";

struct event_store_writer {
    sqlite3 *db;
    sqlite3_stmt *put_chunk, *put_end;
    ZSTD_CCtx *cctx;
    uint8_t *raw, *packed;
    size_t packed_cap;
    int64_t chunks, parts, last_event_id;
    int have_rows;
    int alloc_index;            /* 0: no event_ends (a plain event_rows has its own index) */
    event_store_pair_sink sink; /* the pairs go there instead of event_ends */
    void *sink_ctx;
    sorted_pairs *pairs; /* made at the first pair */
    size_t run_pairs;    /* 0: sorted_pairs' default */
};

static int fail(char *err, size_t errlen, const char *what, sqlite3 *db) {
    snprintf(err, errlen, "event store: %s%s%s", what, db ? ": " : "",
             db ? sqlite3_errmsg(db) : "");
    return -1;
}

void event_store_writer_free(event_store_writer *w) {
    if (!w)
        return;
    sqlite3_finalize(w->put_chunk);
    sqlite3_finalize(w->put_end);
    ZSTD_freeCCtx(w->cctx);
    free(w->raw);
    free(w->packed);
    sorted_pairs_free(w->pairs);
    free(w);
}

event_store_writer *event_store_writer_new(sqlite3 *db, int alloc_index, char *err, size_t errlen) {
    event_store_writer *w = calloc(1, sizeof *w);
    if (!w) {
        fail(err, errlen, "out of memory", NULL);
        return NULL;
    }
    w->db = db;
    size_t raw_cap = chunk_encoded_bound(EVENT_STORE_CHUNK_ROWS);
    if (ends_encoded_bound(STORE_END_PART_PAIRS) > raw_cap)
        raw_cap = ends_encoded_bound(STORE_END_PART_PAIRS);
    w->packed_cap = ZSTD_compressBound(raw_cap);
    w->raw = malloc(raw_cap);
    w->packed = malloc(w->packed_cap);
    w->alloc_index = alloc_index;
    w->cctx = ZSTD_createCCtx();
    if (!w->raw || !w->packed || !w->cctx) {
        fail(err, errlen, "out of memory", NULL);
        event_store_writer_free(w);
        return NULL;
    }
    if (sqlite3_prepare_v3(db, "INSERT INTO event_chunks VALUES (?,?,?,?,?,?)", -1,
                           SQLITE_PREPARE_PERSISTENT, &w->put_chunk, NULL) != SQLITE_OK ||
        sqlite3_prepare_v3(db, "INSERT INTO event_ends VALUES (?,?,?,?)", -1,
                           SQLITE_PREPARE_PERSISTENT, &w->put_end, NULL) != SQLITE_OK) {
        fail(err, errlen, "preparing", db);
        event_store_writer_free(w);
        return NULL;
    }
    return w;
}

void event_store_writer_set_run_pairs(event_store_writer *w, size_t pairs) {
    if (pairs >= 1 && pairs <= SORTED_PAIRS_RUN_DEFAULT)
        w->run_pairs = pairs;
}

void event_store_writer_send_pairs(event_store_writer *w, event_store_pair_sink sink, void *ctx) {
    w->alloc_index = 1;
    w->sink = sink;
    w->sink_ctx = ctx;
}

_Static_assert(sizeof(store_end_pair) == 2 * sizeof(int64_t) &&
                   offsetof(store_end_pair, event_id) == sizeof(int64_t),
               "a pair is the sink's int64_t[2]: (alloc_event_id, event_id)");

int event_store_write_chunk(event_store_writer *w, const int64_t (*rows)[EVENT_STORE_NCOLS],
                            size_t n, char *err, size_t errlen) {
    if (n == 0 || n > EVENT_STORE_CHUNK_ROWS)
        return fail(err, errlen, "bad chunk size", NULL);
    for (size_t i = 0; i < n; i++) {
        int64_t id = rows[i][EVENT_COL_event_id];
        if (w->have_rows && id <= w->last_event_id)
            return fail(err, errlen, "events out of order", NULL);
        w->last_event_id = id;
        w->have_rows = 1;
        int64_t alloc = rows[i][EVENT_COL_alloc_event_id];
        if (alloc == EVENT_STORE_NULL || !w->alloc_index)
            continue;
        if (!w->pairs &&
            !(w->pairs = sorted_pairs_new(sqlite3_db_filename(w->db, "main"), w->run_pairs)))
            return fail(err, errlen, "out of memory", NULL);
        if (sorted_pairs_add(w->pairs, alloc, id, err, errlen) != 0)
            return -1;
    }
    size_t raw_len = chunk_encode(rows, n, w->raw);
    size_t packed =
        ZSTD_compressCCtx(w->cctx, w->packed, w->packed_cap, w->raw, raw_len, ZSTD_LEVEL);
    if (ZSTD_isError(packed))
        return fail(err, errlen, ZSTD_getErrorName(packed), NULL);
    sqlite3_stmt *st = w->put_chunk;
    sqlite3_bind_int64(st, 1, w->chunks++);
    sqlite3_bind_int64(st, 2, rows[0][EVENT_COL_event_id]);
    sqlite3_bind_int64(st, 3, rows[n - 1][EVENT_COL_event_id]);
    sqlite3_bind_int64(st, 4, (int64_t)n);
    sqlite3_bind_int64(st, 5, (int64_t)raw_len);
    sqlite3_bind_blob(st, 6, w->packed, (int)packed, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : fail(err, errlen, "writing a chunk", w->db);
}

/* A part of event_ends: a sorted_pairs_sink. */
static int put_part(void *ctx, const int64_t (*pairs)[2], size_t n, char *err, size_t errlen) {
    event_store_writer *w = ctx;
    size_t len = ends_encode((const store_end_pair *)pairs, n, w->raw);
    sqlite3_stmt *st = w->put_end;
    sqlite3_bind_int64(st, 1, w->parts++);
    sqlite3_bind_int64(st, 2, pairs[0][0]);
    sqlite3_bind_int64(st, 3, (int64_t)n);
    sqlite3_bind_blob(st, 4, w->raw, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : fail(err, errlen, "writing the index", w->db);
}

int event_store_writer_finish(event_store_writer *w, char *err, size_t errlen) {
    int rc = 0;
    if (w->alloc_index && w->pairs)
        rc = w->sink ? sorted_pairs_drain(w->pairs, STORE_END_PART_PAIRS, w->sink, w->sink_ctx, err,
                                          errlen)
                     : sorted_pairs_drain(w->pairs, STORE_END_PART_PAIRS, put_part, w, err, errlen);
    event_store_writer_free(w);
    return rc;
}
