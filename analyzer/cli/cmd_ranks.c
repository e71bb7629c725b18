/* cmd_ranks.c — `memanalyze ranks INPUTS...`: the ranks of one job side by side.
 *
 * The inputs (rank traces, their databases, or directories of them) get their databases in
 * parallel processes (ranks_import.h); a broken one is reported and the rest go on. Each rank is
 * then its summary tables only (run_summary.h), so a fleet of a thousand imported ranks reads
 * in seconds. Across ranks: the imbalance of peak allocated (max / mean, and the spread), the
 * bottleneck rank (the highest peak) and why — the sites whose bytes at its peak exceed the
 * median rank's most, sites matched by frames —, the ranks that ran out (an OOM), first by
 * time, then the first whose growth trend reaches its device, the ranks whose growth stands out
 * from the others' (a leak on one rank), and the devices of an input with several compared like
 * ranks. Without steps a rank's growth and forecast are "-" and "no steps", never 0 and never.
 * --db writes the per-rank summaries to one SQLite file with a `rank` column (query/rank_db.h).
 * Here: the options, the inputs named, and the table and findings as text and as JSON, both
 * printed from the one rank_stats (query/rank_stats.h). */
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "plots.h"
#include "rank_db.h"
#include "rank_stats.h"
#include "ranks_import.h"
#include "run_print.h"
#include "units.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char ranks_usage[] =
    "usage: memanalyze ranks INPUTS... [-j N] [--device N] [--top N] [--json]\n"
    "                        [--db OUT.db] [-o PICTURE]\n"
    "The ranks of a job side by side: per rank its peaks, fragmentation, growth and\n"
    "OOMs; across them the imbalance, the bottleneck rank and the sites that make it\n"
    "so, the ranks that ran out and the first to, ranks that leak alone, and the\n"
    "devices of an input with several. INPUTS are rank traces\n"
    "(memrec -o trace.%r.zst), their databases, or directories of them; each is\n"
    "imported in a process of its own and cached, so a second run is instant.\n";

static long jobs_given = -1; /* -j; -1: the number of cores */

static int take_jobs(cli_ctx *ctx, const char *arg) {
    (void)ctx;
    return cli_parse_count("jobs", arg, 4096, &jobs_given);
}

