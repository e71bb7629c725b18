/* series_levels.h — the live block bytes of each series (allocation site, stream, size class)
 * at the highest moment of every bucket of two timeline levels, kept during the replay and
 * written as series_levels and series_deltas (schema/schema.sql) for `memanalyze view`'s
 * stacked timeline, whose wide windows (every bucket of the answer a whole number of a level's
 * buckets) must be answered without a pass over their events.
 *
 * The levels: timeline_levels' second (fine, ~512 events a bucket on average: series_deltas,
 * a chain of changes) and third (coarse, ~4096: series_levels, whole vectors, where a read of
 * the chain starts); their buckets are placed as timeline_levels places them. Per fine bucket
 * the vector at its max_allocated_event_id (the first of its events at its highest allocated
 * bytes), and, where the next bucket holds no event of the device (or it is the device's
 * last), the vector after its last event too (what an empty bucket carries). A vector is its
 * SERIES_VECTOR_TOP largest series by bytes (equal bytes: the lower key first) and one row for
 * the rest (key NULL, always written: an event with any row has that one). A coarse bucket's
 * vectors are copies of its fine buckets': the one whose max is the highest (the first of
 * equal ones), and the last one's after its last event.
 *
 * How, in O(1) per change: each series keeps its live bytes and, lazily, its value at the open
 * bucket's highest moment so far (a new max only bumps a version; a series saves its value
 * the first time it changes after it, as site_stats keeps its peak) and its value after the
 * previous row (so the bucket's end is known when the next row, the first of another bucket,
 * has already moved it). A fine bucket that ends walks the series that hold bytes (or did in
 * it); each series remembers its bytes in the chain's previous vector, so a delta is found in
 * O(SERIES_VECTOR_TOP).
 *
 * The replay's own accounting: a segment counted as a whole block counts until it is found to
 * hold blocks (as allocated_bytes does), so each vector sums to allocated_bytes at its event.
 * Categories are known only after the replay: query/category_levels.c adds their rows. */
#ifndef GMT_SERIES_LEVELS_H
#define GMT_SERIES_LEVELS_H

#include "db_writer.h"
#include "gmt_vocab.h"

#include <stdint.h>

#define SERIES_DELTAS_LEVEL 1 /* timeline_levels' level (0: the finest) of the chain's buckets */
#define SERIES_LEVELS_LEVEL (SERIES_DELTAS_LEVEL + 1) /* and of series_levels' */

typedef struct series_levels series_levels;

/* For fine buckets of width 2^shift on the timeline's axis (coarse ones 8x that: the
 * timeline's levels are 8x apart). NULL: out of memory. */
series_levels *series_levels_new(int shift);
void series_levels_free(series_levels *s);

/* A block of `device` with `stack` (0: none), `stream` and `size` bytes begins (sign +1) or
 * ends (-1): its series' live bytes move. 0, or -1 out of memory. */
int series_levels_change(series_levels *s, uint32_t device, int64_t stack, int64_t stream,
                         int64_t size, int sign);

/* After each row of `device`: its event id, its place on the axis (timeline_levels' running
 * max) and allocated bytes then. The buckets it ends are written. 0, or -1 (out of memory, the
 * writer's error). */
int series_levels_row(series_levels *s, db_writer *db, uint32_t device, int64_t event_id,
                      int64_t place, int64_t allocated);

/* The device's last buckets written. 0 or -1. */
int series_levels_flush(series_levels *s, db_writer *db, uint32_t device);

/* The meta keys (series_level_ns, series_delta_ns, series_level_top). */
void series_levels_meta(const series_levels *s, db_writer *db);

#endif
