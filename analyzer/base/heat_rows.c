/* heat_rows.c — see heat_rows.h. A change only touches the rows its range
 * spans (one or two for most blocks), found by a binary search over the
 * merged ranges, so keeping the rows costs little per event. */
#include "heat_rows.h"

#include "gmt_grow.h"

#include <stdlib.h>
#include <string.h>

typedef struct span {
    uint64_t addr, size, offset; /* offset: where it starts in the squeezed space */
} span;

struct heat_rows {
    span *spans;
    size_t nspans, cap;
    uint64_t total;
    double bytes_per_row;
    double reserved[HEAT_ROWS], allocated[HEAT_ROWS];
};

heat_rows *heat_rows_new(void) { return calloc(1, sizeof(heat_rows)); }

void heat_rows_free(heat_rows *h) {
    if (!h)
        return;
    free(h->spans);
    free(h);
}

int heat_rows_add_range(heat_rows *h, uint64_t addr, uint64_t size) {
    if (!size)
        return 0;
    if (gmt_grow((void **)&h->spans, &h->cap, h->nspans, sizeof *h->spans) != 0)
        return -1;
    h->spans[h->nspans++] = (span){addr, size, 0};
    return 0;
}

static int by_addr(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int heat_rows_freeze(heat_rows *h) {
    if (h->nspans > 1)
        qsort(h->spans, h->nspans, sizeof *h->spans, by_addr);
    size_t out = 0;
    for (size_t i = 0; i < h->nspans; i++) {
        span *s = &h->spans[i];
        if (out && s->addr <= h->spans[out - 1].addr + h->spans[out - 1].size) {
            span *last = &h->spans[out - 1];
            if (s->addr + s->size > last->addr + last->size)
                last->size = s->addr + s->size - last->addr;
            continue;
        }
        h->spans[out++] = *s;
    }
    h->nspans = out;
    h->total = 0;
    for (size_t i = 0; i < out; i++) {
        h->spans[i].offset = h->total;
        h->total += h->spans[i].size;
    }
    h->bytes_per_row = h->total ? (double)h->total / HEAT_ROWS : 1;
    memset(h->reserved, 0, sizeof h->reserved);
    memset(h->allocated, 0, sizeof h->allocated);
    return 0;
}

/* Squeezed offset of an address; UINT64_MAX when outside every range. */
static uint64_t squeeze(const heat_rows *h, uint64_t addr) {
    size_t lo = 0, hi = h->nspans;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (h->spans[mid].addr + h->spans[mid].size <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == h->nspans || addr < h->spans[lo].addr)
        return UINT64_MAX;
    return h->spans[lo].offset + (addr - h->spans[lo].addr);
}

static void spread(const heat_rows *h, double *rows, uint64_t start, uint64_t size, int sign) {
    if (start == UINT64_MAX || !size || !sign)
        return;
    double first = (double)start / h->bytes_per_row;
    double last = (double)(start + size) / h->bytes_per_row;
    for (size_t r = (size_t)first; r < HEAT_ROWS && (double)r < last; r++) {
        double lo = first > (double)r ? first : (double)r;
        double hi = last < (double)(r + 1) ? last : (double)(r + 1);
        rows[r] += sign * (hi - lo) * h->bytes_per_row;
    }
}

void heat_rows_change(heat_rows *h, uint64_t addr, uint64_t size, int reserved, int allocated) {
    if (!h || !h->total)
        return;
    uint64_t start = squeeze(h, addr);
    spread(h, h->reserved, start, size, reserved);
    spread(h, h->allocated, start, size, allocated);
}

void heat_rows_fractions(const heat_rows *h, float *out) {
    for (size_t r = 0; r < HEAT_ROWS; r++) {
        double f = h->reserved[r] > 0.5 ? h->allocated[r] / h->reserved[r] : -1.0;
        out[r] = (float)(f > 1.0 ? 1.0 : f < -1.0 ? -1.0 : f);
    }
}

uint64_t heat_rows_total(const heat_rows *h) { return h->total; }

double heat_rows_bytes_per_row(const heat_rows *h) { return h->bytes_per_row; }

size_t *heat_rows_bounds(const heat_rows *h, size_t *nbounds) {
    size_t *b = calloc(h->nspans + 1, sizeof *b);
    *nbounds = b ? h->nspans : 0;
    for (size_t i = 0; b && i < h->nspans; i++)
        b[i] = (size_t)((double)h->spans[i].offset / h->bytes_per_row);
    return b;
}
