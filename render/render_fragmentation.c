/* render_fragmentation.c — fragmentation per step (or over time).
 *
 * The plot is shaded with the rating bands the caller gives (DESIGN.md's:
 * good < 0.15 ≤ moderate < 0.30 ≤ serious < 0.40 ≤ severe; pale green,
 * yellow, orange, red), so where the line runs says at once how bad it is.
 * The largest free block — whether the next large request fits — is a
 * second line on a byte axis at the right. The y range always reaches into
 * the last band, so the bands keep their meaning from picture to picture. More points than
 * pixels are reduced to each column's min..max first. */
#include "render_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLOR_FRAG 0x1d1d1d
#define COLOR_FREE 0x1f5fa8
#define COLOR_TRAPPED 0x8e24aa

enum { LINE_FRAGMENTATION, LINE_LARGEST_FREE, LINE_TRAPPED };

/* Point i of a line; the largest free block is on the byte axis at the right. */
static double line_value(const render_fragmentation *f, int which, size_t i) {
    return which == LINE_LARGEST_FREE ? (double)f->largest_free[i]
           : which == LINE_TRAPPED    ? f->trapped[i]
                                      : f->fragmentation[i];
}

/* Band i's shade and the colour of its name, from good to severe. */
static const struct band_colors {
    uint32_t color, ink;
} band_colors[RENDER_MAX_BANDS] = {
    {0xdcf0d5, 0x2e7d32}, {0xfff1b8, 0x8a6d00}, {0xffdcb3, 0xb35900}, {0xfbc9c6, 0xb71c1c}};

/* The legend's words for band i: "good  < 0.15", "moderate  0.15 – 0.30",
 * "severe  ≥ 0.40". */
static void band_legend(const render_fragmentation *f, size_t i, char *buf, size_t len) {
    const render_band *b = &f->bands[i];
    if (i == 0 && f->nbands > 1)
        snprintf(buf, len, "%s  < %.2f", b->name, f->bands[1].from);
    else if (i + 1 < f->nbands)
        snprintf(buf, len, "%s  %.2f \xe2\x80\x93 %.2f", b->name, b->from, f->bands[i + 1].from);
    else
        snprintf(buf, len, "%s  \xe2\x89\xa5 %.2f", b->name, b->from);
}

static int check(const render_fragmentation *f, char *err, size_t errlen) {
    if (f->nbands > RENDER_MAX_BANDS || (f->nbands && !f->bands)) {
        snprintf(err, errlen, "fragmentation: %zu bands (at most %d, and a table for them)",
                 f->nbands, RENDER_MAX_BANDS);
        return -1;
    }
    for (size_t i = 1; i < f->nbands; i++)
        if (!(f->bands[i].from > f->bands[i - 1].from)) {
            snprintf(err, errlen, "fragmentation: band %zu does not start above band %zu", i,
                     i - 1);
            return -1;
        }
    if (f->npoints && (!f->x || !f->fragmentation)) {
        snprintf(err, errlen, "fragmentation: %zu points but x or fragmentation is NULL",
                 f->npoints);
        return -1;
    }
    for (size_t i = 0; i < f->npoints; i++) {
        if (!isfinite(f->x[i])) {
            snprintf(err, errlen, "fragmentation: x of point %zu is not a number", i);
            return -1;
        }
        if (i && f->x[i] < f->x[i - 1]) {
            snprintf(err, errlen, "fragmentation: point %zu comes before point %zu in x", i, i - 1);
            return -1;
        }
    }
    return 0;
}

static void draw_bands(canvas *c, const plot *p, const render_fragmentation *f) {
    text_font(c, FS_SMALL, FONT_REGULAR);
    for (size_t i = 0; i < f->nbands; i++) {
        double lo = f->bands[i].from, hi = i + 1 < f->nbands ? f->bands[i + 1].from : p->ya.hi;
        if (lo >= p->ya.hi)
            break;
        double y0 = plot_y(p, fmin(hi, p->ya.hi)), y1 = plot_y(p, lo);
        cairo_rectangle(c->cr, p->x, y0, p->w, y1 - y0);
        set_rgb(c->cr, rgb_hex(band_colors[i].color), 1);
        cairo_fill(c->cr);
    }
}

