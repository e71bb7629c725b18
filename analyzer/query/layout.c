/* layout.c — the segment layout at an event id, and stack names (see layout.h).
 *
 * The pass over event_rows mirrors the replay's bookkeeping of blocks, so
 * that the layout agrees with the timeline's totals even where the trace
 * was damaged: blocks are tracked by address (an alloc at the address of a
 * live block ends the old one, as the replay's double_alloc does), a free
 * ends the block whose alloc it names, and a block whose segment was freed
 * under it ended with the segment (the replay's segment_free_in_use). */
#include "layout.h"

#include "addr_map.h"
#include "alloc_model.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_assert.h"
#include "gmt_grow.h"
#include "layout_index.h"
#include "layout_pass.h"
#include "trace_format.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *layout_state_name(layout_state state) {
    switch (state) {
    case LAYOUT_ALLOCATED:
        return "active_allocated";
    case LAYOUT_PENDING_FREE:
        return "active_pending_free";
    default:
        return "inactive";
    }
}

static int set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int set_err(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- the rows ------------------------------------------------------------ */

typedef struct seg_row {
    int64_t segment_id, free_event_id; /* INT64_MAX: live at the end */
    int64_t stack_id;
    uint64_t addr, size, requested, stream;
    int mapped, whole_block;
    int64_t pool;
} seg_row;

static int load_segments(sqlite3 *db, int device, seg_row **out, size_t *count, char *err,
                         size_t errlen) {
    static const char sql[] =
        "SELECT segment_id, free_event_id, stack_id, addr, size, requested_size, stream, mapped, "
        "whole_block, pool FROM segments WHERE device = ?1 AND kind = 'device' ORDER BY segment_id";
    sqlite3_stmt *st;
    if (db_prepare(db, sql, &st) != SQLITE_OK)
        return set_err(err, errlen, "reading segments: %s", sqlite3_errmsg(db));
    sqlite3_bind_int(st, 1, device);
    seg_row *rows = NULL;
    size_t len = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (gmt_grow((void **)&rows, &cap, len, sizeof *rows) != 0) {
            rc = SQLITE_NOMEM;
            break;
        }
        seg_row *r = &rows[len++];
        r->segment_id = sqlite3_column_int64(st, 0);
        r->free_event_id = db_column_i64(st, 1, INT64_MAX);
        r->stack_id = db_column_i64(st, 2, 0);
        r->addr = (uint64_t)sqlite3_column_int64(st, 3);
        r->size = (uint64_t)sqlite3_column_int64(st, 4);
        r->requested = (uint64_t)db_column_i64(st, 5, (int64_t)r->size);
        r->stream = (uint64_t)db_column_i64(st, 6, 0);
        r->mapped = sqlite3_column_int(st, 7);
        r->whole_block = sqlite3_column_int(st, 8);
        r->pool = db_column_i64(st, 9, 0);
    }
    if (rc != SQLITE_DONE) {
        set_err(err, errlen, "reading segments: %s",
                rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(db));
        sqlite3_finalize(st);
        free(rows);
        return -1;
    }
    sqlite3_finalize(st);
    *out = rows;
    *count = len;
    return 0;
}

static const seg_row *find_segment(const seg_row *rows, size_t count, int64_t segment_id) {
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rows[mid].segment_id < segment_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < count && rows[lo].segment_id == segment_id ? &rows[lo] : NULL;
}

/* The live blocks of the pass (by alloc_id), without those whose segment ended by `at`. */
static layout_live_block *pass_snapshot(const layout_pass *p, const seg_row *segs, size_t nseg,
                                        int64_t at, size_t *count) {
    size_t n = 0, kept = 0;
    layout_live_block *out = layout_pass_live(p, &n);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const layout_live_block *b = &out[i];
        if (b->segment_id) {
            const seg_row *s = find_segment(segs, nseg, b->segment_id);
            if (s && s->free_event_id <= at)
                continue;
        }
        out[kept++] = *b;
    }
    *count = kept;
    return out;
}

