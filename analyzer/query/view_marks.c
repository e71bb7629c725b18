/* view_marks.c — the steps, NVTX ranges and OOMs `view` marks on its timeline (view_marks.h),
 * from the steps table (one scan of it: ~9 ms per 30 k steps), an index of the ranges in rows
 * (one pass over the ranges view, kept by the caller; a window's are a slice of each row, their
 * names then read by marker_id) and, when the devices table counts OOMs, the events that are
 * OOMs. */
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
static int entry_by_begin(const void *a, const void *b) {
    const view_range_entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return (x->marker_id > y->marker_id) - (x->marker_id < y->marker_id);
}

static int mark_by_begin(const void *a, const void *b) {
    const view_range_mark *x = a, *y = b;
    view_range_entry ex = {.begin = x->begin, .end = x->end, .marker_id = x->marker_id};
    view_range_entry ey = {.begin = y->begin, .end = y->end, .marker_id = y->marker_id};
    return entry_by_begin(&ex, &ey);
}

/* What is kept first of one row: the longest, then the earliest. */
static int keeps_before(const view_range_entry *x, const view_range_entry *y) {
    int64_t lx = x->end - x->begin, ly = y->end - y->begin;
    if (lx != ly)
        return lx > ly;
    return entry_by_begin(x, y) < 0;
}

int view_ranges_index_build(sqlite3 *db, int event_axis, view_ranges_index *out, char *err,
                            size_t errlen) {
    memset(out, 0, sizeof *out);
    if (event_axis)
        return 0; /* markers have times only, and the input none: no place among the events */
    int64_t last_ts = db_query_i64(db, "SELECT value FROM meta WHERE key = 'last_ts_ns'", 0, 0, 0);
    sqlite3_stmt *st;
    if (db_prepare(db, "SELECT marker_id, tid, begin_ts_ns, end_ts_ns FROM ranges", &st) !=
        SQLITE_OK) {
        snprintf(err, errlen, "view ranges: %s", sqlite3_errmsg(db));
        return -1;
    }
    view_range_entry *all = NULL;
    size_t n = 0, cap = 0;
    int rc, oom = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow((void **)&all, n, &cap, sizeof *all) != 0) {
            oom = 1;
            break;
        }
        view_range_entry *r = &all[n++];
        r->marker_id = sqlite3_column_int64(st, 0);
        r->tid = db_column_i64(st, 1, -1);
        r->begin = sqlite3_column_int64(st, 2);
        r->open = sqlite3_column_type(st, 3) == SQLITE_NULL;
        r->end = r->open ? last_ts : sqlite3_column_int64(st, 3);
        if (r->end < r->begin)
            r->end = r->begin;
        r->depth = 0;
    }
    if (!oom && rc != SQLITE_DONE)
        snprintf(err, errlen, "view ranges: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (oom || rc != SQLITE_DONE) {
        if (oom)
            snprintf(err, errlen, "view ranges: out of memory");
        free(all);
        return -1;
    }
    /* rows: each range in the lowest whose ranges so far end by its begin (no sort of none:
     * `all` is NULL then, which qsort may not be given) */
    if (n > 1)
        qsort(all, n, sizeof *all, entry_by_begin);
    int64_t row_end[VIEW_RANGE_ROWS_MAX];
    size_t count[VIEW_RANGE_ROWS_MAX] = {0};
    int rows = 0;
    for (size_t i = 0; i < n; i++) {
        view_range_entry *m = &all[i];
        int r = 0;
        while (r < rows && row_end[r] > m->begin && r < VIEW_RANGE_ROWS_MAX - 1)
            r++;
        if (r == rows) {
            rows++;
            row_end[r] = m->end;
        } else if (row_end[r] <= m->begin || row_end[r] < m->end) {
            row_end[r] = m->end; /* a free row; or the last, busy: the later end */
        }
        m->depth = r;
        count[r]++;
    }
    /* by row, begin order kept within each (a counting sort) */
    view_range_entry *by_row = malloc((n ? n : 1) * sizeof *by_row);
    if (!by_row) {
        free(all);
        snprintf(err, errlen, "view ranges: out of memory");
        return -1;
    }
    size_t at[VIEW_RANGE_ROWS_MAX];
    out->row_start[0] = 0;
    for (int r = 0; r < VIEW_RANGE_ROWS_MAX; r++) {
        at[r] = out->row_start[r];
        out->row_start[r + 1] = out->row_start[r] + count[r];
    }
    for (size_t i = 0; i < n; i++)
        by_row[at[all[i].depth]++] = all[i];
    free(all);
    out->ranges = by_row;
    out->n = n;
    out->rows = rows;
    return 0;
}

void view_ranges_index_free(view_ranges_index *x) {
    free(x->ranges);
    memset(x, 0, sizeof *x);
}

/* In [lo, hi), or an instant in it. */
static int overlaps(const view_range_entry *r, int64_t lo, int64_t hi) {
    return r->begin < hi && (r->end > lo || r->begin >= lo);
}

/* Row r's ranges overlapping [lo, hi): [*first, *end) of x->ranges, a slice in every row but
 * the last (there ranges may overlap: those that do not are skipped by the caller). */
