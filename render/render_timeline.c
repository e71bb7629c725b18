/* render_timeline.c — bytes over time on one device.
 *
 * The analyzer hands over per-bucket summaries, never events, and this file
 * reduces them once more, to one value per pixel column: the min..max of
 * allocated and reserved over the buckets a column covers (drawn as lines
 * that widen into a band where the value swung inside the column), and the
 * stacked series at the last bucket ending in the column. Drawing therefore
 * costs buckets + columns × series, whatever the trace's size. On top: step
 * boundaries (labelled at a stride chosen so no two labels touch), the
 * device's total as a limit line (or a note when it is far above the data),
 * OOM marks, and the peak with its value. */
#include "render_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE SIZE_MAX
#define COLOR_RESERVED 0x3b3f8f
#define COLOR_ALLOCATED 0x111111
#define COLOR_LIMIT 0xb2182b
#define COLOR_OOM 0xd7191c
#define COLOR_STEP 0x7a7a7a

typedef struct columns {
    size_t n;
    double *amin, *amax, *rmin, *rmax;
    size_t *last; /* the last bucket the column covers; NONE: no data */
    double *cum;  /* [nseries][n]: top of series k's area */
} columns;

static int check(const render_timeline *t, char *err, size_t errlen) {
    size_t n = t->nbuckets;
    if (n && (!t->bucket_start_ns || !t->allocated_min || !t->allocated_max || !t->reserved_min ||
              !t->reserved_max)) {
        snprintf(err, errlen, "timeline: %zu buckets but a bucket array is NULL", n);
        return -1;
    }
    for (size_t i = 1; i < n; i++)
        if (t->bucket_start_ns[i] < t->bucket_start_ns[i - 1]) {
            snprintf(err, errlen, "timeline: bucket %zu starts before bucket %zu", i, i - 1);
            return -1;
        }
    if (n && t->end_ns < t->bucket_start_ns[n - 1]) {
        snprintf(err, errlen, "timeline: end_ns %lld is before the last bucket's start %lld",
                 (long long)t->end_ns, (long long)t->bucket_start_ns[n - 1]);
        return -1;
    }
    if (n && t->nseries && !t->series_bytes) {
        snprintf(err, errlen, "timeline: %zu series but series_bytes is NULL", t->nseries);
        return -1;
    }
    if ((t->nsteps && !t->step_ns) || (t->nooms && !t->oom_ns)) {
        snprintf(err, errlen, "timeline: %s given without their times",
                 t->nsteps && !t->step_ns ? "steps" : "OOMs");
        return -1;
    }
    return 0;
}

static void columns_free(columns *k) {
    free(k->amin);
    free(k->amax);
    free(k->rmin);
    free(k->rmax);
    free(k->last);
    free(k->cum);
}

