/* cmd_segments.c — `memanalyze segments INPUT --at WHEN`: the segment layout
 * of one device at a point in time (layout.h): one line per segment with
 * its use and its largest free gap, optionally the blocks inside, or JSON
 * with the keys of PyTorch's snapshot `segments` list, whose blocks tile
 * each segment exactly (free gaps are `inactive` blocks). */
#include "cli.h"
#include "commands.h"
#include "fact_json.h"
#include "layout.h"
#include "plots.h"
#include "stack_names.h"
#include "units.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char segments_usage[] =
    "usage: memanalyze segments INPUT [--at WHEN] [--device N] [--blocks] [--json]\n"
    "The segment layout of one device at a point in time: segments by address, what\n"
    "they hold, their free gaps.\n";

/* --at in text[0], -o in text[1], --blocks in flag[0], --width/--height in number[0], [1]. */
const cli_option segments_options[] = {
    {"at", 'a', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL,
     "  --at WHEN     step:N, event:N, time:1.5s, peak, start or end (default end)\n", NULL},
    CLI_OPT_DEVICE,
    {"blocks", 'b', CLI_FLAG, offsetof(cli_ctx, flag[0]), 0, NULL,
     "  --blocks      list the blocks inside each segment\n", NULL},
    {"json", 'j', CLI_FLAG, offsetof(cli_ctx, json), 0, NULL,
     "  --json        PyTorch snapshot keys: segments with blocks that tile them\n", NULL},
    {"output", 'o', CLI_TEXT, offsetof(cli_ctx, text[1]), 0, NULL,
     "  -o FILE       write the output to FILE; .png, .svg or .pdf draw the picture\n", NULL},
    {"width", 'W', CLI_COUNT, offsetof(cli_ctx, number[0]), 20000, NULL,
     "  --width/--height  the picture's pixels (PNG) or points (SVG, PDF); default 1600 x 900\n",
     NULL},
    {"height", 'H', CLI_COUNT, offsetof(cli_ctx, number[1]), 20000, NULL, NULL, NULL},
    {"step-rule", 's', CLI_TEXT, offsetof(cli_ctx, io.step_word), 0, NULL,
     "  --step-rule WORD  the word step names contain (default \"step\")\n", NULL},
    CLI_OPT_END};

/* "0" for the default stream, hex for handles. */
static const char *stream_text(uint64_t stream, char *buf, size_t len) {
    snprintf(buf, len, stream < 0x10000 ? "%llu" : "0x%llx", (unsigned long long)stream);
    return buf;
}

static const char *state_text(layout_state state) {
    return state == LAYOUT_ALLOCATED      ? "allocated"
           : state == LAYOUT_PENDING_FREE ? "pending free"
                                          : "free";
}

static void print_block_text(FILE *out, const layout_block *b, stack_names *stacks) {
    char size[32], req[32];
    fprintf(out, "    0x%-14llx %10s  ", (unsigned long long)b->addr,
            units_bytes(b->size, size, sizeof size));
    if (b->state == LAYOUT_INACTIVE) {
        fprintf(out, "%s\n", state_text(b->state));
        return;
    }
    const named_stack *s = stack_names_get(stacks, b->stack_id);
    fprintf(out, "%-12s  req %10s  %s\n", state_text(b->state),
            units_bytes(b->requested, req, sizeof req), s ? s->site : "?");
}

