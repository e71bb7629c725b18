/* category_store.h — the categories a database keeps (schema.sql: category_peaks, and
 * block_categories when asked), written once after the replay built it, so that `report` on
 * the whole run reads a few rows instead of sweeping every block again. */
#ifndef GMT_CATEGORY_STORE_H
#define GMT_CATEGORY_STORE_H

#include "gmt_vocab.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* What category_store_file writes of block_categories (its `blocks`, through a pointer). */
typedef enum category_blocks {
    /* every block's row, as pages written straight into the file (btree_write.h): import -o's
     * database being built, and the copy of a cached one `sql` adds them to */
    CATEGORY_BLOCKS_PAGES = 1,
} category_blocks;

/* Sweeps every device of the database file at path, in one transaction: category_peaks always
 * (meta category_peaks = 1), and block_categories when `blocks` says so (meta categories_blocks
 * = 1; the table empty before). The file must be one no one else has open — a database being
 * built under its temporary name, or a private copy (input_change_cache) — as it is written
 * without a journal: on a failure, or a kill, the file is thrown away, never published. The
 * input_options.finish of the databases memanalyze builds. `blocks`: NULL for the peaks alone,
 * else a category_blocks. 0, or -1 with a one-line message in err. */
int category_store_file(const char *path, void *blocks, char *err, size_t errlen);

/* input_change_cache's change for `sql` on allocations.category: every block's category into
 * the private copy at path. 1 when it has them already (nothing written), 0, or -1 with a
 * one-line message. */
int category_blocks_add(const char *path, void *ctx, char *err, size_t errlen);

/* category_peaks of device: 1 and bytes filled when the database has them, 0 when it has none
 * (an older database: sweep instead). */
int category_peaks_read(sqlite3 *db, int64_t device, int64_t bytes[BLOCK_CATEGORY_COUNT]);

/* Whether block_categories is filled (meta categories_blocks). */
int category_blocks_stored(sqlite3 *db);

/* One block's stored category, for a caller that looks up many: the statement (finalize it;
 * NULL on an error), then the category of the block alloc `alloc_id` made: a gmt_category
 * below BLOCK_CATEGORY_COUNT, -1 when none is stored, -2 on a read error. */
sqlite3_stmt *category_stored_statement(sqlite3 *db);
int category_stored_of(sqlite3_stmt *st, int64_t alloc_id);
/* The statement finalized (NULL: nothing), for a caller with no sqlite3_ call of its own. */
void category_stored_done(sqlite3_stmt *st);

#endif
