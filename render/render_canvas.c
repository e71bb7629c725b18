/* render_canvas.c — one picture from open to written file.
 *
 * Owns the choice of surface by file extension (.png, .svg, .pdf, any case),
 * the output file (opened before drawing, so an unwritable path fails at
 * once; removed again when anything later fails), the type scale, the
 * title block and the "no data" picture. Every byte goes through our own
 * stream callback, so a write error is reported with its errno rather than
 * as Cairo's generic status, and the SVG gets the picture's title as a
 * <title> element (Cairo draws SVG text as glyph outlines, so without it
 * the file would not say what it shows). PDFs carry it as metadata. Also
 * render_release, which frees Cairo's and fontconfig's process-wide font
 * caches at exit. */
#include "render_common.h"

#include <cairo-pdf.h>
#ifdef GMT_HAVE_FONTCONFIG
#include <fontconfig/fontconfig.h>
#endif
#include <cairo-svg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define DEFAULT_WIDTH 1600
#define DEFAULT_HEIGHT 900
#define MIN_SIDE 64
#define MAX_SIDE 16384

static int format_of(const char *path, int *format, char *err, size_t errlen) {
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    if (!dot || dot[1] == '\0') {
        snprintf(err, errlen,
                 "cannot tell the picture format of \"%s\": name it .png, .svg or .pdf", path);
        return -1;
    }
    if (strcasecmp(dot, ".png") == 0)
        *format = CANVAS_PNG;
    else if (strcasecmp(dot, ".svg") == 0)
        *format = CANVAS_SVG;
    else if (strcasecmp(dot, ".pdf") == 0)
        *format = CANVAS_PDF;
    else {
        snprintf(err, errlen, "unknown picture format \"%.40s\" in %s (use .png, .svg or .pdf)",
                 dot, path);
        return -1;
    }
    return 0;
}

/* ---- output stream ------------------------------------------------------ */

static cairo_status_t put(canvas *c, const void *data, size_t len) {
    if (len && fwrite(data, 1, len, c->file) != len) {
        if (!c->write_errno)
            c->write_errno = errno ? errno : EIO;
        return CAIRO_STATUS_WRITE_ERROR;
    }
    return CAIRO_STATUS_SUCCESS;
}

/* Writes text as XML character data: valid UTF-8, no control characters. */
static cairo_status_t put_xml_text(canvas *c, const char *text) {
    char clean[1024];
    utf8_clean(text, clean, sizeof clean);
    cairo_status_t st = CAIRO_STATUS_SUCCESS;
    for (const char *p = clean; *p && st == CAIRO_STATUS_SUCCESS; p++) {
        if (*p == '&')
            st = put(c, "&amp;", 5);
        else if (*p == '<')
            st = put(c, "&lt;", 4);
        else if (*p == '>')
            st = put(c, "&gt;", 4);
        else
            st = put(c, p, 1);
    }
    return st;
}

/* Holds back the start of the SVG until the <svg …> tag is complete, then
 * writes <title> and <desc> right after it. */
static cairo_status_t svg_splice(canvas *c, const unsigned char *data, size_t len) {
    size_t room = sizeof c->svg_head - c->svg_head_len;
    size_t take = len < room ? len : room;
    memcpy(c->svg_head + c->svg_head_len, data, take);
    c->svg_head_len += take;
    const char *tag = memmem(c->svg_head, c->svg_head_len, "<svg", 4);
    const char *close =
        tag ? memchr(tag, '>', (size_t)(c->svg_head + c->svg_head_len - tag)) : NULL;
    if (!close && take == len)
        return CAIRO_STATUS_SUCCESS; /* wait for more */
    c->svg_state = 1;
    size_t head = close ? (size_t)(close + 1 - c->svg_head) : c->svg_head_len;
    cairo_status_t st = put(c, c->svg_head, head);
    if (close && st == CAIRO_STATUS_SUCCESS && c->svg_title) {
        st = put(c, "\n<title>", 8);
        if (st == CAIRO_STATUS_SUCCESS)
            st = put_xml_text(c, c->svg_title);
        if (st == CAIRO_STATUS_SUCCESS)
            st = put(c, "</title>", 8);
        if (st == CAIRO_STATUS_SUCCESS && c->svg_desc) {
            st = put(c, "\n<desc>", 7);
            if (st == CAIRO_STATUS_SUCCESS)
                st = put_xml_text(c, c->svg_desc);
            if (st == CAIRO_STATUS_SUCCESS)
                st = put(c, "</desc>", 7);
        }
    }
    if (st == CAIRO_STATUS_SUCCESS)
        st = put(c, c->svg_head + head, c->svg_head_len - head);
    if (st == CAIRO_STATUS_SUCCESS)
        st = put(c, data + take, len - take);
    return st;
}

