/* snapshot_pools.c — private pools of a snapshot's segments over its history (see
 * snapshot_pools.h). A sorted array of the final private segments; lookups by binary search.
 * Private segments are few (a CUDA graph's pool holds tens to hundreds). */
#include "snapshot_pools.h"

#include "torch_history.h"

#include <stdlib.h>

typedef struct pool_range {
    int64_t device;
    uint64_t addr, end, pool;
    long born_at; /* the history entry that created it; -1: before the history */
} pool_range;

struct snapshot_pools {
    pool_range *ranges; /* by (device, addr); they do not overlap on a device */
    size_t count;
};

uint64_t snapshot_pool_number(int64_t a, int64_t b) {
    if (a == 0 && b == 0)
        return 0;
    uint64_t n = ((uint64_t)a << 32) + (uint64_t)b;
    return n ? n : 1;
}

static int by_device_addr(const void *x, const void *y) {
    const pool_range *a = x, *b = y;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The range holding addr on device, or NULL. */
static pool_range *range_at(const snapshot_pools *p, int64_t device, uint64_t addr) {
    size_t lo = 0, hi = p->count; /* the first range past (device, addr) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const pool_range *r = &p->ranges[mid];
        if (r->device < device || (r->device == device && r->addr <= addr))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    pool_range *r = &p->ranges[lo - 1];
    return r->device == device && addr < r->end ? r : NULL;
}

snapshot_pools *snapshot_pools_build(const snapshot *snap) {
    snapshot_pools *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < snap->segment_count; i++)
        n += snapshot_pool_number(snap->segments[i].pool_id[0], snap->segments[i].pool_id[1]) != 0;
    if (!n)
        return p;
    p->ranges = malloc(n * sizeof *p->ranges);
    if (!p->ranges) {
        free(p);
        return NULL;
    }
    for (size_t i = 0; i < snap->segment_count; i++) {
        const snapshot_segment *s = &snap->segments[i];
        uint64_t pool = snapshot_pool_number(s->pool_id[0], s->pool_id[1]);
        if (pool)
            p->ranges[p->count++] =
                (pool_range){s->device, s->address, s->address + s->total_size, pool, -1};
    }
    qsort(p->ranges, p->count, sizeof *p->ranges, by_device_addr);
    for (size_t d = 0; d < snap->device_count; d++) {
        const snapshot_device *dev = &snap->devices[d];
        for (size_t i = 0; i < dev->entry_count; i++) {
            const snapshot_entry *e = &dev->entries[i];
            unsigned action = snapshot_kind(snap, e)->action;
            if (action != GMT_TORCH_SEGMENT_ALLOC && action != GMT_TORCH_SEGMENT_MAP)
                continue;
            pool_range *r = range_at(p, (int64_t)d, e->addr);
            if (r)
                r->born_at = (long)i; /* the last one wins: entries are in order */
        }
    }
    return p;
}

uint64_t snapshot_pools_at(const snapshot_pools *pools, int64_t device, uint64_t addr, long entry) {
    const pool_range *r = pools ? range_at(pools, device, addr) : NULL;
    return r && entry >= r->born_at ? r->pool : 0;
}

void snapshot_pools_free(snapshot_pools *pools) {
    if (!pools)
        return;
    free(pools->ranges);
    free(pools);
}
