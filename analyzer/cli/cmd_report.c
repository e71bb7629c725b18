/* cmd_report.c — `memanalyze report INPUT`: one screen that answers what
 * people ask about a run's GPU memory — the peak and what held it,
 * fragmentation, OOMs, untracked memory, the largest allocations, leaks and
 * growth, and the headroom left — per device, text or JSON.
 *
 * The numbers come from analysis.c; this file only chooses what to say and
 * says it. A recommendation is printed only when a number supports it. */
#include "analysis.h"
#include "block_sweep.h"
#include "categories.h"
#include "category_store.h"
#include "cli.h"
#include "commands.h"
#include "free_split.h"
#include "gmt_vocab.h"
#include "json_out.h"
#include "layout.h"
#include "stack_names.h"
#include "step_stream.h"
#include "tensor_table.h"
#include "units.h"
#include "when.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_OOM_LINES 10    /* OOMs described one by one */
#define MAX_SPLIT_STEPS 128 /* step ends whose trapped part is measured (a layout each) */

typedef struct device_report {
    device_summary s;
    stack_bytes *top; /* at the peak */
    size_t ntop;
    site_growth *growth;
    size_t ngrowth, windows;
    steps_overview steps;    /* count and fragmentation at step ends: one pass, no array */
    int64_t growth_per_step; /* allocated at step ends, median change */
    int64_t limit_step;      /* step at which the trend reaches the device: -1 none */
    headroom_forecast forecast;
    int64_t cache_allocs, cache_misses; /* PyTorch's block allocations; after new memory */
    /* the free part of reserved, releasable vs trapped (free_split.h) */
    int have_split;
    free_split split_peak, split_end;
    free_split split_steps[MAX_SPLIT_STEPS]; /* at every split_stride-th step's end */
    int64_t split_step_numbers[MAX_SPLIT_STEPS];
    size_t nsplit_steps, split_stride;
    free_split split_oom[MAX_OOM_LINES];
    int64_t oom_ids[MAX_OOM_LINES];
    size_t nooms_listed;
    int have_categories; /* the sweep ran: categories and named tensors at the peak */
    int64_t categories[BLOCK_CATEGORY_COUNT];
    tensor_row *named; /* the largest named tensors live at the peak */
    size_t nnamed;
} device_report;

static void site(sqlite3 *db, int64_t stack, char *buf, size_t len) {
    stack_label(db, stack, buf, len);
}

/* The steps, the trend of allocated bytes at their ends, and where it leads. 0, or -1 (the
 * steps could not be read). */
static int headroom(sqlite3 *db, int64_t from, int64_t to, device_report *r) {
    if (analysis_forecast(db, &r->s, from, to, &r->forecast, &r->steps) != 0)
        return -1;
    r->growth_per_step = r->forecast.growth_per_step;
    r->limit_step = r->forecast.limit_step;
    r->cache_allocs = r->cache_misses = -1; /* the counters are the whole run's */
    if (from > 0 || to < analysis_last_event(db))
        return 0;
    sqlite3_stmt *st =
        db_statement(db, "SELECT cache_allocs, cache_misses FROM devices WHERE device = ?1");
    if (st) {
        sqlite3_bind_int(st, 1, r->s.device);
        if (sqlite3_step(st) == SQLITE_ROW) {
            r->cache_allocs = db_column_i64(st, 0, 0);
            r->cache_misses = db_column_i64(st, 1, 0);
        }
    }
    sqlite3_finalize(st);
    return 0;
}

/* The OOM events of the window, the first MAX_OOM_LINES. */
static void list_ooms(sqlite3 *db, int64_t from, int64_t to, device_report *r) {
    if (r->s.ooms <= 0)
        return; /* the summary counted none: no scan of the events for them */
    sqlite3_stmt *st = db_statement(db, "SELECT event_id FROM event_rows WHERE device = ? AND "
                                        "op = {op:oom} AND event_id > ? AND event_id <= ? "
                                        "ORDER BY event_id LIMIT ?");
    if (!st)
        return;
    sqlite3_bind_int(st, 1, r->s.device);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    sqlite3_bind_int(st, 4, MAX_OOM_LINES);
    while (r->nooms_listed < MAX_OOM_LINES && sqlite3_step(st) == SQLITE_ROW)
        r->oom_ids[r->nooms_listed++] = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
}

/* Releasable and trapped at the peak, the end, each step's end and each OOM:
 * one pass over the events (layouts). Without it the report still stands. */
static void splits(sqlite3 *db, int64_t from, int64_t to, device_report *r) {
    list_ooms(db, from, to, r);
    /* a layout per point: at most MAX_SPLIT_STEPS step ends, evenly spread */
    size_t nsteps = r->steps.count;
    r->split_stride =
        nsteps > MAX_SPLIT_STEPS ? (nsteps + MAX_SPLIT_STEPS - 1) / MAX_SPLIT_STEPS : 1;
    step_state sample[MAX_SPLIT_STEPS];
    size_t m = 0;
    if (steps_sample(db, r->s.device, from, to, r->split_stride, sample, MAX_SPLIT_STEPS, &m) != 0)
        m = 0; /* the peak and the end still get theirs */
    enum { N = 2 + MAX_SPLIT_STEPS + MAX_OOM_LINES };
    int64_t ids[N];
    free_split out[N];
    size_t n = 2 + m + r->nooms_listed;
    ids[0] = r->s.peak_allocated.event_id;
    ids[1] = r->s.end.event_id;
    for (size_t k = 0; k < m; k++) {
        ids[2 + k] = sample[k].at_end.event_id;
        r->split_step_numbers[k] = sample[k].step;
    }
    for (size_t i = 0; i < r->nooms_listed; i++)
        ids[2 + m + i] = r->oom_ids[i];
    char err[256];
    if (free_split_at(db, r->s.device, ids, n, out, err, sizeof err) == 0) {
        r->have_split = 1;
        r->split_peak = out[0];
        r->split_end = out[1];
        r->nsplit_steps = m;
        memcpy(r->split_steps, out + 2, m * sizeof *out);
        memcpy(r->split_oom, out + 2 + m, r->nooms_listed * sizeof *out);
    }
}

