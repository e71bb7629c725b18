/* timeline_export.c — see timeline_export.h. */
#include "timeline_export.h"

#include "addr_map.h"
#include "block_sweep.h"
#include "category_stream.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_grow.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int timeline_export_devices(sqlite3 *db, int *devs, int max) {
    sqlite3_stmt *st = db_statement(db, "SELECT device FROM devices WHERE device >= 0 AND "
                                        "device < ?1 ORDER BY device");
    if (!st)
        return 0;
    sqlite3_bind_int(st, 1, GMT_MAX_DEVICES);
    int n = 0;
    while (n < max && sqlite3_step(st) == SQLITE_ROW)
        devs[n++] = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

int timeline_export_rank(sqlite3 *db) {
    int64_t r = db_query_i64(db, "SELECT value FROM meta WHERE key = 'rank'", 0, 0, -1);
    return r >= 0 && r < (1 << 24) ? (int)r : -1;
}

int timeline_export_timed(sqlite3 *db) {
    return db_query_int(db, "SELECT value FROM meta WHERE key = 'timestamps'", 1) != 0;
}

int64_t timeline_export_event_count(sqlite3 *db) {
    return db_query_int(db, "SELECT coalesce(max(event_id), 0) FROM event_rows", 0);
}

int64_t timeline_export_earliest(sqlite3 *db) {
    return db_query_int(db,
                        "SELECT min(0, coalesce((SELECT min(ts_ns) FROM markers), 0), "
                        "coalesce((SELECT min(begin_ts_ns) FROM steps), 0))",
                        0);
}

static int64_t driver_free_at(sqlite3 *db, int device, int64_t event_id) {
    return db_query_i64(db,
                        "SELECT value FROM counters WHERE device = ?1 AND kind = 'driver_free' "
                        "AND event_id <= ?2 ORDER BY event_id DESC, ts_ns DESC LIMIT 1",
                        device, event_id, -1);
}

enum {
    C_ID,
    C_TS,
    C_DEV,
    C_OP,
    C_LEVEL,
    C_KIND,
    C_ADDR,
    C_SIZE,
    C_STREAM,
    C_STACK,
    C_ALLOCATED,
    C_REQUESTED,
    C_RESERVED,
    C_LARGEST,
    C_ALLOC_OF,
    C_N
};

typedef struct dev_totals {
    int seen;
    int64_t allocated, reserved, requested;
    int64_t categories[BLOCK_CATEGORY_COUNT]; /* the live bytes of each */
} dev_totals;

/* The categories' bytes after event (device, row i of v): an alloc of a block or of a
 * whole-block segment adds its size to its category, the free or unmap that ends it takes it
 * away (the blocks the database's allocated counts: allocations' rows). 0, or -1 (err). */
static int count_categories(category_stream *cs, dev_totals *t, const int64_t *const *v, long i,
                            const addr_map *whole, char *err, size_t errlen) {
    int64_t op = v[C_OP][i], id = v[C_ID][i];
    if (event_value_or(v[C_KIND][i], -1) != TRACE_KIND_DEVICE)
        return 0;
    gmt_category cat;
    int64_t size;
    if (op == TRACE_OP_ALLOC || op == TRACE_OP_MAP) {
        int64_t level = event_value_or(v[C_LEVEL][i], -1);
        if (!(level == TRACE_LEVEL_BLOCK && op == TRACE_OP_ALLOC) &&
            !(level == TRACE_LEVEL_SEGMENT && addr_map_get(whole, 0, (uint64_t)id)))
            return 0;
        size = event_value_or(v[C_SIZE][i], 0);
        if (category_stream_alloc(cs, id, size, &cat, err, errlen) != 0)
            return -1;
        t->categories[cat] += size;
    } else if ((op == TRACE_OP_FREE || op == TRACE_OP_UNMAP) &&
               category_stream_end(cs, event_value_or(v[C_ALLOC_OF][i], INT64_MIN), &cat, &size)) {
        t->categories[cat] -= size;
    }
    return 0;
}

