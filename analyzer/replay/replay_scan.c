/* replay_scan.c — the replay's first pass, one record at a time (see replay.h).
 *
 * Before the second pass can write a row it must know: the time origin and span (the first
 * event after the seed, the buckets' width), how many seed events there are (their ids count
 * up to 0), which devices have events, whether any uses physical memory (VMM) or PyTorch's
 * mapped memory (expandable segments), the segment ranges of each device (the heatmap's rows),
 * the addresses PyTorch reports as segments (so CUPTI's report of one joins it), and the
 * allocator configuration a live trace recorded. This file gathers them record by record, so
 * the pass can be fed by a reader of a file or by a producer in the same process alike. */
#include "replay_state.h"

#include "heat_rows.h"

#include <stdio.h>
#include <string.h>

/* The configuration in a string of an allocator mark (trace_format.h): 2 for
 * the settings PyTorch reported, 1 for the environment's
 * "PYTORCH_CUDA_ALLOC_CONF=..." (or the newer "PYTORCH_ALLOC_CONF=..."), 0 for
 * other strings. */
static int conf_text(const trace_string *s, char *out, size_t len) {
    static const char *const names[] = {TRACE_TORCH_SETTINGS_PREFIX,
                                        "PYTORCH_CUDA_ALLOC_CONF=", "PYTORCH_ALLOC_CONF="};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (s->text.len >= n && !strncmp(s->text.ptr, names[i], n)) {
            snprintf(out, len, "%.*s", (int)(s->text.len - n), s->text.ptr + n);
            return i == 0 ? 2 : 1;
        }
    }
    return 0;
}

void replay_scan_begin(replay_scan *ss) {
    memset(ss, 0, sizeof *ss);
    ss->in_seed_candidate = 1;
}

int replay_scan_record(replay *rp, replay_scan *ss, const trace_record *rec) {
    scan_result *sr = &ss->result;
    if (rec->kind == TRACE_REC_MARKER && rec->u.marker.kind == TRACE_MARK_SEED_END &&
        ss->in_seed_candidate) {
        sr->has_seed_end = 1;
        sr->seed_events = ss->events_before_marker;
        ss->in_seed_candidate = 0;
        sr->have_t0 = 0; /* the origin is the first event after the seed */
        return 0;
    }
    /* The allocator marks' strings, [1] the environment's and [2] PyTorch's report, and the
     * text of each; the first PyTorch report wins (it saw the run-time changes the
     * environment cannot show), else the environment. */
    if (rec->kind == TRACE_REC_STRING) {
        char text[AM_SETTINGS_CONF_MAX];
        int which = conf_text(&rec->u.string, text, sizeof text);
        if (which && !ss->conf_id[which]) {
            ss->conf_id[which] = rec->u.string.string_id;
            memcpy(ss->conf[which], text, sizeof text);
        }
    }
    if (rec->kind == TRACE_REC_MARKER && rec->u.marker.kind == TRACE_MARK_MARK)
        for (int which = 2; which > ss->conf_marked; which--)
            if (ss->conf_id[which] && rec->u.marker.name_id == ss->conf_id[which]) {
                snprintf(rp->trace_conf, sizeof rp->trace_conf, "%s", ss->conf[which]);
                ss->conf_marked = which;
            }
    if (rec->kind != TRACE_REC_EVENT) {
        int timed = rec->kind == TRACE_REC_MARKER || rec->kind == TRACE_REC_COUNTER;
        if (timed && !sr->any_ts) {
            sr->any_ts = 1;
            sr->first_any_ts =
                rec->kind == TRACE_REC_MARKER ? rec->u.marker.ts_ns : rec->u.counter.ts_ns;
        }
        return 0;
    }
    const trace_event *ev = &rec->u.event;
    if (ev->device < GMT_MAX_DEVICES)
        rp->dev[ev->device].present = 1;
    if (!replay_event_ordinary(ev) && replay_event_out_of_range(ev))
        return 0; /* the second pass leaves it out: no id, no time, no range */
    ss->events_before_marker++;
    sr->events++;
    if (ev->device < GMT_MAX_DEVICES && ev->op == TRACE_OP_PHYS_CREATE)
        rp->dev[ev->device].uses_phys = 1;
    if (ev->device < GMT_MAX_DEVICES && ev->level == TRACE_LEVEL_SEGMENT &&
        ev->kind == TRACE_KIND_DEVICE && (ev->op == TRACE_OP_ALLOC || ev->op == TRACE_OP_MAP)) {
        device_state *d = &rp->dev[ev->device];
        if ((!d->heat && !(d->heat = heat_rows_new())) ||
            heat_rows_add_range(d->heat, ev->addr, ev->size) != 0)
            return replay_fail(rp, "out of memory");
    }
    if (ev->level == TRACE_LEVEL_SEGMENT && ev->source == TRACE_SOURCE_TORCH &&
        (ev->op == TRACE_OP_MAP || ev->op == TRACE_OP_UNMAP))
        rp->torch_maps = 1; /* PyTorch's expandable segments */
    if (ev->level == TRACE_LEVEL_SEGMENT && ev->source == TRACE_SOURCE_TORCH &&
        (ev->op == TRACE_OP_ALLOC || ev->op == TRACE_OP_MAP) &&
        addr_map_put(&rp->torch_segments, ev->device, ev->addr, 1) != 0)
        return replay_fail(rp, "out of memory");
    if (!sr->have_t0) {
        sr->have_t0 = 1;
        sr->first_ts = sr->last_ts = ev->ts_ns;
    }
    if (ev->ts_ns > sr->last_ts)
        sr->last_ts = ev->ts_ns;
    return 0;
}

const scan_result *replay_scan_end(replay_scan *ss) {
    scan_result *sr = &ss->result;
    if (!sr->have_t0 && sr->any_ts)
        sr->first_ts = sr->last_ts = sr->first_any_ts;
    return sr;
}
