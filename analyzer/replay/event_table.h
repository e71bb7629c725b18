/* event_table.h — the plain event_rows of a database for any SQLite client (`import -o`),
 * written as pages rather than INSERTs.
 *
 * The database file is made by SQLite (schema.sql's tables and views, event_rows and its
 * alloc_event_id index empty), then left alone: the event rows become leaf pages written
 * straight into it as they come (btree_write.h), the index's pairs at the end. Every other row
 * goes meanwhile into a staging database of the same schema, the caller's; at the end SQLite
 * copies its tables in (INSERT ... SELECT of identical tables, which SQLite does record by
 * record without decoding them). What users get is one ordinary SQLite file; what it saves is
 * an INSERT per event (bench/README.md, "import -o").
 *
 * Ownership: event_table_finish or _abort frees the writer; neither removes files. */
#ifndef GMT_EVENT_TABLE_H
#define GMT_EVENT_TABLE_H

#include "event_store.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct event_table event_table;

/* Creates the database at path: `setup` (pragmas, with the page size), then `schema` (tables and
 * views, with event_rows), then `index_sql` (the indexes on event_rows: the one this module
 * writes, refused otherwise). NULL with a one-line message in err. */
event_table *event_table_create(const char *path, const char *setup, const char *schema,
                                const char *index_sql, char *err, size_t errlen);

/* n rows of a chunk, event_id ascending across calls (on the thread that writes them). */
int event_table_rows(event_table *t, const int64_t (*rows)[EVENT_STORE_NCOLS], size_t n, char *err,
                     size_t errlen);

/* The alloc_event_id index's pairs, ascending: an event_store_pair_sink (ctx: the table). */
int event_table_pairs(void *t, const int64_t (*pairs)[2], size_t n, char *err, size_t errlen);

/* Writes the last pages, then opens the database with SQLite (`setup` again) and copies in every
 * table of the closed staging database at staging_path but event_rows, whole (replacing the rows
 * schema.sql gave the new file: staging has them too). On success
 * *db is that connection, in no transaction, for the caller's last steps (other indexes). 0, or
 * -1 with a message in err. Frees t. */
int event_table_finish(event_table *t, const char *staging_path, sqlite3 **db, char *err,
                       size_t errlen);

void event_table_abort(event_table *t);

#endif
