/* cmd_tensors.c — `memanalyze tensors INPUT`: the parameter-level view. Every named tensor live
 * at a moment (the names memrec's walk of the model gave, or a snapshot's), each parameter with
 * its gradient and optimizer state beside it, summed per layer or module, with the share of the
 * peak each group's training state takes (tensor_table.h). */
#include "categories.h"
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "tensor_table.h"
#include "units.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char tensors_usage[] =
    "usage: memanalyze tensors INPUT [--at WHEN] [--group-by layer|module|none] [--device N] "
    "[--json]\n"
    "The named tensors live at a moment (memrec names the model's parameters, their\n"
    "gradients and optimizer state at optimizer steps): each parameter with its\n"
    "gradient and optimizer state beside it, summed per layer or module, with the\n"
    "share of the peak each group takes.\n";

/* --at in text[0], --group-by's index in number[0] (the order of tensor_grouping's words). */
const cli_option tensors_options[] = {
    {"at", 'a', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --at WHEN     step:N, event:N, time:1.5s, peak (default), end\n", NULL},
    {"group-by", 'g', CLI_CHOICE, offsetof(cli_ctx, number[0]), 0, "layer|module|none",
     "  --group-by G  layer (layers.3, the default), module (layers.3.attn.q_proj) or\n"
     "                none (one row per parameter)\n",
     NULL},
    CLI_OPT_DEVICE,
    CLI_OPT_JSON,
    CLI_OPT_END};

static const gmt_category columns[] = {BLOCK_CATEGORY_PARAMETER, BLOCK_CATEGORY_GRADIENT,
                                       BLOCK_CATEGORY_OPTIMIZER_STATE};
#define NCOLUMNS (sizeof columns / sizeof columns[0])

static int64_t total_of(const int64_t bytes[]) { /* every category's */
    int64_t sum = 0;
    for (int k = 0; k < BLOCK_CATEGORY_COUNT; k++)
        sum += bytes[k];
    return sum;
}

static void print_row(const char *indent, const char *name, const int64_t bytes[], int64_t peak) {
    char b[5][32];
    int64_t total = total_of(bytes), rest = total;
    for (size_t c = 0; c < NCOLUMNS; c++)
        rest -= bytes[columns[c]];
    printf("  %s%-*s %11s %11s %15s %11s %11s %8.1f%%\n", indent, 44 - (int)strlen(indent), name,
           units_bytes_i64(bytes[BLOCK_CATEGORY_PARAMETER], b[0]),
           units_bytes_i64(bytes[BLOCK_CATEGORY_GRADIENT], b[1]),
           units_bytes_i64(bytes[BLOCK_CATEGORY_OPTIMIZER_STATE], b[2]),
           units_bytes_i64(rest, b[3]), units_bytes_i64(total, b[4]),
           peak > 0 ? 100.0 * (double)total / (double)peak : 0.0);
}

/* Each group's totals, then (grouped) its parameters, each with its gradient and state. */
static void print_text(const char *input, int device, const char *when, int64_t peak, size_t n,
                       const tensor_group *groups, size_t ngroups, const tensor_group *params,
                       size_t nparams, tensor_grouping by) {
    char b[32];
    printf("memanalyze tensors: %s, device %d, at %s: %zu named tensors\n", input, device, when, n);
    if (!n) {
        printf("\n  no named tensors live then: names come from memrec's walk of the model at\n"
               "  optimizer steps (a recording with the PyTorch bridge) or a snapshot's names\n");
        return;
    }
    static const char *const heads[] = {"layer / parameter", "module / parameter", "parameter"};
    printf("\n  %-44s %11s %11s %15s %11s %11s %9s\n", heads[by], "parameter", "gradient",
           "optimizer_state", "other", "total", "of peak");
    int64_t totals[BLOCK_CATEGORY_COUNT] = {0};
    char group[1024];
    for (size_t i = 0; i < ngroups; i++) {
        for (int k = 0; k < BLOCK_CATEGORY_COUNT; k++)
            totals[k] += groups[i].bytes[k];
        print_row("", groups[i].group, groups[i].bytes, peak);
        for (size_t p = 0; by != GROUP_BY_NONE && p < nparams; p++) {
            tensor_group_of(params[p].group, by, group, sizeof group);
            if (!strcmp(group, groups[i].group))
                print_row("  ", params[p].group, params[p].bytes, peak);
        }
    }
    print_row("", "total", totals, peak);
    printf("  (of peak: of the device's peak allocated, %s)\n", units_bytes_i64(peak, b));
}

static void print_json(int device, int64_t at, int64_t peak, const tensor_row *rows, size_t n,
                       const tensor_group *groups, size_t ngroups) {
    printf("{\"device\": %d, \"event_id\": %lld, \"peak_allocated_bytes\": %lld, \"tensors\": [",
           device, (long long)at, (long long)peak);
    for (size_t i = 0; i < n; i++) {
        printf("%s\n  {\"name\": ", i ? "," : "");
        json_string(stdout, rows[i].name);
        printf(", \"category\": \"%s\", \"bytes\": %lld, \"address\": %lld, \"tensors\": %lld}",
               gmt_category_name(rows[i].category), (long long)rows[i].bytes,
               (long long)rows[i].address, (long long)rows[i].tensors);
    }
    printf("],\n \"groups\": [");
    for (size_t i = 0; i < ngroups; i++) {
        const tensor_group *g = &groups[i];
        printf("%s\n  {\"group\": ", i ? "," : "");
        json_string(stdout, g->group);
        printf(", \"parameter_bytes\": %lld, \"gradient_bytes\": %lld, "
               "\"optimizer_state_bytes\": %lld, \"total_bytes\": %lld, \"share_of_peak\": ",
               (long long)g->bytes[BLOCK_CATEGORY_PARAMETER],
               (long long)g->bytes[BLOCK_CATEGORY_GRADIENT],
               (long long)g->bytes[BLOCK_CATEGORY_OPTIMIZER_STATE], (long long)total_of(g->bytes));
        json_number(stdout, peak > 0 ? (double)total_of(g->bytes) / (double)peak : 0.0);
        printf("}");
    }
    printf("\n]}\n");
}

int run_tensors(cli_ctx *c) {
    static const tensor_grouping groupings[] = {GROUP_BY_LAYER, GROUP_BY_MODULE, GROUP_BY_NONE};
    sqlite3 *db = c->db;
    const char *input = c->input, *when = c->text[0] ? c->text[0] : "peak";
    tensor_grouping by = groupings[c->number[0]];
    int device = (int)c->device;
    char err[512], described[128];
    int64_t at;
    tensor_row *rows = NULL;
    tensor_group *groups = NULL, *params = NULL;
    size_t n = 0, ngroups = 0, nparams = 0;
    categorizer *cats = NULL;
    int status = 0;
    if (when_resolve(db, when, device, &at, err, sizeof err) != 0 ||
        !(cats = categorizer_new(db, NULL, err, sizeof err)) ||
        tensor_rows_at(db, cats, device, at, 0, &rows, &n, err, sizeof err) != 0) {
        status = cli_error("%s: %s", input, err);
    } else if (tensor_groups(rows, n, by, &groups, &ngroups) != 0 ||
               tensor_groups(rows, n, GROUP_BY_NONE, &params, &nparams) != 0) {
        status = cli_error("out of memory");
    } else {
        int64_t peak = db_query_i64(
            db, "SELECT peak_allocated_bytes FROM devices WHERE device = ?1", device, 0, 0);
        when_describe(db, at, described, sizeof described);
        if (c->json)
            print_json(device, at, peak, rows, n, groups, ngroups);
        else
            print_text(input, device, described, peak, n, groups, ngroups, params, nparams, by);
    }
    tensor_groups_free(groups, ngroups);
    tensor_groups_free(params, nparams);
    tensor_rows_free(rows, n);
    categorizer_free(cats);
    return status;
}