void canvas_keep_label(canvas *c, const char *text, canvas_box b) {
    if (c->format != CANVAS_SVG)
        return;
    if (c->svg_nlabels == c->svg_labels_cap) {
        size_t cap = c->svg_labels_cap ? 2 * c->svg_labels_cap : 64;
        char **labels = realloc(c->svg_labels, cap * sizeof *labels);
        if (labels)
            c->svg_labels = labels;
        canvas_box *boxes = labels ? realloc(c->svg_label_boxes, cap * sizeof *boxes) : NULL;
        if (!boxes)
            return;
        c->svg_label_boxes = boxes;
        c->svg_labels_cap = cap;
    }
    char *copy = strdup(text);
    if (!copy)
        return;
    c->svg_labels[c->svg_nlabels] = copy;
    c->svg_label_boxes[c->svg_nlabels++] = b;
}

/* The transparent text layer, written just before </svg>. */
static cairo_status_t svg_text_layer(canvas *c) {
    static const char open[] = "<g id=\"labels\" fill-opacity=\"0\" font-family=\"DejaVu Sans\">\n";
    cairo_status_t st = put(c, open, sizeof open - 1);
    for (size_t i = 0; i < c->svg_nlabels && st == CAIRO_STATUS_SUCCESS; i++) {
        const canvas_box *b = &c->svg_label_boxes[i];
        char head[160];
        int n = snprintf(head, sizeof head, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\">", b->x,
                         b->y + b->h * 0.8, b->h * 0.8);
        st = put(c, head, (size_t)n);
        if (st == CAIRO_STATUS_SUCCESS)
            st = put_xml_text(c, c->svg_labels[i]);
        if (st == CAIRO_STATUS_SUCCESS)
            st = put(c, "</text>\n", 8);
    }
    return st == CAIRO_STATUS_SUCCESS ? put(c, "</g>\n", 5) : st;
}

static cairo_status_t write_bytes(void *closure, const unsigned char *data, unsigned int len) {
    canvas *c = closure;
    if (c->format == CANVAS_SVG && c->svg_state == 0)
        return svg_splice(c, data, len);
    if (c->format == CANVAS_SVG && c->svg_state == 1 && c->svg_nlabels) {
        const unsigned char *end = memmem(data, len, "</svg>", 6);
        if (end) { /* Cairo closes the document: the labels go in first */
            cairo_status_t st = put(c, data, (size_t)(end - data));
            if (st == CAIRO_STATUS_SUCCESS)
                st = svg_text_layer(c);
            c->svg_state = 2;
            return st == CAIRO_STATUS_SUCCESS ? put(c, end, len - (size_t)(end - data)) : st;
        }
    }
    return put(c, data, len);
}

/* ---- open and close ------------------------------------------------------ */

static void canvas_release(canvas *c) {
    if (c->cr)
        cairo_destroy(c->cr);
    if (c->surface)
        cairo_surface_destroy(c->surface);
    if (c->file)
        fclose(c->file);
    free(c->boxes);
    for (size_t i = 0; i < c->svg_nlabels; i++)
        free(c->svg_labels[i]);
    free(c->svg_labels);
    free(c->svg_label_boxes);
    c->svg_labels = NULL;
    c->svg_label_boxes = NULL;
    c->svg_nlabels = c->svg_labels_cap = 0;
    c->cr = NULL;
    c->surface = NULL;
    c->file = NULL;
    c->boxes = NULL;
}

int canvas_open(canvas *c, const char *path, const render_options *opt, const char *title,
                const char *subtitle, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->ns_per_event = opt ? opt->ns_per_event : 0;
    if (!path || !*path) {
        snprintf(err, errlen, "no output file name for the picture");
        return -1;
    }
    if (format_of(path, &c->format, err, errlen) != 0)
        return -1;
    int w = opt && opt->width ? opt->width : DEFAULT_WIDTH;
    int h = opt && opt->height ? opt->height : DEFAULT_HEIGHT;
    if (w < MIN_SIDE || h < MIN_SIDE || w > MAX_SIDE || h > MAX_SIDE) {
        snprintf(err, errlen, "picture size %dx%d out of range (%d..%d a side)", w, h, MIN_SIDE,
                 MAX_SIDE);
        return -1;
    }
    c->path = path;
    c->w = w;
    c->h = h;
    double sx = w / (double)DEFAULT_WIDTH, sy = h / (double)DEFAULT_HEIGHT;
    c->s = sx < sy ? sx : sy;
    if (c->s < 0.7)
        c->s = 0.7;
    if (c->s > 4)
        c->s = 4;
    if (opt) {
        c->on_text = opt->on_text;
        c->text_ctx = opt->text_ctx;
    }
    c->file = fopen(path, "wb");
    if (!c->file) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    char clean_title[512], clean_sub[512];
    utf8_clean(title ? title : "", clean_title, sizeof clean_title);
    utf8_clean(subtitle ? subtitle : "", clean_sub, sizeof clean_sub);
    if (c->format == CANVAS_PNG) {
        c->surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
    } else if (c->format == CANVAS_SVG) {
        c->svg_title = title;
        c->svg_desc = subtitle;
        c->surface = cairo_svg_surface_create_for_stream(write_bytes, c, w, h);
        cairo_svg_surface_set_document_unit(c->surface, CAIRO_SVG_UNIT_PX);
    } else {
        c->surface = cairo_pdf_surface_create_for_stream(write_bytes, c, w, h);
        if (clean_title[0])
            cairo_pdf_surface_set_metadata(c->surface, CAIRO_PDF_METADATA_TITLE, clean_title);
        if (clean_sub[0])
            cairo_pdf_surface_set_metadata(c->surface, CAIRO_PDF_METADATA_SUBJECT, clean_sub);
        cairo_pdf_surface_set_metadata(c->surface, CAIRO_PDF_METADATA_CREATOR, "gpumemtrace");
    }
    c->cr = cairo_create(c->surface);
    if (cairo_status(c->cr) != CAIRO_STATUS_SUCCESS) {
        snprintf(err, errlen, "cannot draw %s: %s", path,
                 cairo_status_to_string(cairo_status(c->cr)));
        canvas_release(c);
        unlink(path);
        return -1;
    }
    set_rgb(c->cr, rgb_hex(COLOR_BACKGROUND), 1);
    cairo_paint(c->cr);
    cairo_set_line_join(c->cr, CAIRO_LINE_JOIN_ROUND);
    return 0;
}

