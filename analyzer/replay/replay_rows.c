/* replay_rows.c — the replay's one narrow row per event, and the per-bucket
 * summaries pictures read instead of those rows (DESIGN.md: "pictures read
 * small per-bucket summaries built at import, never the raw rows").
 *
 * Each event row carries its device's running totals after the event
 * (allocated, requested, reserved, segment count, largest free block), taken
 * from the allocator model; each time bucket keeps the min/max of those
 * totals and, every SITE_BUCKET_STRIDE-th bucket, the live bytes per site.
 * Split from replay.c so the record dispatch and the row budget each have a
 * file of their own. */
#include "replay_state.h"

#include "heat_rows.h"

#include <stdint.h>

/* ---- totals, seed rows, buckets ------------------------------------------ */

typedef replay_totals totals;

totals replay_device_totals(const device_state *d) {
    am_stats_info st = am_stats(d->model);
    totals t;
    t.allocated = (int64_t)(st.allocated_bytes + d->orphan_allocated);
    t.requested = (int64_t)(st.requested_bytes + d->orphan_requested);
    t.reserved = (int64_t)st.reserved_bytes;
    if (d->uses_phys)
        t.reserved = t.reserved - (int64_t)d->mapped_bytes + (int64_t)d->phys_bytes;
    t.segments = (int64_t)st.segment_count;
    t.largest_free = (int64_t)st.largest_inactive_bytes;
    return t;
}

split_now replay_split_of(const device_state *d) {
    am_stats_info st = am_stats(d->model);
    return (split_now){(int64_t)st.reserved_bytes, (int64_t)st.allocated_bytes,
                       (int64_t)st.releasable_bytes};
}

static int write_split(replay *rp, uint32_t device, int64_t event_id, split_now s) {
    return replay_db_ok(
        rp, db_writer_free_split(rp->db, device, event_id, s.reserved, s.allocated, s.releasable));
}

int replay_write_split(replay *rp, uint32_t device, int64_t event_id) {
    return write_split(rp, device, event_id, replay_split_of(&rp->dev[device]));
}

int replay_write_splits(replay *rp) {
    for (uint32_t i = 0; i < GMT_MAX_DEVICES; i++) {
        const device_state *d = &rp->dev[i];
        if (d->present && d->model && d->peak_alloc_id != DB_NULL &&
            replay_write_split(rp, i, d->last_event_id) != 0)
            return -1;
    }
    return 0;
}

/* The split at each device's peak allocated, kept as the peak moved. */
int replay_write_peak_splits(replay *rp) {
    for (uint32_t i = 0; i < GMT_MAX_DEVICES; i++) {
        device_state *d = &rp->dev[i];
        if (!d->present || !d->model || d->peak_alloc_id == DB_NULL)
            continue;
        if (write_split(rp, i, d->peak_alloc_id, d->peak_split) != 0)
            return -1;
    }
    return 0;
}

int replay_write_step_ends(replay *rp, int64_t end_event_id) {
    for (uint32_t i = 0; i < GMT_MAX_DEVICES; i++) {
        device_state *d = &rp->dev[i];
        if (!d->present || !d->model || d->peak_alloc_id == DB_NULL)
            continue; /* no row yet: the device has no state at this end */
        totals t = replay_device_totals(d);
        if (replay_db_ok(rp, db_writer_step_end(rp->db, i, end_event_id, d->last_event_id,
                                                d->last_row_ts, t.allocated, t.requested,
                                                t.reserved, t.largest_free)) != 0)
            return -1;
    }
    return 0;
}

/* Per-site values are kept for every SITE_BUCKET_STRIDE-th bucket only: a
 * run touches all its sites in most buckets, and rows = buckets x sites. */
#define SITE_BUCKET_STRIDE 16

/* Ends the device's current bucket; `next` is the index of the bucket that
 * follows (INT64_MAX at the end of the trace). */
int replay_flush_bucket(replay *rp, uint32_t device, int64_t next) {
    bucket_acc *b = &rp->dev[device].bucket;
    if (!b->events)
        return 0;
    if (rp->dev[device].heat) {
        float fractions[HEAT_ROWS];
        heat_rows_fractions(rp->dev[device].heat, fractions);
        if (db_writer_heat_row(rp->db, device, rp->bucket_ns, b->index, fractions, HEAT_ROWS))
            return replay_fail(rp, "%s", db_writer_error(rp->db));
    }
    if (next / SITE_BUCKET_STRIDE != b->index / SITE_BUCKET_STRIDE &&
        site_stats_bucket_end(rp->sites, device, rp->bucket_ns, b->index, rp->db) != 0)
        return replay_fail(rp, "%s", db_writer_error(rp->db));
    db_bucket_row row = {device,     rp->bucket_ns, b->index,     b->first_id, b->last_id,
                         b->events,  b->min_alloc,  b->max_alloc, b->min_res,  b->max_res,
                         b->max_req, b->min_free,   b->end_alloc, b->end_res};
    b->events = 0;
    return replay_db_ok(rp, db_writer_bucket(rp->db, &row));
}

/* The bucket an event at `ts` belongs to (never before the current one:
 * threads' records interleave). */
static int64_t bucket_of(const replay *rp, uint32_t device, int64_t ts) {
    const bucket_acc *b = &rp->dev[device].bucket;
    int64_t index = ts > 0 ? ts / rp->bucket_ns : 0;
    return index < b->index ? b->index : index;
}

