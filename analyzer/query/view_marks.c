/* view_marks.c — the steps and OOMs `view` marks on its timeline (view_marks.h), from the steps
 * table (one scan of it: ~9 ms per 30 k steps) and, when the devices table counts OOMs, the events
 * that are OOMs. */
#include "view_marks.h"

#include "db_query.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(sqlite3 *db, view_marks_result *out, char *err, size_t errlen) {
    snprintf(err, errlen, "view marks: %s", sqlite3_errmsg(db));
    view_marks_free(out);
    return -1;
}

/* Appends to a growing array of `size`-byte items; 0, or -1 out of memory. */
static int grow(void **items, size_t n, size_t *cap, size_t size) {
    if (n < *cap)
        return 0;
    size_t want = *cap ? *cap * 2 : 64;
    void *p = realloc(*items, want * size);
    if (!p)
        return -1;
    *items = p;
    *cap = want;
    return 0;
}

static int read_steps(sqlite3 *db, int event_axis, int64_t lo, int64_t hi, size_t max_steps,
                      view_marks_result *out) {
    /* the window on the axis: time [begin_ts_ns, end_ts_ns), or the events (begin, end] */
    sqlite3_stmt *st;
    if (db_prepare(db,
                   event_axis
                       ? "SELECT step, begin_event_id + 1, CASE WHEN end_ts_ns IS NULL THEN NULL "
                         "ELSE end_event_id + 1 END, begin_event_id, end_event_id FROM steps "
                         "WHERE max(begin_event_id + 1, 0) < ?2 AND (end_ts_ns IS NULL OR "
                         "end_event_id + 1 > ?1) ORDER BY step"
                       : "SELECT step, begin_ts_ns, end_ts_ns, begin_event_id, end_event_id FROM "
                         "steps WHERE begin_ts_ns < ?2 AND (end_ts_ns IS NULL OR end_ts_ns > ?1) "
                         "ORDER BY step",
                   &st) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, lo);
    sqlite3_bind_int64(st, 2, hi);
    /* one pass: every step of the window kept, then every k-th (a count first would be a second
     * pass over the steps: ~0.1 s per 300 k) */
    assert(max_steps > 0);
    size_t cap = 0;
    int rc = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow((void **)&out->steps, out->nsteps, &cap, sizeof *out->steps) != 0)
            break;
        view_step_mark *m = &out->steps[out->nsteps++];
        m->step = sqlite3_column_int64(st, 0);
        m->begin = sqlite3_column_int64(st, 1);
        if (m->begin < 0)
            m->begin = 0; /* a step from the seed on */
        m->end = db_column_i64(st, 2, -1);
        m->begin_event_id = db_column_i64(st, 3, 0);
        m->end_event_id = db_column_i64(st, 4, -1);
    }
    out->steps_total = (int64_t)out->nsteps;
    out->step_stride = out->steps_total > (int64_t)max_steps
                           ? (out->steps_total + (int64_t)max_steps - 1) / (int64_t)max_steps
                           : 1;
    size_t kept = 0;
    for (size_t i = 0; i < out->nsteps; i += (size_t)out->step_stride)
        out->steps[kept++] = out->steps[i];
    out->nsteps = kept;
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int read_ooms(sqlite3 *db, int device, int event_axis, int64_t lo, int64_t hi,
                     view_marks_result *out) {
    out->ooms_total =
        db_query_i64(db,
                     "SELECT coalesce(ooms, 0) + coalesce(alloc_failed, 0) FROM devices WHERE "
                     "device = ?1",
                     device, 0, 0);
    if (out->ooms_total <= 0)
        return 0; /* none counted: no pass over the events */
    sqlite3_stmt *st;
    if (db_prepare(db,
                   "SELECT event_id, ts_ns, size, op = {op:alloc_failed} FROM event_rows WHERE "
                   "device = ?1 AND op IN ({op:oom}, {op:alloc_failed}) ORDER BY event_id",
                   &st) != SQLITE_OK)
        return -1;
    sqlite3_bind_int(st, 1, device);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && out->nooms < VIEW_MARKS_MAX_OOMS) {
        if (grow((void **)&out->ooms, out->nooms, &cap, sizeof *out->ooms) != 0)
            break;
        int64_t event_id = sqlite3_column_int64(st, 0);
        int64_t at = event_axis ? event_id : sqlite3_column_int64(st, 1);
        if (at < lo || at >= hi)
            continue;
        view_oom_mark *m = &out->ooms[out->nooms++];
        m->event_id = event_id;
        m->at = at;
        m->size = db_column_i64(st, 2, 0);
        m->driver = sqlite3_column_int(st, 3);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

int view_marks(sqlite3 *db, int device, int event_axis, int64_t lo, int64_t hi, size_t max_steps,
               int with_ooms, view_marks_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (read_steps(db, event_axis, lo, hi, max_steps ? max_steps : 1, out) != 0 ||
        (with_ooms && read_ooms(db, device, event_axis, lo, hi, out) != 0))
        return fail(db, out, err, errlen);
    return 0;
}

void view_marks_free(view_marks_result *out) {
    free(out->steps);
    free(out->ooms);
    memset(out, 0, sizeof *out);
}
