/* share_file.h — `memanalyze view INPUT --html FILE`: the viewer as one self-contained file to
 * share (issue 31), opened from disk in a browser with no server and no network.
 *
 * The file is the page (view/assets/: index.html with viewer.css and its scripts, share.js too,
 * inlined, a Content-Security-Policy that lets it fetch nothing) and, in a
 * <script type="application/json" id="gmt-share"> block, the answers the page asks for first
 * and for coarse zooming, each computed by the server's own endpoint function (endpoints.h) on
 * the arguments the page sends, so a share file says exactly what the server says:
 *   - /api/summary; per device (the default device first, then the others): the whole run's
 *     /api/timeline, /api/marks, /api/steps (the page's first rows), /api/allocations (the
 *     page's K largest blocks of the whole run), /api/stacks by site, category, stream and size,
 *     /api/window of the whole run, /api/segments at the peak (the page's 400 first segments,
 *     fewer when that answer is over the response cap);
 *   - /api/block of each block the whole run's /api/allocations lists, largest first, in at
 *     most a quarter of the bound (a snapshot's block has tens of KiB of frames);
 *   - tiles: /api/timeline and /api/allocations of parts of the run at zoom depths 1, 2, ...
 *     (depth d: windows of 1/2^d of the run, each starting half a window after the last, so any
 *     window up to half that width lies inside one), every device at each depth, until the
 *     next depth would take the file over its bound.
 * The bound (VIEW_SHARE_MAX_BYTES, 8 MiB, for any input): an answer that would take the file
 * over it is left out (the page says "not in this share file" when it is asked for), and a depth
 * goes in whole or not at all. The page's share.js answers each request from the block: the
 * finest tile covering the window asked, else the whole run's.
 *
 * The file is written under a temporary name beside FILE and renamed into place (db_file.h's
 * rule: over a regular file or nothing), so a full disk or an unwritable folder leaves no
 * partial FILE. */
#ifndef GMT_VIEW_SHARE_FILE_H
#define GMT_VIEW_SHARE_FILE_H

#include <stddef.h>

#define VIEW_SHARE_MAX_BYTES (8u * 1024 * 1024) /* the whole file, for any input */

typedef struct view_share_config {
    const char *db_path;     /* the input's database, opened read-only */
    const char *blocks_path; /* the blocks index (view_blocks.h), built when missing */
    const char *input;       /* as the user named it (the summary says it) */
    const char *out;         /* FILE */
    size_t max_bytes;        /* 0: VIEW_SHARE_MAX_BYTES (a smaller bound: the tests) */
} view_share_config;

typedef struct view_share_stats {
    size_t bytes;    /* the file's size */
    size_t answers;  /* answers embedded, tiles' included */
    size_t left_out; /* answers left out to keep the bound (a whole depth not counted) */
    size_t tiles;    /* windows embedded below the whole run (each: a timeline, allocations) */
    int depth;       /* the finest depth embedded (0: the whole run only) */
    int devices;     /* devices embedded */
} view_share_stats;

/* Writes the share file. 0, or -1 with a one-line message (no FILE left); *write_error set to 1
 * when writing it failed (a full disk), 0 otherwise. */
int view_share_write(const view_share_config *cfg, view_share_stats *stats, int *write_error,
                     char *err, size_t errlen);

#endif
