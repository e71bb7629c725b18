/* block_sweep.h — a device's block allocations and the frees that end them,
 * in event order: the pass that growth (analysis.c) and the timeline's
 * stacked sites (plots.c) both make over the events.
 *
 * "Blocks" are what the program was handed: allocator blocks, and segments
 * nobody sub-allocates (a plain cudaMalloc), which are their own block
 * (SQL_IS_BLOCK). A free carries its allocation's stack and stream, so a
 * consumer can keep live bytes per site or stream without a lookup. */
#ifndef GMT_BLOCK_SWEEP_H
#define GMT_BLOCK_SWEEP_H

#include <sqlite3.h>
#include <stdint.h>

/* SQL: the event_rows row `alias` describes memory handed to the program. */
#define SQL_IS_BLOCK(alias)                                                                        \
    "(" alias ".level = {level:block} OR " alias                                                   \
    ".event_id IN (SELECT segment_id FROM segments WHERE whole_block = 1))"

typedef struct block_change {
    int64_t event_id;
    int is_alloc;      /* 1: the block begins (alloc or map); 0: its free or unmap */
    int64_t size;      /* the block's bytes (a free: its alloc's) */
    int64_t requested; /* bytes the allocation asked for (coalesce(requested_size, size)) */
    int64_t stack_id;  /* the allocation's stack; 0: none */
    int64_t stream;    /* the allocation's stream */
    int64_t alloc_id;  /* the allocation's event id (an alloc: its own) */
} block_change;

typedef struct block_sweep block_sweep;

struct addr_map;

/* The segments that are their own block (whole_block = 1: a plain cudaMalloc), by segment id
 * (= the event id that made it), into `out` (value 1): what SQL_IS_BLOCK's subquery asks, for
 * a pass that reads the events itself. 0, or -1 on an error. */
int block_sweep_whole_segments(sqlite3 *db, struct addr_map *out);

/* The device-memory block changes of `device` with event_id <= `to`. Returns
 * the sweep (block_sweep_close frees it) or NULL when the query fails. */
block_sweep *block_sweep_open(sqlite3 *db, int device, int64_t to);
/* The next change: 1, or 0 at the end (or on an error). */
int block_sweep_next(block_sweep *s, block_change *c);
void block_sweep_close(block_sweep *s);

#endif
