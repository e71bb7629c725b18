/* replay_levels.c — the timeline's levels of detail (timeline_levels, schema.sql): a counter
 * mipmap built as the rows are written, for `memanalyze view`'s timeline.
 *
 * Why here: a window of the timeline at any zoom must be answered in milliseconds with the
 * exact min/max/last of each bucket, and timeline_buckets' one resolution (span / 4096) is too
 * coarse when zoomed in and too fine for a whole 100 M-event run. Widths are powers of two,
 * 8x apart and aligned to 0, so a bucket of a level is exactly 8 buckets of the level below:
 * the replay keeps one open bucket per level and device, an event updates the finest one, and
 * a finished bucket is folded into the level above (a few operations per event, a row per
 * bucket). The finest width holds ~LEVEL_EVENTS events per bucket on average. */
#include "replay_state.h"

#include <assert.h>

#define LEVEL_EVENTS 64

void replay_levels_setup(replay *rp, uint64_t span, uint64_t events, int event_axis) {
    rp->level_event_axis = event_axis;
    if (event_axis)
        span = events;
    /* width >= span * LEVEL_EVENTS / events, a power of two */
    unsigned __int128 want = events ? (unsigned __int128)span * LEVEL_EVENTS / events : 1;
    int shift = 0;
    while (shift < 62 && ((unsigned __int128)1 << shift) < want)
        shift++;
    int count = 1;
    while (count < REPLAY_LEVELS_MAX && shift + 3 * (count - 1) < 60 &&
           ((uint64_t)1 << (shift + 3 * (count - 1))) <= span)
        count++;
    rp->level_shift = shift;
    rp->level_count = count;
}

static int64_t level_width(const replay *rp, int k) {
    return (int64_t)1 << (rp->level_shift + 3 * k);
}

static int write_level(replay *rp, uint32_t device, int k, const level_acc *a) {
    db_level_row row = {device,    level_width(rp, k), a->index, a->first_id, a->last_id,
                        a->events, a->min_a,           a->max_a, a->max_a_id, a->ooms,
                        a->min_r,  a->max_r,           a->end_a, a->end_r};
    return replay_db_ok(rp, db_writer_level(rp->db, &row));
}

/* Merges `src` (one event, or a finished bucket of level k - 1) into level k's open bucket,
 * at index `index` of level k; the open bucket, when it is another, is written and folded
 * into level k + 1 first. */
static int fold(replay *rp, uint32_t device, int k, int64_t index, const level_acc *src) {
    level_acc *a = &rp->dev[device].levels[k];
    if (a->events && a->index != index) {
        assert(index > a->index);
        if (write_level(rp, device, k, a) != 0)
            return -1;
        if (k + 1 < rp->level_count && fold(rp, device, k + 1, a->index >> 3, a) != 0)
            return -1;
        a->events = 0;
    }
    if (!a->events) {
        *a = *src;
        a->index = index;
        return 0;
    }
    a->last_id = src->last_id;
    a->events += src->events;
    a->min_a = src->min_a < a->min_a ? src->min_a : a->min_a;
    if (src->max_a > a->max_a) { /* the first event at the max: src's events are later */
        a->max_a = src->max_a;
        a->max_a_id = src->max_a_id;
    }
    a->ooms += src->ooms;
    a->min_r = src->min_r < a->min_r ? src->min_r : a->min_r;
    a->max_r = src->max_r > a->max_r ? src->max_r : a->max_r;
    a->end_a = src->end_a;
    a->end_r = src->end_r;
    return 0;
}

int replay_levels_note(replay *rp, uint32_t device, int64_t event_id, int64_t ts, int64_t allocated,
                       int64_t reserved, int oom) {
    device_state *d = &rp->dev[device];
    int64_t key = rp->level_event_axis ? event_id : ts;
    if (key < d->level_key)
        key = d->level_key; /* the running max: threads' records interleave */
    d->level_key = key > 0 ? key : 0;
    level_acc one = {0,        event_id, event_id,  1,        allocated, allocated,
                     reserved, reserved, allocated, reserved, event_id,  oom != 0};
    return fold(rp, device, 0, d->level_key >> rp->level_shift, &one);
}

int replay_levels_flush(replay *rp, uint32_t device) {
    for (int k = 0; k < rp->level_count; k++) {
        level_acc *a = &rp->dev[device].levels[k];
        if (!a->events)
            continue;
        if (write_level(rp, device, k, a) != 0)
            return -1;
        if (k + 1 < rp->level_count && fold(rp, device, k + 1, a->index >> 3, a) != 0)
            return -1;
        a->events = 0;
    }
    return 0;
}

void replay_levels_meta(replay *rp) {
    db_writer_meta_int(rp->db, "timeline_level_ns", level_width(rp, 0));
    db_writer_meta_int(rp->db, "timeline_levels", rp->level_count);
    db_writer_meta_text(rp->db, "timeline_level_axis", rp->level_event_axis ? "event" : "time");
}
