/* render_ranks.c — `memanalyze ranks -o`: the ranks of a job at a glance.
 *
 * Above, a bar per rank: its peak reserved (light) behind its peak allocated, the bottleneck
 * rank and leaking ranks in colours of their own, the device's memory a dashed line. Below, a
 * strip: a row per rank, a column per step, shaded by allocated bytes at the step's end
 * (white to dark blue over the job's own range), so one rank that leaks shows as a row that
 * darkens step after step, and an imbalance as a row darker than the others throughout. */
#include "render_common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define COLOR_RESERVED 0xc5d7ea
#define COLOR_ALLOCATED 0x3b6ea5
#define COLOR_BOTTLENECK 0xc62828
#define COLOR_LEAKING 0xef8f00
#define COLOR_STRIP_HIGH 0x08306b

static int check(const render_ranks *r, char *err, size_t errlen) {
    if (r->nranks && (!r->rank || !r->peak_allocated || !r->peak_reserved)) {
        snprintf(err, errlen, "ranks: %zu ranks but no data", r->nranks);
        return -1;
    }
    if (r->nsteps && !r->allocated) {
        snprintf(err, errlen, "ranks: %zu steps but no data", r->nsteps);
        return -1;
    }
    return 0;
}

static render_rgb bar_color(const render_ranks *r, size_t i) {
    uint8_t flag = r->flag ? r->flag[i] : 0;
    return rgb_hex(flag & RENDER_RANK_BOTTLENECK ? COLOR_BOTTLENECK
                   : flag & RENDER_RANK_LEAKING  ? COLOR_LEAKING
                                                 : COLOR_ALLOCATED);
}

static double highest_reserved(const render_ranks *r) {
    double ymax = 0;
    for (size_t i = 0; i < r->nranks; i++)
        ymax = fmax(ymax, (double)r->peak_reserved[i]);
    return ymax;
}

/* The device's line is drawn when a rank comes within half of it: 80 GiB above bars of 2 GiB
 * would flatten the bars it is there to compare. */
static int limit_drawn(const render_ranks *r) {
    return r->device_memory_bytes && (double)r->device_memory_bytes < 2 * highest_reserved(r);
}

static void draw_bars(canvas *c, const render_ranks *r, double top, double bottom, double right) {
    double sc = c->s, m = 20 * sc;
    plot p;
    memset(&p, 0, sizeof p);
    p.y = round(top);
    p.h = round(bottom - plot_bottom_room(c) - p.y);
    double ymax = highest_reserved(r);
    if (limit_drawn(r))
        ymax = fmax(ymax, (double)r->device_memory_bytes);
    axis_bytes(&p.ya, fmax(ymax, 1) * 1.05, 5);
    p.x = round(m + plot_left_room(c, &p.ya));
    p.w = round(right - p.x);
    if (p.w < 10 || p.h < 10)
        return;
    axis_plain(&p.xa, AXIS_PLAIN, 0, (double)r->nranks, 1);
    p.xa.step = 0; /* no ticks: the ranks are written under their bars */
    plot_axes(c, &p, "rank", "peak");
    double bw = p.w / (double)r->nranks;
    for (size_t i = 0; i < r->nranks; i++) {
        double x = p.x + (double)i * bw + (bw > 3 ? 0.15 * bw : 0), w = bw > 3 ? 0.7 * bw : bw;
        double yr = plot_y(&p, (double)r->peak_reserved[i]);
        double ya = plot_y(&p, (double)r->peak_allocated[i]);
        set_rgb(c->cr, rgb_hex(COLOR_RESERVED), 1);
        cairo_rectangle(c->cr, x, yr, w, p.y + p.h - yr);
        cairo_fill(c->cr);
        set_rgb(c->cr, bar_color(r, i), 1);
        cairo_rectangle(c->cr, x, ya, w, p.y + p.h - ya);
        cairo_fill(c->cr);
    }
    /* rank numbers under the bars, as many as fit */
    text_font(c, FS_SMALL, 0);
    set_rgb(c->cr, rgb_hex(COLOR_MUTED), 1);
    double every = ceil(text_width(c, "00000") / fmax(bw, 1e-9));
    for (size_t i = 0; i < r->nranks; i += (size_t)fmax(every, 1)) {
        char label[24];
        snprintf(label, sizeof label, "%lld", (long long)r->rank[i]);
        text_draw(c, label, p.x + ((double)i + 0.5) * bw, p.y + p.h + 4 * sc, 0.5, 0);
    }
    if (limit_drawn(r))
        plot_limit_line(c, &p, (double)r->device_memory_bytes, rgb_hex(COLOR_DEVICE_LIMIT));
    plot_frame(c, &p);
}

