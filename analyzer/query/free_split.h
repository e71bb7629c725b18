/* free_split.h — the free part of reserved memory, split the way a PyTorch
 * user reads it (DESIGN.md "fragmentation"):
 *
 *   releasable  whole free segments, and the pages of an expandable segment
 *               that lie entirely inside free blocks: what
 *               torch.cuda.empty_cache() gives back. A warm cache, not
 *               fragmentation.
 *   trapped     the rest of the free bytes: inside segments (or pages) that
 *               also hold live blocks. For ordinary segments this is
 *               PyTorch's inactive_split_bytes ("non-releasable"); PyTorch
 *               leaves expandable segments out of that counter, we do not.
 *
 * The trapped ratio (trapped / reserved), rated with the fragmentation bands,
 * is the fragmentation verdict. The replay keeps it at step ends, each
 * device's peak allocated, its last event and OOMs (free_splits, from the
 * allocator model's running totals); any other moment is a segment layout
 * (layout.h), one pass over the events up to the last such moment. The two
 * agree byte for byte (tests/test_snapshot_replay.py). */
#ifndef GMT_FREE_SPLIT_H
#define GMT_FREE_SPLIT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct free_split {
    int64_t event_id;
    int64_t reserved, allocated; /* of the layout: segments and the live blocks in them */
    int64_t releasable, trapped; /* releasable + trapped = reserved - allocated */
} free_split;

/* The split at each of `n` event ids (any order). 0, or -1 with a one-line
 * message in err. */
int free_split_at(sqlite3 *db, int device, const int64_t *event_ids, size_t n, free_split *out,
                  char *err, size_t errlen);

/* trapped / reserved; 0 when nothing is reserved. */
double free_split_trapped_ratio(const free_split *f);

#endif
