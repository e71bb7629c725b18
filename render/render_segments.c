/* render_segments.c — the segment layout at one moment.
 *
 * Segments range from 2 MiB to gigabytes, so one bar per segment on one
 * scale would leave the small ones a few pixels wide. Instead every row of
 * the plot stands for the same number of bytes (the row width, shown on a
 * ruler): segments flow left to right in address order, several small ones
 * share a row, and one larger than a row wraps onto the next rows, so every
 * byte has the same area everywhere. The row width is the smallest one (from
 * the median segment size up) at which all rows fit the picture.
 *
 * Inside a bar, blocks take their site's colour, pending frees the same
 * colour paler and hatched, free gaps are left as gaps. Blocks and gaps wide
 * enough for it carry their size; each segment is labelled above its first
 * row. Runs of blocks narrower than a pixel are merged, so drawing costs at
 * most a few rectangles per pixel however many blocks there are. */
#include "render_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct piece {
    size_t seg;
    uint64_t lo, hi; /* bytes of the segment in this row */
    size_t row;
    double x, w; /* within the row, pixels */
} piece;

typedef struct flow {
    double width, gap, minw; /* row width, gap between segments, least bar width */
    double label_w;          /* a segment this wide or wider gets a label strip */
    size_t rows, labelled, npieces;
    piece *pieces;    /* NULL: count only */
    uint8_t *has_top; /* [rows]: a segment starts in the row (it needs a label strip) */
} flow;

static int check(const render_layout *l, char *err, size_t errlen) {
    if (l->nsegments && !l->segments) {
        snprintf(err, errlen, "segments: %zu segments but the array is NULL", l->nsegments);
        return -1;
    }
    if (l->nlegend && !l->legend_key) {
        snprintf(err, errlen, "segments: %zu legend entries but legend_key is NULL", l->nlegend);
        return -1;
    }
    for (size_t i = 0; i < l->nsegments; i++) {
        const render_segment *s = &l->segments[i];
        if (s->nblocks && !s->blocks) {
            snprintf(err, errlen, "segments: segment %zu has %zu blocks but blocks is NULL", i,
                     s->nblocks);
            return -1;
        }
        uint64_t end = 0;
        for (size_t k = 0; k < s->nblocks; k++) {
            const render_block *b = &s->blocks[k];
            if (b->offset < end || b->size > s->size || b->offset > s->size - b->size) {
                snprintf(err, errlen,
                         "segments: segment %zu (%llu bytes): block %zu at offset %llu, %llu "
                         "bytes, %s",
                         i, (unsigned long long)s->size, k, (unsigned long long)b->offset,
                         (unsigned long long)b->size,
                         b->offset < end ? "overlaps the block before" : "ends beyond the segment");
                return -1;
            }
            end = b->offset + b->size;
        }
    }
    return 0;
}

static void emit(flow *f, size_t seg, uint64_t lo, uint64_t hi, size_t row, double x, double w) {
    if (f->pieces)
        f->pieces[f->npieces] = (piece){seg, lo, hi, row, x, w};
    f->npieces++;
}

static void mark_top(flow *f, size_t row) {
    if (f->has_top)
        f->has_top[row] = 1;
}

/* Lays the segments out in rows of cap bytes; counts rows, rows holding a
 * segment's start, and pieces (one per segment and row it touches). */
