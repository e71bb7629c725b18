/* render_axes.c — axes in the units people read memory and time in.
 *
 * Bytes are in binary units, one unit per axis, with ticks a power of two
 * of it apart, since memory comes in such sizes (0, 0.25, 0.5 … GiB; 0,
 * 16, 32 … GiB). Time is in ns, µs, ms, s, min or h by the span, plain
 * numbers and steps as they are; their ticks are "nice" (1, 2, 2.5, 5 times
 * a power of ten). A plot is a data rectangle with an x and a y axis; this
 * file draws its grid, its tick labels (each dropped if it would touch one
 * already drawn) and its axis titles, and maps values to coordinates. */
#include "render_common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_TICKS 64

static double nice_step(double range, int target, int integer) {
    if (!(range > 0))
        return 1;
    if (target < 1)
        target = 1;
    double raw = range / target, mag = pow(10, floor(log10(raw))), norm = raw / mag;
    static const double steps[] = {1, 2, 2.5, 5, 10};
    double step = 10 * mag;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        double cand = steps[i] * mag;
        if (integer && fabs(cand - round(cand)) > 1e-9)
            continue;
        if (steps[i] >= norm - 1e-9) {
            step = cand;
            break;
        }
    }
    if (integer && step < 1)
        step = 1;
    return step;
}

static int decimals_for(double step) {
    int d = 0;
    double scaled = step;
    while (d < 6 && fabs(scaled - round(scaled)) > 1e-6 * (scaled > 1 ? scaled : 1)) {
        scaled *= 10;
        d++;
    }
    return d;
}

void axis_bytes(axis *a, double max, int target_ticks) {
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    memset(a, 0, sizeof *a);
    if (!(max > 0))
        max = 1;
    double unit = 1;
    size_t u = 0;
    while (u + 1 < sizeof names / sizeof names[0] && max >= unit * 1024) {
        unit *= 1024;
        u++;
    }
    /* steps of a power of two (at least a quarter) of the unit: memory
     * comes in such sizes, so ticks land on 256 MiB, 512 MiB… */
    double v = max / unit, raw = v / (target_ticks > 0 ? target_ticks : 1);
    double step = u == 0 ? 1 : 0.25;
    while (step < raw)
        step *= 2;
    a->kind = AXIS_BYTES;
    a->lo = 0;
    a->hi = ceil(v / step - 1e-9) * step * unit;
    a->step = step * unit;
    a->unit = unit;
    a->suffix = names[u];
    a->decimals = decimals_for(step);
}

void axis_time(axis *a, double lo_ns, double hi_ns, int target_ticks) {
    memset(a, 0, sizeof *a);
    if (!(hi_ns > lo_ns))
        hi_ns = lo_ns + 1;
    double span = hi_ns - lo_ns;
    a->kind = AXIS_TIME;
    if (span < 1e3) {
        a->unit = 1;
        a->suffix = "ns";
    } else if (span < 1e6) {
        a->unit = 1e3;
        a->suffix = "\xc2\xb5s";
    } else if (span < 1e9) {
        a->unit = 1e6;
        a->suffix = "ms";
    } else if (span < 300e9) {
        a->unit = 1e9;
        a->suffix = "s";
    } else if (span < 18000e9) {
        a->unit = 60e9;
        a->suffix = "min";
    } else {
        a->unit = 3600e9;
        a->suffix = "h";
    }
    double step = nice_step(span / a->unit, target_ticks, a->unit == 1);
    a->lo = lo_ns;
    a->hi = hi_ns;
    a->step = step * a->unit;
    a->decimals = decimals_for(step);
}

const char *axis_x_time(const canvas *c, axis *a, double lo_ns, double hi_ns, int target_ticks) {
    if (c->ns_per_event <= 0) {
        axis_time(a, lo_ns, hi_ns, target_ticks);
        return "time since the first event";
    }
    double per = (double)c->ns_per_event;
    axis_plain(a, AXIS_INTEGER, lo_ns / per, hi_ns / per, target_ticks);
    a->lo *= per; /* the plot keeps its data in ns; labels show events */
    a->hi *= per;
    a->step *= per;
    a->unit *= per;
    return "events, in order (no timestamps)";
}

