/* view_marks.c — the steps, NVTX ranges and OOMs `view` marks on its timeline (view_marks.h),
 * from the steps table (one scan of it: ~9 ms per 30 k steps), the ranges view over the markers
 * (those begun before the window's end, by markers_ts; their ends by markers_begin) and, when the
 * devices table counts OOMs, the events that are OOMs. */
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

/* A copy of s cut to VIEW_MARKS_NAME_MAX bytes at a UTF-8 boundary, "..." after a cut; NULL
 * for NULL (and out of memory: then *oom is set). */
static char *cut_name(const unsigned char *s, int *oom) {
    if (!s)
        return NULL;
    size_t n = strlen((const char *)s), keep = n;
    if (n > VIEW_MARKS_NAME_MAX) {
        keep = VIEW_MARKS_NAME_MAX;
        while (keep > 0 && (s[keep] & 0xC0) == 0x80)
            keep--; /* not inside a character */
    }
    char *c = malloc(keep + 4);
    if (!c) {
        *oom = 1;
        return NULL;
    }
    memcpy(c, s, keep);
    strcpy(c + keep, keep < n ? "..." : "");
    return c;
}

/* Begin order, the longer (the outer) first of one begin, then marker order. */
static int by_begin(const void *a, const void *b) {
    const view_range_mark *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return (x->marker_id > y->marker_id) - (x->marker_id < y->marker_id);
}

/* What is kept first: the least depth, the longest, the earliest. */
static int by_keep(const void *a, const void *b) {
    const view_range_mark *x = a, *y = b;
    if (x->depth != y->depth)
        return x->depth - y->depth;
    int64_t lx = x->end - x->begin, ly = y->end - y->begin;
    if (lx != ly)
        return lx > ly ? -1 : 1;
    return by_begin(a, b);
}

/* The most depths told apart; deeper ranges share the last (a window of thousands of ranges
 * open at once is not drawn row by row anyway). */
#define RANGE_ROWS_MAX 64

static int read_ranges(sqlite3 *db, int event_axis, int64_t lo, int64_t hi, size_t max_ranges,
                       view_marks_result *out) {
    if (event_axis)
        return 0; /* markers have times only, and the input none: no place among the events */
    int64_t last_ts = db_query_i64(db, "SELECT value FROM meta WHERE key = 'last_ts_ns'", 0, 0, 0);
    sqlite3_stmt *st;
    if (db_prepare(db,
                   "SELECT marker_id, tid, name, domain, begin_ts_ns, end_ts_ns FROM ranges "
                   "WHERE begin_ts_ns < ?1",
                   &st) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, hi);
    size_t cap = 0;
    int rc, oom = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t begin = sqlite3_column_int64(st, 4);
        int open = sqlite3_column_type(st, 5) == SQLITE_NULL;
        int64_t end = open ? last_ts : sqlite3_column_int64(st, 5);
        if (end < begin)
            end = begin;
        if (!(end > lo || begin >= lo)) /* overlapping [lo, hi), or an instant in it */
            continue;
        if (grow((void **)&out->ranges, out->nranges, &cap, sizeof *out->ranges) != 0) {
            oom = 1;
            break;
        }
        view_range_mark *m = &out->ranges[out->nranges++];
        memset(m, 0, sizeof *m);
        m->marker_id = sqlite3_column_int64(st, 0);
        m->tid = db_column_i64(st, 1, -1);
        m->begin = begin;
        m->end = end;
        m->open = open;
        m->name = cut_name(sqlite3_column_text(st, 2), &oom);
        m->domain = cut_name(sqlite3_column_text(st, 3), &oom);
        if (oom)
            break;
    }
    sqlite3_finalize(st);
    if (oom || rc != SQLITE_DONE)
        return -1;
    out->ranges_total = (int64_t)out->nranges;
    if (!out->nranges)
        return 0;
    /* rows: each range in the lowest whose ranges so far end by its begin (for nested ranges,
     * as NVTX's pushes of one thread are, that is the nesting depth) */
    qsort(out->ranges, out->nranges, sizeof *out->ranges, by_begin);
    int64_t row_end[RANGE_ROWS_MAX];
    int rows = 0;
    for (size_t i = 0; i < out->nranges; i++) {
        view_range_mark *m = &out->ranges[i];
        int r = 0;
        while (r < rows && row_end[r] > m->begin && r < RANGE_ROWS_MAX - 1)
            r++;
        if (r == rows) {
            rows++;
            row_end[r] = m->end;
        } else if (row_end[r] <= m->begin || row_end[r] < m->end) {
            row_end[r] = m->end; /* a free row; or the last, busy: the later end */
        }
        m->depth = r;
        if (r + 1 > out->ranges_depth)
            out->ranges_depth = r + 1;
    }
    if (out->nranges > max_ranges) {
        qsort(out->ranges, out->nranges, sizeof *out->ranges, by_keep);
        for (size_t i = max_ranges; i < out->nranges; i++) {
            free(out->ranges[i].name);
            free(out->ranges[i].domain);
        }
        out->nranges = max_ranges;
        qsort(out->ranges, out->nranges, sizeof *out->ranges, by_begin);
    }
    return 0;
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
               size_t max_ranges, int with_ooms, view_marks_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (read_steps(db, event_axis, lo, hi, max_steps ? max_steps : 1, out) != 0 ||
        read_ranges(db, event_axis, lo, hi, max_ranges, out) != 0 ||
        (with_ooms && read_ooms(db, device, event_axis, lo, hi, out) != 0))
        return fail(db, out, err, errlen);
    return 0;
}

void view_marks_free(view_marks_result *out) {
    free(out->steps);
    free(out->ooms);
    for (size_t i = 0; i < out->nranges; i++) {
        free(out->ranges[i].name);
        free(out->ranges[i].domain);
    }
    free(out->ranges);
    memset(out, 0, sizeof *out);
}
