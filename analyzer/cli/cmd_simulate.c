/* cmd_simulate.c — `memanalyze simulate INPUT [--config SPEC]...`: the run's allocation requests
 * under other caching-allocator settings, printed from query/simulate_search.h's structs: one
 * block (text) or object (JSON) per configuration with its peaks, the free memory split at the
 * peak and the end, the driver allocations it makes, the OOMs it hits, and the smallest device
 * memory it completes in. The first is the run's own configuration, and says how closely the
 * simulation reproduces the recording; the verdict ends it. -o draws through query/plots.h. */
#include "cli.h"
#include "commands.h"
#include "gmt_env.h"
#include "gmt_size.h"
#include "json_out.h"
#include "plots.h"
#include "simulate_search.h"
#include "trace_format.h"
#include "units.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char simulate_usage[] =
    "usage: memanalyze simulate INPUT [--config SPEC]... [--device N] [--device-memory SIZE] "
    "[--json] [-o FILE]\n"
    "The run's allocation requests replayed through PyTorch's caching allocator under\n"
    "other settings: peaks, free memory, driver allocations, OOMs, and the smallest\n"
    "device memory the run fits in.\n";

/* ---- output --------------------------------------------------------------------------------- */

static void print_text(const sim_search *s) {
    char b[8][32];
    printf("memanalyze simulate: %s, device %d, device memory %s (%s)\n", s->input, s->device,
           s->device_memory ? units_bytes(s->device_memory, b[0], 32) : "unlimited",
           s->memory_source);
    for (size_t i = 0; i < s->nrows; i++) {
        const sim_row *c = &s->rows[i];
        const sim_result *r = &c->r;
        printf("\n  %s%s\n", c->own ? "the run's own: " : "", c->config.spec);
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
            printf("    %llu OOM%s, the first at event %lld asking %s with %s free: %s short\n",
                   (unsigned long long)r->ooms, r->ooms == 1 ? "" : "s",
                   (long long)r->first_oom.event_id, units_bytes(r->first_oom.requested, b[0], 32),
                   units_bytes(r->first_oom.free, b[1], 32),
                   units_bytes(r->first_oom.shortfall, b[2], 32));
        else
            printf("    no OOM\n");
        /* the verdicts below rest on the run's own configuration reproducing the recording */
        const char *est = s->caveat[0] ? "estimate: " : "";
        if (r->recorded_ooms == 1)
            printf("    %sthe recorded OOM %s\n", est,
                   r->recorded_ooms_kept ? "still happens" : "is avoided");
        else if (r->recorded_ooms)
            printf("    %sof the %llu recorded OOMs, %llu still happen\n", est,
                   (unsigned long long)r->recorded_ooms, (unsigned long long)r->recorded_ooms_kept);
        char over[96] = "";
        if (s->device_memory && c->min_memory > s->device_memory)
            snprintf(over, sizeof over, ", %s more than the device memory",
                     units_bytes(c->min_memory - s->device_memory, b[3], 32));
        if (c->min_memory_exact)
            printf("    %sneeds %s of device memory%s (a search to %llu MiB)\n", est,
                   units_bytes(c->min_memory, b[0], 32), over, SIM_SEARCH_STEP >> 20);
        else
            printf("    %sneeds at most %s of device memory%s, and %s less is too little (the "
                   "search stopped at its time budget)\n",
                   est, units_bytes(c->min_memory, b[0], 32), over,
                   units_bytes(c->min_memory_gap, b[1], 32));
        if (c->own && c->reproduction == SIM_REPRODUCED)
            printf("    reproduces the recording: yes, reserved equal after every request "
                   "(recorded peak reserved %s)\n",
                   units_bytes(r->recorded_peak_reserved, b[0], 32));
        if (c->own && c->reproduction == SIM_DIFFERS) {
            const char *op = trace_op_name((unsigned)r->first_difference_op);
            printf("    reproduces the recording: no (recorded peak reserved %s): from event %lld "
                   "(%s %s) on, reserved %s against the recorded %s (%s)\n",
                   units_bytes(r->recorded_peak_reserved, b[0], 32), (long long)r->first_difference,
                   strchr("aeiou", op[0]) ? "an" : "a", op,
                   units_bytes(r->first_simulated_reserved, b[1], 32),
                   units_bytes(r->first_recorded_reserved, b[2], 32),
                   units_bytes_signed(
                       (int64_t)(r->first_simulated_reserved - r->first_recorded_reserved), b[3]));
            printf("    after %llu of %llu requests and frees reserved differs, by up to %s "
                   "(event %lld): read the figures as estimates\n",
                   (unsigned long long)r->differing, (unsigned long long)r->compared_events,
                   units_bytes_signed(r->largest_difference, b[4]),
                   (long long)r->largest_difference_event);
        }
        if (c->own && c->reproduction == SIM_NOT_COMPARED)
            printf("    not compared with the recording: segments other than PyTorch's are on "
                   "this device\n");
        if (c->gc == SIM_GC_INERT)
            printf("    garbage_collection_threshold changes nothing here: PyTorch collects only "
                   "under a memory fraction (per_process_memory_fraction, or --device-memory)\n");
        if (c->own && r->seed_blocks)
            printf("    %llu blocks were live when the recording began: allocated first, in "
                   "order, as their history is unknown\n",
                   (unsigned long long)r->seed_blocks);
    }
    printf("\n  verdict: %s.\n", s->verdict);
}

