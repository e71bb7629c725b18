/* cmd_diff.c — `memanalyze diff`: what is live at one point and not the other, by allocation
 * stack (`diff INPUT --from WHEN --to WHEN`), or what two runs hold at one WHEN, stacks matched
 * by their frames (`diff A B [--at WHEN]`). The facts, and what they mean, are query/diff.h's;
 * this file has the options and prints those structs, the text and the JSON from the same ones
 * (the JSON of two points is fact_json.h's: the viewer's window prints it too). */
#include "cli.h"
#include "commands.h"
#include "diff.h"
#include "fact_json.h"
#include "json_out.h"
#include "units.h"

#include <stdio.h>

#define DEFAULT_TOP 20

#define STR(x) #x
#define XSTR(x) STR(x)

const char diff_usage[] =
    "usage: memanalyze diff INPUT --from WHEN --to WHEN [options]\n"
    "       memanalyze diff A B [--at WHEN] [options]\n"
    "What is live at one point and not the other, by allocation site; with two inputs\n"
    "(traces, snapshots or databases), what each run holds at WHEN, stacks matched by\n"
    "their frames.\n";

/* --at in text[0], --all in flag[0] */
const cli_option diff_options[] = {
    CLI_OPT_FROM("  --from WHEN, --to WHEN  step:N, event:N, time:1.5s, peak, start or end\n"),
    CLI_OPT_TO(NULL),
    {"at", 'a', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --at WHEN     the point in both inputs (default end)\n", NULL},
    CLI_OPT_DEVICE,
    {"top", 'n', CLI_COUNT, offsetof(cli_ctx, top), 1000000000L, NULL,
     "  --top N       sites listed (default " XSTR(DEFAULT_TOP) " in text, all in JSON; 0: all)\n",
     NULL},
    {"all", 'A', CLI_FLAG, offsetof(cli_ctx, flag[0]), 0, NULL,
     "  --all         also sites whose blocks changed but whose bytes and count did not\n", NULL},
    CLI_OPT_JSON,
    {"step-rule", 's', CLI_TEXT, offsetof(cli_ctx, io.step_word), 0, NULL,
     "  --step-rule WORD  the word step names contain (default \"step\")\n", NULL},
    CLI_OPT_END};

/* "+1.00 MiB", "-512 B", "0 B": units_bytes_signed, without a sign on nothing */
static const char *signed_bytes(int64_t v, char buf[32]) {
    return v ? units_bytes_signed(v, buf) : units_bytes(0, buf, 32);
}

/* ", \"frames\": [...]" of a stack that has frames */
static void json_frames(const named_stack *s) {
    if (s && s->frame_count) {
        fputs(", \"frames\": ", stdout);
        stack_json_frames(stdout, s);
    }
}

/* A diff's error: a WHEN's as it is, any other after "diff: ". */
static int diff_error(int status, const char *err) {
    return status == DIFF_ERR_WHEN ? cli_error("%s", err) : cli_error("diff: %s", err);
}

static void text_totals(const char *ha, const char *hb, const char *hc, const diff_point *a,
                        const diff_point *b, const diff_change *c) {
    char x[32], y[32], z[32];
    const layout_totals *ta = &a->totals, *tb = &b->totals;
    const char *what[3] = {"allocated", "requested", "reserved"};
    int64_t va[3] = {ta->allocated_bytes, ta->requested_bytes, ta->reserved_bytes};
    int64_t vb[3] = {tb->allocated_bytes, tb->requested_bytes, tb->reserved_bytes};
    int64_t vc[3] = {c->allocated_bytes, c->requested_bytes, c->reserved_bytes};
    printf("%-12s  %12s  %12s  %12s\n", "", ha, hb, hc);
    for (int i = 0; i < 3; i++)
        printf("%-12s  %12s  %12s  %12s\n", what[i], units_bytes((uint64_t)va[i], x, sizeof x),
               units_bytes((uint64_t)vb[i], y, sizeof y), signed_bytes(vc[i], z));
    printf("%-12s  %12lld  %12lld  %+12lld\n", "segments", (long long)ta->segments,
           (long long)tb->segments, (long long)c->segments);
    printf("%-12s  %12zu  %12zu  %+12lld\n", "live blocks", a->live_blocks, b->live_blocks,
           (long long)c->live_blocks);
}

/* "... 3 more sites (--top 0 lists all)" when the list was cut */
static void text_more(size_t shown, size_t total) {
    if (shown < total)
        printf("... %zu more site%s (--top 0 lists all)\n", total - shown,
               total - shown == 1 ? "" : "s");
}

/* ---- diff of two points of one input ------------------------------------------------------ */

static void json_points(const diff_points *d) { diff_points_json_write(stdout, d, 0); }

static void text_points(const diff_points *d) {
    char x[32], y[32], z[32];
    printf("diff of device %d\n  from %s = %s\n  to   %s = %s\n\n", d->device, d->from.when,
           d->from.described, d->to.when, d->to.described);
    text_totals("from", "to", "change", &d->from, &d->to, &d->change);
    putchar('\n');
    if (d->stacks_touched == 0) {
        printf("the same blocks are live at both points\n");
    } else if (d->stacks_listed == 0) {
        printf("no site changed its live bytes or block count\n");
    } else {
        printf("blocks live at one point only, by allocation site (largest net change first):\n");
        printf("%12s  %6s  %12s  %6s  %12s  %6s  %s\n", "net", "blocks", "added", "blocks",
               "removed", "blocks", "site");
        for (size_t i = 0; i < d->nrows; i++) {
            const diff_stack *c = &d->rows[i];
            printf("%12s  %+6lld  %12s  %6llu  %12s  %6llu  %s\n", signed_bytes(c->net_bytes, x),
                   (long long)c->net_count, units_bytes(c->added_bytes, y, sizeof y),
                   (unsigned long long)c->added_count, units_bytes(c->removed_bytes, z, sizeof z),
                   (unsigned long long)c->removed_count, c->label);
        }
        text_more(d->nrows, d->stacks_listed);
    }
    if (d->stacks_replaced_only && !d->all)
        printf("%zu site%s replaced blocks without a change in bytes or count (%s each way; "
               "--all lists them)\n",
               d->stacks_replaced_only, d->stacks_replaced_only == 1 ? "" : "s",
               units_bytes(d->replaced_bytes, x, sizeof x));
    printf("segments: %llu added (%s), %llu removed (%s)\n", (unsigned long long)d->segments_added,
           units_bytes(d->segments_added_bytes, x, sizeof x),
           (unsigned long long)d->segments_removed,
           units_bytes(d->segments_removed_bytes, y, sizeof y));
}

/* ---- diff of two inputs ------------------------------------------------------------------- */

static void json_pair(const diff_pair *p, int matched, int first) {
    printf("%s\n  {\"site\": ", first ? "" : ",");
    json_string(stdout, p->label);
    if (matched)
        printf(", \"a_bytes\": %llu, \"a_count\": %llu, \"b_bytes\": %llu, \"b_count\": %llu, "
               "\"diff_bytes\": %lld, \"diff_count\": %lld",
               (unsigned long long)p->a_bytes, (unsigned long long)p->a_count,
               (unsigned long long)p->b_bytes, (unsigned long long)p->b_count,
               (long long)p->diff_bytes, (long long)p->diff_count);
    else
        printf(", \"bytes\": %llu, \"count\": %llu", (unsigned long long)p->bytes,
               (unsigned long long)p->count);
    json_frames(p->stack);
    putchar('}');
}

static void text_pairs(const diff_pairs *g, const char *title) {
    char x[32], y[32], z[32];
    if (g->total == 0)
        return;
    printf("\n%s:\n", title);
    if (g->matched)
        printf("%12s  %6s  %12s  %6s  %12s  %6s  %s\n", "A", "blocks", "B", "blocks", "B - A",
               "blocks", "site");
    else
        printf("%12s  %6s  %s\n", "live", "blocks", "site");
    for (size_t i = 0; i < g->count; i++) {
        const diff_pair *p = &g->rows[i];
        if (g->matched)
            printf("%12s  %6llu  %12s  %6llu  %12s  %+6lld  %s\n",
                   units_bytes(p->a_bytes, x, sizeof x), (unsigned long long)p->a_count,
                   units_bytes(p->b_bytes, y, sizeof y), (unsigned long long)p->b_count,
                   signed_bytes(p->diff_bytes, z), (long long)p->diff_count, p->label);
        else
            printf("%12s  %6llu  %s\n", units_bytes(p->bytes, x, sizeof x),
                   (unsigned long long)p->count, p->label);
    }
    text_more(g->count, g->total);
}

static void json_runs(const diff_runs *d) {
    const diff_run *a = &d->run[0], *b = &d->run[1];
    fputs("{\"at\": ", stdout);
    json_string(stdout, d->at);
    fputs(",\n", stdout);
    diff_point_json_write(stdout, "a", &a->at, a->input, a->device);
    diff_point_json_write(stdout, "b", &b->at, b->input, b->device);
    diff_change_json_write(stdout, &d->change);
    const char *names[3] = {"stacks", "only_in_a", "only_in_b"};
    const diff_pairs *groups[3] = {&d->both, &d->only_a, &d->only_b};
    for (int g = 0; g < 3; g++) {
        printf(",\n \"%s_total\": %zu, \"%s\": [", names[g], groups[g]->total, names[g]);
        for (size_t j = 0; j < groups[g]->count; j++)
            json_pair(&groups[g]->rows[j], groups[g]->matched, j == 0);
        printf(groups[g]->count ? "\n ]" : "]");
    }
    printf("}\n");
}

static void text_runs(const diff_runs *d) {
    const diff_run *a = &d->run[0], *b = &d->run[1];
    printf("diff of two runs at %s\n  A: %s, device %d, %s\n  B: %s, device %d, %s\n\n", d->at,
           a->input, a->device, a->at.described, b->input, b->device, b->at.described);
    text_totals("A", "B", "B - A", &a->at, &b->at, &d->change);
    text_pairs(&d->both,
               "live blocks by allocation site, matched by frames (largest difference first)");
    text_pairs(&d->only_a, "sites only in A");
    text_pairs(&d->only_b, "sites only in B");
    if (d->sites == 0)
        printf("\nno live blocks in either run\n");
}

int diff_check(cli_ctx *ctx) {
    const char *from = ctx->from, *to = ctx->to, *at = ctx->text[0];
    int inputs = ctx->ninputs;
    if (inputs > 2)
        return cli_usage_error(ctx);
    if (inputs == 1 && at)
        return cli_error("diff: --at is for two inputs; with one, use --from and --to");
    if (inputs == 1 && (!from || !to))
        return cli_error("diff: one input needs --from WHEN and --to WHEN (two inputs take --at)");
    if (inputs == 2 && (from || to))
        return cli_error("diff: two inputs are compared --at one WHEN, not --from/--to");
    return 0;
}

int run_diff(cli_ctx *ctx) {
    size_t top = ctx->top >= 0 ? (size_t)ctx->top : ctx->json ? 0 : DEFAULT_TOP;
    input_options io = ctx->io;
    char err[1024];
    int status;
    if (ctx->ninputs == 1) { /* the dispatcher closes ctx->db */
        diff_points d;
        if ((status = cli_open_db(ctx->input, &io, &ctx->db)) != 0)
            return status;
        status = diff_points_read(ctx->db, ctx->input, ctx->device, ctx->from, ctx->to, top,
                                  ctx->flag[0], &d, err, sizeof err);
        if (status != DIFF_OK)
            return diff_error(status, err);
        (ctx->json ? json_points : text_points)(&d);
        diff_points_free(&d);
        return 0;
    }
    diff_runs d = {0};
    status = 0;
    for (int i = 0; i < 2 && status == 0; i++) {
        sqlite3 *db;
        if ((status = cli_open_db(ctx->inputs[i], &io, &db)) == 0 &&
            (status = diff_runs_add(&d, ctx->inputs[i], db, ctx->device, err, sizeof err)) != 0)
            status = diff_error(status, err);
    }
    const char *at = ctx->text[0] ? ctx->text[0] : "end";
    if (status == 0 && (status = diff_runs_read(&d, at, top, err, sizeof err)) != DIFF_OK)
        status = diff_error(status, err);
    if (status == 0)
        (ctx->json ? json_runs : text_runs)(&d);
    diff_runs_free(&d);
    return status;
}
