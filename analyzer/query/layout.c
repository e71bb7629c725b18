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
#include "json_out.h"
#include "trace_format.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STACK_DEPTH 65536

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

/* Makes room for one more item in a growing array. */
static int reserve(void **arr, size_t *cap, size_t len, size_t item) {
    if (len < *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, n * item);
    if (!p)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}

static int64_t col_i64(sqlite3_stmt *st, int i, int64_t null_value) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? null_value : sqlite3_column_int64(st, i);
}

/* ---- the rows ------------------------------------------------------------ */

typedef struct seg_row {
    int64_t segment_id, free_event_id; /* INT64_MAX: live at the end */
    int64_t stack_id;
    uint64_t addr, size, requested, stream;
    int mapped, whole_block;
} seg_row;

typedef struct live_block {
    int64_t alloc_id, stack_id, segment_id; /* segment_id 0: none */
    uint64_t addr, size, requested, stream;
    uint32_t next_free; /* free list of the pass, 1-based */
    uint8_t live, pending;
} live_block;

typedef struct pass {
    live_block *blocks;
    size_t len, cap;
    uint32_t free_head;
    addr_map by_addr; /* live block address -> index */
} pass;

static int load_segments(sqlite3 *db, int device, seg_row **out, size_t *count, char *err,
                         size_t errlen) {
    static const char sql[] =
        "SELECT segment_id, free_event_id, stack_id, addr, size, requested_size, stream, mapped, "
        "whole_block FROM segments WHERE device = ?1 AND kind = 'device' ORDER BY segment_id";
    sqlite3_stmt *st;
    if (db_prepare(db, sql, &st) != SQLITE_OK)
        return set_err(err, errlen, "reading segments: %s", sqlite3_errmsg(db));
    sqlite3_bind_int(st, 1, device);
    seg_row *rows = NULL;
    size_t len = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (reserve((void **)&rows, &cap, len, sizeof *rows) != 0) {
            rc = SQLITE_NOMEM;
            break;
        }
        seg_row *r = &rows[len++];
        r->segment_id = sqlite3_column_int64(st, 0);
        r->free_event_id = col_i64(st, 1, INT64_MAX);
        r->stack_id = col_i64(st, 2, 0);
        r->addr = (uint64_t)sqlite3_column_int64(st, 3);
        r->size = (uint64_t)sqlite3_column_int64(st, 4);
        r->requested = (uint64_t)col_i64(st, 5, (int64_t)r->size);
        r->stream = (uint64_t)col_i64(st, 6, 0);
        r->mapped = sqlite3_column_int(st, 7);
        r->whole_block = sqlite3_column_int(st, 8);
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

static void pass_drop(pass *p, uint32_t index) {
    live_block *b = &p->blocks[index];
    addr_map_remove(&p->by_addr, 0, b->addr);
    b->live = 0;
    b->next_free = p->free_head;
    p->free_head = index + 1;
}

static int pass_alloc(pass *p, const live_block *nb) {
    uint32_t *old = addr_map_get(&p->by_addr, 0, nb->addr);
    if (old) /* an alloc over a live block: the replay ended the old one */
        pass_drop(p, *old);
    uint32_t index;
    if (p->free_head) {
        index = p->free_head - 1;
        p->free_head = p->blocks[index].next_free;
    } else {
        if (p->len >= UINT32_MAX - 1 ||
            reserve((void **)&p->blocks, &p->cap, p->len, sizeof *p->blocks) != 0)
            return -1;
        index = (uint32_t)p->len++;
    }
    p->blocks[index] = *nb;
    p->blocks[index].live = 1;
    return addr_map_put(&p->by_addr, 0, nb->addr, index);
}

/* The live blocks of the pass, without those whose segment ended by `at`. */
static live_block *pass_snapshot(const pass *p, const seg_row *segs, size_t nseg, int64_t at,
                                 size_t *count) {
    size_t n = 0;
    for (size_t i = 0; i < p->len; i++)
        n += p->blocks[i].live;
    live_block *out = malloc((n ? n : 1) * sizeof *out);
    if (!out)
        return NULL;
    n = 0;
    for (size_t i = 0; i < p->len; i++) {
        const live_block *b = &p->blocks[i];
        if (!b->live)
            continue;
        if (b->segment_id) {
            const seg_row *s = find_segment(segs, nseg, b->segment_id);
            if (s && s->free_event_id <= at)
                continue;
        }
        out[n++] = *b;
    }
    *count = n;
    return out;
}

/* ---- one layout from the live rows ------------------------------------------ */

static int build_point(int device, int64_t at, const seg_row *segs, size_t nseg,
                       const live_block *live, size_t nlive, layout **out, char *err,
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
        if (reserve((void **)&l->lifetimes, &cap_lifetimes, l->lifetime_count,
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
        if (reserve((void **)&placed, &cap_placed, nplaced, sizeof *placed) != 0)
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
        const live_block *b = &live[i];
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
            if (reserve((void **)&l->outside, &cap_outside, l->outside_count, sizeof *l->outside) !=
                0)
                goto oom;
            l->outside[l->outside_count++] = lb;
            l->allocated_bytes += lb.size;
            l->requested_bytes += lb.requested;
            if (b->pending)
                l->pending_bytes += lb.size;
            l->live_blocks++;
            continue;
        }
        if (b->pending)
            am_block_mark_pending(m, b->addr);
        if (reserve((void **)&placed, &cap_placed, nplaced, sizeof *placed) != 0)
            goto oom;
        placed[nplaced++] = lb;
    }

    for (const am_segment *s = am_first_segment(m); s; s = am_next_segment(s)) {
        am_segment_info si;
        am_segment_get(s, &si);
        if (reserve((void **)&l->segments, &cap_segments, l->segment_count, sizeof *l->segments) !=
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
        ls->first_block = l->block_count;
        for (const am_block *b = am_segment_first_block(m, s); b; b = am_next_block(b)) {
            am_block_info bi;
            am_block_get(b, &bi);
            if (reserve((void **)&l->blocks, &cap_blocks, l->block_count, sizeof *l->blocks) != 0)
                goto oom;
            layout_block *lb = &l->blocks[l->block_count++];
            if (bi.state == AM_BLOCK_INACTIVE || bi.tag < 1 || bi.tag > nplaced) {
                *lb = (layout_block){bi.addr, bi.size, 0, si.stream, 0, 0, LAYOUT_INACTIVE};
                if (bi.size > ls->largest_free_bytes)
                    ls->largest_free_bytes = bi.size;
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

int layout_build_many(sqlite3 *db, int device, const int64_t *event_ids, size_t count, layout **out,
                      char *err, size_t errlen) {
    static const char sql[] =
        /* the columns a free does not need are not even decoded for it (a third faster) */
        "SELECT event_id, op, addr, CASE op WHEN 0 THEN size END, "
        "CASE op WHEN 0 THEN requested_size END, CASE op WHEN 0 THEN stream END, "
        "CASE op WHEN 0 THEN stack_id END, CASE op WHEN 0 THEN segment_id END, "
        "alloc_event_id FROM event_rows WHERE event_id <= ?1 AND device = ?2 AND level = "
        "{level:block} "
        "AND kind = {kind:device} AND op IN ({op:alloc}, {op:free}, {op:free_requested}) ORDER BY "
        "event_id";
    for (size_t i = 0; i < count; i++)
        out[i] = NULL;
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

    pass p = {0};
    sqlite3_stmt *st = NULL;
    int rc = 0;
    size_t next = 0;
    if (db_prepare(db, sql, &st) != SQLITE_OK) {
        rc = set_err(err, errlen, "reading events: %s", sqlite3_errmsg(db));
        goto done;
    }
    sqlite3_bind_int64(st, 1, order[count - 1].event_id);
    sqlite3_bind_int(st, 2, device);
    for (;;) {
        int step = sqlite3_step(st);
        int64_t id = INT64_MAX;
        if (step == SQLITE_ROW)
            id = sqlite3_column_int64(st, 0);
        else if (step != SQLITE_DONE) {
            rc = set_err(err, errlen, "reading events: %s", sqlite3_errmsg(db));
            goto done;
        }
        /* every point before this row: the state after all rows <= it */
        for (; next < count && order[next].event_id < id; next++) {
            size_t i = order[next].index, n;
            live_block *snap = pass_snapshot(&p, segs, nseg, order[next].event_id, &n);
            rc = snap ? build_point(device, order[next].event_id, segs, nseg, snap, n, &out[i], err,
                                    errlen)
                      : set_err(err, errlen, "out of memory");
            free(snap);
            if (rc != 0)
                goto done;
        }
        if (step == SQLITE_DONE)
            break;
        int op = sqlite3_column_int(st, 1);
        uint64_t addr = (uint64_t)sqlite3_column_int64(st, 2);
        if (op == TRACE_OP_ALLOC) {
            live_block nb = {0};
            nb.alloc_id = id;
            nb.addr = addr;
            nb.size = (uint64_t)sqlite3_column_int64(st, 3); /* NULL reads as 0: none */
            nb.requested = (uint64_t)col_i64(st, 4, (int64_t)nb.size);
            nb.stream = (uint64_t)sqlite3_column_int64(st, 5);
            nb.stack_id = sqlite3_column_int64(st, 6);
            nb.segment_id = sqlite3_column_int64(st, 7);
            if (nb.size == 0)
                continue;
            if (pass_alloc(&p, &nb) != 0) {
                rc = set_err(err, errlen, "out of memory");
                goto done;
            }
            continue;
        }
        uint32_t *index = addr_map_get(&p.by_addr, 0, addr);
        if (!index || sqlite3_column_type(st, 8) == SQLITE_NULL ||
            p.blocks[*index].alloc_id != sqlite3_column_int64(st, 8))
            continue; /* a free the replay could not match: it changed nothing */
        if (op == TRACE_OP_FREE)
            pass_drop(&p, *index);
        else
            p.blocks[*index].pending = 1;
    }
done:
    sqlite3_finalize(st);
    free(p.blocks);
    addr_map_free(&p.by_addr);
    free(order);
    free(segs);
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
    live_block *live = NULL;
    *rc = load_segments(db, device, &segs, &nseg, err, errlen);
    sqlite3_bind_int(st, 1, device);
    while (*rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        if (reserve((void **)&live, &cap, n, sizeof *live) != 0) {
            *rc = set_err(err, errlen, "out of memory");
            break;
        }
        live_block *b = &live[n++];
        memset(b, 0, sizeof *b);
        b->alloc_id = sqlite3_column_int64(st, 0);
        b->addr = (uint64_t)sqlite3_column_int64(st, 1);
        b->size = (uint64_t)sqlite3_column_int64(st, 2);
        b->requested = (uint64_t)sqlite3_column_int64(st, 3);
        b->stream = (uint64_t)col_i64(st, 4, 0);
        b->stack_id = col_i64(st, 5, 0);
        b->segment_id = col_i64(st, 6, 0);
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

/* A moment late in the trace: start from the end (live_at_end) and undo the
 * events after it, newest first — fewer rows than a pass from the start.
 * Not used when the replay had to end blocks without a free row (their
 * undo is unknown). Returns 1 when done (*rc 0 or -1), 0 to use the pass. */
static int layout_backward(sqlite3 *db, int device, int64_t at, layout **out, char *err,
                           size_t errlen, int *rc) {
    sqlite3_stmt *st = NULL;
    if (db_prepare(db,
                   "SELECT count(*) FROM warnings WHERE code IN ({warning:double_alloc}, "
                   "{warning:segment_free_in_use})",
                   &st) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int64(st, 0) != 0) {
        sqlite3_finalize(st);
        return 0;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (db_prepare(db,
                   "SELECT alloc_id, addr, size, requested_size, stream, stack_id, "
                   "segment_id, pending FROM live_at_end WHERE device = ?",
                   &st) != SQLITE_OK)
        return 0;
    pass p = {0};
    seg_row *segs = NULL;
    size_t nseg = 0;
    *rc = load_segments(db, device, &segs, &nseg, err, errlen);
    sqlite3_bind_int(st, 1, device);
    while (*rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        live_block b = {0};
        b.alloc_id = sqlite3_column_int64(st, 0);
        b.addr = (uint64_t)sqlite3_column_int64(st, 1);
        b.size = (uint64_t)sqlite3_column_int64(st, 2);
        b.requested = (uint64_t)sqlite3_column_int64(st, 3);
        b.stream = (uint64_t)col_i64(st, 4, 0);
        b.stack_id = col_i64(st, 5, 0);
        b.segment_id = col_i64(st, 6, 0);
        b.pending = (uint8_t)sqlite3_column_int(st, 7);
        if (pass_alloc(&p, &b) != 0)
            *rc = set_err(err, errlen, "out of memory");
    }
    sqlite3_finalize(st);
    st = NULL;
    /* newest first: an alloc is taken back, a free gives its block back, a
     * free_requested is taken back. A block given back learns its alloc's
     * stack and whether it was pending at `at` afterwards, with one lookup
     * each for the few blocks that are live then (stack_id -1, pending 2:
     * not known yet) — the scan itself stays a plain primary-key range. */
    if (*rc == 0 &&
        db_prepare(db,
                   "SELECT op, addr, alloc_event_id, size, requested_size, stream, "
                   "segment_id FROM event_rows WHERE event_id > ?1 AND device = ?2 AND "
                   "level = {level:block} AND kind = {kind:device} AND op IN ({op:alloc}, "
                   "{op:free}, {op:free_requested}) ORDER BY event_id DESC",
                   &st) != SQLITE_OK)
        *rc = set_err(err, errlen, "reading events: %s", sqlite3_errmsg(db));
    if (*rc == 0) {
        sqlite3_bind_int64(st, 1, at);
        sqlite3_bind_int(st, 2, device);
    }
    while (*rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int op = sqlite3_column_int(st, 0);
        uint64_t addr = (uint64_t)sqlite3_column_int64(st, 1);
        uint32_t *index = addr_map_get(&p.by_addr, 0, addr);
        if (op == TRACE_OP_ALLOC) {
            if (index)
                pass_drop(&p, *index);
        } else if (op == TRACE_OP_FREE_REQUESTED) {
            if (index && p.blocks[*index].alloc_id == sqlite3_column_int64(st, 2))
                p.blocks[*index].pending = 0;
        } else if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
            live_block b = {0};
            b.alloc_id = sqlite3_column_int64(st, 2);
            b.addr = addr;
            b.size = (uint64_t)sqlite3_column_int64(st, 3);
            b.requested = (uint64_t)col_i64(st, 4, (int64_t)b.size);
            b.stream = (uint64_t)col_i64(st, 5, 0);
            b.segment_id = col_i64(st, 6, 0);
            b.stack_id = -1;
            b.pending = 2;
            if (pass_alloc(&p, &b) != 0)
                *rc = set_err(err, errlen, "out of memory");
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    sqlite3_stmt *pend = NULL;
    if (*rc == 0 &&
        (db_prepare(db, "SELECT stack_id FROM event_rows WHERE event_id = ?", &st) != SQLITE_OK ||
         db_prepare(db,
                    "SELECT EXISTS (SELECT 1 FROM event_rows WHERE alloc_event_id = ?1 "
                    "AND op = {op:free_requested} AND event_id <= ?2)",
                    &pend) != SQLITE_OK))
        *rc = set_err(err, errlen, "reading events: %s", sqlite3_errmsg(db));
    for (size_t i = 0; *rc == 0 && i < p.len; i++) {
        live_block *b = &p.blocks[i];
        if (!b->live)
            continue;
        if (b->stack_id == -1) {
            sqlite3_bind_int64(st, 1, b->alloc_id);
            b->stack_id = sqlite3_step(st) == SQLITE_ROW ? col_i64(st, 0, 0) : 0;
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
    live_block *snap = *rc == 0 ? pass_snapshot(&p, segs, nseg, at, &n) : NULL;
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
    if (event_id > last / 2 && last != INT64_MAX &&
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
        out->largest_free_bytes = col_i64(st, 4, 0);
        out->ts_ns = sqlite3_column_int64(st, 5);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* ---- stacks ---------------------------------------------------------------- */

static const char *base_name(const char *path) {
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path;
}

static int starts_with(const char *s, const char *prefix) {
    return s && !strncmp(s, prefix, strlen(prefix));
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = s ? strlen(s) : 0, k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static int is_python(const layout_frame *f) { return ends_with(f->file, ".py"); }

/* A Python file of the program itself, not of a library or the interpreter. */
/* Code torch.compile generated (named by a hash that changes between runs). */
static int is_generated(const char *file) { return file && strstr(file, "torchinductor_"); }

/* A Python file of the program itself, not of a library, the interpreter or
 * torch.compile's generated code. */
static int is_user_python(const layout_frame *f) {
    const char *file = f->file;
    return is_python(f) && !strstr(file, "site-packages/") && !strstr(file, "dist-packages/") &&
           !strstr(file, "lib/python") && !starts_with(file, "torch/") &&
           !strstr(file, "/torch/") && !is_generated(file);
}

/* The file part of a frame's key: the file name, without directories (they
 * differ between machines and checkouts); generated code has none. */
static const char *key_file(const layout_frame *f) {
    if (is_generated(f->file))
        return "<generated>";
    return f->file ? base_name(f->file) : f->module ? base_name(f->module) : "";
}

static int matches(const layout_frame *f, const char *const *names, size_t nnames,
                   const char *const *files, size_t nfiles, const char *const *modules,
                   size_t nmodules) {
    for (size_t i = 0; i < nnames; i++)
        if (starts_with(f->name, names[i]))
            return 1;
    for (size_t i = 0; f->file && i < nfiles; i++)
        if (strstr(f->file, files[i]))
            return 1;
    const char *module = base_name(f->module);
    for (size_t i = 0; i < nmodules; i++)
        if (starts_with(module, modules[i]))
            return 1;
    return 0;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* How memory is obtained, never why: the allocator, c10, ATen's tensor
 * factories and dispatcher, the CUDA runtime and driver, the recorder. */
static int is_allocation_plumbing(const layout_frame *f) {
    static const char *const names[] = {
        "c10::",      "at::detail::", "at::_ops::", "at::TensorBase at::detail::",
        "cudaMalloc", "cudaFree",     "cuMem",      "memrec_",
        "gmt_"};
    static const char *const files[] = {"c10/", "CUDACachingAllocator", "EmptyTensor.cpp",
                                        "ATen/core/dispatch/"};
    static const char *const modules[] = {"libc10", "libcudart", "libcuda.", "libcupti",
                                          "libmemrec"};
    return matches(f, names, COUNT(names), files, COUNT(files), modules, COUNT(modules)) ||
           (f->name && strstr(f->name, "at::detail::"));
}

/* Also ATen's operators, torch's bindings and engine, the interpreter and
 * libc: frames every allocation of a PyTorch program passes through. */
static int is_plumbing(const layout_frame *f) {
    static const char *const names[] = {
        "at::",       "caffe2::",          "torch::", "std::",        "_Py",     "Py",
        "cfunction_", "method_vectorcall", "__libc_", "start_thread", "__clone", "_start"};
    static const char *const files[] = {"ATen/",           "aten/src/", "torch/csrc/",
                                        "Python/",         "Objects/",  "Modules/",
                                        "Programs/python", "sysdeps/",  "nptl/"};
    static const char *const modules[] = {"libtorch", "libpython",  "python",  "libc.so",
                                          "libc-",    "libpthread", "ld-linux"};
    return is_allocation_plumbing(f) ||
           matches(f, names, COUNT(names), files, COUNT(files), modules, COUNT(modules));
}

static int is_named(const layout_frame *f) { return f->name || f->file; }

static size_t site_frame(const layout_frame *frames, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (is_user_python(&frames[i]))
            return i;
    for (size_t i = 0; i < n; i++)
        if (is_python(&frames[i]))
            return i;
    for (size_t i = 0; i < n; i++)
        if ((is_named(&frames[i]) || frames[i].module) && !is_plumbing(&frames[i]))
            return i;
    /* a stack of plumbing only (e.g. autograd's threads): the operator that allocated */
    for (size_t i = 0; i < n; i++)
        if (is_named(&frames[i]) && !is_allocation_plumbing(&frames[i]))
            return i;
    return 0;
}

/* A C++ name without its parameter list ("f(int, char)" -> "f"); Python
 * and C names are unchanged. */
static void short_name(const char *name, char *buf, size_t len) {
    size_t n = strlen(name);
    for (const char *p = strchr(name, '('); p; p = strchr(p + 1, '('))
        if (p > name && strncmp(p, "(anonymous namespace)", 21) != 0) {
            n = (size_t)(p - name);
            break;
        }
    snprintf(buf, len, "%.*s", (int)(n < 400 ? n : 400), name);
}

static void frame_label(const layout_frame *f, char *buf, size_t len) {
    const char *file = base_name(f->file);
    char name[512] = "";
    if (file && (!*file || !strcmp(file, "??")))
        file = NULL; /* an importer's "unknown" */
    if (f->name)
        short_name(f->name, name, sizeof name);
    const char *sep = *name ? " " : "";
    if (file && f->line > 0)
        snprintf(buf, len, "%s:%lld%s%s", file, (long long)f->line, sep, name);
    else if (file)
        snprintf(buf, len, "%s%s%s", file, sep, name);
    else if (*name && f->module)
        snprintf(buf, len, "%s (%s)", name, base_name(f->module));
    else if (*name)
        snprintf(buf, len, "%s", name);
    else if (f->module)
        snprintf(buf, len, "0x%llx (%s)", (unsigned long long)f->ip, base_name(f->module));
    else
        snprintf(buf, len, "unknown frame");
}

static void stack_release(layout_stack *s) {
    for (size_t i = 0; i < s->frame_count; i++) {
        free((char *)s->frames[i].name);
        free((char *)s->frames[i].file);
        free((char *)s->frames[i].module);
    }
    free(s->frames);
    free((char *)s->site);
    free((char *)s->key);
    memset(s, 0, sizeof *s);
}

static char *dup_text(sqlite3_stmt *st, int i, int *oom) {
    const unsigned char *t = sqlite3_column_text(st, i);
    if (!t)
        return NULL;
    char *s = strdup((const char *)t);
    if (!s)
        *oom = 1;
    return s;
}

/* Reads the frames of `stack_id` with `st` (the walk query) and names it.
 * 0, or -1 when out of memory. */
static int stack_load(sqlite3_stmt *st, int64_t stack_id, layout_stack *s) {
    memset(s, 0, sizeof *s);
    s->stack_id = stack_id;
    size_t cap = 0;
    int oom = 0;
    int64_t node = stack_id;
    for (int depth = 0; node != 0 && depth < MAX_STACK_DEPTH && !oom; depth++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, node);
        if (sqlite3_step(st) != SQLITE_ROW)
            break; /* a lost node: the stack ends here */
        s->known = 1;
        if (reserve((void **)&s->frames, &cap, s->frame_count, sizeof *s->frames) != 0) {
            oom = 1;
            break;
        }
        layout_frame *f = &s->frames[s->frame_count++];
        memset(f, 0, sizeof *f);
        f->name = dup_text(st, 1, &oom);
        f->file = dup_text(st, 2, &oom);
        f->line = col_i64(st, 3, 0);
        f->module = dup_text(st, 4, &oom);
        f->ip = (uint64_t)col_i64(st, 5, 0);
        node = col_i64(st, 0, 0);
    }
    sqlite3_reset(st);
    char label[512];
    if (stack_id == 0)
        snprintf(label, sizeof label, "no stack");
    else if (!s->known || s->frame_count == 0)
        snprintf(label, sizeof label, "unknown stack");
    else
        frame_label(&s->frames[site_frame(s->frames, s->frame_count)], label, sizeof label);
    s->site = strdup(label);
    /* the key: (function, file name) per frame, innermost first */
    size_t klen = 16;
    for (size_t i = 0; i < s->frame_count; i++) {
        const layout_frame *f = &s->frames[i];
        klen += (f->name ? strlen(f->name) : 1) + strlen(key_file(f)) + 2;
    }
    char *key = malloc(klen);
    if (key) {
        if (stack_id == 0)
            strcpy(key, "-");
        else if (!s->known)
            strcpy(key, "?");
        else {
            char *k = key;
            for (size_t i = 0; i < s->frame_count; i++) {
                const layout_frame *f = &s->frames[i];
                k += sprintf(k, "%s\x1f%s\x1e", f->name ? f->name : "?", key_file(f));
            }
            *k = 0;
        }
    }
    s->key = key;
    if (oom || !s->site || !s->key) {
        stack_release(s);
        return -1;
    }
    return 0;
}

static const char walk_sql[] =
    "SELECT s.parent_id, f.name, f.file, f.line, f.module, f.ip FROM stacks AS s "
    "LEFT JOIN frames AS f ON f.frame_id = s.frame_id WHERE s.stack_id = ?1";

struct layout_stacks {
    sqlite3 *db;
    sqlite3_stmt *walk; /* NULL when the query cannot be prepared: every stack is unknown */
    layout_stack **stacks;
    size_t len, cap;
    addr_map by_id; /* stack_id -> index */
};

layout_stacks *layout_stacks_new(sqlite3 *db) {
    layout_stacks *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->db = db;
    if (db_prepare(db, walk_sql, &c->walk) != SQLITE_OK)
        c->walk = NULL;
    return c;
}

const layout_stack *layout_stacks_get(layout_stacks *c, int64_t stack_id) {
    uint32_t *index = addr_map_get(&c->by_id, 0, (uint64_t)stack_id);
    if (index)
        return c->stacks[*index];
    layout_stack *s = malloc(sizeof *s);
    if (!s || reserve((void **)&c->stacks, &c->cap, c->len, sizeof *c->stacks) != 0) {
        free(s);
        return NULL;
    }
    int rc;
    if (c->walk)
        rc = stack_load(c->walk, stack_id, s);
    else {
        memset(s, 0, sizeof *s);
        s->stack_id = stack_id;
        s->site = strdup(stack_id ? "unknown stack" : "no stack");
        s->key = strdup(stack_id ? "?" : "-");
        rc = s->site && s->key ? 0 : -1;
        if (rc != 0)
            stack_release(s);
    }
    if (rc != 0 || addr_map_put(&c->by_id, 0, (uint64_t)stack_id, (uint32_t)c->len) != 0) {
        if (rc == 0)
            stack_release(s);
        free(s);
        return NULL;
    }
    c->stacks[c->len++] = s;
    return s;
}

void layout_stacks_free(layout_stacks *c) {
    if (!c)
        return;
    for (size_t i = 0; i < c->len; i++) {
        stack_release(c->stacks[i]);
        free(c->stacks[i]);
    }
    free(c->stacks);
    addr_map_free(&c->by_id);
    sqlite3_finalize(c->walk);
    free(c);
}

int layout_stack_label(sqlite3 *db, int64_t stack_id, char *buf, size_t len) {
    sqlite3_stmt *st;
    layout_stack s;
    if (len == 0)
        return -1;
    if (stack_id == 0 || db_prepare(db, walk_sql, &st) != SQLITE_OK) {
        snprintf(buf, len, "%s", stack_id ? "unknown stack" : "no stack");
        return -1;
    }
    int rc = stack_load(st, stack_id, &s);
    sqlite3_finalize(st);
    if (rc != 0) {
        snprintf(buf, len, "unknown stack");
        return -1;
    }
    snprintf(buf, len, "%s", s.site);
    rc = s.known && s.frame_count ? 0 : -1;
    stack_release(&s);
    return rc;
}

void layout_json_frames(FILE *out, const layout_stack *stack) {
    fputc('[', out);
    for (size_t i = 0; stack && i < stack->frame_count; i++) {
        const layout_frame *f = &stack->frames[i];
        fputs(i ? ", {\"name\": " : "{\"name\": ", out);
        json_string(out, f->name ? f->name : "??");
        fputs(", \"filename\": ", out);
        json_string(out, f->file ? f->file : f->module ? f->module : "??");
        fprintf(out, ", \"line\": %lld}", (long long)f->line);
    }
    fputc(']', out);
}