/* ---- what empty_cache() would return ---------------------------------------- */

uint64_t layout_releasable(const layout *l, const layout_segment *s) {
    if (s->live_blocks == 0)
        return s->size;
    if (!s->mapped)
        return 0;
    uint64_t page = am_expandable_page(s->small_pool);
    uint64_t bytes = 0;
    for (size_t k = 0; k < s->block_count; k++) { /* pages wholly inside a free block */
        const layout_block *b = &l->blocks[s->first_block + k];
        if (b->state != LAYOUT_INACTIVE)
            continue;
        uint64_t first = (b->addr - s->addr + page - 1) / page;
        uint64_t end = (b->addr + b->size - s->addr) / page;
        if (end > first)
            bytes += (end - first) * page;
    }
    return bytes;
}

/* ---- one layout from the live rows ------------------------------------------ */

static int build_point(int device, int64_t at, const seg_row *segs, size_t nseg,
                       const layout_live_block *live, size_t nlive, layout **out, char *err,
                       size_t errlen) {
    layout *l = calloc(1, sizeof *l);
    am_model *m = am_model_new(NULL);
    layout_block *placed = NULL; /* tag - 1 -> the block */
    size_t nplaced = 0, cap_placed = 0, cap_blocks = 0, cap_segments = 0, cap_outside = 0;
    size_t cap_lifetimes = 0;
    if (!l || !m)
        goto oom;
    l->device = device;
    l->event_id = at;

    for (size_t i = 0; i < nseg; i++) {
        const seg_row *s = &segs[i];
        if (s->segment_id > at || s->free_event_id <= at)
            continue;
        if (gmt_grow((void **)&l->lifetimes, &cap_lifetimes, l->lifetime_count,
                     sizeof *l->lifetimes) != 0)
            goto oom;
        l->lifetimes[l->lifetime_count++] =
            (layout_lifetime){s->segment_id, s->stack_id, s->addr, s->size, s->mapped};
        am_error e = s->mapped ? am_segment_map(m, s->addr, s->size, s->stream, i + 1)
                               : am_segment_insert(m, s->addr, s->size, s->stream, i + 1);
        if (e == AM_ERR_NOMEM)
            goto oom;
        if (e != AM_OK) {
            l->conflicts++;
            continue;
        }
        if (!s->whole_block)
            continue;
        if (gmt_grow((void **)&placed, &cap_placed, nplaced, sizeof *placed) != 0)
            goto oom;
        placed[nplaced++] = (layout_block){s->addr,       s->size,     s->requested,    s->stream,
                                           s->segment_id, s->stack_id, LAYOUT_ALLOCATED};
        e = am_block_place(m, s->addr, s->size, s->requested, s->stream, nplaced);
        if (e == AM_ERR_NOMEM)
            goto oom;
        if (e != AM_OK) {
            nplaced--;
            l->conflicts++;
        }
    }

    for (size_t i = 0; i < nlive; i++) {
        const layout_live_block *b = &live[i];
        layout_block lb = {b->addr,
                           b->size,
                           b->requested,
                           b->stream,
                           b->alloc_id,
                           b->stack_id,
                           b->pending ? LAYOUT_PENDING_FREE : LAYOUT_ALLOCATED};
        am_error e = am_block_place(m, b->addr, b->size, b->requested, b->stream, nplaced + 1);
        if (e == AM_ERR_NOMEM)
            goto oom;
        if (e != AM_OK) { /* outside every segment, or over another block */
            if (gmt_grow((void **)&l->outside, &cap_outside, l->outside_count,
                         sizeof *l->outside) != 0)
                goto oom;
            l->outside[l->outside_count++] = lb;
            l->outside_bytes += lb.size;
            l->allocated_bytes += lb.size;
            l->requested_bytes += lb.requested;
            if (b->pending)
                l->pending_bytes += lb.size;
            l->live_blocks++;
            continue;
        }
        if (b->pending)
            am_block_mark_pending(m, b->addr);
        if (gmt_grow((void **)&placed, &cap_placed, nplaced, sizeof *placed) != 0)
            goto oom;
        placed[nplaced++] = lb;
    }

    for (const am_segment *s = am_first_segment(m); s; s = am_next_segment(s)) {
        am_segment_info si;
        am_segment_get(s, &si);
        if (gmt_grow((void **)&l->segments, &cap_segments, l->segment_count, sizeof *l->segments) !=
            0)
            goto oom;
        layout_segment *ls = &l->segments[l->segment_count++];
        memset(ls, 0, sizeof *ls);
        const seg_row *row = si.tag >= 1 && si.tag <= nseg ? &segs[si.tag - 1] : NULL;
        ls->addr = si.addr;
        ls->size = si.size;
        ls->stream = si.stream;
        ls->segment_id = row ? row->segment_id : 0;
        ls->stack_id = row ? row->stack_id : 0;
        ls->mapped = si.is_expandable;
        ls->whole_block = row ? row->whole_block : 0;
        ls->pool = row ? row->pool : 0;
        ls->small_pool = si.is_small;
        ls->first_block = l->block_count;
        for (const am_block *b = am_segment_first_block(m, s); b; b = am_next_block(b)) {
            am_block_info bi;
            am_block_get(b, &bi);
            if (gmt_grow((void **)&l->blocks, &cap_blocks, l->block_count, sizeof *l->blocks) != 0)
                goto oom;
            layout_block *lb = &l->blocks[l->block_count++];
            if (bi.state == AM_BLOCK_INACTIVE || bi.tag < 1 || bi.tag > nplaced) {
                *lb = (layout_block){bi.addr, bi.size, 0, si.stream, 0, 0, LAYOUT_INACTIVE};
                if (bi.size > ls->largest_free_bytes)
                    ls->largest_free_bytes = bi.size;
                ls->free_bytes += bi.size;
                ls->gaps++;
            } else {
                *lb = placed[bi.tag - 1];
                lb->addr = bi.addr;
                lb->size = bi.size;
                lb->state =
                    bi.state == AM_BLOCK_PENDING_FREE ? LAYOUT_PENDING_FREE : LAYOUT_ALLOCATED;
                ls->allocated_bytes += lb->size;
                ls->requested_bytes += lb->requested;
                if (lb->state == LAYOUT_PENDING_FREE)
                    ls->pending_bytes += lb->size;
                ls->live_blocks++;
            }
            ls->block_count++;
        }
        (void)GMT_ALWAYS(ls->free_bytes == ls->size - ls->allocated_bytes); /* they tile it */
        (void)GMT_ALWAYS(ls->gaps + ls->live_blocks == ls->block_count);
        ls->releasable_bytes = layout_releasable(l, ls);
        l->releasable_bytes += ls->releasable_bytes;
        l->free_bytes += ls->free_bytes;
        l->trapped_bytes += ls->size - ls->allocated_bytes - ls->releasable_bytes;
        l->reserved_bytes += ls->size;
        l->allocated_bytes += ls->allocated_bytes;
        l->pending_bytes += ls->pending_bytes;
        l->requested_bytes += ls->requested_bytes;
        l->live_blocks += ls->live_blocks;
        if (ls->largest_free_bytes > l->largest_free_bytes)
            l->largest_free_bytes = ls->largest_free_bytes;
    }
    am_model_free(m);
    free(placed);
    *out = l;
    return 0;
oom:
    am_model_free(m);
    free(placed);
    layout_free(l);
    return set_err(err, errlen, "out of memory");
}

