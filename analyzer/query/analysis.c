/* analysis.c — facts for report and leaks (see analysis.h).
 *
 * The database holds one row per event with the device's totals after it,
 * so most facts are one scan of a window of event_rows. The expensive one is
 * site growth: it sweeps the window's block allocs and frees in event order,
 * keeping live bytes per stack and closing a "window" at every step end. A
 * stack's per-step changes are stored only when nonzero (a steady training
 * loop frees in the same step what it allocates), so memory stays
 * proportional to what actually moves across steps.
 *
 * Over the whole run (the common case) the replay has already kept these
 * facts as it went (devices' counters, site_stats, site_steps,
 * largest_allocations): the functions read those small tables instead of
 * rescanning event_rows. A window (--from/--to) takes the scanning path.
 * Both paths compute the same definitions; GMT_NO_SUMMARIES=1 forces the
 * scanning path, which is how the tests hold them to the same answers. */
#include "analysis.h"

#include "addr_map.h"
#include "block_sweep.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_env.h"
#include "gmt_grow.h"
#include "gmt_slots.h"
#include "median.h"
#include "step_stream.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int analysis_summaries_allowed(void) {
    const char *off = getenv(GMT_ENV_NO_SUMMARIES);
    return !(off && *off && strcmp(off, "0") != 0);
}

int analysis_whole_run(sqlite3 *db, int64_t from, int64_t to) {
    return analysis_summaries_allowed() && from <= 0 && to >= analysis_last_event(db);
}

double frag_of(const moment *m) {
    if (m->reserved <= 0)
        return 0;
    double f = (double)(m->reserved - m->allocated) / (double)m->reserved;
    return f < 0 ? 0 : f;
}

const char *frag_rating(double f) { return gmt_frag_band_name(gmt_frag_rate(f)); }

/* Prepares a query over a window of one device: ?1 device, ?2 from, ?3 to. */
static sqlite3_stmt *prepare_window(sqlite3 *db, const char *sql, int device, int64_t from,
                                    int64_t to) {
    sqlite3_stmt *st = db_statement(db, sql);
    if (st) {
        sqlite3_bind_int(st, 1, device);
        sqlite3_bind_int64(st, 2, from);
        sqlite3_bind_int64(st, 3, to);
    }
    return st;
}

