/* folded.c — whole stacks and their bytes for a flame graph (see folded.h): the bytes gathered
 * per stack id in one block sweep (block_sweep.h) or from analysis_site_growth, then each stack
 * named once (stack_names.h), its shown frames outermost first, and the stacks that read the
 * same merged into one row. */
#include "folded.h"

#include "addr_map.h"
#include "analysis.h"
#include "block_sweep.h"
#include "gmt_grow.h"
#include "stack_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes per stack id, in the order the stacks were first seen. */
typedef struct stack_sums {
    addr_map index; /* stack_id -> slot + 1 */
    int64_t *ids, *bytes;
    size_t n, cap_ids, cap_bytes;
} stack_sums;

static int sums_add(stack_sums *s, int64_t stack_id, int64_t bytes) {
    uint32_t *at = addr_map_get(&s->index, 0, (uint64_t)stack_id);
    if (at) {
        s->bytes[*at - 1] += bytes;
        return 0;
    }
    if (s->n >= UINT32_MAX - 1 || gmt_grow((void **)&s->ids, &s->cap_ids, s->n, sizeof *s->ids) ||
        gmt_grow((void **)&s->bytes, &s->cap_bytes, s->n, sizeof *s->bytes) ||
        addr_map_put(&s->index, 0, (uint64_t)stack_id, (uint32_t)s->n + 1) != 0)
        return -1;
    s->ids[s->n] = stack_id;
    s->bytes[s->n++] = bytes;
    return 0;
}

static void sums_free(stack_sums *s) {
    addr_map_free(&s->index);
    free(s->ids);
    free(s->bytes);
    memset(s, 0, sizeof *s);
}

static void row_free(folded_row *r) {
    for (size_t i = 0; i < r->nframes; i++)
        free(r->frames[i]);
    free(r->frames);
    memset(r, 0, sizeof *r);
}

void folded_release(folded_table *t) {
    for (size_t i = 0; i < t->n; i++)
        row_free(&t->rows[i]);
    free(t->rows);
    memset(t, 0, sizeof *t);
}

/* The row of one stack: its shown frames, outermost first. 0, or -1 when out of memory. */
static int row_of(const named_stack *s, int64_t bytes, folded_row *r) {
    memset(r, 0, sizeof *r);
    r->bytes = bytes;
    r->stacks = 1;
    size_t *shown = malloc((s->frame_count ? s->frame_count : 1) * sizeof *shown);
    size_t n = shown ? stack_frames_shown(s, shown) : 0;
    r->frames = calloc(n ? n : 1, sizeof *r->frames);
    if (!shown || !r->frames) {
        free(shown);
        free(r->frames);
        r->frames = NULL;
        return -1;
    }
    if (!n) { /* no frames: "no stack" or "unknown stack", as its site reads */
        r->frames[0] = strdup(s->site ? s->site : "unknown stack");
        r->nframes = 1;
        free(shown);
        return r->frames[0] ? 0 : -1;
    }
    char label[512];
    for (size_t k = 0; k < n; k++) {
        stack_frame_label(&s->frames[shown[n - 1 - k]], label, sizeof label);
        if (!(r->frames[k] = strdup(label))) {
            r->nframes = k;
            free(shown);
            return -1;
        }
    }
    r->nframes = n;
    free(shown);
    return 0;
}

static int by_frames(const void *a, const void *b) {
    const folded_row *x = a, *y = b;
    for (size_t i = 0; i < x->nframes && i < y->nframes; i++) {
        int c = strcmp(x->frames[i], y->frames[i]);
        if (c)
            return c;
    }
    return x->nframes < y->nframes ? -1 : x->nframes > y->nframes;
}