/* ---- the pass ------------------------------------------------------------ */

typedef struct point_order {
    int64_t event_id;
    size_t index;
} point_order;

static int by_event_id(const void *a, const void *b) {
    int64_t x = ((const point_order *)a)->event_id, y = ((const point_order *)b)->event_id;
    return x < y ? -1 : x > y;
}

/* The points of a pass, in event order: each the state after every row <= its event id. */
typedef struct points {
    const point_order *order;
    size_t count;
    int device;
    const seg_row *segs;
    size_t nseg;
    layout_fn fn;
    void *ctx;
} points;

static int emit(const points *pts, const layout_pass *p, const point_order *o, char *err,
                size_t errlen) {
    size_t n;
    layout *l = NULL;
    layout_live_block *snap = pass_snapshot(p, pts->segs, pts->nseg, o->event_id, &n);
    int rc =
        snap ? build_point(pts->device, o->event_id, pts->segs, pts->nseg, snap, n, &l, err, errlen)
             : set_err(err, errlen, "out of memory");
    free(snap);
    if (rc == 0 && pts->fn(pts->ctx, o->index, l) != 0) /* the callback owns l from here */
        rc = set_err(err, errlen, "out of memory");
    return rc;
}

/* The rows (from, to] of `device` into the pass, a chunk of columns at a time (event_scan.h:
 * through SQL the pass cost more in SQLite's per-value calls than in its own work). */
