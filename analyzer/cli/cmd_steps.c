/* cmd_steps.c — the run cut into its periods. `memanalyze steps INPUT`: a row per step
 * (step_table.h): the peak inside it and the phase it was in, reserved and allocated at its end,
 * fragmentation and the trapped ratio and segments at its end, allocations and frees, growth,
 * and the steps that stand out. `memanalyze stages INPUT`: memory per NVTX range or annotation
 * name (stage_table.h): how many, the peak inside and where, what each leaves behind, and the
 * sites that allocate the most in them. */
#include "cli.h"
#include "commands.h"
#include "fact_json.h"
#include "json_out.h"
#include "stack_names.h"
#include "stage_table.h"
#include "step_table.h"
#include "units.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- steps ---------------------------------------------------------------------------------- */

const char steps_usage[] =
    "usage: memanalyze steps INPUT [--device N] [--json]\n"
    "A row per step: its peak allocated and the phase it was in (forward, backward,\n"
    "optimizer), reserved and allocated at its end, fragmentation, the trapped ratio\n"
    "and segments at its end, allocations and frees, growth; steps whose peak or\n"
    "growth stands out from their neighbours, and the step where reserved first\n"
    "jumps, are marked. An input without steps has implicit ones: its history, cut\n"
    "at the end of each optimizer step torch.profiler marks. A history that begins\n"
    "mid-run does not show the steps that ended before it.\n";

const cli_option steps_options[] = {CLI_OPT_DEVICE, CLI_OPT_JSON, CLI_OPT_END};

/* A history that begins mid-run: the steps it does not measure, in a line. */
static void print_history_text(const step_history *h, const step_row *r, size_t n) {
    if (!h->before)
        return;
    printf("  the history begins mid-run: %lld steps (%lld..%lld) ended before its first event "
           "and are not measured",
           (long long)h->before, (long long)h->before_first, (long long)h->before_last);
    if (n)
        printf("; it begins in step %lld%s", (long long)h->first_step,
               r[0].partial ? ", whose growth is not known" : "");
    printf("\n\n");
}

static void print_steps_text(const char *input, int device, const step_row *r, size_t n,
                             const step_history *h) {
    char b[5][32];
    printf("memanalyze steps: %s, device %d, %zu steps\n\n", input, device, n);
    if (n && r[0].implicit)
        printf("  the input marks no steps: %s implicit (the phase of each peak from the phase "
               "timeline, as the categories)\n\n",
               n == 1 ? "its history is one step," : "each optimizer step ends one, all");
    print_history_text(h, r, n);
    printf("  %6s %-20s %-9s %11s %11s %5s %7s %8s %7s %7s %12s  %s\n", "step", "peak allocated",
           "phase", "end alloc", "end reserv", "frag", "trapped", "segments", "allocs", "frees",
           "growth", "");
    for (size_t i = 0; i < n; i++) {
        char trapped[16] = "?", growth[40];
        if (r[i].trapped_at_end >= 0)
            snprintf(trapped, sizeof trapped, "%.2f", r[i].trapped_at_end);
        if (r[i].growth_known)
            units_bytes_signed(r[i].growth, growth);
        else
            snprintf(growth, sizeof growth, "?");
        printf("  %6lld %-20s %-9s %11s %11s %5.2f %7s %8lld %7lld %7lld %12s  %s\n",
               (long long)r[i].step, units_bytes_i64(r[i].peak_allocated, b[0]), r[i].peak_phase,
               units_bytes_i64(r[i].allocated_at_end, b[1]),
               units_bytes_i64(r[i].reserved_at_end, b[2]), r[i].fragmentation_at_end, trapped,
               (long long)r[i].segments_at_end, (long long)r[i].allocs, (long long)r[i].frees,
               growth, r[i].anomaly);
    }
}

int run_steps(cli_ctx *c) {
    step_row *rows;
    size_t n;
    char err[512];
    int dev = (int)c->device;
    step_history h;
    if (step_table(c->db, dev, &rows, &n, &h, err, sizeof err) != 0)
        return cli_error("%s: %s", c->input, err);
    if (c->json)
        step_table_json_write(stdout, dev, rows, n, &h, NULL);
    else
        print_steps_text(c->input, dev, rows, n, &h);
    if (!c->json && !n && !h.before)
        printf("  no steps: the input marks none (NVTX ranges, ProfilerStep#N, memrec.h, the "
               "optimizer's step)\n");
    free(rows);
    return 0;
}

/* ---- stages --------------------------------------------------------------------------------- */

