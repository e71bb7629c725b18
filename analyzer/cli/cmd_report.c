/* cmd_report.c — `memanalyze report INPUT`: one screen that answers what people ask about a
 * run's GPU memory — the peak and what held it, fragmentation, OOMs, untracked memory, the
 * largest allocations, leaks and growth, and the headroom left — per device, text or JSON.
 *
 * The facts, their verdicts and the recommendations are query/report.h's; this file only
 * says them, text or JSON, from the same structs. */
#include "cli.h"
#include "commands.h"
#include "fact_json.h"
#include "json_out.h"
#include "report.h"
#include "run_print.h"
#include "units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- text ------------------------------------------------------------- */

static void print_header(const report_run *r) {
    char d[32];
    printf("memanalyze report: %s\n", r->input);
    printf("  input: %s", r->input_format);
    if (*r->producer)
        printf(", recorded by %s", r->producer);
    if (*r->pid)
        printf(", pid %s", r->pid);
    if (*r->host)
        printf(" on %s", r->host);
    printf("\n");
    if (*r->command_line)
        printf("  command: %s\n", r->command_line);
    if (!r->history)
        printf("  no history: the snapshot holds its final segments only (memory history was "
               "off), so there is one moment to look at, the end\n");
    else if (r->timestamps)
        printf("  %lld events over %s", r->events,
               units_duration((uint64_t)r->span_ns, d, sizeof d));
    else
        printf("  %lld events, no timestamps (PyTorch <= 2.1 records none): times are event order",
               r->events);
    if (!r->history)
        ; /* nothing happened: no steps to look for */
    else if (r->steps)
        printf(", %lld steps (step %lld .. %lld)", r->steps, r->first_step, r->last_step);
    else
        printf(", no steps found (NVTX ranges or marks named like \"step 3\" make steps)");
    if (r->history)
        printf("\n");
    if (r->have_settings)
        printf("  allocator settings: %s\n", r->settings_line);
    if (r->warnings_total)
        printf("  %lld replay warnings (memanalyze sql %s \"SELECT * FROM warnings\")\n",
               r->warnings_total, r->input);
    if (r->truncated)
        printf("  the trace is truncated: the recording was cut short\n");
    else if (!r->ended)
        printf("  the recording did not end (no end record: killed, or still running): this is "
               "what it wrote\n");
    if (r->windowed)
        printf("  window: from %s to %s\n", r->from_when, r->to_when);
    if (r->devices.bottleneck >= 0) {
        printf("  devices of this process, compared like ranks: ");
        run_print_devices_text(stdout, &r->devices);
        printf("\n");
    }
}

static void print_ooms(const report_device *r) {
    char line[1024];
    for (size_t k = 0; k < r->nooms; k++) {
        report_oom_describe(&r->ooms[k], line, sizeof line);
        printf("    %s\n", line);
    }
}

static void print_largest(const report_device *r) {
    char b1[32];
    printf("  largest allocations:\n");
    for (size_t i = 0; i < r->nlargest; i++)
        printf("    %10s  %s  at %s\n", units_bytes_i64(r->largest[i].bytes, b1),
               r->largest[i].site, r->largest[i].when);
}

/* The cache at work: allocations served without new driver memory, and at the peak what is
 * in use (active) against what the cache holds free (inactive). */
static void print_cache(const report_device *r) {
    char b1[32], b2[32];
    if (r->cache_allocs <= 0) /* none, or a window (the counters are the whole run's) */
        return;
    printf("  the cache: %.1f %% of %lld allocations served without new driver memory (%lld "
           "needed a cudaMalloc or mapped pages)\n",
           100.0 * r->cache_hit_rate, (long long)r->cache_allocs, (long long)r->cache_misses);
    printf("    at the peak %s active, %s inactive (reserved, free in the cache)\n",
           units_bytes_i64(r->s.peak_allocated.allocated, b1),
           units_bytes_i64(r->inactive_at_peak, b2));
}