static int advance(sqlite3 *db, layout_pass *p, int device, int64_t from, int64_t to, char *err,
                   size_t errlen) {
    uint32_t mask = event_scan_mask(layout_pass_columns, LAYOUT_PASS_NCOLS);
    event_scan *scan =
        event_scan_open(db, mask, from == INT64_MIN ? from : from + 1, to, err, errlen);
    if (!scan)
        return -1;
    const int64_t *col[EVENT_STORE_NCOLS], *v[LAYOUT_PASS_NCOLS];
    long got;
    int rc = 0;
    while (rc == 0 && (got = event_scan_next(scan, col)) > 0) {
        event_scan_pick(col, layout_pass_columns, LAYOUT_PASS_NCOLS, v);
        for (long r = 0; rc == 0 && r < got; r++) {
            int64_t dev;
            if (layout_pass_takes(v, r, &dev) && dev == device && layout_pass_apply(p, v, r) != 0)
                rc = set_err(err, errlen, "out of memory");
        }
    }
    if (rc == 0 && got < 0)
        rc = set_err(err, errlen, "%s", event_scan_error(scan));
    event_scan_close(scan);
    return rc;
}

/* A checkpoint is taken instead of reading on when it spares at least this many rows. */
#define LAYOUT_JUMP_ROWS 4096

int layout_build_each(sqlite3 *db, int device, const int64_t *event_ids, size_t count, layout_fn fn,
                      void *ctx, char *err, size_t errlen) {
    if (count == 0)
        return 0;
    seg_row *segs = NULL;
    size_t nseg = 0;
    if (load_segments(db, device, &segs, &nseg, err, errlen) != 0)
        return -1;
    point_order *order = malloc(count * sizeof *order);
    if (!order) {
        free(segs);
        return set_err(err, errlen, "out of memory");
    }
    for (size_t i = 0; i < count; i++)
        order[i] = (point_order){event_ids[i], i};
    qsort(order, count, sizeof *order, by_event_id);
    points pts = {order, count, device, segs, nseg, fn, ctx};

    /* Point after point: from the index's checkpoint nearest before it when that spares rows
     * (layout_index.h), then the rows since. */
    const layout_index *ix = layout_index_for(db);
    layout_pass p = {0};
    int64_t done = INT64_MIN; /* the pass holds the state after every row <= done */
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < count; i++) {
        int64_t at = order[i].event_id, ck;
        if (ix && at > done) {
            int64_t after = done > INT64_MAX - LAYOUT_JUMP_ROWS || done == INT64_MIN
                                ? done
                                : done + LAYOUT_JUMP_ROWS;
            int seeded = layout_index_seed(ix, device, after, at, &p, &ck, err, errlen);
            if (seeded < 0)
                rc = -1;
            else if (seeded)
                done = ck;
        }
        if (rc == 0 && at > done) {
            rc = advance(db, &p, device, done, at, err, errlen);
            done = at;
        }
        if (rc == 0)
            rc = emit(&pts, &p, &order[i], err, errlen);
    }
    layout_pass_free(&p);
    free(order);
    free(segs);
    return rc;
}