/* What memory is at the peak: categories (a sweep of the device's blocks) and the named tensors.
 * Without it the report still stands. */
static void categories(sqlite3 *db, categorizer *cats, int whole_run, int rules, size_t top,
                       device_report *r) {
    char err[256];
    int64_t peak = r->s.peak_allocated.event_id;
    /* the whole run's peak without rules: the sums the database keeps */
    if (!(whole_run && !rules && category_peaks_read(db, r->s.device, r->categories)) &&
        (!cats || categories_at_event(cats, r->s.device, peak, r->categories, err, sizeof err)))
        return;
    r->have_categories = 1;
    if (tensor_rows_at(db, cats, r->s.device, peak, top, &r->named, &r->nnamed, err, sizeof err))
        db_note_failure(err); /* the report stands without them, but must not pass for whole */
}

static int build(sqlite3 *db, categorizer *cats, int rules, int device, int64_t from, int64_t to,
                 size_t top, device_report *r) {
    memset(r, 0, sizeof *r);
    if (analysis_device_summary(db, device, from, to, &r->s) != 0 ||
        analysis_top_stacks_at(db, device, r->s.peak_allocated.event_id, top, &r->top, &r->ntop) !=
            0 ||
        analysis_site_growth(db, device, from, to, &r->growth, &r->ngrowth, &r->windows) != 0 ||
        headroom(db, from, to, r) != 0)
        return -1;
    splits(db, from, to, r);
    categories(db, cats, analysis_whole_run(db, from, to), rules, top, r);
    return 0;
}

static void release(device_report *r) {
    tensor_rows_free(r->named, r->nnamed);
    free(r->top);
    free(r->growth);
}

/* meta `allocator_settings`, a JSON object as PyTorch names the settings;
 * 0 when the input says nothing about them. */
/* Whether text is one JSON object as far as braces and strings go (it is
 * copied into report --json as it is; a database given as input may hold
 * anything, or a value cut by meta_text's buffer). */
static int looks_like_object(const char *t) {
    int depth = 0, in_string = 0;
    for (const char *p = t; *p; p++) {
        if (in_string) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                in_string = 0;
        } else if (*p == '"') {
            in_string = 1;
        } else if (*p == '{') {
            depth++;
        } else if (*p == '}' && --depth == 0) {
            return p[1] == '\0';
        } else if (depth <= 0) {
            return 0;
        }
    }
    return 0;
}

static int allocator_settings(sqlite3 *db, char *buf, size_t len) {
    db_meta_text(db, "allocator_settings", buf, len);
    if (buf[0] != '{' || !looks_like_object(buf)) {
        snprintf(buf, len, "{}");
        return 0;
    }
    return 1;
}

/* The value text after `"key": ` in a flat JSON object (our own meta JSON:
 * strings without escaped quotes, numbers, true/false, one nested object). */