int64_t analysis_last_event(sqlite3 *db) {
    /* not max(event_id): SQLite would walk every row of the store for it */
    sqlite3_stmt *st =
        db_statement(db, "SELECT event_id FROM event_rows ORDER BY event_id DESC LIMIT 1");
    int64_t v = 0;
    if (st && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int analysis_devices(sqlite3 *db, int *devices, int max) {
    sqlite3_stmt *st =
        db_statement(db, "SELECT device FROM devices WHERE peak_allocated_bytes IS NOT "
                         "NULL ORDER BY device");
    int n = 0;
    while (st && sqlite3_step(st) == SQLITE_ROW && n < max)
        devices[n++] = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

void analysis_read_moment(sqlite3_stmt *st, int first, moment *m) {
    m->event_id = sqlite3_column_int64(st, first);
    m->ts_ns = sqlite3_column_int64(st, first + 1);
    m->allocated = sqlite3_column_int64(st, first + 2);
    m->requested = sqlite3_column_int64(st, first + 3);
    m->reserved = sqlite3_column_int64(st, first + 4);
    m->largest_free = sqlite3_column_int64(st, first + 5);
}

#define MOMENT_COLUMNS                                                                             \
    "event_id, ts_ns, allocated_bytes, requested_bytes, reserved_bytes, "                          \
    "largest_free_bytes"

int analysis_moment(sqlite3 *db, int device, int64_t event_id, moment *out) {
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st =
        db_statement(db, "SELECT " MOMENT_COLUMNS " FROM event_rows WHERE device = ? "
                         "AND event_id <= ? AND (event_id > 0 OR op = {op:seed}) "
                         "ORDER BY event_id DESC LIMIT 1");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, event_id);
    if (sqlite3_step(st) == SQLITE_ROW)
        analysis_read_moment(st, 0, out);
    else
        out->event_id = event_id;
    sqlite3_finalize(st);
    return 0;
}

/* Untracked memory: what the driver says is used minus what is reserved,
 * at each driver sample; the one nearest the peak and the largest. */
static void untracked(sqlite3 *db, device_summary *s) {
    s->untracked_at_peak = s->untracked_max = -1;
    sqlite3_stmt *st = db_statement(
        db, "SELECT c.ts_ns, c.value, "
            " coalesce((SELECT t.value FROM counters t WHERE t.device = c.device AND "
            "  t.kind = 'driver_total' AND t.ts_ns <= c.ts_ns ORDER BY t.ts_ns DESC LIMIT 1), "
            "  (SELECT total_bytes FROM devices WHERE device = c.device)), "
            " (SELECT r.reserved_bytes FROM event_rows r WHERE r.device = c.device AND "
            "  r.event_id <= c.event_id AND (r.event_id > 0 OR r.op = {op:seed}) "
            "  ORDER BY r.event_id DESC LIMIT 1) "
            "FROM counters c WHERE c.device = ? AND c.kind = 'driver_free' AND "
            "c.event_id >= ? AND c.event_id <= ? ORDER BY c.ts_ns");
    if (!st)
        return;
    sqlite3_bind_int(st, 1, s->device);
    sqlite3_bind_int64(st, 2, s->start.event_id);
    sqlite3_bind_int64(st, 3, s->end.event_id);
    int64_t best_gap = INT64_MAX;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 2) == SQLITE_NULL)
            continue;
        int64_t ts = sqlite3_column_int64(st, 0), free_bytes = sqlite3_column_int64(st, 1);
        int64_t total = sqlite3_column_int64(st, 2), reserved = sqlite3_column_int64(st, 3);
        int64_t u = total - free_bytes - reserved;
        if (u > s->untracked_max)
            s->untracked_max = u;
        int64_t gap = llabs(ts - s->peak_allocated.ts_ns);
        if (gap < best_gap) {
            best_gap = gap;
            s->untracked_at_peak = u;
        }
    }
    sqlite3_finalize(st);
}

/* Worst fragmentation: the worst step end when the window has steps (mid-step
 * states are transient), else the worst state holding at least 10 % of the
 * peak reserved bytes. */
typedef struct worst_step {
    moment worst;
    size_t steps;
} worst_step;

static int keep_worst(void *ctx, const step_state *step) {
    worst_step *w = ctx;
    if (frag_of(&step->at_end) > frag_of(&w->worst))
        w->worst = step->at_end;
    w->steps++;
    return 0;
}

static void worst_fragmentation(sqlite3 *db, device_summary *s, int64_t from, int64_t to) {
    s->worst_fragmentation = s->start;
    worst_step w = {s->start, 0};
    if (analysis_steps_visit(db, s->device, from, to, keep_worst, &w) == 0 && w.steps > 0) {
        s->worst_fragmentation = w.worst;
        return;
    }
    sqlite3_stmt *st = prepare_window(
        db,
        "SELECT " MOMENT_COLUMNS " FROM event_rows WHERE device = ? AND event_id > ? AND "
        "event_id <= ? AND reserved_bytes > 0 AND reserved_bytes >= ? ORDER BY "
        "CAST(reserved_bytes - allocated_bytes AS REAL) / reserved_bytes DESC, event_id LIMIT 1",
        s->device, from, to);
    if (!st)
        return;
    sqlite3_bind_int64(st, 4, s->peak_reserved.reserved / 10);
    if (sqlite3_step(st) == SQLITE_ROW) {
        moment m;
        analysis_read_moment(st, 0, &m);
        if (frag_of(&m) > frag_of(&s->worst_fragmentation))
            s->worst_fragmentation = m;
    }
    sqlite3_finalize(st);
}