const char stages_usage[] =
    "usage: memanalyze stages INPUT [--device N] [--json]\n"
    "Memory per stage: the NVTX ranges and annotations the program names\n"
    "(model_creation, data_loading, record_function ranges), grouped by name: how\n"
    "many, the highest allocated inside them, what they leave behind (allocated at\n"
    "the end minus at the start), and the sites that allocate the most in them.\n";

const cli_option stages_options[] = {CLI_OPT_DEVICE, CLI_OPT_JSON, CLI_OPT_END};

static void print_stages_text(sqlite3 *db, const char *input, int device, const stage_row *r,
                              size_t n, const stage_summary *sum) {
    char b[4][32], site[512];
    printf("memanalyze stages: %s, device %d, %zu stage names\n", input, device, n);
    if (!sum->ranges)
        printf("  no named ranges: the program marks none (NVTX ranges, record_function, "
               "torch.profiler)\n");
    else if (sum->ranges_elsewhere)
        printf("  %lld of %lld named ranges hold none of this device's memory events (on other "
               "devices, with no memory events, or before its history begins)\n",
               (long long)sum->ranges_elsewhere, (long long)sum->ranges);
    for (size_t i = 0; i < n; i++) {
        printf("\n  %s  x%lld\n", r[i].name, (long long)r[i].count);
        printf("    peak inside %s (event %lld); leaves %s (first), %s on average, %s in all\n",
               units_bytes_i64(r[i].peak_allocated, b[0]), (long long)r[i].peak_event_id,
               units_bytes_signed(r[i].net_first, b[1]),
               units_bytes_signed((int64_t)r[i].net_mean, b[2]),
               units_bytes_signed(r[i].net_total, b[3]));
        if (r[i].net_unknown)
            printf("    %lld began before the history: what they leave is not known\n",
                   (long long)r[i].net_unknown);
        printf("    %lld allocations inside, %s\n", (long long)r[i].allocs,
               units_bytes_i64(r[i].allocated_bytes, b[0]));
        for (size_t k = 0; k < STAGE_SITES && r[i].site_bytes[k] > 0; k++) {
            stack_label(db, r[i].site_stack[k], site, sizeof site);
            printf("      %10s  %s\n", units_bytes_i64(r[i].site_bytes[k], b[0]), site);
        }
    }
}

static void print_stages_json(sqlite3 *db, int device, const stage_row *r, size_t n,
                              const stage_summary *sum) {
    char site[512];
    printf("{\"device\": %d, \"ranges\": %lld, \"ranges_elsewhere\": %lld, \"stages\": [", device,
           (long long)sum->ranges, (long long)sum->ranges_elsewhere);
    for (size_t i = 0; i < n; i++) {
        printf("%s\n  {\"name\": ", i ? "," : "");
        json_string(stdout, r[i].name);
        if (r[i].number_first >= 0)
            printf(", \"numbers\": {\"first\": %lld, \"last\": %lld}", (long long)r[i].number_first,
                   (long long)r[i].number_last);
        printf(", \"count\": %lld, \"peak_allocated_bytes\": %lld, \"peak_event_id\": %lld, "
               "\"net_first_bytes\": %lld, \"net_mean_bytes\": ",
               (long long)r[i].count, (long long)r[i].peak_allocated, (long long)r[i].peak_event_id,
               (long long)r[i].net_first);
        json_number(stdout, r[i].net_mean);
        printf(", \"net_unknown\": %lld", (long long)r[i].net_unknown);
        printf(", \"net_total_bytes\": %lld, \"allocs\": %lld, \"allocated_bytes\": %lld, "
               "\"top_sites\": [",
               (long long)r[i].net_total, (long long)r[i].allocs, (long long)r[i].allocated_bytes);
        for (size_t k = 0; k < STAGE_SITES && r[i].site_bytes[k] > 0; k++) {
            stack_label(db, r[i].site_stack[k], site, sizeof site);
            printf("%s{\"site\": ", k ? ", " : "");
            json_string(stdout, site);
            printf(", \"allocated_bytes\": %lld}", (long long)r[i].site_bytes[k]);
        }
        printf("]}");
    }
    printf("\n]}\n");
}

int run_stages(cli_ctx *c) {
    stage_row *rows;
    size_t n;
    char err[512];
    int dev = (int)c->device;
    stage_summary sum;
    if (stage_table(c->db, dev, &rows, &n, &sum, err, sizeof err) != 0)
        return cli_error("%s: %s", c->input, err);
    if (c->json)
        print_stages_json(c->db, dev, rows, n, &sum);
    else
        print_stages_text(c->db, c->input, dev, rows, n, &sum);
    stage_table_free(rows, n);
    return 0;
}