int timeline_export_events(sqlite3 *db, tl_event_fn fn, void *ctx, char *err, size_t errlen) {
    static const int want[C_N] = {EVENT_COL_event_id,
                                  EVENT_COL_ts_ns,
                                  EVENT_COL_device,
                                  EVENT_COL_op,
                                  EVENT_COL_level,
                                  EVENT_COL_kind,
                                  EVENT_COL_addr,
                                  EVENT_COL_size,
                                  EVENT_COL_stream,
                                  EVENT_COL_stack_id,
                                  EVENT_COL_allocated_bytes,
                                  EVENT_COL_requested_bytes,
                                  EVENT_COL_reserved_bytes,
                                  EVENT_COL_largest_free_bytes,
                                  EVENT_COL_alloc_event_id};
    addr_map whole = {0}; /* the whole-block segments' ids (block_sweep.h) */
    if (block_sweep_whole_segments(db, &whole) != 0) {
        snprintf(err, errlen, "cannot read the segments: %s", sqlite3_errmsg(db));
        addr_map_free(&whole);
        return -1;
    }
    /* the seed's rows (event_id <= 0) are few: a min over all would read every chunk */
    int64_t first = db_query_int(
        db, "SELECT coalesce((SELECT min(event_id) FROM event_rows WHERE event_id <= 0), 1)", 1);
    int64_t last = db_query_int(db, "SELECT max(event_id) FROM event_rows", 0);
    dev_totals *tot = calloc(GMT_MAX_DEVICES, sizeof *tot);
    if (!tot) {
        addr_map_free(&whole);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    category_stream *cs = NULL;
    int rc = category_stream_open(db, &cs, err, errlen);
    if (rc == 0 && cs)
        rc = category_stream_begin(cs, first, err, errlen);
    event_scan *s = rc == 0 && first <= last
                        ? event_scan_open(db, event_scan_mask(want, C_N), first, last, err, errlen)
                        : NULL;
    if (rc == 0 && first <= last && !s)
        rc = -1;
    long n;
    const int64_t *cols[EVENT_STORE_NCOLS], *v[C_N];
    while (rc == 0 && s && (n = event_scan_next(s, cols)) != 0) {
        if (n < 0) {
            snprintf(err, errlen, "%s", event_scan_error(s));
            rc = -1;
            break;
        }
        event_scan_pick(cols, want, C_N, v);
        for (long i = 0; i < n && rc == 0; i++) {
            int64_t dev = v[C_DEV][i];
            if (dev < 0 || dev >= GMT_MAX_DEVICES)
                continue;
            dev_totals *t = &tot[dev];
            if (cs && count_categories(cs, t, v, i, &whole, err, errlen) != 0) {
                rc = -1;
                break;
            }
            tl_event e = {
                .kind = TL_TOTALS,
                .device = (int)dev,
                .event_id = v[C_ID][i],
                .ts_ns = event_value_or(v[C_TS][i], 0),
                .allocated = event_value_or(v[C_ALLOCATED][i], 0),
                .reserved = event_value_or(v[C_RESERVED][i], 0),
                .requested = event_value_or(v[C_REQUESTED][i], 0),
                .largest_free = -1,
                .driver_free = -1,
                .categories = cs ? t->categories : NULL,
            };
            int64_t op = v[C_OP][i];
            int device_kind = event_value_or(v[C_KIND][i], -1) == TRACE_KIND_DEVICE;
            if (device_kind && e.event_id >= 1 && op == TRACE_OP_ALLOC) {
                int block = event_value_or(v[C_LEVEL][i], -1) == TRACE_LEVEL_BLOCK;
                if (block || addr_map_get(&whole, 0, (uint64_t)e.event_id) != NULL)
                    e.kind = TL_ALLOC;
            } else if (e.event_id >= 1 && op == TRACE_OP_OOM) {
                e.kind = TL_OOM;
                e.largest_free = event_value_or(v[C_LARGEST][i], -1);
                e.driver_free = driver_free_at(db, e.device, e.event_id);
            }
            if (e.kind == TL_TOTALS && t->seen && t->allocated == e.allocated &&
                t->reserved == e.reserved && t->requested == e.requested)
                continue;
            t->seen = 1;
            t->allocated = e.allocated;
            t->reserved = e.reserved;
            t->requested = e.requested;
            if (e.kind != TL_TOTALS) {
                e.addr = (uint64_t)event_value_or(v[C_ADDR][i], 0);
                e.size = (uint64_t)event_value_or(v[C_SIZE][i], 0);
                e.stream = (uint64_t)event_value_or(v[C_STREAM][i], 0);
                e.stack_id = event_value_or(v[C_STACK][i], 0);
            }
            if (fn(ctx, &e) != 0)
                rc = -2;
        }
    }
    if (s)
        event_scan_close(s);
    category_stream_close(cs);
    addr_map_free(&whole);
    free(tot);
    return rc == 0 ? 0 : -1;
}

/* One query's slices to fn: columns name, number, tid, begin, end (NULL: open). */
static int slices_of(sqlite3 *db, const char *sql, int is_step, int64_t last_ts, tl_slice_fn fn,
                     void *ctx, char *err, size_t errlen) {
    sqlite3_stmt *st = db_statement(db, sql);
    if (!st) {
        snprintf(err, errlen, "cannot read the %s: %s", is_step ? "steps" : "ranges",
                 sqlite3_errmsg(db));
        return -1;
    }
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        tl_slice s = {
            .name = (const char *)sqlite3_column_text(st, 0),
            .number = sqlite3_column_int64(st, 1),
            .tid = db_column_i64(st, 2, -1),
            .begin_ts_ns = sqlite3_column_int64(st, 3),
            .end_ts_ns = db_column_i64(st, 4, last_ts),
        };
        if (s.end_ts_ns < s.begin_ts_ns)
            s.end_ts_ns = s.begin_ts_ns;
        stop = fn(ctx, is_step, &s) != 0;
    }
    sqlite3_finalize(st);
    if (stop)
        return -1;
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "cannot read the %s: %s", is_step ? "steps" : "ranges",
                 sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

int timeline_export_slices(sqlite3 *db, tl_slice_fn fn, void *ctx, char *err, size_t errlen) {
    int64_t last_ts = db_query_int(db, "SELECT value FROM meta WHERE key = 'last_ts_ns'", 0);
    if (slices_of(db,
                  "SELECT coalesce(name, 'step ' || step), step, NULL, begin_ts_ns, end_ts_ns "
                  "FROM steps ORDER BY begin_ts_ns, step",
                  1, last_ts, fn, ctx, err, errlen) != 0)
        return -1;
    return slices_of(db,
                     "SELECT coalesce(name, '?'), marker_id, tid, begin_ts_ns, end_ts_ns FROM "
                     "ranges ORDER BY begin_ts_ns, marker_id",
                     0, last_ts, fn, ctx, err, errlen);
}
