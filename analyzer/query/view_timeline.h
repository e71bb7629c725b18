/* view_timeline.h — the facts behind `memanalyze view`'s timeline: a device's allocated and
 * reserved bytes over a window, in buckets, each with the exact min, max and last value of its
 * events, at any zoom, in milliseconds on a 100 M-event run.
 *
 * The buckets are cut on a power-of-two grid aligned to 0 (as Perfetto's counter mipmap cuts
 * them): their width is the smallest power of two that gives at most `nbuckets` buckets over
 * the window, the first starts at or before `lo` and the last ends at or after `hi`, so panning
 * keeps the buckets where they were. Then every bucket is a whole number of buckets of one level
 * of the replay's timeline_levels (schema.sql) and is answered from those rows alone; a bucket
 * finer than the finest level reads the window's events (~64 per finest bucket on average).
 *
 * The axis: ts_ns, or the event id for an input without times (meta timestamps = 0: a PyTorch
 * <= 2.1 snapshot); `event_axis` in the answer says which, and `lo`/`hi` are on it. An event's
 * place on the axis is the running max, over its device's event_rows rows in event_id order, of
 * max(ts_ns, 0) (of max(event_id, 0) on the event axis): threads' records may interleave out of
 * time order, and timeline_buckets places them the same way. Every event_rows row of the device
 * counts, the seed's included.
 *
 * The same buckets stacked by site, category, stream or size class: view_stacks.h. */
#ifndef GMT_VIEW_TIMELINE_H
#define GMT_VIEW_TIMELINE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* The most buckets one answer holds (the window may take one more, see above). */
#define VIEW_TIMELINE_MAX_BUCKETS 4096

typedef struct view_bucket {
    int64_t events; /* the device's rows placed in it; 0: the values are the state carried in */
    int64_t min_allocated, max_allocated, last_allocated; /* bytes */
    int64_t min_reserved, max_reserved, last_reserved;    /* bytes */
    /* where the state is known (first_known on): the first of its rows at max_allocated, and
     * its last row (carried in: both the last row before it) */
    int64_t max_event_id, last_event_id;
} view_bucket;

typedef struct view_timeline_result {
    int event_axis;       /* 1: the axis is event ids (an input without times); 0: ts_ns */
    int64_t start, width; /* bucket i covers [start + i * width, start + (i + 1) * width) */
    size_t n;             /* buckets */
    view_bucket *buckets;
    size_t first_known; /* buckets before it precede the device's first row: no state (0s) */
    int64_t max_allocated, max_reserved; /* the highest of buckets first_known.. (0: none) */
    int64_t level_width; /* the timeline_levels width the answer read; 0: the events */
    int64_t events_read; /* event rows decoded for it (0 when answered from the levels) */
} view_timeline_result;

/* The window [lo, hi) of `device` in at most nbuckets + 1 buckets (nbuckets is clamped to
 * 1..VIEW_TIMELINE_MAX_BUCKETS). 0, or -1 with a one-line message (hi <= lo, lo or hi beyond
 * +-2^60, a database without timeline_levels: an older memanalyze's, a read error). */
int view_timeline(sqlite3 *db, int device, int64_t lo, int64_t hi, size_t nbuckets,
                  view_timeline_result *out, char *err, size_t errlen);

/* The database's axis (1: event ids, 0: ts_ns) and the end of its data on it (the greatest
 * place + 1 of any device), for a first whole-run window. 0, or -1 with a message. */
int view_timeline_axis(sqlite3 *db, int *event_axis, int64_t *end, char *err, size_t errlen);

void view_timeline_free(view_timeline_result *out);

/* The replay's grid of timeline_levels (meta 'timeline_level_ns' and 'timeline_levels'): the
 * finest width and how many levels, each 8x the one below. 0, or -1 when the database has none
 * (an older memanalyze made it). */
int view_timeline_grid(sqlite3 *db, int64_t *finest, int *count);

/* a / b rounded down (b > 0): the grid's bucket of a place, places below 0 included. */
static inline int64_t view_floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

#endif