static int keep_layout(void *ctx, size_t index, layout *l) {
    ((layout **)ctx)[index] = l;
    return 0;
}

int layout_build_many(sqlite3 *db, int device, const int64_t *event_ids, size_t count, layout **out,
                      char *err, size_t errlen) {
    for (size_t i = 0; i < count; i++)
        out[i] = NULL;
    int rc = layout_build_each(db, device, event_ids, count, keep_layout, out, err, errlen);
    if (rc != 0)
        for (size_t i = 0; i < count; i++) {
            layout_free(out[i]);
            out[i] = NULL;
        }
    return rc;
}

/* The layout at the end of the trace from the replay's live_at_end list,
 * without a pass over the events. 1 when done (0 or -1 in *rc), 0 when the
 * database has no such list (then the pass does it). */
static int layout_at_end(sqlite3 *db, int device, int64_t at, layout **out, char *err,
                         size_t errlen, int *rc) {
    sqlite3_stmt *st = NULL;
    if (db_prepare(db,
                   "SELECT alloc_id, addr, size, requested_size, stream, stack_id, "
                   "segment_id, pending FROM live_at_end WHERE device = ? ORDER BY "
                   "alloc_id",
                   &st) != SQLITE_OK)
        return 0; /* a database from before the list existed */
    seg_row *segs = NULL;
    size_t nseg = 0, n = 0, cap = 0;
    layout_live_block *live = NULL;
    *rc = load_segments(db, device, &segs, &nseg, err, errlen);
    sqlite3_bind_int(st, 1, device);
    while (*rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        if (gmt_grow((void **)&live, &cap, n, sizeof *live) != 0) {
            *rc = set_err(err, errlen, "out of memory");
            break;
        }
        layout_live_block *b = &live[n++];
        memset(b, 0, sizeof *b);
        b->alloc_id = sqlite3_column_int64(st, 0);
        b->addr = (uint64_t)sqlite3_column_int64(st, 1);
        b->size = (uint64_t)sqlite3_column_int64(st, 2);
        b->requested = (uint64_t)sqlite3_column_int64(st, 3);
        b->stream = (uint64_t)db_column_i64(st, 4, 0);
        b->stack_id = db_column_i64(st, 5, 0);
        b->segment_id = db_column_i64(st, 6, 0);
        b->pending = (uint8_t)sqlite3_column_int(st, 7);
        b->live = 1;
    }
    sqlite3_finalize(st);
    if (*rc == 0)
        *rc = build_point(device, at, segs, nseg, live, n, out, err, errlen);
    free(live);
    free(segs);
    return 1;
}

int layout_blocks_are_sweeps(sqlite3 *db) {
    sqlite3_stmt *st = NULL;
    int yes = db_prepare(db,
                         "SELECT count(*) FROM warnings WHERE code IN ({warning:double_alloc}, "
                         "{warning:segment_free_in_use})",
                         &st) == SQLITE_OK &&
              sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) == 0;
    sqlite3_finalize(st);
    return yes;
}

/* A moment late in the trace: start from the end (live_at_end) and undo the
 * events after it, newest first — fewer rows than a pass from the start.
 * Not used when the replay had to end blocks without a free row (their
 * undo is unknown). Returns 1 when done (*rc 0 or -1), 0 to use the pass. */
