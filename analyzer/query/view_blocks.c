/* view_blocks.c — the largest blocks live in a window (view_blocks.h): the sidecar (its layout:
 * view_blocks_file.h, written by view_blocks_build.c) mapped read-only, and the queries on it:
 * the window's totals from the running counts, the largest blocks from the ranked runs, tier by
 * tier until K are found, their details decoded last. */
#include "view_blocks.h"
#include "gmt_grow.h"
#include "view_blocks_file.h"

#include "db_file.h"
#include "db_query.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SIDECAR_VERSION 5

struct view_blocks_index {
    const uint8_t *map; /* the whole file */
    size_t size;
    const vb_header *h;
    const vb_device *devs;
};

static int run_ok(const view_blocks_index *ix, const vb_run *r) {
    return r->groups_off <= ix->size &&
           r->ngroups <= (ix->size - r->groups_off) / sizeof(vb_group) && r->end_off <= ix->size &&
           r->ngroups <= r->n && (r->n == 0 || r->ngroups > 0);
}

/* The mapped file's structure within its bounds: 0, or -1 (not a sidecar, or a damaged one). */
static int check_file(view_blocks_index *ix) {
    if (ix->size < sizeof(vb_header))
        return -1;
    ix->h = (const vb_header *)ix->map;
    const vb_header *h = ix->h;
    if (memcmp(h->magic, VB_MAGIC, 8) != 0 || h->file_size != ix->size || h->ndevices < 0 ||
        h->levels < 1 || h->levels > VB_MAX_LEVELS || h->shift < 0 ||
        h->shift + 3 * (h->levels - 1) >= 63 ||
        (uint64_t)h->ndevices > (ix->size - sizeof *h) / sizeof(vb_device))
        return -1;
    ix->devs = (const vb_device *)(ix->map + sizeof *h);
    for (int64_t i = 0; i < h->ndevices; i++) {
        const vb_device *d = &ix->devs[i];
        uint64_t nruns = (uint64_t)d->ntiers * (uint64_t)(h->levels + 1);
        if (d->nsizes < 0 || d->quantum < 1 || d->ntiers < 0 || d->ntiers > 64 ||
            d->sizes_off > ix->size || (uint64_t)d->nsizes > (ix->size - d->sizes_off) / 8 ||
            d->runs_off > ix->size || nruns > (ix->size - d->runs_off) / sizeof(vb_run) ||
            !run_ok(ix, &d->allocs) || !run_ok(ix, &d->frees) || !run_ok(ix, &d->details) ||
            !run_ok(ix, &d->shapes))
            return -1;
        const vb_run *runs = (const vb_run *)(ix->map + d->runs_off);
        for (uint64_t r = 0; r < nruns; r++)
            if (!run_ok(ix, &runs[r]))
                return -1;
    }
    return 0;
}

/* Maps a published sidecar; 1 when it was made for another database (or is not one). */
static int open_sidecar(const char *path, const char *ident, view_blocks_index *ix) {
    const void *m;
    if (db_file_map(path, &m, &ix->size) != 0)
        return 1;
    ix->map = m;
    if (check_file(ix) != 0 || strncmp(ix->h->identity, ident, VB_IDENTITY_LEN) != 0) {
        munmap((void *)ix->map, ix->size);
        ix->map = NULL;
        return 1;
    }
    return 0;
}

view_blocks_index *view_blocks_index_open(sqlite3 *db, const char *path, int *built, char *err,
                                          size_t errlen) {
    char ident[VB_IDENTITY_LEN];
    char tag[32];
    snprintf(tag, sizeof tag, "v%d", SIDECAR_VERSION);
    db_meta_identity(db, tag, ident, sizeof ident);
    view_blocks_index *ix = calloc(1, sizeof *ix);
    if (!ix) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (built)
        *built = 0;
    if (open_sidecar(path, ident, ix) != 0) {
        if (vb_build(db, path, ident, err, errlen) != 0) {
            free(ix);
            return NULL;
        }
        if (built)
            *built = 1;
        if (open_sidecar(path, ident, ix) != 0) {
            snprintf(err, errlen, "view index %s: unreadable once built", path);
            free(ix);
            return NULL;
        }
    }
    return ix;
}

void view_blocks_index_close(view_blocks_index *ix) {
    if (!ix)
        return;
    if (ix->map)
        munmap((void *)ix->map, ix->size);
    free(ix);
}

static const vb_device *device_of(const view_blocks_index *ix, int device) {
    for (int64_t i = 0; i < ix->h->ndevices; i++)
        if (ix->devs[i].device == device)
            return &ix->devs[i];
    return NULL;
}

static const vb_group *groups(const view_blocks_index *ix, const vb_run *r) {
    return (const vb_group *)(ix->map + r->groups_off);
}