void axis_plain(axis *a, int kind, double lo, double hi, int target_ticks) {
    memset(a, 0, sizeof *a);
    if (!(hi > lo))
        hi = lo + 1;
    a->kind = kind;
    a->lo = lo;
    a->hi = hi;
    a->unit = 1;
    a->suffix = "";
    a->step = nice_step(hi - lo, target_ticks, kind == AXIS_INTEGER);
    a->decimals = decimals_for(a->step);
}

size_t axis_ticks(const axis *a, double *ticks, size_t max) {
    if (!(a->step > 0))
        return 0;
    double first = ceil(a->lo / a->step - 1e-9);
    size_t n = 0;
    for (double k = first; n < max; k++) {
        double v = k * a->step;
        if (v > a->hi + a->step * 1e-9)
            break;
        ticks[n++] = v;
    }
    return n;
}

void axis_label(const axis *a, double v, char *buf, size_t len) {
    if (fabs(v) < a->step * 1e-6) {
        snprintf(buf, len, "0");
        return;
    }
    const char *suffix = a->suffix ? a->suffix : "";
    /* bytes and times: as few decimals as the value needs (0.25, 0.5, 0.75,
     * 1 GiB); plain numbers keep the step's, so a column of them lines up */
    int decimals =
        a->kind == AXIS_BYTES || a->kind == AXIS_TIME ? decimals_for(v / a->unit) : a->decimals;
    snprintf(buf, len, "%.*f%s%s", decimals > 3 ? 3 : decimals, v / a->unit, *suffix ? " " : "",
             suffix);
}

void format_bytes(double bytes, char *buf, size_t len) {
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%.0f B", bytes < 0 ? 0 : bytes);
        return;
    }
    double v = bytes;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof names / sizeof names[0]) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, names[u]);
}

void format_moment(const canvas *c, double ns, char *buf, size_t len) {
    if (c->ns_per_event > 0)
        snprintf(buf, len, "event %.0f", ns / (double)c->ns_per_event);
    else
        format_duration(ns, buf, len);
}

void format_duration(double ns, char *buf, size_t len) {
    if (ns < 0)
        ns = 0;
    if (ns < 1e3)
        snprintf(buf, len, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, len, "%.1f \xc2\xb5s", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, len, "%.2f ms", ns / 1e6);
    else if (ns < 120e9)
        snprintf(buf, len, "%.3f s", ns / 1e9);
    else if (ns < 3600e9)
        snprintf(buf, len, "%.0fm %02.0fs", floor(ns / 60e9), floor(fmod(ns / 1e9, 60)));
    else
        snprintf(buf, len, "%.0fh %02.0fm", floor(ns / 3600e9), floor(fmod(ns / 60e9, 60)));
}

/* ---- plots ------------------------------------------------------------- */

double plot_x(const plot *p, double v) {
    double span = p->xa.hi - p->xa.lo;
    return p->x + (span > 0 ? (v - p->xa.lo) / span : 0) * p->w;
}

double plot_y(const plot *p, double v) {
    double span = p->ya.hi - p->ya.lo, f = span > 0 ? (v - p->ya.lo) / span : 0;
    return p->ya.flip ? p->y + f * p->h : p->y + p->h - f * p->h;
}

static double snap(double v) { return floor(v) + 0.5; }

static double tick_label_width(canvas *c, const axis *a) {
    double ticks[MAX_TICKS], w = 0;
    size_t n = axis_ticks(a, ticks, MAX_TICKS);
    char buf[64];
    for (size_t i = 0; i < n; i++) {
        axis_label(a, ticks[i], buf, sizeof buf);
        double tw = text_width(c, buf);
        if (tw > w)
            w = tw;
    }
    return w;
}

double plot_left_room(canvas *c, const axis *ya) {
    text_font(c, FS_SMALL, FONT_REGULAR);
    double w = tick_label_width(c, ya);
    text_font(c, FS_LABEL, FONT_REGULAR);
    return w + 14 * c->s + text_height(c) + 6 * c->s;
}

double plot_bottom_room(canvas *c) {
    text_font(c, FS_SMALL, FONT_REGULAR);
    double h = text_height(c);
    text_font(c, FS_LABEL, FONT_REGULAR);
    return h + 10 * c->s + text_height(c) + 10 * c->s;
}

