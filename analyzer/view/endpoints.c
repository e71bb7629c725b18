/* endpoints.c — the viewer's JSON answers (endpoints.h): each parses its arguments, asks
 * query/'s facts and prints them with the key names the command line's --json uses for the same
 * facts (report's run and device keys, segments' and steps' whole documents through
 * fact_json.h), so the page and a script read one vocabulary. No SQL here: the facts layer has
 * it (tests/test_layers.py holds view/ to zero sqlite3_ calls). */
#include "endpoints.h"

#include "analysis.h"
#include "block_detail.h"
#include "category_store.h"
#include "diff.h"
#include "fact_json.h"
#include "json_out.h"
#include "layout.h"
#include "report.h"
#include "stack_names.h"
#include "step_table.h"
#include "view_blocks.h"
#include "view_marks.h"
#include "view_stacks.h"
#include "view_timeline.h"
#include "when.h"

#include "gmt_vocab.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `key` (the separator and "name": before the value), then the value. */
static void jstr(FILE *out, const char *key, const char *s) {
    fputs(key, out);
    json_string(out, s);
}
static void jtext(FILE *out, const char *key, const char *s) { jstr(out, key, *s ? s : NULL); }
static void ji64(FILE *out, const char *key, int64_t v, int known) {
    if (known)
        fprintf(out, "%s%" PRId64, key, v);
    else
        fprintf(out, "%snull", key);
}
static const char *truth(int v) { return v ? "true" : "false"; }

/* An integer argument in [lo, hi]: 0 (absent: *v untouched), or 400 with the message. */
static int int_arg(const view_request *rq, const char *name, int64_t lo, int64_t hi, int64_t *v,
                   char *err, size_t errlen) {
    const char *text = view_request_arg(rq, name);
    if (!text)
        return 0;
    char *end;
    errno = 0;
    long long n = strtoll(text, &end, 10);
    if (end == text || *end || errno || n < lo || n > hi) {
        snprintf(err, errlen, "bad %s '%.64s': a number from %" PRId64 " to %" PRId64, name, text,
                 lo, hi);
        return 400;
    }
    *v = n;
    return 0;
}

/* ?device=D (a device with events: else 404), or the one with the highest peak. */
static int device_arg(sqlite3 *db, const view_request *rq, int *device, char *err, size_t errlen) {
    int64_t d = -1;
    int rc = int_arg(rq, "device", 0, GMT_MAX_DEVICES - 1, &d, err, errlen);
    if (rc)
        return rc;
    if (d < 0) {
        *device = when_default_device(db);
        return 0;
    }
    if (!when_device_answers(db, (int)d)) {
        snprintf(err, errlen, "no device %d", (int)d);
        return 404;
    }
    *device = (int)d;
    return 0;
}

/* ---- /api/summary --------------------------------------------------------------------- */

static void moment_fields(FILE *out, const char *prefix, const moment *m) {
    /* a moment of the seed is the start, event 0 (as report says it) */
    fprintf(out, "\"%s_event_id\": %" PRId64 ", \"%s_ts_ns\": %" PRId64, prefix,
            m->event_id > 0 ? m->event_id : 0, prefix, m->ts_ns);
}

static void summary_run(FILE *out, const report_run *r, int64_t last_event, size_t inputs) {
    jstr(out, "{\"input\": ", r->input);
    fprintf(out, ", \"inputs\": %zu", inputs); /* the page asks /api/inputs only for several */
    fprintf(out,
            ", \"timestamps\": %s, \"allocator_settings\": %s, \"replay_warnings_total\": %lld",
            truth(r->timestamps), r->settings_json, r->warnings_total);
    jtext(out, ",\n \"run\": {\"input_format\": ", r->input_format);
    jtext(out, ", \"producer\": ", r->producer);
    jtext(out, ", \"pid\": ", r->pid);
    jtext(out, ", \"host\": ", r->host);
    jtext(out, ", \"command_line\": ", r->command_line);
    fprintf(out, ", \"history\": %s, \"events\": %lld, \"span_ns\": %lld, \"steps\": %lld",
            truth(r->history), r->events, r->span_ns, r->steps);
    ji64(out, ", \"first_step\": ", r->first_step, r->steps > 0);
    ji64(out, ", \"last_step\": ", r->last_step, r->steps > 0);
    jtext(out, ", \"allocator_settings_line\": ", r->have_settings ? r->settings_line : "");
    fprintf(out, ", \"truncated\": %s, \"ended\": %s},\n \"end_event_id\": %" PRId64,
            truth(r->truncated), truth(r->ended), last_event);
}

