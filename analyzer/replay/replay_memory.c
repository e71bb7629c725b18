/* replay_memory.c — what a memory event does to the replay's state.
 *
 * Segments (alloc, map, free, unmap, joining CUPTI's and PyTorch's reports
 * of the same memory), blocks (placed with PyTorch's split rule when only
 * the request is known, pending frees, frees), VMM handles and ranges, and
 * the per-site accounting each of them moves. The rules are listed atop
 * replay.c; this file applies them, one function per kind of event. */
#include "replay_state.h"

#include "gmt_assert.h"
#include "gmt_grow.h"
#include "heat_rows.h"

#include <stdio.h>
#include <string.h>

/* ---- segments ------------------------------------------------------------ */

int replay_write_segment_row(replay *rp, const live_entry *e, int64_t free_ts,
                             int64_t free_event_id, int64_t free_stack) {
    db_segment_row row = {
        .segment_id = e->event_id,
        .device = e->device,
        .kind = trace_kind_name(e->kind),
        .addr = (int64_t)e->addr,
        .size = (int64_t)e->size,
        .requested_size = e->requested != e->size ? (int64_t)e->requested : DB_NULL,
        .stream = (int64_t)e->stream,
        .pool = e->pool ? (int64_t)e->pool : DB_NULL,
        .mapped = e->mapped,
        .whole_block = e->whole_block,
        .tid = e->tid ? (int64_t)e->tid : DB_NULL,
        .alloc_ts_ns = e->alloc_ts,
        .free_ts_ns = free_ts,
        .free_event_id = free_event_id,
        .stack_id = e->stack_id,
        .driver_stack_id = e->driver_stack_id,
        .free_stack_id = free_stack,
    };
    return replay_db_ok(rp, db_writer_segment(rp->db, &row));
}

/* A block (or a whole-block segment) counts in site_levels at its alloc (+1), or a segment
 * counted so is taken back (-1). */
static void site_levels_block(replay *rp, const live_entry *e, int sign) {
    int64_t stack = e->stack_id == DB_NULL ? 0 : e->stack_id;
    if (site_levels_count(rp->site_levels, rp->db, e->device, e->event_id, stack, (int64_t)e->size,
                          sign) != 0)
        replay_fail(rp, "%s",
                    db_writer_error(rp->db)[0] ? db_writer_error(rp->db) : "out of memory");
}

/* A block of device memory (or a whole-block segment) begins (+1) or ends
 * (-1) its life: its site's live bytes move. `counted`: the event is a
 * recorded alloc or free (not the seed, not a correction of the replay). */
static void site_life(replay *rp, const live_entry *e, int sign, int counted) {
    if (e->kind != TRACE_KIND_DEVICE)
        return;
    heat_rows_change(rp->dev[e->device].heat, e->addr, e->size, 0, sign);
    int64_t stack = e->stack_id == DB_NULL ? 0 : e->stack_id;
    if (site_stats_change(rp->sites, e->device, stack, sign * (int64_t)e->size, sign) != 0 ||
        (rp->series && series_levels_change(rp->series, e->device, stack, (int64_t)e->stream,
                                            (int64_t)e->size, sign) != 0))
        replay_fail(rp, "out of memory");
    if (sign > 0) {
        site_stats_alloc(rp->sites, e->device, e->event_id, (int64_t)e->size, stack);
        site_levels_block(rp, e, +1);
    }
    if (counted && sign > 0)
        rp->dev[e->device].allocs++;
    else if (counted)
        rp->dev[e->device].frees++;
}

/* A block's life ends: out of the model (or the orphans), out of its site,
 * out of the live table. */
static void block_ends(replay *rp, device_state *d, live_entry *e, int counted) {
    if (e->in_model)
        am_block_release(d->model, e->addr);
    else if (e->kind == TRACE_KIND_DEVICE) {
        d->orphan_allocated -= e->size;
        d->orphan_requested -= e->requested;
    }
    site_life(rp, e, -1, counted);
    live_drop(rp, e);
}

/* A segment counted as one whole block is not one: an allocator sub-allocates it. */
static void whole_block_taken_back(replay *rp, device_state *d, live_entry *s) {
    am_block_release(d->model, s->addr);
    site_life(rp, s, -1, 0);
    site_levels_block(rp, s, -1);
    s->whole_block = 0;
    d->whole_blocks--;
}

/* A block lands in a segment that was counted as one whole block: from now
 * on an allocator sub-allocates it, so the whole block goes away. */