/* The whole run: what the replay kept in devices and site_stats (brief: not the two facts
 * that read more, analysis_device_summary_brief). */
static int device_summary_from_tables(sqlite3 *db, device_summary *s, int brief) {
    sqlite3_stmt *st =
        db_statement(db, "SELECT peak_allocated_event_id, peak_requested_event_id, "
                         "peak_reserved_event_id, allocs, frees, ooms, alloc_failed, "
                         "(SELECT sum(never_freed_count) FROM site_stats WHERE device = "
                         "?1), (SELECT sum(never_freed_bytes) FROM site_stats WHERE "
                         "device = ?1) FROM devices WHERE device = ?1");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, s->device);
    if (sqlite3_step(st) == SQLITE_ROW) {
        analysis_moment(db, s->device, sqlite3_column_int64(st, 0), &s->peak_allocated);
        analysis_moment(db, s->device, sqlite3_column_int64(st, 1), &s->peak_requested);
        analysis_moment(db, s->device, sqlite3_column_int64(st, 2), &s->peak_reserved);
        s->allocs = sqlite3_column_int64(st, 3);
        s->frees = sqlite3_column_int64(st, 4);
        s->ooms = sqlite3_column_int64(st, 5);
        s->alloc_failed = sqlite3_column_int64(st, 6);
        s->never_freed_count = sqlite3_column_int64(st, 7);
        s->never_freed_bytes = sqlite3_column_int64(st, 8);
    }
    sqlite3_finalize(st);
    if (brief)
        return 0;
    worst_fragmentation(db, s, s->start.event_id, s->end.event_id);
    untracked(db, s);
    return 0;
}