static void summary_device(FILE *out, sqlite3 *db, const device_summary *s, int first) {
    char when[96];
    fprintf(out, "%s\n  {\"device\": %d", first ? "" : ",", s->device);
    jstr(out, ", \"name\": ", s->name[0] ? s->name : NULL);
    ji64(out, ", \"total_bytes\": ", s->total_bytes, s->total_bytes != 0);
    const struct {
        const char *name;
        const moment *m;
        int64_t bytes;
    } peaks[] = {{"peak_allocated", &s->peak_allocated, s->peak_allocated.allocated},
                 {"peak_requested", &s->peak_requested, s->peak_requested.requested},
                 {"peak_reserved", &s->peak_reserved, s->peak_reserved.reserved}};
    for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++) {
        fprintf(out, ",\n   \"%s_bytes\": %" PRId64 ", ", peaks[i].name, peaks[i].bytes);
        moment_fields(out, peaks[i].name, peaks[i].m);
        when_describe(db, peaks[i].m->event_id, when, sizeof when);
        fprintf(out, ", \"%s_when\": ", peaks[i].name);
        json_string(out, when);
    }
    fprintf(out,
            ",\n   \"peak_allocated_requested_bytes\": %" PRId64
            ", \"peak_allocated_reserved_bytes\": %" PRId64,
            s->peak_allocated.requested, s->peak_allocated.reserved);
    fprintf(out,
            ",\n   \"start_reserved_bytes\": %" PRId64 ", \"end_reserved_bytes\": %" PRId64
            ", \"end_allocated_bytes\": %" PRId64 ", \"largest_free_at_end_bytes\": %" PRId64,
            s->start.reserved, s->end.reserved, s->end.allocated, s->end.largest_free);
    fprintf(out,
            ",\n   \"allocs\": %" PRId64 ", \"frees\": %" PRId64 ", \"never_freed_count\": %" PRId64
            ", \"never_freed_bytes\": %" PRId64 ", \"ooms\": %" PRId64
            ", \"alloc_failed\": %" PRId64 "}",
            s->allocs, s->frees, s->never_freed_count, s->never_freed_bytes, s->ooms,
            s->alloc_failed);
}

int view_api_summary(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen) {
    report_run run;
    report_run_read(db, view_request_input(rq), &run);
    int devices[GMT_MAX_DEVICES];
    int n = analysis_devices(db, devices, GMT_MAX_DEVICES);
    summary_run(out, &run, run.to, view_request_input_count(rq));
    fputs(",\n \"devices\": [", out);
    for (int i = 0; i < n; i++) {
        device_summary s;
        if (analysis_device_summary_brief(db, devices[i], run.from, run.to, &s) != 0) {
            snprintf(err, errlen, "device %d: its summary could not be read", devices[i]);
            return 500;
        }
        summary_device(out, db, &s, i == 0);
    }
    fputs("]}\n", out);
    return 200;
}

/* ---- /api/steps, /api/segments -------------------------------------------------------- */

