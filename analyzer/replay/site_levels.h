/* site_levels.h — the blocks each allocation stack allocated per chunk of event ids, kept
 * during the replay and written as site_levels (schema/schema.sql) for `memanalyze view`'s
 * window summary, whose sites (bytes allocated in a window per stack) must be answered in
 * milliseconds for a window of any width.
 *
 * The replay reports each block as its life begins (an allocator block, or a segment nobody
 * sub-allocates yet: the blocks of the `allocations` view), at its alloc event id, and takes a
 * segment back when it turns out to hold blocks after all (a block lands in it, or PyTorch
 * reports the same memory). Chunks are widths of 2^SITE_LEVEL_SHIFT event ids, each level 8x
 * the one below, aligned to 0, as timeline_levels' are: the module keeps one open chunk per
 * level and device (a map of its stacks); a count goes into the finest open chunk, a chunk
 * that ends is written and folded into the level above, and a level is added when the one
 * below it ends a chunk (so the top one holds every block). A segment taken back after its
 * chunk was written is a correction row, added to the row already written (db_writer's upsert):
 * rare, since PyTorch's report of a segment follows the driver's at once. O(1) per block;
 * memory: the stacks of the open chunks. */
#ifndef GMT_SITE_LEVELS_H
#define GMT_SITE_LEVELS_H

#include "db_writer.h"

#include <stdint.h>

#define SITE_LEVEL_SHIFT 14 /* the finest chunk: 16384 event ids */
#define SITE_LEVELS_MAX 16

typedef struct site_levels site_levels;

site_levels *site_levels_new(void);
void site_levels_free(site_levels *s);

/* A block of `device` allocated at event `alloc_id` with `stack` (0: none) and `size` bytes
 * counts (sign +1), or is taken back (-1). 0, or -1 (out of memory, the writer's error). */
int site_levels_count(site_levels *s, db_writer *db, uint32_t device, int64_t alloc_id,
                      int64_t stack, int64_t size, int sign);

/* The end: every open chunk written, and the meta keys (site_level_events, site_levels).
 * 0 or -1. */
int site_levels_finish(site_levels *s, db_writer *db);

#endif
