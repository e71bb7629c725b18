/* step_table_part.c — a part of the per-step table (step_table_part, step_table.h): the rows
 * asked for from the summary tables in the table's order (the steps_end index), the peaks and
 * counts of those rows and of their neighbours from their events alone, the same figures as
 * step_table's whole answer (step_table_internal.h: what the two share). The viewer's first
 * page in the time of its rows, not of the run; which rows a window's steps are
 * (step_table_overlap) and what the parts of a table share (step_table_order), from the steps'
 * indexes alone. */
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

/* Row `index` of the table's order (the steps that end at or after rows_from, by end, then
 * number): its end and number. A walk of steps_end's entries (covering: ~0.5 ms per 30 k).
 * 1, 0 (no such row), or -1 (SQL). */
static int row_key(sqlite3 *db, int64_t rows_from, size_t index, int64_t *end, int64_t *step) {
    sqlite3_stmt *st = db_statement(db, "SELECT end_event_id, step FROM steps WHERE end_event_id "
                                        ">= ?1 ORDER BY end_event_id, step LIMIT 1 OFFSET ?2");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, rows_from);
    sqlite3_bind_int64(st, 2, (int64_t)index);
    int got = sqlite3_step(st), rc = got == SQLITE_ROW ? 1 : got == SQLITE_DONE ? 0 : -1;
    if (rc == 1) {
        *end = sqlite3_column_int64(st, 0);
        *step = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The first of rows [2, last] of the table's order (from rows_from; last SIZE_MAX: to its end)
 * that is a reserved jump (step_table.h: the first is the only one), as step_table_anomalies
 * finds it, from what it reads of them: whether each is open, and its reserved at its end, in
 * *row (SIZE_MAX: none). The steps_end entries and the device's step_ends rows walked side by
 * side (both in end order; a step_ends row is every step's that ends at its end, and some are
 * no step's: a piece of a step that ended before the step did, the run's end), no join per
 * row: ~0.3 µs a row, stopped at the jump. 0, or -1 (SQL). */
static int first_jump_in(sqlite3 *db, int device, int64_t rows_from, size_t last, size_t *row) {
    *row = SIZE_MAX;
    /* an open step ends at the trace's last event (schema.sql), the latest end of all: the
     * others' open-ness is not read (steps_end covers the walk) */
    sqlite3_stmt *st = db_statement(
        db, "SELECT end_event_id, CASE WHEN end_event_id < (SELECT max(end_event_id) FROM steps) "
            "THEN 0 ELSE end_ts_ns IS NULL END FROM steps WHERE end_event_id >= ?1 ORDER BY "
            "end_event_id, step LIMIT ?2");
    sqlite3_stmt *ends = db_statement(db, "SELECT end_event_id, reserved_bytes FROM step_ends "
                                          "WHERE device = ?1 AND end_event_id >= ?2 ORDER BY "
                                          "end_event_id");
    int rc = st && ends ? 0 : -1, got = SQLITE_DONE;
    if (rc == 0) {
        sqlite3_bind_int64(st, 1, rows_from);
        sqlite3_bind_int64(st, 2, last == SIZE_MAX ? -1 : (int64_t)last + 1);
        sqlite3_bind_int(ends, 1, device);
        sqlite3_bind_int64(ends, 2, rows_from);
    }
    int64_t at = INT64_MIN, reserved = 0, before = 0;
    for (size_t i = 0; rc == 0 && *row == SIZE_MAX && (got = sqlite3_step(st)) == SQLITE_ROW; i++) {
        int64_t end = sqlite3_column_int64(st, 0);
        while (rc == 0 && at < end) { /* the device's state at this end */
            if (sqlite3_step(ends) != SQLITE_ROW) {
                rc = -1;
                break;
            }
            at = sqlite3_column_int64(ends, 0);
            reserved = db_column_i64(ends, 1, 0);
        }
        if (rc == 0 && GMT_NEVER(at != end)) /* a row without its step_ends row: part_bounds */
            rc = -1;
        step_row r = {.reserved_at_end = reserved, .open = sqlite3_column_int(st, 1)};
        if (rc == 0 && !r.open && i >= 2 && step_table_reserved_jump(before, &r, i) > 0)
            *row = i;
        before = reserved;
    }
    if (rc == 0 && got != SQLITE_ROW && got != SQLITE_DONE)
        rc = -1;
    sqlite3_finalize(st);
    sqlite3_finalize(ends);
    return rc;
}

/* `limit` rows of the table's order from the one whose key (end, step) is given (rows_from,
 * INT64_MIN: the first): the end states as read_ends reads them (but the segments), each one's
 * step_ends event in at[]. */
static int read_ends_part(sqlite3 *db, int device, int64_t key_end, int64_t key_step, size_t limit,
                          step_row *rows, int64_t *at, size_t *count) {
    sqlite3_stmt *st = db_statement(
        db, "SELECT s.step, s.begin_event_id, s.end_event_id, e.allocated_bytes, "
            "e.reserved_bytes, e.event_id, f.trapped_bytes, f.reserved_bytes, s.end_ts_ns IS "
            "NULL FROM steps s CROSS JOIN step_ends e ON e.device = ?1 AND e.end_event_id = "
            "s.end_event_id LEFT JOIN free_splits f ON f.device = ?1 AND f.event_id = e.event_id "
            "WHERE s.end_event_id >= ?3 AND (s.end_event_id, s.step) >= (?3, ?4) ORDER BY "
            "s.end_event_id, s.step LIMIT ?2");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, (int64_t)limit);
    sqlite3_bind_int64(st, 3, key_end);
    sqlite3_bind_int64(st, 4, key_step);
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

int step_table_part(sqlite3 *db, int device, size_t first, size_t count, step_order *order,
                    step_row **rows, size_t *n, size_t *total, step_history *history, char *err,
                    size_t errlen) {
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
    /* rows [lo, hi) measured, [base, hi) read (lo - 1: the growth of lo is from its end);
     * before base, whether the first reserved jump is among them (first_jump_in: up to base, or
     * to the table's end once for the order kept) */
    size_t from = first < all ? first : all, to = count < all - from ? from + count : all;
    size_t lo = from > NEIGHBOURS ? from - NEIGHBOURS : 0;
    size_t hi = all - to > NEIGHBOURS ? to + NEIGHBOURS : all;
    size_t base = lo ? lo - 1 : 0, m = hi - base;
    step_row *r = malloc((m ? m : 1) * sizeof *r);
    int64_t *at = malloc((m ? m : 1) * sizeof *at);
    int64_t *scratch = malloc((2 * NEIGHBOURS + 2) * sizeof *scratch);
    size_t got = 0;
    size_t jump = SIZE_MAX;
    int64_t key_end = from_end, key_step = INT64_MIN, first_end, first_step = -1;
    int rc = r && at && scratch ? 0 : -1;
    if (rc == 0 && base > 0) {
        if (order && order->jump_known)
            jump = order->first_jump;
        else if (first_jump_in(db, device, from_end, order ? SIZE_MAX : base, &jump) != 0)
            rc = -1;
        else if (order) {
            order->jump_known = 1;
            order->first_jump = jump;
        }
    }
    if (rc == 0 && base > 0 &&
        (row_key(db, from_end, base, &key_end, &key_step) != 1 ||
         row_key(db, from_end, 0, &first_end, &first_step) != 1))
        rc = -1;
    if (rc == 0 && (read_ends_part(db, device, key_end, key_step, m, r, at, &got) != 0 ||
                    got != m || read_segments(db, r + (lo - base), at + (lo - base), hi - lo) != 0))
        rc = -1;
    for (size_t i = 0; rc == 0 && h.before && i < m; i++) /* as cut_before_history marks */
        r[i].partial = r[i].begin_event_id < h.first_event;
    if (rc == 0 && step_table_insides(db, device, r + (lo - base), hi - lo) != 0)
        rc = -1;
    if (rc == 0) {
        int64_t before = lo ? r[lo - 1 - base].allocated_at_end : 0;
        if (lo == 0) { /* the state before the earliest begin of all (a covering index scan) */
            int64_t first_begin =
                db_query_i64(db, "SELECT min(begin_event_id) FROM steps WHERE end_event_id >= ?1",
                             from_end, 0, INT64_MAX);
            if (first_begin > 0 && db_query_i64(db,
                                                "SELECT EXISTS (SELECT 1 FROM steps WHERE "
                                                "begin_event_id IS NULL AND end_event_id >= ?1)",
                                                from_end, 0, 0))
                first_begin = 0; /* a NULL begin is 0, as step_row_read reads it */
            before = db_query_i64(db,
                                  "SELECT allocated_bytes FROM event_rows WHERE device = ?1 AND "
                                  "event_id <= ?2 ORDER BY event_id DESC LIMIT 1",
                                  device, first_begin, 0);
        }
        for (size_t i = lo; i < hi; i++) { /* as step_table's growth */
            step_row *x = &r[i - base];
            x->growth_known = !x->partial;
            x->growth = x->growth_known ? x->allocated_at_end - before : 0;
            before = x->allocated_at_end;
        }
        step_table_anomalies(r, base, all, from, to, jump <= base, scratch);
        if (all)
            h.first_step = base ? first_step : r[0].step;
        memmove(r, r + (from - base), (to - from) * sizeof *r);
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

/* The first (last = 0) or the last (last = 1) step in the table's order (end, then number) that
 * ends at or after lo and begins before `to` (a NULL begin is 0, as step_row_read reads it): its
 * end and number. A walk of steps_end from that side, each entry a filter (covering: no row of
 * steps read). 1 found, 0 none, -1 (SQL). */
static int overlap_side(sqlite3 *db, int64_t lo, int64_t to, int last, int64_t *end,
                        int64_t *step) {
    sqlite3_stmt *st = db_statement(
        db, last ? "SELECT end_event_id, step FROM steps WHERE end_event_id >= ?1 AND "
                   "ifnull(begin_event_id, 0) < ?2 ORDER BY end_event_id DESC, step DESC LIMIT 1"
                 : "SELECT end_event_id, step FROM steps WHERE end_event_id >= ?1 AND "
                   "ifnull(begin_event_id, 0) < ?2 ORDER BY end_event_id, step LIMIT 1");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, lo);
    sqlite3_bind_int64(st, 2, to);
    int got = sqlite3_step(st), rc = got == SQLITE_ROW ? 1 : got == SQLITE_DONE ? 0 : -1;
    if (rc == 1) {
        *end = sqlite3_column_int64(st, 0);
        *step = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The steps in the table's order after (e1, s1) and before (e2, s2), both excluded, that end at
 * or after lo (e1 below lo: from the first; e2 at or above lo): a count of steps_end's entries
 * between the two ends (a plain range: ~20 ns an entry; a row value's would be ~110) and of those
 * at each end. -1 (SQL). */
static int64_t rows_between(sqlite3 *db, int64_t lo, int64_t e1, int64_t s1, int64_t e2,
                            int64_t s2) {
    sqlite3_stmt *st = db_statement(
        db, "SELECT (SELECT count(*) FROM steps WHERE end_event_id >= ?1 AND end_event_id < ?4) + "
            "(SELECT count(*) FROM steps WHERE end_event_id = ?2 AND step > ?3 AND (?2 < ?4 OR "
            "step < ?5)) + (SELECT count(*) FROM steps WHERE end_event_id = ?4 AND step < ?5 AND "
            "?2 < ?4)");
    if (!st)
        return -1;
    const int64_t v[] = {e1 < lo ? lo : e1 + 1, e1, s1, e2, s2}; /* the ends between: one range */
    for (int i = 0; i < 5; i++)
        sqlite3_bind_int64(st, i + 1, v[i]);
    int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
}

/* The first row of the table's order that ends at or after lo, when begins are sorted: its end,
 * number and begin. 1, 0 (none), -1 (SQL). */
static int sorted_first(sqlite3 *db, int64_t lo, int64_t *end, int64_t *step, int64_t *begin) {
    sqlite3_stmt *st = db_statement(db, "SELECT end_event_id, step, begin_event_id FROM steps "
                                        "WHERE end_event_id >= ?1 ORDER BY end_event_id, step "
                                        "LIMIT 1");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, lo);
    int got = sqlite3_step(st), rc = got == SQLITE_ROW ? 1 : got == SQLITE_DONE ? 0 : -1;
    if (rc == 1) {
        *end = sqlite3_column_int64(st, 0);
        *step = sqlite3_column_int64(st, 1);
        *begin = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The last step in the table's order that begins before `to`, when begins are sorted (then it is
 * the last by begin, then end and number: a seek of steps_begin_event). 1, 0, -1 (SQL). */
static int sorted_last(sqlite3 *db, int64_t to, int64_t *end, int64_t *step) {
    sqlite3_stmt *st = db_statement(db, "SELECT end_event_id, step FROM steps WHERE "
                                        "begin_event_id < ?1 ORDER BY begin_event_id DESC, "
                                        "end_event_id DESC, step DESC LIMIT 1");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, to);
    int got = sqlite3_step(st), rc = got == SQLITE_ROW ? 1 : got == SQLITE_DONE ? 0 : -1;
    if (rc == 1) {
        *end = sqlite3_column_int64(st, 0);
        *step = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return rc;
}

int step_table_order(sqlite3 *db, int device, step_order *o, char *err, size_t errlen) {
    (void)device; /* the order of the steps is every device's; the jump is looked for later */
    *o = (step_order){.begins_sorted = 1, .jump_known = 0, .first_jump = SIZE_MAX};
    sqlite3_stmt *st = db_statement(db, "SELECT begin_event_id FROM steps ORDER BY end_event_id, "
                                        "step");
    int got = st ? SQLITE_DONE : SQLITE_ERROR;
    int64_t before = INT64_MIN;
    while (st && o->begins_sorted && (got = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t b = sqlite3_column_int64(st, 0);
        o->begins_sorted = sqlite3_column_type(st, 0) != SQLITE_NULL && b >= before;
        before = b;
    }
    sqlite3_finalize(st);
    if (got != SQLITE_ROW && got != SQLITE_DONE) {
        snprintf(err, errlen, "reading the steps: %s", sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

/* step_table_overlap's answer: 0, 1 (implicit steps) or -1 (SQL). */
static int overlap_rows(sqlite3 *db, int device, int64_t from, int64_t to, const step_order *order,
                        size_t *first, size_t *count) {
    int mid_run;
    int64_t first_event;
    if (step_history_begin(db, device, &mid_run, &first_event) != 0)
        return -1;
    int64_t marked = db_query_i64(db, "SELECT EXISTS (SELECT 1 FROM steps)", 0, 0, -1);
    if (marked <= 0) /* no step marked: implicit ones when the device has events */
        return marked < 0 ? -1 : first_event > 0 ? 1 : 0;
    /* the rows: the steps that end at or after the device's first step_ends row, less those
     * that end before a history that begins mid-run (part_bounds, cut_before_history) */
    int64_t rows_from = db_query_i64(db,
                                     "SELECT end_event_id FROM step_ends WHERE device = ?1 ORDER "
                                     "BY end_event_id LIMIT 1",
                                     device, 0, INT64_MAX);
    if (rows_from == INT64_MAX) /* none of the steps is the device's */
        return 0;
    if (mid_run && first_event > 0 && first_event > rows_from)
        rows_from = first_event;
    /* a row overlaps (from, to] when it ends after from and begins before to; the answer is
     * the rows from the first such row to the last, whatever lies between. Steps may overlap
     * (ranges on several threads, pieces of one step merged, nested names): a begin is not
     * monotone in the table's order, so both ends are looked for, not one end and a count. */
    int64_t lo = from < INT64_MAX && from + 1 > rows_from ? from + 1 : rows_from;
    int64_t e1, s1, e2, s2, b1;
    if (order && order->begins_sorted) { /* the rows that begin before to: the first ones */
        int rc = sorted_first(db, lo, &e1, &s1, &b1);
        if (rc <= 0 || b1 >= to)
            return rc < 0 ? -1 : 0;
        if (sorted_last(db, to, &e2, &s2) != 1)
            return -1;
    } else {
        int rc = overlap_side(db, lo, to, 0, &e1, &s1);
        if (rc <= 0)
            return rc;
        if (overlap_side(db, lo, to, 1, &e2, &s2) != 1)
            return -1;
    }
    int64_t before = rows_between(db, rows_from, INT64_MIN, INT64_MIN, e1, s1);
    int64_t inside = rows_between(db, e1, e1, s1, e2, s2);
    if (before < 0 || inside < 0)
        return -1;
    *first = (size_t)before;
    *count = (size_t)inside + (e1 == e2 && s1 == s2 ? 1 : 2);
    return 0;
}

int step_table_overlap(sqlite3 *db, int device, int64_t from, int64_t to, const step_order *order,
                       size_t *first, size_t *count, char *err, size_t errlen) {
    *first = *count = 0;
    int rc = overlap_rows(db, device, from, to, order, first, count);
    if (rc < 0) {
        *first = *count = 0;
        snprintf(err, errlen, "reading the steps: %s", sqlite3_errmsg(db));
    }
    return rc;
}