static int columns_build(columns *k, const render_timeline *t, const plot *p) {
    memset(k, 0, sizeof *k);
    size_t n = (size_t)p->w, ns = t->nseries;
    k->n = n;
    k->amin = malloc(n * sizeof *k->amin);
    k->amax = malloc(n * sizeof *k->amax);
    k->rmin = malloc(n * sizeof *k->rmin);
    k->rmax = malloc(n * sizeof *k->rmax);
    k->last = malloc(n * sizeof *k->last);
    k->cum = malloc((ns ? ns : 1) * n * sizeof *k->cum);
    if (!k->amin || !k->amax || !k->rmin || !k->rmax || !k->last || !k->cum)
        return -1;
    for (size_t c = 0; c < n; c++) {
        k->last[c] = NONE;
        k->amin[c] = k->rmin[c] = INFINITY;
        k->amax[c] = k->rmax[c] = -INFINITY;
    }
    for (size_t i = 0; i < t->nbuckets; i++) {
        double end = i + 1 < t->nbuckets ? (double)t->bucket_start_ns[i + 1] : (double)t->end_ns;
        double xa = plot_x(p, (double)t->bucket_start_ns[i]) - p->x, xb = plot_x(p, end) - p->x;
        double f0 = floor(xa), f1 = ceil(xb) - 1;
        if (f1 < f0)
            f1 = f0;
        if (f1 < 0 || f0 >= (double)n)
            continue;
        size_t c0 = f0 < 0 ? 0 : (size_t)f0, c1 = f1 >= (double)n ? n - 1 : (size_t)f1;
        for (size_t c = c0; c <= c1; c++) {
            /* before the bucket's last column, its end state (a line, as the series draw) */
            int ends = c < c1 && t->allocated_end && t->reserved_end;
            double alo = ends ? (double)t->allocated_end[i] : (double)t->allocated_min[i];
            double ahi = ends ? (double)t->allocated_end[i] : (double)t->allocated_max[i];
            double rlo = ends ? (double)t->reserved_end[i] : (double)t->reserved_min[i];
            double rhi = ends ? (double)t->reserved_end[i] : (double)t->reserved_max[i];
            k->amin[c] = fmin(k->amin[c], alo);
            k->amax[c] = fmax(k->amax[c], ahi);
            k->rmin[c] = fmin(k->rmin[c], rlo);
            k->rmax[c] = fmax(k->rmax[c], rhi);
            k->last[c] = i;
        }
    }
    for (size_t c = 0; c < n; c++) {
        double sum = 0;
        for (size_t s = 0; s < ns; s++) {
            if (k->last[c] != NONE)
                sum += (double)t->series_bytes[s * t->nbuckets + k->last[c]];
            k->cum[s * n + c] = sum;
        }
    }
    return 0;
}

/* The highest value anything draws, from the buckets themselves. */
static double data_max(const render_timeline *t) {
    double m = (double)t->peak_bytes;
    for (size_t i = 0; i < t->nbuckets; i++) {
        m = fmax(m, (double)t->allocated_max[i]);
        m = fmax(m, (double)t->reserved_max[i]);
        double sum = 0;
        for (size_t s = 0; s < t->nseries; s++)
            sum += (double)t->series_bytes[s * t->nbuckets + i];
        m = fmax(m, sum);
    }
    return m;
}

/* Runs of columns holding data, as [a, b]; returns 0 at the end. */
static int next_run(const columns *k, size_t *a, size_t *b) {
    size_t c = *b == NONE ? 0 : *b + 1;
    while (c < k->n && k->last[c] == NONE)
        c++;
    if (c >= k->n)
        return 0;
    *a = c;
    while (c + 1 < k->n && k->last[c + 1] != NONE)
        c++;
    *b = c;
    return 1;
}

static void trace_edge(cairo_t *cr, const plot *p, const double *v, size_t a, size_t b,
                       int reverse) {
    for (size_t i = 0; i <= b - a; i++) {
        size_t c = reverse ? b - i : a + i;
        double y = plot_y(p, v[c]);
        if (c == (reverse ? b : a))
            cairo_line_to(cr, p->x + c + (reverse ? 1 : 0), y);
        cairo_line_to(cr, p->x + c + 0.5, y);
        if (c == (reverse ? a : b))
            cairo_line_to(cr, p->x + c + (reverse ? 0 : 1), y);
    }
}

/* A min..max envelope: the band filled lightly, both edges stroked. */
static void draw_envelope(canvas *c, const plot *p, const columns *k, const double *lo,
                          const double *hi, render_rgb color, double width) {
    cairo_t *cr = c->cr;
    size_t a = 0, b = NONE;
    while (next_run(k, &a, &b)) {
        cairo_new_path(cr);
        trace_edge(cr, p, hi, a, b, 0);
        trace_edge(cr, p, lo, a, b, 1);
        cairo_close_path(cr);
        set_rgb(cr, color, 0.5);
        cairo_fill(cr);
        for (int edge = 0; edge < 2; edge++) {
            cairo_new_path(cr);
            trace_edge(cr, p, edge ? lo : hi, a, b, 0);
            set_rgb(cr, color, 1);
            cairo_set_line_width(cr, width);
            cairo_stroke(cr);
        }
    }
}

