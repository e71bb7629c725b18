/* plots_heatmap.c — the address-space heatmap from the database.
 *
 * The y axis is the device's address space with the holes between segments
 * squeezed out: every address range any segment ever covered, in address
 * order, stacked, cut into rows of equal bytes. One ordered pass over the
 * segment and block events keeps, per row, the bytes reserved and the bytes
 * allocated; at each time column's end the fractions are taken. A block
 * only touches the rows it spans, so the pass costs events plus columns x
 * rows, whatever the trace's length. */
#include "plots.h"

#ifdef GMT_HAVE_CAIRO

#include "render.h"
#include "units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLUMNS 800
#define ROWS 400

typedef struct span {
    uint64_t addr, size, offset; /* offset: where it starts in the squeezed space */
} span;

typedef struct heat {
    span *spans;
    size_t nspans;
    uint64_t total; /* squeezed bytes */
    double bytes_per_row;
    double *reserved, *allocated; /* per row */
} heat;

/* The union of all segment ranges, sorted and merged. */
static int load_spans(sqlite3 *db, int device, heat *h) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT addr, size FROM segments WHERE device = ? AND kind = 'device' "
                           "ORDER BY addr",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int(st, 1, device);
    size_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        uint64_t a = (uint64_t)sqlite3_column_int64(st, 0),
                 s = (uint64_t)sqlite3_column_int64(st, 1);
        if (h->nspans && a <= h->spans[h->nspans - 1].addr + h->spans[h->nspans - 1].size) {
            span *last = &h->spans[h->nspans - 1];
            if (a + s > last->addr + last->size)
                last->size = a + s - last->addr;
            continue;
        }
        if (h->nspans == cap) {
            cap = cap ? cap * 2 : 256;
            span *grown = realloc(h->spans, cap * sizeof *grown);
            if (!grown) {
                sqlite3_finalize(st);
                return -1;
            }
            h->spans = grown;
        }
        h->spans[h->nspans++] = (span){a, s, 0};
    }
    sqlite3_finalize(st);
    for (size_t i = 0; i < h->nspans; i++) {
        h->spans[i].offset = h->total;
        h->total += h->spans[i].size;
    }
    return 0;
}

/* Squeezed offset of an address; UINT64_MAX when outside every span. */
static uint64_t squeeze(const heat *h, uint64_t addr) {
    size_t lo = 0, hi = h->nspans;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (h->spans[mid].addr + h->spans[mid].size <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == h->nspans || addr < h->spans[lo].addr)
        return UINT64_MAX;
    return h->spans[lo].offset + (addr - h->spans[lo].addr);
}

/* Adds `sign * bytes` over [start, start + size) of the squeezed space. */
static void spread(const heat *h, double *rows, uint64_t start, uint64_t size, int sign) {
    if (start == UINT64_MAX || !size)
        return;
    double first = (double)start / h->bytes_per_row;
    double last = (double)(start + size) / h->bytes_per_row;
    for (size_t r = (size_t)first; r < ROWS && (double)r < last; r++) {
        double lo = first > (double)r ? first : (double)r;
        double hi = last < (double)(r + 1) ? last : (double)(r + 1);
        rows[r] += sign * (hi - lo) * h->bytes_per_row;
    }
}

