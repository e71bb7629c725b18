/* cmd_simulate.c — `memanalyze simulate INPUT [--config SPEC]...`: the run's
 * allocation requests under other caching-allocator settings (query/simulate.h):
 * one row per configuration with its peaks, the free memory split at the peak
 * and the end, the driver allocations it makes, the OOMs it hits, and the
 * smallest device memory it completes in (a bisection). The first row is the
 * run's own configuration, and says how closely the simulation reproduces the
 * recording. */
#include "alloc_settings.h"
#include "cli.h"
#include "commands.h"
#include "gmt_clock.h"
#include "gmt_env.h"
#include "gmt_size.h"
#include "json_out.h"
#include "plots.h"
#include "simulate.h"
#include "units.h"
#include "when.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONFIGS 16
#define BISECT_STEP (2ull << 20) /* the search stops at 2 MiB */
#define BISECT_BUDGET 5.0        /* times one simulation's duration */
#define PICTURE_COLUMNS 1000     /* -o: columns of events */

typedef struct sim_config {
    char spec[AM_SETTINGS_CONF_MAX]; /* as the user gave it; "" for the run's own */
    am_settings settings;
    sim_result r;
    uint64_t min_memory, min_memory_low; /* the search's bracket: fails at low, fits at min */
    int searched;                        /* 1: the bracket is BISECT_STEP or less */
    int own;                             /* the run's own: its start state as recorded */
    int fraction_set; /* a memory fraction is in effect (per_process_memory_fraction, or
                         --device-memory, taken as the limit set_per_process_memory_fraction
                         sets): only then does garbage_collection_threshold act, as in PyTorch */
    sim_options opt;  /* the policies beyond PyTorch's settings */
} sim_config;

/* The policies beyond PyTorch's settings, written as keys of their own in a --config:
 * empty_cache:step (torch.cuda.empty_cache() after every step) and pools:lifetime (blocks
 * that outlive their step apart from those that do not). Removes them from `spec` (the rest
 * is PYTORCH_CUDA_ALLOC_CONF text) into *opt. */
static void take_policies(char *spec, sim_options *opt) {
    static const struct {
        const char *key;
        size_t offset;
    } policies[] = {{"empty_cache:step", offsetof(sim_options, empty_cache_per_step)},
                    {"pools:lifetime", offsetof(sim_options, lifetime_pools)}};
    char rest[AM_SETTINGS_CONF_MAX] = "";
    size_t used = 0;
    for (char *save = NULL, *item = strtok_r(spec, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        int taken = 0;
        for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++)
            if (!strcmp(item, policies[i].key)) {
                *(int *)((char *)opt + policies[i].offset) = 1;
                taken = 1;
            }
        if (!taken && used < sizeof rest)
            used +=
                (size_t)snprintf(rest + used, sizeof rest - used, "%s%s", used ? "," : "", item);
    }
    snprintf(spec, AM_SETTINGS_CONF_MAX, "%s", rest);
}

const char simulate_usage[] =
    "usage: memanalyze simulate INPUT [--config SPEC]... [--device N] [--device-memory SIZE] "
    "[--json] [-o FILE]\n"
    "The run's allocation requests replayed through PyTorch's caching allocator under\n"
    "other settings: peaks, free memory, driver allocations, OOMs, and the smallest\n"
    "device memory the run fits in.\n";

/* ---- the run's own settings ------------------------------------------------------------- */