static void draw_series(canvas *c, const render_timeline *t, const plot *p, const columns *k) {
    cairo_t *cr = c->cr;
    double base = p->y + p->h;
    for (size_t s = t->nseries; s-- > 0;) {
        const double *top = k->cum + s * k->n;
        size_t a = 0, b = NONE;
        while (next_run(k, &a, &b)) {
            cairo_new_path(cr);
            cairo_move_to(cr, p->x + a, base);
            trace_edge(cr, p, top, a, b, 0);
            cairo_line_to(cr, p->x + b + 1, base);
            cairo_close_path(cr);
        }
        set_rgb(cr, render_site_color(t->series_key ? t->series_key[s] : s + 1), 1);
        cairo_fill(cr);
    }
}

/* Whether the box crosses the reserved or allocated line. */
static int box_on_lines(const columns *k, const plot *p, canvas_box b) {
    double c0 = floor(b.x - p->x), c1 = ceil(b.x + b.w - p->x);
    for (double cf = c0 < 0 ? 0 : c0; cf < c1 && cf < (double)k->n; cf++) {
        size_t c = (size_t)cf;
        if (k->last[c] == NONE)
            continue;
        double lo[] = {k->rmax[c], k->amax[c]}, hi[] = {k->rmin[c], k->amin[c]};
        for (int i = 0; i < 2; i++) {
            double top = plot_y(p, lo[i]) - 3, bottom = plot_y(p, hi[i]) + 3;
            if (top < b.y + b.h && b.y < bottom)
                return 1;
        }
    }
    return 0;
}

/* A label with a halo, at the first candidate place that is inside the
 * plot and clear of other text, and clear of the lines if one is. */
static int place_note(canvas *c, const plot *p, const columns *k, const char *text,
                      const double (*cand)[4], size_t ncand, render_rgb color) {
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < ncand; i++) {
            canvas_box b = text_box(c, text, cand[i][0], cand[i][1], cand[i][2], cand[i][3]);
            int in =
                b.x >= p->x && b.y >= p->y && b.x + b.w <= p->x + p->w && b.y + b.h <= p->y + p->h;
            if (in && text_box_free(c, b, 2 * c->s) && (pass || !box_on_lines(k, p, b))) {
                text_draw_halo(c, text, b.x, b.y, 0, 0, color);
                return 1;
            }
        }
    return 0;
}

