/* site_levels.c — the blocks each stack allocated per chunk of event ids (site_levels.h): one
 * open chunk per level and device, folded upward as it ends, as replay_levels.c folds the
 * timeline's buckets. */
#include "site_levels.h"

#include "addr_map.h"
#include "gmt_assert.h"
#include "gmt_grow.h"
#include "gmt_vocab.h"

#include <stdlib.h>

typedef struct site_count {
    int64_t stack, blocks, bytes;
} site_count;

/* The open chunk of one level: its stacks' counts so far. */
typedef struct open_chunk {
    int64_t chunk;
    site_count *sites;
    size_t n, cap;
    addr_map index; /* stack -> index + 1 in sites */
} open_chunk;

typedef struct device_levels {
    int count; /* levels in use: 1.. SITE_LEVELS_MAX */
    open_chunk level[SITE_LEVELS_MAX];
} device_levels;

struct site_levels {
    device_levels *dev[GMT_MAX_DEVICES];
};

static int64_t width_of(int k) { return (int64_t)1 << (SITE_LEVEL_SHIFT + 3 * k); }

site_levels *site_levels_new(void) { return calloc(1, sizeof(site_levels)); }

void site_levels_free(site_levels *s) {
    if (!s)
        return;
    for (size_t i = 0; i < GMT_MAX_DEVICES; i++) {
        device_levels *d = s->dev[i];
        for (int k = 0; d && k < SITE_LEVELS_MAX; k++) {
            free(d->level[k].sites);
            addr_map_free(&d->level[k].index);
        }
        free(d);
    }
    free(s);
}

/* Adds (blocks, bytes) of `stack` to the open chunk c. 0 or -1 (out of memory). */
static int accumulate(open_chunk *c, int64_t stack, int64_t blocks, int64_t bytes) {
    uint32_t *at = addr_map_get(&c->index, 0, (uint64_t)stack);
    if (!at) {
        if (gmt_grow_uninit((void **)&c->sites, &c->cap, c->n, sizeof *c->sites, 64) != 0)
            return -1;
        c->sites[c->n++] = (site_count){stack, 0, 0};
        if (addr_map_put(&c->index, 0, (uint64_t)stack, (uint32_t)c->n) != 0)
            return -1;
        at = addr_map_get(&c->index, 0, (uint64_t)stack);
    }
    c->sites[*at - 1].blocks += blocks;
    c->sites[*at - 1].bytes += bytes;
    return 0;
}

static int add(db_writer *db, uint32_t device, device_levels *d, int k, int64_t chunk,
               int64_t stack, int64_t blocks, int64_t bytes);

/* Level k's open chunk ends: its rows written, its counts folded into level k + 1 (added first
 * when k is the top and `grow`), and the level emptied. 0 or -1. */
static int end_chunk(db_writer *db, uint32_t device, device_levels *d, int k, int grow) {
    open_chunk *c = &d->level[k];
    if (grow && k + 1 == d->count && d->count < SITE_LEVELS_MAX) {
        d->count++; /* the blocks now span two chunks of the top level: one above holds both */
        d->level[k + 1].chunk = c->chunk >> 3;
    }
    for (size_t i = 0; i < c->n; i++) {
        const site_count *x = &c->sites[i];
        if (x->blocks == 0 && x->bytes == 0)
            continue; /* a segment counted and taken back in the chunk */
        if (db_writer_site_level(db, device, width_of(k), c->chunk, x->stack, x->blocks,
                                 x->bytes) != 0 ||
            (k + 1 < d->count &&
             add(db, device, d, k + 1, c->chunk >> 3, x->stack, x->blocks, x->bytes) != 0))
            return -1;
    }
    for (size_t i = 0; i < c->n; i++)
        addr_map_remove(&c->index, 0, (uint64_t)c->sites[i].stack);
    (void)GMT_NEVER(c->index.count != 0); /* each stack once in sites */
    c->n = 0;
    return 0;
}

/* Counts (blocks, bytes) of `stack` in chunk `chunk` of level k: in the open chunk, after
 * ending it when `chunk` is a later one; a chunk already written gets a correction row, and
 * the level above, which holds its counts, is corrected the same way. 0 or -1. */
static int add(db_writer *db, uint32_t device, device_levels *d, int k, int64_t chunk,
               int64_t stack, int64_t blocks, int64_t bytes) {
    open_chunk *c = &d->level[k];
    if (chunk > c->chunk) {
        if (c->n && end_chunk(db, device, d, k, 1) != 0)
            return -1;
        c->chunk = chunk;
    }
    if (chunk == c->chunk)
        return accumulate(c, stack, blocks, bytes);
    if (db_writer_site_level(db, device, width_of(k), chunk, stack, blocks, bytes) != 0)
        return -1;
    return k + 1 < d->count ? add(db, device, d, k + 1, chunk >> 3, stack, blocks, bytes) : 0;
}

int site_levels_count(site_levels *s, db_writer *db, uint32_t device, int64_t alloc_id,
                      int64_t stack, int64_t size, int sign) {
    if (device >= GMT_MAX_DEVICES)
        return 0;
    device_levels *d = s->dev[device];
    if (!d) {
        if (!(d = s->dev[device] = calloc(1, sizeof *d)))
            return -1;
        d->count = 1;
    }
    /* The seed's ids (<= 0) go into chunk 0, whose events the reader always reads itself (it
     * takes no chunk that holds ids below the finest width). */
    int64_t chunk = alloc_id > 0 ? alloc_id >> SITE_LEVEL_SHIFT : 0;
    return add(db, device, d, 0, chunk, stack, sign, sign * size);
}

int site_levels_finish(site_levels *s, db_writer *db) {
    int levels = 1;
    for (size_t i = 0; i < GMT_MAX_DEVICES; i++)
        if (s->dev[i] && s->dev[i]->count > levels)
            levels = s->dev[i]->count;
    /* every device with every level, so a reader may take a chunk of any level for any device */
    for (size_t i = 0; i < GMT_MAX_DEVICES; i++) {
        device_levels *d = s->dev[i];
        if (!d)
            continue;
        d->count = levels;
        for (int k = 0; k < levels; k++) /* each folded into the next before it ends */
            if (end_chunk(db, (uint32_t)i, d, k, 0) != 0)
                return -1;
    }
    if (db_writer_meta_int(db, "site_level_events", width_of(0)) != 0 ||
        db_writer_meta_int(db, "site_levels", levels) != 0)
        return -1;
    return 0;
}