static void print_json(const sim_search *s) {
    printf("{\"device\": %d, \"device_memory_bytes\": ", s->device);
    if (s->device_memory)
        printf("%llu", (unsigned long long)s->device_memory);
    else
        printf("null");
    printf(", \"device_memory_source\": ");
    json_string(stdout, s->memory_source);
    printf(", \"search_step_bytes\": %llu, \"configs\": [", SIM_SEARCH_STEP);
    for (size_t i = 0; i < s->nrows; i++) {
        const sim_row *c = &s->rows[i];
        const sim_result *r = &c->r;
        printf("%s\n  {\"config\": ", i ? "," : "");
        json_string(stdout, c->config.spec);
        printf(", \"own\": %s, \"peak_reserved_bytes\": %llu, \"peak_allocated_bytes\": %llu, "
               "\"trapped_at_peak_bytes\": %llu, \"releasable_at_peak_bytes\": %llu, "
               "\"reserved_end_bytes\": %llu, \"trapped_end_bytes\": %llu, "
               "\"releasable_end_bytes\": %llu, \"driver_allocations\": %llu, "
               "\"empty_cache_calls\": %llu, \"ooms\": [",
               c->own ? "true" : "false", (unsigned long long)r->peak_reserved,
               (unsigned long long)r->peak_allocated, (unsigned long long)r->trapped_at_peak,
               (unsigned long long)r->releasable_at_peak, (unsigned long long)r->reserved_end,
               (unsigned long long)r->trapped_end, (unsigned long long)r->releasable_end,
               (unsigned long long)r->driver_allocations, (unsigned long long)r->empty_caches);
        if (r->ooms)
            printf("{\"event_id\": %lld, \"requested_bytes\": %llu, \"free_bytes\": %llu, "
                   "\"driver_request_bytes\": %llu, \"shortfall_bytes\": %llu}",
                   (long long)r->first_oom.event_id, (unsigned long long)r->first_oom.requested,
                   (unsigned long long)r->first_oom.free, (unsigned long long)r->first_oom.asked,
                   (unsigned long long)r->first_oom.shortfall);
        printf("], \"oom_count\": %llu, \"recorded_oom\": ", (unsigned long long)r->ooms);
        if (c->recorded_oom)
            json_string(stdout, c->recorded_oom);
        else
            printf("null");
        printf(", \"recorded_ooms\": %llu, \"recorded_ooms_still_happening\": %llu",
               (unsigned long long)r->recorded_ooms, (unsigned long long)r->recorded_ooms_kept);
        printf(", \"min_device_memory_bytes\": %llu, \"min_device_memory_exact\": %s, "
               "\"min_device_memory_too_little_bytes\": %llu",
               (unsigned long long)c->min_memory, c->min_memory_exact ? "true" : "false",
               (unsigned long long)c->min_memory_low);
        printf(", \"min_device_memory_over_bytes\": %llu",
               (unsigned long long)(s->device_memory && c->min_memory > s->device_memory
                                        ? c->min_memory - s->device_memory
                                        : 0));
        printf(", \"garbage_collection\": %s", c->gc == SIM_GC_NONE     ? "null"
                                               : c->gc == SIM_GC_ACTIVE ? "\"active\""
                                                                        : "\"inert\"");
        if (c->own) {
            printf(", \"reproduction\": ");
            if (c->reproduction != SIM_NOT_COMPARED) {
                printf("{\"compared_events\": %llu, \"differing\": %llu, "
                       "\"first_difference_event_id\": %lld, \"recorded_peak_reserved_bytes\": "
                       "%llu",
                       (unsigned long long)r->compared_events, (unsigned long long)r->differing,
                       (long long)r->first_difference,
                       (unsigned long long)r->recorded_peak_reserved);
                if (r->differing) {
                    printf(", \"first_difference_op\": ");
                    json_string(stdout, trace_op_name((unsigned)r->first_difference_op));
                    printf(", \"first_difference_reserved_bytes\": %llu, "
                           "\"first_difference_recorded_reserved_bytes\": %llu, "
                           "\"first_difference_bytes\": %lld, \"largest_difference_bytes\": "
                           "%lld, \"largest_difference_event_id\": %lld",
                           (unsigned long long)r->first_simulated_reserved,
                           (unsigned long long)r->first_recorded_reserved,
                           (long long)(r->first_simulated_reserved - r->first_recorded_reserved),
                           (long long)r->largest_difference,
                           (long long)r->largest_difference_event);
                }
                printf("}");
            } else
                printf("null");
            printf(", \"seed_blocks\": %llu", (unsigned long long)r->seed_blocks);
        }
        printf("}");
    }
    printf("\n], \"caveat\": ");
    if (s->caveat[0])
        json_string(stdout, s->caveat);
    else
        printf("null");
    printf(", \"verdict\": ");
    json_string(stdout, s->verdict);
    printf("}\n");
}

