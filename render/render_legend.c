/* render_legend.c — legends and hatching.
 *
 * The legend is a column of swatch + label rows drawn in the style the
 * thing has in the plot (area, line, dashed line, hatching, marker); the
 * colours come from render_color.c. */
#include "render_common.h"

#include <math.h>
#include <stdio.h>

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
        /* a label's end tells it from its neighbours ("site via the frame that differs") */
        if (text_fit_ends(c, label, x + w - tx, buf, sizeof buf))
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
