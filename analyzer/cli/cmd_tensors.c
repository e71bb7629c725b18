/* cmd_tensors.c — `memanalyze tensors INPUT`: the parameter-level view. Every named tensor live
 * at a moment (the names memrec's walk of the model gave, or a snapshot's), each parameter with
 * its gradient and optimizer state beside it, summed per layer or module, with the share of the
 * peak each group's training state takes (tensor_table.h). */
#include "categories.h"
#include "cli.h"
#include "commands.h"
#include "json_out.h"
#include "tensor_view.h"
#include "units.h"

#include <stdio.h>
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

static void print_row(const char *indent, const tensor_sum *r) {
    char b[5][32];
    printf("  %s%-*s %11s %11s %15s %11s %11s %8.1f%%\n", indent, 44 - (int)strlen(indent), r->name,
           units_bytes_i64(r->bytes[BLOCK_CATEGORY_PARAMETER], b[0]),
           units_bytes_i64(r->bytes[BLOCK_CATEGORY_GRADIENT], b[1]),
           units_bytes_i64(r->bytes[BLOCK_CATEGORY_OPTIMIZER_STATE], b[2]),
           units_bytes_i64(r->other_bytes, b[3]), units_bytes_i64(r->total_bytes, b[4]),
           100.0 * r->share_of_peak);
}

/* Each group's totals, then (grouped) its parameters, each with its gradient and state. */
static void print_text(const char *input, const tensor_view *v) {
    char b[32];
    printf("memanalyze tensors: %s, device %d, at %s: %zu named tensors\n", input, v->device,
           v->when, v->ntensors);
    if (!v->ntensors) {
        printf("\n  no named tensors live then: names come from memrec's walk of the model at\n"
               "  optimizer steps (a recording with the PyTorch bridge) or a snapshot's names\n");
        return;
    }
    static const char *const heads[] = {"layer / parameter", "module / parameter", "parameter"};
    printf("\n  %-44s %11s %11s %15s %11s %11s %9s\n", heads[v->by], "parameter", "gradient",
           "optimizer_state", "other", "total", "of peak");
    for (size_t i = 0; i < v->ngroups; i++) {
        print_row("", &v->groups[i].sum);
        for (size_t p = 0; p < v->groups[i].nparams; p++)
            print_row("  ", &v->groups[i].params[p]);
    }
    print_row("", &v->total);
    printf("  (of peak: of the device's peak allocated, %s)\n",
           units_bytes_i64(v->peak_allocated, b));
}

/* A row's sums: `"parameter_bytes": ..., "share_of_peak": ...`. */
static void print_json_sum(const tensor_sum *r) {
    printf("\"parameter_bytes\": %lld, \"gradient_bytes\": %lld, \"optimizer_state_bytes\": %lld, "
           "\"total_bytes\": %lld, \"share_of_peak\": ",
           (long long)r->bytes[BLOCK_CATEGORY_PARAMETER],
           (long long)r->bytes[BLOCK_CATEGORY_GRADIENT],
           (long long)r->bytes[BLOCK_CATEGORY_OPTIMIZER_STATE], (long long)r->total_bytes);
    json_number(stdout, r->share_of_peak);
    printf(", \"other_bytes\": %lld", (long long)r->other_bytes);
}

static void print_json(const tensor_view *v) {
    printf("{\"device\": %d, \"event_id\": %lld, \"peak_allocated_bytes\": %lld, \"tensors\": [",
           v->device, (long long)v->event_id, (long long)v->peak_allocated);
    for (size_t i = 0; i < v->ntensors; i++) {
        const tensor_row *t = &v->tensors[i];
        printf("%s\n  {\"name\": ", i ? "," : "");
        json_string(stdout, t->name);
        printf(", \"category\": \"%s\", \"bytes\": %lld, \"address\": %lld, \"tensors\": %lld}",
               gmt_category_name(t->category), (long long)t->bytes, (long long)t->address,
               (long long)t->tensors);
    }
    printf("],\n \"groups\": [");
    for (size_t i = 0; i < v->ngroups; i++) {
        const tensor_view_group *g = &v->groups[i];
        printf("%s\n  {\"group\": ", i ? "," : "");
        json_string(stdout, g->sum.name);
        printf(", ");
        print_json_sum(&g->sum);
        if (g->nparams) {
            printf(", \"parameters\": [");
            for (size_t p = 0; p < g->nparams; p++) {
                printf("%s{\"parameter\": ", p ? ", " : "");
                json_string(stdout, g->params[p].name);
                printf(", ");
                print_json_sum(&g->params[p]);
                printf("}");
            }
            printf("]");
        }
        printf("}");
    }
    printf("\n],\n \"when\": ");
    json_string(stdout, v->when);
    printf(", \"total\": {");
    print_json_sum(&v->total);
    printf("}}\n");
}

int run_tensors(cli_ctx *c) {
    static const tensor_grouping groupings[] = {GROUP_BY_LAYER, GROUP_BY_MODULE, GROUP_BY_NONE};
    const char *when = c->text[0] ? c->text[0] : "peak";
    char err[512];
    tensor_view *v = NULL;
    if (tensor_view_build(c->db, (int)c->device, when, groupings[c->number[0]], &v, err,
                          sizeof err) != 0)
        return cli_error("%s: %s", c->input, err);
    if (c->json)
        print_json(v);
    else
        print_text(c->input, v);
    tensor_view_free(v);
    return 0;
}
