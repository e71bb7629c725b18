/* render_common.h — what the four pictures share, private to render/.
 *
 * A canvas is one picture being drawn: the Cairo surface chosen by the file
 * extension, the type scale, and the boxes of the text placed so far (so a
 * movable label can avoid the others). On top of it: text that never
 * overflows its room, axes in binary bytes / time / plain numbers, the
 * title block, legends, and the "no data" picture. Each picture file
 * (render_timeline.c, …) lays out its plot with these and draws its data. */
#ifndef GMT_RENDER_COMMON_H
#define GMT_RENDER_COMMON_H

#include "render.h"

#include <cairo.h>
#include <stdio.h>

/* ---- canvas (render_canvas.c) ------------------------------------------ */

typedef struct canvas_box {
    double x, y, w, h;
} canvas_box;

typedef struct canvas {
    cairo_surface_t *surface;
    cairo_t *cr;
    FILE *file;
    const char *path;
    int format; /* CANVAS_PNG, … */
    int write_errno;
    double w, h; /* picture size, pixels or points */
    double s;    /* type and line scale: 1 at 1600 x 900 */
    render_text_fn on_text;
    void *text_ctx;
    int64_t ns_per_event; /* render_options.ns_per_event */
    canvas_box *boxes;    /* text placed so far */
    size_t nboxes, boxes_cap;
    const char *svg_title, *svg_desc; /* spliced into the SVG as <title>, <desc> */
    int svg_state;
    char svg_head[4096];
    size_t svg_head_len;
    /* SVG: Cairo writes text as glyph outlines; the labels are also kept to
     * be written as a transparent <text> layer, so the file can be searched
     * and read by tools and screen readers */
    char **svg_labels;
    canvas_box *svg_label_boxes;
    size_t svg_nlabels, svg_labels_cap;
} canvas;

/* Keeps a label drawn at box b for the SVG's text layer (no-op otherwise). */
void canvas_keep_label(canvas *c, const char *text, canvas_box b);

enum { CANVAS_PNG, CANVAS_SVG, CANVAS_PDF };

/* Checks the extension, creates the file and the surface, paints the
 * background. title/subtitle go into the file's metadata (PDF) or <title>
 * and <desc> (SVG). On failure nothing is left behind. */
int canvas_open(canvas *c, const char *path, const render_options *opt, const char *title,
                const char *subtitle, char *err, size_t errlen);
/* Gives up: releases the canvas and removes the file. */
void canvas_fail(canvas *c);
/* Finishes the picture and writes it; on failure removes the file. Always
 * releases the canvas. */
int canvas_close(canvas *c, char *err, size_t errlen);

/* Draws the title (bold) and subtitle at the top; returns the y below them. */
double canvas_header(canvas *c, const char *title, const char *subtitle);
/* "no data" and a message, centred in the picture below top. */
void canvas_message(canvas *c, double top, const char *message);
/* The whole picture for empty input: header plus canvas_message. */
void canvas_no_data(canvas *c, const char *title, const char *subtitle, const char *message);

/* ---- text (render_text.c) ---------------------------------------------- */

enum { FONT_REGULAR = 0, FONT_BOLD = 1 };
/* Font sizes in pixels at scale 1 (multiplied by canvas.s). */
#define FS_TITLE 22.0
#define FS_SUBTITLE 14.0
#define FS_LABEL 13.0
#define FS_SMALL 11.5

/* Copies in to out as valid UTF-8 (a bad byte becomes '?', a control
 * character a space), cut at a character boundary; returns the length. */
size_t utf8_clean(const char *in, char *out, size_t outlen);
void text_font(canvas *c, double size, int weight);
double text_width(canvas *c, const char *text);
/* Height of a line of text in the current font (ascent + descent). */
double text_height(canvas *c);
/* The box the text would occupy with its anchor at (x, y); ha 0 left, 0.5
 * centre, 1 right; va 0 top, 0.5 middle, 1 bottom. */
canvas_box text_box(canvas *c, const char *text, double x, double y, double ha, double va);
/* Draws text (sanitized to valid UTF-8) and records its box. */
canvas_box text_draw(canvas *c, const char *text, double x, double y, double ha, double va);
/* Draws text in colour with a background-coloured outline, so it reads
 * over lines and areas while hiding little of them. */
canvas_box text_draw_halo(canvas *c, const char *text, double x, double y, double ha, double va,
                          render_rgb color);
/* Draws text turned to read upwards, centred on (cx, cy) (y-axis titles). */
canvas_box text_draw_up(canvas *c, const char *text, double cx, double cy);
/* Copies text into buf, shortened with "…" to fit maxw; 0 when not even
 * "…" plus one character fits. */
