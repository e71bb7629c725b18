/* view_stacks_internal.h — what view_stacks.c's pass over the events and view_stacks_levels.c's
 * answer from series_levels share: the state of the series (dense, by first appearance) and
 * each bucket's copy of them, and the choice of the top ones after either. Not for other
 * modules: view_stacks.h is the interface. */
#ifndef GMT_VIEW_STACKS_INTERNAL_H
#define GMT_VIEW_STACKS_INTERNAL_H

#include "addr_map.h"
#include "gmt_slots.h"
#include "view_stacks.h"

#include <sqlite3.h>
#include <stdint.h>

typedef struct live_block {
    int64_t size;
    uint32_t series;
} live_block;

typedef struct snap_entry {
    uint32_t series;
    int64_t bytes;
} snap_entry;

/* No series is the rest (rest_series' value when there is none). */
#define VIEW_STACKS_NO_REST UINT32_MAX

/* The state: the series seen, the live blocks (the pass), the copies. */
typedef struct sweep {
    view_stack_by by;
    addr_map series_of;  /* key -> index + 1 */
    int64_t *keys, *cur; /* per series: its key, its live bytes now */
    size_t nseries, cap_keys, cap_cur;
    uint32_t rest_series; /* the series that holds the rest of a stored vector (never named) */
    addr_map whole;       /* whole-block segments (block_sweep_whole_segments) */
    sqlite3_stmt *cat_st; /* block_categories from cat_id on (STACK_BY_CATEGORY) */
    int64_t cat_id, cat;
    int cat_failed;
    addr_map live;    /* alloc id -> slot + 1 in blocks */
    gmt_slots blocks; /* live_block */
    snap_entry *snap;
    size_t snap_len, snap_cap;
    size_t *snap_off, *snap_cnt; /* per bucket */
    unsigned char *taken;        /* per bucket: its max's row was seen */
    int64_t *floor_bytes;        /* per bucket, from the levels: its vector's smallest named series
                                    when it has a rest (a series not in it may hold that much); 0 */
} sweep;

/* The index of `key`'s series, made when new. 0, or -1 out of memory. */
int view_stacks_series_index(sweep *s, int64_t key, uint32_t *idx);

/* After the copies: the series ranked by their highest value, the top max_series named, the
 * rest (and rest_series) one "others"; each bucket's copy spread into out->values. 0 or -1. */
int view_stacks_choose(sqlite3 *db, sweep *s, size_t max_series, view_stacks_result *out);

/* The answer from series_levels (view_stacks.h) into s's copies: 1, 0 when the database cannot
 * give it (no rows for this `by`, buckets finer than the level's, a vector missing: the pass
 * answers), -1 with a message. On 0 and -1, s and out->at_event may hold a part: the caller
 * frees them (sweep's free, view_stacks_free). */
int view_stacks_from_levels(sqlite3 *db, int device, sweep *s, view_stacks_result *out, char *err,
                            size_t errlen);

/* After view_stacks_choose on an answer from the levels: out->inexact_bytes. */
void view_stacks_levels_bound(const sweep *s, view_stacks_result *out);

#endif