/* What the memory at the peak is, by category, and the largest named tensors in it. */
static void print_categories(const report_device *r) {
    char b1[32];
    if (!r->have_categories || r->s.peak_allocated.allocated <= 0)
        return;
    printf("  held at the peak by category%s:\n",
           r->categories_one_moment ? " (one moment, no history: no phases to tell)" : "");
    for (int c = 0; c < BLOCK_CATEGORY_COUNT; c++)
        if (r->categories[c])
            printf("    %10s %5.1f %%  %s\n", units_bytes_i64(r->categories[c], b1),
                   100.0 * r->category_share[c], gmt_category_name((gmt_category)c));
    if (!r->nnamed)
        return;
    printf("  largest named tensors at the peak:\n");
    for (size_t i = 0; i < r->nnamed; i++) {
        const tensor_row *t = &r->named[i];
        printf("    %10s  %-15s  %s", units_bytes_i64(t->bytes, b1), gmt_category_name(t->category),
               t->name);
        if (t->tensors > 1)
            printf(" (+%lld more in the storage)", (long long)t->tensors - 1);
        printf("\n");
    }
}

/* "good" (the raw ratio's word), or "good by trapped 0.14" (the word of the trapped ratio). */
static const char *rated(const char *rating, double by, char *buf, size_t len) {
    if (by < 0)
        return rating;
    snprintf(buf, len, "%s by trapped %.2f", rating, by);
    return buf;
}

static void print_fragmentation(const report_device *r) {
    char b1[32], b2[32], w[64];
    const device_summary *s = &r->s;
    printf("  fragmentation (reserved - allocated) / reserved%s:\n",
           r->frag_at_peak_by >= 0 ? ", each rated by its trapped part" : "");
    printf("    at the peak %.2f (%s), largest free block %s\n", r->frag_at_peak,
           rated(r->frag_at_peak_rating, r->frag_at_peak_by, w, sizeof w),
           units_bytes_i64(s->peak_allocated.largest_free, b1));
    printf("    at the end  %.2f (%s), largest free block %s\n", r->frag_at_end,
           rated(r->frag_at_end_rating, r->frag_at_end_by, w, sizeof w),
           units_bytes_i64(s->end.largest_free, b2));
    printf("    worst       %.2f (%s) at event %lld, with %s reserved\n", r->frag_worst,
           rated(r->frag_worst_rating, r->frag_worst_by, w, sizeof w),
           (long long)s->worst_fragmentation.event_id,
           units_bytes_i64(s->worst_fragmentation.reserved, b1));
    const steps_overview *o = &r->steps;
    if (o->count)
        printf("    per step (at step ends): min %.2f, mean %.2f, max %.2f (%s) at step %lld\n",
               o->frag_min, o->frag_mean, o->frag_max,
               rated(r->frag_step_max_rating, r->frag_step_max_by, w, sizeof w),
               (long long)o->frag_max_step);
    if (!r->have_split)
        return;
    const free_split *p = &r->split_peak, *e = &r->split_end;
    printf("  trapped / reserved (free bytes empty_cache() cannot return: the fragmentation "
           "verdict):\n");
    printf("    at the peak %.2f (%s): %s trapped, %s releasable\n", r->trapped_at_peak,
           r->trapped_at_peak_rating, units_bytes_i64(p->trapped, b1),
           units_bytes_i64(p->releasable, b2));
    printf("    at the end  %.2f (%s): %s trapped, %s releasable%s\n", r->trapped_at_end,
           r->trapped_at_end_rating, units_bytes_i64(e->trapped, b1),
           units_bytes_i64(e->releasable, b2),
           r->end_warm_cache ? " (a warm cache, not fragmentation: empty_cache() returns it)" : "");
    const report_trapped_steps *t = &r->trapped_steps;
    if (t->measured) {
        printf("    per step (at step ends): mean %.2f, max %.2f (%s) at step %lld", t->mean,
               t->max, t->rating, (long long)t->max_step);
        if (t->stride > 1)
            printf(" (1 step in %zu of %zu measured)", t->stride, o->count);
        printf("\n");
    }
}

