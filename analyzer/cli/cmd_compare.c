/* cmd_compare.c — `memanalyze compare A B [C ...]`: runs side by side.
 *
 * One row per run (its label, allocator settings, steps, peaks and the step of each,
 * fragmentation and the trapped ratio at step ends (a run without steps: at the end and the
 * peak), the most segments, OOMs, the fastest
 * growing site), read from each run's summary tables (run_summary.h); then, against the
 * first run (the baseline), the sites whose live bytes at each run's peak differ the most,
 * sites matched by their frames (function and file), not by ids or addresses (run_compare.h).
 * Printed here, text or JSON from the same structs. */
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "run_compare.h"
#include "run_print.h"
#include "units.h"

#include <stdio.h>
#include <string.h>

#define MAX_RUNS 64
#define DEFAULT_TOP 10

typedef struct compared_run {
    const char *input;
    char label[256];
    sqlite3 *db;
} compared_run;

#define STR(x) #x
#define XSTR(x) STR(x)

const char compare_usage[] =
    "usage: memanalyze compare A B [C ...] [--label NAME]... [--at WHEN] [--device N]\n"
    "                          [--top N] [--json] [-o PICTURE]\n"
    "Runs side by side (traces, snapshots or databases): settings, steps, peaks,\n"
    "fragmentation at step ends, segments, OOMs, growth; then the sites whose live bytes\n"
    "differ most from the first run's, matched by their frames.\n";

static const char *given_labels[MAX_RUNS]; /* --label, in order */
static size_t nlabels;

static int take_label(cli_ctx *ctx, const char *arg) {
    (void)ctx;
    if (nlabels == MAX_RUNS)
        return cli_error("at most %d --label", MAX_RUNS);
    given_labels[nlabels++] = arg;
    return 0;
}

