/* replay_live.c — the replay kept alive between polls of a growing trace (see replay_live.h).
 *
 * Two readers follow the file: `scan` runs ahead, each of its records through the first pass
 * (replay_scan_record: devices, PyTorch's segments, VMM, the allocator's marks, the origin),
 * and `apply` follows it by exactly as many records, each through the second pass
 * (replay_state_record). Both read the same bytes in the same order, so the n records the scan
 * saw are the n the apply gets, also when the file grew between the two. Here lives only what
 * the database would have answered after the run: the step ends' trend per device (the
 * replay's step-end hook), the step open at each peak, the end record. */
#include "replay_live.h"

#include "replay_state.h"

#include "gmt_grow.h"
#include "heat_rows.h"
#include "median.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One step end of one device: the trend's point. */
typedef struct trend_point {
    int64_t step, allocated, ts_ns;
} trend_point;

typedef struct trend {
    trend_point *points;
    size_t len, cap;
} trend;

/* A closed step's duration, for the median step time. */
typedef struct step_time {
    int64_t step, ns;
} step_time;

struct replay_live {
    replay *rp;
    db_writer *discard;
    trace_reader *scan, *apply;
    replay_scan ss;
    int started;
    uint64_t pending; /* records the scan read that the apply has not */
    char err[512];    /* the replay's first error */
    int64_t peak_id[GMT_MAX_DEVICES], peak_step[GMT_MAX_DEVICES], peak_ts[GMT_MAX_DEVICES];
    trend trends[GMT_MAX_DEVICES];
    step_time *times;
    size_t times_len, times_cap;
    int64_t steps_ended;
    int ended, clean_end;
    uint64_t dropped;
    int oom;              /* out of memory in the step-end hook */
    addr_map stack_index; /* trace stack id -> index in rp->stacks, for those indexed so far */
    size_t stacks_indexed;
    char *text; /* replay_live_stack's copies of the frames' strings */
    size_t text_len, text_cap;
    int64_t *scratch; /* the trend's changes, for their median */
    size_t scratch_cap;
};

/* ---- the trend ------------------------------------------------------------------------- */

/* Keeps the last LIVE_TREND_STEPS points: when full, the older half goes. */
static int trend_add(trend *t, trend_point p) {
    if (t->len == LIVE_TREND_STEPS) {
        memmove(t->points, t->points + t->len / 2, (t->len - t->len / 2) * sizeof *t->points);
        t->len -= t->len / 2;
    }
    if (gmt_grow((void **)&t->points, &t->cap, t->len, sizeof *t->points) != 0)
        return -1;
    t->points[t->len++] = p;
    return 0;
}

/* A step ended (the replay's hook, after its steps row and before the next record): each
 * device with a state gets the point its step_ends row would be. */
static void on_step_end(void *ctx, const step_interval *s) {
    replay_live *lv = ctx;
    replay *rp = lv->rp;
    lv->steps_ended++;
    for (uint32_t i = 0; i < GMT_MAX_DEVICES; i++) {
        device_state *d = &rp->dev[i];
        if (!d->present || !d->model || d->peak_alloc_id == DB_NULL)
            continue; /* as replay_write_step_ends: no row yet, no state at this end */
        trend_point p = {s->step, replay_device_totals(d).allocated, d->last_row_ts};
        if (trend_add(&lv->trends[i], p) != 0)
            lv->oom = 1;
    }
    if (s->end_ts != INT64_MAX && !s->open) {
        if (lv->times_len == LIVE_TREND_STEPS) {
            memmove(lv->times, lv->times + lv->times_len / 2,
                    (lv->times_len - lv->times_len / 2) * sizeof *lv->times);
            lv->times_len -= lv->times_len / 2;
        }
        if (gmt_grow((void **)&lv->times, &lv->times_cap, lv->times_len, sizeof *lv->times) != 0)
            lv->oom = 1;
        else
            lv->times[lv->times_len++] = (step_time){s->step, s->end_ts - s->begin_ts};
    }
}

/* ---- open, poll, close ------------------------------------------------------------------ */