static void end_whole_block(replay *rp, device_state *d, uint64_t addr) {
    if (!d->whole_blocks) /* the common case: nothing to look up */
        return;
    am_segment_info seg;
    /* a tag in the model is live_tag's: 1 + the index of a live entry */
    if (am_segment_lookup(d->model, addr, &seg) != AM_OK || !seg.tag ||
        GMT_NEVER(seg.tag > rp->entries_len))
        return;
    live_entry *s = &rp->entries[seg.tag - 1];
    if (s->whole_block)
        whole_block_taken_back(rp, d, s);
}

static void segment_alloc(replay *rp, const trace_event *ev, db_event_row *row) {
    device_state *d = &rp->dev[ev->device];
    live_entry *e = live_get(rp, ev->device, SPACE_SEGMENT, ev->addr);
    int torch = ev->source == TRACE_SOURCE_TORCH;
    uint8_t bit = (uint8_t)(1u << ev->source);
    if (e && !e->ended && !(e->sources & bit)) {
        /* The other source's report of the same memory: one segment. */
        e->sources |= bit;
        row->segment_id = e->event_id;
        if (torch) {            /* PyTorch's stack (with Python frames) leads */
            if (e->whole_block) /* out of the site that had it */
                whole_block_taken_back(rp, d, e);
            e->driver_stack_id = e->stack_id;
            e->stack_id = row->stack_id;
        } else {
            e->driver_stack_id = row->stack_id;
        }
        if (ev->size != e->size)
            replay_warn(rp, row->event_id, DB_WARNING_SEGMENT_SIZE_MISMATCH,
                        "segment at 0x%llx reported as %llu bytes by %s and %llu by %s",
                        (unsigned long long)ev->addr, (unsigned long long)ev->size,
                        trace_source_name(ev->source), (unsigned long long)e->size,
                        e->sources & 1 ? "cupti" : "torch");
        return;
    }
    if (e) { /* a second alloc at a live segment's address */
        replay_warn(rp, row->event_id, DB_WARNING_SEGMENT_OVERLAP,
                    "%s segment alloc at 0x%llx while a segment there is live (event %lld)",
                    trace_source_name(ev->source), (unsigned long long)ev->addr,
                    (long long)e->event_id);
        return;
    }
    e = live_new(rp, ev->device, SPACE_SEGMENT, ev->addr);
    if (!e)
        return;
    rp->row_made = 1;
    e->event_id = row->event_id;
    e->alloc_ts = row->ts_ns;
    e->size = ev->size;
    e->requested = ev->requested;
    e->stream = ev->stream;
    e->pool = ev->pool;
    e->tid = ev->tid;
    e->kind = ev->kind;
    e->sources = bit;
    e->stack_id = row->stack_id;
    e->driver_stack_id = DB_NULL;
    row->segment_id = e->event_id;
    if (ev->kind != TRACE_KIND_DEVICE)
        return;
    am_error err = am_segment_insert(d->model, ev->addr, ev->size, ev->stream, live_tag(rp, e));
    if (err != AM_OK) {
        replay_warn(rp, row->event_id, DB_WARNING_SEGMENT_OVERLAP, "segment [0x%llx, +%llu): %s",
                    (unsigned long long)ev->addr, (unsigned long long)ev->size, am_strerror(err));
        return;
    }
    e->in_model = 1;
    heat_rows_change(d->heat, ev->addr, ev->size, +1, 0);
    if (!torch && !addr_map_get(&rp->torch_segments, ev->device, ev->addr)) {
        /* Nobody sub-allocates it (yet): the segment is one block. */
        am_block_place(d->model, ev->addr, ev->size, ev->requested, ev->stream, 0);
        e->whole_block = 1;
        d->whole_blocks++;
        site_life(rp, e, +1, row->event_id > 0);
    }
}