/* The table of the sums: each stack with bytes > 0 named, sorted, the same frames merged. */
static int table_of(sqlite3 *db, const stack_sums *sums, folded_table *out, char *err,
                    size_t errlen) {
    stack_names *names = stack_names_new(db);
    size_t want = 0;
    for (size_t i = 0; i < sums->n; i++)
        want += sums->bytes[i] > 0;
    out->rows = calloc(want ? want : 1, sizeof *out->rows);
    int rc = names && out->rows ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < sums->n; i++) {
        if (sums->bytes[i] <= 0)
            continue;
        const named_stack *s = stack_names_get(names, sums->ids[i]);
        if (!s || row_of(s, sums->bytes[i], &out->rows[out->n]) != 0) {
            if (s)
                row_free(&out->rows[out->n]);
            rc = -1;
            break;
        }
        out->n++;
    }
    stack_names_free(names);
    if (rc != 0) {
        snprintf(err, errlen, "out of memory naming the stacks");
        return -1;
    }
    qsort(out->rows, out->n, sizeof *out->rows, by_frames);
    size_t kept = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (kept && by_frames(&out->rows[kept - 1], &out->rows[i]) == 0) {
            out->rows[kept - 1].bytes += out->rows[i].bytes;
            out->rows[kept - 1].stacks += out->rows[i].stacks;
            row_free(&out->rows[i]);
            continue;
        }
        out->rows[kept++] = out->rows[i];
    }
    out->n = kept;
    out->total = 0;
    for (size_t i = 0; i < out->n; i++)
        out->total += out->rows[i].bytes;
    return 0;
}

/* One sweep of the device's blocks up to `to`: with live, what is live after it; else the
 * allocations after `from`. */
static int sweep_sums(sqlite3 *db, int device, int64_t from, int64_t to, int live, stack_sums *sums,
                      char *err, size_t errlen) {
    block_sweep *sw = block_sweep_open(db, device, to);
    if (!sw) {
        snprintf(err, errlen, "reading the events: %s", sqlite3_errmsg(db));
        return -1;
    }
    block_change c;
    int rc = 0;
    while (rc == 0 && block_sweep_next(sw, &c)) {
        if (live)
            rc = sums_add(sums, c.stack_id, c.is_alloc ? c.size : -c.size);
        else if (c.is_alloc && c.event_id > from)
            rc = sums_add(sums, c.stack_id, c.size);
    }
    block_sweep_close(sw);
    if (rc != 0)
        snprintf(err, errlen, "out of memory summing the stacks");
    return rc;
}

int folded_live_at(sqlite3 *db, int device, int64_t event_id, folded_table *out, char *err,
                   size_t errlen) {
    memset(out, 0, sizeof *out);
    out->event_id = event_id;
    stack_sums sums = {0};
    int rc = sweep_sums(db, device, 0, event_id, 1, &sums, err, errlen);
    if (rc == 0)
        rc = table_of(db, &sums, out, err, errlen);
    sums_free(&sums);
    if (rc != 0)
        folded_release(out);
    out->event_id = event_id;
    return rc;
}

int folded_peak(sqlite3 *db, int device, int64_t from, int64_t to, folded_table *out, char *err,
                size_t errlen) {
    device_summary s;
    if (analysis_device_summary(db, device, from, to, &s) != 0) {
        memset(out, 0, sizeof *out);
        snprintf(err, errlen, "reading the device: %s", sqlite3_errmsg(db));
        return -1;
    }
    /* a window without the device's events: its state entering it */
    int64_t at = s.peak_allocated.event_id >= from ? s.peak_allocated.event_id : from;
    return folded_live_at(db, device, at, out, err, errlen);
}

int folded_leaks(sqlite3 *db, int device, int64_t from, int64_t to, folded_table *out, char *err,
                 size_t errlen) {
    memset(out, 0, sizeof *out);
    site_growth *g = NULL;
    size_t n = 0, windows = 0;
    if (analysis_site_growth(db, device, from, to, &g, &n, &windows) != 0) {
        snprintf(err, errlen, "reading the database: %s", sqlite3_errmsg(db));
        return -1;
    }
    stack_sums sums = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (g[i].growth_per_step > 0)
            rc = sums_add(&sums, g[i].stack_id, g[i].growth_per_step);
    free(g);
    if (rc != 0)
        snprintf(err, errlen, "out of memory summing the stacks");
    else
        rc = table_of(db, &sums, out, err, errlen);
    sums_free(&sums);
    if (rc != 0)
        folded_release(out);
    out->windows = windows;
    return rc;
}

int folded_allocated(sqlite3 *db, int device, int64_t from, int64_t to, folded_table *out,
                     char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    stack_sums sums = {0};
    int rc = sweep_sums(db, device, from, to, 0, &sums, err, errlen);
    if (rc == 0)
        rc = table_of(db, &sums, out, err, errlen);
    sums_free(&sums);
    if (rc != 0)
        folded_release(out);
    return rc;
}
