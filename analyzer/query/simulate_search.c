/* simulate_search.c — `memanalyze simulate`'s facts (see simulate_search.h): the run's own
 * settings and the device memory from the database, a run per configuration through
 * simulate.h, the bisection for the smallest memory, and the verdicts. Kept apart from
 * simulate.c, which owns one replay and knows nothing of configurations side by side. */
#include "simulate_search.h"

#include "db_query.h"
#include "gmt_assert.h"
#include "gmt_clock.h"
#include "units.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BISECT_BUDGET 5.0 /* times one simulation's duration */

/* ---- the configurations --------------------------------------------------------------------- */

/* Removes the policies' keys from `spec` (the rest is PYTORCH_CUDA_ALLOC_CONF text) into *opt. */
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

int sim_config_parse(const char *text, sim_config *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    snprintf(out->spec, sizeof out->spec, "%s", text);
    char conf[AM_SETTINGS_CONF_MAX];
    snprintf(conf, sizeof conf, "%s", text);
    take_policies(conf, &out->opt);
    out->settings = am_settings_default();
    if (am_settings_parse(&out->settings, conf, err, errlen) != 0)
        return -1;
    if ((out->settings.known & AM_SET_MEMORY_FRACTION) &&
        out->settings.per_process_memory_fraction <= 0) {
        snprintf(err, errlen, "per_process_memory_fraction:0 leaves the allocator nothing");
        return -1;
    }
    if (out->settings.backend_async) {
        snprintf(err, errlen,
                 "backend:cudaMallocAsync is the driver's pool, not the caching allocator this "
                 "simulates");
        return -1;
    }
    return 0;
}