/* Called before an event is applied: when it starts a new bucket, the
 * previous one ends with the state before it. */
int replay_bucket_before(replay *rp, uint32_t device, int64_t ts) {
    bucket_acc *b = &rp->dev[device].bucket;
    int64_t index = bucket_of(rp, device, ts);
    if (b->events && index != b->index)
        return replay_flush_bucket(rp, device, index);
    return 0;
}

static void note_bucket(replay *rp, uint32_t device, int64_t event_id, int64_t ts,
                        const totals *t) {
    bucket_acc *b = &rp->dev[device].bucket;
    int64_t index = bucket_of(rp, device, ts);
    if (b->events && index != b->index)
        replay_flush_bucket(rp, device, index);
    if (!b->events) {
        *b = (bucket_acc){index,        event_id,        event_id,     0,
                          t->allocated, t->allocated,    t->reserved,  t->reserved,
                          t->requested, t->largest_free, t->allocated, t->reserved};
    }
    b->last_id = event_id;
    b->end_alloc = t->allocated;
    b->end_res = t->reserved;
    b->events++;
    site_stats_allocated(rp->sites, device, t->allocated, b->index);
    if (t->allocated < b->min_alloc)
        b->min_alloc = t->allocated;
    if (t->allocated > b->max_alloc)
        b->max_alloc = t->allocated;
    if (t->reserved < b->min_res)
        b->min_res = t->reserved;
    if (t->reserved > b->max_res)
        b->max_res = t->reserved;
    if (t->requested > b->max_req)
        b->max_req = t->requested;
    if (t->largest_free < b->min_free)
        b->min_free = t->largest_free;
}

/* Fills the totals of a row, tracks peaks and buckets, writes it. */
int replay_write_row(replay *rp, db_event_row *row) {
    device_state *d = &rp->dev[row->device];
    totals t = replay_device_totals(d);
    row->allocated_bytes = t.allocated;
    row->requested_bytes = t.requested;
    row->reserved_bytes = t.reserved;
    row->segments = t.segments;
    row->largest_free_bytes = t.largest_free;
    /* Peaks are states of the timeline: the seed row and recorded events,
     * not the partial sums while the seed is being built. */
    int state = row->event_id > 0 || row->op == DB_OP_SEED;
    if (state) {
        d->last_event_id = row->event_id;
        d->last_row_ts = row->ts_ns;
    }
    if (state && (t.allocated > d->peak_alloc || d->peak_alloc_id == DB_NULL)) {
        d->peak_alloc = t.allocated;
        d->peak_alloc_id = row->event_id;
        d->peak_split = replay_split_of(d);
        site_stats_new_peak(rp->sites, (uint32_t)row->device);
    }
    if (state && t.segments > d->peak_segments)
        d->peak_segments = t.segments;
    if (state && (t.requested > d->peak_req || d->peak_req_id == DB_NULL)) {
        d->peak_req = t.requested;
        d->peak_req_id = row->event_id;
    }
    if (row->event_id > 0 && row->op == TRACE_OP_OOM &&
        replay_write_split(rp, (uint32_t)row->device, row->event_id) != 0)
        return -1;
    if (row->event_id > 0) {
        d->ooms += row->op == TRACE_OP_OOM;
        d->alloc_failed += row->op == TRACE_OP_ALLOC_FAILED;
    }
    if (state && (t.reserved > d->peak_res || d->peak_res_id == DB_NULL)) {
        d->peak_res = t.reserved;
        d->peak_res_id = row->event_id;
    }
    note_bucket(rp, (uint32_t)row->device, row->event_id, row->ts_ns, &t);
    if (replay_levels_note(rp, (uint32_t)row->device, row->event_id, row->ts_ns, t.allocated,
                           t.reserved, row->op == TRACE_OP_OOM) != 0)
        return -1;
    if (rp->series && series_levels_row(rp->series, rp->db, (uint32_t)row->device, row->event_id,
                                        d->level_key, t.allocated) != 0)
        return replay_fail(rp, "%s",
                           db_writer_error(rp->db)[0] ? db_writer_error(rp->db) : "out of memory");
    return replay_db_ok(rp, db_writer_event(rp->db, row));
}

/* One 'seed' row per device: the state when the recording began. */
int replay_write_seed_rows(replay *rp) {
    rp->seed_rows_written = 1;
    /* they end at event_id 0, also when a seed event the first pass counted was left out
     * (replay_memory.c): its id stays unused */
    int64_t ndev = 0;
    for (uint32_t i = 0; i < GMT_MAX_DEVICES; i++)
        ndev += rp->dev[i].present != 0;
    if (rp->next_seed_id < 1 - ndev)
        rp->next_seed_id = 1 - ndev;
    for (uint32_t i = 0; i < GMT_MAX_DEVICES; i++) {
        if (!rp->dev[i].present)
            continue;
        db_event_row row = {
            .event_id = rp->next_seed_id++, .ts_ns = 0, .device = i, .op = DB_OP_SEED};
        row.level = row.kind = row.source = row.addr = row.size = row.requested_size = DB_NULL;
        row.stream = row.pool = row.tid = row.stack_id = row.segment_id = DB_NULL;
        row.alloc_event_id = DB_NULL;
        if (replay_write_row(rp, &row) != 0)
            return -1;
    }
    return 0;
}