static void row_slice(const view_ranges_index *x, int r, int64_t lo, int64_t hi, size_t *first,
                      size_t *end) {
    size_t a = x->row_start[r], b = x->row_start[r + 1];
    size_t top = b;
    { /* the first that begins at or after hi */
        size_t l = a, h = b;
        while (l < h) {
            size_t mid = l + (h - l) / 2;
            if (x->ranges[mid].begin < hi)
                l = mid + 1;
            else
                h = mid;
        }
        top = l;
    }
    if (r == VIEW_RANGE_ROWS_MAX - 1) { /* not ordered by end: every one begun before hi */
        *first = a, *end = top;
        return;
    }
    size_t l = a, h = top; /* the first that ends after lo (or an instant at or after it) */
    while (l < h) {
        size_t mid = l + (h - l) / 2;
        const view_range_entry *m = &x->ranges[mid];
        if (m->end > lo || m->begin >= lo)
            h = mid;
        else
            l = mid + 1;
    }
    *first = l, *end = top;
}

/* Keeps in heap[0 .. k) the k ranges of a row kept first (keeps_before); heap[0] the one kept
 * last, replaced when a better comes. */
static void heap_offer(const view_range_entry **heap, size_t *n, size_t k,
                       const view_range_entry *r) {
    if (*n < k) {
        size_t i = (*n)++;
        heap[i] = r;
        while (i > 0 && keeps_before(heap[(i - 1) / 2], heap[i])) { /* worst at the root */
            const view_range_entry *t = heap[i];
            heap[i] = heap[(i - 1) / 2];
            heap[(i - 1) / 2] = t;
            i = (i - 1) / 2;
        }
        return;
    }
    if (!k || !keeps_before(r, heap[0]))
        return;
    heap[0] = r;
    for (size_t i = 0;;) {
        size_t c = 2 * i + 1, w = i;
        if (c < k && keeps_before(heap[w], heap[c]))
            w = c;
        if (c + 1 < k && keeps_before(heap[w], heap[c + 1]))
            w = c + 1;
        if (w == i)
            break;
        const view_range_entry *t = heap[i];
        heap[i] = heap[w];
        heap[w] = t;
        i = w;
    }
}

/* The chosen ranges with their names, read by marker_id. */
static int name_ranges(sqlite3 *db, view_marks_result *out) {
    sqlite3_stmt *st;
    if (!out->nranges)
        return 0;
    if (db_prepare(db, "SELECT name, domain FROM markers WHERE marker_id = ?1", &st) != SQLITE_OK)
        return -1;
    int oom = 0, rc = SQLITE_DONE;
    for (size_t i = 0; i < out->nranges && !oom; i++) {
        view_range_mark *m = &out->ranges[i];
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, m->marker_id);
        if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            m->name = cut_name(sqlite3_column_text(st, 0), &oom);
            m->domain = cut_name(sqlite3_column_text(st, 1), &oom);
        } else if (rc != SQLITE_DONE) {
            break;
        }
        rc = SQLITE_DONE;
    }
    sqlite3_finalize(st);
    return oom || rc != SQLITE_DONE ? -1 : 0;
}

static int read_ranges(sqlite3 *db, const view_ranges_index *x, int64_t lo, int64_t hi,
                       size_t max_ranges, view_marks_result *out) {
    if (!x || !x->n)
        return 0;
    size_t first[VIEW_RANGE_ROWS_MAX], end[VIEW_RANGE_ROWS_MAX];
    int64_t total = 0;
    for (int r = 0; r < x->rows; r++) {
        row_slice(x, r, lo, hi, &first[r], &end[r]);
        size_t in_row = end[r] - first[r];
        if (r == VIEW_RANGE_ROWS_MAX - 1) /* the last row's slice: those begun before hi */
            for (size_t i = first[r]; i < end[r]; i++)
                in_row -= !overlaps(&x->ranges[i], lo, hi);
        total += (int64_t)in_row;
        if (in_row)
            out->ranges_depth = r + 1;
    }
    out->ranges_total = total;
    size_t want = (size_t)total < max_ranges ? (size_t)total : max_ranges;
    if (!want)
        return 0;
    if (!(out->ranges = calloc(want, sizeof *out->ranges)))
        return -1;
    const view_range_entry **heap = malloc(want * sizeof *heap);
    if (!heap)
        return -1;
    /* the outermost rows whole while they fit; of the row that does not, its longest */
    for (int r = 0; r < x->rows && out->nranges < want; r++) {
        size_t room = want - out->nranges, kept = 0;
        for (size_t i = first[r]; i < end[r]; i++)
            if (overlaps(&x->ranges[i], lo, hi))
                heap_offer(heap, &kept, room, &x->ranges[i]);
        for (size_t i = 0; i < kept; i++) {
            const view_range_entry *e = heap[i];
            out->ranges[out->nranges++] = (view_range_mark){.marker_id = e->marker_id,
                                                            .begin = e->begin,
                                                            .end = e->end,
                                                            .open = e->open,
                                                            .depth = e->depth,
                                                            .tid = e->tid};
        }
    }
    free(heap);
    if (out->nranges > 1)
        qsort(out->ranges, out->nranges, sizeof *out->ranges, mark_by_begin);
    return name_ranges(db, out);
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
               const view_ranges_index *ranges, size_t max_ranges, int with_ooms,
               view_marks_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (read_steps(db, event_axis, lo, hi, max_steps ? max_steps : 1, out) != 0 ||
        read_ranges(db, event_axis ? NULL : ranges, lo, hi, max_ranges, out) != 0 ||
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
