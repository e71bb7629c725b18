/* layout_index.h — checkpoints of layout_pass.h's state, so that a layout (layout.h), a window's
 * categories and the stacked timeline at any moment cost the live blocks and the rows since the
 * nearest checkpoint, not every row since the first.
 *
 * A layout at event N is the pass over every row up to N (layout.h): at 10 M events 0.1–0.35 s
 * for a moment in the middle, at 100 M seconds, for every segment map the viewer asks. The
 * index is that pass made once over the whole run with its state (each live block: alloc id,
 * address, size, requested, stream, stack, segment, pending) written down per device whenever
 * the rows since the last checkpoint reach LAYOUT_INDEX_RATIO times the live blocks (and at
 * least LAYOUT_INDEX_MIN_ROWS): a record is ~15 bytes, so the file is ~4 bytes per row at most
 * (where the live blocks are many: 0.42 at 10 M synth events, 4.2 MB, where the blocks index
 * takes 10), and a moment costs at most one checkpoint's blocks plus
 * max(LAYOUT_INDEX_MIN_ROWS, RATIO x live) rows of the pass. Measured at 10 M events (quiet,
 * bench/README.md): /api/segments p50 / p95 7.4 / 11.1 ms with (32 Ki, 16), 2.3 / 4.2 ms with
 * these (8 Ki, 4) at 4x the file.
 *
 * Like the blocks index (view_blocks.h) it is a file of its own beside the cache (never written
 * into the database), built under a temporary name and renamed into place (db_file_write),
 * mapped read-only, checked against the database it was made for (db_meta_identity).
 *
 * Use: a thread that holds an index for a connection says so (layout_index_use); from then on
 * every layout built on that connection by that thread (layout_build, _many, _each, from any
 * caller: diff, the window, segments) starts from the checkpoints. The answer is the same
 * (tests/test_layout_index.c holds every moment of its inputs to the pass from the first row);
 * only its cost changes, as an SQL index changes a query's. */
#ifndef GMT_LAYOUT_INDEX_H
#define GMT_LAYOUT_INDEX_H

#include "layout_pass.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define LAYOUT_INDEX_MIN_ROWS 8192
#define LAYOUT_INDEX_RATIO 4

typedef struct layout_index layout_index;

/* The index at `path` for the open database `db`: opened, or built first (when missing, stale
 * or damaged). `built` (may be NULL): 1 when built now. NULL with a one-line message. */
layout_index *layout_index_open(sqlite3 *db, const char *path, int *built, char *err,
                                size_t errlen);
/* The index at `path` when it is there and made for `db` (the file is written whole, then
 * renamed: db_file.h), else NULL; never builds. */
layout_index *layout_index_open_made(sqlite3 *db, const char *path);
void layout_index_close(layout_index *ix);

/* Writes the index of db at path with a checkpoint whenever max(min_rows, ratio x live blocks)
 * rows went by (layout_index_open's: LAYOUT_INDEX_MIN_ROWS and LAYOUT_INDEX_RATIO; the tests
 * ask one at nearly every row). 0, or -1 with a one-line message (nothing left at path). */
int layout_index_write(sqlite3 *db, const char *path, int64_t min_rows, int64_t ratio, char *err,
                       size_t errlen);

/* The checkpoint of `device` with the greatest event id in (after, at]: when there is one, the
 * pass `p` (emptied first) holds its live blocks, *ck_at its event id (the state after every
 * row <= it), and 1 is returned; 0 when there is none; -1 with a message (out of memory, a
 * damaged file). */
int layout_index_seed(const layout_index *ix, int device, int64_t after, int64_t at, layout_pass *p,
                      int64_t *ck_at, char *err, size_t errlen);

/* How many checkpoints the index holds for `device`, and their blocks (for tests and `info`). */
void layout_index_stats(const layout_index *ix, int device, int64_t *checkpoints, int64_t *blocks);

/* Layouts built on `db` by this thread start from ix (NULL: from the first row again). At most
 * LAYOUT_INDEX_MAX_USES connections per thread; 0, or -1 when that many are in use. */
#define LAYOUT_INDEX_MAX_USES 16
int layout_index_use(sqlite3 *db, const layout_index *ix);
/* The index this thread uses for db, or NULL. */
const layout_index *layout_index_for(sqlite3 *db);

#endif