static void band_names(canvas *c, const plot *p, const render_fragmentation *f) {
    text_font(c, FS_SMALL, FONT_BOLD);
    for (size_t i = 0; i < f->nbands; i++) {
        double lo = f->bands[i].from, hi = i + 1 < f->nbands ? f->bands[i + 1].from : p->ya.hi;
        if (lo >= p->ya.hi)
            break;
        double y0 = plot_y(p, fmin(hi, p->ya.hi)), y1 = plot_y(p, lo);
        const char *name = f->bands[i].name;
        canvas_box b = text_box(c, name, p->x + p->w - 6 * c->s, (y0 + y1) / 2, 1, 0.5);
        if (y1 - y0 >= b.h + 2 && text_box_free(c, b, 2 * c->s))
            text_draw_halo(c, name, b.x, b.y, 0, 0, rgb_hex(band_colors[i].ink));
    }
}

/* More points than columns: each column is drawn as its min..max, solid
 * (a dash pattern on a min..max zigzag is noise), and the legend says so. */
static int reduced(const render_fragmentation *f, const plot *p) {
    return f->npoints > 2 * (size_t)p->w;
}

/* A line through the points, with gaps at NaN; more points than columns
 * are drawn as each column's min..max. */
static void draw_line(canvas *c, const plot *p, const render_fragmentation *f, int which,
                      render_rgb color, double width, int dashed) {
    int second = which == LINE_LARGEST_FREE;
    cairo_t *cr = c->cr;
    double ymax = p->ya.hi;
    plot q = *p;
    if (second) {
        double m = 1;
        for (size_t i = 0; i < f->npoints; i++)
            m = fmax(m, (double)f->largest_free[i]);
        axis_bytes(&q.ya, m * 1.1, 6);
        ymax = q.ya.hi;
    }
    int pen = 0;
    double col = -1, cmin = 0, cmax = 0, cx = 0;
    int reduce = reduced(f, p);
    for (size_t i = 0; i <= f->npoints; i++) {
        double v = NAN, x = 0;
        if (i < f->npoints) {
            v = line_value(f, which, i);
            x = plot_x(p, f->x[i]);
            if (!second && v > ymax)
                v = ymax;
        }
        if (reduce) {
            double cidx = floor(x - p->x);
            if (i < f->npoints && isfinite(v) && cidx == col) {
                cmin = fmin(cmin, v);
                cmax = fmax(cmax, v);
                continue;
            }
            if (col >= 0) { /* the finished column */
                double ya = plot_y(&q, cmin), yb = plot_y(&q, cmax);
                if (pen)
                    cairo_line_to(cr, cx, ya);
                else
                    cairo_move_to(cr, cx, ya);
                cairo_line_to(cr, cx, yb);
                pen = 1;
            }
            col = isfinite(v) ? cidx : -1;
            cmin = cmax = v;
            cx = p->x + cidx + 0.5;
            if (!isfinite(v))
                pen = 0;
            continue;
        }
        if (i == f->npoints)
            break;
        if (!isfinite(v)) {
            pen = 0;
            continue;
        }
        double y = plot_y(&q, v);
        if (pen)
            cairo_line_to(cr, x, y);
        else
            cairo_move_to(cr, x, y);
        pen = 1;
    }
    set_rgb(cr, color, 1);
    cairo_set_line_width(cr, reduce ? width * 0.6 : width);
    if (dashed && !reduce) {
        double dash[] = {7 * c->s, 4 * c->s};
        cairo_set_dash(cr, dash, 2, 0);
    }
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    /* dots on the points when they stand apart */
    if (reduce || (f->npoints > 1 && p->w / (double)f->npoints < 8 * c->s))
        return;
    for (size_t i = 0; i < f->npoints; i++) {
        double v = second ? line_value(f, which, i) : fmin(line_value(f, which, i), ymax);
        if (!isfinite(v))
            continue;
        cairo_arc(cr, plot_x(p, f->x[i]), plot_y(&q, v), (second ? 2.5 : 3.2) * c->s, 0, 2 * M_PI);
        cairo_fill(cr);
    }
}

