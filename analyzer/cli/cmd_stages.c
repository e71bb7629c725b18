/* cmd_stages.c — `memanalyze stages INPUT`: memory per NVTX range or annotation name
 * (stage_table.h): how many, the peak inside and where, what each leaves behind, and the sites
 * that allocate the most in them. */
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "stack_names.h"
#include "stage_table.h"
#include "units.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void stages_usage(FILE *out) {
    fprintf(out, "usage: memanalyze stages INPUT [--device N] [--json]\n"
                 "Memory per stage: the NVTX ranges and annotations the program names\n"
                 "(model_creation, data_loading, record_function ranges), grouped by name: how\n"
                 "many, the highest allocated inside them, what they leave behind (allocated at\n"
                 "the end minus at the start), and the sites that allocate the most in them.\n"
                 "  --device N    the device (default: the one with the highest peak)\n"
                 "  --json        machine-readable output\n");
}

static void print_text(sqlite3 *db, const char *input, int device, const stage_row *r, size_t n) {
    char b[4][32], site[512];
    printf("memanalyze stages: %s, device %d, %zu stage names\n", input, device, n);
    if (!n)
        printf("  no named ranges: the program marks none (NVTX ranges, record_function, "
               "torch.profiler)\n");
    for (size_t i = 0; i < n; i++) {
        printf("\n  %s  x%lld\n", r[i].name, (long long)r[i].count);
        printf("    peak inside %s (event %lld); leaves %s (first), %s on average, %s in all\n",
               units_bytes_i64(r[i].peak_allocated, b[0]), (long long)r[i].peak_event_id,
               units_bytes_signed(r[i].net_first, b[1]),
               units_bytes_signed((int64_t)r[i].net_mean, b[2]),
               units_bytes_signed(r[i].net_total, b[3]));
        printf("    %lld allocations inside, %s\n", (long long)r[i].allocs,
               units_bytes_i64(r[i].allocated_bytes, b[0]));
        for (size_t k = 0; k < STAGE_SITES && r[i].site_bytes[k] > 0; k++) {
            stack_label(db, r[i].site_stack[k], site, sizeof site);
            printf("      %10s  %s\n", units_bytes_i64(r[i].site_bytes[k], b[0]), site);
        }
    }
}

static void print_json(sqlite3 *db, int device, const stage_row *r, size_t n) {
    char site[512];
    printf("{\"device\": %d, \"stages\": [", device);
    for (size_t i = 0; i < n; i++) {
        printf("%s\n  {\"name\": ", i ? "," : "");
        json_string(stdout, r[i].name);
        printf(", \"count\": %lld, \"peak_allocated_bytes\": %lld, \"peak_event_id\": %lld, "
               "\"net_first_bytes\": %lld, \"net_mean_bytes\": ",
               (long long)r[i].count, (long long)r[i].peak_allocated, (long long)r[i].peak_event_id,
               (long long)r[i].net_first);
        json_number(stdout, r[i].net_mean);
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

int cmd_stages(int argc, char **argv) {
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
        if (c == 'h') {
            stages_usage(stdout);
            return 0;
        } else {
            stages_usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        stages_usage(stderr);
        return 2;
    }
    const char *input = argv[optind];
    sqlite3 *db;
    int dev, rc = cli_open_device(input, &w.io, w.device, &db, &dev);
    if (rc != 0)
        return rc;
    stage_row *rows;
    size_t n;
    char err[512];
    if (stage_table(db, dev, &rows, &n, err, sizeof err) != 0) {
        sqlite3_close(db);
        return cli_error("%s: %s", input, err);
    }
    if (w.json)
        print_json(db, dev, rows, n);
    else
        print_text(db, input, dev, rows, n);
    stage_table_free(rows, n);
    sqlite3_close(db);
    return 0;
}
