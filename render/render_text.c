/* render_text.c — text that never breaks a picture.
 *
 * Labels come from the recording (function names, file paths, NVTX range
 * names) and may hold anything; one invalid UTF-8 byte would put the Cairo
 * context into an error state and lose the whole picture. So every string
 * is cleaned first, then measured, shortened with "…" to the room it has,
 * drawn at an anchor, and its box remembered: pictures ask text_box_free
 * before placing a movable label, which is how labels avoid each other. The
 * same boxes go to the caller's on_text hook. Fonts are DejaVu Sans through
 * Cairo's toy API. */
#include "render_common.h"

#include <stdlib.h>
#include <string.h>

#define TEXT_MAX 1024

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *p) {
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

size_t utf8_clean(const char *in, char *out, size_t outlen) {
    size_t o = 0;
    if (!outlen)
        return 0;
    const unsigned char *p = (const unsigned char *)(in ? in : "");
    while (*p) {
        size_t n = utf8_seq(p);
        if (n == 0 || (n == 1 && *p < 0x20)) {
            if (o + 1 >= outlen)
                break;
            out[o++] = n == 0 ? '?' : ' ';
            p++;
            continue;
        }
        if (o + n >= outlen)
            break;
        memcpy(out + o, p, n);
        o += n;
        p += n;
    }
    out[o] = '\0';
    return o;
}

void text_font(canvas *c, double size, int weight) {
    cairo_select_font_face(c->cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                           weight == FONT_BOLD ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(c->cr, size * c->s);
}

static double width_clean(canvas *c, const char *clean) {
    cairo_text_extents_t te;
    cairo_text_extents(c->cr, clean, &te);
    return te.x_advance;
}

double text_width(canvas *c, const char *text) {
    char clean[TEXT_MAX];
    utf8_clean(text, clean, sizeof clean);
    return width_clean(c, clean);
}

double text_height(canvas *c) {
    cairo_font_extents_t fe;
    cairo_font_extents(c->cr, &fe);
    return fe.ascent + fe.descent;
}

canvas_box text_box(canvas *c, const char *text, double x, double y, double ha, double va) {
    double w = text_width(c, text), h = text_height(c);
    canvas_box b = {x - ha * w, y - va * h, w, h};
    return b;
}

static void remember(canvas *c, const char *clean, canvas_box b) {
    if (c->nboxes == c->boxes_cap) {
        size_t cap = c->boxes_cap ? 2 * c->boxes_cap : 64;
        canvas_box *grown = realloc(c->boxes, cap * sizeof *grown);
        if (grown) {
            c->boxes = grown;
            c->boxes_cap = cap;
        }
    }
    if (c->nboxes < c->boxes_cap)
        c->boxes[c->nboxes++] = b;
    canvas_keep_label(c, clean, b);
    if (c->on_text)
        c->on_text(c->text_ctx, clean, b.x, b.y, b.w, b.h);
}

canvas_box text_draw(canvas *c, const char *text, double x, double y, double ha, double va) {
    char clean[TEXT_MAX];
    utf8_clean(text, clean, sizeof clean);
    cairo_font_extents_t fe;
    cairo_font_extents(c->cr, &fe);
    double w = width_clean(c, clean), h = fe.ascent + fe.descent;
    canvas_box b = {x - ha * w, y - va * h, w, h};
    cairo_move_to(c->cr, b.x, b.y + fe.ascent);
    cairo_show_text(c->cr, clean);
    cairo_new_path(c->cr);
    remember(c, clean, b);
    return b;
}

canvas_box text_draw_halo(canvas *c, const char *text, double x, double y, double ha, double va,
                          render_rgb color) {
    char clean[TEXT_MAX];
    utf8_clean(text, clean, sizeof clean);
    cairo_font_extents_t fe;
    cairo_font_extents(c->cr, &fe);
    double w = width_clean(c, clean), h = fe.ascent + fe.descent;
    canvas_box b = {x - ha * w, y - va * h, w, h};
    cairo_move_to(c->cr, b.x, b.y + fe.ascent);
    cairo_text_path(c->cr, clean);
    set_rgb(c->cr, rgb_hex(COLOR_BACKGROUND), 0.9);
    cairo_set_line_width(c->cr, 3.5 * c->s);
    cairo_stroke_preserve(c->cr);
    set_rgb(c->cr, color, 1);
    cairo_fill(c->cr);
    remember(c, clean, b);
    return b;
}

canvas_box text_draw_up(canvas *c, const char *text, double cx, double cy) {
    char clean[TEXT_MAX];
    utf8_clean(text, clean, sizeof clean);
    cairo_font_extents_t fe;
    cairo_font_extents(c->cr, &fe);
    double w = width_clean(c, clean), h = fe.ascent + fe.descent;
    cairo_save(c->cr);
    cairo_translate(c->cr, cx, cy);
    cairo_rotate(c->cr, -1.5707963267948966);
    cairo_move_to(c->cr, -w / 2, -h / 2 + fe.ascent);
    cairo_show_text(c->cr, clean);
    cairo_new_path(c->cr);
    cairo_restore(c->cr);
    canvas_box b = {cx - h / 2, cy - w / 2, h, w};
    remember(c, clean, b);
    return b;
}

/* clean[0..n) cut to `keep` characters' bytes with "…": the first ones, or (ends) two fifths
 * from the start and the rest from the end; cuts fall on UTF-8 character boundaries. */
static void cut_text(const char *clean, size_t n, size_t keep, int ends, char *buf) {
    size_t head = ends ? keep * 2 / 5 : keep, tail = ends ? n - (keep - head) : n;
    while (head > 0 && (clean[head] & 0xc0) == 0x80)
        head--;
    while (tail < n && (clean[tail] & 0xc0) == 0x80)
        tail++;
    memcpy(buf, clean, head);
    memcpy(buf + head, "\xe2\x80\xa6", 3);
    memcpy(buf + head + 3, clean + tail, n - tail + 1);
}

/* text_fit and text_fit_ends: the most characters kept that fit maxw (a bisection). */
static int fit(canvas *c, const char *text, double maxw, char *buf, size_t len, int ends) {
    char clean[TEXT_MAX];
    size_t n = utf8_clean(text, clean, sizeof clean);
    if (len < 8)
        return 0;
    if (width_clean(c, clean) <= maxw && n < len) {
        memcpy(buf, clean, n + 1);
        return n > 0;
    }
    size_t lo = 0, hi = n < len - 4 ? n : len - 4, best = 0;
    while (lo <= hi) {
        size_t mid = (lo + hi) / 2;
        cut_text(clean, n, mid, ends, buf);
        if (width_clean(c, buf) <= maxw) {
            best = mid;
            lo = mid + 1;
        } else {
            if (mid == 0)
                break;
            hi = mid - 1;
        }
    }
    if (!ends) /* a prefix cut back to a character boundary at 0 keeps nothing */
        while (best > 0 && (clean[best] & 0xc0) == 0x80)
            best--;
    if (best == 0)
        return 0;
    cut_text(clean, n, best, ends, buf);
    return 1;
}

int text_fit(canvas *c, const char *text, double maxw, char *buf, size_t len) {
    return fit(c, text, maxw, buf, len, 0);
}

int text_fit_ends(canvas *c, const char *text, double maxw, char *buf, size_t len) {
    return fit(c, text, maxw, buf, len, 1);
}

int text_box_free(const canvas *c, canvas_box b, double margin) {
    if (b.x < 0 || b.y < 0 || b.x + b.w > c->w || b.y + b.h > c->h)
        return 0;
    for (size_t i = 0; i < c->nboxes; i++) {
        const canvas_box *o = &c->boxes[i];
        if (b.x - margin < o->x + o->w && o->x < b.x + b.w + margin && b.y - margin < o->y + o->h &&
            o->y < b.y + b.h + margin)
            return 0;
    }
    return 1;
}