/* Labels every stride-th step, the smallest stride whose labels keep apart. */
static size_t step_stride(canvas *c, const render_timeline *t, const plot *p, double gap,
                          int numeric) {
    size_t longest = 0, len = 0;
    for (size_t i = 0; i < t->nsteps && t->step_label; i++) {
        size_t l = t->step_label[i] ? strlen(t->step_label[i]) : 0;
        if (l > len) {
            len = l;
            longest = i;
        }
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%zu", t->nsteps);
    double w = t->step_label && t->step_label[longest] ? text_width(c, t->step_label[longest])
                                                       : text_width(c, buf);
    static const size_t strides[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000};
    for (size_t si = 0; si < sizeof strides / sizeof strides[0]; si++) {
        size_t k = strides[si];
        double prev = -INFINITY;
        int ok = 1;
        for (size_t i = 0; i < t->nsteps && ok; i++) {
            long num = numeric ? strtol(t->step_label[i], NULL, 10) : (long)i;
            if (num % (long)k != 0)
                continue;
            double x = plot_x(p, (double)t->step_ns[i]);
            if (x < p->x || x > p->x + p->w)
                continue;
            ok = x - prev >= w + gap;
            prev = x;
        }
        if (ok)
            return k;
    }
    return SIZE_MAX;
}

static int labels_numeric(const render_timeline *t) {
    if (!t->step_label)
        return 0;
    for (size_t i = 0; i < t->nsteps; i++) {
        char *end;
        if (!t->step_label[i] || !*t->step_label[i])
            return 0;
        strtol(t->step_label[i], &end, 10);
        if (*end)
            return 0;
    }
    return 1;
}

static void draw_steps(canvas *c, const render_timeline *t, const plot *p, double strip_y) {
    cairo_t *cr = c->cr;
    double s = c->s;
    text_font(c, FS_SMALL, FONT_REGULAR);
    int numeric = labels_numeric(t);
    size_t k = step_stride(c, t, p, 8 * s, numeric);
    int all_lines = p->w / (double)t->nsteps >= 4 * s;
    double last_line = -INFINITY;
    char buf[64];
    for (size_t i = 0; i < t->nsteps; i++) {
        double x = plot_x(p, (double)t->step_ns[i]);
        if (x < p->x || x > p->x + p->w)
            continue;
        long num = numeric ? strtol(t->step_label[i], NULL, 10) : (long)i;
        int labelled = k != SIZE_MAX && num % (long)k == 0;
        if (!all_lines && !labelled)
            continue;
        if (x - last_line >= 2) {
            double sx = floor(x) + 0.5;
            cairo_move_to(cr, sx, p->y);
            cairo_line_to(cr, sx, p->y + p->h);
            set_rgb(cr, rgb_hex(COLOR_STEP), 0.55);
            cairo_set_line_width(cr, 1);
            cairo_stroke(cr);
            last_line = x;
        }
        if (!labelled)
            continue;
        const char *label = t->step_label && t->step_label[i] ? t->step_label[i] : NULL;
        if (!label) {
            snprintf(buf, sizeof buf, "%zu", i);
            label = buf;
        }
        canvas_box b = text_box(c, label, x, strip_y, 0.5, 1);
        if (text_box_free(c, b, 3 * s)) {
            set_rgb(cr, rgb_hex(COLOR_TEXT), 1);
            text_draw(c, label, x, strip_y, 0.5, 1);
        }
    }
    set_rgb(cr, rgb_hex(COLOR_MUTED), 1);
    canvas_box b = text_box(c, "step", p->x - 7 * s, strip_y, 1, 1);
    if (text_box_free(c, b, 1))
        text_draw(c, "step", b.x, b.y, 0, 0);
}

static void draw_markers(canvas *c, const render_timeline *t, const plot *p, const columns *k,
                         int limit_on_scale) {
    cairo_t *cr = c->cr;
    double s = c->s;
    char buf[128], b1[32], b2[32];
    text_font(c, FS_SMALL, FONT_REGULAR);
    if (t->device_total_bytes > 0) {
        format_bytes((double)t->device_total_bytes, b1, sizeof b1);
        if (limit_on_scale) {
            double y = floor(plot_y(p, (double)t->device_total_bytes)) + 0.5;
            double dash[] = {8 * s, 5 * s};
            cairo_set_dash(cr, dash, 2, 0);
            cairo_move_to(cr, p->x, y);
            cairo_line_to(cr, p->x + p->w, y);
            set_rgb(cr, rgb_hex(COLOR_LIMIT), 1);
            cairo_set_line_width(cr, 1.5 * s);
            cairo_stroke(cr);
            cairo_set_dash(cr, NULL, 0, 0);
            snprintf(buf, sizeof buf, "device total %s", b1);
            double xr = p->x + p->w - 6 * s;
            const double cand[][4] = {{xr, y - 3 * s, 1, 1}, {xr, y + 3 * s, 1, 0}};
            place_note(c, p, k, buf, cand, 2, rgb_hex(COLOR_LIMIT));
        }
    }
    double last = -INFINITY, last_label = -INFINITY;
    for (size_t i = 0; i < t->nooms; i++) {
        double x = plot_x(p, (double)t->oom_ns[i]);
        if (x < p->x - 1 || x > p->x + p->w + 1 || x - last < 3 * s)
            continue;
        double sx = floor(x) + 0.5, r = 6 * s, dash[] = {4 * s, 3 * s};
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, sx, p->y);
        cairo_line_to(cr, sx, p->y + p->h);
        set_rgb(cr, rgb_hex(COLOR_OOM), 0.8);
        cairo_set_line_width(cr, 1.2 * s);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        cairo_move_to(cr, x - r, p->y);
        cairo_line_to(cr, x + r, p->y);
        cairo_line_to(cr, x, p->y + 1.4 * r);
        cairo_close_path(cr);
        set_rgb(cr, rgb_hex(COLOR_OOM), 1);
        cairo_fill(cr);
        const double cand[][4] = {{x + r + 2 * s, p->y + 2 * s, 0, 0},
                                  {x - r - 2 * s, p->y + 2 * s, 1, 0}};
        if (x - last_label > 60 * s && place_note(c, p, k, "OOM", cand, 2, rgb_hex(COLOR_OOM)))
            last_label = x; /* OOMs close together share one label */
        last = x;
    }
    if (t->peak_bytes > 0) {
        double x = plot_x(p, (double)t->peak_ns), y = plot_y(p, (double)t->peak_bytes);
        cairo_arc(cr, x, y, 5 * s, 0, 2 * M_PI);
        set_rgb(cr, rgb_hex(COLOR_BACKGROUND), 1);
        cairo_fill_preserve(cr);
        set_rgb(cr, rgb_hex(COLOR_LIMIT), 1);
        cairo_set_line_width(cr, 2.2 * s);
        cairo_stroke(cr);
        format_bytes((double)t->peak_bytes, b1, sizeof b1);
        format_moment(c, (double)t->peak_ns, b2, sizeof b2);
        snprintf(buf, sizeof buf, "peak %s at %s", b1, b2);
        text_font(c, FS_LABEL, FONT_BOLD);
        double d = 9 * s;
        const double cand[][4] = {{x + d, y - d / 2, 0, 1}, {x - d, y - d / 2, 1, 1},
                                  {x + d, y + d / 2, 0, 0}, {x - d, y + d / 2, 1, 0},
                                  {x + d, y, 0, 0.5},       {x - d, y, 1, 0.5},
                                  {x + d, y - 3 * d, 0, 1}, {x - d, y - 3 * d, 1, 1},
                                  {x + d, y + 3 * d, 0, 0}, {x - d, y + 3 * d, 1, 0}};
        place_note(c, p, k, buf, cand, sizeof cand / sizeof cand[0], rgb_hex(COLOR_LIMIT));
    }
}