/* --at in text[0], -o in text[1] */
const cli_option compare_options[] = {
    {"label", 'l', CLI_CALL, 0, 0, NULL,
     "  --label NAME  the next run's name (in order; default its file name)\n", take_label},
    {"at", 'a', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --at WHEN     compare sites at WHEN in every run (default: each run's peak)\n", NULL},
    {"device", 'd', CLI_COUNT, offsetof(cli_ctx, device), 1 << 20, NULL,
     "  --device N    the device in every run (default: each run's highest peak)\n", NULL},
    {"top", 'n', CLI_COUNT, offsetof(cli_ctx, top), 1 << 20, NULL,
     "  --top N       sites listed per run (default " XSTR(DEFAULT_TOP) "; 0: all)\n", NULL},
    CLI_OPT_JSON,
    {"output", 'o', CLI_TEXT, offsetof(cli_ctx, text[1]), 0, NULL,
     "  -o FILE       also draw allocated and reserved of every run by step (.png, .svg,\n"
     "                .pdf)\n",
     NULL},
    CLI_OPT_END};

static void print_text(const compared_run *runs, const compare_run *facts, size_t n, long top,
                       const char *at) {
    char b[6][64];
    printf("memanalyze compare: %zu runs, the first is the baseline\n\n", n);
    size_t without_steps = 0; /* fragmentation over step ends, else at the end and the peak */
    for (size_t i = 0; i < n; i++)
        without_steps += facts[i].s.steps == 0;
    int mixed = without_steps && without_steps < n;
    printf("  %-22s %6s %-24s %-24s %-11s %-13s %-13s %8s %5s\n", "run", "steps", "peak allocated",
           "peak reserved", "requested", without_steps == n ? "frag end/peak" : "frag mean/max",
           without_steps == n ? "trapped e/pk" : "trapped m/max", "segments", "OOMs");
    for (size_t i = 0; i < n; i++) {
        const run_summary *s = &facts[i].s;
        char frag[32], trapped[32];
        run_print_fragmentation(s, 0, mixed, frag, sizeof frag);
        run_print_fragmentation(s, 1, mixed, trapped, sizeof trapped);
        printf("  %-22.22s %6lld %-24s %-24s %-11s %-13s %-13s %8lld %5lld\n", runs[i].label,
               (long long)s->steps,
               run_print_bytes_at_step(s->peak_allocated, s->peak_allocated_step, b[0], 64),
               run_print_bytes_at_step(s->peak_reserved, s->peak_reserved_step, b[1], 64),
               units_bytes_i64(s->peak_requested, b[2]), frag, trapped, (long long)s->segments_max,
               (long long)s->ooms);
    }
    if (mixed)
        printf("  " RUN_PRINT_NO_STEPS_NOTE "\n");
    printf("\n");
    for (size_t i = 0; i < n; i++) {
        const run_summary *s = &facts[i].s;
        printf("  %s: %s%s%s\n", runs[i].label, s->settings[0] ? s->settings : "settings unknown",
               s->command[0] ? "; " : "", s->command);
        if (s->top_growth_per_step > 0)
            printf("    grows fastest: %s, %s/step\n", s->top_growth_site,
                   units_bytes_i64(s->top_growth_per_step, b[0]));
    }
    for (size_t i = 1; i < n; i++) {
        const site_difference *d = facts[i].differences;
        size_t nd = facts[i].ndifferences;
        printf("\n  %s against %s, live bytes by site at %s:\n", runs[i].label, runs[0].label,
               at ? at : "each run's peak");
        if (!nd)
            printf("    no site differs\n");
        for (size_t k = 0; k < nd && (top == 0 || (long)k < top); k++)
            printf("    %10s  %s  (%s -> %s)\n", units_bytes_signed(d[k].difference, b[0]),
                   d[k].label, units_bytes_i64(d[k].baseline, b[1]),
                   units_bytes_i64(d[k].bytes, b[2]));
    }
}

static void print_json(const compared_run *runs, const compare_run *facts, size_t n, long top) {
    printf("{\"baseline\": ");
    json_string(stdout, runs[0].label);
    printf(", \"runs\": [");
    for (size_t i = 0; i < n; i++) {
        printf("%s\n  {\"label\": ", i ? "," : "");
        json_string(stdout, runs[i].label);
        printf(", \"input\": ");
        json_string(stdout, runs[i].input);
        printf(", ");
        run_print_json_fields(stdout, &facts[i].s, facts[i].s.rank);
        printf("}");
    }
    printf("\n], \"site_differences\": [");
    for (size_t i = 1; i < n; i++) {
        const site_difference *d = facts[i].differences;
        size_t nd = facts[i].ndifferences;
        printf("%s\n  {\"run\": ", i > 1 ? "," : "");
        json_string(stdout, runs[i].label);
        printf(", \"sites\": [");
        for (size_t k = 0; k < nd && (top == 0 || (long)k < top); k++) {
            printf("%s{\"site\": ", k ? ", " : "");
            json_string(stdout, d[k].label);
            printf(", \"baseline_bytes\": %lld, \"bytes\": %lld, \"difference_bytes\": %lld}",
                   (long long)d[k].baseline, (long long)d[k].bytes, (long long)d[k].difference);
        }
        printf("]}");
    }
    printf("\n]}\n");
}

/* Opens run r and reads what compare shows of it into *f. 0, or 2 with the error printed. */
static int load_run(compared_run *r, compare_run *f, long device, const char *at) {
    input_options io = {0};
    int dev, rc = cli_open_device(r->input, &io, device, &r->db, &dev);
    if (rc != 0)
        return rc;
    char err[512];
    if (compare_run_read(r->db, dev, at, f, err, sizeof err) != 0)
        return cli_error("%s: %s", r->input, err);
    return 0;
}

int compare_check(cli_ctx *ctx) {
    size_t n = (size_t)ctx->ninputs;
    if (n < 2)
        return cli_usage_error(ctx);
    if (n > MAX_RUNS)
        return cli_error("at most %d runs", MAX_RUNS);
    if (nlabels > n)
        return cli_error("%zu --label for %zu runs", nlabels, n);
    return 0;
}

int run_compare(cli_ctx *ctx) {
    size_t n = (size_t)ctx->ninputs;
    const char *at = ctx->text[0], *picture = ctx->text[1];
    long device = ctx->device, top = ctx->top >= 0 ? ctx->top : DEFAULT_TOP;
    int json = ctx->json;
    static compared_run runs[MAX_RUNS];
    static compare_run facts[MAX_RUNS];
    const char *labels[MAX_RUNS];
    memset(runs, 0, sizeof runs);
    memset(facts, 0, sizeof facts);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        runs[i].input = ctx->inputs[i];
        const char *base = strrchr(runs[i].input, '/');
        snprintf(runs[i].label, sizeof runs[i].label, "%s",
                 i < nlabels ? given_labels[i]
                 : base      ? base + 1
                             : runs[i].input);
        labels[i] = runs[i].label;
        rc = load_run(&runs[i], &facts[i], device, at);
    }
    for (size_t i = 1; i < n && rc == 0; i++)
        if (compare_against(&facts[0], &facts[i]) != 0)
            rc = cli_error("out of memory");
    char err[512];
    if (rc == 0 && picture && compare_plot(facts, labels, n, picture, err, sizeof err) != 0)
        rc = cli_error("%s", err);
    if (rc == 0 && json)
        print_json(runs, facts, n, top);
    else if (rc == 0)
        print_text(runs, facts, n, top, at);
    for (size_t i = 0; i < n; i++) {
        compare_run_release(&facts[i]);
        db_close(runs[i].db);
    }
    return rc;
}
