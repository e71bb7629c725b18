/* series_levels.h — the live block bytes of each series (allocation site, stream, size class)
 * at the highest moment of every bucket of one timeline level, kept during the replay and
 * written as series_levels (schema/schema.sql) for `memanalyze view`'s stacked timeline, whose
 * wide windows (every bucket of the answer a whole number of this level's buckets) must be
 * answered without a pass over their events.
 *
 * The level: timeline_levels' third (~4096 events a bucket on average, so 100 M events are
 * ~25 k buckets); its buckets are placed as timeline_levels places them. Per bucket the
 * vector at its max_allocated_event_id (the first of its events at its highest allocated
 * bytes), and, where the next bucket holds no event of the device (or it is the device's
 * last), the vector after its last event too (what an empty bucket carries). A vector is its
 * SERIES_LEVELS_TOP largest series by bytes (equal bytes: the lower key first) and one row for
 * the rest (key NULL, always written: an event with any row has that one).
 *
 * How, in O(1) per change: each series keeps its live bytes and, lazily, its value at the open
 * bucket's highest moment so far (a new max only bumps a version; a series saves its value
 * the first time it changes after it, as site_stats keeps its peak) and its value after the
 * previous row (so the bucket's end is known when the next row, the first of another bucket,
 * has already moved it). A bucket that ends walks the series that hold bytes (or did in it).
 *
 * The replay's own accounting: a segment counted as a whole block counts until it is found to
 * hold blocks (as allocated_bytes does), so each vector sums to allocated_bytes at its event.
 * Categories are known only after the replay: query/category_store.c adds their rows. */
#ifndef GMT_SERIES_LEVELS_H
#define GMT_SERIES_LEVELS_H

#include "db_writer.h"

#include <stdint.h>

#define SERIES_LEVELS_TOP 64  /* the series a vector names; the rest is one row */
#define SERIES_LEVELS_LEVEL 2 /* timeline_levels' level (0: the finest) the buckets are of */

typedef struct series_levels series_levels;

/* For buckets of width 2^shift on the timeline's axis. NULL: out of memory. */
series_levels *series_levels_new(int shift);
void series_levels_free(series_levels *s);

/* A block of `device` with `stack` (0: none), `stream` and `size` bytes begins (sign +1) or
 * ends (-1): its series' live bytes move. 0, or -1 out of memory. */
int series_levels_change(series_levels *s, uint32_t device, int64_t stack, int64_t stream,
                         int64_t size, int sign);

/* After each row of `device`: its event id, its place on the axis (timeline_levels' running
 * max) and allocated bytes then. A bucket it ends is written. 0, or -1 (out of memory, the
 * writer's error). */
int series_levels_row(series_levels *s, db_writer *db, uint32_t device, int64_t event_id,
                      int64_t place, int64_t allocated);

/* The device's last bucket written. 0 or -1. */
int series_levels_flush(series_levels *s, db_writer *db, uint32_t device);

/* The meta keys (series_level_ns, series_level_top). */
void series_levels_meta(const series_levels *s, db_writer *db);

#endif
