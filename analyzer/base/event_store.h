/* event_store.h — the cache's events: event_rows kept as compressed column chunks inside the
 * database itself, and read back through an SQLite virtual table of the same name.
 *
 * Why: one SQLite row per event capped the first use of a trace at ~1.2 M events/s (the
 * SQLite thread busy the whole replay, bench/README.md). A chunk of 4,096 events encoded
 * column by column (deltas, zigzag varints, then zstd) is one blob row: the database the cache
 * keeps is built at the replay's own speed and is ~5x smaller. What the user sees does not
 * change: `event_rows` is still there, with the same columns, to every query memanalyze runs
 * (the virtual table serves event_id ranges and the alloc_event_id lookups its index served).
 * A database written for others (`import -o`) keeps a plain table: a virtual table needs this
 * module, which another SQLite client does not have. It keeps the chunks too (~6 B per event
 * beside the table's ~80), for memanalyze's own passes over every event (event_scan.h), which
 * read them 5-10x faster than the table's rows. Those passes trust the chunks: a user who edits
 * such a file's event_rows by hand makes them disagree with it.
 *
 * The store's tables (event_chunks, event_ends) are the module's own format, not the public
 * schema; schema.sql names only event_rows. */
#ifndef GMT_EVENT_STORE_H
#define GMT_EVENT_STORE_H

#include "sorted_pairs.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* event_rows' columns, in schema.sql's order (db_writer checks the schema against this list
 * when it makes a database in store mode). X(name) */
#define EVENT_STORE_COLUMN_LIST(X)                                                                 \
    X(event_id)                                                                                    \
    X(ts_ns)                                                                                       \
    X(device)                                                                                      \
    X(op)                                                                                          \
    X(level)                                                                                       \
    X(kind)                                                                                        \
    X(source)                                                                                      \
    X(addr)                                                                                        \
    X(size)                                                                                        \
    X(requested_size)                                                                              \
    X(stream)                                                                                      \
    X(pool)                                                                                        \
    X(tid)                                                                                         \
    X(stack_id)                                                                                    \
    X(segment_id)                                                                                  \
    X(alloc_event_id)                                                                              \
    X(allocated_bytes)                                                                             \
    X(requested_bytes)                                                                             \
    X(reserved_bytes)                                                                              \
    X(segments)                                                                                    \
    X(largest_free_bytes)

enum event_store_column {
#define EVENT_STORE_ENUM(name) EVENT_COL_##name,
    EVENT_STORE_COLUMN_LIST(EVENT_STORE_ENUM)
#undef EVENT_STORE_ENUM
        EVENT_STORE_NCOLS
};

/* Column names by index. */
extern const char *const event_store_column_names[EVENT_STORE_NCOLS];

/* Events per chunk: the unit of compression and of decoding. */
#define EVENT_STORE_CHUNK_ROWS 4096

/* Chunks decompressed by this process so far, all threads but those that said
 * event_store_chunks_uncounted (a relaxed counter): what a test reads to tell a few chunks from
 * a pass over the run (GMT_CHUNK_COUNT, `view`: its requests', not its builder's background
 * work). */
uint64_t event_store_chunks_unpacked(void);
void event_store_chunks_uncounted(void); /* the calling thread's chunks count no more */

/* A value equal to this is stored and read back as SQL NULL (db_writer's DB_NULL). */
#define EVENT_STORE_NULL INT64_MIN

/* The store's tables and `CREATE VIRTUAL TABLE event_rows`, for a database being made: run it
 * in place of schema.sql's CREATE TABLE event_rows (the module must be registered first). */
extern const char event_store_schema_sql[];

/* The store's tables alone, for a database whose event_rows is a plain table. */
extern const char event_store_tables_sql[];

/* Registers the `gmt_event_rows` module on every SQLite connection this process opens from now
 * on (sqlite3_auto_extension; idempotent, thread-safe). Every memanalyze path that opens a
 * database calls it first. SQLITE_OK or an SQLite error code. */
int event_store_register(void);

/* The writer: runs on the thread that owns the connection, inside its transaction. Rows come
 * in ascending event_id, a chunk at a time. Ownership: event_store_writer_finish or _free frees
 * it; neither closes the connection. */
typedef struct event_store_writer event_store_writer;

/* alloc_index 0: no alloc_event_id index (event_ends stays empty): for a database whose
 * event_rows is a plain table with its own index, where the chunks serve event_scan alone. */
event_store_writer *event_store_writer_new(sqlite3 *db, int alloc_index, char *err, size_t errlen);

/* Appends n (1 .. EVENT_STORE_CHUNK_ROWS) rows of EVENT_STORE_NCOLS values as one chunk.
 * 0, or -1 with a one-line message (out of order, out of memory, SQLite). */
int event_store_write_chunk(event_store_writer *w, const int64_t (*rows)[EVENT_STORE_NCOLS],
                            size_t n, char *err, size_t errlen);

/* Where the alloc_event_id index goes instead of event_ends: a plain event_rows' own index
 * (import -o). The sink gets every (alloc_event_id, event_id) pair in ascending order, in runs
 * of up to 4,096; it returns 0, or -1 with a message in err. Set before the first chunk; the
 * pairs are gathered (and spilled) as for event_ends. */
typedef sorted_pairs_sink event_store_pair_sink;
void event_store_writer_send_pairs(event_store_writer *w, event_store_pair_sink sink, void *ctx);

/* Pairs of the alloc_event_id index gathered in memory before a sorted run spills to a
 * temporary file (default 1 Mi pairs, 16 MiB); a test sets a small one to merge many runs. */
void event_store_writer_set_run_pairs(event_store_writer *w, size_t pairs);

/* Writes the alloc_event_id index and frees the writer. 0, or -1 with a message. */
int event_store_writer_finish(event_store_writer *w, char *err, size_t errlen);

void event_store_writer_free(event_store_writer *w);

#endif