/* ---- the command ---------------------------------------------------------------------------- */

static sim_config configs[SIM_MAX_CONFIGS]; /* --config, in order */
static size_t nconfigs;
static uint64_t memory_given; /* --device-memory, 0: not given */

static int take_config(cli_ctx *ctx, const char *arg) {
    (void)ctx;
    char err[512];
    if (nconfigs >= SIM_MAX_CONFIGS)
        return cli_error("at most %d --config", SIM_MAX_CONFIGS);
    if (sim_config_parse(arg, &configs[nconfigs++], err, sizeof err) != 0)
        return cli_error("--config '%s': %s", arg, err);
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
     "                       OOM's reserved + the free memory its entry recorded, else\n"
     "                       the device's total, else none);\n"
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
    const char *picture = ctx->text[0];
    char err[8192]; /* the input's path, a configuration and a message */
    sim_search_args args = {.input = ctx->input,
                            .device = (int)ctx->device,
                            .configs = configs,
                            .nconfigs = nconfigs,
                            .device_memory = memory_given,
                            .picture = picture != NULL};
    sim_search s;
    if (sim_search_begin(ctx->db, &args, &s, err, sizeof err) != 0)
        return cli_error("%s", err);
    int rc = 0;
    for (size_t i = 0; i < s.nrows && rc == 0; i++) {
        if (sim_search_row(&s, i, err, sizeof err) != 0)
            rc = cli_error("%s", err);
        if (s.rows[i].ran && getenv(GMT_ENV_TIMING)) /* for bench/ */
            fprintf(stderr, "simulate %s: %.3f s, the search %.3f s\n", s.rows[i].config.spec,
                    s.rows[i].run_seconds, s.rows[i].search_seconds);
    }
    if (rc == 0)
        sim_search_end(&s);
    if (rc == 0 && picture && plot_simulate(&s.picture, picture, err, sizeof err) != 0)
        rc = cli_error("%s", err);
    if (rc == 0 && ctx->json)
        print_json(&s);
    else if (rc == 0)
        print_text(&s);
    sim_search_free(&s);
    return rc;
}