static void print_text(FILE *out, const layout *l, const char *when, const char *described,
                       int blocks, stack_names *stacks) {
    char a[32], b[32], c[32], d[32], e[32];
    fprintf(out, "segments of device %d at %s = %s\n", l->device, when, described);
    if (l->segment_count == 0)
        fprintf(out, "no live segments\n");
    else
        fprintf(out, "%-16s  %10s  %10s  %10s  %12s  %6s  %6s  %4s  %s\n", "address", "size",
                "allocated", "free", "largest free", "stream", "blocks", "gaps", "site");
    for (size_t i = 0; i < l->segment_count; i++) {
        const layout_segment *s = &l->segments[i];
        const named_stack *st = stack_names_get(stacks, s->stack_id);
        fprintf(out, "0x%-14llx  %10s  %10s  %10s  %12s  %6s  %6zu  %4zu  %s%s\n",
                (unsigned long long)s->addr, units_bytes(s->size, a, sizeof a),
                units_bytes(s->allocated_bytes, b, sizeof b),
                units_bytes(s->free_bytes, c, sizeof c),
                units_bytes(s->largest_free_bytes, d, sizeof d),
                stream_text(s->stream, e, sizeof e), s->live_blocks, s->gaps, st ? st->site : "?",
                s->mapped        ? " [expandable]"
                : s->whole_block ? " [whole block]"
                                 : "");
        for (size_t k = 0; blocks && k < s->block_count; k++)
            print_block_text(out, &l->blocks[s->first_block + k], stacks);
    }
    fprintf(out, "total: %zu segment%s, reserved %s, allocated %s", l->segment_count,
            l->segment_count == 1 ? "" : "s", units_bytes(l->reserved_bytes, a, sizeof a),
            units_bytes(l->allocated_bytes, b, sizeof b));
    if (l->pending_bytes)
        fprintf(out, " (%s pending free)", units_bytes(l->pending_bytes, c, sizeof c));
    fprintf(out, " in %zu block%s, free %s", l->live_blocks, l->live_blocks == 1 ? "" : "s",
            units_bytes(l->free_bytes, d, sizeof d));
    if (l->reserved_bytes)
        fprintf(out, " (%.1f %%)", 100.0 * (double)l->free_bytes / (double)l->reserved_bytes);
    fprintf(out, ", largest free %s\n", units_bytes(l->largest_free_bytes, e, sizeof e));
    if (l->outside_count) {
        fprintf(out,
                "note: %zu live block%s (%s) lie outside every live segment (see the warnings "
                "table); counted in allocated\n",
                l->outside_count, l->outside_count == 1 ? "" : "s",
                units_bytes(l->outside_bytes, a, sizeof a));
        for (size_t i = 0; blocks && i < l->outside_count; i++)
            print_block_text(out, &l->outside[i], stacks);
    }
    if (l->conflicts)
        fprintf(out,
                "note: %zu segment row%s overlap%s the layout and %s left out (see the warnings "
                "table)\n",
                l->conflicts, l->conflicts == 1 ? "" : "s", l->conflicts == 1 ? "s" : "",
                l->conflicts == 1 ? "is" : "are");
}

static int is_picture(const char *path) {
    const char *dot = strrchr(path, '.');
    return dot &&
           (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".svg") || !strcasecmp(dot, ".pdf"));
}

int run_segments(cli_ctx *ctx) {
    sqlite3 *db = ctx->db;
    const char *when = ctx->text[0] ? ctx->text[0] : "end", *output = ctx->text[1];
    int device = (int)ctx->device, json = ctx->json, blocks = ctx->flag[0];
    int width = (int)ctx->number[0], height = (int)ctx->number[1], status = 0;
    char err[512], described[128];
    int64_t at;
    layout *l = NULL;
    stack_names *stacks = NULL;
    FILE *out = stdout;
    if (!when_device_answers(db, device)) {
        status = cli_error("segments: device %d has no events", device);
        goto done;
    }
    if (when_resolve(db, when, device, &at, err, sizeof err) != 0) {
        status = cli_error("%s", err);
        goto done;
    }
    if (output && is_picture(output)) { /* the picture, drawn by render/ */
        plot_request rq = {
            .device = device, .at = at, .input = ctx->input, .width = width, .height = height};
        if (plot_segments(db, &rq, output, err, sizeof err) != 0)
            status = cli_error("%s", err);
        else
            printf("wrote %s\n", output);
        goto done;
    }
    if (layout_build(db, device, at, &l, err, sizeof err) != 0) {
        status = cli_error("segments: %s", err);
        goto done;
    }
    if (!(stacks = stack_names_new(db))) {
        status = cli_error("segments: out of memory");
        goto done;
    }
    if (output && !(out = fopen(output, "w"))) {
        out = stdout;
        status = cli_error("segments: cannot create %s", output);
        goto done;
    }
    when_describe(db, at, described, sizeof described);
    if (json)
        layout_json_write(out, l, when, described, stacks, NULL);
    else
        print_text(out, l, when, described, blocks, stacks);
    if (out != stdout && fclose(out) != 0)
        status = cli_error("segments: cannot write %s", output);
    out = stdout;
done:
    stack_names_free(stacks);
    layout_free(l);
    return status;
}