/* Releases what a segment still holds when it goes (its frees were lost). */
static void release_blocks_inside(replay *rp, device_state *d, const live_entry *seg,
                                  int64_t event_id) {
    am_segment_info info;
    if (am_segment_lookup(d->model, seg->addr, &info) != AM_OK)
        return;
    const am_segment *s = am_first_segment(d->model);
    while (s) {
        am_segment_info si;
        am_segment_get(s, &si);
        if (si.addr == info.addr)
            break;
        s = am_next_segment(s);
    }
    uint64_t forced = 0;
    for (int again = 1; s && again;) {
        again = 0;
        for (const am_block *b = am_segment_first_block(d->model, s); b; b = am_next_block(b)) {
            am_block_info bi;
            am_block_get(b, &bi);
            if (bi.state == AM_BLOCK_INACTIVE)
                continue;
            if (bi.tag && GMT_ALWAYS(bi.tag <= rp->entries_len))
                block_ends(rp, d, &rp->entries[bi.tag - 1], 0);
            else
                am_block_release(d->model, bi.addr);
            forced++;
            again = 1; /* the walk's handles died with the change */
            break;
        }
    }
    if (forced && !seg->whole_block)
        replay_warn(rp, event_id, DB_WARNING_SEGMENT_FREE_IN_USE,
                    "segment at 0x%llx freed with %llu live blocks inside; they end with it",
                    (unsigned long long)seg->addr, (unsigned long long)forced);
}

static void segment_free(replay *rp, const trace_event *ev, db_event_row *row) {
    device_state *d = &rp->dev[ev->device];
    live_entry *e = live_get(rp, ev->device, SPACE_SEGMENT, ev->addr);
    if (!e || e->mapped) { /* a mapped range ends with its unmap (segment_unmap) */
        replay_warn(rp, row->event_id, DB_WARNING_FREE_UNKNOWN, "%s segment free at 0x%llx: %s",
                    trace_source_name(ev->source), (unsigned long long)ev->addr,
                    e ? "a mapped range, which only an unmap ends" : "no live segment");
        return;
    }
    row->segment_id = e->event_id;
    row->size = (int64_t)e->size;
    row->requested_size = (int64_t)e->requested;
    if (e->ended) { /* the joined partner's free: the lifetime already ended */
        live_drop(rp, e);
        return;
    }
    row->alloc_event_id = e->event_id;
    if (e->in_model) {
        if (e->whole_block) {
            am_block_release(d->model, e->addr);
            site_life(rp, e, -1, row->event_id > 0);
            d->whole_blocks--;
        }
        release_blocks_inside(rp, d, e, row->event_id);
        am_segment_remove(d->model, e->addr);
        heat_rows_change(d->heat, e->addr, e->size, -1, 0);
    }
    replay_write_segment_row(rp, e, row->ts_ns, row->event_id, row->stack_id);
    /* When both CUPTI and PyTorch reported it, the other free is still to come (unless this
     * free came from neither: then nothing else ends it). */
    uint8_t bit = (uint8_t)(1u << ev->source);
    if ((e->sources & (e->sources - 1)) != 0 && (e->sources & bit)) {
        e->ended = 1;
        e->sources &= (uint8_t)~bit;
    } else {
        live_drop(rp, e);
    }
}

static void segment_map(replay *rp, const trace_event *ev, db_event_row *row) {
    device_state *d = &rp->dev[ev->device];
    if (live_get(rp, ev->device, SPACE_SEGMENT, ev->addr)) {
        segment_alloc(rp, ev, row); /* joins the other source's report */
        return;
    }
    live_entry *e = live_new(rp, ev->device, SPACE_SEGMENT, ev->addr);
    if (!e)
        return;
    rp->row_made = 1;
    e->event_id = row->segment_id = row->event_id;
    e->alloc_ts = row->ts_ns;
    e->size = e->requested = ev->size;
    e->stream = ev->stream;
    e->tid = ev->tid;
    e->kind = ev->kind;
    e->mapped = 1;
    e->sources = (uint8_t)(1u << ev->source);
    e->stack_id = row->stack_id;
    e->driver_stack_id = DB_NULL;
    if (ev->kind != TRACE_KIND_DEVICE)
        return;
    am_error err = am_segment_map(d->model, ev->addr, ev->size, ev->stream, live_tag(rp, e));
    if (err != AM_OK) {
        replay_warn(rp, row->event_id, DB_WARNING_SEGMENT_OVERLAP, "map [0x%llx, +%llu): %s",
                    (unsigned long long)ev->addr, (unsigned long long)ev->size, am_strerror(err));
        return;
    }
    e->in_model = 1;
    d->mapped_bytes += ev->size;
    heat_rows_change(d->heat, ev->addr, ev->size, +1, 0);
}

/* The live mapped row (a map's lifetime) holding `addr`, or NULL. Rows start on page
 * boundaries of their segment (PyTorch maps whole pages), so the row is found by stepping
 * back one page at a time from the page of addr. */
