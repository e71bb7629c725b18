/* window_levels.c — an event window's peak and sites from the replay's levels of detail
 * (window_levels.h): the whole buckets or chunks inside the window from their rows, its ragged
 * ends from their events (event_scan.h). */
#include "window_levels.h"

#include "addr_map.h"
#include "block_sweep.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_assert.h"
#include "gmt_grow.h"
#include "trace_format.h"
#include "view_timeline.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The levels' widths (finest << 3 k, k < count) are powers of two below 2^62: meta's values
 * are what a replay wrote, not something to shift blindly. */
static int level_widths_fit(int64_t finest, int64_t count) {
    if (finest <= 0 || (finest & (finest - 1)) != 0 || count <= 0 || count > 20)
        return 0;
    int shift = 0;
    while (((int64_t)1 << shift) < finest)
        shift++;
    return shift + 3 * (count - 1) < 62;
}

/* ---- the peak, from timeline_levels ------------------------------------------------------ */

typedef struct peak_walk {
    sqlite3 *db;
    int device;
    int64_t from, to, finest;
    window_peak *out;
    char *err;
    size_t errlen;
} peak_walk;

/* Folds events (a bucket's, or one) into the answer: the highest value, at its first event. */
static void take(window_peak *p, int64_t events, int64_t max, int64_t max_id, int64_t ooms) {
    if (!events)
        return;
    if (!p->events || max > p->max_allocated ||
        (max == p->max_allocated && max_id < p->max_event_id)) {
        p->max_allocated = max;
        p->max_event_id = max_id;
    }
    p->events += events;
    p->ooms += ooms;
}

/* The device's events in [first, last] and in the window. */
static int peak_events(peak_walk *w, int64_t first, int64_t last) {
    enum { ID, DEVICE, OP, ALLOCATED, NCOL };
    static const int want[NCOL] = {EVENT_COL_event_id, EVENT_COL_device, EVENT_COL_op,
                                   EVENT_COL_allocated_bytes};
    first = first > w->from ? first : w->from + 1;
    last = last < w->to ? last : w->to;
    if (first > last)
        return 0;
    event_scan *s =
        event_scan_open(w->db, event_scan_mask(want, NCOL), first, last, w->err, w->errlen);
    if (!s)
        return -1;
    const int64_t *cols[EVENT_STORE_NCOLS], *v[NCOL];
    long got;
    while ((got = event_scan_next(s, cols)) > 0) {
        event_scan_pick(cols, want, NCOL, v);
        w->out->events_read += got;
        for (long r = 0; r < got; r++)
            if (v[DEVICE][r] == w->device)
                take(w->out, 1, v[ALLOCATED][r], v[ID][r], v[OP][r] == TRACE_OP_OOM);
    }
    if (got < 0)
        snprintf(w->err, w->errlen, "%s", event_scan_error(s));
    event_scan_close(s);
    return got < 0 ? -1 : 0;
}

/* The buckets b_lo..b_hi of level k that hold events of the window: one wholly inside it
 * from its row; one it only begins or ends in (at most two: the device's buckets of a level
 * hold disjoint runs of its events) from the level below, or from its events at level 0. */
static int peak_level(peak_walk *w, int k, int64_t b_lo, int64_t b_hi) {
    sqlite3_stmt *st = db_statement(
        w->db, "SELECT bucket, first_event_id, last_event_id, events, max_allocated_bytes, "
               "max_allocated_event_id, ooms FROM timeline_levels WHERE device = ?1 AND "
               "bucket_ns = ?2 AND bucket BETWEEN ?3 AND ?4 AND last_event_id > ?5 AND "
               "first_event_id <= ?6 ORDER BY bucket");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, w->device);
    sqlite3_bind_int64(st, 2, w->finest << (3 * k));
    sqlite3_bind_int64(st, 3, b_lo);
    sqlite3_bind_int64(st, 4, b_hi);
    sqlite3_bind_int64(st, 5, w->from);
    sqlite3_bind_int64(st, 6, w->to);
    int64_t ends[2][3]; /* bucket, first_event_id, last_event_id */
    int nends = 0, failed = 0, rc = 0;
    while (rc == 0 && db_next_row(st, &failed)) {
        int64_t v[7];
        for (int i = 0; i < 7; i++)
            v[i] = sqlite3_column_int64(st, i);
        w->out->level_rows++;
        if (v[1] > w->from && v[2] <= w->to)
            take(w->out, v[3], v[4], v[5], v[6]);
        else if (GMT_NEVER(nends == 2))
            rc = -1;
        else
            memcpy(ends[nends++], v, sizeof ends[0]);
    }
    sqlite3_finalize(st);
    if (failed || rc) {
        snprintf(w->err, w->errlen, "reading timeline_levels: %s",
                 failed ? sqlite3_errmsg(w->db) : "overlapping buckets");
        return -1;
    }
    for (int i = 0; i < nends; i++) {
        if (k == 0 ? peak_events(w, ends[i][1], ends[i][2]) != 0
                   : peak_level(w, k - 1, ends[i][0] * 8, ends[i][0] * 8 + 7) != 0)
            return -1;
    }
    return 0;
}

