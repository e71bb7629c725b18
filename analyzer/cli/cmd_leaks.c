/* cmd_leaks.c — `memanalyze leaks INPUT`: allocation sites whose live bytes
 * grow from step to step, ranked by growth (DESIGN.md: the median of the
 * per-step changes at step ends, so state created once in step 0 is not a
 * leak), with bytes/step and bytes/min; then the blocks never freed,
 * grouped by site. */
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "leak_table.h"
#include "units.h"

#include <stdio.h>

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

static void print_text(const leak_table *t) {
    char b1[32], b2[32], b3[32], b4[32];
    printf("device %d: ", t->device);
    if (t->windows)
        printf("growth = median change of a site's live bytes over %zu step ends\n", t->step_ends);
    else
        printf("fewer than two step ends in the window: growth cannot be measured\n");
    printf("\n  %12s %12s %12s %12s  %s\n", "growth/step", "growth/min", "live@first", "live@last",
           "site");
    for (size_t i = 0; i < t->ngrowing; i++) {
        const leak_site *s = &t->growing[i];
        printf("  %12s %12s %12s %12s  %s (stack %lld, grew in %lld of %zu steps)\n",
               units_bytes((uint64_t)s->g.growth_per_step, b1, 32),
               units_bytes((uint64_t)s->g.bytes_per_min, b2, 32),
               units_bytes_i64(s->g.live_first_step, b3), units_bytes_i64(s->g.live_last_step, b4),
               s->site, (long long)s->g.stack_id, (long long)s->g.steps_grown, t->windows);
    }
    if (!t->ngrowing)
        printf("  (no site grows from step to step)\n");
    printf("\n  never freed (allocated during the recording, live at its end), by site:\n");
    for (size_t i = 0; i < t->nnever_freed; i++) {
        const leak_site *s = &t->never_freed[i];
        printf("  %8lld blocks %12s  %s\n", (long long)s->g.never_freed_count,
               units_bytes((uint64_t)s->g.never_freed_bytes, b1, 32), s->site);
    }
    if (!t->nnever_freed)
        printf("  (none)\n");
}

static void print_json(const leak_table *t) {
    printf("{\"device\": %d, \"growth_windows\": %zu, \"step_ends\": %zu, \"sites\": [", t->device,
           t->windows, t->step_ends);
    for (size_t i = 0; i < t->nsites; i++) {
        const site_growth *g = &t->sites[i].g;
        printf("%s\n  {\"stack_id\": %lld, \"site\": ", i ? "," : "", (long long)g->stack_id);
        json_string(stdout, t->sites[i].site);
        printf(", \"growth_bytes_per_step\": %lld, \"growth_bytes_per_min\": ",
               (long long)g->growth_per_step);
        json_number(stdout, g->bytes_per_min);
        printf(", \"live_first_step_bytes\": %lld, \"live_last_step_bytes\": %lld, "
               "\"live_end_bytes\": %lld, \"steps_grown\": %lld, \"never_freed_count\": %lld, "
               "\"never_freed_bytes\": %lld}",
               (long long)g->live_first_step, (long long)g->live_last_step, (long long)g->live_end,
               (long long)g->steps_grown, (long long)g->never_freed_count,
               (long long)g->never_freed_bytes);
    }
    /* the text's second list: it may reach past the first --top sites */
    printf("\n], \"never_freed_sites\": [");
    for (size_t i = 0; i < t->nnever_freed; i++) {
        const leak_site *s = &t->never_freed[i];
        printf("%s\n  {\"stack_id\": %lld, \"site\": ", i ? "," : "", (long long)s->g.stack_id);
        json_string(stdout, s->site);
        printf(", \"never_freed_count\": %lld, \"never_freed_bytes\": %lld}",
               (long long)s->g.never_freed_count, (long long)s->g.never_freed_bytes);
    }
    printf("\n]}\n");
}

int run_leaks(cli_ctx *c) {
    size_t top = c->top >= 0 ? (size_t)c->top : 20;
    leak_table t;
    char err[512];
    if (leak_table_read(c->db, (int)c->device, c->from_event, c->to_event, top, &t, err,
                        sizeof err) != 0)
        return cli_error("reading the database: %s", err);
    if (c->json)
        print_json(&t);
    else
        print_text(&t);
    leak_table_release(&t);
    return 0;
}