#define ROW_SEARCH_PAGES 65536
static live_entry *mapped_row_containing(replay *rp, uint32_t device, uint64_t addr) {
    live_entry *e = live_get(rp, device, SPACE_SEGMENT, addr);
    if (e && e->mapped && !e->ended)
        return e;
    am_segment_info seg;
    if (am_segment_lookup(rp->dev[device].model, addr, &seg) != AM_OK || !seg.is_expandable)
        return NULL;
    uint64_t page = am_expandable_page(seg.is_small);
    uint64_t at = seg.addr + (addr - seg.addr) / page * page;
    for (int steps = 0; steps < ROW_SEARCH_PAGES; steps++, at -= page) {
        e = live_get(rp, device, SPACE_SEGMENT, at);
        if (e && e->mapped && !e->ended && at + e->size > addr)
            return e;
        if (at < seg.addr + page)
            break;
    }
    return NULL;
}

/* A segments row of its own for a part of a mapped row that an unmap left, created by event
 * `event_id`. */
static void piece_row(replay *rp, uint32_t device, uint64_t addr, uint64_t size, uint64_t stream,
                      int64_t stack_id, int64_t event_id, int64_t ts) {
    live_entry *e = live_new(rp, device, SPACE_SEGMENT, addr);
    if (!e)
        return;
    e->event_id = event_id;
    e->alloc_ts = ts;
    e->size = e->requested = size;
    e->stream = stream;
    e->kind = TRACE_KIND_DEVICE;
    e->mapped = e->in_model = 1;
    e->sources = (uint8_t)(1u << TRACE_SOURCE_TORCH);
    e->stack_id = stack_id;
    e->driver_stack_id = DB_NULL;
}

/* What is left of a mapped row cut by an unmap: a row of its own, with the unmap's id; a
 * second one (an unmap in the middle of a row) waits for the next event that makes no row:
 * a segments row is one event's (segment_id). Traces made by the snapshot importer map one
 * page per event, so their unmaps end whole rows and never get here. */
static void keep_piece(replay *rp, uint32_t device, uint64_t addr, uint64_t size,
                       const live_entry *from, const db_event_row *row) {
    if (!rp->row_made) {
        rp->row_made = 1;
        piece_row(rp, device, addr, size, from->stream, from->stack_id, row->event_id, row->ts_ns);
        return;
    }
    if (gmt_grow((void **)&rp->pieces, &rp->pieces_cap, rp->pieces_len, sizeof *rp->pieces) != 0) {
        replay_fail(rp, "out of memory");
        return;
    }
    rp->pieces[rp->pieces_len++] =
        (struct pending_piece){device, addr, size, from->stream, from->stack_id};
}

/* An unmap of [addr, end) takes what it covers out of a waiting piece; the waiting piece that
 * holds addr, or none (returns end). Returns where the piece ended. */
static uint64_t cut_waiting_piece(replay *rp, uint32_t device, uint64_t addr, uint64_t end) {
    for (size_t i = 0; i < rp->pieces_len; i++) {
        struct pending_piece *p = &rp->pieces[i];
        uint64_t p_end = p->addr + p->size;
        if (p->device != device || addr < p->addr || addr >= p_end)
            continue;
        struct pending_piece after = *p;
        if (p->addr < addr) {
            p->size = addr - p->addr;
        } else {
            memmove(p, p + 1, (rp->pieces_len - i - 1) * sizeof *p);
            rp->pieces_len--;
        }
        if (end < p_end) {
            after.addr = end;
            after.size = p_end - end;
            if (gmt_grow((void **)&rp->pieces, &rp->pieces_cap, rp->pieces_len,
                         sizeof *rp->pieces) != 0) {
                replay_fail(rp, "out of memory");
                return end;
            }
            rp->pieces[rp->pieces_len++] = after;
        }
        return p_end < end ? p_end : end;
    }
    return end;
}