int window_levels_peak(sqlite3 *db, int device, int64_t from, int64_t to, window_peak *out,
                       char *err, size_t errlen) {
    assert(db && out && from <= to);
    memset(out, 0, sizeof *out);
    int64_t finest;
    int count;
    /* an older memanalyze's levels have no peaks (asked so: a failed prepare would be noted) */
    if (view_timeline_grid(db, &finest, &count) != 0 || !level_widths_fit(finest, count) ||
        db_query_int(db,
                     "SELECT count(*) FROM pragma_table_info('timeline_levels') WHERE name IN "
                     "('max_allocated_event_id', 'ooms')",
                     0) != 2)
        return 1;
    if (from == to)
        return 0;
    peak_walk w = {db, device, from, to, finest, out, err, errlen};
    int rc = peak_level(&w, count - 1, INT64_MIN, INT64_MAX);
    if (rc != 0 && !*err)
        snprintf(err, errlen, "reading timeline_levels: %s", sqlite3_errmsg(db));
    return rc;
}

/* ---- the sites, from site_levels --------------------------------------------------------- */

typedef struct site_walk {
    sqlite3 *db;
    int device;
    window_sites *out;
    size_t cap;
    addr_map index; /* stack -> index + 1 in out->sites */
    addr_map whole; /* the whole-block segments (block_sweep.h), once an end is read */
    int have_whole;
    char *err;
    size_t errlen;
} site_walk;

static int count_site(site_walk *w, int64_t stack, int64_t blocks, int64_t bytes) {
    window_sites *o = w->out;
    uint32_t *at = addr_map_get(&w->index, 0, (uint64_t)stack);
    if (!at) {
        if (gmt_grow_uninit((void **)&o->sites, &w->cap, o->n, sizeof *o->sites, 64) != 0)
            return -1;
        o->sites[o->n++] = (window_site){stack, 0, 0};
        if (addr_map_put(&w->index, 0, (uint64_t)stack, (uint32_t)o->n) != 0)
            return -1;
        at = addr_map_get(&w->index, 0, (uint64_t)stack);
    }
    o->sites[*at - 1].blocks += blocks;
    o->sites[*at - 1].bytes += bytes;
    o->blocks += blocks;
    o->bytes += bytes;
    return 0;
}

/* The blocks allocated by the events [first, last]: device memory, allocator blocks and
 * whole-block segments, as block_sweep.h has them. */
static int sites_of_events(site_walk *w, int64_t first, int64_t last) {
    enum { ID, DEVICE, OP, LEVEL, KIND, SIZE, STACK, NCOL };
    static const int want[NCOL] = {EVENT_COL_event_id, EVENT_COL_device, EVENT_COL_op,
                                   EVENT_COL_level,    EVENT_COL_kind,   EVENT_COL_size,
                                   EVENT_COL_stack_id};
    if (first > last)
        return 0;
    if (!w->have_whole) {
        if (block_sweep_whole_segments(w->db, &w->whole) != 0) {
            snprintf(w->err, w->errlen, "reading the segments: %s", sqlite3_errmsg(w->db));
            return -1;
        }
        w->have_whole = 1;
    }
    event_scan *s =
        event_scan_open(w->db, event_scan_mask(want, NCOL), first, last, w->err, w->errlen);
    if (!s)
        return -1;
    const int64_t *cols[EVENT_STORE_NCOLS], *v[NCOL];
    long got;
    int rc = 0;
    while (rc == 0 && (got = event_scan_next(s, cols)) > 0) {
        event_scan_pick(cols, want, NCOL, v);
        w->out->events_read += got;
        for (long r = 0; r < got && rc == 0; r++) {
            int64_t op = v[OP][r];
            if (v[DEVICE][r] != w->device || v[KIND][r] != TRACE_KIND_DEVICE ||
                (op != TRACE_OP_ALLOC && op != TRACE_OP_MAP))
                continue;
            if (v[LEVEL][r] != TRACE_LEVEL_BLOCK && !addr_map_get(&w->whole, 0, (uint64_t)v[ID][r]))
                continue;
            rc = count_site(w, event_value_or(v[STACK][r], 0), 1, event_value_or(v[SIZE][r], 0));
        }
    }
    if (rc)
        snprintf(w->err, w->errlen, "out of memory");
    else if (got < 0)
        snprintf(w->err, w->errlen, "%s", event_scan_error(s));
    event_scan_close(s);
    return rc || got < 0 ? -1 : 0;
}

