/* site_stats.c — see site_stats.h. */
#include "site_stats.h"

#include "addr_map.h"
#include "gmt_grow.h"
#include "gmt_vocab.h"

#include <stdlib.h>
#include <string.h>

#define LARGEST 16

typedef struct site {
    uint32_t device;
    int64_t stack;
    int64_t live_bytes, live_blocks;
    int64_t peak_bytes, peak_blocks; /* valid when peak_version == device's version */
    uint64_t peak_version;
    int64_t group_peak_bytes; /* valid when group_version == the device's group_version */
    uint64_t group_version;
    int64_t step_live;  /* live bytes at the previous step end */
    int stepped;        /* has a step_live (seen at a step end) */
    int touched;        /* in the touched list (step ends) */
    int bucket_touched; /* in the bucket_touched list (bucket ends) */
    int64_t never_freed_count, never_freed_bytes;
    int64_t base_live; /* live bytes at the first step end (0: born after it) */
} site;

typedef struct big_alloc {
    int64_t alloc_id, size, stack;
} big_alloc;

struct site_stats {
    site *sites;
    size_t len, cap;
    addr_map index;    /* (device, stack) -> site */
    uint32_t *touched; /* sites changed since the last step end */
    size_t touched_len, touched_cap;
    uint32_t *bucket_touched; /* sites changed since their device's last bucket end */
    size_t bucket_len, bucket_cap;
    uint64_t version[GMT_MAX_DEVICES];
    /* the highest allocated bytes of the device's current bucket group, where it was
     * reached, and the version of that moment (the same lazy snapshot as the peak's) */
    uint64_t group_version[GMT_MAX_DEVICES];
    int64_t group_max[GMT_MAX_DEVICES], group_max_bucket[GMT_MAX_DEVICES];
    uint8_t group_started[GMT_MAX_DEVICES];
    big_alloc largest[GMT_MAX_DEVICES][LARGEST];
    size_t nlargest[GMT_MAX_DEVICES];
    int steps_seen;
};

site_stats *site_stats_new(void) { return calloc(1, sizeof(site_stats)); }

void site_stats_free(site_stats *s) {
    if (!s)
        return;
    free(s->sites);
    free(s->touched);
    free(s->bucket_touched);
    addr_map_free(&s->index);
    free(s);
}

static site *site_of(site_stats *s, uint32_t device, int64_t stack) {
    uint32_t *v = addr_map_get(&s->index, device, (uint64_t)stack);
    if (v)
        return &s->sites[*v];
    if (gmt_grow((void **)&s->sites, &s->cap, s->len, sizeof *s->sites) != 0)
        return NULL;
    if (addr_map_put(&s->index, device, (uint64_t)stack, (uint32_t)s->len) != 0)
        return NULL;
    site *x = &s->sites[s->len++];
    memset(x, 0, sizeof *x);
    x->device = device;
    x->stack = stack;
    x->peak_version = s->version[device];
    x->group_version = s->group_version[device]; /* 0 bytes at any earlier group max */
    return x;
}

int site_stats_change(site_stats *s, uint32_t device, int64_t stack, int64_t bytes,
                      int64_t blocks) {
    if (device >= GMT_MAX_DEVICES)
        return 0;
    site *x = site_of(s, device, stack);
    if (!x)
        return -1;
    if (x->peak_version != s->version[device]) { /* first change since a newer peak */
        x->peak_bytes = x->live_bytes;
        x->peak_blocks = x->live_blocks;
        x->peak_version = s->version[device];
    }
    if (x->group_version != s->group_version[device]) { /* first change since a group max */
        x->group_peak_bytes = x->live_bytes;
        x->group_version = s->group_version[device];
    }
    x->live_bytes += bytes;
    x->live_blocks += blocks;
    if (!x->bucket_touched) {
        if (gmt_grow((void **)&s->bucket_touched, &s->bucket_cap, s->bucket_len,
                     sizeof *s->bucket_touched) != 0)
            return -1;
        s->bucket_touched[s->bucket_len++] = (uint32_t)(x - s->sites);
        x->bucket_touched = 1;
    }
    if (!x->touched) {
        if (gmt_grow((void **)&s->touched, &s->touched_cap, s->touched_len, sizeof *s->touched) !=
            0)
            return -1;
        s->touched[s->touched_len++] = (uint32_t)(x - s->sites);
        x->touched = 1;
    }
    return 0;
}

void site_stats_new_peak(site_stats *s, uint32_t device) {
    if (device < GMT_MAX_DEVICES)
        s->version[device]++;
}

void site_stats_allocated(site_stats *s, uint32_t device, int64_t allocated, int64_t bucket) {
    if (device >= GMT_MAX_DEVICES)
        return;
    if (!s->group_started[device] || allocated > s->group_max[device]) {
        s->group_started[device] = 1;
        s->group_max[device] = allocated;
        s->group_max_bucket[device] = bucket;
        s->group_version[device]++;
    }
}

/* The value of a site at its device's last peak. */
static void at_peak(const site_stats *s, const site *x, int64_t *bytes, int64_t *blocks) {
    if (x->peak_version == s->version[x->device]) {
        *bytes = x->peak_bytes;
        *blocks = x->peak_blocks;
    } else { /* unchanged since the peak */
        *bytes = x->live_bytes;
        *blocks = x->live_blocks;
    }
}

