/* view_window.c — the window summary's own facts (view_window.h): the sites of the window's
 * allocations from one pass over its events, the categories at two moments from one sweep, the
 * OOMs from report's rules. */
#include "view_window.h"
#include "gmt_grow.h"

#include "addr_map.h"
#include "block_sweep.h"
#include "categories.h"
#include "category_store.h"
#include "db_query.h"
#include "event_scan.h"
#include "layout.h"
#include "layout_index.h"
#include "trace_format.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ID, DEVICE, OP, LEVEL, KIND, SIZE, STACK, NCOL };
static const int scan_columns[NCOL] = {EVENT_COL_event_id, EVENT_COL_device, EVENT_COL_op,
                                       EVENT_COL_level,    EVENT_COL_kind,   EVENT_COL_size,
                                       EVENT_COL_stack_id};

static int by_bytes(const void *a, const void *b) {
    const view_window_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return (x->stack_id > y->stack_id) - (x->stack_id < y->stack_id);
}

/* The window's allocations per stack, the largest VIEW_WINDOW_TOP_SITES kept. */
static int window_sites(sqlite3 *db, view_window *w, char *err, size_t errlen) {
    addr_map whole = {0}, index = {0}; /* index: stack id -> slot + 1 in sites */
    view_window_site *sites = NULL;
    size_t n = 0, cap = 0;
    if (block_sweep_whole_segments(db, &whole) != 0) {
        snprintf(err, errlen, "window: reading the segments: %s", sqlite3_errmsg(db));
        return -1;
    }
    event_scan *scan = w->to > w->from ? event_scan_open(db, event_scan_mask(scan_columns, NCOL),
                                                         w->from + 1, w->to, err, errlen)
                                       : NULL;
    int rc = w->to > w->from && !scan ? -1 : 0;
    const int64_t *col[EVENT_STORE_NCOLS], *v[NCOL];
    long rows = 0;
    while (scan && rc == 0 && (rows = event_scan_next(scan, col)) > 0) {
        event_scan_pick(col, scan_columns, NCOL, v);
        for (long r = 0; r < rows && rc == 0; r++) {
            int64_t op = v[OP][r];
            if (v[DEVICE][r] != w->device || v[KIND][r] != TRACE_KIND_DEVICE ||
                (op != TRACE_OP_ALLOC && op != TRACE_OP_MAP))
                continue;
            if (v[LEVEL][r] != TRACE_LEVEL_BLOCK && !addr_map_get(&whole, 0, (uint64_t)v[ID][r]))
                continue;
            int64_t stack = event_value_or(v[STACK][r], 0), size = event_value_or(v[SIZE][r], 0);
            uint32_t *at = addr_map_get(&index, 0, (uint64_t)stack);
            if (!at) {
                if (gmt_grow_uninit((void **)&sites, &cap, n, sizeof *sites, 64) != 0) {
                    rc = -1;
                    break;
                }
                sites[n++] = (view_window_site){stack, 0, 0};
                if ((rc = addr_map_put(&index, 0, (uint64_t)stack, (uint32_t)n)) != 0)
                    break;
                at = addr_map_get(&index, 0, (uint64_t)stack);
            }
            sites[*at - 1].blocks++;
            sites[*at - 1].bytes += size;
            w->blocks++;
            w->bytes += size;
        }
    }
    if (rc == 0 && rows < 0) {
        snprintf(err, errlen, "window: %s", event_scan_error(scan));
        rc = -1;
    } else if (rc && scan) {
        snprintf(err, errlen, "window: out of memory");
    }
    if (rc == 0) {
        if (n)
            qsort(sites, n, sizeof *sites, by_bytes);
        w->sites_total = n;
        w->nsites = n < VIEW_WINDOW_TOP_SITES ? n : VIEW_WINDOW_TOP_SITES;
        if (w->nsites)
            memcpy(w->sites, sites, w->nsites * sizeof *sites);
    }
    event_scan_close(scan);
    addr_map_free(&whole);
    addr_map_free(&index);
    free(sites);
    return rc;
}

/* The stored categories (block_categories, which `view` adds to a cache that lacks them) of
 * the blocks live after each of the two moments (a <= b): one pass of block_sweep up to b,
 * then a point lookup per live block. 0; 1 when a live block has no stored category (then the
 * sweep decides); -1 on an error. */