int view_api_steps(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen) {
    int device, rc = device_arg(db, rq, &device, err, errlen);
    if (rc)
        return rc;
    int64_t first = 0, count = INT64_MAX; /* a part of the rows: first=K&count=N */
    if ((rc = int_arg(rq, "first", 0, INT64_MAX, &first, err, errlen)) ||
        (rc = int_arg(rq, "count", 0, INT64_MAX, &count, err, errlen)))
        return rc;
    json_slice part = {.first = (size_t)first, .count = (size_t)count};
    const step_row *rows;
    size_t n;
    const step_history *h;
    int sliced = view_request_arg(rq, "first") || view_request_arg(rq, "count"), held = 0;
    if (sliced && !(held = view_step_table_held(db, device, &rows, &n, &h))) {
        step_row *some; /* only the rows asked for: no pass over the whole run */
        size_t got, total;
        step_history history;
        step_order order; /* the first page's rows need none of it (the start's memos) */
        if (part.first > 0 && (rc = view_step_order(db, device, &order, err, errlen)) != 0)
            return rc;
        int part_rc =
            step_table_part(db, device, part.first, part.count, part.first > 0 ? &order : NULL,
                            &some, &got, &total, &history, err, errlen);
        if (part_rc < 0)
            return 500;
        if (part.first > 0)
            view_step_order_keep(db, device, &order);
        if (part_rc == 0) {
            step_table_json_write_rows(out, device, some, got, total,
                                       part.first < total ? part.first : total, &history, 1);
            free(some);
            return 200;
        } /* implicit steps: the whole table, kept by the thread */
    }
    if (!held && (rc = view_step_table(db, device, &rows, &n, &h, err, errlen)) != 0)
        return rc;
    step_table_json_write(out, device, rows, n, h, &part);
    return 200;
}

/* The device and the moment `at` (a WHEN, default the end) a segment map is asked for: 0, or
 * the status with the message in err. */
static int device_and_moment(sqlite3 *db, const view_request *rq, int *device, const char **when,
                             int64_t *at, char *err, size_t errlen) {
    int rc = device_arg(db, rq, device, err, errlen);
    if (rc)
        return rc;
    *when = view_request_arg(rq, "at");
    if (!*when || !**when)
        *when = "end";
    return when_resolve(db, *when, *device, at, err, errlen) != 0 ? 400 : 0;
}

