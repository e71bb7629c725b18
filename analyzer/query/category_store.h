/* category_store.h — the categories a database keeps (schema.sql: category_peaks, and
 * block_categories when asked), written once after the replay built it, so that `report` on
 * the whole run reads a few rows instead of sweeping every block again. */
#ifndef GMT_CATEGORY_STORE_H
#define GMT_CATEGORY_STORE_H

#include "gmt_vocab.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* How category_store_file writes block_categories (its `blocks`, through a pointer). */
typedef enum category_blocks {
    CATEGORY_BLOCKS_ROWS = 1, /* INSERTs: a database others may be reading (the cache) */
    /* pages written straight into the file (btree_write.h), ~5x faster: only for a file no one
     * else can have open, a database being built under its temporary name (import -o) */
    CATEGORY_BLOCKS_PAGES,
} category_blocks;

/* Sweeps every device of the database file at path (opened for writing, waiting up to 10 s
 * for a reader's lock), in one transaction: category_peaks always (meta category_peaks = 1),
 * and block_categories rows per block when `blocks` says so (meta categories_blocks = 1). The
 * input_options.finish of the databases memanalyze builds. `blocks`: NULL for the peaks alone,
 * else a category_blocks: block_categories too (empty before, in pages mode). 0, or -1 with a
 * one-line message in err. */
int category_store_file(const char *path, void *blocks, char *err, size_t errlen);

/* category_peaks of device: 1 and bytes filled when the database has them, 0 when it has none
 * (an older database: sweep instead). */
int category_peaks_read(sqlite3 *db, int64_t device, int64_t bytes[BLOCK_CATEGORY_COUNT]);

/* Whether block_categories is filled (meta categories_blocks). */
int category_blocks_stored(sqlite3 *db);

#endif