static void segment_unmap(replay *rp, const trace_event *ev, db_event_row *row) {
    device_state *d = &rp->dev[ev->device];
    if (ev->kind != TRACE_KIND_DEVICE) { /* managed or host memory: a lifetime only */
        live_entry *e = live_get(rp, ev->device, SPACE_SEGMENT, ev->addr);
        if (e && !e->in_model && !e->ended) { /* not device memory's, not a finished one */
            row->segment_id = row->alloc_event_id = e->event_id;
            replay_write_segment_row(rp, e, row->ts_ns, row->event_id, row->stack_id);
            live_drop(rp, e);
        }
        return;
    }
    uint64_t addr = ev->addr, size = ev->size, end = addr + ev->size;
    live_entry *first = mapped_row_containing(rp, ev->device, addr);
    am_error err = am_segment_unmap(d->model, addr, size);
    if (err != AM_OK) {
        replay_warn(rp, row->event_id, DB_WARNING_UNMAP_UNKNOWN, "unmap [0x%llx, +%llu): %s",
                    (unsigned long long)addr, (unsigned long long)size, am_strerror(err));
        return;
    }
    d->mapped_bytes -= size;
    heat_rows_change(d->heat, addr, size, -1, 0);
    if (first)
        row->segment_id = row->alloc_event_id = first->event_id;
    /* The rows under [addr, end) end here; they tile the range (a row starts where the one
     * before it ends), but for parts still waiting for a row of their own. */
    for (uint64_t at = addr; at < end && !rp->failed;) {
        live_entry *e = first ? first : live_get(rp, ev->device, SPACE_SEGMENT, at);
        first = NULL;
        if (!e || !e->mapped || e->ended) {
            at = cut_waiting_piece(rp, ev->device, at, end);
            continue;
        }
        uint64_t e_addr = e->addr, e_end = e->addr + e->size;
        replay_write_segment_row(rp, e, row->ts_ns, row->event_id, row->stack_id);
        live_entry kept = *e;
        live_drop(rp, e);
        if (e_addr < addr)
            keep_piece(rp, ev->device, e_addr, addr - e_addr, &kept, row);
        if (e_end > end)
            keep_piece(rp, ev->device, end, e_end - end, &kept, row);
        at = e_end;
    }
}

/* A row for the oldest waiting piece, created by this event (one that made no row). */
static void give_waiting_piece_a_row(replay *rp, const db_event_row *row) {
    if (GMT_NEVER(rp->pieces_len == 0)) /* called for a piece that waits */
        return;
    struct pending_piece p = rp->pieces[0];
    memmove(rp->pieces, rp->pieces + 1, (rp->pieces_len - 1) * sizeof *rp->pieces);
    rp->pieces_len--;
    piece_row(rp, p.device, p.addr, p.size, p.stream, p.stack_id, row->event_id, row->ts_ns);
}

/* ---- blocks ------------------------------------------------------------- */

static void block_alloc(replay *rp, const trace_event *ev, db_event_row *row) {
    device_state *d = &rp->dev[ev->device];
    live_entry *e = live_get(rp, ev->device, SPACE_BLOCK, ev->addr);
    if (e) {
        replay_warn(
            rp, row->event_id, DB_WARNING_DOUBLE_ALLOC,
            "block alloc at 0x%llx while a block there is live (event %lld); the old one ends",
            (unsigned long long)ev->addr, (long long)e->event_id);
        block_ends(rp, d, e, 0);
    }
    e = live_new(rp, ev->device, SPACE_BLOCK, ev->addr);
    if (!e)
        return;
    e->event_id = row->event_id;
    e->size = ev->size;
    e->requested = ev->requested;
    e->kind = ev->kind;
    e->stack_id = row->stack_id;
    e->stream = ev->stream;
    e->segment_id = DB_NULL;
    if (ev->kind != TRACE_KIND_DEVICE)
        return;
    end_whole_block(rp, d, ev->addr);
    am_error err;
    am_block_info placed;
    /* PyTorch's history gives the request; its size is then the rounded
     * request and the split rule decides the block. A larger size (a block
     * from a snapshot's final state) is the block's real size. */
    if (ev->source == TRACE_SOURCE_TORCH &&
        ev->size <= am_round_size(ev->requested ? ev->requested : 1)) {
        err = am_block_place_requested(d->model, ev->addr, ev->requested ? ev->requested : 1,
                                       ev->stream, live_tag(rp, e), &placed);
        if (err == AM_OK)
            e->size = placed.size;
    } else {
        err = am_block_place(d->model, ev->addr, ev->size, ev->requested, ev->stream,
                             live_tag(rp, e));
    }
    if (err == AM_OK) {
        e->in_model = 1;
        am_segment_info seg;
        if (am_segment_lookup(d->model, ev->addr, &seg) == AM_OK && seg.is_expandable) {
            /* mapped memory: the row (map) holding the block's start when it is one page,
             * which no unmap can end while the block lives (unmaps take whole free pages);
             * a map of several pages may be cut under it: unknown then */
            const live_entry *m = mapped_row_containing(rp, ev->device, ev->addr);
            if (m && m->size <= am_expandable_page(seg.is_small))
                e->segment_id = m->event_id;
        } else if (seg.tag && GMT_ALWAYS(seg.tag <= rp->entries_len)) {
            e->segment_id = rp->entries[seg.tag - 1].event_id;
        }
    } else {
        replay_warn(rp, row->event_id,
                    err == AM_ERR_NO_SEGMENT ? DB_WARNING_BLOCK_OUTSIDE_SEGMENT
                                             : DB_WARNING_BLOCK_OVERLAP,
                    "block [0x%llx, +%llu): %s; counted on its own", (unsigned long long)ev->addr,
                    (unsigned long long)ev->size, am_strerror(err));
        d->orphan_allocated += e->size;
        d->orphan_requested += e->requested;
    }
    row->size = (int64_t)e->size;
    row->segment_id = e->segment_id;
    site_life(rp, e, +1, row->event_id > 0);
}