static void draw(canvas *c, const render_fragmentation *f) {
    double s = c->s, m = 20 * s;
    double top = canvas_header(c, f->title, f->subtitle);
    double lw = legend_width(c);
    plot p;
    memset(&p, 0, sizeof p);
    p.y = round(top + 8 * s);
    p.h = round(c->h - m - plot_bottom_room(c) - p.y);
    double fmax_v = 0;
    for (size_t i = 0; i < f->npoints; i++)
        if (isfinite(f->fragmentation[i]))
            fmax_v = fmax(fmax_v, f->fragmentation[i]);
    double ymax = ceil(fmax_v * 1.1 * 10 - 1e-9) / 10;
    double lowest = f->nbands ? f->bands[f->nbands - 1].from + 0.1 : 0.5; /* into the last band */
    ymax = ymax < lowest ? lowest : ymax > 1 ? 1 : ymax;
    axis_plain(&p.ya, AXIS_PLAIN, 0, ymax, 6);
    p.ya.step = 0.1;
    p.ya.decimals = 1;
    axis right;
    double free_max = 1;
    if (f->largest_free)
        for (size_t i = 0; i < f->npoints; i++)
            free_max = fmax(free_max, (double)f->largest_free[i]);
    axis_bytes(&right, free_max * 1.1, 6);
    p.x = round(m + plot_left_room(c, &p.ya));
    double right_room = f->largest_free ? plot_left_room(c, &right) : 0;
    p.w = round(c->w - m - lw - 28 * s - right_room - p.x);
    if (p.w < 10 || p.h < 10) {
        canvas_message(c, top, "the picture is too small for a plot");
        return;
    }
    double x0 = f->x[0], x1 = f->x[f->npoints - 1];
    const char *xtitle = "step";
    if (f->x_is_time) {
        if (x1 <= x0)
            x1 = x0 + 1;
        xtitle = axis_x_time(c, &p.xa, x0 * 1e9, x1 * 1e9, (int)(p.w / (130 * s)));
        p.xa.lo /= 1e9;
        p.xa.hi /= 1e9;
        p.xa.step /= 1e9;
        p.xa.unit /= 1e9;
    } else {
        axis_plain(&p.xa, AXIS_INTEGER, x0 - 0.5, x1 + 0.5, (int)(p.w / (90 * s)));
    }
    draw_bands(c, &p, f);
    plot_axes(c, &p, xtitle, "fragmentation (reserved \xe2\x88\x92 allocated) / reserved");
    if (f->largest_free)
        plot_right_axis(c, &p, &right, "largest free block", rgb_hex(COLOR_FREE));
    cairo_save(c->cr);
    cairo_rectangle(c->cr, p.x - 4 * s, p.y - 4 * s, p.w + 8 * s, p.h + 8 * s);
    cairo_clip(c->cr);
    if (f->largest_free)
        draw_line(c, &p, f, LINE_LARGEST_FREE, rgb_hex(COLOR_FREE), 2 * s, 1);
    draw_line(c, &p, f, LINE_FRAGMENTATION, rgb_hex(COLOR_FRAG), 2.4 * s, 0);
    if (f->trapped)
        draw_line(c, &p, f, LINE_TRAPPED, rgb_hex(COLOR_TRAPPED), 2.4 * s, 0);
    cairo_restore(c->cr);
    plot_frame(c, &p);
    band_names(c, &p, f);
    legend_item items[4 + RENDER_MAX_BANDS];
    char legends[RENDER_MAX_BANDS][64];
    size_t n = 0;
    items[n++] = (legend_item){"fragmentation", rgb_hex(COLOR_FRAG), LEGEND_LINE};
    if (f->trapped)
        items[n++] = (legend_item){"trapped (empty_cache() cannot return it)",
                                   rgb_hex(COLOR_TRAPPED), LEGEND_LINE};
    if (f->largest_free)
        items[n++] = (legend_item){"largest free block", rgb_hex(COLOR_FREE),
                                   reduced(f, &p) ? LEGEND_LINE : LEGEND_DASH};
    items[n++] = (legend_item){f->bands_rate ? f->bands_rate : "rating", rgb_hex(COLOR_MUTED),
                               LEGEND_HEADING};
    for (size_t i = 0; i < f->nbands; i++) {
        band_legend(f, i, legends[i], sizeof legends[i]);
        items[n++] = (legend_item){legends[i], rgb_hex(band_colors[i].color), LEGEND_FILL};
    }
    double lx = c->w - m - lw;
    legend_draw(c, lx, p.y, lw, c->h - m - p.y, items, n);
}

int render_fragmentation_draw(const render_fragmentation *f, const char *path,
                              const render_options *opt, char *err, size_t errlen) {
    if (!f) {
        snprintf(err, errlen, "fragmentation: no data given");
        return -1;
    }
    if (check(f, err, errlen) != 0)
        return -1;
    canvas c;
    if (canvas_open(&c, path, opt, f->title, f->subtitle, err, errlen) != 0)
        return -1;
    if (f->npoints == 0)
        canvas_no_data(&c, f->title, f->subtitle, "no steps or samples in this window");
    else
        draw(&c, f);
    return canvas_close(&c, err, errlen);
}
