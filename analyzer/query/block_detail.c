/* block_detail.c — one allocation's row of the `allocations` view (block_detail.h). */
#include "block_detail.h"

#include "db_query.h"

#include <stdio.h>
#include <string.h>

/* Column i's text into buf ("" for NULL). */
static void column_text(sqlite3_stmt *st, int i, char *buf, size_t len) {
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(buf, len, "%s", t ? (const char *)t : "");
}

int block_detail_read(sqlite3 *db, int64_t alloc_id, block_detail *out, char *err, size_t errlen) {
    static const char sql[] =
        "SELECT device, kind, addr, size, requested_size, stream, segment_id, alloc_ts_ns, "
        "free_event_id, free_ts_ns, free_requested_ts_ns, alloc_step, free_step, "
        "alloc_stack_id, free_stack_id, category, tensor_name "
        "FROM allocations WHERE alloc_id = ?1";
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    if (db_prepare(db, sql, &st) != SQLITE_OK) {
        snprintf(err, errlen, "reading allocation %lld: %s", (long long)alloc_id,
                 sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, alloc_id);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        if (rc != SQLITE_DONE)
            snprintf(err, errlen, "reading allocation %lld: %s", (long long)alloc_id,
                     sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 1 : -1;
    }
    out->alloc_id = alloc_id;
    out->device = sqlite3_column_int(st, 0);
    column_text(st, 1, out->kind, sizeof out->kind);
    out->addr = (uint64_t)sqlite3_column_int64(st, 2);
    out->size = sqlite3_column_int64(st, 3);
    out->requested = db_column_i64(st, 4, -1);
    out->have_stream = sqlite3_column_type(st, 5) != SQLITE_NULL;
    out->stream = (uint64_t)sqlite3_column_int64(st, 5);
    out->segment_id = db_column_i64(st, 6, 0);
    out->alloc_ts_ns = sqlite3_column_int64(st, 7);
    out->free_event_id = db_column_i64(st, 8, 0);
    out->free_ts_ns = db_column_i64(st, 9, -1);
    out->free_requested_ts_ns = db_column_i64(st, 10, -1);
    out->alloc_step = db_column_i64(st, 11, -1);
    out->free_step = db_column_i64(st, 12, -1);
    out->alloc_stack_id = db_column_i64(st, 13, 0);
    out->free_stack_id = db_column_i64(st, 14, 0);
    column_text(st, 15, out->category, sizeof out->category);
    column_text(st, 16, out->tensor_name, sizeof out->tensor_name);
    sqlite3_finalize(st);
    return 0;
}
