/* layout.h — the segment layout of one device at an event id, rebuilt from
 * the database (stack names are in stack_names.h).
 *
 * The layout at event N (DESIGN.md "Time, steps and WHEN": the state after
 * event N) is what the replay's allocator model held then:
 *  - the segments live at N: segments rows with segment_id <= N and
 *    (free_event_id IS NULL OR free_event_id > N), device memory only;
 *  - the blocks live at N: block alloc rows with event_id <= N whose free
 *    row (op 'free', alloc_event_id = it) is absent or after N; pending-free
 *    when a free_requested row for it is <= N; a whole_block segment (a
 *    plain cudaMalloc) is itself one allocated block.
 * They are put into a caching-allocator model in apply mode (VMM ranges via
 * am_segment_map, so adjacent mapped ranges join into one expandable
 * segment as PyTorch shows them), and read back in address order: each
 * segment with blocks that tile it exactly, free gaps being inactive blocks.
 *
 * Cost: one pass over the rows with event_id <= N (the primary key range)
 * and a hash of the blocks live during the pass, so memory stays in the
 * order of the live blocks; the `allocations` view (a correlated lookup per
 * row) is not used. layout_build_many shares the pass between several
 * points. Nothing here prints. */
#ifndef GMT_LAYOUT_H
#define GMT_LAYOUT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum layout_state {
    LAYOUT_INACTIVE = 0,    /* free space inside a segment */
    LAYOUT_ALLOCATED = 1,   /* live */
    LAYOUT_PENDING_FREE = 2 /* freed by the program, a stream still uses it: live */
} layout_state;

/* PyTorch's snapshot names: "inactive", "active_allocated", "active_pending_free". */
const char *layout_state_name(layout_state state);

typedef struct layout_block {
    uint64_t addr, size;    /* size as the allocator accounts it */
    uint64_t requested;     /* what the program asked for; 0 for inactive blocks */
    uint64_t stream;        /* the allocating stream; the segment's for inactive blocks */
    int64_t alloc_event_id; /* its alloc row (a whole-block segment: the segment_id); 0: inactive */
    int64_t stack_id;       /* allocation stack; 0: none recorded or inactive */
    layout_state state;
} layout_block;

typedef struct layout_segment {
    uint64_t addr, size, stream;
    int64_t segment_id; /* its segments row; a joined expandable segment: the row of one range */
    int64_t stack_id;   /* segments.stack_id of that row; 0: none */
    int mapped;         /* a VMM (expandable) segment, possibly several mapped ranges */
    int whole_block;    /* a segment no allocator sub-allocates: one block */
    int64_t pool;       /* segments.pool: a private pool (a graph's, a MemPool's) as a * 2^32 + b
                           of its id (a, b); 0: the default pool */
    int small_pool;     /* in PyTorch's small pool, as the allocator model has it: an ordinary
                           segment of 2 MiB (kSmallBuffer) or less, an expandable one mapped in
                           pages of 2 MiB (model/alloc_model.h, am_segment_map) */
    size_t first_block, block_count; /* layout.blocks[first_block ..] tile it, by address */
    uint64_t allocated_bytes;        /* live blocks (allocated + pending-free) */
    uint64_t pending_bytes;          /* pending-free blocks */
    uint64_t requested_bytes;        /* live blocks' requested sizes */
    uint64_t largest_free_bytes;     /* the largest inactive block */
    uint64_t free_bytes;             /* its inactive blocks: size - allocated_bytes */
    uint64_t releasable_bytes;       /* what empty_cache() gives back (layout_releasable) */
    size_t live_blocks;              /* allocated + pending-free blocks */
    size_t gaps;                     /* inactive blocks: block_count - live_blocks */
} layout_segment;

/* A segments row live at the layout's event (one lifetime; several of them
 * form one expandable segment when their mapped ranges touch). */
typedef struct layout_lifetime {
    int64_t segment_id, stack_id;
    uint64_t addr, size;
    int mapped;
} layout_lifetime;

typedef struct layout {
    int device;
    int64_t event_id;
    layout_segment *segments; /* by address */
    size_t segment_count;
    layout_block *blocks; /* every segment's blocks, segment after segment */
    size_t block_count;
    layout_block *outside; /* live blocks that lie in no live segment (the replay warned) */
    size_t outside_count;
    layout_lifetime *lifetimes; /* by segment_id */
    size_t lifetime_count;
    /* sums over the layout; allocated/requested/live_blocks include `outside` */
    uint64_t reserved_bytes, allocated_bytes, pending_bytes, requested_bytes, largest_free_bytes;
    /* the free part of the segments, split (DESIGN.md "fragmentation"): releasable is what
     * empty_cache() returns, trapped the free bytes it cannot (they share a segment, or an
     * expandable segment's page, with live blocks); releasable + trapped = the segments'
     * size - their live blocks */
    uint64_t releasable_bytes, trapped_bytes;
    uint64_t free_bytes;    /* the segments' free part: releasable + trapped */
    uint64_t outside_bytes; /* the `outside` blocks' sizes */
    size_t live_blocks;
    size_t conflicts; /* rows that did not fit the layout (overlaps): left out */
} layout;

/* Rebuilds the layout of `device` after event `event_id`. Returns 0 and
 * *out (free with layout_free), or -1 with a one-line message. */
int layout_build(sqlite3 *db, int device, int64_t event_id, layout **out, char *err, size_t errlen);

/* The same for `count` event ids (any order, repeats allowed) in one pass
 * over the rows: out[i] is the layout at event_ids[i]. */
int layout_build_many(sqlite3 *db, int device, const int64_t *event_ids, size_t count, layout **out,
                      char *err, size_t errlen);

/* The same one pass, handing each layout to fn as soon as it is built (in
 * event order; `index` is its place in event_ids), so only one is alive at
 * a time: fn owns it (layout_free). fn returns 0, or -1 to stop the pass. */
typedef int (*layout_fn)(void *ctx, size_t index, layout *l);
int layout_build_each(sqlite3 *db, int device, const int64_t *event_ids, size_t count, layout_fn fn,
                      void *ctx, char *err, size_t errlen);

void layout_free(layout *l);

/* 1 when the replay never ended a block itself on this database (no double_alloc and no
 * segment_free_in_use warning): then a block live in the layouts' pass is one live in
 * block_sweep.h's and the other way round, every block ending with its own free; a layout's
 * live blocks (and the pass's, layout_pass.h) may then stand for the sweep's. 0 otherwise. */
int layout_blocks_are_sweeps(sqlite3 *db);

/* The page an expandable segment maps and unmaps: PyTorch's segment size of
 * its pool, 2 MiB (kSmallBuffer) in the small pool, 20 MiB (kLargeBuffer) in
 * the large one. */
/* What empty_cache() would give back of segment `s` (whose blocks are
 * l->blocks[s->first_block ..]): all of it when no block is live; for an
 * expandable segment, each page (of its pool's size) that lies entirely
 * inside free blocks; nothing else (PyTorch frees whole segments only). The
 * same rule as the model's running total (aml_releasable_of), which the
 * replay keeps in free_splits: the two agree at every moment. */
uint64_t layout_releasable(const layout *l, const layout_segment *s);

/* The timeline row of `device` at `event_id` (its row with the greatest
 * event_id <= event_id): the replay's totals. 0, or -1 when it has none. */
typedef struct layout_totals {
    int64_t allocated_bytes, requested_bytes, reserved_bytes, segments, largest_free_bytes;
    int64_t ts_ns;
} layout_totals;
int layout_timeline_at(sqlite3 *db, int device, int64_t event_id, layout_totals *out);

#endif
