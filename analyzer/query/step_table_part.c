/* step_table_part.c — a part of the per-step table (step_table_part, step_table.h): the rows
 * asked for from the summary tables in the table's order (the steps_end index), the peaks and
 * counts of those rows and of their neighbours from their events alone, the same figures as
 * step_table's whole answer (step_table_internal.h: what the two share). The viewer's first
 * page in the time of its rows, not of the run. */
#include "step_table.h"
#include "step_table_internal.h"

#include "db_query.h"
#include "gmt_assert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the device's rows are among the steps (step_table_part): the step_ends rows of a device
 * are those of the steps that ended once it had a row (replay_write_step_ends), so, in the
 * table's order (by end, then number), its rows are the steps that end at or after its first
 * step_ends row (*from_end); those that end before a history that begins mid-run are cut
 * (h->before) and come first. *skip the cut rows, *total the table's rows: reads of the
 * steps_end index (a count of its entries, ~0.5 ms per 30 k steps). 0, or -1 (SQL). */
static int part_bounds(sqlite3 *db, int device, step_history *h, size_t *skip, size_t *total,
                       int64_t *from_end) {
    *skip = *total = 0;
    *from_end = db_query_i64(db,
                             "SELECT end_event_id FROM step_ends WHERE device = ?1 ORDER BY "
                             "end_event_id LIMIT 1",
                             device, 0, INT64_MAX);
    if (*from_end == INT64_MAX) /* no row: none of the steps is the device's */
        return 0;
#ifdef GMT_INVARIANTS_ABORT /* what the counts rely on, paid for (a lookup a step) in tests */
    GMT_NEVER(db_query_i64(db,
                           "SELECT count(*) FROM steps s WHERE s.end_event_id >= ?2 AND NOT "
                           "EXISTS (SELECT 1 FROM step_ends e WHERE e.device = ?1 AND "
                           "e.end_event_id = s.end_event_id)",
                           device, *from_end, 0) != 0);
#endif
    int64_t all =
        db_query_i64(db, "SELECT count(*) FROM steps WHERE end_event_id >= ?1", *from_end, 0, -1);
    if (all < 0)
        return -1;
    *total = (size_t)all;
    if (!h->mid_run || h->first_event <= 0)
        return 0;
    sqlite3_stmt *st = db_statement(db, "SELECT count(*), min(step), max(step) FROM steps WHERE "
                                        "end_event_id >= ?1 AND end_event_id < ?2");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, *from_end);
    sqlite3_bind_int64(st, 2, h->first_event);
    int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -1;
    if (rc == 0 && (h->before = sqlite3_column_int64(st, 0)) > 0) {
        h->before_first = sqlite3_column_int64(st, 1);
        h->before_last = sqlite3_column_int64(st, 2);
        *skip = (size_t)h->before;
        *total -= *skip;
        *from_end = h->first_event;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Rows [skip, skip + limit) of the table's order: the end states as read_ends reads them (but
 * the segments), each one's step_ends event in at[]. */
static int read_ends_part(sqlite3 *db, int device, size_t skip, size_t limit, step_row *rows,
                          int64_t *at, size_t *count) {
    sqlite3_stmt *st = db_statement(
        db, "SELECT s.step, s.begin_event_id, s.end_event_id, e.allocated_bytes, "
            "e.reserved_bytes, e.event_id, f.trapped_bytes, f.reserved_bytes, s.end_ts_ns IS "
            "NULL FROM steps s CROSS JOIN step_ends e ON e.device = ?1 AND e.end_event_id = "
            "s.end_event_id LEFT JOIN free_splits f ON f.device = ?1 AND f.event_id = e.event_id "
            "ORDER BY s.end_event_id, s.step LIMIT ?2 OFFSET ?3");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, (int64_t)limit);
    sqlite3_bind_int64(st, 3, (int64_t)skip);
    size_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < limit) {
        step_row_read(st, &rows[n]);
        at[n] = sqlite3_column_int64(st, 5);
        n++;
    }
    sqlite3_finalize(st);
    *count = n;
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