void canvas_fail(canvas *c) {
    canvas_release(c);
    if (c->path)
        unlink(c->path);
}

int canvas_close(canvas *c, char *err, size_t errlen) {
    cairo_status_t st = cairo_status(c->cr);
    cairo_destroy(c->cr);
    c->cr = NULL;
    if (st == CAIRO_STATUS_SUCCESS) {
        if (c->format == CANVAS_PNG)
            st = cairo_surface_write_to_png_stream(c->surface, write_bytes, c);
        else {
            cairo_surface_finish(c->surface);
            st = cairo_surface_status(c->surface);
        }
    }
    if (st == CAIRO_STATUS_SUCCESS && c->format == CANVAS_SVG && c->svg_state == 0) {
        c->svg_state = 1; /* never saw the <svg> tag: write what was held back */
        st = put(c, c->svg_head, c->svg_head_len);
    }
    FILE *f = c->file;
    c->file = NULL;
    if (fclose(f) != 0 && st == CAIRO_STATUS_SUCCESS) {
        st = CAIRO_STATUS_WRITE_ERROR;
        if (!c->write_errno)
            c->write_errno = errno ? errno : EIO;
    }
    const char *path = c->path;
    int wr_errno = c->write_errno;
    canvas_release(c);
    if (st == CAIRO_STATUS_SUCCESS)
        return 0;
    if (wr_errno)
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(wr_errno));
    else
        snprintf(err, errlen, "cannot draw %s: %s", path, cairo_status_to_string(st));
    unlink(path);
    return -1;
}

void render_release(void) {
    cairo_debug_reset_static_data();
#ifdef GMT_HAVE_FONTCONFIG
    FcFini();
#endif
}

/* ---- title block and the empty picture ---------------------------------- */

double canvas_header(canvas *c, const char *title, const char *subtitle) {
    double m = 20 * c->s, y = 16 * c->s;
    char buf[1024];
    set_rgb(c->cr, rgb_hex(COLOR_TEXT), 1);
    text_font(c, FS_TITLE, FONT_BOLD);
    if (title && *title && text_fit(c, title, c->w - 2 * m, buf, sizeof buf))
        y = text_draw(c, buf, m, y, 0, 0).y + text_height(c);
    else
        y += text_height(c);
    if (subtitle && *subtitle) {
        y += 4 * c->s;
        set_rgb(c->cr, rgb_hex(COLOR_MUTED), 1);
        text_font(c, FS_SUBTITLE, FONT_REGULAR);
        if (text_fit(c, subtitle, c->w - 2 * m, buf, sizeof buf))
            y = text_draw(c, buf, m, y, 0, 0).y + text_height(c);
    }
    return y + 14 * c->s;
}

void canvas_message(canvas *c, double top, const char *message) {
    double m = 20 * c->s;
    cairo_t *cr = c->cr;
    cairo_rectangle(cr, m + 0.5, top + 0.5, c->w - 2 * m - 1, c->h - top - m - 1);
    set_rgb(cr, rgb_hex(COLOR_GRID), 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    double cy = top + (c->h - top - m) / 2;
    set_rgb(cr, rgb_hex(COLOR_MUTED), 1);
    text_font(c, FS_TITLE * 1.6, FONT_BOLD);
    text_draw(c, "no data", c->w / 2, cy, 0.5, 1);
    if (message && *message) {
        char buf[512];
        text_font(c, FS_SUBTITLE, FONT_REGULAR);
        if (text_fit(c, message, c->w - 4 * m, buf, sizeof buf))
            text_draw(c, buf, c->w / 2, cy + 10 * c->s, 0.5, 0);
    }
}

void canvas_no_data(canvas *c, const char *title, const char *subtitle, const char *message) {
    canvas_message(c, canvas_header(c, title, subtitle), message);
}