static void print_headroom(const report_device *r) {
    char b1[32], b2[32];
    const device_summary *s = &r->s;
    const headroom_forecast *f = &r->forecast;
    if (f->growth_per_step > 0) {
        printf("  headroom: allocated grows +%s/step at step ends",
               units_bytes_i64(f->growth_per_step, b1));
        if (f->limit_step >= 0)
            printf("; at that rate the run reaches the device limit (%s) at step %lld",
                   units_bytes_i64(s->total_bytes, b2), (long long)f->limit_step);
        if (f->limit_seconds >= 0) {
            char when[32];
            if (f->limit_seconds < 1e9) /* below 30 years: a duration */
                units_duration((uint64_t)(f->limit_seconds * 1e9), when, sizeof when);
            else
                snprintf(when, sizeof when, "%.3g s", f->limit_seconds);
            printf(", %s into the run", when);
        }
        printf("; risk %s\n", f->risk);
    } else if (r->steps.count >= 3) {
        printf("  headroom: allocated does not grow from step to step; peak uses %s",
               units_bytes_i64(s->peak_reserved.reserved, b1));
        if (r->peak_reserved_share >= 0)
            printf(" of %s (%.0f %%)", units_bytes_i64(s->total_bytes, b2),
                   100.0 * r->peak_reserved_share);
        printf("; risk %s\n", f->risk);
    } else {
        printf("  headroom: %zu step end%s, too few for a trend; risk %s\n", r->steps.count,
               r->steps.count == 1 ? "" : "s", f->risk);
    }
}

static void print_growth(const report_device *r, size_t top) {
    char b1[32], b2[32], b3[32];
    size_t shown = 0;
    printf("  leaks and growth");
    if (r->windows)
        printf(" (median change of live bytes per site over %zu step ends):\n", r->windows + 1);
    else
        printf(" (fewer than two step ends: no growth can be measured):\n");
    for (size_t i = 0; i < r->nleaks && shown < top; i++) {
        const site_growth *g = &r->leaks[i].g;
        if (g->growth_per_step <= 0)
            continue;
        printf("    +%s/step (+%s/min)  %s  live %s at the end\n",
               units_bytes_i64(g->growth_per_step, b1),
               units_bytes_i64((int64_t)g->bytes_per_min, b2), r->leaks[i].site,
               units_bytes_i64(g->live_end, b3));
        shown++;
    }
    if (!shown)
        printf("    no site grows from step to step\n");
    printf("  never freed: %lld blocks, %s requested, allocated during the recording and live "
           "at its end\n",
           (long long)r->s.never_freed_count, units_bytes_i64(r->s.never_freed_bytes, b1));
    print_headroom(r);
}

static void print_recommendations(const report_device *r) {
    printf("  recommendations:\n");
    for (size_t i = 0; i < r->nrecommendations; i++)
        printf("  - %s\n", r->recommendations[i].text);
    if (!r->nrecommendations)
        printf("    none: no number above calls for one\n");
}

