/* category_stream.h — each block's category as a pass over the events meets it, in memory
 * bounded by the live blocks: what `export` writes beside every entry (pytorch) and sums per
 * category after every event (perfetto, chrome-json).
 *
 * Why a stream: the categorizer's sweep (categories.h) visits a block when it ends, not in
 * event order, so a pass in event order would need a map of every block of the history (8 B a
 * block: ~100 MiB at 10 M events). The database's block_categories (schema.sql; added to the
 * cache by `export` and `sql`, written by `import -o`) is keyed by alloc_id, which IS the event
 * id of the block's alloc, and a pass meets the allocs in event id order: one cursor over the
 * table in alloc_id order, advanced as the allocs go by, hands each alloc its category, and the
 * stream keeps it (with the block's size) only until the block's end.
 *
 * A database without block_categories (one of an older memanalyze given as input: it is never
 * written to) gets the same answers from a sweep into a sorted map of every block, as before:
 * memory then grows with the history (category_stream_bounded says which). */
#ifndef GMT_CATEGORY_STREAM_H
#define GMT_CATEGORY_STREAM_H

#include "gmt_vocab.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct category_stream category_stream;

/* *out: the stream, or NULL when the analyzer knows no category (every block unknown, or no
 * block at all: then nothing is written of them). No user rules (block_categories has none).
 * 0, or -1 with a one-line message in err. */
int category_stream_open(sqlite3 *db, category_stream **out, char *err, size_t errlen);

/* Starts a pass at event id `from`, forgetting any pass before: the blocks whose alloc came
 * before it (alloc_id < from: for a pass from 1, the seed's) are live at once, of size 0. 0, or
 * -1 with a one-line message in err. */
int category_stream_begin(category_stream *s, int64_t from, char *err, size_t errlen);

/* The alloc of block alloc_id (the pass's allocs in ascending id order; one of another device
 * may be skipped), of size bytes: its category (unknown for a block the table lacks), kept
 * until category_stream_end. 0, or -1 with a one-line message in err. */
int category_stream_alloc(category_stream *s, int64_t alloc_id, int64_t size, gmt_category *cat,
                          char *err, size_t errlen);

/* A live block's category and size (either may be NULL): 1, or 0 when it is not live (then
 * unknown and 0). */
int category_stream_live(const category_stream *s, int64_t alloc_id, gmt_category *cat,
                         int64_t *size);

/* The end of block alloc_id: as category_stream_live, and the block is forgotten. */
int category_stream_end(category_stream *s, int64_t alloc_id, gmt_category *cat, int64_t *size);

/* The blocks held now (the live ones), and whether memory is bounded by them (block_categories
 * read as a stream: 1; the map of every block: 0). */
size_t category_stream_live_count(const category_stream *s);
int category_stream_bounded(const category_stream *s);

void category_stream_close(category_stream *s);

#endif