static int layout_backward(sqlite3 *db, int device, int64_t at, layout **out, char *err,
                           size_t errlen, int *rc) {
    sqlite3_stmt *st = NULL;
    if (!layout_blocks_are_sweeps(db))
        return 0;
    if (db_prepare(db,
                   "SELECT alloc_id, addr, size, requested_size, stream, stack_id, "
                   "segment_id, pending FROM live_at_end WHERE device = ?",
                   &st) != SQLITE_OK)
        return 0;
    layout_pass p = {0};
    seg_row *segs = NULL;
    size_t nseg = 0;
    *rc = load_segments(db, device, &segs, &nseg, err, errlen);
    sqlite3_bind_int(st, 1, device);
    while (*rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        layout_live_block b = {0};
        b.alloc_id = sqlite3_column_int64(st, 0);
        b.addr = (uint64_t)sqlite3_column_int64(st, 1);
        b.size = (uint64_t)sqlite3_column_int64(st, 2);
        b.requested = (uint64_t)sqlite3_column_int64(st, 3);
        b.stream = (uint64_t)db_column_i64(st, 4, 0);
        b.stack_id = db_column_i64(st, 5, 0);
        b.segment_id = db_column_i64(st, 6, 0);
        b.pending = (uint8_t)sqlite3_column_int(st, 7);
        if (layout_pass_alloc(&p, &b) != 0)
            *rc = set_err(err, errlen, "out of memory");
    }
    sqlite3_finalize(st);
    st = NULL;
    /* newest first: an alloc is taken back, a free gives its block back, a
     * free_requested is taken back. A block given back learns its alloc's
     * stack and whether it was pending at `at` afterwards, with one lookup
     * each for the few blocks that are live then (stack_id -1, pending 2:
     * not known yet) — the scan itself stays a plain primary-key range. */
    /* Back from the end to `at`, a chunk of columns at a time (event_scan.h). */
    uint32_t mask = event_scan_mask(layout_pass_columns, LAYOUT_PASS_NCOLS);
    event_scan *scan =
        *rc == 0 ? event_scan_open_backward(db, mask, at + 1, INT64_MAX, err, errlen) : NULL;
    if (*rc == 0 && !scan)
        *rc = -1;
    const int64_t *col[EVENT_STORE_NCOLS], *v[LAYOUT_PASS_NCOLS];
    long got = 0;
    while (*rc == 0 && (got = event_scan_next(scan, col)) > 0) {
        event_scan_pick(col, layout_pass_columns, LAYOUT_PASS_NCOLS, v);
        for (long r = got - 1; *rc == 0 && r >= 0; r--) { /* newest first */
            int64_t op = v[LAYOUT_PASS_OP][r], alloc = v[LAYOUT_PASS_ALLOC][r];
            if (v[LAYOUT_PASS_DEVICE][r] != device ||
                v[LAYOUT_PASS_LEVEL][r] != TRACE_LEVEL_BLOCK ||
                v[LAYOUT_PASS_KIND][r] != TRACE_KIND_DEVICE ||
                (op != TRACE_OP_ALLOC && op != TRACE_OP_FREE && op != TRACE_OP_FREE_REQUESTED))
                continue;
            uint64_t addr = (uint64_t)v[LAYOUT_PASS_ADDR][r];
            uint32_t *index = addr_map_get(&p.by_addr, 0, addr);
            if (op == TRACE_OP_ALLOC) {
                if (index)
                    layout_pass_drop(&p, *index);
            } else if (op == TRACE_OP_FREE_REQUESTED) {
                if (index && alloc != EVENT_STORE_NULL && p.blocks[*index].alloc_id == alloc)
                    p.blocks[*index].pending = 0;
            } else if (alloc != EVENT_STORE_NULL) {
                layout_live_block b = {0};
                b.alloc_id = alloc;
                b.addr = addr;
                b.size = (uint64_t)event_value_or(v[LAYOUT_PASS_SIZE][r], 0);
                b.requested = (uint64_t)event_value_or(v[LAYOUT_PASS_REQ][r], (int64_t)b.size);
                b.stream = (uint64_t)event_value_or(v[LAYOUT_PASS_STREAM][r], 0);
                b.segment_id = event_value_or(v[LAYOUT_PASS_SEGMENT][r], 0);
                b.stack_id = -1;
                b.pending = 2;
                if (layout_pass_alloc(&p, &b) != 0)
                    *rc = set_err(err, errlen, "out of memory");
            }
        }
    }
    if (*rc == 0 && got < 0)
        *rc = set_err(err, errlen, "%s", event_scan_error(scan));
    event_scan_close(scan);
    sqlite3_stmt *pend = NULL;
    if (*rc == 0 &&
        (db_prepare(db, "SELECT stack_id FROM event_rows WHERE event_id = ?", &st) != SQLITE_OK ||
         db_prepare(db,
                    "SELECT EXISTS (SELECT 1 FROM event_rows WHERE alloc_event_id = ?1 "
                    "AND op = {op:free_requested} AND event_id <= ?2)",
                    &pend) != SQLITE_OK))
        *rc = set_err(err, errlen, "reading events: %s", sqlite3_errmsg(db));
    for (size_t i = 0; *rc == 0 && i < p.len; i++) {
        layout_live_block *b = &p.blocks[i];
        if (!b->live)
            continue;
        if (b->stack_id == -1) {
            sqlite3_bind_int64(st, 1, b->alloc_id);
            b->stack_id = sqlite3_step(st) == SQLITE_ROW ? db_column_i64(st, 0, 0) : 0;
            sqlite3_reset(st);
        }
        if (b->pending == 2) {
            sqlite3_bind_int64(pend, 1, b->alloc_id);
            sqlite3_bind_int64(pend, 2, at);
            b->pending = sqlite3_step(pend) == SQLITE_ROW && sqlite3_column_int(pend, 0);
            sqlite3_reset(pend);
        }
    }
    sqlite3_finalize(st);
    sqlite3_finalize(pend);
    size_t n = 0;
    layout_live_block *snap = *rc == 0 ? pass_snapshot(&p, segs, nseg, at, &n) : NULL;
    if (*rc == 0)
        *rc = snap ? build_point(device, at, segs, nseg, snap, n, out, err, errlen)
                   : set_err(err, errlen, "out of memory");
    free(snap);
    free(p.blocks);
    addr_map_free(&p.by_addr);
    free(segs);
    return 1;
}

