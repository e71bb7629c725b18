/* cmd_pictures.c — `memanalyze timeline|heatmap|fragmentation INPUT -o FILE`:
 * the pictures of plots.h as commands. The picture's format follows the
 * extension of FILE (.png, .svg, .pdf). `segments -o FILE.png` and
 * `report --plots DIR` draw through plots.h too. */
#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "plots.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*plot_fn)(sqlite3 *, const plot_request *, const char *, char *, size_t);

#define PICTURE_USAGE(name, more)                                                                  \
    "usage: memanalyze " name " INPUT -o FILE.png|.svg|.pdf [--device N] [--from WHEN] "           \
    "[--to WHEN]" more " [--width W] [--height H]\n"

const char timeline_usage[] =
    PICTURE_USAGE("timeline", " [--by site|stream|size-class|category] [--top "
                              "N]") "Bytes over time: reserved and allocated, "
                                    "allocated stacked by site (or "
                                    "stream, size class, or category: parameter "
                                    "green, optimizer state gold,\nactivation "
                                    "red, gradient blue, temporary purple), "
                                    "steps, the peak, the device limit and OOMs "
                                    "marked.\n";
const char heatmap_usage[] = PICTURE_USAGE(
    "heatmap", "") "The address space (segments stacked) against time, each cell coloured by "
                   "the fraction\nof reserved memory that is allocated: fragmentation shows as "
                   "pale bands.\n";
const char fragmentation_usage[] = PICTURE_USAGE(
    "fragmentation", "") "Fragmentation at each step's end (over time when there are no steps), "
                         "with the rating\nbands shaded, and the largest free block.\n";

/* -o in text[0], --by in text[1], --width/--height in number[0], [1]; the three pictures take
 * the same options (--by and --top matter to the timeline only). */
const cli_option picture_options[] = {
    {"output", 'o', CLI_TEXT, offsetof(cli_ctx, text[0]), 0, NULL, NULL, NULL},
    CLI_OPT_DEVICE,
    CLI_OPT_FROM("  --from/--to   a window: step:N, event:N, time:1.5s, peak, start, end\n"),
    CLI_OPT_TO(NULL),
    {"by", 'b', CLI_TEXT, offsetof(cli_ctx, text[1]), 0, NULL, NULL, NULL},
    CLI_OPT_TOP(NULL),
    {"width", 'W', CLI_COUNT, offsetof(cli_ctx, number[0]), 20000, NULL,
     "  --width/--height  pixels (PNG) or points (SVG, PDF); default 1600 x 900\n", NULL},
    {"height", 'H', CLI_COUNT, offsetof(cli_ctx, number[1]), 20000, NULL, NULL, NULL},
    {"step-rule", 's', CLI_TEXT, offsetof(cli_ctx, io.step_word), 0, NULL, NULL, NULL},
    CLI_OPT_END};

int picture_check(cli_ctx *ctx) {
    const char *by = ctx->text[1];
    if (!ctx->text[0])
        return cli_usage_error(ctx);
    if (by && strcmp(by, "site") && strcmp(by, "stream") && strcmp(by, "size-class") &&
        strcmp(by, "category"))
        return cli_error("--by %s: use site, stream, size-class or category", by);
    if (!plots_available())
        return cli_error("pictures are off in this build: Cairo was not found at configure time");
    return 0;
}

static int run_picture(cli_ctx *ctx, plot_fn fn) {
    const char *out = ctx->text[0];
    char err[512];
    plot_request rq = {.by = ctx->text[1],
                       .width = (int)ctx->number[0],
                       .height = (int)ctx->number[1],
                       .device = (int)ctx->device,
                       .top = ctx->top > 0 ? (size_t)ctx->top : 0,
                       .from = ctx->from_event,
                       .to = ctx->to_event,
                       .input = ctx->input};
    if (fn(ctx->db, &rq, out, err, sizeof err) != 0)
        return cli_error("%s", err);
    printf("wrote %s\n", out);
    return 0;
}

int run_timeline(cli_ctx *ctx) { return run_picture(ctx, plot_timeline); }

int run_heatmap(cli_ctx *ctx) { return run_picture(ctx, plot_heatmap); }

int run_fragmentation(cli_ctx *ctx) { return run_picture(ctx, plot_fragmentation); }

int picture_write_all(sqlite3 *db, const char *input, int device, const char *dir, char *err,
                      size_t errlen) {
    static const struct {
        const char *name;
        plot_fn fn;
    } pictures[] = {{"timeline", plot_timeline},
                    {"heatmap", plot_heatmap},
                    {"segments", plot_segments},
                    {"fragmentation", plot_fragmentation}};
    plot_request rq = {.device = device, .to = analysis_last_event(db), .input = input};
    if (when_resolve(db, "peak", device, &rq.at, err, errlen) != 0)
        rq.at = rq.to;
    for (size_t i = 0; i < sizeof pictures / sizeof pictures[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s-device%d.png", dir, pictures[i].name, device);
        if (pictures[i].fn(db, &rq, path, err, errlen) != 0)
            return -1;
        fprintf(stderr, "memanalyze: wrote %s\n", path);
    }
    return 0;
}