int view_api_segments(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen) {
    int device;
    const char *when;
    int64_t at;
    int rc = device_and_moment(db, rq, &device, &when, &at, err, errlen);
    if (rc)
        return rc;
    /* frames=1 for the blocks' frames too; first/count: a slice of the segments */
    int64_t frames = 0, first = 0, count = INT64_MAX;
    if ((rc = int_arg(rq, "frames", 0, 1, &frames, err, errlen)) ||
        (rc = int_arg(rq, "first", 0, INT64_MAX, &first, err, errlen)) ||
        (rc = int_arg(rq, "count", 0, INT64_MAX, &count, err, errlen)))
        return rc;
    layout_json_options o = {.no_frames = !frames,
                             .slice = {.first = (size_t)first, .count = (size_t)count}};
    layout *l = NULL;
    if (layout_build(db, device, at, &l, err, errlen) != 0)
        return 500;
    stack_names *stacks = stack_names_new(db);
    if (!stacks) {
        layout_free(l);
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    char described[128];
    when_describe(db, at, described, sizeof described);
    layout_json_write(out, l, when, described, stacks, &o);
    stack_names_free(stacks);
    layout_free(l);
    return 200;
}

int view_api_segment_series(sqlite3 *db, const view_request *rq, FILE *out, char *err,
                            size_t errlen) {
    int device;
    const char *when;
    int64_t at;
    int rc = device_and_moment(db, rq, &device, &when, &at, err, errlen);
    if (rc)
        return rc;
    const char *word = view_request_arg(rq, "by");
    view_stack_by by;
    if (!word || view_stack_by_parse(word, &by) != 0) {
        snprintf(err, errlen, "bad by '%.32s': site, category, stream or size", word ? word : "");
        return 400;
    }
    int64_t first = 0, count = INT64_MAX;
    if ((rc = int_arg(rq, "first", 0, INT64_MAX, &first, err, errlen)) ||
        (rc = int_arg(rq, "count", 0, INT64_MAX, &count, err, errlen)))
        return rc;
    json_slice part = {.first = (size_t)first, .count = (size_t)count};
    sqlite3_stmt *categories = NULL;
    if (by == STACK_BY_CATEGORY && category_blocks_stored(db) &&
        !(categories = category_stored_statement(db))) {
        snprintf(err, errlen, "the block categories could not be read");
        return 500;
    }
    layout *l = NULL;
    if (layout_build(db, device, at, &l, err, errlen) != 0) {
        category_stored_done(categories);
        return 500;
    }
    layout_series_json_write(out, l, by, categories, &part);
    category_stored_done(categories);
    layout_free(l);
    return 200;
}

/* ---- /api/timeline, /api/allocations ---------------------------------------------------- */

/* The most blocks one /api/allocations answers (~80 bytes each) and buckets one /api/timeline
 * answers (~80 bytes each): well under the response cap. */
enum { VIEW_API_MAX_BLOCKS = 2000, VIEW_API_MAX_BUCKETS = 2000 };
/* The most steps one /api/marks answers (~30 bytes each; every k-th beyond) and NVTX ranges
 * (at most ~260 bytes each, names cut: the outermost, then the longest kept): with 1000 OOMs
 * (~80 bytes each) well under the response cap. */
enum { VIEW_API_MAX_STEP_MARKS = 2000, VIEW_API_MAX_RANGE_MARKS = 300 };

int view_devices(sqlite3 *db, int *devices, int max) { return analysis_devices(db, devices, max); }

int view_default_device(sqlite3 *db) { return when_default_device(db); }

/* A list of one column of the buckets: `, "NAME": [v, v, ...]`. */
static void bucket_column(FILE *out, const char *name, const view_timeline_result *t,
                          size_t offset) {
    fprintf(out, ",\n \"%s\": [", name);
    for (size_t i = 0; i < t->n; i++) {
        int64_t v;
        memcpy(&v, (const char *)&t->buckets[i] + offset, sizeof v);
        fprintf(out, "%s%" PRId64, i ? "," : "", v);
    }
    fputc(']', out);
}

int view_api_timeline(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen) {
    int device, rc = device_arg(db, rq, &device, err, errlen);
    if (rc)
        return rc;
    int event_axis;
    int64_t end, lo = 0, hi = -1, n = 1000;
    if (view_timeline_axis(db, &event_axis, &end, err, errlen) != 0)
        return 500;
    hi = end > 0 ? end : 1;
    if ((rc = int_arg(rq, "lo", INT64_MIN / 4, INT64_MAX / 4, &lo, err, errlen)) ||
        (rc = int_arg(rq, "hi", INT64_MIN / 4, INT64_MAX / 4, &hi, err, errlen)) ||
        (rc = int_arg(rq, "n", 1, VIEW_API_MAX_BUCKETS, &n, err, errlen)))
        return rc;
    if (hi <= lo) {
        snprintf(err, errlen, "the window is empty: hi (%" PRId64 ") <= lo (%" PRId64 ")", hi, lo);
        return 400;
    }
    view_timeline_result t;
    if (view_timeline(db, device, lo, hi, (size_t)n, &t, err, errlen) != 0)
        return 500;
    fprintf(out,
            "{\"device\": %d, \"axis\": \"%s\", \"axis_end\": %" PRId64 ", \"lo\": %" PRId64
            ", \"hi\": %" PRId64 ",\n \"start\": %" PRId64 ", \"width\": %" PRId64
            ", \"n\": %zu, \"first_known\": %zu, \"max_allocated_bytes\": %" PRId64
            ", \"max_reserved_bytes\": %" PRId64 ", \"level_width\": %" PRId64
            ", \"events_read\": %" PRId64,
            device, t.event_axis ? "event" : "time", end, lo, hi, t.start, t.width, t.n,
            t.first_known, t.max_allocated, t.max_reserved, t.level_width, t.events_read);
    static const struct {
        const char *name;
        size_t offset;
    } cols[] = {{"events", offsetof(view_bucket, events)},
                {"min_allocated", offsetof(view_bucket, min_allocated)},
                {"max_allocated", offsetof(view_bucket, max_allocated)},
                {"last_allocated", offsetof(view_bucket, last_allocated)},
                {"min_reserved", offsetof(view_bucket, min_reserved)},
                {"max_reserved", offsetof(view_bucket, max_reserved)},
                {"last_reserved", offsetof(view_bucket, last_reserved)}};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        bucket_column(out, cols[i].name, &t, cols[i].offset);
    fputs("}\n", out);
    view_timeline_free(&t);
    return 200;
}

/* ---- /api/stacks ---------------------------------------------------------------------- */

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t r = a % b;
        a = b, b = r;
    }
    return a;
}