/* --db in text[0], -o in text[1]; -j is --jobs, so --json has no letter */
const cli_option ranks_options[] = {
    {"jobs", 'j', CLI_CALL, 0, 0, NULL,
     "  -j N          imports at a time (default: the number of cores)\n", take_jobs},
    {"device", 'd', CLI_COUNT, offsetof(cli_ctx, device), 1 << 20, NULL,
     "  --device N    the device of every rank (default: each rank's highest peak)\n", NULL},
    {"top", 'n', CLI_COUNT, offsetof(cli_ctx, top), 1 << 20, NULL,
     "  --top N       sites named for the bottleneck (default 10; 0: all)\n", NULL},
    {"json", 0, CLI_FLAG, offsetof(cli_ctx, json), 0, NULL,
     "  --json        machine-readable output\n", NULL},
    {"db", 'b', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --db OUT.db   also write the per-rank summaries (no events) to an SQLite file\n", NULL},
    {"output", 'o', CLI_TEXT, offsetof(cli_ctx, text[1]), 0, NULL,
     "  -o FILE       also draw peak per rank and a rank x step strip (.png, .svg, .pdf)\n", NULL},
    CLI_OPT_END};

/* ---- the output: text and JSON of one rank_stats ------------------------------------------ */

static const char *growth_text(int64_t v, char *buf) {
    char b[32];
    if (v == 0)
        return strcpy(buf, "0");
    snprintf(buf, 40, "%s/step", units_bytes_signed(v, b));
    return buf;
}

/* "first to run out: rank 5 (trace.5.zst), out of memory [on device 1] at step 7, 3.20 s into
 * its trace (2 OOMs)": the input's first OOM, on any of its devices, and its OOMs in all */
static void print_ran_out(FILE *out, const rank_stats *st) {
    char b[2][64];
    for (size_t i = 0; i < st->nran_out; i++) {
        const rank_entry *e = &st->ranks[st->ran_out[i]];
        fprintf(out, "  %s: rank %lld (%s), out of memory", i ? "then ran out" : "first to run out",
                (long long)e->rank, rank_input_name(e->input));
        if (e->devices.ndevices > 1)
            fprintf(out, " on device %d", e->first_oom_device);
        if (e->first_oom_step >= 0)
            fprintf(out, " at step %lld", (long long)e->first_oom_step);
        fprintf(out, ", %s into its trace (%lld OOM%s)\n",
                units_duration(e->first_oom_ts_ns > 0 ? (uint64_t)e->first_oom_ts_ns : 0, b[0], 64),
                (long long)e->input_ooms, e->input_ooms == 1 ? "" : "s");
    }
    if (st->nran_out > 1)
        fprintf(out, "    (ordered by %s)\n",
                st->ran_out_wall_clock ? "the wall clock"
                                       : "the time into each trace: a trace lacks its wall clock");
    if (st->nforecast) {
        const rank_entry *f = &st->ranks[st->forecast[0]];
        fprintf(out, "  %s: rank %lld (%s), its growth (%s) reaches its device at step %lld",
                st->nran_out ? "growth forecast" : "first to run out", (long long)f->rank,
                rank_input_name(f->input), growth_text(f->s.growth_per_step, b[0]),
                (long long)f->s.limit_step);
        if (st->nforecast > 1)
            fprintf(out,
                    "; %zu ranks' growth reaches their device (the table: \"reaches the "
                    "device\")",
                    st->nforecast);
        fputc('\n', out);
    } else if (!st->nran_out) {
        fprintf(out, "  first to run out: none; no rank ran out of memory, no rank's growth "
                     "reaches its device\n");
    }
}

/* The devices of one process, compared like ranks (only with two or more with events). */
static void print_devices(FILE *out, const rank_entry *e) {
    if (e->devices.bottleneck < 0)
        return;
    fprintf(out, "  rank %lld (%s): ", (long long)e->rank, rank_input_name(e->input));
    run_print_devices_text(out, &e->devices);
    fputc('\n', out);
}

static void print_text(FILE *out, const rank_stats *st) {
    char b[6][64];
    fprintf(out, "memanalyze ranks: %zu rank%s read", st->read, st->read == 1 ? "" : "s");
    if (st->failed)
        fprintf(out, ", %zu could not be", st->failed);
    fprintf(out, "\n\n  %5s %-14s %3s %-24s %-24s %6s %-16s %5s %-18s %s\n", "rank", "host", "dev",
            "peak allocated", "peak reserved", "frag", "growth", "OOMs", "reaches the device",
            "input");
    for (size_t r = 0; r < st->read; r++) {
        const rank_entry *e = &st->ranks[r];
        const run_summary *s = &e->s;
        char limit[48] = "never";
        if (!s->steps)
            snprintf(limit, sizeof limit, "no steps");
        else if (s->limit_step >= 0)
            snprintf(limit, sizeof limit, "at step %lld", (long long)s->limit_step);
        char rank[32]; /* "(3)": numbered in the order given */
        snprintf(rank, sizeof rank, e->rank_from == RANK_FROM_ORDER ? "(%lld)" : "%lld",
                 (long long)e->rank);
        fprintf(out, "  %5s %-14.14s %3d %-24s %-24s %6.2f %-16s %5lld %-18s %s%s\n", rank,
                s->host[0] ? s->host : "?", s->device,
                run_print_bytes_at_step(s->peak_allocated, s->peak_allocated_step, b[0], 64),
                run_print_bytes_at_step(s->peak_reserved, s->peak_reserved_step, b[1], 64),
                s->frag_at_peak, s->steps ? growth_text(s->growth_per_step, b[2]) : "-",
                (long long)e->input_ooms, limit, rank_input_name(e->input),
                e->leaking ? "  LEAKING" : "");
    }
    if (st->numbered)
        fprintf(out,
                "  (N): %zu input%s without a rank (none in the trace, none in the file name), "
                "numbered in the order given\n",
                st->numbered, st->numbered == 1 ? "" : "s");
    if (st->read) {
        const rank_entry *bn = &st->ranks[st->bottleneck];
        fprintf(out, "\n  imbalance: max / mean of peak allocated %.2f (mean %s, spread %s)\n",
                st->imbalance, units_bytes_i64(st->mean_peak, b[0]),
                units_bytes_i64(st->spread, b[1]));
        fprintf(out, "  bottleneck: rank %lld, peak allocated %s", (long long)bn->rank,
                units_bytes_i64(bn->s.peak_allocated, b[0]));
        fprintf(out, st->nexcess ? "; above the median rank at its peak:\n" : "\n");
        for (size_t i = 0; i < st->nexcess; i++)
            fprintf(out, "    +%-10s %s  (%s, the median rank %s)\n",
                    units_bytes_i64(st->excess[i].over_median, b[0]), st->excess[i].site,
                    units_bytes_i64(st->excess[i].bytes, b[1]),
                    units_bytes_i64(st->excess[i].median_bytes, b[2]));
        print_ran_out(out, st);
        for (size_t r = 0; r < st->read; r++) {
            const rank_entry *e = &st->ranks[r];
            if (!e->leaking)
                continue;
            const char *site = e->s.top_growth_per_step > 0 ? e->s.top_growth_site : "";
            fprintf(out, "  leaking alone: rank %lld grows %s (the median rank %s)%s%s\n",
                    (long long)e->rank, growth_text(e->s.growth_per_step, b[0]),
                    growth_text(st->median_growth, b[1]), site[0] ? ", fastest at " : "", site);
        }
        if (st->devices_compared)
            fprintf(out, "\n  the devices of one process, compared like ranks:\n");
        for (size_t r = 0; r < st->read; r++)
            print_devices(out, &st->ranks[r]);
    }
    for (size_t r = 0; r < st->read; r++)
        if (st->ranks[r].same_rank_as >= 0)
            fprintf(out,
                    "  rank %lld twice: %s and %s (both kept; the rank comes from the trace, "
                    "else the file name)\n",
                    (long long)st->ranks[r].rank, st->ranks[st->ranks[r].same_rank_as].input,
                    st->ranks[r].input);
    for (size_t r = st->read; r < st->count; r++)
        fprintf(out, "  could not read %s: %s\n", st->ranks[r].input, st->ranks[r].failed);
}

static void print_json(FILE *out, const rank_stats *st) {
    fputs("{\"ranks\": [", out);
    for (size_t r = 0; r < st->read; r++) {
        const rank_entry *e = &st->ranks[r];
        fprintf(out, "%s\n  {", r ? "," : "");
        run_print_json_fields(out, &e->s, e->rank);
        fprintf(out, ", \"rank_from\": \"%s\", \"input\": ", rank_from_word(e));
        json_string(out, e->input);
        fprintf(out, ", \"leaking\": %s", e->leaking ? "true" : "false");
        fputs(", \"first_oom\": ", out);
        if (e->first_oom_event >= 0) {
            fprintf(out, "{\"event_id\": %lld, \"device\": %d, \"ooms\": %lld, \"step\": ",
                    (long long)e->first_oom_event, e->first_oom_device, (long long)e->input_ooms);
            if (e->first_oom_step >= 0)
                fprintf(out, "%lld", (long long)e->first_oom_step);
            else
                fputs("null", out);
            fprintf(out, ", \"ts_ns\": %lld}", (long long)e->first_oom_ts_ns);
        } else {
            fputs("null", out);
        }
        fputs(", \"devices\": ", out);
        run_print_devices_json(out, &e->devices);
        fputs("}", out);
    }
    fputs("\n], \"imbalance\": ", out);
    json_number(out, st->imbalance);
    fprintf(out,
            ", \"mean_peak_allocated_bytes\": %lld, \"spread_bytes\": %lld"
            ", \"median_growth_bytes_per_step\": %lld",
            (long long)st->mean_peak, (long long)st->spread, (long long)st->median_growth);
    fputs(", \"bottleneck_rank\": ", out);
    if (st->bottleneck >= 0)
        fprintf(out, "%lld", (long long)st->ranks[st->bottleneck].rank);
    else
        fputs("null", out);
    fputs(", \"first_to_run_out\": ", out);
    if (st->first_to_run_out >= 0)
        fprintf(out, "%lld", (long long)st->ranks[st->first_to_run_out].rank);
    else
        fputs("null", out);
    fputs(", \"ran_out\": [", out);
    for (size_t i = 0; i < st->nran_out; i++)
        fprintf(out, "%s%lld", i ? ", " : "", (long long)st->ranks[st->ran_out[i]].rank);
    fprintf(out, "], \"ran_out_order\": \"%s\", \"forecast\": [",
            st->ran_out_wall_clock ? "wall clock" : "time into each trace");
    for (size_t i = 0; i < st->nforecast; i++)
        fprintf(out, "%s{\"rank\": %lld, \"limit_step\": %lld}", i ? ", " : "",
                (long long)st->ranks[st->forecast[i]].rank,
                (long long)st->ranks[st->forecast[i]].s.limit_step);
    fprintf(out, "], \"numbered_in_order\": %zu", st->numbered);
    fputs(", \"bottleneck_sites\": [", out);
    for (size_t i = 0; i < st->nexcess; i++) {
        fputs(i ? ", {\"site\": " : "{\"site\": ", out);
        json_string(out, st->excess[i].site);
        fprintf(out, ", \"bytes\": %lld, \"median_bytes\": %lld, \"bytes_over_median\": %lld}",
                (long long)st->excess[i].bytes, (long long)st->excess[i].median_bytes,
                (long long)st->excess[i].over_median);
    }
    fputs("], \"leaking_ranks\": [", out);
    int first = 1;
    for (size_t r = 0; r < st->read; r++)
        if (st->ranks[r].leaking) {
            fprintf(out, "%s%lld", first ? "" : ", ", (long long)st->ranks[r].rank);
            first = 0;
        }
    fputs("], \"duplicate_ranks\": [", out);
    for (size_t i = 0; i < st->nduplicate_ranks; i++)
        fprintf(out, "%s%lld", i ? ", " : "", (long long)st->duplicate_ranks[i]);
    fputs("], \"failed\": [", out);
    for (size_t r = st->read; r < st->count; r++) {
        fputs(r > st->read ? ", {\"input\": " : "{\"input\": ", out);
        json_string(out, st->ranks[r].input);
        fputs(", \"error\": ", out);
        json_string(out, st->ranks[r].failed);
        fputs("}", out);
    }
    fputs("]}\n", out);
}

/* ---- the command --------------------------------------------------------------------------- */

int run_ranks(cli_ctx *ctx) {
    long jobs = jobs_given >= 0 ? jobs_given : sysconf(_SC_NPROCESSORS_ONLN), device = ctx->device;
    long top = ctx->top >= 0 ? ctx->top : 10;
    int json = ctx->json;
    const char *db_out = ctx->text[0], *picture = ctx->text[1];
    input_list list = {0};
    for (int i = 0; i < ctx->ninputs; i++)
        if (input_list_expand(&list, ctx->inputs[i]) != 0)
            return cli_error("out of memory");
    input_list_drop_repeats(&list);
    if (!list.count) {
        free(list.paths);
        return cli_error("no rank inputs in %s", ctx->input);
    }
    rank_input *inputs = calloc(list.count, sizeof *inputs);
    rank_entry *ranks = calloc(list.count, sizeof *ranks);
    int rc = inputs && ranks ? 0 : cli_error("out of memory");
    if (rc == 0) {
        for (size_t i = 0; i < list.count; i++)
            inputs[i].path = list.paths[i];
        input_options io = {0};
        if (ranks_import_all(inputs, list.count, (int)(jobs > 0 ? jobs : 1), &io) != 0)
            rc = cli_error("no process could be started for the imports");
    }
    size_t nranks = 0;
    for (size_t i = 0; rc == 0 && i < list.count; i++) {
        rank_entry *r = &ranks[nranks++];
        char err[256];
        if (!inputs[i].ok) {
            r->input = inputs[i].path;
            r->failed = inputs[i].error;
        } else if (rank_entry_load(r, inputs[i].path, inputs[i].db_path, (int)device, err,
                                   sizeof err) != 0) {
            snprintf(inputs[i].error, sizeof inputs[i].error, "%.250s: %.250s", r->input, err);
            r->failed = inputs[i].error;
        }
    }
    if (rc == 0) {
        rank_stats stats;
        char err[512];
        if (rank_stats_build(ranks, nranks, (size_t)top, &stats, err, sizeof err) != 0) {
            rc = cli_error("%s", err);
        } else {
            if (json)
                print_json(stdout, &stats);
            else
                print_text(stdout, &stats);
            if (db_out && rank_db_write(&stats, db_out, err, sizeof err) != 0)
                rc = cli_error("%s", err);
            if (rc == 0 && picture && plot_ranks(&stats, picture, err, sizeof err) != 0)
                rc = cli_error("%s", err);
            if (rc == 0 && !stats.read)
                rc = cli_error("no rank could be read");
        }
        rank_stats_release(&stats);
    }
    for (size_t i = 0; ranks && i < nranks; i++)
        rank_entry_release(&ranks[i]);
    input_list_free(&list);
    free(inputs);
    free(ranks);
    return rc;
}