static int stored_categories(sqlite3 *db, view_window *w, int64_t a, int64_t b) {
    block_sweep *sw = block_sweep_open(db, w->device, b);
    sqlite3_stmt *st = sw ? category_stored_statement(db) : NULL;
    addr_map live = {0}; /* alloc id -> index + 1 in sizes */
    int64_t *sizes = NULL;
    size_t n = 0, cap = 0;
    int rc = st ? 0 : -1;
    block_change c;
    int more = rc == 0 && block_sweep_next(sw, &c);
    for (int second = 0; rc == 0 && second < 2; second++) {
        int64_t until = second ? b : a,
                *bytes = second ? w->categories_at_end : w->categories_at_peak;
        for (; rc == 0 && more && c.event_id <= until; more = block_sweep_next(sw, &c)) {
            if (!c.is_alloc) {
                addr_map_remove(&live, 0, (uint64_t)c.alloc_id);
                continue;
            }
            if (gmt_grow_uninit((void **)&sizes, &cap, n, sizeof *sizes, 1024) != 0) {
                rc = -1;
                break;
            }
            sizes[n++] = c.size;
            rc = addr_map_put(&live, 0, (uint64_t)c.alloc_id, (uint32_t)n);
        }
        for (size_t i = 0; rc == 0 && live.slots && i <= live.mask; i++) {
            const addr_map_slot *slot = &live.slots[i];
            if (!slot->used)
                continue;
            int k = category_stored_of(st, (int64_t)slot->addr);
            if (k < 0) {
                rc = k == -2 ? -1 : 1; /* not stored: the sweep decides */
                break;
            }
            bytes[k] += sizes[slot->value - 1];
        }
    }
    sqlite3_finalize(st);
    block_sweep_close(sw);
    addr_map_free(&live);
    free(sizes);
    return rc;
}

/* The stored categories of the blocks live at the two moments read from their layouts, when the
 * connection has a layout index (layout_index.h: then each layout costs its checkpoint's blocks
 * and the rows since, not every row since the first) and the layouts' live blocks are the
 * sweep's (layout_blocks_are_sweeps; and no layout left a segment out: l->conflicts). 0; 1 when
 * this way does not apply or a live block has no stored category; -1 on an error. */
static int layout_categories(sqlite3 *db, view_window *w, int64_t a, int64_t b) {
    if (!layout_index_for(db) || !layout_blocks_are_sweeps(db))
        return 1;
    int64_t ids[2] = {a, b};
    layout *ls[2] = {NULL, NULL};
    char err[256];
    if (layout_build_many(db, w->device, ids, 2, ls, err, sizeof err) != 0)
        return -1;
    sqlite3_stmt *st = category_stored_statement(db);
    int rc = st ? 0 : -1;
    for (int m = 0; rc == 0 && m < 2; m++) {
        const layout *l = ls[m];
        int64_t *bytes = m ? w->categories_at_end : w->categories_at_peak;
        if (l->conflicts) {
            rc = 1;
            break;
        }
        size_t n = l->block_count + l->outside_count;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            const layout_block *lb =
                i < l->block_count ? &l->blocks[i] : &l->outside[i - l->block_count];
            if (lb->state == LAYOUT_INACTIVE)
                continue;
            int k = category_stored_of(st, lb->alloc_event_id);
            if (k < 0)
                rc = k == -2 ? -1 : 1; /* not stored: the sweep decides */
            else
                bytes[k] += (int64_t)lb->size;
        }
    }
    sqlite3_finalize(st);
    layout_free(ls[0]);
    layout_free(ls[1]);
    return rc;
}

/* The categories live at the window's peak and at its end: the stored ones when the database
 * has every block's, else one sweep; a failure is said, not an error of the window. */
static void window_categories(sqlite3 *db, view_window *w) {
    char err[256] = "out of memory";
    int64_t peak = w->s.peak_allocated.event_id > w->from ? w->s.peak_allocated.event_id : w->from;
    int64_t ids[2] = {peak < w->to ? peak : w->to, w->to}, bytes[BLOCK_CATEGORY_COUNT * 2];
    if (category_blocks_stored(db)) {
        int rc = layout_categories(db, w, ids[0], ids[1]);
        if (rc == 0) {
            w->have_categories = 1;
            return;
        }
        memset(w->categories_at_peak, 0, sizeof w->categories_at_peak);
        memset(w->categories_at_end, 0, sizeof w->categories_at_end);
        rc = stored_categories(db, w, ids[0], ids[1]);
        if (rc == 0) {
            w->have_categories = 1;
            return;
        }
        memset(w->categories_at_peak, 0, sizeof w->categories_at_peak);
        memset(w->categories_at_end, 0, sizeof w->categories_at_end);
    }
    categorizer *c = categorizer_new(db, NULL, err, sizeof err);
    if (c && categories_live_at(c, w->device, ids, 2, bytes, err, sizeof err) == 0) {
        w->have_categories = 1;
        for (int k = 0; k < BLOCK_CATEGORY_COUNT; k++) {
            w->categories_at_peak[k] = bytes[k * 2];
            w->categories_at_end[k] = bytes[k * 2 + 1];
        }
    } else {
        snprintf(w->categories_error, sizeof w->categories_error, "%s", err);
    }
    categorizer_free(c);
}

int view_window_read(sqlite3 *db, int device, int64_t from, int64_t to, view_window *out, char *err,
                     size_t errlen) {
    assert(db && out && from <= to);
    memset(out, 0, sizeof *out);
    out->device = device;
    out->from = from;
    out->to = to;
    if (analysis_device_summary_brief(db, device, from, to, &out->s) != 0) {
        snprintf(err, errlen, "window: device %d: %s", device, sqlite3_errmsg(db));
        return -1;
    }
    if (window_sites(db, out, err, errlen) != 0 ||
        report_window_ooms(db, device, from, to, out->s.ooms, out->ooms, &out->nooms, err,
                           errlen) != 0)
        return -1;
    window_categories(db, out);
    return 0;
}