/* The segments at the end of rows[0, n) (read_ends' column, for these rows only). */
static int read_segments(sqlite3 *db, step_row *rows, const int64_t *at, size_t n) {
    sqlite3_stmt *st = db_statement(db, "SELECT segments FROM event_rows WHERE event_id = ?1");
    if (!st)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, at[i]);
        int got = sqlite3_step(st);
        if (got == SQLITE_ROW)
            rows[i].segments_at_end = db_column_i64(st, 0, 0);
        else if (got != SQLITE_DONE)
            rc = -1;
    }
    sqlite3_finalize(st);
    return rc;
}

int step_table_part(sqlite3 *db, int device, size_t first, size_t count, step_row **rows, size_t *n,
                    size_t *total, step_history *history, char *err, size_t errlen) {
    step_history h = {.first_step = -1};
    *rows = NULL;
    *n = *total = 0;
    size_t skip, all;
    int64_t from_end; /* the rows are the steps that end from it on */
    if (step_history_begin(db, device, &h.mid_run, &h.first_event) != 0 ||
        part_bounds(db, device, &h, &skip, &all, &from_end) != 0) {
        snprintf(err, errlen, "reading the steps: %s", sqlite3_errmsg(db));
        return -1;
    }
    if (all + skip == 0 && h.first_event > 0 &&
        db_query_i64(db, "SELECT count(*) FROM steps", 0, 0, 0) == 0)
        return 1; /* implicit steps: no summary rows to take a part of */
    /* rows [0, hi) read (the reserved jump before `first` is theirs), [lo, hi) measured */
    size_t from = first < all ? first : all, to = count < all - from ? from + count : all;
    size_t lo = from > NEIGHBOURS ? from - NEIGHBOURS : 0;
    size_t hi = all - to > NEIGHBOURS ? to + NEIGHBOURS : all;
    step_row *r = malloc((hi ? hi : 1) * sizeof *r);
    int64_t *at = malloc((hi ? hi : 1) * sizeof *at);
    int64_t *scratch = malloc((2 * NEIGHBOURS + 2) * sizeof *scratch);
    size_t got = 0;
    int rc = r && at && scratch ? 0 : -1;
    if (rc == 0 && (read_ends_part(db, device, skip, hi, r, at, &got) != 0 || got != hi ||
                    read_segments(db, r + lo, at + lo, hi - lo) != 0))
        rc = -1;
    for (size_t i = 0; rc == 0 && h.before && i < hi; i++) /* as cut_before_history marks */
        r[i].partial = r[i].begin_event_id < h.first_event;
    if (rc == 0 && step_table_insides(db, device, r + lo, hi - lo) != 0)
        rc = -1;
    if (rc == 0) {
        int64_t before = lo ? r[lo - 1].allocated_at_end : 0;
        if (lo == 0) { /* the state before the earliest begin of all (a covering index scan) */
            int64_t first_begin =
                db_query_i64(db, "SELECT min(begin_event_id) FROM steps WHERE end_event_id >= ?1",
                             from_end, 0, INT64_MAX);
            before = db_query_i64(db,
                                  "SELECT allocated_bytes FROM event_rows WHERE device = ?1 AND "
                                  "event_id <= ?2 ORDER BY event_id DESC LIMIT 1",
                                  device, first_begin, 0);
        }
        for (size_t i = lo; i < hi; i++) { /* as step_table's growth */
            r[i].growth_known = !r[i].partial;
            r[i].growth = r[i].growth_known ? r[i].allocated_at_end - before : 0;
            before = r[i].allocated_at_end;
        }
        step_table_anomalies(r, all, from, to, scratch);
        if (all)
            h.first_step = r[0].step;
        memmove(r, r + from, (to - from) * sizeof *r);
        *rows = r;
        *n = to - from;
        *total = all;
        if (history)
            *history = h;
    } else {
        snprintf(err, errlen, "reading the steps: %s", sqlite3_errmsg(db));
        free(r);
    }
    free(at);
    free(scratch);
    return rc;
}