/* The settings the replay followed (meta allocator_settings). */
static am_settings own_settings(sqlite3 *db) {
    am_settings s = am_settings_default();
    sqlite3_stmt *st = db_statement(db, "SELECT value FROM meta WHERE key = 'allocator_settings'");
    if (st && sqlite3_step(st) == SQLITE_ROW)
        am_settings_from_json(&s, (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return s;
}

/* ---- the device's memory ------------------------------------------------------------------ */

/* The memory limit the input shows, tried in this order: PyTorch's OOM report (what it had
 * reserved and what the driver said was free); an OOM without that figure, or a failed
 * cudaMalloc (the limit lay at the most the run ever reserved, short of what the failed call
 * asked for on top); the device's total; none. */
static uint64_t device_memory(sqlite3 *db, int device, const char **source) {
    static const struct {
        const char *sql, *source;
    } ways[] = {
        {"SELECT e.reserved_bytes + (SELECT c.value FROM counters c WHERE c.device = e.device AND "
         "c.kind = 'driver_free' ORDER BY abs(c.ts_ns - e.ts_ns) LIMIT 1) FROM event_rows e "
         "WHERE e.device = ?1 AND e.op = {op:oom} ORDER BY e.event_id LIMIT 1",
         "an OOM's reserved + free"},
        {"SELECT max((SELECT peak_reserved_bytes FROM devices WHERE device = ?1), "
         "reserved_bytes) FROM event_rows WHERE device = ?1 AND op IN ({op:oom}, "
         "{op:alloc_failed}) ORDER BY event_id LIMIT 1",
         "the most the run reserved: it failed to get more"},
        {"SELECT total_bytes FROM devices WHERE device = ?1", "the device's total"},
    };
    for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        int64_t v = db_query_i64(db, ways[i].sql, device, 0, 0);
        if (v > 0) {
            *source = ways[i].source;
            return (uint64_t)v;
        }
    }
    *source = "none known: unlimited";
    return 0;
}

/* ---- running ------------------------------------------------------------------------------ */

/* PyTorch's memory fraction: the allocator reserves at most that share of the device (and only
 * then collects garbage). */
static double fraction_of(const sim_config *c) {
    return c->settings.known & AM_SET_MEMORY_FRACTION ? c->settings.per_process_memory_fraction
                                                      : 1.0;
}

/* The most the allocator may reserve on a device of `memory` bytes (0: unlimited). */
static uint64_t limit_of(const sim_config *c, uint64_t memory) {
    return memory ? (uint64_t)(fraction_of(c) * (double)memory) : 0;
}

/* The device memory whose fraction is `limit`, up to a whole BISECT_STEP. */
static uint64_t memory_for(const sim_config *c, uint64_t limit) {
    if (fraction_of(c) >= 1.0)
        return limit;
    double bytes = (double)limit / fraction_of(c);
    uint64_t steps = (uint64_t)(bytes / (double)BISECT_STEP);
    while ((double)(steps * BISECT_STEP) < bytes)
        steps++;
    return steps * BISECT_STEP;
}

/* One replay, the allocator allowed `limit` bytes (0: unlimited). */
static int run(sqlite3 *db, int device, const sim_config *c, uint64_t limit, sim_result *r,
               char *err, size_t errlen) {
    am_config cfg = am_settings_config(&c->settings, am_config_default());
    cfg.device_capacity = limit;
    if (!c->fraction_set)
        cfg.garbage_collection_threshold = 0;
    sim_options opt = c->opt;
    opt.seed_as_recorded = c->own;
    return simulate_run(db, device, &cfg, &opt, r, err, errlen);
}

/* The smallest memory (to BISECT_STEP) in which the run has no OOM: the search starts from
 * the unlimited run's peak reserved (enough) and its peak allocated (a lower bound), and stops
 * at BISECT_BUDGET times one run's time (a second at least), leaving a bracket. More memory
 * could in principle trip a different cache decision, so this is a search, not a proof. It
 * searches the allocator's limit; under a memory fraction the device needs that much more. */
static int search_min_memory(sqlite3 *db, int device, sim_config *c, uint64_t memory,
                             double one_run, char *err, size_t errlen) {
    sim_result unlimited = c->r; /* the run already made, when it had no limit */
    if (memory && run(db, device, c, 0, &unlimited, err, errlen) != 0)
        return -1;
    uint64_t fits = unlimited.peak_reserved, fails = unlimited.peak_allocated;
    fails = fails > BISECT_STEP ? fails - BISECT_STEP : 0;
    double until = gmt_seconds() + (BISECT_BUDGET * one_run > 1.0 ? BISECT_BUDGET * one_run : 1.0);
    if (memory)
        until -= one_run; /* the unlimited run counts */
    while (fits - fails > BISECT_STEP && gmt_seconds() + one_run <= until) {
        uint64_t mid = fails + (fits - fails) / 2 / BISECT_STEP * BISECT_STEP;
        if (mid <= fails)
            mid = fails + BISECT_STEP;
        sim_result r;
        if (run(db, device, c, mid, &r, err, errlen) != 0)
            return -1;
        if (r.ooms)
            fails = mid;
        else
            fits = mid;
    }
    c->min_memory = memory_for(c, fits);
    c->min_memory_low = memory_for(c, fails);
    c->searched = fits - fails <= BISECT_STEP;
    return 0;
}

/* ---- output ------------------------------------------------------------------------------- */

/* The recording's first OOM under this configuration. */
static const char *recorded_oom_word(const sim_result *r) {
    if (!r->recorded_ooms)
        return NULL;
    return r->recorded_ooms_kept ? "still happens" : "avoided";
}

static void print_text(const char *input, int device, uint64_t memory, const char *source,
                       const sim_config *c, size_t n) {
    char b[8][32];
    printf("memanalyze simulate: %s, device %d, device memory %s (%s)\n", input, device,
           memory ? units_bytes(memory, b[0], 32) : "unlimited", source);
    for (size_t i = 0; i < n; i++) {
        const sim_result *r = &c[i].r;
        printf("\n  %s%s\n", i == 0 ? "the run's own: " : "", c[i].spec);
        printf("    peak reserved %s, peak allocated %s, %llu driver allocations",
               units_bytes(r->peak_reserved, b[0], 32), units_bytes(r->peak_allocated, b[1], 32),
               (unsigned long long)r->driver_allocations);
        if (r->empty_caches)
            printf(", %llu empty_cache() calls replayed", (unsigned long long)r->empty_caches);
        printf("\n    at the peak: %s trapped, %s releasable; at the end: %s reserved, %s trapped, "
               "%s releasable\n",
               units_bytes(r->trapped_at_peak, b[2], 32),
               units_bytes(r->releasable_at_peak, b[3], 32), units_bytes(r->reserved_end, b[4], 32),
               units_bytes(r->trapped_end, b[5], 32), units_bytes(r->releasable_end, b[6], 32));
        if (r->ooms)
            printf("    %llu OOM%s, the first at event %lld asking %s with %s free\n",
                   (unsigned long long)r->ooms, r->ooms == 1 ? "" : "s",
                   (long long)r->first_oom.event_id, units_bytes(r->first_oom.requested, b[0], 32),
                   units_bytes(r->first_oom.free, b[1], 32));
        else
            printf("    no OOM\n");
        if (r->recorded_ooms == 1)
            printf("    the recorded OOM %s\n",
                   r->recorded_ooms_kept ? "still happens" : "is avoided");
        else if (r->recorded_ooms)
            printf("    of the %llu recorded OOMs, %llu still happen\n",
                   (unsigned long long)r->recorded_ooms, (unsigned long long)r->recorded_ooms_kept);
        if (c[i].searched)
            printf("    needs %s of device memory (a search to 2 MiB)\n",
                   units_bytes(c[i].min_memory, b[0], 32));
        else
            printf("    needs at most %s of device memory, and %s less is too little (the "
                   "search stopped at its time budget)\n",
                   units_bytes(c[i].min_memory, b[0], 32),
                   units_bytes(c[i].min_memory - c[i].min_memory_low, b[1], 32));
        if (i == 0 && r->compared)
            printf("    reproduces the recording: %s (recorded peak reserved %s)\n",
                   r->differing ? "no, reserved differs"
                                : "yes, reserved equal after every "
                                  "request",
                   units_bytes(r->recorded_peak_reserved, b[0], 32));
        if (i == 0 && r->compared && r->differing)
            printf(
                "    after %llu of %llu requests and frees, from event %lld on: read its figures "
                "as estimates\n",
                (unsigned long long)r->differing, (unsigned long long)r->compared_events,
                (long long)r->first_difference);
        if (i == 0 && !r->compared)
            printf("    not compared with the recording: segments other than PyTorch's are on "
                   "this device\n");
        if (c[i].settings.garbage_collection_threshold > 0 && !c[i].fraction_set)
            printf("    garbage_collection_threshold changes nothing here: PyTorch collects only "
                   "under a memory fraction (per_process_memory_fraction, or --device-memory)\n");
        if (i == 0 && r->seed_blocks)
            printf("    %llu blocks were live when the recording began: allocated first, in "
                   "order, as their history is unknown\n",
                   (unsigned long long)r->seed_blocks);
    }
}

static void print_json(int device, uint64_t memory, const sim_config *c, size_t n) {
    printf("{\"device\": %d, \"device_memory_bytes\": ", device);
    if (memory)
        printf("%llu", (unsigned long long)memory);
    else
        printf("null");
    printf(", \"configs\": [");
    for (size_t i = 0; i < n; i++) {
        const sim_result *r = &c[i].r;
        printf("%s\n  {\"config\": ", i ? "," : "");
        json_string(stdout, c[i].spec);
        printf(", \"own\": %s, \"peak_reserved_bytes\": %llu, \"peak_allocated_bytes\": %llu, "
               "\"trapped_at_peak_bytes\": %llu, \"releasable_at_peak_bytes\": %llu, "
               "\"reserved_end_bytes\": %llu, \"trapped_end_bytes\": %llu, "
               "\"releasable_end_bytes\": %llu, \"driver_allocations\": %llu, "
               "\"empty_cache_calls\": %llu, \"ooms\": [",
               i == 0 ? "true" : "false", (unsigned long long)r->peak_reserved,
               (unsigned long long)r->peak_allocated, (unsigned long long)r->trapped_at_peak,
               (unsigned long long)r->releasable_at_peak, (unsigned long long)r->reserved_end,
               (unsigned long long)r->trapped_end, (unsigned long long)r->releasable_end,
               (unsigned long long)r->driver_allocations, (unsigned long long)r->empty_caches);
        if (r->ooms)
            printf("{\"event_id\": %lld, \"requested_bytes\": %llu, \"free_bytes\": %llu}",
                   (long long)r->first_oom.event_id, (unsigned long long)r->first_oom.requested,
                   (unsigned long long)r->first_oom.free);
        printf("], \"oom_count\": %llu, \"recorded_oom\": ", (unsigned long long)r->ooms);
        const char *word = recorded_oom_word(r);
        if (word)
            json_string(stdout, word);
        else
            printf("null");
        printf(", \"recorded_ooms\": %llu, \"recorded_ooms_still_happening\": %llu",
               (unsigned long long)r->recorded_ooms, (unsigned long long)r->recorded_ooms_kept);
        printf(", \"min_device_memory_bytes\": %llu, \"min_device_memory_exact\": %s",
               (unsigned long long)c[i].min_memory, c[i].searched ? "true" : "false");
        printf(", \"garbage_collection\": %s", c[i].settings.garbage_collection_threshold <= 0
                                                   ? "null"
                                               : c[i].fraction_set ? "\"active\""
                                                                   : "\"inert\"");
        if (i == 0) {
            printf(", \"reproduction\": ");
            if (r->compared)
                printf("{\"compared_events\": %llu, \"differing\": %llu, "
                       "\"first_difference_event_id\": %lld, \"recorded_peak_reserved_bytes\": "
                       "%llu}",
                       (unsigned long long)r->compared_events, (unsigned long long)r->differing,
                       (long long)r->first_difference,
                       (unsigned long long)r->recorded_peak_reserved);
            else
                printf("null");
        }
        printf("}");
    }
    printf("\n], ");
}

/* One sentence: what the other configurations change against the run's own — the recorded
 * OOMs, the memory the run needs. */
static void verdict(const sim_config *c, size_t n, char *out, size_t len) {
    const sim_result *own = &c[0].r;
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (c[i].min_memory < c[best].min_memory)
            best = i;
    char b1[32], b2[32];
    size_t used = 0;
    out[0] = 0;
    for (size_t i = 1; i < n && used < len; i++)
        if (own->recorded_ooms_kept && !c[i].r.recorded_ooms_kept)
            used +=
                (size_t)snprintf(out + used, len - used, "%s%s avoids the recorded OOM%s",
                                 used ? "; " : "", c[i].spec, own->recorded_ooms > 1 ? "s" : "");
    if (used >= len)
        return;
    if (best == 0)
        snprintf(out + used, len - used,
                 "%sno configuration here needs less device memory than "
                 "the run's own (%s)",
                 used ? "; " : "", units_bytes(c[0].min_memory, b1, 32));
    else
        snprintf(out + used, len - used,
                 "%s%s needs the least device memory: %s, %s less than "
                 "the run's own",
                 used ? "; " : "", c[best].spec, units_bytes(c[best].min_memory, b1, 32),
                 units_bytes(c[0].min_memory - c[best].min_memory, b2, 32));
}

/* ---- the command -------------------------------------------------------------------------- */

static sim_config configs[MAX_CONFIGS + 1];
static size_t nconfigs = 1;   /* configs[0]: the run's own */
static uint64_t memory_given; /* --device-memory, 0: not given */

static int take_config(cli_ctx *ctx, const char *arg) {
    (void)ctx;
    char err[512];
    if (nconfigs > MAX_CONFIGS)
        return cli_error("at most %d --config", MAX_CONFIGS);
    sim_config *sc = &configs[nconfigs++];
    memset(sc, 0, sizeof *sc);
    snprintf(sc->spec, sizeof sc->spec, "%s", arg);
    char conf[AM_SETTINGS_CONF_MAX];
    snprintf(conf, sizeof conf, "%s", arg);
    take_policies(conf, &sc->opt);
    sc->settings = am_settings_default();
    if (am_settings_parse(&sc->settings, conf, err, sizeof err) != 0)
        return cli_error("--config '%s': %s", arg, err);
    if ((sc->settings.known & AM_SET_MEMORY_FRACTION) &&
        sc->settings.per_process_memory_fraction <= 0)
        return cli_error("--config '%s': per_process_memory_fraction:0 leaves the "
                         "allocator nothing",
                         arg);
    if (sc->settings.backend_async)
        return cli_error("--config '%s': backend:cudaMallocAsync is the driver's pool, "
                         "not the caching allocator this simulates",
                         arg);
    return 0;
}

static int take_memory(cli_ctx *ctx, const char *arg) {
    (void)ctx;
    if (gmt_parse_size(arg, &memory_given) != 0 || memory_given == 0)
        return cli_error("bad --device-memory '%s' (e.g. 80GiB)", arg);
    return 0;
}

/* -o in text[0] */
const cli_option simulate_options[] = {
    {"config", 'c', CLI_CALL, 0, 0, NULL,
     "  --config SPEC        PYTORCH_CUDA_ALLOC_CONF syntax, e.g. "
     "expandable_segments:True,max_split_size_mb:256,\n"
     "                       and two policies of its own: empty_cache:step (empty_cache()\n"
     "                       after every step) and pools:lifetime (blocks that outlive\n"
     "                       their step in pools apart from those that do not)\n"
     "                       (repeat for more; default: the run's own settings and\n"
     "                       the same with expandable segments switched)\n",
     take_config},
    {"device", 'd', CLI_COUNT, offsetof(cli_ctx, device), 1 << 20, NULL,
     "  --device N           the device (default: the one with the highest peak)\n", NULL},
    {"device-memory", 'm', CLI_CALL, 0, 0, NULL,
     "  --device-memory SIZE the memory limit, e.g. 80GiB (default: from the input: an\n"
     "                       OOM's reserved + free, else the device's total, else none);\n"
     "                       given, it is also the memory fraction PyTorch's\n"
     "                       garbage_collection_threshold needs (as is a config's\n"
     "                       per_process_memory_fraction, a share of the device)\n",
     take_memory},
    {"json", 'j', CLI_FLAG, offsetof(cli_ctx, json), 0, NULL,
     "  --json               machine-readable output\n", NULL},
    {"output", 'o', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  -o FILE              also draw reserved memory over the run under each\n"
     "                       configuration (.png, .svg or .pdf)\n",
     NULL},
    CLI_OPT_END};

int run_simulate(cli_ctx *ctx) {
    size_t n = nconfigs;
    long device = ctx->device;
    uint64_t memory = memory_given;
    int json = ctx->json, have_memory = memory_given != 0;
    const char *picture = ctx->text[0];
    char err[512];
    const char *input = ctx->input;
    sqlite3 *db = ctx->db;
    ctx->db = NULL; /* closed here */
    int rc = 0;
    int64_t requests = simulate_requests(db, (int)device);
    if (requests <= 0) {
        sqlite3_close(db);
        return cli_error("%s: device %ld has no PyTorch caching-allocator blocks: nothing to "
                         "simulate (a trace of driver calls alone has no allocator)",
                         input, device);
    }
    if (!when_has_history(db)) {
        sqlite3_close(db);
        return cli_error("%s: no allocation history (the snapshot holds its final state only): "
                         "nothing to simulate",
                         input);
    }
    for (size_t i = 1; i < n; i++)
        if ((configs[i].opt.empty_cache_per_step || configs[i].opt.lifetime_pools) &&
            db_query_i64(db, "SELECT count(*) FROM steps", 0, 0, 0) == 0) {
            sqlite3_close(db);
            return cli_error("--config '%s': empty_cache:step and pools:lifetime need steps, and "
                             "%s has none",
                             configs[i].spec, input);
        }
    const char *source = "--device-memory";
    if (!have_memory)
        memory = device_memory(db, (int)device, &source);
    memset(&configs[0], 0, sizeof configs[0]);
    configs[0].settings = own_settings(db);
    configs[0].own = 1;
    am_settings_conf_text(&configs[0].settings, configs[0].spec, sizeof configs[0].spec);
    for (size_t i = 0; i < n; i++)
        configs[i].fraction_set =
            have_memory ||
            (memory > 0 && (configs[i].settings.known & AM_SET_MEMORY_FRACTION) != 0);
    if (n == 1) { /* the default: the run's own, and expandable segments switched */
        configs[1] = configs[0];
        configs[1].own = 0;
        configs[1].settings.expandable_segments = !configs[0].settings.expandable_segments;
        configs[1].settings.known |= AM_SET_EXPANDABLE;
        am_settings_conf_text(&configs[1].settings, configs[1].spec, sizeof configs[1].spec);
        n = 2;
    }
    /* -o: the columns of every configuration's first run (not the search's) */
    static int64_t columns[(MAX_CONFIGS + 1) * PICTURE_COLUMNS];
    for (size_t i = 0; picture && i < n * PICTURE_COLUMNS; i++)
        columns[i] = -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        double began = gmt_seconds();
        if (picture) {
            configs[i].opt.ncolumns = PICTURE_COLUMNS;
            configs[i].opt.reserved_max = columns + i * PICTURE_COLUMNS;
        }
        int failed = run(db, (int)device, &configs[i], limit_of(&configs[i], memory), &configs[i].r,
                         err, sizeof err);
        configs[i].opt.ncolumns = 0;
        configs[i].opt.reserved_max = NULL;
        if (failed) {
            rc = cli_error("%s: %s", input, err);
            break;
        }
        double ran = gmt_seconds();
        if (search_min_memory(db, (int)device, &configs[i], memory, ran - began, err, sizeof err) !=
            0)
            rc = cli_error("%s: %s", input, err);
        if (getenv(GMT_ENV_TIMING)) /* for bench/ */
            fprintf(stderr, "simulate %s: %.3f s, the search %.3f s\n", configs[i].spec,
                    ran - began, gmt_seconds() - ran);
    }
    if (rc == 0 && picture) {
        const char *labels[MAX_CONFIGS + 1];
        int64_t peaks[MAX_CONFIGS + 1];
        for (size_t i = 0; i < n; i++) {
            labels[i] = configs[i].spec;
            peaks[i] = (int64_t)configs[i].r.peak_reserved;
        }
        plot_simulation ps = {.input = input,
                              .device = (int)device,
                              .nconfigs = n,
                              .label = labels,
                              .peak_reserved = peaks,
                              .ncolumns = PICTURE_COLUMNS,
                              .events = (uint64_t)simulate_events(db, (int)device),
                              .reserved_max = columns,
                              .device_memory = memory};
        if (plot_simulate(&ps, picture, err, sizeof err) != 0)
            rc = cli_error("%s", err);
    }
    char said[1024];
    if (rc == 0)
        verdict(configs, n, said, sizeof said);
    if (rc == 0 && json) {
        print_json((int)device, memory, configs, n);
        printf("\"verdict\": ");
    }
    if (rc == 0 && !json)
        print_text(input, (int)device, memory, source, configs, n);
    if (rc == 0 && json) {
        json_string(stdout, said);
        printf("}\n");
    } else if (rc == 0) {
        printf("\n  verdict: %s.\n", said);
    }
    sqlite3_close(db);
    return rc;
}