static int draw_legend(canvas *c, const render_timeline *t, double x, double y, double w,
                       double maxh, int limit_on_scale) {
    legend_item *items = malloc((t->nseries + 8) * sizeof *items);
    char(*names)[32] = malloc((t->nseries ? t->nseries : 1) * sizeof *names);
    if (!items || !names) {
        free(items);
        free(names);
        return -1;
    }
    size_t n = 0;
    items[n++] = (legend_item){"reserved", rgb_hex(COLOR_RESERVED), LEGEND_LINE};
    items[n++] = (legend_item){"allocated", rgb_hex(COLOR_ALLOCATED), LEGEND_LINE};
    char total[96], b1[32];
    if (t->device_total_bytes > 0) {
        format_bytes((double)t->device_total_bytes, b1, sizeof b1);
        snprintf(total, sizeof total,
                 limit_on_scale ? "device total %s" : "device total %s (off the scale)", b1);
        items[n++] = (legend_item){total, rgb_hex(COLOR_LIMIT), LEGEND_DASH};
    }
    if (t->peak_bytes > 0)
        items[n++] = (legend_item){"peak allocated", rgb_hex(COLOR_LIMIT), LEGEND_MARKER};
    if (t->nooms)
        items[n++] = (legend_item){"out of memory", rgb_hex(COLOR_OOM), LEGEND_TRIANGLE};
    if (t->nsteps)
        items[n++] = (legend_item){"step begins", rgb_hex(COLOR_STEP), LEGEND_LINE};
    if (t->nseries)
        items[n++] = (legend_item){t->series_heading ? t->series_heading : "allocated by site",
                                   rgb_hex(COLOR_MUTED), LEGEND_HEADING};
    for (size_t s = 0; s < t->nseries; s++) {
        const char *label = t->series_label ? t->series_label[s] : NULL;
        if (!label) {
            snprintf(names[s], sizeof names[s], "series %zu", s + 1);
            label = names[s];
        }
        items[n++] = (legend_item){
            label, render_site_color(t->series_key ? t->series_key[s] : s + 1), LEGEND_FILL};
    }
    legend_draw(c, x, y, w, maxh, items, n);
    free(items);
    free(names);
    return 0;
}

