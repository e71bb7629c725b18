/* cmd_leaks.c — `memanalyze leaks INPUT`: allocation sites whose live bytes
 * grow from step to step, ranked by growth (DESIGN.md: the median of the
 * per-step changes at step ends, so state created once in step 0 is not a
 * leak), with bytes/step and bytes/min; then the blocks never freed,
 * grouped by site. */
#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "layout.h"
#include "stack_names.h"
#include "units.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>

const char leaks_usage[] =
    "usage: memanalyze leaks INPUT [--device N] [--from WHEN] [--to WHEN] [--json] [--top N]\n"
    "Allocation sites whose live bytes grow across steps, and blocks never freed.\n";

const cli_option leaks_options[] = {
    CLI_OPT_DEVICE,
    CLI_OPT_FROM("  --from/--to   a window: step:N, event:N, time:1.5s, peak, start, end\n"),
    CLI_OPT_TO(NULL),
    CLI_OPT_TOP("  --top N       sites to list (default 20)\n"),
    CLI_OPT_JSON,
    CLI_OPT_STEP_RULE,
    CLI_OPT_END};

static void print_text(sqlite3 *db, int device, const site_growth *g, size_t n, size_t windows,
                       size_t top) {
    char b1[32], b2[32], b3[32], b4[32], label[256];
    printf("device %d: ", device);
    if (windows)
        printf("growth = median change of a site's live bytes over %zu step ends\n", windows + 1);
    else
        printf("fewer than two step ends in the window: growth cannot be measured\n");
    size_t shown = 0;
    printf("\n  %12s %12s %12s %12s  %s\n", "growth/step", "growth/min", "live@first", "live@last",
           "site");
    for (size_t i = 0; i < n && shown < top; i++) {
        if (g[i].growth_per_step <= 0)
            continue;
        stack_label(db, g[i].stack_id, label, sizeof label);
        printf("  %12s %12s %12s %12s  %s (stack %lld, grew in %lld of %zu steps)\n",
               units_bytes((uint64_t)g[i].growth_per_step, b1, 32),
               units_bytes((uint64_t)g[i].bytes_per_min, b2, 32),
               units_bytes((uint64_t)(g[i].live_first_step > 0 ? g[i].live_first_step : 0), b3, 32),
               units_bytes((uint64_t)(g[i].live_last_step > 0 ? g[i].live_last_step : 0), b4, 32),
               label, (long long)g[i].stack_id, (long long)g[i].steps_grown, windows);
        shown++;
    }
    if (!shown)
        printf("  (no site grows from step to step)\n");
    printf("\n  never freed (allocated during the recording, live at its end), by site:\n");
    shown = 0;
    for (size_t i = 0; i < n && shown < top; i++) {
        if (g[i].never_freed_count <= 0)
            continue;
        stack_label(db, g[i].stack_id, label, sizeof label);
        printf("  %8lld blocks %12s  %s\n", (long long)g[i].never_freed_count,
               units_bytes((uint64_t)g[i].never_freed_bytes, b1, 32), label);
        shown++;
    }
    if (!shown)
        printf("  (none)\n");
}

static void print_json(sqlite3 *db, int device, const site_growth *g, size_t n, size_t windows,
                       size_t top) {
    char label[256];
    printf("{\"device\": %d, \"growth_windows\": %zu, \"sites\": [", device, windows);
    for (size_t i = 0; i < n && i < top; i++) {
        stack_label(db, g[i].stack_id, label, sizeof label);
        printf("%s\n  {\"stack_id\": %lld, \"site\": ", i ? "," : "", (long long)g[i].stack_id);
        json_string(stdout, label);
        printf(", \"growth_bytes_per_step\": %lld, \"growth_bytes_per_min\": ",
               (long long)g[i].growth_per_step);
        json_number(stdout, g[i].bytes_per_min);
        printf(", \"live_first_step_bytes\": %lld, \"live_last_step_bytes\": %lld, "
               "\"live_end_bytes\": %lld, \"steps_grown\": %lld, \"never_freed_count\": %lld, "
               "\"never_freed_bytes\": %lld}",
               (long long)g[i].live_first_step, (long long)g[i].live_last_step,
               (long long)g[i].live_end, (long long)g[i].steps_grown,
               (long long)g[i].never_freed_count, (long long)g[i].never_freed_bytes);
    }
    printf("\n]}\n");
}

int run_leaks(cli_ctx *c) {
    int device = (int)c->device;
    size_t top = c->top >= 0 ? (size_t)c->top : 20;
    site_growth *g;
    size_t n, windows;
    if (analysis_site_growth(c->db, device, c->from_event, c->to_event, &g, &n, &windows) != 0)
        return cli_error("reading the database: %s", sqlite3_errmsg(c->db));
    if (c->json)
        print_json(c->db, device, g, n, windows, top);
    else
        print_text(c->db, device, g, n, windows, top);
    free(g);
    return 0;
}