static void print_device(const report_device *r, size_t top) {
    char b1[32], b2[32], b3[32];
    const device_summary *s = &r->s;
    printf("\ndevice %d", s->device);
    if (s->name[0])
        printf("  %s", s->name);
    if (s->total_bytes > 0)
        printf(", %s", units_bytes_i64(s->total_bytes, b1));
    printf("\n");
    if (r->history_mid_run && r->steps_before_history > 0) {
        printf("  the history begins mid-run: %lld steps (%lld..%lld) ended before its first "
               "event and are not measured",
               (long long)r->steps_before_history, (long long)r->first_step_before,
               (long long)r->last_step_before);
        if (r->history_first_step >= 0)
            printf("; it begins in step %lld", (long long)r->history_first_step);
        printf(" (how many of its entries were lost, the input does not say)\n");
    }
    printf("  peak allocated %s at %s\n", units_bytes_i64(s->peak_allocated.allocated, b1),
           r->peak_allocated_when);
    if (r->peak_phase)
        printf("    in the %s phase (no steps marked: the phase timeline's, as the categories)\n",
               r->peak_phase);
    printf("    then requested %s, reserved %s\n", units_bytes_i64(s->peak_allocated.requested, b1),
           units_bytes_i64(s->peak_allocated.reserved, b2));
    printf("  peak requested %s at %s\n", units_bytes_i64(s->peak_requested.requested, b1),
           r->peak_requested_when);
    printf("  peak reserved  %s at %s\n", units_bytes_i64(s->peak_reserved.reserved, b1),
           r->peak_reserved_when);
    printf("  reserved at the start %s, at the end %s (allocated %s)\n",
           units_bytes_i64(s->start.reserved, b1), units_bytes_i64(s->end.reserved, b2),
           units_bytes_i64(s->end.allocated, b3));
    printf("  %lld allocations, %lld frees\n", (long long)s->allocs, (long long)s->frees);
    if (r->ntop) {
        printf("  held at the peak:\n");
        for (size_t i = 0; i < r->ntop; i++) {
            printf("    %10s %5.1f %%  %6lld blocks  %s", units_bytes_i64(r->top[i].bytes, b1),
                   100.0 * r->top[i].share, (long long)r->top[i].blocks, r->top[i].label);
            if (r->top[i].freed_at_stack_id)
                printf(" (freed at %s)", r->top[i].freed_at);
            printf("\n");
        }
    }
    print_categories(r);
    print_cache(r);
    print_fragmentation(r);
    if (s->ooms) {
        printf("  %lld OOM%s:\n", (long long)s->ooms, s->ooms == 1 ? "" : "s");
        print_ooms(r);
    }
    if (s->alloc_failed) /* out of memory since fe497b9; older traces: any error */
        printf("  %lld failed driver allocation%s%s\n", (long long)s->alloc_failed,
               s->alloc_failed == 1 ? "" : "s",
               s->ooms ? ""
                       : ", none became an OOM: the program went on (PyTorch's allocator frees "
                         "its cache and retries such a call)");
    if (s->untracked_at_peak >= 0)
        printf("  untracked (driver's used - reserved: context, libraries, other processes): "
               "%s near the peak, at most %s\n",
               units_bytes_i64(s->untracked_at_peak, b1), units_bytes_i64(s->untracked_max, b2));
    print_largest(r);
    print_growth(r, top);
    print_recommendations(r);
}

/* ---- JSON ------------------------------------------------------------- */

/* `key` (the separator and "name": before the value), then the value. */
static void jstr(const char *key, const char *s) {
    fputs(key, stdout);
    json_string(stdout, s);
}
static void jtext(const char *key, const char *s) { jstr(key, *s ? s : NULL); } /* "": null */
static void jnum(const char *key, double v) {
    fputs(key, stdout);
    json_number(stdout, v);
}
static void ji64(const char *key, int64_t v, int known) {
    if (known)
        printf("%s%lld", key, (long long)v);
    else
        printf("%snull", key);
}

static void print_json_run(const report_run *r) {
    jstr("{\"input\": ", r->input);
    printf(", \"timestamps\": %s, \"allocator_settings\": %s, \"replay_warnings_total\": %lld,\n",
           r->timestamps ? "true" : "false", r->settings_json, r->warnings_total);
    jtext(" \"run\": {\"input_format\": ", r->input_format);
    jtext(", \"producer\": ", r->producer);
    jtext(", \"pid\": ", r->pid);
    jtext(", \"host\": ", r->host);
    jtext(", \"command_line\": ", r->command_line);
    printf(", \"history\": %s, \"events\": %lld, \"span_ns\": %lld, \"steps\": %lld",
           r->history ? "true" : "false", r->events, r->span_ns, r->steps);
    ji64(", \"first_step\": ", r->first_step, r->steps > 0);
    ji64(", \"last_step\": ", r->last_step, r->steps > 0);
    jtext(", \"allocator_settings_line\": ", r->have_settings ? r->settings_line : "");
    printf(", \"truncated\": %s, \"ended\": %s, \"window\": ", r->truncated ? "true" : "false",
           r->ended ? "true" : "false");
    if (r->windowed) {
        jstr("{\"from\": ", r->from_when);
        jstr(", \"to\": ", r->to_when);
        printf("}");
    } else {
        printf("null");
    }
    printf(", \"device_balance\": ");
    run_print_devices_json(stdout, &r->devices);
    printf("},\n \"from_event_id\": %lld, \"to_event_id\": %lld, \"devices\": [",
           (long long)r->from, (long long)r->to);
}

