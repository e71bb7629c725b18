/* view_window.h — what the viewer's window summary says (/api/window) beyond a diff of its two
 * ends (diff.h) and its steps (step_table.h): for one device and an event window (from, to]
 *
 *   sites       the stacks that allocated most in it: blocks allocated in the window (event_id
 *               in (from, to], block_sweep.h's blocks: device memory, allocator blocks and
 *               whole-block segments) and their bytes, per allocation stack, most bytes first —
 *               folded_allocated's definition, by stack id instead of by shown frames
 *   categories  the bytes of each category (categories.h) live at the window's end and at its
 *               peak of allocated bytes (the window's, as report --from --to finds it)
 *   ooms        the OOMs in it with report's verdicts (report_window_ooms)
 *
 * The peak, the OOM count and the sites come from the replay's levels of detail and the
 * window's ragged ends (window_levels.h: the same answers as a pass over the window's events,
 * in milliseconds for a window of any width); the categories the
 * stored ones (block_categories, as `view` makes sure the cache has them) of the blocks live at
 * the two moments: read from their two layouts when the connection has a layout index
 * (layout_index.h: a checkpoint's blocks and the rows since), else one pass over the events up
 * to the window's end, else the categorizer's sweep (categories.h: a block's category needs its
 * whole life, so that is a pass over every event). */
#ifndef GMT_VIEW_WINDOW_H
#define GMT_VIEW_WINDOW_H

#include "analysis.h"
#include "report.h"
#include "window_levels.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define VIEW_WINDOW_TOP_SITES 10

typedef window_site view_window_site;

typedef struct view_window {
    int device;
    int64_t from, to;      /* event ids: the window holds the events in (from, to] */
    moment peak_allocated; /* the first of its events at its highest allocated bytes (the
                              moment of `from` when none is above it), as report --from --to */
    int64_t oom_count;     /* the OOM events in it (ooms: the first of them) */
    view_window_site sites[VIEW_WINDOW_TOP_SITES];
    size_t nsites, sites_total;
    int64_t blocks, bytes; /* every site's */
    int have_categories;   /* 0: categories_error says why */
    char categories_error[256];
    int64_t categories_at_end[BLOCK_CATEGORY_COUNT], categories_at_peak[BLOCK_CATEGORY_COUNT];
    report_oom ooms[REPORT_MAX_OOMS];
    size_t nooms;
} view_window;

/* The facts of `device` over (from, to] (from <= to). 0, or -1 with a one-line message. */
int view_window_read(sqlite3 *db, int device, int64_t from, int64_t to, view_window *out, char *err,
                     size_t errlen);

#endif