/* y tick labels at x (right-aligned when align is 1, left when 0). */
static double y_labels(canvas *c, const plot *p, const axis *a, double x, double align) {
    plot q = *p;
    q.ya = *a;
    double ticks[MAX_TICKS], w = 0;
    size_t n = axis_ticks(a, ticks, MAX_TICKS);
    char buf[64];
    text_font(c, FS_SMALL, FONT_REGULAR);
    for (size_t i = 0; i < n; i++) {
        axis_label(a, ticks[i], buf, sizeof buf);
        double y = plot_y(&q, ticks[i]);
        canvas_box b = text_box(c, buf, x, y, align, 0.5);
        if (!text_box_free(c, b, 1 * c->s))
            continue;
        text_draw(c, buf, x, y, align, 0.5);
        if (b.w > w)
            w = b.w;
    }
    return w;
}

void plot_axes(canvas *c, const plot *p, const char *x_title, const char *y_title) {
    cairo_t *cr = c->cr;
    double s = c->s, ticks[MAX_TICKS];
    char buf[64];
    /* horizontal grid */
    size_t n = axis_ticks(&p->ya, ticks, MAX_TICKS);
    for (size_t i = 0; i < n; i++) {
        double y = snap(plot_y(p, ticks[i]));
        cairo_move_to(cr, p->x, y);
        cairo_line_to(cr, p->x + p->w, y);
    }
    set_rgb(cr, rgb_hex(COLOR_GRID), 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    /* x tick marks and labels */
    n = axis_ticks(&p->xa, ticks, MAX_TICKS);
    double base = p->y + p->h;
    for (size_t i = 0; i < n; i++) {
        double x = snap(plot_x(p, ticks[i]));
        cairo_move_to(cr, x, base);
        cairo_line_to(cr, x, base + 5 * s);
    }
    set_rgb(cr, rgb_hex(COLOR_FRAME), 1);
    cairo_stroke(cr);
    set_rgb(cr, rgb_hex(COLOR_TEXT), 1);
    text_font(c, FS_SMALL, FONT_REGULAR);
    double label_h = text_height(c);
    for (size_t i = 0; i < n; i++) {
        axis_label(&p->xa, ticks[i], buf, sizeof buf);
        double x = plot_x(p, ticks[i]);
        canvas_box b = text_box(c, buf, x, base + 7 * s, 0.5, 0);
        if (text_box_free(c, b, 4 * s))
            text_draw(c, buf, x, base + 7 * s, 0.5, 0);
    }
    double wl = y_labels(c, p, &p->ya, p->x - 7 * s, 1);
    set_rgb(cr, rgb_hex(COLOR_MUTED), 1);
    text_font(c, FS_LABEL, FONT_REGULAR);
    if (x_title && *x_title)
        text_draw(c, x_title, p->x + p->w / 2, base + 10 * s + label_h + 2 * s, 0.5, 0);
    if (y_title && *y_title)
        text_draw_up(c, y_title, p->x - 7 * s - wl - 8 * s - text_height(c) / 2, p->y + p->h / 2);
}

void plot_frame(canvas *c, const plot *p) {
    cairo_t *cr = c->cr;
    double x = snap(p->x), y = snap(p->y + p->h);
    cairo_move_to(cr, x, p->y);
    cairo_line_to(cr, x, y);
    cairo_line_to(cr, p->x + p->w, y);
    set_rgb(cr, rgb_hex(COLOR_FRAME), 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
}

void plot_right_axis(canvas *c, const plot *p, const axis *a, const char *title, render_rgb color) {
    cairo_t *cr = c->cr;
    double s = c->s, x = snap(p->x + p->w);
    cairo_move_to(cr, x, p->y);
    cairo_line_to(cr, x, p->y + p->h);
    set_rgb(cr, rgb_hex(COLOR_FRAME), 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    set_rgb(cr, color, 1);
    double wl = y_labels(c, p, a, p->x + p->w + 7 * s, 0);
    text_font(c, FS_LABEL, FONT_REGULAR);
    if (title && *title)
        text_draw_up(c, title, p->x + p->w + 7 * s + wl + 8 * s + text_height(c) / 2,
                     p->y + p->h / 2);
}

void plot_limit_line(canvas *c, const plot *p, double bytes, render_rgb color) {
    double sc = c->s, y = plot_y(p, bytes), dash[] = {7 * sc, 4 * sc};
    cairo_set_dash(c->cr, dash, 2, 0);
    cairo_move_to(c->cr, p->x, y);
    cairo_line_to(c->cr, p->x + p->w, y);
    set_rgb(c->cr, color, 1);
    cairo_set_line_width(c->cr, 1.5 * sc);
    cairo_stroke(c->cr);
    cairo_set_dash(c->cr, NULL, 0, 0);
}
