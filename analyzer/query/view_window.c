/* view_window.c — the window summary's own facts (view_window.h): the peak and the sites of
 * the window from the replay's levels (window_levels.h), the categories at two moments from
 * their layouts or one sweep, the OOMs from report's rules. */
#include "view_window.h"
#include "gmt_grow.h"

#include "addr_map.h"
#include "block_sweep.h"
#include "categories.h"
#include "category_store.h"
#include "layout.h"
#include "layout_index.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_bytes(const void *a, const void *b) {
    const view_window_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return (x->stack_id > y->stack_id) - (x->stack_id < y->stack_id);
}

/* The window's allocations per stack (window_levels.h), the largest VIEW_WINDOW_TOP_SITES
 * kept. */
static int top_sites(sqlite3 *db, view_window *w, char *err, size_t errlen) {
    window_sites all;
    if (window_levels_sites(db, w->device, w->from, w->to, &all, err, errlen) != 0)
        return -1;
    if (all.n)
        qsort(all.sites, all.n, sizeof *all.sites, by_bytes);
    w->sites_total = 0;
    for (size_t i = 0; i < all.n; i++) {
        if (all.sites[i].blocks == 0)
            continue; /* counted and taken back (site_levels): not a site of the window */
        if (w->nsites < VIEW_WINDOW_TOP_SITES)
            w->sites[w->nsites++] = all.sites[i];
        w->sites_total++;
    }
    w->blocks = all.blocks;
    w->bytes = all.bytes;
    window_sites_free(&all);
    return 0;
}

/* The window's peak of allocated bytes and its OOM count: from the levels (window_levels.h),
 * or report's pass over the window when the database has none. */
static int window_peak_of(sqlite3 *db, view_window *w, char *err, size_t errlen) {
    window_peak p;
    int rc = window_levels_peak(db, w->device, w->from, w->to, &p, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        device_summary s;
        if (analysis_device_summary_brief(db, w->device, w->from, w->to, &s) != 0) {
            snprintf(err, errlen, "window: device %d: %s", w->device, sqlite3_errmsg(db));
            return -1;
        }
        w->peak_allocated = s.peak_allocated;
        w->oom_count = s.ooms;
        return 0;
    }
    /* as report's pass: the moment of `from`, unless an event of the window goes above it */
    if (analysis_moment(db, w->device, w->from, &w->peak_allocated) != 0 ||
        (p.events && p.max_allocated > w->peak_allocated.allocated &&
         analysis_moment(db, w->device, p.max_event_id, &w->peak_allocated) != 0)) {
        snprintf(err, errlen, "window: device %d: %s", w->device, sqlite3_errmsg(db));
        return -1;
    }
    w->oom_count = p.ooms;
    return 0;
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
    int64_t peak = w->peak_allocated.event_id > w->from ? w->peak_allocated.event_id : w->from;
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
    if (window_peak_of(db, out, err, errlen) != 0 || top_sites(db, out, err, errlen) != 0 ||
        report_window_ooms(db, device, from, to, out->oom_count, out->ooms, &out->nooms, err,
                           errlen) != 0)
        return -1;
    window_categories(db, out);
    return 0;
}
