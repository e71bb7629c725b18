/* render_heatmap.c — address space against time.
 *
 * Each cell is coloured by the fraction of its reserved bytes that is
 * allocated: dark where memory is used, pale where it is reserved but free
 * (fragmentation shows as pale bands inside reserved memory), background
 * where nothing is reserved. The grid is turned into one small image — one
 * pixel per cell, or per plot pixel when the grid is finer than the plot
 * (cells averaged) — and scaled onto the plot without smoothing, so the
 * cost is the cells plus the pixels, and an SVG or PDF embeds one image
 * rather than a rectangle per cell. Segment boundaries are thin lines. */
#include "render_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLOR_BOUND 0x8c8c8c

/* Pale amber (reserved, all free) to dark navy (all allocated). */
static const uint32_t ramp[] = {0xfde6a4, 0xc7e9b4, 0x7fcdbb, 0x2c7fb8, 0x1b2f73};
#define NRAMP (sizeof ramp / sizeof ramp[0])

static render_rgb ramp_color(double f) {
    if (!(f > 0))
        f = 0;
    if (f > 1)
        f = 1;
    double pos = f * (NRAMP - 1);
    size_t i = (size_t)pos;
    if (i >= NRAMP - 1)
        return rgb_hex(ramp[NRAMP - 1]);
    return rgb_mix(rgb_hex(ramp[i]), rgb_hex(ramp[i + 1]), pos - i);
}

static uint32_t pack(render_rgb c) {
    return (uint32_t)lround(c.r * 255) << 16 | (uint32_t)lround(c.g * 255) << 8 |
           (uint32_t)lround(c.b * 255);
}

static int check(const render_heatmap *h, char *err, size_t errlen) {
    if (h->ncols && h->nrows) {
        if (h->nrows > SIZE_MAX / sizeof(float) / h->ncols) {
            snprintf(err, errlen, "heatmap: %zu x %zu cells is too many", h->nrows, h->ncols);
            return -1;
        }
        if (!h->fraction) {
            snprintf(err, errlen, "heatmap: %zu x %zu cells but fraction is NULL", h->nrows,
                     h->ncols);
            return -1;
        }
        if (h->bytes_per_row <= 0) {
            snprintf(err, errlen, "heatmap: bytes_per_row must be positive (is %lld)",
                     (long long)h->bytes_per_row);
            return -1;
        }
        if (h->end_ns < h->start_ns) {
            snprintf(err, errlen, "heatmap: end_ns is before start_ns");
            return -1;
        }
    }
    if (h->nbounds && !h->bound_rows) {
        snprintf(err, errlen, "heatmap: %zu segment boundaries but bound_rows is NULL", h->nbounds);
        return -1;
    }
    for (size_t i = 0; i < h->nbounds; i++)
        if (h->bound_rows[i] > h->nrows) {
            snprintf(err, errlen, "heatmap: boundary %zu at row %zu is beyond the %zu rows", i,
                     h->bound_rows[i], h->nrows);
            return -1;
        }
    return 0;
}

/* The grid reduced to at most iw x ih cells: the mean fraction of the
 * reserved cells in each, or background where most cells are unreserved. */
static cairo_surface_t *grid_image(const render_heatmap *h, size_t iw, size_t ih) {
    float *sum = calloc(iw * ih, sizeof *sum);
    uint32_t *got = calloc(iw * ih, sizeof *got), *all = calloc(iw * ih, sizeof *all);
    size_t *col_bin = malloc(h->ncols * sizeof *col_bin);
    cairo_surface_t *img = NULL;
    if (!sum || !got || !all || !col_bin)
        goto out;
    for (size_t c = 0; c < h->ncols; c++)
        col_bin[c] = c * iw / h->ncols;
    for (size_t r = 0; r < h->nrows; r++) {
        size_t base = r * ih / h->nrows * iw;
        const float *row = h->fraction + r * h->ncols;
        for (size_t c = 0; c < h->ncols; c++) {
            size_t cell = base + col_bin[c];
            all[cell]++;
            if (row[c] >= 0) { /* NaN and negatives: unreserved */
                sum[cell] += row[c];
                got[cell]++;
            }
        }
    }
    img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)iw, (int)ih);
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS)
        goto out;
    uint32_t lut[256], background = pack(rgb_hex(COLOR_BACKGROUND));
    for (size_t i = 0; i < 256; i++)
        lut[i] = pack(ramp_color(i / 255.0));
    cairo_surface_flush(img);
    unsigned char *data = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    for (size_t y = 0; y < ih; y++) {
        uint32_t *px = (uint32_t *)(void *)(data + (size_t)stride * y);
        for (size_t x = 0; x < iw; x++) {
            size_t cell = y * iw + x;
            if (got[cell] == 0 || 2 * got[cell] < all[cell]) {
                px[x] = background;
                continue;
            }
            double f = sum[cell] / got[cell];
            px[x] = lut[(size_t)lround((f > 1 ? 1 : f) * 255)];
        }
    }
    cairo_surface_mark_dirty(img);
out:
    free(sum);
    free(got);
    free(all);
    free(col_bin);
    return img;
}