int text_fit(canvas *c, const char *text, double maxw, char *buf, size_t len);
/* text_fit keeping both ends ("head…tail"): where a label's end tells it apart. */
int text_fit_ends(canvas *c, const char *text, double maxw, char *buf, size_t len);
/* Whether the box lies inside the picture and overlaps no text placed so far
 * (margin added around it). */
int text_box_free(const canvas *c, canvas_box b, double margin);

/* ---- colours (render_color.c) and legends (render_legend.c) ------------ */

render_rgb rgb_hex(uint32_t hex);
render_rgb rgb_mix(render_rgb a, render_rgb b, double t); /* t 0: a, 1: b */
void set_rgb(cairo_t *cr, render_rgb c, double alpha);
/* Black or white, whichever reads on the background colour. */
render_rgb rgb_text_on(render_rgb bg);

#define COLOR_BACKGROUND 0xffffff
#define COLOR_TEXT 0x222222
#define COLOR_MUTED 0x666666
#define COLOR_GRID 0xe3e3e3
#define COLOR_FRAME 0x9a9a9a
#define COLOR_DEVICE_LIMIT 0xb71c1c /* the device memory line of simulate and ranks */

enum {
    LEGEND_FILL,
    LEGEND_LINE,
    LEGEND_DASH,
    LEGEND_HATCH,
    LEGEND_OUTLINE,
    LEGEND_MARKER,
    LEGEND_TRIANGLE,
    LEGEND_HEADING /* no swatch: a caption for the rows below */
};
typedef struct legend_item {
    const char *label;
    render_rgb color;
    int style;
} legend_item;

/* A column of swatches and labels from (x, y), at most maxh high; items that
 * do not fit are summarised as "+ N more". Returns the height used. */
double legend_draw(canvas *c, double x, double y, double w, double maxh, const legend_item *items,
                   size_t n);
/* The legend column's width for a picture. */
double legend_width(const canvas *c);

/* Diagonal hatching inside a rectangle. */
void hatch_rect(cairo_t *cr, double x, double y, double w, double h, double spacing,
                render_rgb color, double line_width);

/* ---- axes (render_axes.c) ---------------------------------------------- */

enum { AXIS_PLAIN, AXIS_BYTES, AXIS_TIME, AXIS_INTEGER };

typedef struct axis {
    int kind;
    double lo, hi;      /* value range shown */
    double step;        /* tick spacing, in values */
    double unit;        /* a tick label shows value / unit … */
    const char *suffix; /* … followed by this ("GiB", "ms", "") */
    int decimals;
    int flip; /* 1: lo at the top (y) */
} axis;

/* 0 .. a nice value >= max (bytes, binary units). */
void axis_bytes(axis *a, double max, int target_ticks);
/* lo .. hi nanoseconds, ticks in the unit that suits the span. */
void axis_time(axis *a, double lo_ns, double hi_ns, int target_ticks);
/* The x axis of a picture over time: time since the first event, or the
 * events' order for an input without timestamps (canvas ns_per_event).
 * Returns the axis title. */
const char *axis_x_time(const canvas *c, axis *a, double lo_ns, double hi_ns, int target_ticks);
/* lo .. hi as given (AXIS_PLAIN) or widened to whole ticks (AXIS_INTEGER). */
void axis_plain(axis *a, int kind, double lo, double hi, int target_ticks);
/* The tick values inside [lo, hi]; returns their count (<= max). */
size_t axis_ticks(const axis *a, double *ticks, size_t max);
void axis_label(const axis *a, double v, char *buf, size_t len);

/* A value in binary units, e.g. "1.50 GiB" (3 significant digits). */
void format_bytes(double bytes, char *buf, size_t len);
/* A duration, e.g. "850 ns", "12.5 µs", "3.20 ms", "1.234 s", "2m 05s". */
void format_duration(double ns, char *buf, size_t len);
/* A moment on a time axis: a duration, or "event N" without timestamps. */
void format_moment(const canvas *c, double ns, char *buf, size_t len);

typedef struct plot {
    double x, y, w, h; /* the data area */
    axis xa, ya;
} plot;

double plot_x(const plot *p, double v);
double plot_y(const plot *p, double v);
/* Grid lines, tick labels on the left and bottom, axis titles: drawn
 * before the data. */
void plot_axes(canvas *c, const plot *p, const char *x_title, const char *y_title);
/* The axis lines, drawn after the data so areas do not cover them. */
void plot_frame(canvas *c, const plot *p);
/* Tick labels and title of a second y axis on the right. */
void plot_right_axis(canvas *c, const plot *p, const axis *a, const char *title, render_rgb color);
/* The device's memory across the plot: a dashed line at `bytes` in `color` (simulate and ranks;
 * the timeline draws its own, with a label). */
void plot_limit_line(canvas *c, const plot *p, double bytes, render_rgb color);
/* The room tick labels need: left (y labels), bottom (x labels + title). */
double plot_left_room(canvas *c, const axis *ya);
double plot_bottom_room(canvas *c);

#endif