static const char *json_field(const char *json, const char *key, char *buf, size_t len) {
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(json, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    /* a database given as input may hold anything: an unclosed value runs to the end */
    const char *close = *p == '{' ? strchr(p, '}') : *p == '"' ? strchr(p + 1, '"') : NULL;
    const char *end = close                    ? close + 1
                      : *p == '{' || *p == '"' ? p + strlen(p)
                                               : p + strcspn(p, ",}");
    snprintf(buf, len, "%.*s", (int)(end - p), p);
    return buf;
}

/* The settings people compare runs by, in a line: "expandable_segments True,
 * max_split_size 256 MiB, roundup_power2_divisions [1:4, 2:4], ...". */
static void settings_summary(const char *json, char *out, size_t len) {
    char v[512], b[32];
    size_t n = 0;
#define ADD(...) n += (size_t)snprintf(out + n, n < len ? len - n : 0, __VA_ARGS__)
    out[0] = 0;
    if (json_field(json, "expandable_segments", v, sizeof v))
        ADD("expandable_segments %s", !strcmp(v, "true") ? "True" : "False");
    if (json_field(json, "max_split_size", v, sizeof v))
        ADD("%smax_split_size %s", n ? ", " : "",
            atoll(v) < 0 ? "unlimited" : units_bytes((uint64_t)atoll(v), b, sizeof b));
    if (json_field(json, "roundup_power2_divisions", v, sizeof v)) {
        ADD("%sroundup_power2_divisions ", n ? ", " : "");
        int any = 0; /* {"1": 0, "2": 4, ...}: the intervals that round, keyed by MiB */
        for (const char *p = strchr(v, '"'); p; p = strchr(p + 1, '"')) {
            const char *q = strchr(p + 1, '"');
            if (!q)
                break;
            long d = strtol(q + 2 + (q[1] == ':' && q[2] == ' '), NULL, 10);
            if (d > 0)
                ADD("%s%.*s:%ld", any++ ? ", " : "[", (int)(q - p - 1), p + 1, d);
            p = q;
        }
        ADD("%s", any ? "]" : "off");
    }
    if (json_field(json, "garbage_collection_threshold", v, sizeof v) && atof(v) > 0)
        ADD("%sgarbage_collection_threshold %s", n ? ", " : "", v);
    if (json_field(json, "PYTORCH_CUDA_ALLOC_CONF", v, sizeof v) && strcmp(v, "\"\"") != 0)
        ADD("%sPYTORCH_CUDA_ALLOC_CONF=%s", n ? "; " : "", v);
#undef ADD
    if (!out[0]) /* settings we do not summarize: as they are */
        snprintf(out, len, "%.1000s", json);
}

/* ---- text ------------------------------------------------------------- */

static void print_header(sqlite3 *db, const char *input, int64_t from, int64_t to) {
    char a[512], b[128], c[128], d[32];
    printf("memanalyze report: %s\n", input);
    printf("  input: %s", db_meta_text(db, "input_format", a, sizeof a));
    if (*db_meta_text(db, "producer", b, sizeof b))
        printf(", recorded by %s", b);
    if (*db_meta_text(db, "pid", c, sizeof c) && strcmp(c, "0") != 0)
        printf(", pid %s", c);
    if (*db_meta_text(db, "host", b, sizeof b))
        printf(" on %s", b);
    printf("\n");
    if (*db_meta_text(db, "command_line", a, sizeof a))
        printf("  command: %s\n", a);
    /* from meta (a database of an older memanalyze: a scan of the events) */
    long long events = db_query_int(db,
                                    "SELECT coalesce((SELECT value FROM meta WHERE key = "
                                    "'recorded_events'), (SELECT count(*) FROM event_rows "
                                    "WHERE event_id > 0))",
                                    0);
    long long span = db_query_int(db,
                                  "SELECT coalesce((SELECT value FROM meta WHERE key = "
                                  "'last_ts_ns'), (SELECT max(ts_ns) FROM event_rows))",
                                  0);
    long long steps = db_query_int(db, "SELECT count(*) FROM steps", 0);
    int history = when_has_history(db);
    if (!history)
        printf("  no history: the snapshot holds its final segments only (memory history was "
               "off), so there is one moment to look at, the end\n");
    else if (when_has_timestamps(db))
        printf("  %lld events over %s", events,
               units_duration(span > 0 ? (uint64_t)span : 0, d, 32));
    else
        printf("  %lld events, no timestamps (PyTorch <= 2.1 records none): times are event order",
               events);
    if (!history)
        ; /* nothing happened: no steps to look for */
    else if (steps)
        printf(", %lld steps (step %lld .. %lld)", steps,
               db_query_int(db, "SELECT min(step) FROM steps", 0),
               db_query_int(db, "SELECT max(step) FROM steps", 0));
    else
        printf(", no steps found (NVTX ranges or marks named like \"step 3\" make steps)");
    if (history)
        printf("\n");
    char settings[4096], line[1024];
    if (allocator_settings(db, settings, sizeof settings) && strcmp(settings, "{}") != 0) {
        settings_summary(settings, line, sizeof line);
        printf("  allocator settings: %s\n", line);
    }
    long long warnings = db_query_int(db, "SELECT value FROM meta WHERE key='warnings_total'", 0);
    if (warnings)
        printf("  %lld replay warnings (memanalyze sql %s \"SELECT * FROM warnings\")\n", warnings,
               input);
    if (db_query_int(db, "SELECT value FROM meta WHERE key='truncated_after_events'", -1) >= 0)
        printf("  the trace is truncated: the recording was cut short\n");
    if (from > 0 || to < analysis_last_event(db)) {
        char w1[96], w2[96];
        when_describe(db, from, w1, sizeof w1);
        when_describe(db, to, w2, sizeof w2);
        printf("  window: from %s to %s\n", w1, w2);
    }
}

static void print_ooms(sqlite3 *db, const device_report *r, int64_t from, int64_t to) {
    char b1[32], b2[32], b3[32], when[96];
    sqlite3_stmt *st;
    if (db_prepare(db,
                   "SELECT event_id, size, allocated_bytes, reserved_bytes, "
                   "largest_free_bytes, (SELECT value FROM counters c WHERE c.device = "
                   "e.device AND c.kind = 'driver_free' AND c.ts_ns <= e.ts_ns ORDER BY "
                   "c.ts_ns DESC LIMIT 1) FROM event_rows e WHERE device = ? AND op = {op:oom} "
                   "AND event_id > ? AND event_id <= ? ORDER BY event_id LIMIT ?",
                   &st) != SQLITE_OK)
        return;
    sqlite3_bind_int(st, 1, r->s.device);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    sqlite3_bind_int(st, 4, MAX_OOM_LINES);
    for (size_t k = 0; sqlite3_step(st) == SQLITE_ROW; k++) {
        int64_t id = sqlite3_column_int64(st, 0), ask = sqlite3_column_int64(st, 1);
        int64_t unalloc = sqlite3_column_int64(st, 3) - sqlite3_column_int64(st, 2);
        int64_t largest = sqlite3_column_int64(st, 4);
        const free_split *f =
            r->have_split && k < r->nooms_listed && r->oom_ids[k] == id ? &r->split_oom[k] : NULL;
        when_describe(db, id, when, sizeof when);
        printf("    OOM at %s asking %s while %s is reserved but unallocated", when,
               units_bytes_i64(ask, b1), units_bytes_i64(unalloc, b2));
        if (f && f->releasable >= ask)
            printf(" (%s of it releasable: whole free segments or pages): the allocator's "
                   "retry frees its cache and should have found room, so look for memory "
                   "outside this allocator (untracked below, another process)",
                   units_bytes_i64(f->releasable, b3));
        else if (unalloc >= ask && largest < ask)
            printf(" (largest free block %s%s%s): fragmentation", units_bytes_i64(largest, b3),
                   f ? ", trapped " : "", f ? units_bytes_i64(f->trapped, b2) : "");
        else if (sqlite3_column_type(st, 5) != SQLITE_NULL)
            printf("; the driver had %s free: the device is full",
                   units_bytes_i64(sqlite3_column_int64(st, 5), b3));
        printf("\n");
    }
    sqlite3_finalize(st);
}

static void print_largest(sqlite3 *db, int device, int64_t from, int64_t to, size_t top) {
    sqlite3_stmt *st;
    char b1[32], label[256], when[96];
    /* The whole run: the replay kept the largest; a window: sort its allocations. */
    const char *sql =
        analysis_whole_run(db, from, to)
            ? "SELECT alloc_id, size, stack_id FROM largest_allocations WHERE device = ?1 AND "
              "alloc_id <= ?2 AND alloc_id > ?3 ORDER BY size DESC, alloc_id LIMIT ?4"
            : "SELECT event_id, size, stack_id FROM event_rows AS e WHERE device = ?1 AND "
              "kind = {kind:device} AND op IN ({op:alloc}, {op:map}) AND " SQL_IS_BLOCK(
                  "e") " AND event_id <= ?2 AND event_id > ?3 ORDER BY size DESC, event_id LIMIT "
                       "?4";
    if (db_prepare(db, sql, &st) != SQLITE_OK)
        return;
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, to);
    sqlite3_bind_int64(st, 3, from > 0 ? from : INT64_MIN);
    sqlite3_bind_int64(st, 4, (int64_t)top);
    printf("  largest allocations:\n");
    while (sqlite3_step(st) == SQLITE_ROW) {
        site(db, db_column_i64(st, 2, 0), label, sizeof label);
        when_describe(db, sqlite3_column_int64(st, 0), when, sizeof when);
        printf("    %10s  %s  at %s\n", units_bytes_i64(sqlite3_column_int64(st, 1), b1), label,
               when);
    }
    sqlite3_finalize(st);
}