static void json_moment_fields(const char *prefix, const moment *m) {
    /* a moment of the seed (several devices: rows 1-n .. 0) is the start, event 0 */
    printf("\"%s_event_id\": %lld, \"%s_ts_ns\": %lld", prefix,
           (long long)(m->event_id > 0 ? m->event_id : 0), prefix, (long long)m->ts_ns);
}

/* What the text's fragmentation lines say beyond the three ratios. */
static void print_json_fragmentation(const report_device *r) {
    const steps_overview *o = &r->steps;
    /* the trapped ratio each rating follows (null: the raw ratio's own) */
    const double by[] = {r->frag_at_peak_by, r->frag_at_end_by, r->frag_worst_by,
                         r->frag_step_max_by};
    const char *const keys[] = {"at_peak", "at_end", "worst", "per_step_max"};
    printf("     \"fragmentation_rated_by_trapped\": {");
    for (int i = 0; i < 4; i++) {
        printf("%s\"%s\": ", i ? ", " : "", keys[i]);
        if (by[i] >= 0)
            json_number(stdout, by[i]);
        else
            printf("null");
    }
    printf("},\n");
    printf("     \"fragmentation_ratings\": {\"at_peak\": \"%s\", \"at_end\": \"%s\", "
           "\"worst\": \"%s\"}, \"fragmentation_worst_reserved_bytes\": %lld, "
           "\"fragmentation_per_step\": ",
           r->frag_at_peak_rating, r->frag_at_end_rating, r->frag_worst_rating,
           (long long)r->s.worst_fragmentation.reserved);
    if (o->count) {
        printf("{\"steps\": %zu", o->count);
        jnum(", \"min\": ", o->frag_min);
        jnum(", \"mean\": ", o->frag_mean);
        jnum(", \"max\": ", o->frag_max);
        printf(", \"max_step\": %lld, \"rating\": \"%s\"}", (long long)o->frag_max_step,
               r->frag_step_max_rating);
    } else {
        printf("null");
    }
    printf(",\n");
}

/* The trapped part at the peak and at step ends, and the end's warm cache. */
static void print_json_trapped(const report_device *r) {
    const report_trapped_steps *t = &r->trapped_steps;
    if (!r->have_split) {
        printf("     \"peak_trapped_bytes\": null, \"peak_releasable_bytes\": null, "
               "\"trapped_ratings\": null, \"end_warm_cache\": null, "
               "\"trapped_ratio_per_step\": null,\n");
        return;
    }
    printf("     \"peak_trapped_bytes\": %lld, \"peak_releasable_bytes\": %lld, "
           "\"trapped_ratings\": {\"at_peak\": \"%s\", \"at_end\": \"%s\"}, "
           "\"end_warm_cache\": %s, \"trapped_ratio_per_step\": ",
           (long long)r->split_peak.trapped, (long long)r->split_peak.releasable,
           r->trapped_at_peak_rating, r->trapped_at_end_rating,
           r->end_warm_cache ? "true" : "false");
    if (t->measured) {
        printf("{\"measured\": %zu, \"sampled_every\": %zu", t->measured, t->stride);
        jnum(", \"mean\": ", t->mean);
        jnum(", \"max\": ", t->max);
        printf(", \"max_step\": %lld, \"rating\": \"%s\"}", (long long)t->max_step, t->rating);
    } else {
        printf("null");
    }
    printf(",\n");
}

/* The OOMs with their verdicts, the largest allocations and the recommendations. */
static void print_json_lists(const report_device *r) {
    ji64("     \"untracked_max_bytes\": ", r->s.untracked_max, r->s.untracked_at_peak >= 0);
    printf(", \"oom_events\": [");
    for (size_t i = 0; i < r->nooms; i++) {
        fputs(i ? ", " : "", stdout);
        report_oom_json_write(stdout, &r->ooms[i]);
    }
    printf("],\n     \"largest_allocations\": [");
    for (size_t i = 0; i < r->nlargest; i++) {
        const report_allocation *a = &r->largest[i];
        printf("%s{\"event_id\": %lld", i ? ", " : "", (long long)a->event_id);
        jstr(", \"when\": ", a->when);
        printf(", \"bytes\": %lld, \"stack_id\": %lld", (long long)a->bytes,
               (long long)a->stack_id);
        jstr(", \"site\": ", a->site);
        printf("}");
    }
    printf("],\n     \"recommendations\": [");
    for (size_t i = 0; i < r->nrecommendations; i++) {
        printf("%s{\"kind\": \"%s\"", i ? ", " : "", r->recommendations[i].kind);
        jstr(", \"text\": ", r->recommendations[i].text);
        printf("}");
    }
    printf("],\n");
}