/* The window's pass of analysis_device_summary. 0, or -1 when the events cannot be read. */
static int window_pass(sqlite3 *db, device_summary *s, int64_t from, int64_t to) {
    enum {
        ID,
        TS,
        ALLOCATED,
        REQUESTED,
        RESERVED,
        FREE,
        OP,
        LEVEL,
        KIND,
        DEVICE,
        SIZE,
        REQ,
        AID,
        NCOL
    };
    static const int want[NCOL] = {EVENT_COL_event_id,
                                   EVENT_COL_ts_ns,
                                   EVENT_COL_allocated_bytes,
                                   EVENT_COL_requested_bytes,
                                   EVENT_COL_reserved_bytes,
                                   EVENT_COL_largest_free_bytes,
                                   EVENT_COL_op,
                                   EVENT_COL_level,
                                   EVENT_COL_kind,
                                   EVENT_COL_device,
                                   EVENT_COL_size,
                                   EVENT_COL_requested_size,
                                   EVENT_COL_alloc_event_id};
    addr_map whole = {0}, kept = {0}; /* whole-block segments; window allocs live: id -> slot */
    int rc = block_sweep_whole_segments(db, &whole);
    char err[256];
    event_scan *scan =
        rc == 0 ? event_scan_open(db, event_scan_mask(want, NCOL),
                                  from == INT64_MAX ? from : from + 1, to, err, sizeof err)
                : NULL;
    if (!scan)
        rc = -1;
    gmt_slots kept_bytes = GMT_SLOTS_INIT(int64_t); /* the kept allocs' requested bytes */
    const int64_t *col[EVENT_STORE_NCOLS], *v[NCOL];
    long got = 0;
    while (rc == 0 && (got = event_scan_next(scan, col)) > 0) {
        event_scan_pick(col, want, NCOL, v);
        for (long r = 0; rc == 0 && r < got; r++) {
            if (v[DEVICE][r] != s->device)
                continue;
            moment m = {v[ID][r],        v[TS][r],       v[ALLOCATED][r],
                        v[REQUESTED][r], v[RESERVED][r], event_value_or(v[FREE][r], 0)};
            if (m.allocated > s->peak_allocated.allocated)
                s->peak_allocated = m;
            if (m.requested > s->peak_requested.requested)
                s->peak_requested = m;
            if (m.reserved > s->peak_reserved.reserved)
                s->peak_reserved = m;
            int64_t op = v[OP][r];
            s->ooms += op == TRACE_OP_OOM;
            s->alloc_failed += op == TRACE_OP_ALLOC_FAILED;
            if (v[KIND][r] != TRACE_KIND_DEVICE)
                continue;
            int is_block = v[LEVEL][r] == TRACE_LEVEL_BLOCK ||
                           addr_map_get(&whole, 0, (uint64_t)v[ID][r]) != NULL;
            s->allocs += is_block && op == TRACE_OP_ALLOC;
            s->frees += is_block && op == TRACE_OP_FREE;
            if (is_block && (op == TRACE_OP_ALLOC || op == TRACE_OP_MAP) && v[ID][r] > 0) {
                int64_t size = event_value_or(v[SIZE][r], 0);
                int64_t bytes = event_value_or(v[REQ][r], size);
                int64_t slot = gmt_slot_take(&kept_bytes);
                if (slot < 0) {
                    rc = -1;
                    break;
                }
                *(int64_t *)gmt_slot_at(&kept_bytes, (uint32_t)slot) = bytes;
                rc = addr_map_put(&kept, 0, (uint64_t)v[ID][r], (uint32_t)slot + 1);
                s->never_freed_count++;
                s->never_freed_bytes += bytes;
            } else if ((op == TRACE_OP_FREE || op == TRACE_OP_UNMAP) &&
                       v[AID][r] != EVENT_STORE_NULL) {
                uint32_t *at = addr_map_get(&kept, 0, (uint64_t)v[AID][r]);
                if (!at)
                    continue; /* allocated before the window, or not a block */
                uint32_t slot = *at - 1;
                addr_map_remove(&kept, 0, (uint64_t)v[AID][r]);
                s->never_freed_count--;
                s->never_freed_bytes -= *(int64_t *)gmt_slot_at(&kept_bytes, slot);
                gmt_slot_give(&kept_bytes, slot);
            }
        }
    }
    if (got < 0)
        rc = -1;
    event_scan_close(scan);
    addr_map_free(&whole);
    addr_map_free(&kept);
    gmt_slots_free(&kept_bytes);
    return rc;
}

static int summary_of(sqlite3 *db, int device, int64_t from, int64_t to, device_summary *s,
                      int brief) {
    memset(s, 0, sizeof *s);
    s->device = device;
    sqlite3_stmt *st = db_statement(db, "SELECT name, total_bytes FROM devices WHERE device = ?");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        snprintf(s->name, sizeof s->name, "%s", name ? name : "");
        s->total_bytes = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    analysis_moment(db, device, from, &s->start);
    analysis_moment(db, device, to, &s->end);
    s->peak_allocated = s->peak_requested = s->peak_reserved = s->start;
    s->worst_fragmentation = s->start; /* what brief leaves unknown */
    s->untracked_at_peak = s->untracked_max = -1;
    if (analysis_whole_run(db, from, to))
        return device_summary_from_tables(db, s, brief);

    /* One pass over the window (event_scan.h): peaks, counts, and the blocks allocated in it
     * and live at its end (bytes as requested): each such alloc is kept until a free in the
     * window takes it back. */
    if (window_pass(db, s, from, to) != 0)
        return -1;
    if (brief)
        return 0;
    worst_fragmentation(db, s, from, to);
    untracked(db, s);
    return 0;
}

int analysis_device_summary(sqlite3 *db, int device, int64_t from, int64_t to, device_summary *s) {
    return summary_of(db, device, from, to, s, 0);
}

int analysis_device_summary_brief(sqlite3 *db, int device, int64_t from, int64_t to,
                                  device_summary *s) {
    return summary_of(db, device, from, to, s, 1);
}