int layout_build(sqlite3 *db, int device, int64_t event_id, layout **out, char *err,
                 size_t errlen) {
    sqlite3_stmt *st = NULL;
    int64_t last = INT64_MAX;
    if (db_prepare(db, "SELECT max(event_id) FROM event_rows", &st) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        last = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    int rc;
    if (event_id >= last && layout_at_end(db, device, event_id, out, err, errlen, &rc))
        return rc;
    if (event_id > last / 2 && last != INT64_MAX && !layout_index_for(db) &&
        layout_backward(db, device, event_id, out, err, errlen, &rc))
        return rc;
    return layout_build_many(db, device, &event_id, 1, out, err, errlen);
}

void layout_free(layout *l) {
    if (!l)
        return;
    free(l->segments);
    free(l->blocks);
    free(l->outside);
    free(l->lifetimes);
    free(l);
}

int layout_timeline_at(sqlite3 *db, int device, int64_t event_id, layout_totals *out) {
    static const char sql[] =
        "SELECT allocated_bytes, requested_bytes, reserved_bytes, segments, largest_free_bytes, "
        "ts_ns FROM event_rows WHERE event_id <= ?2 AND device = ?1 AND (event_id > 0 OR op = "
        "{op:seed}) "
        "ORDER BY event_id DESC LIMIT 1";
    sqlite3_stmt *st;
    memset(out, 0, sizeof *out);
    if (db_prepare(db, sql, &st) != SQLITE_OK)
        return -1;
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, event_id);
    int rc = -1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        out->allocated_bytes = sqlite3_column_int64(st, 0);
        out->requested_bytes = sqlite3_column_int64(st, 1);
        out->reserved_bytes = sqlite3_column_int64(st, 2);
        out->segments = sqlite3_column_int64(st, 3);
        out->largest_free_bytes = db_column_i64(st, 4, 0);
        out->ts_ns = sqlite3_column_int64(st, 5);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}
