/* view_stacks.h — `memanalyze view`'s timeline stacked: per bucket of view_timeline.h's grid,
 * the live block bytes of each of the top series (by site, category, stream or size class) at
 * the moment of the bucket's highest allocated bytes, so the stack's top is the bucket's max
 * allocated exactly (Perfetto's counter mipmap keeps the max; a stack sampled anywhere else would
 * fall short of it at every spike).
 *
 * How: one forward pass (base/event_scan.h) over the rows from the first one to the last one
 * the window holds, keeping the live blocks (as query/block_sweep.c does) and each series' live
 * bytes; a bucket takes the series at its first row whose allocated_bytes equals the bucket's
 * max (view_timeline's answer), an empty bucket the state carried into it. The live set at the
 * window's start is itself such a pass (layout.h's cost: the rows before it), unless the
 * connection has a layout index (layout_index.h): then the pass starts from the checkpoint's
 * live blocks nearest before the window's first row (and the whole-block segments live then),
 * where the layouts' live blocks are the sweep's (layout_blocks_are_sweeps); `seeded_at` says
 * so. The replay's site_buckets are cut on timeline_buckets' grid, not this one, and hold sites
 * only, so they cannot answer a bucket of this grid exactly.
 * Cost: ~the rows up to the window's end, or with the index the window's own rows and the
 * checkpoint's blocks; beyond VIEW_STACKS_MAX_ROWS rows the answer is refused (`refused` set,
 * no series): the page says so and draws the line alone.
 * Measured on a 1 M-event synth trace (2 shared, loaded cores): the whole run 50-60 ms by size
 * or stream, ~90 ms by site, ~150 ms by category (block_categories read through SQL beside the
 * pass, in alloc_id order, as the allocs come); /api/stacks' p95 over 200 random windows
 * 70-190 ms by site, stream and size, 115-300 ms by category.
 *
 * Wide windows (every bucket a whole number of series_deltas' buckets, ~512 events each) are
 * answered from the replay's stored vectors instead (schema.sql: series_levels, series_deltas):
 * each bucket shows the vector at its max_allocated_event_id (an empty one the vector after the
 * last row before it) — where the buckets are whole series_levels' ones (~4096 events) one point
 * read each, else the chain of deltas read from the whole vector at or before the first bucket
 * (~ nbuckets range reads of a few rows) — no pass; `from_levels` says which. A vector names its 64
 * largest series and sums the rest, so a series named in the answer but below the 64th of a
 * bucket is counted in "others" there: at most `inexact_bytes` (0: every value exact); the sum
 * of a bucket is exact either way (by category: but for a segment counted as one block and
 * later found to hold blocks, which the categories never count, as category_levels.h says). Sites,
 * streams and size classes then follow the replay as it went (a segment counted as one block until
 * a block lands in it, as allocated_bytes does), where the pass counts such a segment never.
 *
 * Size classes: gmt_vocab.h's SIZE_CLASS_LIST. */
#ifndef GMT_VIEW_STACKS_H
#define GMT_VIEW_STACKS_H

#include "gmt_vocab.h"
#include "view_timeline.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* The most series one answer names (then one "other" for the rest). */
#define VIEW_STACKS_MAX_SERIES 12
/* The most event rows one answer reads (50-150 ns a row on one core, by category the most: 1-2 s);
 * a window ending later is refused. */
#define VIEW_STACKS_MAX_ROWS ((int64_t)16 * 1000 * 1000)

/* What the series are (gmt_vocab.h's STACK_BY_LIST): STACK_BY_SITE the allocation stack (labels:
 * stack_names.h's distinct labels), STACK_BY_CATEGORY block_categories (gmt_vocab.h's
 * categories), STACK_BY_STREAM the allocating stream, STACK_BY_SIZE the block's size class. */
typedef gmt_stack_by view_stack_by;

/* "site", "category", "stream", "size" → *by: 0, or -1 for another word. */
int view_stack_by_parse(const char *word, view_stack_by *by);
const char *view_stack_by_name(view_stack_by by);

/* The series key of one block, as a stack answers it: its allocation stack id, its stream, its
 * size class, or its category stored in block_categories by its alloc id (a point lookup on
 * `categories`, category_stored_statement's; a snapshot's blocks from before its history, ids
 * <= 0, too), unknown when none is stored or `categories` is NULL; *failed set on a read
 * error. The seed of a stack's sweep and the segment map's colours (fact_json.h) both. */
int64_t view_stack_block_key(view_stack_by by, int64_t stack_id, int64_t stream, int64_t size,
                             sqlite3_stmt *categories, int64_t alloc_id, int *failed);

typedef struct view_stack_series {
    int64_t key; /* the stack id, gmt_category, stream or size class; -1: "other" */
    char label[192];
    unsigned colour;   /* 0xRRGGBB for a category; 0: the page picks one */
    int64_t max_bytes; /* its highest value over the answer's buckets */
} view_stack_series;

typedef struct view_stacks_result {
    view_timeline_result timeline; /* the grid and each bucket's min/max/last (view_timeline.h) */
    view_stack_by by;
    size_t series_count;       /* the top ones by max_bytes, then "other" when any is left */
    view_stack_series *series; /* series_count */
    int64_t *values;     /* timeline.n x series_count, bucket after bucket: bytes at its max */
    int64_t *at_event;   /* per bucket, the event id whose state it shows (0: none known) */
    int64_t rows_read;   /* event rows decoded */
    int refused;         /* 1: the window ends more than max_rows rows in: no series, no values */
    int64_t rows_needed; /* the rows it would have read */
    int64_t seeded_at;   /* > 0: the pass began after this event, from the layout index's
                            checkpoint (layout_index.h); 0: from the device's first row */
    size_t others;       /* the series "others" (the last, key -1) sums; 0: no "others" */
    int from_levels;     /* no pass (rows_read 0): 1 from series_levels, 2 from series_deltas; 0 */
    int64_t inexact_bytes; /* from the levels: the most a named series' value may be short of
                              its bytes in a bucket (counted in "others"); 0: exact */
} view_stacks_result;

/* The window [lo, hi) of `device` in at most nbuckets + 1 buckets (view_timeline's grid), its
 * top max_series series (1..VIEW_STACKS_MAX_SERIES) by `by`, refused above max_rows rows (0:
 * VIEW_STACKS_MAX_ROWS; the tests ask less). 0, or -1 with a one-line message
 * (view_timeline's, a database without block categories for STACK_BY_CATEGORY, a read error,
 * out of memory). A refused window is 0 with `refused` set. */
int view_stacks(sqlite3 *db, int device, int64_t lo, int64_t hi, size_t nbuckets, view_stack_by by,
                size_t max_series, int64_t max_rows, view_stacks_result *out, char *err,
                size_t errlen);

/* view_stacks by the pass over the events alone, never the stored vectors (the tests hold the
 * two answers to each other). */
int view_stacks_by_pass(sqlite3 *db, int device, int64_t lo, int64_t hi, size_t nbuckets,
                        view_stack_by by, size_t max_series, int64_t max_rows,
                        view_stacks_result *out, char *err, size_t errlen);

/* Folds the last named series into "others" (made of it when there is none): every bucket's sum
 * is unchanged, one series fewer named (an answer made to fit a size). 0, or -1 when no named
 * series is left. */
int view_stacks_fold_last(view_stacks_result *r);

void view_stacks_free(view_stacks_result *out);

#endif
