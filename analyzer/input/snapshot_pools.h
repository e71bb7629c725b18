/* snapshot_pools.h — which PyTorch memory pool an address of a snapshot belongs to.
 *
 * A snapshot names a segment's pool only in its final `segments` (segment_pool_id: (0, 0) is
 * the allocator's own pool, anything else a private pool: a CUDA graph's or a MemPool's); the
 * history's entries name none. A private segment of the final state was created at its last
 * segment_alloc (or segment_map) in the history, or before the history began when there is
 * none: from then on every block event inside it is that pool's. Earlier events at the same
 * addresses belonged to an older segment, whose pool the snapshot no longer says (taken as the
 * default pool), as are segments freed before the snapshot was taken. */
#ifndef GMT_SNAPSHOT_POOLS_H
#define GMT_SNAPSHOT_POOLS_H

#include "snapshot.h"

#include <stdint.h>

typedef struct snapshot_pools snapshot_pools;

/* The pool number the database keeps for segment_pool_id (a, b): a * 2^32 + b, never 0 for a
 * private pool; 0 for (0, 0). */
uint64_t snapshot_pool_number(int64_t a, int64_t b);

/* The private segments of `snap`, with when each began. NULL when out of memory; an empty
 * set (no private pool) is not NULL. */
snapshot_pools *snapshot_pools_build(const snapshot *snap);

/* The pool of `addr` on `device` at history entry `entry` of that device (-1: before the
 * history, the seed): a private pool's number, or 0 (the default pool, or not known). */
uint64_t snapshot_pools_at(const snapshot_pools *pools, int64_t device, uint64_t addr, long entry);

void snapshot_pools_free(snapshot_pools *pools);

#endif