static void block_free(replay *rp, const trace_event *ev, db_event_row *row) {
    device_state *d = &rp->dev[ev->device];
    live_entry *e = live_get(rp, ev->device, SPACE_BLOCK, ev->addr);
    if (!e) {
        replay_warn(rp, row->event_id, DB_WARNING_FREE_UNKNOWN, "%s of 0x%llx: no live block there",
                    trace_op_name(ev->op), (unsigned long long)ev->addr);
        return;
    }
    row->size = (int64_t)e->size;
    row->requested_size = (int64_t)e->requested;
    row->segment_id = e->segment_id;
    row->alloc_event_id = e->event_id;
    if (ev->op == TRACE_OP_FREE_REQUESTED) {
        e->pending = 1;
        if (e->in_model && am_block_mark_pending(d->model, e->addr) != AM_OK)
            replay_warn(rp, row->event_id, DB_WARNING_DOUBLE_FREE, "free_requested of 0x%llx twice",
                        (unsigned long long)e->addr);
        return;
    }
    block_ends(rp, d, e, row->event_id > 0);
}

/* cuMemCreate handles and cuMemAddressReserve ranges: lifetimes; physical
 * memory also counts as reserved. */
static void other_lifetime(replay *rp, const trace_event *ev, db_event_row *row) {
    device_state *d = &rp->dev[ev->device];
    int phys = ev->op == TRACE_OP_PHYS_CREATE || ev->op == TRACE_OP_PHYS_RELEASE;
    enum space space = phys ? SPACE_PHYS : SPACE_VA;
    int begins = ev->op == TRACE_OP_PHYS_CREATE || ev->op == TRACE_OP_VA_RESERVE;
    live_entry *e = live_get(rp, ev->device, space, ev->addr);
    if (begins) {
        if (e)
            live_drop(rp, e);
        if (!(e = live_new(rp, ev->device, space, ev->addr)))
            return;
        e->event_id = row->event_id;
        e->size = ev->size;
        e->kind = ev->kind;
        if (phys && ev->kind == TRACE_KIND_DEVICE)
            d->phys_bytes += ev->size;
        return;
    }
    if (!e) {
        replay_warn(rp, row->event_id, DB_WARNING_FREE_UNKNOWN, "%s of 0x%llx: nothing live there",
                    trace_op_name(ev->op), (unsigned long long)ev->addr);
        return;
    }
    row->alloc_event_id = e->event_id;
    row->size = (int64_t)e->size;
    if (phys && e->kind == TRACE_KIND_DEVICE)
        d->phys_bytes -= e->size;
    live_drop(rp, e);
}

/* The cache at work: PyTorch allocates a segment (or maps pages) right before the block that
 * needed it, so a block allocation just after new memory is a miss, any other a hit. */
static void note_cache_use(device_state *d, const trace_event *ev) {
    if ((ev->op == TRACE_OP_ALLOC || ev->op == TRACE_OP_MAP) && ev->level == TRACE_LEVEL_SEGMENT) {
        d->new_memory = 1;
    } else if (ev->op == TRACE_OP_ALLOC && ev->level == TRACE_LEVEL_BLOCK) {
        d->cache_allocs++;
        d->cache_misses += d->new_memory;
        d->new_memory = 0;
    }
}

/* ---- numbers no memory can have ------------------------------------------------ */