void site_stats_alloc(site_stats *s, uint32_t device, int64_t alloc_id, int64_t size,
                      int64_t stack) {
    if (device >= GMT_MAX_DEVICES)
        return;
    big_alloc *l = s->largest[device];
    size_t *n = &s->nlargest[device];
    if (*n == LARGEST && size <= l[LARGEST - 1].size)
        return;
    size_t i = *n < LARGEST ? (*n)++ : LARGEST - 1;
    while (i > 0 && l[i - 1].size < size) { /* keep it sorted, largest first */
        l[i] = l[i - 1];
        i--;
    }
    l[i] = (big_alloc){alloc_id, size, stack};
}

int site_stats_step_end(site_stats *s, int64_t event_id, db_writer *db) {
    int first = !s->steps_seen++;
    for (size_t i = 0; i < s->touched_len; i++) {
        site *x = &s->sites[s->touched[i]];
        x->touched = 0;
        int64_t delta = x->live_bytes - x->step_live;
        x->step_live = x->live_bytes;
        if (first)
            x->base_live = x->live_bytes;
        x->stepped = 1;
        if (delta == 0 && !first)
            continue;
        if (delta == 0 && x->live_bytes == 0)
            continue;
        if (db_writer_site_step(db, x->device, x->stack, event_id, delta, x->live_bytes) != 0)
            return -1;
    }
    s->touched_len = 0;
    return 0;
}

int site_stats_bucket_end(site_stats *s, uint32_t device, int64_t bucket_ns, int64_t bucket,
                          db_writer *db) {
    size_t kept = 0;
    for (size_t i = 0; i < s->bucket_len; i++) {
        site *x = &s->sites[s->bucket_touched[i]];
        if (x->device != device) { /* another device's: stays for its bucket end */
            s->bucket_touched[kept++] = s->bucket_touched[i];
            continue;
        }
        x->bucket_touched = 0;
        int64_t at_max =
            x->group_version == s->group_version[device] ? x->group_peak_bytes : x->live_bytes;
        int64_t where = s->group_started[device] ? s->group_max_bucket[device] : bucket;
        if (db_writer_site_bucket(db, device, bucket_ns, where, x->stack, x->live_bytes, at_max) !=
            0)
            return -1;
    }
    s->bucket_len = kept;
    s->group_started[device] = 0;
    return 0;
}

int site_stats_top_growth(const site_stats *s, uint32_t device, int64_t *stack, int64_t *growth,
                          int64_t *live) {
    const site *best = NULL;
    for (size_t i = 0; s->steps_seen && i < s->len; i++) {
        const site *x = &s->sites[i];
        if (x->device == device && x->live_bytes - x->base_live > 0 &&
            (!best || x->live_bytes - x->base_live > best->live_bytes - best->base_live))
            best = x;
    }
    if (!best)
        return 0;
    *stack = best->stack;
    *growth = best->live_bytes - best->base_live;
    *live = best->live_bytes;
    return 1;
}

size_t site_stats_at_peak(const site_stats *s, uint32_t device, int64_t *stacks, int64_t *bytes,
                          size_t max) {
    size_t n = 0;
    for (size_t i = 0; max && i < s->len; i++) {
        const site *x = &s->sites[i];
        int64_t pb, pk;
        if (x->device != device)
            continue;
        at_peak(s, x, &pb, &pk);
        if (pb <= 0 ||
            (n == max && (pb < bytes[n - 1] || (pb == bytes[n - 1] && x->stack > stacks[n - 1]))))
            continue;
        size_t k = n < max ? n++ : n - 1; /* kept sorted: insert, the last one out when full */
        while (k > 0 && (bytes[k - 1] < pb || (bytes[k - 1] == pb && stacks[k - 1] > x->stack))) {
            bytes[k] = bytes[k - 1];
            stacks[k] = stacks[k - 1];
            k--;
        }
        bytes[k] = pb;
        stacks[k] = x->stack;
    }
    return n;
}

int site_stats_never_freed(site_stats *s, uint32_t device, int64_t stack, int64_t requested) {
    site *x = device < GMT_MAX_DEVICES ? site_of(s, device, stack) : NULL;
    if (!x)
        return device < GMT_MAX_DEVICES ? -1 : 0;
    x->never_freed_count++;
    x->never_freed_bytes += requested;
    return 0;
}

int site_stats_finish(site_stats *s, db_writer *db) {
    for (size_t i = 0; i < s->len; i++) {
        const site *x = &s->sites[i];
        int64_t pb, pk;
        at_peak(s, x, &pb, &pk);
        if (!pb && !x->live_bytes && !x->never_freed_count)
            continue;
        if (db_writer_site(db, x->device, x->stack, pb, pk, x->live_bytes, x->live_blocks,
                           x->never_freed_count, x->never_freed_bytes) != 0)
            return -1;
    }
    for (uint32_t d = 0; d < GMT_MAX_DEVICES; d++)
        for (size_t i = 0; i < s->nlargest[d]; i++) {
            const big_alloc *a = &s->largest[d][i];
            if (db_writer_largest(db, d, a->alloc_id, a->size, a->stack) != 0)
                return -1;
        }
    return 0;
}
