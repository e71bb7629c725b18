/* cmd_pictures.c — `memanalyze timeline|heatmap|fragmentation INPUT -o FILE`:
 * the pictures of plots.h as commands. The picture's format follows the
 * extension of FILE (.png, .svg, .pdf). `segments -o FILE.png` and
 * `report --plots DIR` draw through plots.h too. */
#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "plots.h"
#include "when.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*plot_fn)(sqlite3 *, const plot_request *, const char *, char *, size_t);

static void picture_usage(FILE *out, const char *name) {
    fprintf(out,
            "usage: memanalyze %s INPUT -o FILE.png|.svg|.pdf [--device N] [--from WHEN] "
            "[--to WHEN]%s [--width W] [--height H]\n",
            name,
            !strcmp(name, "timeline") ? " [--by site|stream|size-class|category] [--top N]" : "");
    if (!strcmp(name, "timeline"))
        fprintf(
            out,
            "Bytes over time: reserved and allocated, allocated stacked by site (or "
            "stream, size class, or category: parameter green, optimizer state gold,\nactivation "
            "red, gradient blue, temporary purple), steps, the peak, the device limit and OOMs "
            "marked.\n");
    else if (!strcmp(name, "heatmap"))
        fprintf(out, "The address space (segments stacked) against time, each cell coloured by "
                     "the fraction\nof reserved memory that is allocated: fragmentation shows as "
                     "pale bands.\n");
    else
        fprintf(out, "Fragmentation at each step's end (over time when there are no steps), "
                     "with the rating\nbands shaded, and the largest free block.\n");
    fprintf(out, "  --device N    the device (default: the one with the highest peak)\n"
                 "  --from/--to   a window: step:N, event:N, time:1.5s, peak, start, end\n"
                 "  --width/--height  pixels (PNG) or points (SVG, PDF); default 1600 x 900\n");
}

static int run_picture(int argc, char **argv, plot_fn fn) {
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"device", required_argument, 0, 'd'},
                                         {"from", required_argument, 0, 'f'},
                                         {"to", required_argument, 0, 't'},
                                         {"by", required_argument, 0, 'b'},
                                         {"top", required_argument, 0, 'n'},
                                         {"width", required_argument, 0, 'W'},
                                         {"height", required_argument, 0, 'H'},
                                         {"step-rule", required_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL;
    plot_request rq = {0};
    cli_window o = CLI_WINDOW_INIT;
    int c, taken;
    long number;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if ((taken = cli_window_option(&o, c, optarg)) == 2)
            return 2;
        if (taken)
            continue;
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'b':
            rq.by = optarg;
            break;
        case 'W':
            if (cli_parse_count("width", optarg, 20000, &number) != 0)
                return 2;
            rq.width = (int)number;
            break;
        case 'H':
            if (cli_parse_count("height", optarg, 20000, &number) != 0)
                return 2;
            rq.height = (int)number;
            break;
        case 'h':
            picture_usage(stdout, argv[0]);
            return 0;
        default:
            picture_usage(stderr, argv[0]);
            return 2;
        }
    }
    if (optind != argc - 1 || !out) {
        picture_usage(stderr, argv[0]);
        return 2;
    }
    if (rq.by && strcmp(rq.by, "site") && strcmp(rq.by, "stream") && strcmp(rq.by, "size-class") &&
        strcmp(rq.by, "category"))
        return cli_error("--by %s: use site, stream, size-class or category", rq.by);
    if (!plots_available())
        return cli_error("pictures are off in this build: Cairo was not found at configure time");
    sqlite3 *db;
    int status = cli_open_db(argv[optind], &o.io, &db);
    if (status)
        return status;
    rq.device = o.device >= 0 ? o.device : when_default_device(db);
    rq.top = o.top > 0 ? (size_t)o.top : 0;
    char err[512];
    if (when_window(db, o.from, o.to, rq.device, &rq.from, &rq.to, err, sizeof err) != 0) {
        sqlite3_close(db);
        return cli_error("%s", err);
    }
    rq.input = argv[optind];
    if (fn(db, &rq, out, err, sizeof err) != 0)
        status = cli_error("%s", err);
    else
        printf("wrote %s\n", out);
    sqlite3_close(db);
    return status;
}

int cmd_timeline(int argc, char **argv) { return run_picture(argc, argv, plot_timeline); }

int cmd_heatmap(int argc, char **argv) { return run_picture(argc, argv, plot_heatmap); }

int cmd_fragmentation(int argc, char **argv) { return run_picture(argc, argv, plot_fragmentation); }

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