static void draw_strip(canvas *c, const render_ranks *r, double top, double bottom, double right) {
    double sc = c->s, m = 20 * sc;
    plot p;
    memset(&p, 0, sizeof p);
    p.y = round(top);
    p.h = round(bottom - plot_bottom_room(c) - p.y);
    axis_plain(&p.ya, AXIS_PLAIN, 0, (double)r->nranks, 1);
    p.ya.step = 0; /* the ranks are written beside their rows */
    text_font(c, FS_SMALL, 0);
    p.x = round(m + plot_left_room(c, &p.ya) + text_width(c, "00000"));
    p.w = round(right - p.x);
    if (p.w < 10 || p.h < 10 || !r->nsteps)
        return;
    axis_plain(&p.xa, AXIS_INTEGER, 0, (double)r->nsteps, (int)(p.w / (90 * sc)));
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < r->nranks * r->nsteps; i++)
        if (r->allocated[i] >= 0) {
            lo = r->allocated[i] < lo ? r->allocated[i] : lo;
            hi = r->allocated[i] > hi ? r->allocated[i] : hi;
        }
    plot_axes(c, &p, "step (allocated at its end, darker: more)", "rank");
    double cw = p.w / (double)r->nsteps, rh = p.h / (double)r->nranks;
    for (size_t i = 0; i < r->nranks; i++)
        for (size_t k = 0; k < r->nsteps; k++) {
            int64_t v = r->allocated[i * r->nsteps + k];
            if (v < 0)
                continue;
            double t = hi > lo ? (double)(v - lo) / (double)(hi - lo) : 0.5;
            set_rgb(c->cr, rgb_mix(rgb_hex(0xf7fbff), rgb_hex(COLOR_STRIP_HIGH), t), 1);
            cairo_rectangle(c->cr, p.x + (double)k * cw, p.y + (double)i * rh, ceil(cw), ceil(rh));
            cairo_fill(c->cr);
        }
    text_font(c, FS_SMALL, 0);
    set_rgb(c->cr, rgb_hex(COLOR_MUTED), 1);
    double every = ceil(text_height(c) * 1.2 / fmax(rh, 1e-9));
    for (size_t i = 0; i < r->nranks; i += (size_t)fmax(every, 1)) {
        char label[24];
        snprintf(label, sizeof label, "%lld", (long long)r->rank[i]);
        text_draw(c, label, p.x - 4 * sc, p.y + ((double)i + 0.5) * rh, 1, 0.5);
    }
    plot_frame(c, &p);
}

static void draw(canvas *c, const render_ranks *r) {
    double sc = c->s, m = 20 * sc;
    double top = canvas_header(c, r->title, r->subtitle) + 8 * sc;
    double lw = legend_width(c), right = c->w - m - lw - 28 * sc;
    /* without steps the bars take the whole height: no empty strip below them */
    double split = r->nsteps ? top + (c->h - m - top) * 0.5 : c->h - m;
    draw_bars(c, r, top, split, right);
    if (r->nsteps)
        draw_strip(c, r, split + 10 * sc, c->h - m, right);
    char lo[64];
    legend_item items[6];
    size_t n = 0;
    items[n++] = (legend_item){"peak allocated", rgb_hex(COLOR_ALLOCATED), LEGEND_FILL};
    items[n++] = (legend_item){"peak reserved", rgb_hex(COLOR_RESERVED), LEGEND_FILL};
    items[n++] = (legend_item){"the bottleneck rank", rgb_hex(COLOR_BOTTLENECK), LEGEND_FILL};
    items[n++] = (legend_item){"leaking alone", rgb_hex(COLOR_LEAKING), LEGEND_FILL};
    char label[80];
    if (limit_drawn(r)) {
        format_bytes((double)r->device_memory_bytes, lo, sizeof lo);
        snprintf(label, sizeof label, "device memory %s", lo);
        items[n++] = (legend_item){label, rgb_hex(COLOR_DEVICE_LIMIT), LEGEND_DASH};
    }
    legend_draw(c, c->w - m - lw, top, lw, c->h - m - top, items, n);
}

int render_ranks_draw(const render_ranks *r, const char *path, const render_options *opt, char *err,
                      size_t errlen) {
    if (!r) {
        snprintf(err, errlen, "ranks: no data given");
        return -1;
    }
    if (check(r, err, errlen) != 0)
        return -1;
    canvas c;
    if (canvas_open(&c, path, opt, r->title, r->subtitle, err, errlen) != 0)
        return -1;
    if (r->nranks == 0)
        canvas_no_data(&c, r->title, r->subtitle, "no rank could be read");
    else
        draw(&c, r);
    return canvas_close(&c, err, errlen);
}
