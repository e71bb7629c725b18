/* timeline_export.h — what `export --to perfetto` and `--to chrome-json` draw, streamed: each
 * device's totals after every event that changes them, its allocations and OOMs, in event
 * order, from one pass over the event store (event_scan.h); the steps and NVTX ranges, from
 * their small tables.
 *
 * The counters are the database's own totals (DESIGN.md "Definitions"), the values every row
 * of event_rows carries after its event: allocated (live block bytes as the allocator
 * accounts them; a block is live until its free completes, so a block whose free waits on a
 * stream — PyTorch's "active" but not "allocated" — still counts: DESIGN's allocated is
 * PyTorch's active_bytes, and no separate "active" counter would differ from it), reserved
 * (live segment bytes) and requested (what the program asked for). When the analyzer knows
 * categories, also the live bytes of each category (categories.h, no user rules), which sum to
 * allocated after every event: a block's alloc (or a whole-block segment's) adds its size to
 * its category, its free takes it away; each block's category comes from category_stream.h, a
 * cursor over block_categories beside the events, so only the live blocks are held.
 *
 * An allocation is a recorded (event_id >= 1) device block alloc, or a whole-block segment's
 * alloc (a plain cudaMalloc, which is its own block): the rows of the allocations view with
 * kind 'device' and alloc_id >= 1. The seed (event_id <= 0) gives each device's first totals,
 * not allocations. An OOM is an 'oom' event with its facts then.
 *
 * Memory: the whole-block segment ids (a sorted array, bounded by segments), the live blocks'
 * categories and sizes, nothing per event. Times are the database's ts_ns (for an input without
 * times, meta `timestamps` 0, they only keep the order: timeline_export_timed says so). */
#ifndef GMT_TIMELINE_EXPORT_H
#define GMT_TIMELINE_EXPORT_H

#include "gmt_vocab.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef enum tl_kind {
    TL_TOTALS, /* the totals changed, nothing else to show */
    TL_ALLOC,  /* an allocation (its totals after it too) */
    TL_OOM     /* an OOM */
} tl_kind;

typedef struct tl_event {
    tl_kind kind;
    int device;
    int64_t event_id, ts_ns;
    int64_t allocated, reserved, requested; /* the device's totals after the event */
    /* TL_ALLOC: the allocation; TL_OOM: size = the bytes asked for */
    uint64_t addr, size, stream;
    int64_t stack_id; /* 0: none */
    /* TL_OOM */
    int64_t largest_free; /* the largest free block then; -1: unknown */
    int64_t driver_free;  /* the driver's last free sample at or before it; -1: none */
    /* the device's live bytes of each category after the event (they sum to allocated); NULL
     * when the analyzer knows no category (then none is written) */
    const int64_t *categories;
} tl_event;

/* The devices (devices table), ascending, into devs (room for max); how many. */
int timeline_export_devices(sqlite3 *db, int *devs, int max);

/* The rank (meta `rank`), or -1. */
int timeline_export_rank(sqlite3 *db);

/* Whether ts_ns are times (meta `timestamps`), not only the order. */
int timeline_export_timed(sqlite3 *db);

/* The recorded events (the last event id): what the chrome-json limit counts. */
int64_t timeline_export_event_count(sqlite3 *db);

/* The earliest time anything has (a marker or step before the first event is negative), or 0:
 * what an output whose times cannot be negative shifts them by. */
int64_t timeline_export_earliest(sqlite3 *db);

/* Hands fn every device's TL_* events in event order (one pass; a device's seed row gives its
 * first totals, a TL_TOTALS). fn returns 0, or -1 to stop (then -1 with err untouched). 0, or
 * -1 with a one-line message in err. */
typedef int (*tl_event_fn)(void *ctx, const tl_event *e);
int timeline_export_events(sqlite3 *db, tl_event_fn fn, void *ctx, char *err, size_t errlen);

/* A slice: a step (tid -1) or an NVTX range. Open at the end of the trace: end_ts_ns is the
 * last event's ts_ns (or its begin, when later). */
typedef struct tl_slice {
    const char *name; /* valid during the call */
    int64_t number;   /* a step's N; a range's marker_id */
    int64_t tid;      /* a range's thread; -1: a step, or a process-wide range */
    int64_t begin_ts_ns, end_ts_ns;
} tl_slice;

/* The steps, then the ranges, in their begin order each; fn as above. 0, or -1 with err. */
typedef int (*tl_slice_fn)(void *ctx, int is_step, const tl_slice *s);
int timeline_export_slices(sqlite3 *db, tl_slice_fn fn, void *ctx, char *err, size_t errlen);

#endif