/* The cache at work: allocations served without new driver memory, and at the peak what is
 * in use (active) against what the cache holds free (inactive). */
static void print_cache(const device_report *r) {
    char b1[32], b2[32];
    const device_summary *s = &r->s;
    if (r->cache_allocs <= 0) /* none, or a window (the counters are the whole run's) */
        return;
    printf("  the cache: %.1f %% of %lld allocations served without new driver memory (%lld "
           "needed a cudaMalloc or mapped pages)\n",
           100.0 * (double)(r->cache_allocs - r->cache_misses) / (double)r->cache_allocs,
           (long long)r->cache_allocs, (long long)r->cache_misses);
    printf("    at the peak %s active, %s inactive (reserved, free in the cache)\n",
           units_bytes_i64(s->peak_allocated.allocated, b1),
           units_bytes_i64(s->peak_allocated.reserved - s->peak_allocated.allocated, b2));
}

/* What the memory at the peak is, by category, and the largest named tensors in it. */
static void print_categories(const device_report *r) {
    char b1[32];
    int64_t total = r->s.peak_allocated.allocated;
    if (!r->have_categories || total <= 0)
        return;
    printf("  held at the peak by category:\n");
    for (int c = 0; c < BLOCK_CATEGORY_COUNT; c++)
        if (r->categories[c])
            printf("    %10s %5.1f %%  %s\n", units_bytes_i64(r->categories[c], b1),
                   100.0 * (double)r->categories[c] / (double)total,
                   gmt_category_name((gmt_category)c));
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

static void print_fragmentation(const device_report *r) {
    char b1[32], b2[32];
    const device_summary *s = &r->s;
    double at_peak = frag_of(&s->peak_allocated), at_end = frag_of(&s->end);
    double worst = frag_of(&s->worst_fragmentation);
    printf("  fragmentation (reserved - allocated) / reserved:\n");
    printf("    at the peak %.2f (%s), largest free block %s\n", at_peak, frag_rating(at_peak),
           units_bytes_i64(s->peak_allocated.largest_free, b1));
    printf("    at the end  %.2f (%s), largest free block %s\n", at_end, frag_rating(at_end),
           units_bytes_i64(s->end.largest_free, b2));
    printf("    worst       %.2f (%s) at event %lld, with %s reserved\n", worst, frag_rating(worst),
           (long long)s->worst_fragmentation.event_id,
           units_bytes_i64(s->worst_fragmentation.reserved, b1));
    const steps_overview *o = &r->steps;
    if (o->count)
        printf("    per step (at step ends): min %.2f, mean %.2f, max %.2f (%s) at step %lld\n",
               o->frag_min, o->frag_mean, o->frag_max, frag_rating(o->frag_max),
               (long long)o->frag_max_step);
    if (!r->have_split)
        return;
    const free_split *p = &r->split_peak, *e = &r->split_end;
    double tp = free_split_trapped_ratio(p), te = free_split_trapped_ratio(e);
    printf("  trapped / reserved (free bytes empty_cache() cannot return: the fragmentation "
           "verdict):\n");
    printf("    at the peak %.2f (%s): %s trapped, %s releasable\n", tp, frag_rating(tp),
           units_bytes_i64(p->trapped, b1), units_bytes_i64(p->releasable, b2));
    printf("    at the end  %.2f (%s): %s trapped, %s releasable%s\n", te, frag_rating(te),
           units_bytes_i64(e->trapped, b1), units_bytes_i64(e->releasable, b2),
           e->releasable > e->trapped && e->releasable >= (64 << 20)
               ? " (a warm cache, not fragmentation: empty_cache() returns it)"
               : "");
    if (r->nsplit_steps) {
        double hi = -1, sum = 0;
        int64_t hi_step = 0;
        for (size_t k = 0; k < r->nsplit_steps; k++) {
            double f = free_split_trapped_ratio(&r->split_steps[k]);
            sum += f;
            if (f > hi) {
                hi = f;
                hi_step = r->split_step_numbers[k];
            }
        }
        printf("    per step (at step ends): mean %.2f, max %.2f (%s) at step %lld",
               sum / (double)r->nsplit_steps, hi, frag_rating(hi), (long long)hi_step);
        if (r->split_stride > 1)
            printf(" (1 step in %zu of %zu measured)", r->split_stride, o->count);
        printf("\n");
    }
}

static void print_growth(sqlite3 *db, const device_report *r, size_t top) {
    char b1[32], b2[32], b3[32], label[256];
    size_t shown = 0;
    printf("  leaks and growth");
    if (r->windows)
        printf(" (median change of live bytes per site over %zu step ends):\n", r->windows + 1);
    else
        printf(" (fewer than two step ends: no growth can be measured):\n");
    for (size_t i = 0; i < r->ngrowth && shown < top; i++) {
        const site_growth *g = &r->growth[i];
        if (g->growth_per_step <= 0)
            continue;
        site(db, g->stack_id, label, sizeof label);
        printf("    +%s/step (+%s/min)  %s  live %s at the end\n",
               units_bytes_i64(g->growth_per_step, b1),
               units_bytes_i64((int64_t)g->bytes_per_min, b2), label,
               units_bytes_i64(g->live_end, b3));
        shown++;
    }
    if (!shown)
        printf("    no site grows from step to step\n");
    const device_summary *s = &r->s;
    printf("  never freed: %lld blocks, %s requested, allocated during the recording and live "
           "at its end\n",
           (long long)s->never_freed_count, units_bytes_i64(s->never_freed_bytes, b1));
    if (r->growth_per_step > 0) {
        printf("  headroom: allocated grows +%s/step at step ends",
               units_bytes_i64(r->growth_per_step, b1));
        if (r->limit_step >= 0)
            printf("; at that rate the run reaches the device limit (%s) at step %lld",
                   units_bytes_i64(s->total_bytes, b2), (long long)r->limit_step);
        if (r->forecast.limit_seconds >= 0) {
            char when[32];
            if (r->forecast.limit_seconds < 1e9) /* below 30 years: a duration */
                units_duration((uint64_t)(r->forecast.limit_seconds * 1e9), when, sizeof when);
            else
                snprintf(when, sizeof when, "%.3g s", r->forecast.limit_seconds);
            printf(", %s into the run", when);
        }
        printf("; risk %s\n", r->forecast.risk);
    } else if (r->steps.count >= 3) {
        printf("  headroom: allocated does not grow from step to step; peak uses %s",
               units_bytes_i64(s->peak_reserved.reserved, b1));
        if (s->total_bytes)
            printf(" of %s (%.0f %%)", units_bytes_i64(s->total_bytes, b2),
                   100.0 * (double)s->peak_reserved.reserved / (double)s->total_bytes);
        printf("; risk %s\n", r->forecast.risk);
    }
}

/* The run's allocator settings say expandable_segments was on (meta allocator_settings). */
static int expandable_on(sqlite3 *db) {
    return db_query_int(db,
                        "SELECT count(*) FROM meta WHERE key = 'allocator_settings' AND "
                        "replace(value, ' ', '') LIKE '%\"expandable_segments\":true%'",
                        0) > 0;
}

static void print_recommendations(sqlite3 *db, const device_report *r) {
    char b1[32], b2[32], label[256];
    const device_summary *s = &r->s;
    int said = 0;
    /* the verdict is the trapped ratio: a warm cache (releasable) is not fragmentation */
    double at_peak = r->have_split ? free_split_trapped_ratio(&r->split_peak) : 0;
    int64_t trapped = r->have_split ? r->split_peak.trapped : 0;
    printf("  recommendations:\n");
    if (at_peak >= gmt_frag_band_from(FRAG_BAND_SERIOUS) && trapped >= (64 << 20)) {
        printf("  - %s of the peak's %s reserved is free but trapped in segments that hold live "
               "blocks (trapped ratio %.2f, %s): %s\n",
               units_bytes_i64(trapped, b1), units_bytes_i64(s->peak_allocated.reserved, b2),
               at_peak, frag_rating(at_peak),
               expandable_on(db) ? "with expandable segments already on, "
                                   "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb keeps large free "
                                   "blocks from being split by small requests"
                                 : "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets "
                                   "segments grow instead of leaving split free blocks behind");
        said = 1;
    }
    if (r->ngrowth && r->growth[0].growth_per_step > 0 && r->windows >= 2) {
        site(db, r->growth[0].stack_id, label, sizeof label);
        printf("  - %s keeps +%s per step alive: something holds on to what it allocates "
               "(a list of tensors, a history, a cache)\n",
               label, units_bytes_i64(r->growth[0].growth_per_step, b1));
        said = 1;
    }
    if (s->ooms && !said) {
        printf("  - the run hit OOM: see the OOM lines above for whether it was fragmentation or a "
               "full device\n");
        said = 1;
    }
    if (!said)
        printf("    none: no number above calls for one\n");
}

static void print_device(sqlite3 *db, const device_report *r, int64_t from, int64_t to,
                         size_t top) {
    char b1[32], b2[32], b3[32], when[96], label[256];
    const device_summary *s = &r->s;
    printf("\ndevice %d", s->device);
    if (s->name[0])
        printf("  %s", s->name);
    if (s->total_bytes > 0)
        printf(", %s", units_bytes_i64(s->total_bytes, b1));
    printf("\n");
    when_describe(db, s->peak_allocated.event_id, when, sizeof when);
    printf("  peak allocated %s at %s\n", units_bytes_i64(s->peak_allocated.allocated, b1), when);
    printf("    then requested %s, reserved %s\n", units_bytes_i64(s->peak_allocated.requested, b1),
           units_bytes_i64(s->peak_allocated.reserved, b2));
    when_describe(db, s->peak_requested.event_id, when, sizeof when);
    printf("  peak requested %s at %s\n", units_bytes_i64(s->peak_requested.requested, b1), when);
    when_describe(db, s->peak_reserved.event_id, when, sizeof when);
    printf("  peak reserved  %s at %s\n", units_bytes_i64(s->peak_reserved.reserved, b1), when);
    printf("  reserved at the start %s, at the end %s (allocated %s)\n",
           units_bytes_i64(s->start.reserved, b1), units_bytes_i64(s->end.reserved, b2),
           units_bytes_i64(s->end.allocated, b3));
    printf("  %lld allocations, %lld frees\n", (long long)s->allocs, (long long)s->frees);
    if (r->ntop) {
        printf("  held at the peak:\n");
        /* each row's site, once: two rows of one site say where they differ */
        char(*labels)[256] = calloc(r->ntop, sizeof *labels);
        for (size_t i = 0; labels && i < r->ntop; i++)
            site(db, r->top[i].stack_id, labels[i], sizeof labels[i]);
        for (size_t i = 0; i < r->ntop; i++) {
            if (labels)
                snprintf(label, sizeof label, "%s", labels[i]);
            else
                site(db, r->top[i].stack_id, label, sizeof label);
            for (size_t k = 0; labels && k < r->ntop; k++)
                if (k != i && !strcmp(labels[k], labels[i])) {
                    stack_label_via(db, r->top[i].stack_id, label, sizeof label);
                    break;
                }
            double pct = s->peak_allocated.allocated
                             ? 100.0 * (double)r->top[i].bytes / (double)s->peak_allocated.allocated
                             : 0;
            printf("    %10s %5.1f %%  %6lld blocks  %s\n", units_bytes_i64(r->top[i].bytes, b1),
                   pct, (long long)r->top[i].blocks, label);
        }
        free(labels);
    }
    print_categories(r);
    print_cache(r);
    print_fragmentation(r);
    if (s->ooms) {
        printf("  %lld OOM%s:\n", (long long)s->ooms, s->ooms == 1 ? "" : "s");
        print_ooms(db, r, from, to);
    }
    if (s->alloc_failed)
        printf("  %lld failed driver allocation%s%s\n", (long long)s->alloc_failed,
               s->alloc_failed == 1 ? "" : "s",
               s->ooms ? "" : ", all survived: the allocator freed its cache and retried");
    if (s->untracked_at_peak >= 0)
        printf("  untracked (driver's used - reserved: context, libraries, other processes): "
               "%s near the peak, at most %s\n",
               units_bytes_i64(s->untracked_at_peak, b1), units_bytes_i64(s->untracked_max, b2));
    print_largest(db, s->device, from, to, top);
    print_growth(db, r, top);
    print_recommendations(db, r);
}

/* ---- JSON ------------------------------------------------------------- */

static void json_moment_fields(const char *prefix, const moment *m) {
    /* a moment of the seed (several devices: rows 1-n .. 0) is the start, event 0 */
    printf("\"%s_event_id\": %lld, \"%s_ts_ns\": %lld", prefix,
           (long long)(m->event_id > 0 ? m->event_id : 0), prefix, (long long)m->ts_ns);
}

static void print_device_json(sqlite3 *db, const device_report *r, int first) {
    const device_summary *s = &r->s;
    char label[256];
    printf("%s\n    {\"device\": %d, \"name\": ", first ? "" : ",", s->device);
    json_string(stdout, s->name[0] ? s->name : NULL);
    printf(", \"total_bytes\": ");
    if (s->total_bytes)
        printf("%lld", (long long)s->total_bytes);
    else
        printf("null");
    printf(",\n     \"peak_allocated_bytes\": %lld, ", (long long)s->peak_allocated.allocated);
    json_moment_fields("peak_allocated", &s->peak_allocated);
    printf(",\n     \"peak_requested_bytes\": %lld, ", (long long)s->peak_requested.requested);
    json_moment_fields("peak_requested", &s->peak_requested);
    printf(",\n     \"peak_reserved_bytes\": %lld, ", (long long)s->peak_reserved.reserved);
    json_moment_fields("peak_reserved", &s->peak_reserved);
    printf(",\n     \"start_reserved_bytes\": %lld, \"end_reserved_bytes\": %lld, "
           "\"end_allocated_bytes\": %lld,\n",
           (long long)s->start.reserved, (long long)s->end.reserved, (long long)s->end.allocated);
    printf("     \"allocs\": %lld, \"frees\": %lld, \"never_freed_count\": %lld, "
           "\"never_freed_bytes\": %lld,\n",
           (long long)s->allocs, (long long)s->frees, (long long)s->never_freed_count,
           (long long)s->never_freed_bytes);
    printf("     \"fragmentation_at_peak\": ");
    json_number(stdout, frag_of(&s->peak_allocated));
    printf(", \"fragmentation_at_end\": ");
    json_number(stdout, frag_of(&s->end));
    printf(", \"fragmentation_worst\": ");
    json_number(stdout, frag_of(&s->worst_fragmentation));
    printf(", \"fragmentation_worst_event_id\": %lld,\n",
           (long long)(s->worst_fragmentation.event_id > 0 ? s->worst_fragmentation.event_id : 0));
    printf("     \"largest_free_at_peak_bytes\": %lld, \"largest_free_at_end_bytes\": %lld,\n",
           (long long)s->peak_allocated.largest_free, (long long)s->end.largest_free);
    if (r->have_split) {
        printf("     \"end_trapped_bytes\": %lld, \"end_releasable_bytes\": %lld, "
               "\"trapped_ratio_at_peak\": ",
               (long long)r->split_end.trapped, (long long)r->split_end.releasable);
        json_number(stdout, free_split_trapped_ratio(&r->split_peak));
        printf(", \"trapped_ratio_at_end\": ");
        json_number(stdout, free_split_trapped_ratio(&r->split_end));
        printf(",\n");
    } else {
        printf("     \"end_trapped_bytes\": null, \"end_releasable_bytes\": null, "
               "\"trapped_ratio_at_peak\": null, \"trapped_ratio_at_end\": null,\n");
    }
    printf("     \"replay_warnings\": %lld,\n",
           (long long)db_query_i64(db,
                                   "SELECT count(*) FROM warnings w JOIN event_rows e ON "
                                   "e.event_id = w.event_id WHERE e.device = ?",
                                   s->device, 0, 0));
    printf("     \"ooms\": %lld, \"alloc_failed\": %lld, \"untracked_at_peak_bytes\": ",
           (long long)s->ooms, (long long)s->alloc_failed);
    if (s->untracked_at_peak >= 0)
        printf("%lld", (long long)s->untracked_at_peak);
    else
        printf("null");
    printf(",\n     \"top_stacks_at_peak\": [");
    for (size_t i = 0; i < r->ntop; i++) {
        site(db, r->top[i].stack_id, label, sizeof label);
        printf("%s{\"stack_id\": %lld, \"site\": ", i ? ", " : "", (long long)r->top[i].stack_id);
        json_string(stdout, label);
        printf(", \"bytes\": %lld, \"blocks\": %lld}", (long long)r->top[i].bytes,
               (long long)r->top[i].blocks);
    }
    printf("],\n     \"growth_windows\": %zu, \"leaks\": [", r->windows);
    for (size_t i = 0, n = 0; i < r->ngrowth && n < 10; i++) {
        const site_growth *g = &r->growth[i];
        site(db, g->stack_id, label, sizeof label);
        printf("%s{\"stack_id\": %lld, \"site\": ", n++ ? ", " : "", (long long)g->stack_id);
        json_string(stdout, label);
        printf(", \"growth_bytes_per_step\": %lld, \"growth_bytes_per_min\": ",
               (long long)g->growth_per_step);
        json_number(stdout, g->bytes_per_min);
        printf(", \"never_freed_count\": %lld, \"never_freed_bytes\": %lld}",
               (long long)g->never_freed_count, (long long)g->never_freed_bytes);
    }
    printf("],\n     \"steps\": %zu, \"allocated_growth_per_step_bytes\": %lld, "
           "\"device_limit_step\": ",
           r->steps.count, (long long)r->growth_per_step);
    if (r->limit_step >= 0)
        printf("%lld", (long long)r->limit_step);
    else
        printf("null");
    printf(",\n     \"headroom\": {\"growth_bytes_per_step\": %lld, \"limit_step\": ",
           (long long)r->forecast.growth_per_step);
    if (r->forecast.limit_step >= 0)
        printf("%lld", (long long)r->forecast.limit_step);
    else
        printf("null");
    printf(", \"limit_seconds\": ");
    if (r->forecast.limit_seconds >= 0)
        json_number(stdout, r->forecast.limit_seconds);
    else
        printf("null");
    printf(", \"risk\": ");
    json_string(stdout, r->forecast.risk);
    printf("},\n     \"cache_allocations\": ");
    if (r->cache_allocs >= 0)
        printf("%lld, \"cache_misses\": %lld", (long long)r->cache_allocs,
               (long long)r->cache_misses);
    else
        printf("null, \"cache_misses\": null");
    printf(", \"cache_hit_rate\": ");
    if (r->cache_allocs > 0)
        json_number(stdout, (double)(r->cache_allocs - r->cache_misses) / (double)r->cache_allocs);
    else
        printf("null");
    printf(", \"active_bytes_at_peak\": %lld, \"inactive_bytes_at_peak\": %lld",
           (long long)s->peak_allocated.allocated,
           (long long)(s->peak_allocated.reserved - s->peak_allocated.allocated));
    printf(",\n     \"categories_at_peak\": ");
    if (r->have_categories) {
        for (int c = 0; c < BLOCK_CATEGORY_COUNT; c++)
            printf("%s\"%s\": %lld", c ? ", " : "{", gmt_category_name((gmt_category)c),
                   (long long)r->categories[c]);
        printf("}");
    } else {
        printf("null");
    }
    printf(", \"named_tensors_at_peak\": [");
    for (size_t i = 0; i < r->nnamed; i++) {
        printf("%s{\"name\": ", i ? ", " : "");
        json_string(stdout, r->named[i].name);
        printf(", \"category\": \"%s\", \"bytes\": %lld, \"tensors\": %lld}",
               gmt_category_name(r->named[i].category), (long long)r->named[i].bytes,
               (long long)r->named[i].tensors);
    }
    printf("]}");
}

/* ---- command ---------------------------------------------------------- */

static void report_usage(FILE *out) {
    fprintf(out, "usage: memanalyze report INPUT [--device N] [--from WHEN] [--to WHEN] [--json] "
                 "[--top N]\n"
                 "One screen on a run's GPU memory: peaks and what held them, fragmentation,\n"
                 "OOMs, untracked memory, the largest allocations, leaks and growth, headroom.\n"
                 "  INPUT         a trace, a PyTorch snapshot pickle or a memanalyze database\n"
                 "  --device N    only device N (default: every device)\n"
                 "  --from/--to   a window: step:N, event:N, time:1.5s, peak, start, end\n"
                 "  --top N       rows per list (default 5)\n"
                 "  --json        machine-readable output\n"
                 "  --plots DIR   also draw timeline, heatmap, segments (at the peak) and\n"
                 "                fragmentation as DIR/NAME-deviceN.png\n"
                 "  --step-rule W marker names with W and a number are steps (default step)\n"
                 "  --categories FILE  rules `REGEX CATEGORY` for memory the built-in\n"
                 "                categories leave as other (one a line; first match wins)\n");
}

int cmd_report(int argc, char **argv) {
    static const struct option opts[] = {
        {"device", required_argument, 0, 'd'}, {"from", required_argument, 0, 'f'},
        {"to", required_argument, 0, 't'},     {"json", no_argument, 0, 'j'},
        {"top", required_argument, 0, 'n'},    {"step-rule", required_argument, 0, 's'},
        {"plots", required_argument, 0, 'p'},  {"categories", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    cli_window o = CLI_WINDOW_INIT;
    const char *plots_dir = NULL, *rules_path = NULL;
    int c, taken;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if ((taken = cli_window_option(&o, c, optarg)) == 2)
            return 2;
        if (taken)
            continue;
        switch (c) {
        case 'p':
            plots_dir = optarg;
            break;
        case 'c':
            rules_path = optarg;
            break;
        case 'h':
            report_usage(stdout);
            return 0;
        default:
            report_usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        report_usage(stderr);
        return 2;
    }
    char err[512];
    category_rules *rules = NULL;
    if (rules_path && !(rules = category_rules_load(rules_path, err, sizeof err)))
        return cli_error("%s", err);
    sqlite3 *db;
    int status = cli_open_db(argv[optind], &o.io, &db);
    size_t top = o.top >= 0 ? (size_t)o.top : 5;
    if (status) {
        category_rules_free(rules);
        return status;
    }
    int64_t from, to;
    if (when_window(db, o.from, o.to, o.device, &from, &to, err, sizeof err) != 0) {
        sqlite3_close(db);
        category_rules_free(rules);
        return cli_error("%s", err);
    }
    int devices[GMT_MAX_DEVICES];
    int ndev = analysis_devices(db, devices, GMT_MAX_DEVICES);
    if (o.device >= 0) {
        int found = 0;
        for (int i = 0; i < ndev; i++)
            found |= devices[i] == o.device;
        if (!found) {
            sqlite3_close(db);
            category_rules_free(rules);
            return cli_error("device %d has no events in %s", o.device, argv[optind]);
        }
        devices[0] = o.device;
        ndev = 1;
    }
    if (!o.json) {
        print_header(db, argv[optind], from, to);
    } else {
        char settings[4096];
        allocator_settings(db, settings, sizeof settings);
        printf("{\"input\": ");
        json_string(stdout, argv[optind]);
        printf(
            ", \"timestamps\": %s, \"allocator_settings\": %s, \"replay_warnings_total\": %lld,\n"
            " \"from_event_id\": %lld, \"to_event_id\": %lld, \"devices\": [",
            when_has_timestamps(db) ? "true" : "false", settings,
            db_query_int(db, "SELECT value FROM meta WHERE key = 'warnings_total'", 0),
            (long long)from, (long long)to);
    }
    /* the categories are a sweep per device; what they share is read once */
    categorizer *cats = ndev ? categorizer_new(db, rules, err, sizeof err) : NULL;
    if (ndev && !cats && !o.json)
        fprintf(stderr, "memanalyze: no categories: %s\n", err);
    for (int i = 0; i < ndev && status == 0; i++) {
        device_report r;
        if (build(db, cats, rules != NULL, devices[i], from, to, top, &r) != 0) {
            status = cli_error("reading the database: %s", sqlite3_errmsg(db));
        } else if (o.json) {
            print_device_json(db, &r, i == 0);
        } else {
            print_device(db, &r, from, to, top);
        }
        release(&r);
    }
    categorizer_free(cats);
    category_rules_free(rules);
    if (o.json && status == 0)
        printf("\n  ]}\n");
    /* An input without memory events still gets its pictures: "no data" ones for device 0. */
    int nplots = ndev ? ndev : 1;
    if (!ndev)
        devices[0] = 0;
    for (int i = 0; plots_dir && i < nplots && status == 0; i++) {
        char perr[512];
        if (mkdir(plots_dir, 0755) != 0 && errno != EEXIST)
            status = cli_error("cannot create %s: %s", plots_dir, strerror(errno));
        else if (picture_write_all(db, argv[optind], devices[i], plots_dir, perr, sizeof perr))
            status = cli_error("%s", perr);
    }
    if (!ndev && !o.json)
        printf("\nno device memory events in this input\n");
    sqlite3_close(db);
    return status;
}