static void flow_run(flow *f, const render_layout *l, uint64_t cap) {
    double x = 0;
    size_t row = 0, last_top = SIZE_MAX;
    int used = 0;
    f->npieces = f->labelled = 0;
    for (size_t i = 0; i < l->nsegments; i++) {
        uint64_t size = l->segments[i].size;
        double w = (double)size / (double)cap * f->width;
        if (size <= cap) {
            if (w < f->minw)
                w = f->minw;
            if (used && x + f->gap + w > f->width + 0.01) {
                row++;
                used = 0;
            }
            double x0 = used ? x + f->gap : 0;
            emit(f, i, 0, size, row, x0, w);
            x = x0 + w;
            used = 1;
            if (w >= f->label_w && last_top != row) {
                f->labelled++;
                mark_top(f, row);
                last_top = row;
            }
        } else {
            if (used)
                row++;
            uint64_t nrows = (size + cap - 1) / cap;
            if (f->pieces)
                for (uint64_t k = 0; k < nrows; k++) {
                    uint64_t lo = k * cap, hi = size - lo < cap ? size : lo + cap;
                    emit(f, i, lo, hi, row + k, 0, (double)(hi - lo) / (double)cap * f->width);
                }
            else
                f->npieces += nrows;
            row += nrows - 1;
            x = (double)(size - (nrows - 1) * cap) / (double)cap * f->width;
            if (last_top != row - (nrows - 1)) {
                f->labelled++;
                mark_top(f, row - (nrows - 1));
                last_top = row - (nrows - 1);
            }
            used = 1;
        }
    }
    f->rows = used ? row + 1 : row;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The next row width after cap: 1, 1.25, 1.5, 1.75 times a power of two,
 * so the ruler reads 64 MiB, 80 MiB, 96 MiB… */
static uint64_t next_cap(uint64_t cap) {
    uint64_t p = 1;
    while (p <= cap / 2)
        p *= 2;
    for (uint64_t q = 4; q <= 8; q++) {
        uint64_t v = p / 4 * q;
        if (p < 4)
            v = p * q / 4;
        if (v > cap)
            return v;
    }
    return cap + 1;
}

/* The smallest row width, from the median segment up, at which the rows fit
 * height h with bars bar_min high. */
static uint64_t choose_cap(flow *f, const render_layout *l, double h, double bar_min, double strip,
                           double gap_y) {
    uint64_t *sizes = malloc(l->nsegments * sizeof *sizes), total = 0, largest = 1;
    for (size_t i = 0; i < l->nsegments; i++) {
        total += l->segments[i].size;
        if (l->segments[i].size > largest)
            largest = l->segments[i].size;
        if (sizes)
            sizes[i] = l->segments[i].size;
    }
    uint64_t cap = largest;
    if (sizes) {
        qsort(sizes, l->nsegments, sizeof *sizes, cmp_u64);
        cap = sizes[l->nsegments / 2];
        free(sizes);
    }
    cap = next_cap(cap > 0 ? cap - 1 : 0);
    for (;;) {
        flow_run(f, l, cap);
        double need = f->rows * (bar_min + gap_y) + f->labelled * strip;
        if (need <= h || cap >= total || cap > UINT64_MAX / 2)
            return cap;
        cap = next_cap(cap);
    }
}

/* ---- drawing ------------------------------------------------------------ */

typedef struct run {
    double x0, x1;
    int state; /* -1: none */
    uint64_t key;
} run;

static void run_flush(canvas *c, run *r, double y, double h, double end) {
    if (r->state < 0 || r->state == RENDER_BLOCK_FREE || r->x1 <= r->x0) {
        r->state = -1;
        return;
    }
    render_rgb col = render_site_color(r->key);
    double w = r->x1 - r->x0;
    if (w >= 4 && r->x1 < end - 0.5)
        w -= 1; /* a hairline of background between neighbouring blocks */
    cairo_rectangle(c->cr, r->x0, y, w, h);
    if (r->state == RENDER_BLOCK_PENDING_FREE) {
        set_rgb(c->cr, rgb_mix(col, rgb_hex(COLOR_BACKGROUND), 0.6), 1);
        cairo_fill(c->cr);
        if (w >= 4)
            hatch_rect(c->cr, r->x0, y, w, h, 5 * c->s, col, 1.2 * c->s);
    } else {
        set_rgb(c->cr, col, 1);
        cairo_fill(c->cr);
    }
    r->state = -1;
}

/* The index of the first block ending after byte lo. */
static size_t first_block(const render_segment *s, uint64_t lo) {
    size_t a = 0, b = s->nblocks;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (s->blocks[mid].offset + s->blocks[mid].size <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

static void draw_blocks(canvas *c, const render_segment *s, const piece *pc, double x, double y,
                        double h) {
    run r = {0, 0, -1, 0};
    double span = (double)(pc->hi - pc->lo);
    for (size_t k = first_block(s, pc->lo); k < s->nblocks && s->blocks[k].offset < pc->hi; k++) {
        const render_block *b = &s->blocks[k];
        uint64_t lo = b->offset > pc->lo ? b->offset : pc->lo;
        uint64_t hi = b->offset + b->size < pc->hi ? b->offset + b->size : pc->hi;
        double x0 = x + (double)(lo - pc->lo) / span * pc->w;
        double x1 = x + (double)(hi - pc->lo) / span * pc->w;
        int state = b->state > RENDER_BLOCK_FREE ? RENDER_BLOCK_ALLOCATED : b->state;
        if (r.state == RENDER_BLOCK_FREE && state == RENDER_BLOCK_FREE) {
            r.x1 = x1;
            continue;
        }
        if (r.state >= 0 && x1 - x0 < 0.75 && r.x1 - r.x0 < 0.75) {
            r.x1 = x1; /* sub-pixel: merged into the run, in its colour */
            continue;
        }
        run_flush(c, &r, y, h, x + pc->w);
        r = (run){x0, x1, state, b->site_key};
    }
    run_flush(c, &r, y, h, x + pc->w);
}

/* Size labels inside blocks and gaps wide enough; returns the last block
 * labelled (a block wrapped over rows is labelled once). */
static size_t label_blocks(canvas *c, const render_segment *s, const piece *pc, double x, double y,
                           double h, size_t done) {
    double span = (double)(pc->hi - pc->lo), min_w = 36 * c->s;
    char size[32], buf[48];
    text_font(c, FS_SMALL, FONT_REGULAR);
    if (h < text_height(c) + 2)
        return done;
    for (size_t k = first_block(s, pc->lo); k < s->nblocks && s->blocks[k].offset < pc->hi; k++) {
        const render_block *b = &s->blocks[k];
        if (k == done || (double)b->size / span * pc->w < min_w)
            continue;
        uint64_t lo = b->offset > pc->lo ? b->offset : pc->lo;
        uint64_t hi = b->offset + b->size < pc->hi ? b->offset + b->size : pc->hi;
        double x0 = x + (double)(lo - pc->lo) / span * pc->w;
        double x1 = x + (double)(hi - pc->lo) / span * pc->w;
        format_bytes((double)b->size, size, sizeof size);
        int is_free = b->state == RENDER_BLOCK_FREE;
        snprintf(buf, sizeof buf, is_free ? "free %s" : "%s", size);
        if (text_width(c, buf) + 8 * c->s > x1 - x0) {
            if (!is_free || text_width(c, size) + 8 * c->s > x1 - x0)
                continue;
            snprintf(buf, sizeof buf, "%s", size);
        }
        render_rgb bg = is_free ? rgb_hex(COLOR_BACKGROUND) : render_site_color(b->site_key);
        if (b->state == RENDER_BLOCK_PENDING_FREE)
            bg = rgb_mix(bg, rgb_hex(COLOR_BACKGROUND), 0.6);
        set_rgb(c->cr, is_free ? rgb_hex(COLOR_MUTED) : rgb_text_on(bg), 1);
        text_draw(c, buf, (x0 + x1) / 2, y + h / 2, 0.5, 0.5);
        done = k;
    }
    return done;
}

static void label_segment(canvas *c, const render_segment *s, double x, double y, double w) {
    char size[32], text[256], buf[256];
    format_bytes((double)s->size, size, sizeof size);
    if (s->label)
        snprintf(text, sizeof text, "%s", s->label);
    else
        snprintf(text, sizeof text, "0x%llx  %s", (unsigned long long)s->address, size);
    text_font(c, FS_SMALL, FONT_REGULAR);
    set_rgb(c->cr, rgb_hex(COLOR_TEXT), 1);
    if (text_width(c, text) <= w)
        text_draw(c, text, x, y, 0, 1);
    else if (text_fit(c, size, w, buf, sizeof buf) && text_width(c, size) <= w)
        text_draw(c, size, x, y, 0, 1);
}

static void draw_ruler(canvas *c, double x, double y, double w, uint64_t cap) {
    axis a;
    plot p;
    memset(&p, 0, sizeof p);
    axis_bytes(&a, (double)cap, (int)(w / (110 * c->s)));
    a.hi = (double)cap;
    p.x = x;
    p.w = w;
    p.xa = a;
    double ticks[64];
    size_t n = axis_ticks(&a, ticks, 64);
    cairo_t *cr = c->cr;
    text_font(c, FS_SMALL, FONT_REGULAR);
    cairo_move_to(cr, x, floor(y) + 0.5);
    cairo_line_to(cr, x + w, floor(y) + 0.5);
    char buf[64];
    for (size_t i = 0; i < n; i++) {
        double tx = floor(plot_x(&p, ticks[i])) + 0.5;
        cairo_move_to(cr, tx, y);
        cairo_line_to(cr, tx, y - 5 * c->s);
    }
    set_rgb(cr, rgb_hex(COLOR_FRAME), 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    set_rgb(cr, rgb_hex(COLOR_TEXT), 1);
    for (size_t i = 0; i < n; i++) {
        axis_label(&a, ticks[i], buf, sizeof buf);
        double tx = plot_x(&p, ticks[i]), ha = i == 0 ? 0 : tx >= x + w - 1 ? 1 : 0.5;
        canvas_box b = text_box(c, buf, tx, y - 7 * c->s, ha, 1);
        if (text_box_free(c, b, 6 * c->s))
            text_draw(c, buf, tx, y - 7 * c->s, ha, 1);
    }
}

static int draw_legend(canvas *c, const render_layout *l, double x, double y, double w,
                       double maxh) {
    legend_item *items = malloc((l->nlegend + 4) * sizeof *items);
    if (!items)
        return -1;
    size_t n = 0;
    if (l->nlegend)
        items[n++] = (legend_item){"allocated by site", rgb_hex(COLOR_MUTED), LEGEND_HEADING};
    for (size_t i = 0; i < l->nlegend; i++) {
        const char *label = l->legend_label && l->legend_label[i] ? l->legend_label[i] : "?";
        items[n++] = (legend_item){label, render_site_color(l->legend_key[i]), LEGEND_FILL};
    }
    items[n++] = (legend_item){"pending free (paler, hatched)", rgb_hex(COLOR_MUTED), LEGEND_HATCH};
    items[n++] = (legend_item){"free gap", rgb_hex(COLOR_FRAME), LEGEND_OUTLINE};
    legend_draw(c, x, y, w, maxh, items, n);
    free(items);
    return 0;
}

static int draw(canvas *c, const render_layout *l) {
    double s = c->s, m = 20 * s;
    double top = canvas_header(c, l->title, l->subtitle);
    double lw = legend_width(c);
    text_font(c, FS_SMALL, FONT_REGULAR);
    double th = text_height(c);
    double px = m, pw = round(c->w - m - lw - 28 * s - px);
    double ruler_y = round(top + th + 12 * s), py = ruler_y + 8 * s;
    double note_y = c->h - m, ph = note_y - th - 10 * s - py;
    if (pw < 20 || ph < 20) {
        canvas_message(c, top, "the picture is too small for a plot");
        return 0;
    }
    double strip = th + 4 * s, gap_y = 5 * s, bar_min = 26 * s, bar_max = 46 * s;
    flow f;
    memset(&f, 0, sizeof f);
    f.width = pw;
    f.gap = 5 * s;
    f.minw = 2 * s;
    f.label_w = text_width(c, "20.0 MiB");
    uint64_t cap = choose_cap(&f, l, ph, bar_min, strip, gap_y);
    f.pieces = malloc(f.npieces * sizeof *f.pieces);
    f.has_top = calloc(f.rows ? f.rows : 1, 1);
    if (!f.pieces || !f.has_top) {
        free(f.pieces);
        free(f.has_top);
        return -1;
    }
    flow_run(&f, l, cap);
    /* bar height: what the rows leave, within [bar_min, bar_max]; labels go
     * first when even the least bars do not fit */
    if (f.rows * (12 * s + gap_y) + f.labelled * strip > ph)
        strip = 0;
    double bh = (ph - f.labelled * strip) / (double)f.rows - gap_y;
    if (bh > bar_max)
        bh = bar_max;
    if (bh < 3) {
        gap_y = 1;
        bh = 3;
    }
    draw_ruler(c, px, ruler_y, pw, cap);
    size_t hidden = 0, done = SIZE_MAX, last_seg = SIZE_MAX, row = 0;
    double y = py, bottom = py;
    for (size_t i = 0; i < f.npieces; i++) {
        const piece *pc = &f.pieces[i];
        for (; row < pc->row; row++)
            y += (f.has_top[row] ? strip : 0) + bh + gap_y;
        double bar_y = y + (f.has_top[row] ? strip : 0);
        if (bar_y + bh > py + ph + 0.5) {
            if (pc->lo == 0)
                hidden++;
            continue;
        }
        const render_segment *sg = &l->segments[pc->seg];
        double x = px + pc->x;
        bottom = fmax(bottom, bar_y + bh);
        draw_blocks(c, sg, pc, x, bar_y, bh);
        cairo_rectangle(c->cr, floor(x) + 0.5, floor(bar_y) + 0.5, fmax(round(pc->w) - 1, 1),
                        round(bh) - 1);
        set_rgb(c->cr, rgb_hex(COLOR_FRAME), 1);
        cairo_set_line_width(c->cr, 1);
        cairo_stroke(c->cr);
        if (pc->seg != last_seg)
            done = SIZE_MAX;
        last_seg = pc->seg;
        done = label_blocks(c, sg, pc, x, bar_y, bh, done);
        if (pc->lo == 0 && strip > 0 && f.has_top[pc->row])
            label_segment(c, sg, x, bar_y - 2 * s, pc->w);
    }
    char cap_text[32], note[256];
    format_bytes((double)cap, cap_text, sizeof cap_text);
    int len = snprintf(note, sizeof note,
                       "Each row is %s wide; a segment larger than that continues on the next "
                       "rows.",
                       cap_text);
    if (hidden && len > 0 && (size_t)len < sizeof note)
        snprintf(note + len, sizeof note - (size_t)len, " %zu segments did not fit the picture.",
                 hidden);
    char buf[256];
    text_font(c, FS_SMALL, FONT_REGULAR);
    set_rgb(c->cr, rgb_hex(COLOR_MUTED), 1);
    if (text_fit(c, note, pw, buf, sizeof buf))
        text_draw(c, buf, px, fmin(note_y - th, bottom + 12 * s), 0, 0);
    free(f.pieces);
    free(f.has_top);
    return draw_legend(c, l, c->w - m - lw, py, lw, c->h - m - py);
}

int render_segments_draw(const render_layout *l, const char *path, const render_options *opt,
                         char *err, size_t errlen) {
    if (!l) {
        snprintf(err, errlen, "segments: no data given");
        return -1;
    }
    if (check(l, err, errlen) != 0)
        return -1;
    canvas c;
    if (canvas_open(&c, path, opt, l->title, l->subtitle, err, errlen) != 0)
        return -1;
    if (l->nsegments == 0)
        canvas_no_data(&c, l->title, l->subtitle, "no segments are reserved at this moment");
    else if (draw(&c, l) != 0) {
        canvas_fail(&c);
        snprintf(err, errlen, "segments: out of memory drawing %s", path);
        return -1;
    }
    return canvas_close(&c, err, errlen);
}