/* The settings the replay followed (meta allocator_settings). */
static am_settings own_settings(sqlite3 *db) {
    am_settings s = am_settings_default();
    sqlite3_stmt *st = db_statement(db, "SELECT value FROM meta WHERE key = 'allocator_settings'");
    if (st && sqlite3_step(st) == SQLITE_ROW)
        am_settings_from_json(&s, (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return s;
}

/* ---- the device's memory -------------------------------------------------------------------- */

/* The memory limit the input shows, tried in this order: PyTorch's OOM report (what it had
 * reserved then, and the free memory its entry recorded: the driver's free sample the OOM
 * brought, the last one at or before it — so the limit is what the device really had, not the
 * most the run happened to reserve); an OOM without that figure, or a failed cudaMalloc (the
 * limit lay at the most the run ever reserved, short of what the failed call asked for on top);
 * the device's total; none. */
static uint64_t device_memory(sqlite3 *db, int device, const char **source) {
    static const struct {
        const char *sql, *source;
    } ways[] = {
        {"SELECT e.reserved_bytes + (SELECT c.value FROM counters c WHERE c.device = e.device AND "
         "c.kind = 'driver_free' AND c.event_id < e.event_id ORDER BY c.event_id DESC, c.rowid "
         "DESC LIMIT 1) FROM event_rows e WHERE e.device = ?1 AND e.op = {op:oom} ORDER BY "
         "e.event_id LIMIT 1",
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

/* ---- running -------------------------------------------------------------------------------- */

/* PyTorch's memory fraction: the allocator reserves at most that share of the device (and only
 * then collects garbage). */
static double fraction_of(const sim_row *row) {
    const am_settings *s = &row->config.settings;
    return s->known & AM_SET_MEMORY_FRACTION ? s->per_process_memory_fraction : 1.0;
}

/* The most the allocator may reserve on a device of `memory` bytes (0: unlimited). */
static uint64_t limit_of(const sim_row *row, uint64_t memory) {
    return memory ? (uint64_t)(fraction_of(row) * (double)memory) : 0;
}

/* The device memory whose fraction is `limit`, up to a whole SIM_SEARCH_STEP. */
static uint64_t memory_for(const sim_row *row, uint64_t limit) {
    if (fraction_of(row) >= 1.0)
        return limit;
    double bytes = (double)limit / fraction_of(row);
    uint64_t steps = (uint64_t)(bytes / (double)SIM_SEARCH_STEP);
    while ((double)(steps * SIM_SEARCH_STEP) < bytes)
        steps++;
    return steps * SIM_SEARCH_STEP;
}

/* One replay, the allocator allowed `limit` bytes (0: unlimited); `columns` (NULL: none) gathers
 * the picture's SIM_PICTURE_COLUMNS, and `ooms` with it the columns where the model ran out. The
 * recording's own device (its memory under the run's own fraction) tells its release-and-retry
 * from empty_cache(), whatever `limit` is tried. */
static int run(const sim_search *s, const sim_row *row, uint64_t limit, int64_t *columns,
               uint8_t *ooms, sim_result *r, char *err, size_t errlen) {
    am_config cfg = am_settings_config(&row->config.settings, am_config_default());
    cfg.device_capacity = limit;
    if (!row->fraction_set)
        cfg.garbage_collection_threshold = 0;
    sim_options opt = row->config.opt;
    opt.seed_as_recorded = row->own;
    opt.recorded_capacity = limit_of(&s->rows[0], s->recorded_memory); /* under its fraction */
    opt.ncolumns = columns ? SIM_PICTURE_COLUMNS : 0;
    opt.reserved_max = columns;
    opt.oom_columns = columns ? ooms : NULL;
    char why[512];
    if (simulate_run(s->db, s->device, &cfg, &opt, r, why, sizeof why) == 0)
        return 0;
    snprintf(err, errlen, "%s: %s", s->input, why);
    return -1;
}

/* The smallest memory (to SIM_SEARCH_STEP) in which the run has no OOM: the search starts from
 * the unlimited run's peak reserved (enough) and its peak allocated (a lower bound), and stops
 * at BISECT_BUDGET times one run's time (a second at least), leaving a bracket. More memory
 * could in principle trip a different cache decision, so this is a search, not a proof. It
 * searches the allocator's limit; under a memory fraction the device needs that much more. */
static int search_min_memory(const sim_search *s, sim_row *row, double one_run, char *err,
                             size_t errlen) {
    sim_result unlimited = row->r; /* the run already made, when it had no limit */
    if (s->device_memory && run(s, row, 0, NULL, NULL, &unlimited, err, errlen) != 0)
        return -1;
    uint64_t fits = unlimited.peak_reserved, fails = unlimited.peak_allocated;
    fails = fails > SIM_SEARCH_STEP ? fails - SIM_SEARCH_STEP : 0;
    double until = gmt_seconds() + (BISECT_BUDGET * one_run > 1.0 ? BISECT_BUDGET * one_run : 1.0);
    if (s->device_memory)
        until -= one_run; /* the unlimited run counts */
    while (fits - fails > SIM_SEARCH_STEP && gmt_seconds() + one_run <= until) {
        uint64_t mid = fails + (fits - fails) / 2 / SIM_SEARCH_STEP * SIM_SEARCH_STEP;
        if (mid <= fails)
            mid = fails + SIM_SEARCH_STEP;
        sim_result r;
        if (run(s, row, mid, NULL, NULL, &r, err, errlen) != 0)
            return -1;
        if (r.ooms)
            fails = mid;
        else
            fits = mid;
    }
    row->min_memory = memory_for(row, fits);
    row->min_memory_low = memory_for(row, fails);
    row->min_memory_gap = row->min_memory - row->min_memory_low;
    row->min_memory_exact = fits - fails <= SIM_SEARCH_STEP;
    return 0;
}

/* ---- the answer ----------------------------------------------------------------------------- */

int sim_search_begin(sqlite3 *db, const sim_search_args *args, sim_search *out, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    out->db = db;
    out->input = args->input;
    out->device = args->device;
    if (GMT_NEVER(args->nconfigs > SIM_MAX_CONFIGS)) {
        snprintf(err, errlen, "at most %d --config", SIM_MAX_CONFIGS);
        return -1;
    }
    if (simulate_requests(db, args->device) <= 0) {
        snprintf(err, errlen,
                 "%s: device %d has no PyTorch caching-allocator blocks: nothing to simulate (a "
                 "trace of driver calls alone has no allocator)",
                 args->input, args->device);
        return -1;
    }
    if (!when_has_history(db)) {
        snprintf(err, errlen,
                 "%s: no allocation history (the snapshot holds its final state only): nothing "
                 "to simulate",
                 args->input);
        return -1;
    }
    /* A history of one entry, or of frees alone, asks the allocator nothing: a replay of it
     * would "reproduce" the recording vacuously and rank configurations by the seed alone. */
    int64_t entries = db_query_i64(db,
                                   "SELECT count(*) FROM event_rows WHERE device = ?1 AND event_id "
                                   "> 0 AND source = {source:torch} AND kind = {kind:device}",
                                   args->device, 0, 0);
    int64_t asks = db_query_i64(db,
                                "SELECT count(*) FROM event_rows WHERE device = ?1 AND event_id > "
                                "0 AND source = {source:torch} AND kind = {kind:device} AND level "
                                "= {level:block} AND op IN ({op:alloc}, {op:oom})",
                                args->device, 0, 0);
    if (entries < 2 || asks == 0) {
        if (entries < 2)
            snprintf(err, errlen, "%s: device %d's history holds %s: nothing to replay",
                     args->input, args->device, entries ? "one entry" : "no entry");
        else
            snprintf(err, errlen,
                     "%s: device %d's history holds %lld entries and no allocation: nothing to "
                     "replay",
                     args->input, args->device, (long long)entries);
        return -1;
    }
    for (size_t i = 0; i < args->nconfigs; i++)
        if ((args->configs[i].opt.empty_cache_per_step || args->configs[i].opt.lifetime_pools) &&
            db_query_i64(db, "SELECT count(*) FROM steps", 0, 0, 0) == 0) {
            snprintf(err, errlen,
                     "--config '%s': empty_cache:step and pools:lifetime need steps, and %s has "
                     "none",
                     args->configs[i].spec, args->input);
            return -1;
        }
    out->recorded_memory = device_memory(db, args->device, &out->memory_source);
    out->device_memory = out->recorded_memory;
    if (args->device_memory) {
        out->memory_source = "--device-memory";
        out->device_memory = args->device_memory;
    }

    out->nrows = args->nconfigs ? args->nconfigs + 1 : 2;
    out->rows = calloc(out->nrows, sizeof *out->rows);
    if (!out->rows) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    sim_row *own = &out->rows[0];
    own->config.settings = own_settings(db);
    own->own = 1;
    am_settings_conf_text(&own->config.settings, own->config.spec, sizeof own->config.spec);
    if (args->nconfigs == 0) { /* the default: the run's own, and expandable segments switched */
        sim_config *es = &out->rows[1].config;
        *es = own->config;
        es->settings.expandable_segments = !own->config.settings.expandable_segments;
        es->settings.known |= AM_SET_EXPANDABLE;
        am_settings_conf_text(&es->settings, es->spec, sizeof es->spec);
    }
    for (size_t i = 0; i < args->nconfigs; i++)
        out->rows[i + 1].config = args->configs[i];
    for (size_t i = 0; i < out->nrows; i++) {
        sim_row *row = &out->rows[i];
        row->fraction_set =
            args->device_memory != 0 ||
            (out->device_memory > 0 && (row->config.settings.known & AM_SET_MEMORY_FRACTION) != 0);
        row->gc = row->config.settings.garbage_collection_threshold <= 0 ? SIM_GC_NONE
                  : row->fraction_set                                    ? SIM_GC_ACTIVE
                                                                         : SIM_GC_INERT;
    }

    if (args->picture) {
        out->columns = malloc(out->nrows * SIM_PICTURE_COLUMNS * sizeof *out->columns);
        out->oom_columns = calloc(out->nrows * SIM_PICTURE_COLUMNS, sizeof *out->oom_columns);
        out->labels = calloc(out->nrows, sizeof *out->labels);
        out->peaks = calloc(out->nrows, sizeof *out->peaks);
        if (!out->columns || !out->oom_columns || !out->labels || !out->peaks) {
            sim_search_free(out);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (size_t i = 0; i < out->nrows * SIM_PICTURE_COLUMNS; i++)
            out->columns[i] = -1;
    }
    return 0;
}

int sim_search_row(sim_search *s, size_t i, char *err, size_t errlen) {
    if (GMT_NEVER(i >= s->nrows)) {
        snprintf(err, errlen, "no configuration %zu", i);
        return -1;
    }
    sim_row *row = &s->rows[i];
    double began = gmt_seconds();
    int64_t *columns = s->columns ? s->columns + i * SIM_PICTURE_COLUMNS : NULL;
    uint8_t *ooms = s->oom_columns ? s->oom_columns + i * SIM_PICTURE_COLUMNS : NULL;
    if (run(s, row, limit_of(row, s->device_memory), columns, ooms, &row->r, err, errlen) != 0)
        return -1;
    double ran = gmt_seconds();
    row->ran = 1;
    row->run_seconds = ran - began;
    int rc = search_min_memory(s, row, ran - began, err, errlen);
    row->search_seconds = gmt_seconds() - ran;
    const sim_result *r = &row->r;
    row->recorded_oom = !r->recorded_ooms       ? NULL
                        : r->recorded_ooms_kept ? "still happens"
                                                : "avoided";
    row->reproduction = !r->compared   ? SIM_NOT_COMPARED
                        : r->differing ? SIM_DIFFERS
                                       : SIM_REPRODUCED;
    return rc;
}

/* One sentence: what the other configurations change against the run's own — the recorded
 * OOMs, the memory the run needs. */
static void verdict(const sim_row *c, size_t n, char *out, size_t len) {
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
            used += (size_t)snprintf(out + used, len - used, "%s%s avoids the recorded OOM%s",
                                     used ? "; " : "", c[i].config.spec,
                                     own->recorded_ooms > 1 ? "s" : "");
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
                 used ? "; " : "", c[best].config.spec, units_bytes(c[best].min_memory, b1, 32),
                 units_bytes(c[0].min_memory - c[best].min_memory, b2, 32));
}

void sim_search_end(sim_search *s) {
    s->caveat[0] = 0;
    const sim_result *own = &s->rows[0].r;
    if (s->rows[0].reproduction == SIM_DIFFERS) {
        char b[32];
        int64_t d = own->largest_difference;
        snprintf(s->caveat, sizeof s->caveat,
                 "an estimate: the run's own configuration departs from the recording at event "
                 "%lld, reserved off by up to %s",
                 (long long)own->first_difference, units_bytes((uint64_t)(d < 0 ? -d : d), b, 32));
    }
    size_t used =
        s->caveat[0] ? (size_t)snprintf(s->verdict, sizeof s->verdict, "%s; ", s->caveat) : 0;
    if (used >= sizeof s->verdict)
        used = sizeof s->verdict - 1;
    verdict(s->rows, s->nrows, s->verdict + used, sizeof s->verdict - used);
    if (!s->columns)
        return;
    for (size_t i = 0; i < s->nrows; i++) {
        s->labels[i] = s->rows[i].config.spec;
        s->peaks[i] = (int64_t)s->rows[i].r.peak_reserved;
    }
    s->picture = (plot_simulation){.input = s->input,
                                   .device = s->device,
                                   .nconfigs = s->nrows,
                                   .label = s->labels,
                                   .peak_reserved = s->peaks,
                                   .ncolumns = SIM_PICTURE_COLUMNS,
                                   .events = (uint64_t)simulate_events(s->db, s->device),
                                   .last_event = (uint64_t)simulate_last_event(s->db, s->device),
                                   .reserved_max = s->columns,
                                   .oom = s->oom_columns,
                                   .device_memory = s->device_memory};
}

void sim_search_free(sim_search *s) {
    free(s->rows);
    free(s->columns);
    free(s->oom_columns);
    free(s->labels);
    free(s->peaks);
    s->rows = NULL;
    s->columns = NULL;
    s->oom_columns = NULL;
    s->labels = NULL;
    s->peaks = NULL;
    s->nrows = 0;
}