static size_t digits(int64_t v) {
    size_t d = v < 0 ? 2 : 1;
    for (uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v; u >= 10; u /= 10)
        d++;
    return d;
}

/* The bytes the answer's arrays take, printed in `unit`s (within a few bytes). */
static size_t stacks_size(const view_stacks_result *r, int64_t unit) {
    size_t n = r->timeline.n, sc = r->series_count, total = 512 + 3 * n;
    for (size_t k = 0; k < sc; k++)
        total += strlen(r->series[k].label) * 6 + 96; /* a label escaped at worst */
    for (size_t i = 0; i < n; i++) {
        total += digits(r->at_event[i]) + 1;
        for (size_t k = 0; k < sc; k++)
            total += digits(r->values[i * sc + k] / unit) + 1;
    }
    return total;
}

/* /api/stacks' answers stay under this (the cap is 256 KiB): the smallest series are folded
 * into "others" until it fits, the buckets' sums unchanged ("folded" says how many). */
enum { VIEW_API_STACKS_BUDGET = 240 * 1024 };

int view_api_stacks(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen) {
    int device, rc = device_arg(db, rq, &device, err, errlen);
    if (rc)
        return rc;
    int event_axis;
    int64_t end, lo = 0, hi = -1, n = 1000, top = VIEW_STACKS_MAX_SERIES;
    if (view_timeline_axis(db, &event_axis, &end, err, errlen) != 0)
        return 500;
    hi = end > 0 ? end : 1;
    if ((rc = int_arg(rq, "lo", INT64_MIN / 4, INT64_MAX / 4, &lo, err, errlen)) ||
        (rc = int_arg(rq, "hi", INT64_MIN / 4, INT64_MAX / 4, &hi, err, errlen)) ||
        (rc = int_arg(rq, "n", 1, VIEW_API_MAX_BUCKETS, &n, err, errlen)) ||
        (rc = int_arg(rq, "top", 1, VIEW_STACKS_MAX_SERIES, &top, err, errlen)))
        return rc;
    if (hi <= lo) {
        snprintf(err, errlen, "the window is empty: hi (%" PRId64 ") <= lo (%" PRId64 ")", hi, lo);
        return 400;
    }
    const char *word = view_request_arg(rq, "by");
    view_stack_by by;
    if (!word || view_stack_by_parse(word, &by) != 0) {
        snprintf(err, errlen, "bad by '%.32s': site, category, stream or size", word ? word : "");
        return 400;
    }
    view_stacks_result r;
    if (view_stacks(db, device, lo, hi, (size_t)n, by, (size_t)top, 0, &r, err, errlen) != 0)
        return by == STACK_BY_CATEGORY && strstr(err, "no block categories") ? 404 : 500;
    const view_timeline_result *t = &r.timeline;
    /* the values in `unit` bytes (their greatest common divisor: 512 for PyTorch's blocks), so
     * 2001 buckets of 13 series stay well under the response cap */
    int64_t unit = 0;
    for (size_t i = 0; i < t->n * r.series_count; i++)
        unit = gcd64(r.values[i], unit);
    unit = unit > 0 ? unit : 1;
    size_t folded = 0;
    while (!r.refused && stacks_size(&r, unit) > VIEW_API_STACKS_BUDGET &&
           view_stacks_fold_last(&r) == 0)
        folded++;
    fprintf(out,
            "{\"device\": %d, \"by\": \"%s\", \"axis\": \"%s\", \"lo\": %" PRId64
            ", \"hi\": %" PRId64 ",\n \"start\": %" PRId64 ", \"width\": %" PRId64
            ", \"n\": %zu, \"first_known\": %zu, \"refused\": %s, \"rows_needed\": %" PRId64
            ", \"rows_limit\": %" PRId64 ", \"rows_read\": %" PRId64 ", \"unit\": %" PRId64
            ", \"folded\": %zu, \"source\": \"%s\", \"inexact_bytes\": %" PRId64
            ",\n \"series\": [",
            device, view_stack_by_name(by), t->event_axis ? "event" : "time", lo, hi, t->start,
            t->width, t->n, t->first_known, truth(r.refused), r.rows_needed, VIEW_STACKS_MAX_ROWS,
            r.rows_read, unit, folded,
            r.from_levels == 2 ? "deltas"
            : r.from_levels    ? "levels"
                               : "events",
            r.inexact_bytes);
    for (size_t k = 0; k < r.series_count; k++) {
        const view_stack_series *se = &r.series[k];
        fprintf(out, "%s\n  {\"key\": %" PRId64, k ? "," : "", se->key);
        jstr(out, ", \"label\": ", se->label);
        if (se->colour || by == STACK_BY_CATEGORY)
            fprintf(out, ", \"colour\": \"#%06x\"", se->colour);
        fprintf(out, ", \"max_bytes\": %" PRId64 "}", se->max_bytes);
    }
    fputs("],\n \"at_event\": [", out);
    for (size_t i = 0; !r.refused && i < t->n; i++)
        fprintf(out, "%s%" PRId64, i ? "," : "", r.at_event[i]);
    fputs("],\n \"values\": [", out);
    for (size_t i = 0; !r.refused && i < t->n; i++) {
        fputs(i ? ",[" : "[", out);
        for (size_t k = 0; k < r.series_count; k++)
            fprintf(out, "%s%" PRId64, k ? "," : "", r.values[i * r.series_count + k] / unit);
        fputc(']', out);
    }
    fputs("]}\n", out);
    view_stacks_free(&r);
    return 200;
}

