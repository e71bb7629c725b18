/* render_legend.c — colours and legends.
 *
 * A site keeps its colour in every picture because the colour is a pure
 * function of its key: keys 1..20 take the twenty palette colours in order
 * (so a caller that numbers its sites by rank gets distinct colours for the
 * top twenty), larger keys (hashes) are mixed onto the palette and one of
 * three shades of it, and key 0, "other", is a quiet grey. The palette is
 * Tableau's, light enough for large areas and dark enough for thin bars.
 * The legend is a column of swatch + label rows drawn in the style the
 * thing has in the plot (area, line, dashed line, hatching, marker). */
#include "render_common.h"

#include <math.h>
#include <stdio.h>

static const uint32_t palette[] = {
    0x4e79a7, 0xf28e2b, 0x59a14f, 0xe15759, 0x76b7b2, 0xedc948, 0xb07aa1,
    0xff9da7, 0x9c755f, 0xa0cbe8, 0xffbe7d, 0x8cd17d, 0x499894, 0xd37295,
    0xb6992d, 0x6b6ecf, 0x17becf, 0xc49c94, 0xd4a6c8, 0x2f4b7c,
};
#define NPALETTE (sizeof palette / sizeof palette[0])
#define COLOR_OTHER 0xbab0ac

render_rgb rgb_hex(uint32_t hex) {
    render_rgb c = {((hex >> 16) & 0xff) / 255.0, ((hex >> 8) & 0xff) / 255.0,
                    (hex & 0xff) / 255.0};
    return c;
}

render_rgb rgb_mix(render_rgb a, render_rgb b, double t) {
    render_rgb c = {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
    return c;
}

void set_rgb(cairo_t *cr, render_rgb c, double alpha) {
    if (alpha >= 1)
        cairo_set_source_rgb(cr, c.r, c.g, c.b);
    else
        cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha);
}

render_rgb rgb_text_on(render_rgb bg) {
    double lum = 0.2126 * bg.r + 0.7152 * bg.g + 0.0722 * bg.b;
    return rgb_hex(lum > 0.55 ? COLOR_TEXT : 0xffffff);
}

render_rgb render_site_color(uint64_t key) {
    if (key == 0)
        return rgb_hex(COLOR_OTHER);
    if (key <= NPALETTE)
        return rgb_hex(palette[key - 1]);
    /* splitmix64's finalizer: neighbouring hashes land far apart */
    uint64_t h = key;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
    render_rgb base = rgb_hex(palette[h % NPALETTE]);
    switch ((h / NPALETTE) % 3) {
    case 1:
        return rgb_mix(base, rgb_hex(0x000000), 0.25);
    case 2:
        return rgb_mix(base, rgb_hex(0xffffff), 0.35);
    default:
        return base;
    }
}

void hatch_rect(cairo_t *cr, double x, double y, double w, double h, double spacing,
                render_rgb color, double line_width) {
    if (w <= 0 || h <= 0 || spacing <= 0)
        return;
    cairo_save(cr);
    cairo_rectangle(cr, x, y, w, h);
    cairo_clip(cr);
    for (double d = -h; d < w; d += spacing) {
        cairo_move_to(cr, x + d, y + h);
        cairo_line_to(cr, x + d + h, y);
    }
    set_rgb(cr, color, 1);
    cairo_set_line_width(cr, line_width);
    cairo_stroke(cr);
    cairo_restore(cr);
}

double legend_width(const canvas *c) {
    double w = 0.2 * c->w;
    if (w < 170 * c->s)
        w = 170 * c->s;
    if (w > 340 * c->s)
        w = 340 * c->s;
    return w;
}

static void swatch(canvas *c, const legend_item *it, double x, double y, double w, double h) {
    cairo_t *cr = c->cr;
    double s = c->s;
    switch (it->style) {
    case LEGEND_LINE:
    case LEGEND_DASH:
        cairo_move_to(cr, x, y + h / 2);
        cairo_line_to(cr, x + w, y + h / 2);
        set_rgb(cr, it->color, 1);
        cairo_set_line_width(cr, 2.5 * s);
        if (it->style == LEGEND_DASH) {
            double dash[] = {5 * s, 3 * s};
            cairo_set_dash(cr, dash, 2, 0);
        }
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        break;
    case LEGEND_MARKER: /* a ring, as the peak is marked */
        cairo_arc(cr, x + w / 2, y + h / 2, h / 2.4, 0, 2 * M_PI);
        set_rgb(cr, rgb_hex(COLOR_BACKGROUND), 1);
        cairo_fill_preserve(cr);
        set_rgb(cr, it->color, 1);
        cairo_set_line_width(cr, 2 * s);
        cairo_stroke(cr);
        break;
    case LEGEND_TRIANGLE:
        cairo_move_to(cr, x + w / 2 - h / 1.6, y);
        cairo_line_to(cr, x + w / 2 + h / 1.6, y);
        cairo_line_to(cr, x + w / 2, y + h);
        cairo_close_path(cr);
        set_rgb(cr, it->color, 1);
        cairo_fill(cr);
        break;
    case LEGEND_HATCH:
        cairo_rectangle(cr, x, y, w, h);
        set_rgb(cr, rgb_mix(it->color, rgb_hex(0xffffff), 0.55), 1);
        cairo_fill(cr);
        hatch_rect(cr, x, y, w, h, 4 * s, it->color, 1.2 * s);
        break;
    case LEGEND_OUTLINE:
        cairo_rectangle(cr, x + 0.5, y + 0.5, w - 1, h - 1);
        set_rgb(cr, it->color, 1);
        cairo_set_line_width(cr, 1);
        cairo_stroke(cr);
        break;
    default:
        cairo_rectangle(cr, x, y, w, h);
        set_rgb(cr, it->color, 1);
        cairo_fill(cr);
        break;
    }
}

double legend_draw(canvas *c, double x, double y, double w, double maxh, const legend_item *items,
                   size_t n) {
    double s = c->s;
    text_font(c, FS_LABEL, FONT_REGULAR);
    double row = text_height(c) * 1.5, sw = 22 * s, sh = 11 * s, tx = x + sw + 8 * s;
    size_t fit = maxh > 0 ? (size_t)(maxh / row) : 0;
    size_t shown = n <= fit ? n : (fit ? fit - 1 : 0);
    char buf[512];
    for (size_t i = 0; i < shown; i++) {
        double ry = y + i * row;
        const char *label = items[i].label ? items[i].label : "";
        if (items[i].style == LEGEND_HEADING) {
            set_rgb(c->cr, rgb_hex(COLOR_MUTED), 1);
            text_font(c, FS_LABEL, FONT_BOLD);
            if (text_fit(c, label, w, buf, sizeof buf))
                text_draw(c, buf, x, ry + row * 0.6, 0, 0.5);
            text_font(c, FS_LABEL, FONT_REGULAR);
            continue;
        }
        swatch(c, &items[i], x, ry + (row - sh) / 2, sw, sh);
        set_rgb(c->cr, rgb_hex(COLOR_TEXT), 1);
        if (text_fit(c, label, x + w - tx, buf, sizeof buf))
            text_draw(c, buf, tx, ry + row / 2, 0, 0.5);
    }
    if (shown < n && fit) {
        snprintf(buf, sizeof buf, "+ %zu more", n - shown);
        set_rgb(c->cr, rgb_hex(COLOR_MUTED), 1);
        text_draw(c, buf, tx, y + shown * row + row / 2, 0, 0.5);
        shown++;
    }
    return shown * row;
}