/* The rows of chunks c_lo..c_hi of the level of `width`. */
static int sites_of_chunks(site_walk *w, int64_t width, int64_t c_lo, int64_t c_hi) {
    sqlite3_stmt *st =
        db_statement(w->db, "SELECT stack_id, blocks, bytes FROM site_levels WHERE device = ?1 "
                            "AND width = ?2 AND chunk BETWEEN ?3 AND ?4");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, w->device);
    sqlite3_bind_int64(st, 2, width);
    sqlite3_bind_int64(st, 3, c_lo);
    sqlite3_bind_int64(st, 4, c_hi);
    int failed = 0, rc = 0;
    while (rc == 0 && db_next_row(st, &failed)) {
        w->out->level_rows++;
        rc = count_site(w, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                        sqlite3_column_int64(st, 2));
    }
    sqlite3_finalize(st);
    if (failed || rc)
        snprintf(w->err, w->errlen, "reading site_levels: %s",
                 failed ? sqlite3_errmsg(w->db) : "out of memory");
    return failed || rc ? -1 : 0;
}

/* The event ids [a, b]: chunks of the coarsest levels that fit wholly inside, the ends from
 * their events. Chunk 0 of a level (which holds the seed's ids, all <= 0) is never taken: the
 * ids below the finest width are read from their events. */
static int sites_of_range(site_walk *w, int64_t finest, int levels, int64_t a, int64_t b) {
    int64_t lo = view_floor_div(a + finest - 1, finest), hi = view_floor_div(b + 1, finest);
    lo = (lo > 1 ? lo : 1) * finest;
    hi *= finest;
    if (lo >= hi)
        return sites_of_events(w, a, b);
    if (sites_of_events(w, a, lo - 1) != 0 || sites_of_events(w, hi, b) != 0)
        return -1;
    /* [lo, hi) in the coarsest aligned chunks, consecutive ones of a level read together */
    int run_k = -1;
    int64_t run_lo = 0, run_hi = 0;
    for (int64_t pos = lo; pos < hi;) {
        int k = levels - 1;
        while (k > 0 && (pos % (finest << (3 * k)) != 0 || (finest << (3 * k)) > hi - pos))
            k--;
        int64_t width = finest << (3 * k), c = pos / width;
        if (k != run_k || c != run_hi + 1) {
            if (run_k >= 0 && sites_of_chunks(w, finest << (3 * run_k), run_lo, run_hi) != 0)
                return -1;
            run_k = k, run_lo = c;
        }
        run_hi = c;
        pos += width;
    }
    return sites_of_chunks(w, finest << (3 * run_k), run_lo, run_hi);
}

int window_levels_sites(sqlite3 *db, int device, int64_t from, int64_t to, window_sites *out,
                        char *err, size_t errlen) {
    assert(db && out && from <= to);
    memset(out, 0, sizeof *out);
    site_walk w = {.db = db, .device = device, .out = out, .err = err, .errlen = errlen};
    int64_t finest =
        db_query_i64(db, "SELECT value FROM meta WHERE key = 'site_level_events'", 0, 0, 0);
    int levels = (int)db_query_i64(db, "SELECT value FROM meta WHERE key = 'site_levels'", 0, 0, 0);
    int rc = 0;
    if (from < to) {
        if (level_widths_fit(finest, levels) && db_has_table(db, "site_levels"))
            rc = sites_of_range(&w, finest, levels, from + 1, to);
        else /* a database of an older memanalyze: every event of the window */
            rc = sites_of_events(&w, from + 1, to);
    }
    addr_map_free(&w.index);
    addr_map_free(&w.whole);
    if (rc)
        window_sites_free(out);
    return rc;
}

void window_sites_free(window_sites *s) {
    free(s->sites);
    s->sites = NULL;
    s->n = 0;
}