/* ---- site growth -------------------------------------------------------- */

typedef struct site_acc {
    int64_t stack_id;
    int64_t live, live_first, live_last;
    int64_t window_delta; /* change in the window being swept */
    int64_t *deltas;      /* nonzero per-window changes */
    size_t ndeltas, cap;
    int64_t steps_grown;
    int64_t never_freed_count, never_freed_bytes;
} site_acc;

typedef struct sweep {
    site_acc *sites;
    size_t len, cap;
    addr_map index;   /* stack id -> site */
    int64_t *touched; /* sites with a nonzero window_delta */
    size_t touched_len, touched_cap;
} sweep;

static site_acc *site_of(sweep *sw, int64_t stack_id) {
    uint32_t *v = addr_map_get(&sw->index, 0, (uint64_t)stack_id);
    if (v)
        return &sw->sites[*v];
    if (gmt_grow((void **)&sw->sites, &sw->cap, sw->len, sizeof *sw->sites) != 0)
        return NULL;
    if (addr_map_put(&sw->index, 0, (uint64_t)stack_id, (uint32_t)sw->len) != 0)
        return NULL;
    site_acc *s = &sw->sites[sw->len++];
    memset(s, 0, sizeof *s);
    s->stack_id = stack_id;
    return s;
}

static int note_change(sweep *sw, site_acc *s, int64_t bytes) {
    if (s->window_delta == 0) {
        if (gmt_grow((void **)&sw->touched, &sw->touched_cap, sw->touched_len,
                     sizeof *sw->touched) != 0)
            return -1;
        sw->touched[sw->touched_len++] = s - sw->sites;
    }
    s->window_delta += bytes;
    s->live += bytes;
    return 0;
}

