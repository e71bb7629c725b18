/* render_simulate.c — `memanalyze simulate -o`: reserved memory over the run
 * under each configuration, on one axis.
 *
 * One line per configuration, in the order given (the run's own first, the
 * thickest), each a column's highest reserved bytes (the simulation keeps
 * the maximum per column of requests, so a spike is never lost between two
 * samples); the device's memory, when known, is a dashed limit line; the
 * legend names the configurations with their peaks; where a configuration
 * ran out of memory its line carries a red-edged triangle. The x axis is the
 * events in order (the caller's numbers: simulate's are report's event
 * numbers): configurations share them, not their times. */
#include "render_common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check(const render_simulation *s, char *err, size_t errlen) {
    if (s->nconfigs > RENDER_MAX_CONFIGS) {
        snprintf(err, errlen, "simulate: %zu configurations (at most %d)", s->nconfigs,
                 RENDER_MAX_CONFIGS);
        return -1;
    }
    if (s->nconfigs && (!s->label || !s->reserved_max || !s->peak_reserved)) {
        snprintf(err, errlen, "simulate: %zu configurations but no labels or data", s->nconfigs);
        return -1;
    }
    return 0;
}

/* Column i covers requests [i, i + 1) * per_column. */
static void draw_line(canvas *c, const plot *p, const int64_t *v, size_t n, double per_column,
                      render_rgb color, double width) {
    cairo_t *cr = c->cr;
    int pen = 0;
    int64_t last = -1;
    for (size_t i = 0; i < n; i++) {
        /* a column where the model saw no request keeps the level before it */
        int64_t value = v[i] >= 0 ? v[i] : last;
        if (value < 0)
            continue;
        last = value;
        double x = plot_x(p, ((double)i + 0.5) * per_column), y = plot_y(p, (double)value);
        if (pen)
            cairo_line_to(cr, x, y);
        else
            cairo_move_to(cr, x, y);
        pen = 1;
    }
    set_rgb(cr, color, 1);
    cairo_set_line_width(cr, width);
    cairo_stroke(cr);
}

#define COLOR_OOM_EDGE 0xd7191c

/* The columns of one configuration where it ran out of memory: a triangle pointing down onto
 * its line, in its color, edged red. */
static void draw_ooms(canvas *c, const plot *p, const int64_t *v, const uint8_t *oom, size_t n,
                      double per_column, render_rgb color) {
    cairo_t *cr = c->cr;
    double r = 5 * c->s, last_x = -1e300;
    int64_t level = -1;
    for (size_t i = 0; i < n; i++) {
        if (v[i] >= 0)
            level = v[i];
        if (!oom[i] || level < 0)
            continue;
        double x = plot_x(p, ((double)i + 0.5) * per_column), y = plot_y(p, (double)level);
        if (x - last_x < 2 * r) /* OOMs close together share one mark */
            continue;
        last_x = x;
        cairo_move_to(cr, x - r, y - 1.6 * r);
        cairo_line_to(cr, x + r, y - 1.6 * r);
        cairo_line_to(cr, x, y - 0.2 * r);
        cairo_close_path(cr);
        set_rgb(cr, color, 1);
        cairo_fill_preserve(cr);
        set_rgb(cr, rgb_hex(COLOR_OOM_EDGE), 1);
        cairo_set_line_width(cr, 1.2 * c->s);
        cairo_stroke(cr);
    }
}

static void draw(canvas *c, const render_simulation *s) {
    double sc = c->s, m = 20 * sc;
    double top = canvas_header(c, s->title, s->subtitle);
    double lw = legend_width(c);
    plot p;
    memset(&p, 0, sizeof p);
    p.y = round(top + 8 * sc);
    p.h = round(c->h - m - plot_bottom_room(c) - p.y);
    double ymax = (double)s->device_memory_bytes;
    for (size_t k = 0; k < s->nconfigs; k++)
        ymax = fmax(ymax, (double)s->peak_reserved[k]);
    axis_bytes(&p.ya, fmax(ymax, 1) * 1.05, 6);
    p.x = round(m + plot_left_room(c, &p.ya));
    p.w = round(c->w - m - lw - 28 * sc - p.x);
    if (p.w < 10 || p.h < 10) {
        canvas_message(c, top, "the picture is too small for a plot");
        return;
    }
    double requests = (double)(s->requests ? s->requests : 1);
    axis_plain(&p.xa, AXIS_INTEGER, 0, requests, (int)(p.w / (110 * sc)));
    plot_axes(c, &p, s->x_label ? s->x_label : "PyTorch events, in order",
              s->y_label ? s->y_label : "reserved");
    cairo_save(c->cr);
    cairo_rectangle(c->cr, p.x - 4 * sc, p.y - 4 * sc, p.w + 8 * sc, p.h + 8 * sc);
    cairo_clip(c->cr);
    if (s->device_memory_bytes)
        plot_limit_line(c, &p, (double)s->device_memory_bytes, rgb_hex(COLOR_DEVICE_LIMIT));
    for (size_t k = s->nconfigs; k-- > 0;) /* the run's own last: on top */
        draw_line(c, &p, s->reserved_max + k * s->ncolumns, s->ncolumns,
                  requests / (double)s->ncolumns, render_site_color(k + 1),
                  (k == 0 ? 3.0 : 2.0) * sc);
    int any_oom = 0;
    for (size_t k = s->nconfigs; s->oom && k-- > 0;) {
        const uint8_t *o = s->oom + k * s->ncolumns;
        for (size_t i = 0; i < s->ncolumns && !any_oom; i++)
            any_oom = o[i] != 0;
        draw_ooms(c, &p, s->reserved_max + k * s->ncolumns, o, s->ncolumns,
                  requests / (double)s->ncolumns, render_site_color(k + 1));
    }
    cairo_restore(c->cr);
    plot_frame(c, &p);
    legend_item items[RENDER_MAX_CONFIGS + 2];
    char labels[RENDER_MAX_CONFIGS][192];
    size_t n = 0;
    for (size_t k = 0; k < s->nconfigs; k++) {
        char peak[32];
        format_bytes((double)s->peak_reserved[k], peak, sizeof peak);
        const char *prefix = s->first_prefix ? s->first_prefix : "(own) ";
        snprintf(labels[k], sizeof labels[k], "%s%s: %s %s", k == 0 ? prefix : "", s->label[k],
                 s->peak_word ? s->peak_word : "peak", peak);
        items[n++] = (legend_item){labels[k], render_site_color(k + 1), LEGEND_LINE};
    }
    if (s->device_memory_bytes)
        items[n++] = (legend_item){"device memory", rgb_hex(COLOR_DEVICE_LIMIT), LEGEND_DASH};
    if (any_oom)
        items[n++] = (legend_item){"OOM", rgb_hex(COLOR_OOM_EDGE), LEGEND_TRIANGLE};
    legend_draw(c, c->w - m - lw, p.y, lw, c->h - m - p.y, items, n);
}

int render_simulation_draw(const render_simulation *s, const char *path, const render_options *opt,
                           char *err, size_t errlen) {
    if (!s) {
        snprintf(err, errlen, "simulate: no data given");
        return -1;
    }
    if (check(s, err, errlen) != 0)
        return -1;
    canvas c;
    if (canvas_open(&c, path, opt, s->title, s->subtitle, err, errlen) != 0)
        return -1;
    if (s->nconfigs == 0 || s->ncolumns == 0)
        canvas_no_data(&c, s->title, s->subtitle, "no requests to simulate");
    else
        draw(&c, s);
    return canvas_close(&c, err, errlen);
}