/* The bytes an event gives memory, the memory the ops that take it back describe, and the
 * totals they add to, are at most REPLAY_MAX_BYTES (replay_state.h). The trace's fields are
 * 64-bit and the database's signed: a forged size of 2^63 read as a negative number broke
 * the rows of every table it reached. The bound keeps each total (and each sum of two of
 * them, as reserved - mapped + physical) far below 2^63 whatever the allocator's rounding
 * adds to the last block, so the arithmetic on them never overflows.
 *
 * An event past it is left out, as an event on a device past GMT_MAX_DEVICES is: a warning,
 * and no row (a row would be a block's or a segment's life to every reader of event_rows,
 * which the replay's state does not have). The first pass leaves out the same events
 * (replay_event_out_of_range), but for those only the totals refuse; a seed event of those
 * leaves its id unused (replay_write_seed_rows). */

/* An op whose size gives memory, or describes memory being taken back (unmap). */
static int describes_memory(unsigned op) {
    return op == TRACE_OP_ALLOC || op == TRACE_OP_MAP || op == TRACE_OP_UNMAP ||
           op == TRACE_OP_PHYS_CREATE || op == TRACE_OP_VA_RESERVE;
}

const char *replay_event_out_of_range(const trace_event *ev) {
    if (!describes_memory(ev->op))
        return NULL; /* its size is informative: a free's bytes are its alloc's */
    if (ev->size > REPLAY_MAX_BYTES ||
        (ev->op == TRACE_OP_ALLOC && ev->requested > REPLAY_MAX_BYTES))
        return "a size over 2^60 bytes";
    /* a physical allocation's addr is a handle: no range */
    if (ev->op != TRACE_OP_PHYS_CREATE && ev->size > UINT64_MAX - ev->addr)
        return "a range past the end of the address space";
    /* as a signed column, 2^63 is INT64_MIN: DB_NULL, no address (never a canonical one).
     * A range that holds it or ends at it could leave a part that starts there (an unmap in
     * the middle of a mapped range), so none may touch it. */
    if (ev->op != TRACE_OP_PHYS_CREATE && ev->addr <= (uint64_t)DB_NULL &&
        ev->addr + ev->size >= (uint64_t)DB_NULL)
        return "a range that holds the address 2^63, which the database cannot hold";
    return NULL;
}

/* replay_event_out_of_range, then what the event would add to each total of its device; and
 * how many ordinary events (replay_event_ordinary: each adds less than 2^41 bytes to any
 * total, the allocator's rounding included) may pass before the totals are looked at again. */
static const char *out_of_range(replay *rp, const trace_event *ev) {
    device_state *d = &rp->dev[ev->device];
    am_stats_info st = am_stats(d->model);
    uint64_t allocated = st.allocated_bytes + d->orphan_allocated;
    uint64_t requested = st.requested_bytes + d->orphan_requested;
    uint64_t most = st.reserved_bytes;
    const uint64_t totals[] = {d->mapped_bytes, d->phys_bytes, allocated, requested};
    for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++)
        most = totals[i] > most ? totals[i] : most;
    /* this one's bytes are not in `most` yet: one fewer (none after an event not ordinary) */
    uint64_t room = most < REPLAY_MAX_BYTES ? (REPLAY_MAX_BYTES - most) >> 41 : 0;
    d->fast_events = replay_event_ordinary(ev) && room ? room - 1 : 0;
    const char *why = replay_event_out_of_range(ev);
    if (why || ev->kind != TRACE_KIND_DEVICE)
        return why;
    /* a block's bytes as the model places them are at most the larger of the two, rounded;
     * a segment no allocator sub-allocates is a block too */
    uint64_t bytes = ev->size > ev->requested ? ev->size : ev->requested;
    int segment =
        ev->op == TRACE_OP_MAP || (ev->op == TRACE_OP_ALLOC && ev->level == TRACE_LEVEL_SEGMENT);
    int block = ev->op == TRACE_OP_ALLOC;
    if ((segment && st.reserved_bytes + ev->size > REPLAY_MAX_BYTES) ||
        (ev->op == TRACE_OP_MAP && d->mapped_bytes + ev->size > REPLAY_MAX_BYTES) ||
        (ev->op == TRACE_OP_PHYS_CREATE && d->phys_bytes + ev->size > REPLAY_MAX_BYTES) ||
        (block && allocated + bytes > REPLAY_MAX_BYTES) ||
        (block && requested + ev->requested > REPLAY_MAX_BYTES))
        return "it would take the device's totals over 2^60 bytes";
    return NULL;
}