/* Growth, headroom, the cache, and what memory the peak held. */
static void print_json_tail(const report_device *r) {
    const device_summary *s = &r->s;
    const headroom_forecast *f = &r->forecast;
    printf("],\n     \"steps\": %zu, \"allocated_growth_per_step_bytes\": %lld", r->steps.count,
           (long long)f->growth_per_step);
    ji64(", \"device_limit_step\": ", f->limit_step, f->limit_step >= 0);
    printf(",\n     \"headroom\": {\"growth_bytes_per_step\": %lld", (long long)f->growth_per_step);
    ji64(", \"limit_step\": ", f->limit_step, f->limit_step >= 0);
    if (f->limit_seconds >= 0)
        jnum(", \"limit_seconds\": ", f->limit_seconds);
    else
        printf(", \"limit_seconds\": null");
    jstr(", \"risk\": ", f->risk);
    ji64("},\n     \"cache_allocations\": ", r->cache_allocs, r->cache_allocs >= 0);
    ji64(", \"cache_misses\": ", r->cache_misses, r->cache_allocs >= 0);
    if (r->cache_allocs > 0)
        jnum(", \"cache_hit_rate\": ", r->cache_hit_rate);
    else
        printf(", \"cache_hit_rate\": null");
    printf(", \"active_bytes_at_peak\": %lld, \"inactive_bytes_at_peak\": %lld",
           (long long)s->peak_allocated.allocated, (long long)r->inactive_at_peak);
    printf(",\n     \"categories_at_peak\": ");
    for (int c = 0; r->have_categories && c < BLOCK_CATEGORY_COUNT; c++)
        printf("%s\"%s\": %lld", c ? ", " : "{", gmt_category_name((gmt_category)c),
               (long long)r->categories[c]);
    printf("%s, \"categories_one_moment\": %s", r->have_categories ? "}" : "null",
           r->categories_one_moment ? "true" : "false");
    printf(", \"named_tensors_at_peak\": [");
    for (size_t i = 0; i < r->nnamed; i++) {
        jstr(i ? ", {\"name\": " : "{\"name\": ", r->named[i].name);
        printf(", \"category\": \"%s\", \"bytes\": %lld, \"tensors\": %lld}",
               gmt_category_name(r->named[i].category), (long long)r->named[i].bytes,
               (long long)r->named[i].tensors);
    }
    printf("]}");
}