/* A step ended: record every site's change since the previous step end. */
static int close_window(sweep *sw, int first) {
    for (size_t i = 0; i < sw->touched_len; i++) {
        site_acc *s = &sw->sites[sw->touched[i]];
        int64_t d = s->window_delta;
        s->window_delta = 0;
        if (first || d == 0)
            continue;
        if (gmt_grow((void **)&s->deltas, &s->cap, s->ndeltas, sizeof *s->deltas) != 0)
            return -1;
        s->deltas[s->ndeltas++] = d;
        s->steps_grown += d > 0;
    }
    sw->touched_len = 0;
    for (size_t i = 0; i < sw->len; i++) {
        if (first)
            sw->sites[i].live_first = sw->sites[i].live;
        sw->sites[i].live_last = sw->sites[i].live;
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median of the per-window changes, the windows without a change being 0. */
static int64_t median_change(site_acc *s, size_t windows) {
    if (!windows)
        return 0;
    if (s->ndeltas > 1)
        qsort(s->deltas, s->ndeltas, sizeof *s->deltas, cmp_i64);
    size_t neg = 0;
    while (neg < s->ndeltas && s->deltas[neg] < 0)
        neg++;
    size_t zeros = windows - s->ndeltas;
    /* sorted: deltas[0..neg) , zeros x 0 , deltas[neg..) */
    size_t mid = (windows - 1) / 2;
    int64_t lo, hi;
    size_t k = mid;
    lo = k < neg ? s->deltas[k] : k < neg + zeros ? 0 : s->deltas[k - zeros];
    k = windows / 2;
    hi = k < neg ? s->deltas[k] : k < neg + zeros ? 0 : s->deltas[k - zeros];
    return median_of_middles(lo, hi);
}

static int by_growth(const void *a, const void *b) {
    const site_growth *x = a, *y = b;
    if (x->growth_per_step != y->growth_per_step)
        return x->growth_per_step > y->growth_per_step ? -1 : 1;
    if (x->never_freed_bytes != y->never_freed_bytes)
        return x->never_freed_bytes > y->never_freed_bytes ? -1 : 1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* The step ends a growth analysis windows on, in event order (an end not after the one before
 * is passed over), read as the sweep reaches them: windows are (end[k-1], end[k]]. */
typedef struct end_stream {
    step_cursor *cursor;
    int64_t next; /* the next end's event, when has_next */
    int has_next, failed;
    size_t ends;   /* ends read so far */
    size_t closed; /* ends the sweep has passed */
    int64_t first_ts, last_ts;
} end_stream;

static void end_stream_advance(end_stream *e) {
    step_state s;
    int got;
    int64_t before = e->ends ? e->next : INT64_MIN;
    e->has_next = 0;
    while ((got = step_cursor_next(e->cursor, &s)) == 1) {
        if (s.at_end.event_id <= before)
            continue;
        if (!e->ends++)
            e->first_ts = s.at_end.ts_ns;
        e->last_ts = s.at_end.ts_ns;
        e->next = s.at_end.event_id;
        e->has_next = 1;
        return;
    }
    e->failed |= got < 0;
}

/* Closes the windows of every end before `event_id` (INT64_MAX: all that are left). */
static int close_windows_before(sweep *sw, end_stream *e, int64_t event_id) {
    int rc = 0;
    while (rc == 0 && e->has_next && event_id > e->next) {
        rc = close_window(sw, e->closed++ == 0);
        end_stream_advance(e);
    }
    return rc;
}

/* The whole run: the replay's per-step changes (site_steps) and end state
 * (site_stats) give the same accumulators the sweep builds. */
static int growth_from_tables(sqlite3 *db, int device, end_stream *ends, sweep *sw) {
    sqlite3_stmt *st =
        db_statement(db, "SELECT stack_id, end_event_id, delta_bytes, live_bytes FROM "
                         "site_steps WHERE device = ? ORDER BY end_event_id");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        rc = close_windows_before(sw, ends, sqlite3_column_int64(st, 1));
        site_acc *s = site_of(sw, sqlite3_column_int64(st, 0));
        if (!s)
            rc = -1;
        else
            rc |= note_change(sw, s, sqlite3_column_int64(st, 2));
    }
    sqlite3_finalize(st);
    if (rc == 0)
        rc = close_windows_before(sw, ends, INT64_MAX);
    st = db_statement(db, "SELECT stack_id, end_bytes, never_freed_count, never_freed_bytes FROM "
                          "site_stats WHERE device = ?");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        site_acc *s = site_of(sw, sqlite3_column_int64(st, 0));
        if (!s) {
            rc = -1;
            break;
        }
        s->live = sqlite3_column_int64(st, 1);
        s->never_freed_count = sqlite3_column_int64(st, 2);
        s->never_freed_bytes = sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
    return rc;
}

/* A window: sweep the window's block allocs and frees in event order. */
static int growth_by_sweep(sqlite3 *db, int device, int64_t from, int64_t to, end_stream *ends,
                           sweep *sw) {
    int rc = 0;
    block_sweep *bs = block_sweep_open(db, device, to);
    if (!bs)
        return -1;
    block_change c;
    while (rc == 0 && block_sweep_next(bs, &c)) {
        rc = close_windows_before(sw, ends, c.event_id);
        site_acc *s = site_of(sw, c.stack_id);
        if (!s) {
            rc = -1;
            break;
        }
        rc |= note_change(sw, s, c.is_alloc ? c.size : -c.size);
        /* never freed: allocated in the window and not freed by its end (the sweep stops
         * there), so a free takes back what its alloc in the window added */
        if (c.alloc_id > from) {
            int sign = c.is_alloc ? 1 : -1;
            s->never_freed_count += sign;
            s->never_freed_bytes += sign * c.requested;
        }
    }
    block_sweep_close(bs);
    if (rc == 0)
        rc = close_windows_before(sw, ends, INT64_MAX);
    return rc;
}

int analysis_site_growth(sqlite3 *db, int device, int64_t from, int64_t to, site_growth **out,
                         size_t *count, size_t *windows) {
    *out = NULL;
    *count = *windows = 0;
    end_stream ends = {.cursor = step_cursor_open(db, device, from, to)};
    if (!ends.cursor)
        return -1;
    end_stream_advance(&ends);
    sweep sw = {0};
    int rc = analysis_whole_run(db, from, to) ? growth_from_tables(db, device, &ends, &sw)
                                              : growth_by_sweep(db, device, from, to, &ends, &sw);
    if (ends.failed)
        rc = -1;
    step_cursor_close(ends.cursor);
    size_t nwindows = ends.ends > 1 ? ends.ends - 1 : 0;
    double step_ns = nwindows ? (double)(ends.last_ts - ends.first_ts) / (double)nwindows : 0;
    site_growth *res = rc == 0 ? calloc(sw.len + 1, sizeof *res) : NULL;
    size_t n = 0;
    for (size_t i = 0; res && i < sw.len; i++) {
        site_acc *s = &sw.sites[i];
        int64_t g = median_change(s, nwindows);
        if (g > 0 || s->never_freed_count > 0) {
            site_growth *r = &res[n++];
            r->stack_id = s->stack_id;
            r->growth_per_step = g;
            r->bytes_per_min = step_ns > 0 ? (double)g * 60e9 / step_ns : 0;
            r->live_first_step = s->live_first;
            r->live_last_step = s->live_last;
            r->live_end = s->live;
            r->never_freed_count = s->never_freed_count;
            r->never_freed_bytes = s->never_freed_bytes;
            r->steps_grown = s->steps_grown;
        }
    }
    for (size_t i = 0; i < sw.len; i++)
        free(sw.sites[i].deltas);
    free(sw.sites);
    free(sw.touched);
    addr_map_free(&sw.index);
    if (!res)
        return -1;
    qsort(res, n, sizeof *res, by_growth);
    *out = res;
    *count = n;
    *windows = nwindows;
    return 0;
}

int analysis_top_stacks_at(sqlite3 *db, int device, int64_t event_id, size_t limit,
                           stack_bytes **out, size_t *count) {
    *out = calloc(limit ? limit : 1, sizeof **out);
    *count = 0;
    int64_t peak = INT64_MIN;
    sqlite3_stmt *st =
        db_statement(db, "SELECT peak_allocated_event_id FROM devices WHERE device = ?");
    if (st) {
        sqlite3_bind_int(st, 1, device);
        if (sqlite3_step(st) == SQLITE_ROW)
            peak = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (event_id == peak && analysis_whole_run(db, 0, analysis_last_event(db)))
        st = db_statement(db,
                          "SELECT stack_id, peak_bytes, peak_blocks FROM site_stats WHERE device = "
                          "?1 AND peak_bytes > 0 AND ?2 = ?2 ORDER BY peak_bytes DESC, stack_id "
                          "LIMIT ?3");
    else
        st = db_statement(
            db, "SELECT a.stack_id, sum(a.size), count(*) FROM event_rows a LEFT JOIN event_rows f "
                "ON f.alloc_event_id = a.event_id AND f.op IN ({op:free}, {op:unmap}) "
                "WHERE a.device = ?1 AND a.kind = {kind:device} AND a.op IN ({op:alloc}, {op:map}) "
                "AND " SQL_IS_BLOCK(
                    "a") " AND a.event_id <= ?2 AND (f.event_id IS NULL OR f.event_id > ?2) "
                         "GROUP BY a.stack_id ORDER BY 2 DESC, a.stack_id LIMIT ?3");
    if (!st || !*out) {
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, event_id);
    sqlite3_bind_int64(st, 3, (int64_t)limit);
    while (sqlite3_step(st) == SQLITE_ROW && *count < limit) {
        stack_bytes *b = &(*out)[(*count)++];
        b->stack_id = db_column_i64(st, 0, 0);
        b->bytes = sqlite3_column_int64(st, 1);
        b->blocks = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return 0;
}
