/* view_blocks.h — the facts behind `memanalyze view`'s allocations view: the largest blocks of a
 * device live in a window, as many as the viewer draws (top K), from an index on lifetimes, in
 * milliseconds at any zoom; how many blocks and bytes the window holds besides them.
 *
 * A block is a row of the `allocations` view of kind 'device' (a block alloc, or a segment
 * counted as one block), its lifetime [alloc_ts_ns, free_ts_ns] (free_ts_ns raised to
 * alloc_ts_ns where threads' records put the free first; never freed: to the end of time). It is
 * in the window [t0, t1) when alloc_ts_ns < t1 and it was not freed before t0 (free_ts_ns >= t0
 * or never). On an input without times (meta timestamps = 0) the axis is the event id: alloc_id
 * and free_event_id.
 *
 * Which blocks come first: the largest, and among blocks of one size the longest-lived (never
 * freed the longest), then the earliest allocated, then alloc_id. The page draws each block as
 * a rectangle (x: its lifetime in the window, y: its address), so of equal sizes the one that
 * spans the window is what a user should see first, not the first steps' short-lived blocks
 * that an earliest-first tie-break drew in a whole-run view. The rank is the block's own (not
 * the window's), so it can be indexed.
 *
 * The index is not in the cache database (never written in place, input.c): it is a file of its
 * own, the sidecar, built from the database on first use (one pass over the event store) under
 * a temporary name and renamed into place, then mapped read-only: opening it reads a header.
 * Its layout (view_blocks_file.h): per device the blocks by rank in tiers of doubling width,
 * each tier by lifetime levels (widths 8x apart), each (tier, level) a run of varint-packed
 * entries in alloc-time order with a header per 256 entries; running counts and bytes by alloc
 * time and by free time (a window's blocks are A(t1) - F(t0): two binary searches); the rest of
 * each block (ids by alloc_id; address, stream, stack, segment as an index into the device's
 * distinct ones) decoded only for the answer. A
 * query reads the tiers from the best down, at each level the entries born in [t0 - width, t1),
 * until K are found: ~20 B per block on disk. A sidecar made for another database (meta's
 * input_path, input_size, input_mtime_ns, last_ts_ns, recorded_events, timestamps or
 * analyzer_version differ), or of another layout, is built again. */
#ifndef GMT_VIEW_BLOCKS_H
#define GMT_VIEW_BLOCKS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* free_ts of a block never freed */
#define VIEW_BLOCK_LIVE INT64_MAX
/* The most blocks one answer holds */
#define VIEW_BLOCKS_MAX 10000

typedef struct view_block {
    int64_t alloc_id;      /* allocations.alloc_id */
    int64_t addr, size;    /* start address, bytes */
    int64_t requested;     /* bytes asked for; -1: not reported */
    int64_t alloc_ts;      /* on the axis: alloc_ts_ns, or alloc_id */
    int64_t free_ts;       /* free_ts_ns (or free_event_id), VIEW_BLOCK_LIVE: never freed */
    int64_t free_event_id; /* -1: never freed */
    int64_t stream;        /* -1: unknown */
    int64_t stack_id;      /* allocation stack; -1: none */
    int64_t segment_id;    /* -1: unknown */
} view_block;

typedef struct view_blocks_result {
    view_block *blocks; /* ranked (above): largest first, then the longest-lived, ... */
    size_t n;
    int64_t window_blocks, window_bytes; /* every block in the window */
    int64_t rest_blocks, rest_bytes;     /* those not in `blocks` */
    int64_t bands;                       /* runs of the index it read */
} view_blocks_result;

typedef struct view_blocks_index view_blocks_index;

/* The sidecar at `path` for the open database `db`: opened, or built first (when missing or
 * made for another database). `built` (may be NULL): set to 1 when it was built now. NULL with a
 * one-line message on an error. */
view_blocks_index *view_blocks_index_open(sqlite3 *db, const char *path, int *built, char *err,
                                          size_t errlen);
void view_blocks_index_close(view_blocks_index *ix);

/* The largest k (clamped to 0..VIEW_BLOCKS_MAX) blocks of `device` in [t0, t1), and the
 * window's totals. 0, or -1 with a one-line message. */
int view_blocks(view_blocks_index *ix, int device, int64_t t0, int64_t t1, size_t k,
                view_blocks_result *out, char *err, size_t errlen);

/* How many blocks of `device` are in [t0, t1), and their bytes: two lookups. 0 or -1. */
int view_block_count_in_window(view_blocks_index *ix, int device, int64_t t0, int64_t t1,
                               int64_t *blocks, int64_t *bytes, char *err, size_t errlen);

void view_blocks_free(view_blocks_result *out);

#endif