static void print_json_device(const report_device *r, int first) {
    const device_summary *s = &r->s;
    printf("%s\n    {\"device\": %d", first ? "" : ",", s->device);
    jstr(", \"name\": ", s->name[0] ? s->name : NULL);
    ji64(", \"total_bytes\": ", s->total_bytes, s->total_bytes != 0);
    printf(",\n     \"peak_allocated_bytes\": %lld, ", (long long)s->peak_allocated.allocated);
    json_moment_fields("peak_allocated", &s->peak_allocated);
    printf(",\n     \"peak_requested_bytes\": %lld, ", (long long)s->peak_requested.requested);
    json_moment_fields("peak_requested", &s->peak_requested);
    printf(",\n     \"peak_reserved_bytes\": %lld, ", (long long)s->peak_reserved.reserved);
    json_moment_fields("peak_reserved", &s->peak_reserved);
    jstr(",\n     \"peak_allocated_phase\": ", r->peak_phase);
    printf(", \"history\": {\"mid_run\": %s", r->history_mid_run ? "true" : "false");
    ji64(", \"first_step\": ", r->history_first_step, r->history_first_step >= 0);
    printf(", \"steps_before\": %lld", (long long)r->steps_before_history);
    ji64(", \"steps_before_first\": ", r->first_step_before, r->steps_before_history > 0);
    ji64(", \"steps_before_last\": ", r->last_step_before, r->steps_before_history > 0);
    printf(", \"entries_lost\": null}");
    jstr(",\n     \"peak_allocated_when\": ", r->peak_allocated_when);
    jstr(", \"peak_requested_when\": ", r->peak_requested_when);
    jstr(", \"peak_reserved_when\": ", r->peak_reserved_when);
    printf(",\n     \"peak_allocated_requested_bytes\": %lld, "
           "\"peak_allocated_reserved_bytes\": %lld",
           (long long)s->peak_allocated.requested, (long long)s->peak_allocated.reserved);
    printf(",\n     \"start_reserved_bytes\": %lld, \"end_reserved_bytes\": %lld, "
           "\"end_allocated_bytes\": %lld,\n",
           (long long)s->start.reserved, (long long)s->end.reserved, (long long)s->end.allocated);
    printf("     \"allocs\": %lld, \"frees\": %lld, \"never_freed_count\": %lld, "
           "\"never_freed_bytes\": %lld,\n",
           (long long)s->allocs, (long long)s->frees, (long long)s->never_freed_count,
           (long long)s->never_freed_bytes);
    jnum("     \"fragmentation_at_peak\": ", r->frag_at_peak);
    jnum(", \"fragmentation_at_end\": ", r->frag_at_end);
    jnum(", \"fragmentation_worst\": ", r->frag_worst);
    printf(", \"fragmentation_worst_event_id\": %lld,\n",
           (long long)(s->worst_fragmentation.event_id > 0 ? s->worst_fragmentation.event_id : 0));
    print_json_fragmentation(r);
    printf("     \"largest_free_at_peak_bytes\": %lld, \"largest_free_at_end_bytes\": %lld,\n",
           (long long)s->peak_allocated.largest_free, (long long)s->end.largest_free);
    ji64("     \"end_trapped_bytes\": ", r->split_end.trapped, r->have_split);
    ji64(", \"end_releasable_bytes\": ", r->split_end.releasable, r->have_split);
    if (r->have_split) {
        jnum(", \"trapped_ratio_at_peak\": ", r->trapped_at_peak);
        jnum(", \"trapped_ratio_at_end\": ", r->trapped_at_end);
    } else {
        printf(", \"trapped_ratio_at_peak\": null, \"trapped_ratio_at_end\": null");
    }
    printf(",\n");
    print_json_trapped(r);
    printf("     \"replay_warnings\": %lld,\n", (long long)r->replay_warnings);
    printf("     \"ooms\": %lld, \"alloc_failed\": %lld", (long long)s->ooms,
           (long long)s->alloc_failed);
    ji64(", \"untracked_at_peak_bytes\": ", s->untracked_at_peak, s->untracked_at_peak >= 0);
    printf(",\n");
    print_json_lists(r);
    printf("     \"top_stacks_at_peak\": [");
    for (size_t i = 0; i < r->ntop; i++) {
        printf("%s{\"stack_id\": %lld", i ? ", " : "", (long long)r->top[i].stack_id);
        jstr(", \"site\": ", r->top[i].site);
        printf(", \"bytes\": %lld, \"blocks\": %lld", (long long)r->top[i].bytes,
               (long long)r->top[i].blocks);
        jstr(", \"label\": ", r->top[i].label);
        ji64(", \"freed_at_stack_id\": ", r->top[i].freed_at_stack_id,
             r->top[i].freed_at_stack_id != 0);
        if (r->top[i].freed_at_stack_id)
            jstr(", \"freed_at\": ", r->top[i].freed_at);
        else
            printf(", \"freed_at\": null");
        printf("}");
    }
    printf("],\n     \"growth_windows\": %zu, \"leaks\": [", r->windows);
    for (size_t i = 0; i < r->nleaks; i++) {
        const site_growth *g = &r->leaks[i].g;
        printf("%s{\"stack_id\": %lld", i ? ", " : "", (long long)g->stack_id);
        jstr(", \"site\": ", r->leaks[i].site);
        printf(", \"growth_bytes_per_step\": %lld", (long long)g->growth_per_step);
        jnum(", \"growth_bytes_per_min\": ", g->bytes_per_min);
        printf(", \"never_freed_count\": %lld, \"never_freed_bytes\": %lld, "
               "\"live_end_bytes\": %lld}",
               (long long)g->never_freed_count, (long long)g->never_freed_bytes,
               (long long)g->live_end);
    }
    print_json_tail(r);
}