int view_api_allocations(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen) {
    int device, rc = device_arg(db, rq, &device, err, errlen);
    if (rc)
        return rc;
    int event_axis;
    int64_t end, t0 = 0, t1, k = 500;
    if (view_timeline_axis(db, &event_axis, &end, err, errlen) != 0)
        return 500;
    t1 = end > 0 ? end : 1;
    if ((rc = int_arg(rq, "t0", INT64_MIN / 4, INT64_MAX / 4, &t0, err, errlen)) ||
        (rc = int_arg(rq, "t1", INT64_MIN / 4, INT64_MAX / 4, &t1, err, errlen)) ||
        (rc = int_arg(rq, "k", 0, VIEW_API_MAX_BLOCKS, &k, err, errlen)))
        return rc;
    if (t1 <= t0) {
        snprintf(err, errlen, "the window is empty: t1 (%" PRId64 ") <= t0 (%" PRId64 ")", t1, t0);
        return 400;
    }
    int status;
    view_blocks_index *ix = view_request_blocks(rq, &status, err, errlen);
    if (!ix && status == 503 && view_request_arg(rq, "building")) {
        /* the page's way of asking: a browser logs every 503 as an error, so it is told in a
         * 200 that the index is being built, and asks again */
        fprintf(out, "{\"device\": %d, \"building\": true}\n", device);
        return 200;
    }
    if (!ix)
        return status;
    view_blocks_result r;
    if (view_blocks(ix, device, t0, t1, (size_t)k, &r, err, errlen) != 0)
        return 500;
    fprintf(out,
            "{\"device\": %d, \"axis\": \"%s\", \"t0\": %" PRId64 ", \"t1\": %" PRId64
            ", \"k\": %" PRId64 ", \"window_blocks\": %" PRId64 ", \"window_bytes\": %" PRId64
            ", \"rest_blocks\": %" PRId64 ", \"rest_bytes\": %" PRId64 ",\n \"blocks\": [",
            device, event_axis ? "event" : "time", t0, t1, k, r.window_blocks, r.window_bytes,
            r.rest_blocks, r.rest_bytes);
    for (size_t i = 0; i < r.n; i++) {
        const view_block *b = &r.blocks[i];
        fprintf(out, "%s\n  [%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",",
                i ? "," : "", b->alloc_id, b->addr, b->size, b->requested, b->alloc_ts);
        if (b->free_ts == VIEW_BLOCK_LIVE)
            fputs("null", out);
        else
            fprintf(out, "%" PRId64, b->free_ts);
        fprintf(out, ",%" PRId64 ",%" PRId64 ",%" PRId64 "]", b->stream, b->segment_id,
                b->stack_id);
    }
    fputs("],\n \"columns\": [\"alloc_id\", \"address\", \"size\", \"requested_size\", "
          "\"alloc_t\", \"free_t\", \"stream\", \"segment_id\", \"stack_id\"]}\n",
          out);
    view_blocks_free(&r);
    return 200;
}

