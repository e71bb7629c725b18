/* category_levels.h — the category rows of series_levels and series_deltas (schema.sql): each
 * category's live block bytes at the events the replay wrote site vectors for, added after the
 * replay (the categories are known only then) from category_store's one sweep over the blocks.
 *
 * How: the events of each device's vectors in order (their rest rows; an event may hold a whole
 * vector and one of the chain), and per block two binary searches: it is live at the vectors
 * from the first at or after its alloc to the last before its free, a difference array of
 * (vectors + 1) x categories; prefix sums at the end, the chain's rows the categories that
 * moved since its previous vector. O(blocks x log vectors), memory ~73 bytes a vector (~16 MB
 * at 100 M events). Blocks are the categorizer's (the `allocations` view's): a segment later
 * found to hold blocks is not one of them, where the replay's site rows counted it until
 * then. */
#ifndef GMT_CATEGORY_LEVELS_H
#define GMT_CATEGORY_LEVELS_H

#include "gmt_vocab.h"

#include <sqlite3.h>
#include <stdint.h>

typedef struct category_levels category_levels;

/* The vectors' events of db. 1 with *out made, 0 when db has no series_levels (none made:
 * too short a timeline, or an older memanalyze), -1 with a message. */
int category_levels_open(sqlite3 *db, category_levels **out, char *err, size_t errlen);

/* A block of `device`, live from after event alloc_id to before free_event_id (INT64_MAX: to
 * the end), of `size` bytes, in `category`. */
void category_levels_add(category_levels *cl, int64_t device, int64_t alloc_id,
                         int64_t free_event_id, int64_t size, gmt_category category);

/* The rows (those of an earlier sweep deleted first; and meta series_level_categories = 1), in
 * the caller's transaction. 0, or -1 with a message. */
int category_levels_write(category_levels *cl, sqlite3 *db, char *err, size_t errlen);

void category_levels_free(category_levels *cl);

#endif
