/* view_inputs.c — the facts of several inputs for `memanalyze view`'s strip (view_inputs.h):
 * each input's rank entry as `ranks` reads it (rank_entry_load, then rank_stats_build over all,
 * so the numbers and the ranks are `ranks --json`'s), its run as `report` says it, its axis and
 * the places of its peaks; then ranks or runs, and the clock. */
#include "view_inputs.h"

#include "analysis.h"
#include "db_open.h"
#include "report.h"
#include "view_timeline.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What report and the timeline say of one input, from its open database. */
static void read_run(view_input *v, sqlite3 *db, int device) {
    report_run run;
    report_run_read(db, v->input, &run);
    v->events = run.events;
    v->span_ns = run.span_ns;
    v->timestamps = run.timestamps;
    char err[256];
    if (view_timeline_axis(db, &v->event_axis, &v->axis_end, err, sizeof err) != 0) {
        v->event_axis = !v->timestamps;
        v->axis_end = 1;
    }
    int devices[DEVICE_BALANCE_MAX];
    int n = analysis_devices(db, devices, DEVICE_BALANCE_MAX);
    for (int i = 0; i < n; i++)
        v->device_ids[v->ndevices++] = devices[i];
    device_summary s;
    /* the peaks alone: not the worst fragmentation (a query per step end) nor untracked */
    if (device >= 0 && analysis_device_summary_brief(db, device, run.from, run.to, &s) == 0) {
        v->peak_allocated_ts_ns =
            v->event_axis ? s.peak_allocated.event_id : s.peak_allocated.ts_ns;
        v->peak_reserved_ts_ns = v->event_axis ? s.peak_reserved.event_id : s.peak_reserved.ts_ns;
    }
}

/* Ranks of one job or runs, and the clock, with the reason in v->why. */
static void decide(view_inputs *v) {
    const rank_stats *st = &v->st;
    v->same_job = 0;
    if (v->count < 2) {
        snprintf(v->why, sizeof v->why, "one input");
        return;
    }
    for (size_t i = 0; i < v->count; i++) {
        const rank_entry *e = v->inputs[i].e;
        if (e->failed) {
            snprintf(v->why, sizeof v->why, "runs side by side: %.200s could not be read",
                     rank_input_name(e->input));
            return;
        }
        if (e->rank_from == RANK_FROM_ORDER) {
            snprintf(v->why, sizeof v->why,
                     "runs side by side (as compare): %.200s names no rank (none in the trace, "
                     "none in its file name)",
                     rank_input_name(e->input));
            return;
        }
    }
    if (st->nduplicate_ranks) {
        snprintf(v->why, sizeof v->why, "runs side by side (as compare): rank %lld is named twice",
                 (long long)st->duplicate_ranks[0]);
        return;
    }
    v->same_job = 1;
    int64_t t0 = INT64_MAX;
    for (size_t i = 0; i < v->count; i++) {
        const view_input *in = &v->inputs[i];
        if (!in->timestamps || in->event_axis || in->e->t0_unix_ns <= 0) {
            snprintf(v->why, sizeof v->why,
                     "ranks of one job (each names its own rank); %.200s has no wall clock: "
                     "each drawn over its own duration",
                     rank_input_name(in->input));
            return;
        }
        if (in->e->t0_unix_ns < t0)
            t0 = in->e->t0_unix_ns;
    }
    v->shared_clock = 1;
    for (size_t i = 0; i < v->count; i++)
        v->inputs[i].offset_ns = v->inputs[i].e->t0_unix_ns - t0;
    snprintf(v->why, sizeof v->why,
             "ranks of one job (each names its own rank), on one clock (their wall clocks)");
}

int view_inputs_read(const char *const *names, const char *const *db_paths, size_t n,
                     view_inputs *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->count = n;
    out->inputs = calloc(n ? n : 1, sizeof *out->inputs);
    out->entries = calloc(n ? n : 1, sizeof *out->entries);
    char **failed = calloc(n ? n : 1, sizeof *failed);
    if (!out->inputs || !out->entries || !failed) {
        free(failed);
        view_inputs_release(out);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        rank_entry *e = &out->entries[i];
        char why[512];
        out->inputs[i].input = names[i];
        if (rank_entry_load(e, names[i], db_paths[i], -1, why, sizeof why) != 0) {
            e->input = names[i];
            failed[i] = strdup(why);
            e->failed = failed[i] ? failed[i] : "out of memory";
            continue;
        }
        sqlite3 *db;
        if (db_open_readonly(db_paths[i], &db, why, sizeof why) == 0) {
            read_run(&out->inputs[i], db, e->s.device);
            db_close(db);
        }
    }
    /* the failed entries' messages, owned by `failed_strings` (the entries own none) */
    out->failed_strings = failed;
    if (rank_stats_build(out->entries, n, 10, &out->st, err, errlen) != 0) {
        view_inputs_release(out);
        return -1;
    }
    /* the sort moved the entries: each input finds its own again by its name's pointer */
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < n; k++)
            if (out->entries[k].input == names[i] && !out->inputs[i].e) {
                int taken = 0;
                for (size_t j = 0; j < i; j++)
                    taken |= out->inputs[j].e == &out->entries[k];
                if (!taken)
                    out->inputs[i].e = &out->entries[k];
            }
    for (size_t i = 0; i < n; i++)
        assert(out->inputs[i].e);
    decide(out);
    return 0;
}

void view_inputs_release(view_inputs *v) {
    if (v->entries) {
        rank_stats_release(&v->st);
        for (size_t i = 0; i < v->count; i++)
            rank_entry_release(&v->entries[i]);
    }
    for (size_t i = 0; v->failed_strings && i < v->count; i++)
        free(v->failed_strings[i]);
    free(v->failed_strings);
    free(v->entries);
    free(v->inputs);
    memset(v, 0, sizeof *v);
}