int view_api_marks(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen) {
    int device, rc = device_arg(db, rq, &device, err, errlen);
    if (rc)
        return rc;
    int event_axis;
    int64_t end, lo = 0, hi, ooms = 1;
    if (view_timeline_axis(db, &event_axis, &end, err, errlen) != 0)
        return 500;
    hi = end > 0 ? end : 1;
    if ((rc = int_arg(rq, "lo", INT64_MIN / 4, INT64_MAX / 4, &lo, err, errlen)) ||
        (rc = int_arg(rq, "hi", INT64_MIN / 4, INT64_MAX / 4, &hi, err, errlen)) ||
        (rc = int_arg(rq, "ooms", 0, 1, &ooms, err, errlen)))
        return rc;
    if (hi <= lo) {
        snprintf(err, errlen, "the window is empty: hi (%" PRId64 ") <= lo (%" PRId64 ")", hi, lo);
        return 400;
    }
    const view_ranges_index *ranges;
    if ((rc = view_ranges(db, event_axis, &ranges, err, errlen)) != 0)
        return rc;
    view_marks_result m;
    if (view_marks(db, device, event_axis, lo, hi, VIEW_API_MAX_STEP_MARKS, ranges,
                   VIEW_API_MAX_RANGE_MARKS, (int)ooms, &m, err, errlen) != 0)
        return 500;
    fprintf(out,
            "{\"device\": %d, \"axis\": \"%s\", \"lo\": %" PRId64 ", \"hi\": %" PRId64
            ", \"ooms_total\": %" PRId64 ", \"steps_total\": %" PRId64 ", \"step_stride\": %" PRId64
            ",\n \"steps\": [",
            device, event_axis ? "event" : "time", lo, hi, m.ooms_total, m.steps_total,
            m.step_stride);
    for (size_t i = 0; i < m.nsteps; i++) { /* [step, begin, end or null] */
        const view_step_mark *s = &m.steps[i];
        fprintf(out, "%s[%" PRId64 ",%" PRId64 ",", i ? "," : "", s->step, s->begin);
        ji64(out, "", s->end, s->end >= 0);
        fputc(']', out);
    }
    fprintf(out,
            "],\n \"ranges_total\": %" PRId64 ", \"ranges_depth\": %d, \"range_columns\": "
            "[\"begin\", \"end\", \"depth\", \"name\", \"domain\", \"tid\", \"open\"],\n "
            "\"ranges\": [",
            m.ranges_total, m.ranges_depth);
    for (size_t i = 0; i < m.nranges; i++) {
        const view_range_mark *r = &m.ranges[i];
        fprintf(out, "%s[%" PRId64 ",%" PRId64 ",%d,", i ? "," : "", r->begin, r->end, r->depth);
        json_string(out, r->name);
        fputc(',', out);
        json_string(out, r->domain);
        ji64(out, ",", r->tid, r->tid >= 0);
        fprintf(out, ",%d]", r->open);
    }
    fputs("],\n \"ooms\": [", out);
    for (size_t i = 0; i < m.nooms; i++) {
        const view_oom_mark *o = &m.ooms[i];
        fprintf(out,
                "%s{\"event_id\": %" PRId64 ", \"at\": %" PRId64 ", \"size\": %" PRId64
                ", \"op\": \"%s\"}",
                i ? ", " : "", o->event_id, o->at, o->size, o->driver ? "alloc_failed" : "oom");
    }
    fputs("]}\n", out);
    view_marks_free(&m);
    return 200;
}

