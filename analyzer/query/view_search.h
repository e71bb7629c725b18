/* view_search.h — the viewer's search (`memanalyze view`'s /api/search) and the axis its
 * answers are drawn on, as plain structs:
 *
 *   by frame text  the allocation sites (stacks) any of whose frames has the text in its
 *                  function or file name (case-insensitive): per site the blocks and bytes it
 *                  allocated over the run, its own peak of live bytes, and, all matching sites
 *                  together, a histogram of their allocations over the run's axis (blocks and
 *                  bytes per bucket) for the timeline's marks
 *   by address     the blocks whose [addr, addr + size) held the address at some time of the
 *                  run (allocations' rows), and the segments that did
 *
 * Frames are few next to events: the matching frames are found in `frames`, the stacks holding
 * them by walking the stack trie down from their nodes (stacks_parent), and the sites' blocks in
 * one pass over the device's events (event_scan.h's chunks, no SQL per event): there is no index
 * on event_rows by stack or address, and the store is the cheapest full pass. "Blocks" are
 * block_sweep.h's: allocator blocks and whole-block segments, device memory. */
#ifndef GMT_VIEW_SEARCH_H
#define GMT_VIEW_SEARCH_H

#include "block_detail.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define VIEW_SEARCH_MAX_SITES 50    /* sites listed */
#define VIEW_SEARCH_BUCKETS 512     /* the histogram's buckets */
#define VIEW_SEARCH_MAX_BLOCKS 100  /* blocks listed by an address search */
#define VIEW_SEARCH_MAX_SEGMENTS 20 /* segments listed by an address search */
#define VIEW_SEARCH_MAX_TEXT 256    /* the frame text's bytes */

/* The axis the timeline draws on: time in ns since the first event, or the event id for an
 * input without timestamps. */
typedef struct view_axis {
    int timed;          /* when_has_timestamps */
    int64_t last_event; /* max(event_id) */
    int64_t end;        /* the axis' end: the last event's ts_ns (timed), else last_event */
} view_axis;

int view_axis_read(sqlite3 *db, view_axis *out);

typedef struct view_site {
    int64_t stack_id;
    int64_t blocks, bytes;   /* allocated over the run */
    int64_t peak_live_bytes; /* the most of its blocks' bytes live at once */
} view_site;

typedef struct view_search_frames {
    view_site *sites; /* the first VIEW_SEARCH_MAX_SITES, most bytes first (then stack id) */
    size_t nsites;
    size_t sites_total;    /* matching stacks that allocated on the device */
    size_t stacks_total;   /* stacks holding a matching frame (some never allocate) */
    int64_t frames_total;  /* frames matching */
    int64_t blocks, bytes; /* all matching sites' */
    view_axis axis;
    int64_t bucket_width; /* on the axis; bucket i holds [i * width, (i + 1) * width) */
    int64_t hist_blocks[VIEW_SEARCH_BUCKETS], hist_bytes[VIEW_SEARCH_BUCKETS];
} view_search_frames;

/* The sites of `device` whose frames hold `text` (non-empty, at most VIEW_SEARCH_MAX_TEXT
 * bytes). 0 and *out (view_search_frames_free), or -1 with a one-line message in err. */
int view_search_frames_read(sqlite3 *db, int device, const char *text, view_search_frames *out,
                            char *err, size_t errlen);
void view_search_frames_free(view_search_frames *s);

/* Whether a frame's function or file holds `text`, case-insensitive (the search's own rule). */
int view_search_frame_matches(const char *name, const char *file, const char *text);

typedef struct view_segment_hit {
    int64_t segment_id, addr, size, alloc_ts_ns;
    int64_t free_event_id, free_ts_ns; /* 0, -1: live at the end */
} view_segment_hit;

typedef struct view_search_addr {
    uint64_t addr;
    block_detail *blocks; /* the first VIEW_SEARCH_MAX_BLOCKS, by alloc_id */
    size_t nblocks, blocks_total;
    view_segment_hit segments[VIEW_SEARCH_MAX_SEGMENTS]; /* by segment_id */
    size_t nsegments, segments_total;
} view_search_addr;

/* The blocks and segments of `device` that held `addr`. 0 and *out (view_search_addr_free),
 * or -1 with a one-line message in err. */
int view_search_addr_read(sqlite3 *db, int device, uint64_t addr, view_search_addr *out, char *err,
                          size_t errlen);
void view_search_addr_free(view_search_addr *s);

#endif