static void draw_bounds(canvas *c, const render_heatmap *h, const plot *p) {
    cairo_t *cr = c->cr;
    double last = -INFINITY;
    for (size_t i = 0; i < h->nbounds; i++) {
        size_t row = h->bound_rows[i];
        if (row == 0 || row >= h->nrows)
            continue;
        double y = plot_y(p, (double)row * (double)h->bytes_per_row);
        if (fabs(y - last) < 3)
            continue;
        y = floor(y) + 0.5;
        cairo_move_to(cr, p->x, y);
        cairo_line_to(cr, p->x + p->w, y);
        last = y;
    }
    set_rgb(cr, rgb_hex(COLOR_BOUND), 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
}

/* The colour bar and the two other keys. */
static void draw_legend(canvas *c, const render_heatmap *h, double x, double y, double w) {
    cairo_t *cr = c->cr;
    double s = c->s, bar_w = 22 * s, bar_h = 220 * s;
    legend_item head = {"allocated / reserved", rgb_hex(COLOR_MUTED), LEGEND_HEADING};
    y += legend_draw(c, x, y, w, 100 * s, &head, 1);
    text_font(c, FS_SMALL, FONT_REGULAR);
    y += text_height(c) / 2 + 4 * s; /* room for the top label, centred on the bar's end */
    cairo_pattern_t *g = cairo_pattern_create_linear(0, y, 0, y + bar_h);
    for (size_t i = 0; i < NRAMP; i++) {
        render_rgb col = rgb_hex(ramp[NRAMP - 1 - i]);
        cairo_pattern_add_color_stop_rgb(g, (double)i / (NRAMP - 1), col.r, col.g, col.b);
    }
    cairo_rectangle(cr, x, y, bar_w, bar_h);
    cairo_set_source(cr, g);
    cairo_fill(cr);
    cairo_pattern_destroy(g);
    cairo_rectangle(cr, x + 0.5, y + 0.5, bar_w - 1, bar_h - 1);
    set_rgb(cr, rgb_hex(COLOR_FRAME), 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    static const char *const labels[] = {"100% allocated", "75%", "50%", "25%",
                                         "0%: reserved, all free"};
    text_font(c, FS_SMALL, FONT_REGULAR);
    set_rgb(cr, rgb_hex(COLOR_TEXT), 1);
    char buf[128];
    for (size_t i = 0; i < 5; i++) {
        double ty = y + bar_h * i / 4.0;
        cairo_move_to(cr, x + bar_w, floor(ty) + 0.5);
        cairo_line_to(cr, x + bar_w + 4 * s, floor(ty) + 0.5);
        cairo_stroke(cr);
        if (text_fit(c, labels[i], w - bar_w - 8 * s, buf, sizeof buf))
            text_draw(c, buf, x + bar_w + 7 * s, ty, 0, 0.5);
    }
    y += bar_h + 18 * s;
    legend_item items[] = {{"not reserved", rgb_hex(COLOR_FRAME), LEGEND_OUTLINE},
                           {"segment boundary", rgb_hex(COLOR_BOUND), LEGEND_LINE}};
    legend_draw(c, x, y, w, c->h - y, items, h->nbounds ? 2 : 1);
}

static int draw(canvas *c, const render_heatmap *h) {
    double s = c->s, m = 20 * s;
    double top = canvas_header(c, h->title, h->subtitle);
    double lw = legend_width(c);
    plot p;
    memset(&p, 0, sizeof p);
    p.y = round(top + 8 * s);
    p.h = round(c->h - m - plot_bottom_room(c) - p.y);
    double total = (double)h->nrows * (double)h->bytes_per_row;
    int target = (int)(p.h / (70 * s));
    axis_bytes(&p.ya, total, target < 4 ? 4 : target);
    p.ya.hi = total;
    p.ya.flip = 1;
    p.x = round(m + plot_left_room(c, &p.ya));
    p.w = round(c->w - m - lw - 28 * s - p.x);
    if (p.w < 10 || p.h < 10) {
        canvas_message(c, top, "the picture is too small for a plot");
        return 0;
    }
    const char *xtitle =
        axis_x_time(c, &p.xa, (double)h->start_ns, (double)h->end_ns, (int)(p.w / (130 * s)));
    size_t iw = h->ncols < (size_t)p.w ? h->ncols : (size_t)p.w;
    size_t ih = h->nrows < (size_t)p.h ? h->nrows : (size_t)p.h;
    cairo_surface_t *img = grid_image(h, iw, ih);
    if (!img || cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
        if (img)
            cairo_surface_destroy(img);
        return -1;
    }
    char row_bytes[32], ytitle[96];
    format_bytes((double)h->bytes_per_row, row_bytes, sizeof row_bytes);
    snprintf(ytitle, sizeof ytitle, "segments stacked by address (one row = %s)", row_bytes);
    plot_axes(c, &p, xtitle, ytitle);
    cairo_t *cr = c->cr;
    cairo_save(cr);
    cairo_rectangle(cr, p.x, p.y, p.w, p.h);
    cairo_clip(cr);
    cairo_translate(cr, p.x, p.y);
    cairo_scale(cr, p.w / (double)iw, p.h / (double)ih);
    cairo_set_source_surface(cr, img, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_paint(cr);
    cairo_restore(cr);
    cairo_surface_destroy(img);
    draw_bounds(c, h, &p);
    cairo_rectangle(cr, p.x + 0.5, p.y + 0.5, p.w - 1, p.h - 1);
    set_rgb(cr, rgb_hex(COLOR_FRAME), 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    draw_legend(c, h, c->w - m - lw, p.y, lw);
    return 0;
}

int render_heatmap_draw(const render_heatmap *h, const char *path, const render_options *opt,
                        char *err, size_t errlen) {
    if (!h) {
        snprintf(err, errlen, "heatmap: no data given");
        return -1;
    }
    if (check(h, err, errlen) != 0)
        return -1;
    canvas c;
    if (canvas_open(&c, path, opt, h->title, h->subtitle, err, errlen) != 0)
        return -1;
    if (h->ncols == 0 || h->nrows == 0)
        canvas_no_data(&c, h->title, h->subtitle, "no reserved memory in this window");
    else if (draw(&c, h) != 0) {
        canvas_fail(&c);
        snprintf(err, errlen, "heatmap: out of memory drawing %s", path);
        return -1;
    }
    return canvas_close(&c, err, errlen);
}