/* ---- command ---------------------------------------------------------- */

const char report_usage[] =
    "usage: memanalyze report INPUT [--device N] [--from WHEN] [--to WHEN] [--json] [--top N]\n"
    "One screen on a run's GPU memory: peaks and what held them, fragmentation,\n"
    "OOMs, untracked memory, the largest allocations, leaks and growth, headroom.\n"
    "  INPUT         a trace, a PyTorch snapshot pickle or a memanalyze database\n";

/* --plots in text[0], --categories in text[1]; the device and the window go to report_open */
const cli_option report_options_table[] = {
    {"device", 'd', CLI_COUNT, offsetof(cli_ctx, device), 1023, NULL,
     "  --device N    only device N (default: every device)\n", NULL},
    CLI_OPT_FROM("  --from/--to   a window: step:N, event:N, time:1.5s, peak, start, end\n"),
    CLI_OPT_TO(NULL),
    CLI_OPT_TOP("  --top N       rows per list (default 5)\n"),
    CLI_OPT_JSON,
    {"plots", 'p', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --plots DIR   also draw timeline, heatmap, segments (at the peak) and\n"
     "                fragmentation as DIR/NAME-deviceN.png\n",
     NULL},
    CLI_OPT_STEP_RULE,
    {"categories", 'c', CLI_TEXT, offsetof(cli_ctx, text[1]), 0, NULL,
     "  --categories FILE  rules `REGEX CATEGORY` for memory the built-in\n"
     "                categories leave as other or unknown (one a line; first match\n"
     "                wins)\n",
     NULL},
    CLI_OPT_END};

int run_report(cli_ctx *o) {
    const char *plots_dir = o->text[0], *rules_path = o->text[1];
    const char *input = o->input;
    char err[512];
    category_rules *rules = NULL;
    if (rules_path && !(rules = category_rules_load(rules_path, err, sizeof err)))
        return cli_error("%s", err);
    sqlite3 *db;
    int status = cli_open_db(input, &o->io, &db);
    if (status) {
        category_rules_free(rules);
        return status;
    }
    report_options ro = {.input = input,
                         .device = (int)o->device,
                         .from = o->from,
                         .to = o->to,
                         .top = o->top >= 0 ? (size_t)o->top : 5,
                         .rules = rules};
    report *rep;
    if (report_open(db, &ro, &rep, err, sizeof err) != 0) { /* db closed */
        category_rules_free(rules);
        return cli_error("%s", err);
    }
    size_t ndev = report_device_count(rep);
    if (o->json)
        print_json_run(report_run_of(rep));
    else
        print_header(report_run_of(rep));
    if (*report_categories_error(rep) && !o->json)
        fprintf(stderr, "memanalyze: no categories: %s\n", report_categories_error(rep));
    for (size_t i = 0; i < ndev && status == 0; i++) {
        report_device r;
        if (report_device_read(rep, i, &r, err, sizeof err) != 0)
            status = cli_error("reading the database: %s", err);
        else if (o->json)
            print_json_device(&r, i == 0);
        else
            print_device(&r, ro.top);
        report_device_release(&r);
    }
    if (o->json && status == 0)
        printf("\n  ]}\n");
    /* An input without memory events still gets its pictures: "no data" ones for device 0. */
    size_t nplots = ndev ? ndev : 1;
    for (size_t i = 0; plots_dir && i < nplots && status == 0; i++) {
        char perr[512];
        if (mkdir(plots_dir, 0755) != 0 && errno != EEXIST)
            status = cli_error("cannot create %s: %s", plots_dir, strerror(errno));
        else if (picture_write_all(db, input, ndev ? report_device_id(rep, i) : 0, plots_dir, perr,
                                   sizeof perr))
            status = cli_error("%s", perr);
    }
    if (!ndev && !o->json)
        printf("\nno device memory events in this input\n");
    report_close(rep);
    category_rules_free(rules);
    return status;
}
