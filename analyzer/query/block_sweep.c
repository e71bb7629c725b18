/* block_sweep.c — see block_sweep.h. One statement; the join finds a free's
 * allocation through the alloc_event_id index. */
#include "block_sweep.h"

#include "db_query.h"
#include "trace_format.h"

#include <stdlib.h>

struct block_sweep {
    sqlite3_stmt *st;
};

block_sweep *block_sweep_open(sqlite3 *db, int device, int64_t to) {
    block_sweep *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->st = db_statement(
        db, "SELECT e.event_id, e.op, e.size, "
            "CASE WHEN e.op IN ({op:alloc}, {op:map}) THEN e.stack_id ELSE a.stack_id END, "
            "CASE WHEN e.op IN ({op:alloc}, {op:map}) THEN e.stream ELSE a.stream END, "
            "coalesce(e.requested_size, e.size) "
            "FROM event_rows e LEFT JOIN event_rows a ON e.op IN ({op:free}, {op:unmap}) AND "
            "a.event_id = e.alloc_event_id "
            "WHERE e.device = ?1 AND e.kind = {kind:device} AND e.event_id <= ?2 AND ("
            "(e.op IN ({op:alloc}, {op:map}) AND " SQL_IS_BLOCK(
                "e") ") OR "
                     "(e.op IN ({op:free}, {op:unmap}) AND e.alloc_event_id IS NOT NULL "
                     "AND " SQL_IS_BLOCK("a") ")) ORDER BY e.event_id");
    if (!s->st) {
        free(s);
        return NULL;
    }
    sqlite3_bind_int(s->st, 1, device);
    sqlite3_bind_int64(s->st, 2, to);
    return s;
}

int block_sweep_next(block_sweep *s, block_change *c) {
    if (sqlite3_step(s->st) != SQLITE_ROW)
        return 0;
    int op = sqlite3_column_int(s->st, 1);
    c->event_id = sqlite3_column_int64(s->st, 0);
    c->is_alloc = op == TRACE_OP_ALLOC || op == TRACE_OP_MAP;
    c->size = sqlite3_column_int64(s->st, 2);
    c->stack_id = db_column_i64(s->st, 3, 0);
    c->stream = db_column_i64(s->st, 4, 0);
    c->requested = sqlite3_column_int64(s->st, 5);
    return 1;
}

void block_sweep_close(block_sweep *s) {
    if (!s)
        return;
    sqlite3_finalize(s->st);
    free(s);
}