int plot_heatmap(sqlite3 *db, const plot_request *rq, const char *path, char *err, size_t errlen) {
    heat h = {0};
    float *fraction = NULL;
    int rc = load_spans(db, rq->device, &h);
    h.bytes_per_row = h.total ? (double)h.total / ROWS : 1;
    h.reserved = calloc(ROWS, sizeof *h.reserved);
    h.allocated = calloc(ROWS, sizeof *h.allocated);
    fraction = calloc((size_t)ROWS * COLUMNS, sizeof *fraction);
    if (!h.reserved || !h.allocated || !fraction)
        rc = -1;
    /* the columns split the window's time evenly */
    int64_t t0 = 0, t1 = 1;
    sqlite3_stmt *st = NULL;
    if (rc == 0 && sqlite3_prepare_v2(db,
                                      "SELECT coalesce(min(ts_ns), 0), coalesce(max(ts_ns), 1) "
                                      "FROM event_rows WHERE event_id IN (?1, ?2)",
                                      -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, rq->from > 0 ? rq->from : 1);
        sqlite3_bind_int64(st, 2, rq->to);
        if (sqlite3_step(st) == SQLITE_ROW) {
            t0 = sqlite3_column_int64(st, 0);
            t1 = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    if (t1 <= t0)
        t1 = t0 + 1;
    /* one pass: segments (reserved) and blocks (allocated); frees take their alloc's range */
    if (rc == 0 &&
        sqlite3_prepare_v2(
            db,
            /* a free row carries its alloc's address and size */
            "SELECT e.event_id, e.ts_ns, e.op, e.level, e.addr, e.size, "
            "coalesce(e.alloc_event_id, e.event_id) IN (SELECT segment_id FROM segments WHERE "
            "whole_block = 1) FROM event_rows e WHERE e.device = ?1 AND e.kind = 0 AND "
            "e.event_id <= ?2 AND e.op IN (0, 1, 3, 4) AND (e.op IN (0, 3) OR "
            "e.alloc_event_id IS NOT NULL) ORDER BY e.event_id",
            -1, &st, NULL) != SQLITE_OK)
        rc = -1;
    if (rc == 0) {
        sqlite3_bind_int(st, 1, rq->device);
        sqlite3_bind_int64(st, 2, rq->to);
    }
    size_t col = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), ts = sqlite3_column_int64(st, 1);
        int op = sqlite3_column_int(st, 2), level = sqlite3_column_int(st, 3);
        int whole = sqlite3_column_int(st, 6);
        size_t target = id <= rq->from || ts <= t0 ? 0
                        : ts >= t1                 ? COLUMNS - 1
                                                   : (size_t)((ts - t0) * COLUMNS / (t1 - t0));
        for (; col < target; col++) /* close the columns this event is past */
            for (size_t r = 0; r < ROWS; r++)
                fraction[r * COLUMNS + col] =
                    h.reserved[r] > 0.5 ? (float)(h.allocated[r] / h.reserved[r]) : -1.0f;
        uint64_t start = squeeze(&h, (uint64_t)sqlite3_column_int64(st, 4));
        uint64_t size = (uint64_t)sqlite3_column_int64(st, 5);
        int sign = (op == 0 || op == 3) ? 1 : -1;
        if (level == 0) {
            spread(&h, h.reserved, start, size, sign);
            if (whole) /* a plain cudaMalloc is also its own block */
                spread(&h, h.allocated, start, size, sign);
        } else {
            spread(&h, h.allocated, start, size, sign);
        }
    }
    for (; rc == 0 && col < COLUMNS; col++)
        for (size_t r = 0; r < ROWS; r++)
            fraction[r * COLUMNS + col] =
                h.reserved[r] > 0.5 ? (float)(h.allocated[r] / h.reserved[r]) : -1.0f;
    sqlite3_finalize(st);
    for (size_t i = 0; rc == 0 && i < (size_t)ROWS * COLUMNS; i++)
        if (fraction[i] > 1.0f)
            fraction[i] = 1.0f;
    size_t *bounds = calloc(h.nspans + 1, sizeof *bounds);
    for (size_t i = 0; bounds && i < h.nspans; i++)
        bounds[i] = (size_t)((double)h.spans[i].offset / h.bytes_per_row);
    char title[512], subtitle[256], b1[32];
    snprintf(title, sizeof title, "Heatmap: %s, device %d",
             rq->input ? (strrchr(rq->input, '/') ? strrchr(rq->input, '/') + 1 : rq->input)
                       : "trace",
             rq->device);
    snprintf(subtitle, sizeof subtitle,
             "address space (segments stacked, %s) over time; colour: the fraction of reserved "
             "memory that is allocated",
             units_bytes(h.total, b1, sizeof b1));
    render_heatmap rh = {.title = title,
                         .subtitle = subtitle,
                         .ncols = COLUMNS,
                         .nrows = ROWS,
                         .start_ns = t0,
                         .end_ns = t1,
                         .bytes_per_row = (int64_t)h.bytes_per_row,
                         .fraction = fraction,
                         .nbounds = bounds ? h.nspans : 0,
                         .bound_rows = bounds};
    render_options ro = {.width = rq->width, .height = rq->height};
    if (rc != 0)
        snprintf(err, errlen, "reading the database for the heatmap: %s", sqlite3_errmsg(db));
    else
        rc = render_heatmap_draw(&rh, path, &ro, err, errlen);
    free(bounds);
    free(fraction);
    free(h.reserved);
    free(h.allocated);
    free(h.spans);
    return rc;
}

#endif