static int draw(canvas *c, const render_timeline *t) {
    double s = c->s, m = 20 * s;
    double top = canvas_header(c, t->title, t->subtitle);
    double lw = legend_width(c), right = c->w - m - lw - 28 * s;
    text_font(c, FS_SMALL, FONT_REGULAR);
    double th = text_height(c);
    double strip = t->nsteps ? 1.5 * th + 8 * s : 8 * s;
    plot p;
    memset(&p, 0, sizeof p);
    p.y = round(top + strip);
    p.h = round(c->h - m - plot_bottom_room(c) - p.y);
    double dmax = data_max(t), total = (double)t->device_total_bytes;
    int limit_on_scale = total > 0 && total <= 2 * dmax;
    double ymax = limit_on_scale ? fmax(dmax, total) : dmax;
    int target = (int)(p.h / (80 * s));
    axis_bytes(&p.ya, ymax * 1.06, target < 4 ? 4 : target > 10 ? 10 : target);
    p.x = round(m + plot_left_room(c, &p.ya));
    p.w = round(right - p.x);
    if (p.w < 10 || p.h < 10) {
        canvas_message(c, top, "the picture is too small for a plot");
        return 0;
    }
    const char *xtitle = axis_x_time(c, &p.xa, (double)t->bucket_start_ns[0], (double)t->end_ns,
                                     (int)(p.w / (130 * s)));
    columns k;
    if (columns_build(&k, t, &p) != 0) {
        columns_free(&k);
        return -1;
    }
    plot_axes(c, &p, xtitle, "bytes");
    cairo_save(c->cr);
    cairo_rectangle(c->cr, p.x, p.y - 8 * s, p.w, p.h + 8 * s);
    cairo_clip(c->cr);
    draw_series(c, t, &p, &k);
    cairo_restore(c->cr);
    if (t->nsteps)
        draw_steps(c, t, &p, p.y - th / 2 - 3 * s);
    cairo_save(c->cr);
    cairo_rectangle(c->cr, p.x, p.y - 8 * s, p.w, p.h + 8 * s);
    cairo_clip(c->cr);
    draw_envelope(c, &p, &k, k.rmin, k.rmax, rgb_hex(COLOR_RESERVED), 1.8 * s);
    draw_envelope(c, &p, &k, k.amin, k.amax, rgb_hex(COLOR_ALLOCATED), 1.1 * s);
    cairo_restore(c->cr);
    plot_frame(c, &p);
    draw_markers(c, t, &p, &k, limit_on_scale);
    columns_free(&k);
    return draw_legend(c, t, c->w - m - lw, p.y, lw, c->h - m - p.y, limit_on_scale);
}

int render_timeline_draw(const render_timeline *t, const char *path, const render_options *opt,
                         char *err, size_t errlen) {
    if (!t) {
        snprintf(err, errlen, "timeline: no data given");
        return -1;
    }
    if (check(t, err, errlen) != 0)
        return -1;
    canvas c;
    if (canvas_open(&c, path, opt, t->title, t->subtitle, err, errlen) != 0)
        return -1;
    if (t->nbuckets == 0)
        canvas_no_data(&c, t->title, t->subtitle, "no memory events in this window");
    else if (draw(&c, t) != 0) {
        canvas_fail(&c);
        snprintf(err, errlen, "timeline: out of memory drawing %s", path);
        return -1;
    }
    return canvas_close(&c, err, errlen);
}