replay_live *replay_live_open(const char *path, const char *step_word, int *not_yet, char *err,
                              size_t errlen) {
    *not_yet = 0;
    replay_live *lv = calloc(1, sizeof *lv);
    replay_options *opt = calloc(1, sizeof *opt);
    if (!lv || !opt) {
        free(lv);
        free(opt);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    opt->step_word = step_word;
    opt->timestamps = opt->history = -1;
    lv->scan = trace_reader_open(path, err, errlen);
    if (lv->scan && trace_reader_get_stats(lv->scan)->frames == 0) {
        *not_yet = 1;
        snprintf(err, errlen, "%s has no complete frame yet", path);
        trace_reader_close(lv->scan);
        lv->scan = NULL;
    }
    if (lv->scan)
        lv->apply = trace_reader_open(path, err, errlen);
    lv->discard = db_writer_open_discard();
    if (lv->scan && lv->apply && lv->discard)
        lv->rp = replay_state_new(lv->discard, opt, NULL, lv->err, sizeof lv->err);
    if (!lv->rp || lv->rp->failed) {
        if (lv->scan && lv->apply)
            snprintf(err, errlen, "out of memory");
        if (lv->rp)
            replay_state_free(lv->rp);
        free(opt);
        lv->rp = NULL;
        replay_live_close(lv);
        return NULL;
    }
    trace_reader_follow(lv->scan);
    trace_reader_follow(lv->apply);
    replay_scan_begin(&lv->ss);
    lv->rp->step_end_hook = on_step_end;
    lv->rp->hook_ctx = lv;
    for (int i = 0; i < GMT_MAX_DEVICES; i++)
        lv->peak_id[i] = DB_NULL, lv->peak_step[i] = -1;
    return lv;
}

/* A device's peak moved: the step open and the time at it. */
static void note_peak(replay_live *lv, uint32_t dev) {
    const device_state *d = &lv->rp->dev[dev];
    if (d->peak_alloc_id == lv->peak_id[dev])
        return;
    lv->peak_id[dev] = d->peak_alloc_id;
    lv->peak_ts[dev] = d->last_row_ts;
    int64_t step;
    lv->peak_step[dev] = steps_current(lv->rp->steps, &step) ? step : -1;
}

/* After each applied record: the END record, and the step open at a new peak (an event's
 * device, or every device at the seed's rows). */
static void after_record(replay_live *lv, const trace_record *rec) {
    if (rec->kind == TRACE_REC_END) {
        lv->ended = 1;
        lv->clean_end = (rec->u.end.flags & TRACE_END_CLEAN) != 0;
        lv->dropped = rec->u.end.dropped;
    }
    if (rec->kind == TRACE_REC_EVENT && rec->u.event.device < GMT_MAX_DEVICES)
        note_peak(lv, rec->u.event.device);
    else if (rec->kind == TRACE_REC_MARKER && rec->u.marker.kind == TRACE_MARK_SEED_END)
        for (uint32_t i = 0; i < GMT_MAX_DEVICES; i++)
            note_peak(lv, i);
}

int64_t replay_live_poll(replay_live *lv, char *err, size_t errlen) {
    replay *rp = lv->rp;
    trace_record rec;
    int more;
    int64_t read = 0;
    while ((more = trace_reader_next(lv->scan, &rec)) == 1) {
        if (replay_scan_record(rp, &lv->ss, &rec) != 0)
            break;
        read++;
        lv->pending++;
        if (!lv->started && rec.kind == TRACE_REC_END)
            lv->started = -1; /* the end: apply what there is, origin or not */
    }
    if (more < 0) {
        snprintf(err, errlen, "%s", trace_reader_error(lv->scan));
        return -1;
    }
    /* the heatmap's rows are the database's: none kept here */
    for (int i = 0; i < GMT_MAX_DEVICES; i++) {
        heat_rows_free(rp->dev[i].heat);
        rp->dev[i].heat = NULL;
    }
    if (lv->started <= 0 && (lv->ss.result.have_t0 || lv->started < 0)) {
        lv->started = 1;
        if (replay_state_start(rp, replay_scan_end(&lv->ss)) != 0)
            goto failed;
    }
    while (lv->started > 0 && !rp->failed && lv->pending > 0 &&
           (more = trace_reader_next(lv->apply, &rec)) == 1) {
        lv->pending--;
        if (replay_state_record(rp, &rec) != 0)
            break;
        after_record(lv, &rec);
    }
    if (more < 0) {
        snprintf(err, errlen, "%s", trace_reader_error(lv->apply));
        return -1;
    }
    if (lv->oom)
        replay_fail(rp, "out of memory");
    if (rp->failed)
        goto failed;
    return read;
failed:
    snprintf(err, errlen, "%s", lv->err[0] ? lv->err : "out of memory");
    return -1;
}

void replay_live_close(replay_live *lv) {
    if (!lv)
        return;
    if (lv->rp) {
        const replay_options *opt = lv->rp->opt;
        replay_state_free(lv->rp);
        free((void *)opt);
    }
    db_writer_abort(lv->discard);
    trace_reader_close(lv->scan);
    trace_reader_close(lv->apply);
    for (int i = 0; i < GMT_MAX_DEVICES; i++)
        free(lv->trends[i].points);
    free(lv->times);
    addr_map_free(&lv->stack_index);
    free(lv->text);
    free(lv->scratch);
    free(lv);
}

/* ---- the facts ------------------------------------------------------------------------- */

/* lv->scratch with room for n values. 0 or -1. */
static int scratch_room(replay_live *lv, size_t n) {
    if (lv->scratch_cap >= n)
        return 0;
    int64_t *s = realloc(lv->scratch, n * sizeof *s);
    if (!s)
        return -1;
    lv->scratch = s;
    lv->scratch_cap = n;
    return 0;
}

/* The median duration of the closed steps numbered first..last (report's median_step_ns); -1:
 * none. */
static int64_t median_step_ns(replay_live *lv, int64_t first, int64_t last) {
    size_t n = 0;
    if (scratch_room(lv, lv->times_len) != 0)
        return -1;
    for (size_t i = 0; i < lv->times_len; i++)
        if (lv->times[i].step >= first && lv->times[i].step <= last)
            lv->scratch[n++] = lv->times[i].ns;
    return n ? median_i64(lv->scratch, n) : -1;
}

/* The device's trend: its step ends, and the open step's end (now) when one is open. */
static void trend_of(replay_live *lv, uint32_t i, const device_state *d, live_device *o) {
    const trend *t = &lv->trends[i];
    int64_t open_step;
    int open = steps_current(lv->rp->steps, &open_step) && d->peak_alloc_id != DB_NULL;
    size_t n = t->len + (open != 0);
    o->trend_steps = n;
    o->growth_per_step = 0;
    o->last_step = -1;
    o->median_step_ns = -1;
    if (n == 0)
        return;
    trend_point last =
        open ? (trend_point){open_step, o->allocated, d->last_row_ts} : t->points[t->len - 1];
    trend_point first = t->len ? t->points[0] : last;
    o->last_step = last.step;
    o->last_step_allocated = last.allocated;
    o->last_step_ts_ns = last.ts_ns;
    o->median_step_ns = median_step_ns(lv, first.step, last.step);
    if (n < 3 || scratch_room(lv, n) != 0)
        return;
    size_t k = 0;
    for (size_t j = 1; j < t->len; j++)
        lv->scratch[k++] = t->points[j].allocated - t->points[j - 1].allocated;
    if (open && t->len)
        lv->scratch[k++] = last.allocated - t->points[t->len - 1].allocated;
    o->growth_per_step = median_i64(lv->scratch, k);
}

void replay_live_facts(replay_live *lv, live_facts *out) {
    replay *rp = lv->rp;
    memset(out, 0, sizeof *out);
    out->started = lv->started > 0;
    out->events = rp->last_event_id > 0 ? rp->last_event_id : 0;
    out->last_ts_ns = rp->last_ts;
    int64_t step;
    out->current_step = steps_current(rp->steps, &step) ? step : -1;
    out->steps_ended = lv->steps_ended;
    out->ended = lv->ended;
    out->clean_end = lv->clean_end;
    out->dropped_events = lv->dropped;
    out->bytes_read = trace_reader_position(lv->apply);
    out->warnings = rp->warnings_total;
    out->rank = rp->process_rank;
    for (uint32_t i = 0; out->started && i < GMT_MAX_DEVICES; i++) {
        device_state *d = &rp->dev[i];
        if (!d->present || !d->model)
            continue;
        live_device *o = &out->devices[out->ndevices++];
        replay_totals t = replay_device_totals(d);
        split_now sp = replay_split_of(d);
        o->device = (int)i;
        o->name = d->name;
        o->total_bytes = d->total_bytes;
        o->allocated = t.allocated;
        o->requested = t.requested;
        o->reserved = t.reserved;
        o->segments = t.segments;
        int has_peak = d->peak_alloc_id != DB_NULL;
        o->peak_allocated = has_peak ? d->peak_alloc : 0;
        o->peak_allocated_event_id = has_peak ? d->peak_alloc_id : 0;
        o->peak_allocated_ts_ns = has_peak ? lv->peak_ts[i] : 0;
        o->peak_allocated_step = lv->peak_step[i];
        o->peak_reserved = d->peak_res_id != DB_NULL ? d->peak_res : 0;
        o->peak_reserved_event_id = d->peak_res_id != DB_NULL ? d->peak_res_id : 0;
        o->split_reserved = sp.reserved;
        o->releasable_bytes = sp.releasable;
        o->trapped_bytes = sp.reserved - sp.allocated - sp.releasable;
        o->ooms = d->ooms;
        o->alloc_failed = d->alloc_failed;
        trend_of(lv, i, d, o);
        if (!site_stats_top_growth(rp->sites, i, &o->top_site_stack, &o->top_site_growth,
                                   &o->top_site_live))
            o->top_site_stack = o->top_site_growth = o->top_site_live = 0;
    }
}

size_t replay_live_sites_at_peak(replay_live *lv, int device, live_site *out, size_t max) {
    int64_t stacks[256], bytes[256];
    if (max > 256)
        max = 256;
    size_t n = device >= 0 && device < GMT_MAX_DEVICES
                   ? site_stats_at_peak(lv->rp->sites, (uint32_t)device, stacks, bytes, max)
                   : 0;
    for (size_t i = 0; i < n; i++)
        out[i] = (live_site){stacks[i], bytes[i]};
    return n;
}

/* ---- stacks ------------------------------------------------------------------------------ */

/* A copy of s in lv->text; its offset + 1, or 0 for NULL (or out of memory). Offsets, since the
 * buffer moves as it grows. */
static size_t keep_text(replay_live *lv, const char *s) {
    if (!s)
        return 0;
    size_t n = strlen(s) + 1;
    if (lv->text_len + n > lv->text_cap) {
        size_t cap = (lv->text_len + n) * 2;
        char *t = realloc(lv->text, cap);
        if (!t)
            return 0;
        lv->text = t;
        lv->text_cap = cap;
    }
    memcpy(lv->text + lv->text_len, s, n);
    lv->text_len += n;
    return lv->text_len - n + 1;
}

size_t replay_live_stack(replay_live *lv, int64_t stack_id, live_frame *out, size_t max) {
    replay *rp = lv->rp;
    for (; lv->stacks_indexed < rp->stacks_len; lv->stacks_indexed++)
        if (addr_map_put(&lv->stack_index, 0, rp->stacks[lv->stacks_indexed].stack_id,
                         (uint32_t)lv->stacks_indexed) != 0)
            return 0;
    lv->text_len = 0;
    size_t n = 0, offsets[3 * 256];
    if (max > 256)
        max = 256;
    uint64_t id = stack_id > 0 ? (uint64_t)stack_id : 0;
    for (size_t depth = 0; id && n < max && depth < 4096; depth++) {
        const uint32_t *at = addr_map_get(&lv->stack_index, 0, id);
        if (!at)
            break;
        const trace_stack *s = &rp->stacks[*at];
        const uint32_t *fa = addr_map_get(&rp->frame_index, 0, s->frame_id);
        const struct frame_info *fi = fa ? &rp->frames[*fa] : NULL;
        const uint32_t *ma = fi ? addr_map_get(&rp->module_index, 0, fi->frame.module_id) : NULL;
        const char *module = ma ? rp->modules[*ma].path : NULL;
        trace_symbol_entry own = {fi ? fi->frame.function_id : 0, fi ? fi->frame.file_id : 0,
                                  fi ? fi->frame.line : 0};
        const trace_symbol_entry *names =
            fi && fi->chain_count ? rp->chains + fi->chain_first : &own;
        uint32_t count = fi && fi->chain_count ? fi->chain_count : 1;
        for (uint32_t c = 0; c < count && n < max; c++, n++) {
            offsets[3 * n] = keep_text(lv, replay_string(rp, names[c].function_id));
            offsets[3 * n + 1] = keep_text(lv, replay_string(rp, names[c].file_id));
            offsets[3 * n + 2] = keep_text(lv, module);
            out[n].line = names[c].line;
            out[n].ip = fi ? fi->frame.ip : 0;
        }
        id = s->parent_id;
    }
    for (size_t i = 0; i < n; i++) { /* the text no longer moves */
        out[i].name = offsets[3 * i] ? lv->text + offsets[3 * i] - 1 : NULL;
        out[i].file = offsets[3 * i + 1] ? lv->text + offsets[3 * i + 1] - 1 : NULL;
        out[i].module = offsets[3 * i + 2] ? lv->text + offsets[3 * i + 2] - 1 : NULL;
    }
    return n;
}