/* ---- /api/block ----------------------------------------------------------------------- */

/* `, "PREFIX_stack_id": N, "PREFIX_site": "...", "PREFIX_frames": [...]` (null without one). */
static void stack_fields(FILE *out, stack_names *stacks, const char *prefix, int64_t stack_id) {
    const named_stack *s = stack_id ? stack_names_get(stacks, stack_id) : NULL;
    fprintf(out, ", \"%s_stack_id\": ", prefix);
    if (!stack_id) {
        fprintf(out, "null, \"%s_site\": null, \"%s_frames\": []", prefix, prefix);
        return;
    }
    fprintf(out, "%" PRId64 ", \"%s_site\": ", stack_id, prefix);
    json_string(out, s ? s->site : NULL);
    fprintf(out, ", \"%s_frames\": ", prefix);
    stack_json_frames(out, s);
}

int view_api_block(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen) {
    int64_t id = 0;
    int rc = int_arg(rq, "id", INT64_MIN + 1, INT64_MAX, &id, err, errlen);
    if (rc)
        return rc;
    if (!view_request_arg(rq, "id")) {
        snprintf(err, errlen, "id=ALLOC_ID is needed (allocations.alloc_id)");
        return 400;
    }
    block_detail b;
    rc = block_detail_read(db, id, &b, err, errlen);
    if (rc < 0)
        return 500;
    if (rc > 0) {
        snprintf(err, errlen, "no allocation %" PRId64, id);
        return 404;
    }
    stack_names *stacks = stack_names_new(db);
    if (!stacks) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    char when[96];
    fprintf(out, "{\"alloc_id\": %" PRId64 ", \"device\": %d", b.alloc_id, b.device);
    jtext(out, ", \"kind\": ", b.kind);
    fprintf(out, ", \"address\": %" PRIu64 ", \"size\": %" PRId64, b.addr, b.size);
    ji64(out, ", \"requested_size\": ", b.requested, b.requested >= 0);
    ji64(out, ", \"stream\": ", (int64_t)b.stream, b.have_stream);
    ji64(out, ", \"segment_id\": ", b.segment_id, b.segment_id != 0);
    /* a seeded block (id < 0) was live before the recording began: no alloc event */
    ji64(out, ",\n \"alloc_event_id\": ", b.alloc_id, b.alloc_id > 0);
    fprintf(out, ", \"alloc_ts_ns\": %" PRId64, b.alloc_ts_ns);
    when_describe(db, b.alloc_id > 0 ? b.alloc_id : 0, when, sizeof when);
    jstr(out, ", \"alloc_when\": ", when);
    ji64(out, ", \"alloc_step\": ", b.alloc_step, b.alloc_step >= 0);
    ji64(out, ",\n \"free_event_id\": ", b.free_event_id, b.free_event_id != 0);
    ji64(out, ", \"free_ts_ns\": ", b.free_ts_ns, b.free_event_id != 0);
    if (b.free_event_id) {
        when_describe(db, b.free_event_id, when, sizeof when);
        jstr(out, ", \"free_when\": ", when);
    } else {
        fputs(", \"free_when\": null", out);
    }
    ji64(out, ", \"free_step\": ", b.free_step, b.free_step >= 0);
    ji64(out, ", \"free_requested_ts_ns\": ", b.free_requested_ts_ns, b.free_requested_ts_ns >= 0);
    jtext(out, ",\n \"category\": ", b.category);
    jtext(out, ", \"tensor_name\": ", b.tensor_name);
    stack_fields(out, stacks, "alloc", b.alloc_stack_id);
    stack_fields(out, stacks, "free", b.free_stack_id);
    fputs("}\n", out);
    stack_names_free(stacks);
    return 200;
}