/* The last group whose key is < t (0 when none is: the caller starts at the first). */
static uint64_t group_before(const view_blocks_index *ix, const vb_run *r, int64_t t) {
    const vb_group *g = groups(ix, r);
    uint64_t lo = 0, hi = r->ngroups; /* the first group with key >= t */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (g[mid].key < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : 0;
}

/* A group's bytes: [*p, *end). */
static void group_bytes(const view_blocks_index *ix, const vb_run *r, uint64_t gi,
                        const uint8_t **p, const uint8_t **end) {
    const vb_group *g = groups(ix, r);
    uint64_t from = g[gi].off, to = gi + 1 < r->ngroups ? g[gi + 1].off : r->end_off;
    if (to > ix->size || from > to) /* a damaged file: nothing read outside it */
        from = to = 0;
    *p = ix->map + from;
    *end = ix->map + to;
}

/* The count and bytes of a totals run's entries before `t`. */
static void before(const view_blocks_index *ix, const vb_device *d, const vb_run *r, int64_t t,
                   int64_t *n, int64_t *bytes) {
    *n = *bytes = 0;
    if (!r->n)
        return;
    uint64_t gi = group_before(ix, r, t);
    const vb_group *g = &groups(ix, r)[gi];
    if (g->key >= t)
        return;
    const int64_t *sizes = (const int64_t *)(ix->map + d->sizes_off);
    const uint8_t *p, *end;
    group_bytes(ix, r, gi, &p, &end);
    *n = g->n_before, *bytes = g->bytes_before;
    int64_t at = g->key;
    uint64_t left = r->n - (uint64_t)g->n_before;
    for (int i = 0; i < VB_GROUP && left-- > 0 && p < end; i++) {
        at += (int64_t)varint_get(&p, end) * d->quantum;
        uint64_t si = varint_get(&p, end);
        if (at >= t)
            break;
        (*n)++;
        *bytes += si < (uint64_t)d->nsizes ? sizes[si] : 0;
    }
}

static void totals(const view_blocks_index *ix, const vb_device *d, int64_t t0, int64_t t1,
                   int64_t *blocks, int64_t *bytes) {
    *blocks = *bytes = 0;
    if (!d || t1 <= t0)
        return;
    int64_t an, ab, fn, fb;
    before(ix, d, &d->allocs, t1, &an, &ab);
    before(ix, d, &d->frees, t0, &fn, &fb);
    /* a block freed before t0 was allocated before it: lifetimes never end before they begin */
    assert(an >= fn && ab >= fb);
    *blocks = an - fn, *bytes = ab - fb;
}

int view_block_count_in_window(view_blocks_index *ix, int device, int64_t t0, int64_t t1,
                               int64_t *blocks, int64_t *bytes, char *err, size_t errlen) {
    (void)err, (void)errlen;
    totals(ix, device_of(ix, device), t0, t1, blocks, bytes);
    return 0;
}

typedef struct cand {
    int64_t sidx, life, lo, ord; /* the rank's keys: life INT64_MAX never freed */
} cand;

typedef struct cands {
    cand *c;
    size_t n, cap;
} cands;

static int by_rank(const void *x, const void *y) {
    const cand *a = x, *b = y;
    if (a->sidx != b->sidx)
        return a->sidx < b->sidx ? -1 : 1;
    if (a->life != b->life)
        return a->life > b->life ? -1 : 1;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return (a->ord > b->ord) - (a->ord < b->ord);
}

/* The entries of one ranked run alive in [t0, t1): born in [t0 - width, t1) (a lifetime is
 * shorter than its level's width; the last level's and the never freed: from the first). */
static int read_run(const view_blocks_index *ix, const vb_run *r, int64_t q, int level, int64_t t0,
                    int64_t t1, cands *out) {
    const vb_header *h = ix->h;
    int live = level == h->levels;
    int64_t from = INT64_MIN;
    if (!live && level + 1 < h->levels) {
        int64_t width = (int64_t)1 << (h->shift + 3 * level);
        from = t0 < INT64_MIN + width ? INT64_MIN : t0 - width;
    }
    uint64_t gi = from == INT64_MIN ? 0 : group_before(ix, r, from);
    const vb_group *g = groups(ix, r);
    for (; gi < r->ngroups && g[gi].key < t1; gi++) {
        const uint8_t *p, *end;
        group_bytes(ix, r, gi, &p, &end);
        int64_t at = g[gi].key, ord = 0;
        while (p < end) {
            at += (int64_t)varint_get(&p, end) * q;
            int64_t life = live ? 0 : (int64_t)varint_get(&p, end) * q;
            ord += unzigzag(varint_get(&p, end));
            int64_t si = (int64_t)varint_get(&p, end);
            if (at >= t1)
                break;
            if (!live && at + life < t0)
                continue;
            if (gmt_grow_uninit((void **)&out->c, &out->cap, out->n, sizeof *out->c, 4096) != 0)
                return -1;
            out->c[out->n++] = (cand){si, live ? INT64_MAX : life, at, ord};
        }
    }
    return 0;
}

/* Entry i of a run in groups of `group` entries of nf varints: into v, each field's value (the
 * fields flagged in `delta`: zigzag deltas summed from the group's start). 0, or -1 past it. */
static int entry_at(const view_blocks_index *ix, const vb_run *r, uint64_t i, uint64_t group,
                    int nf, unsigned delta, int64_t *v) {
    if (i >= r->n || i / group >= r->ngroups)
        return -1;
    const uint8_t *p, *end;
    group_bytes(ix, r, i / group, &p, &end);
    for (int j = 0; j < nf; j++)
        v[j] = 0;
    for (uint64_t e = 0; e <= i % group; e++)
        for (int j = 0; j < nf; j++) {
            uint64_t x = varint_get(&p, end);
            v[j] = delta >> j & 1 ? v[j] + unzigzag(x) : (int64_t)x;
        }
    return 0;
}

/* A candidate's block: its details and its shape decoded. */
static view_block details(const view_blocks_index *ix, const vb_device *d, const cand *c) {
    const int64_t *sizes = (const int64_t *)(ix->map + d->sizes_off);
    view_block b = {0};
    int64_t v[3], s[6];
    if (c->ord < 0 || entry_at(ix, &d->details, (uint64_t)c->ord, VB_DGROUP, 3, 1u, v) != 0 ||
        v[2] < 0 || entry_at(ix, &d->shapes, (uint64_t)v[2], VB_SGROUP, 6, 1u, s) != 0)
        return b;
    b.alloc_id = v[0];
    b.addr = s[0];
    b.size = c->sidx < d->nsizes ? sizes[c->sidx] : 0;
    b.requested = s[2] ? b.size - unzigzag((uint64_t)s[2] - 1) : -1;
    b.alloc_ts = c->lo;
    b.free_ts = c->life == INT64_MAX ? VIEW_BLOCK_LIVE : c->lo + c->life;
    b.free_event_id = v[1] ? v[0] + unzigzag((uint64_t)v[1] - 1) : -1;
    b.stream = unzigzag((uint64_t)s[3]);
    b.stack_id = unzigzag((uint64_t)s[4]);
    b.segment_id = unzigzag((uint64_t)s[5]);
    return b;
}

int view_blocks(view_blocks_index *ix, int device, int64_t t0, int64_t t1, size_t k,
                view_blocks_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (k > VIEW_BLOCKS_MAX)
        k = VIEW_BLOCKS_MAX;
    const vb_device *d = device_of(ix, device);
    totals(ix, d, t0, t1, &out->window_blocks, &out->window_bytes);
    if (!d || t1 <= t0 || !out->window_blocks || !k)
        goto done;
    /* Tier by tier (ranks in tiers of doubling width), every level of each: once K are in
     * hand, every block of the later tiers ranks below them. */
    const vb_run *runs = (const vb_run *)(ix->map + d->runs_off);
    int levels = (int)ix->h->levels;
    cands c = {NULL, 0, 0};
    for (int64_t t = 0; t < d->ntiers && c.n < k; t++)
        for (int l = 0; l <= levels; l++) {
            const vb_run *r = &runs[t * (levels + 1) + l];
            if (!r->n)
                continue;
            out->bands++;
            if (read_run(ix, r, d->quantum, l, t0, t1, &c) != 0) {
                free(c.c);
                snprintf(err, errlen, "view index: out of memory");
                return -1;
            }
        }
    assert(c.n <= (size_t)out->window_blocks);
    if (c.n) /* c.c is NULL when nothing was read: qsort's argument must not be */
        qsort(c.c, c.n, sizeof *c.c, by_rank);
    out->n = c.n < k ? c.n : k;
    out->blocks = malloc((out->n ? out->n : 1) * sizeof *out->blocks);
    if (!out->blocks) {
        free(c.c);
        out->n = 0;
        snprintf(err, errlen, "view index: out of memory");
        return -1;
    }
    for (size_t i = 0; i < out->n; i++)
        out->blocks[i] = details(ix, d, &c.c[i]);
    free(c.c);
done:
    out->rest_blocks = out->window_blocks - (int64_t)out->n;
    out->rest_bytes = out->window_bytes;
    for (size_t i = 0; i < out->n; i++)
        out->rest_bytes -= out->blocks[i].size;
    return 0;
}

void view_blocks_free(view_blocks_result *out) {
    free(out->blocks);
    out->blocks = NULL;
    out->n = 0;
}
