/* cmd_steps.c — `memanalyze steps INPUT`: a row per step (step_table.h): the peak inside it and
 * the phase it was in, reserved and allocated at its end, fragmentation and the trapped ratio
 * and segments at its end, allocations and frees, growth, and the steps that stand out. */
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "step_table.h"
#include "units.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void steps_usage(FILE *out) {
    fprintf(out, "usage: memanalyze steps INPUT [--device N] [--json]\n"
                 "A row per step: its peak allocated and the phase it was in (forward, backward,\n"
                 "optimizer), reserved and allocated at its end, fragmentation, the trapped ratio\n"
                 "and segments at its end, allocations and frees, growth; steps whose peak or\n"
                 "growth stands out from their neighbours, and the step where reserved first\n"
                 "jumps, are marked.\n"
                 "  --device N    the device (default: the one with the highest peak)\n"
                 "  --json        machine-readable output\n");
}

static void print_text(const char *input, int device, const step_row *r, size_t n) {
    char b[5][32];
    printf("memanalyze steps: %s, device %d, %zu steps\n\n", input, device, n);
    printf("  %6s %-20s %-9s %11s %11s %5s %7s %8s %7s %7s %12s  %s\n", "step", "peak allocated",
           "phase", "end alloc", "end reserv", "frag", "trapped", "segments", "allocs", "frees",
           "growth", "");
    for (size_t i = 0; i < n; i++) {
        char trapped[16] = "?", growth[40];
        if (r[i].trapped_at_end >= 0)
            snprintf(trapped, sizeof trapped, "%.2f", r[i].trapped_at_end);
        units_bytes_signed(r[i].growth, growth);
        printf("  %6lld %-20s %-9s %11s %11s %5.2f %7s %8lld %7lld %7lld %12s  %s\n",
               (long long)r[i].step, units_bytes_i64(r[i].peak_allocated, b[0]), r[i].peak_phase,
               units_bytes_i64(r[i].allocated_at_end, b[1]),
               units_bytes_i64(r[i].reserved_at_end, b[2]), r[i].fragmentation_at_end, trapped,
               (long long)r[i].segments_at_end, (long long)r[i].allocs, (long long)r[i].frees,
               growth, r[i].anomaly);
    }
}

static void print_json(int device, const step_row *r, size_t n) {
    printf("{\"device\": %d, \"steps\": [", device);
    for (size_t i = 0; i < n; i++) {
        printf("%s\n  {\"step\": %lld, \"peak_allocated_bytes\": %lld, \"peak_event_id\": %lld, "
               "\"peak_phase\": ",
               i ? "," : "", (long long)r[i].step, (long long)r[i].peak_allocated,
               (long long)r[i].peak_event_id);
        json_string(stdout, r[i].peak_phase);
        printf(", \"reserved_at_end_bytes\": %lld, \"allocated_at_end_bytes\": %lld, "
               "\"fragmentation_at_end\": ",
               (long long)r[i].reserved_at_end, (long long)r[i].allocated_at_end);
        json_number(stdout, r[i].fragmentation_at_end);
        printf(", \"trapped_ratio_at_end\": ");
        if (r[i].trapped_at_end >= 0)
            json_number(stdout, r[i].trapped_at_end);
        else
            printf("null");
        printf(", \"segments_at_end\": %lld, \"allocs\": %lld, \"frees\": %lld, "
               "\"growth_bytes\": %lld, \"anomaly\": ",
               (long long)r[i].segments_at_end, (long long)r[i].allocs, (long long)r[i].frees,
               (long long)r[i].growth);
        if (r[i].anomaly[0])
            json_string(stdout, r[i].anomaly);
        else
            printf("null");
        printf("}");
    }
    printf("\n]}\n");
}

int cmd_steps(int argc, char **argv) {
    static const struct option longs[] = {{"device", required_argument, NULL, 'd'},
                                          {"json", no_argument, NULL, 'j'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    cli_window w = CLI_WINDOW_INIT; /* --device, --json */
    int c, taken;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:jh", longs, NULL)) != -1) {
        if ((taken = cli_window_option(&w, c, optarg)) == 2)
            return 2;
        if (taken)
            continue;
        switch (c) {
        case 'h':
            steps_usage(stdout);
            return 0;
        default:
            steps_usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        steps_usage(stderr);
        return 2;
    }
    const char *input = argv[optind];
    sqlite3 *db;
    int dev, rc = cli_open_device(input, &w.io, w.device, &db, &dev);
    if (rc != 0)
        return rc;
    step_row *rows;
    size_t n;
    char err[512];
    if (step_table(db, dev, &rows, &n, err, sizeof err) != 0) {
        sqlite3_close(db);
        return cli_error("%s: %s", input, err);
    }
    if (w.json)
        print_json(dev, rows, n);
    else
        print_text(input, dev, rows, n);
    if (!w.json && !n)
        printf("  no steps: the input marks none (NVTX ranges, ProfilerStep#N, memrec.h, the "
               "optimizer's step)\n");
    free(rows);
    sqlite3_close(db);
    return 0;
}