/* A size as the rows keep it: NULL past what a signed 64-bit column holds. */
static int64_t bytes_column(uint64_t v) { return v <= INT64_MAX ? (int64_t)v : DB_NULL; }

int replay_event(replay *rp, const trace_event *ev) {
    if (ev->device >= GMT_MAX_DEVICES) {
        replay_warn(rp, DB_NULL, DB_WARNING_DEVICE_OUT_OF_RANGE, "event on device %u ignored",
                    ev->device);
        return 0;
    }
    int seed = rp->in_seed;
    device_state *d = &rp->dev[ev->device];
    const char *why = NULL;
    if (replay_event_ordinary(ev) && d->fast_events) /* nearly every event */
        d->fast_events--;
    else
        why = out_of_range(rp, ev);
    if (why) { /* as if it were not in the trace, but for the warning */
        replay_warn(rp, DB_NULL, DB_WARNING_EVENT_OUT_OF_RANGE,
                    "%s %s at 0x%llx of %llu bytes (%llu requested) %s event %lld: %s; left out",
                    trace_level_name(ev->level), trace_op_name(ev->op),
                    (unsigned long long)ev->addr, (unsigned long long)ev->size,
                    (unsigned long long)ev->requested, seed ? "in the seed, before" : "after",
                    (long long)(seed ? rp->next_seed_id : rp->last_event_id), why);
        return rp->failed ? -1 : 0;
    }
    if (!seed && !rp->seed_rows_written && replay_write_seed_rows(rp) != 0)
        return -1;
    int64_t ts = seed ? 0 : replay_ts(rp, ev->ts_ns);
    if (replay_bucket_before(rp, ev->device, ts) != 0)
        return -1;
    db_event_row row = {
        .event_id = seed ? rp->next_seed_id++ : ++rp->last_event_id,
        .ts_ns = ts,
        .device = ev->device,
        .op = ev->op,
        .level = ev->level,
        .kind = ev->kind,
        .source = ev->source,
        .addr = (int64_t)ev->addr,
        .size = bytes_column(ev->size),
        .requested_size = bytes_column(ev->requested),
        .stream = (int64_t)ev->stream,
        .pool = ev->pool ? (int64_t)ev->pool : DB_NULL,
        .tid = ev->tid ? (int64_t)ev->tid : DB_NULL,
        .stack_id = ev->stack_id ? (int64_t)ev->stack_id : DB_NULL,
        .segment_id = DB_NULL,
        .alloc_event_id = DB_NULL,
    };
    if (seed)
        rp->seed_seen++;
    else if (row.ts_ns > rp->last_ts)
        rp->last_ts = row.ts_ns;
    rp->dev[ev->device].present = 1;
    rp->row_made = 0;
    if (!seed && ev->source == TRACE_SOURCE_TORCH && ev->kind == TRACE_KIND_DEVICE)
        note_cache_use(&rp->dev[ev->device], ev);
    switch (ev->op) {
    case TRACE_OP_ALLOC:
        if (ev->level == TRACE_LEVEL_SEGMENT)
            segment_alloc(rp, ev, &row);
        else
            block_alloc(rp, ev, &row);
        break;
    case TRACE_OP_FREE:
        if (ev->level == TRACE_LEVEL_SEGMENT)
            segment_free(rp, ev, &row);
        else
            block_free(rp, ev, &row);
        break;
    case TRACE_OP_FREE_REQUESTED:
        block_free(rp, ev, &row);
        break;
    case TRACE_OP_MAP:
        segment_map(rp, ev, &row);
        break;
    case TRACE_OP_UNMAP:
        segment_unmap(rp, ev, &row);
        break;
    case TRACE_OP_PHYS_CREATE:
    case TRACE_OP_PHYS_RELEASE:
    case TRACE_OP_VA_RESERVE:
    case TRACE_OP_VA_FREE:
        other_lifetime(rp, ev, &row);
        break;
    default: /* pool_trim, alloc_failed, oom: the row is the whole story */
        row.addr = DB_NULL;
        break;
    }
    if (rp->pieces_len && !rp->row_made)
        give_waiting_piece_a_row(rp, &row);
    if (ev->kind == TRACE_KIND_DEVICE)
        replay_check_invariants(rp, ev->device, row.event_id);
    return rp->failed ? -1 : replay_write_row(rp, &row);
}
