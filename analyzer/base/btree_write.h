/* btree_write.h — SQLite b-tree pages written straight into a database file, for the bulk
 * tables of `import -o` (event_rows and its alloc_event_id index).
 *
 * Why: SQLite inserts ~1.4 M rows/s here however the rows are bound (bench/README.md, "import
 * -o"), which capped a standalone database at the speed of its INSERTs. Rows that come in key
 * order need none of what an INSERT does (search, balance, journal): they fill leaf pages one
 * after another, and the interior pages above them are a few hundred entries built at the end.
 * This module writes those pages in SQLite's documented file format
 * (https://www.sqlite.org/fileformat2.html), so the result is an ordinary database that any
 * SQLite client reads and that `PRAGMA integrity_check` accepts (the tests run it).
 *
 * The contract with SQLite: the file was made by SQLite, which created the table (and index)
 * empty; its root page numbers are given here. While pages are written no SQLite connection
 * may write the file. New pages go after the file's last page (the page holding SQLite's lock
 * byte at 1 GiB is skipped, as SQLite skips it); each root page is overwritten last with the
 * top of its tree; btree_file_close updates the header (page count, change counter). Integer,
 * NULL and (in tables) text values, rows that fit in a page (no overflow chains), keys strictly
 * ascending, a UTF-8 database, no autovacuum and no WAL: anything else is refused with a
 * message.
 *
 * Ownership: a btree_file owns its descriptor; a tree builder writes through its file and must
 * end (or be freed) before the file closes. */
#ifndef GMT_BTREE_WRITE_H
#define GMT_BTREE_WRITE_H

#include <stddef.h>
#include <stdint.h>

typedef struct btree_file btree_file;

/* Opens a database file SQLite made (and has closed, or no longer writes). NULL with a one-line
 * message in err. */
btree_file *btree_file_open(const char *path, char *err, size_t errlen);
/* Writes the header for the pages added and closes. 0, or -1 with a message in err. Frees f
 * either way. */
int btree_file_close(btree_file *f, char *err, size_t errlen);
/* Closes without touching the header (the file is being thrown away). */
void btree_file_abort(btree_file *f);
/* The last error of f's builders, one line. */
const char *btree_file_error(const btree_file *f);
/* SQLite's lock byte (its default, 2^30): a test that moves SQLite's with
 * SQLITE_TESTCTRL_PENDING_BYTE moves this one too, before opening. */
void btree_file_set_pending_byte(btree_file *f, uint64_t offset);

/* Values equal to this are written as NULL. */
#define BTREE_NULL INT64_MIN

/* A rowid table, filled in ascending rowid order. */
typedef struct btree_table btree_table;
btree_table *btree_table_begin(btree_file *f, uint32_t root_page);
/* Sets the columns that must not be NULL (bit i: column i): a NULL there fails the row as
 * SQLite's constraint would. */
void btree_table_not_null(btree_table *t, uint64_t mask);
/* A row of n (<= 64) integer columns; column ipk (or -1) is the INTEGER PRIMARY KEY, stored as
 * NULL in the record as SQLite stores it (its value is the rowid). 0, or -1 (btree_file_error). */
int btree_table_add(btree_table *t, int64_t rowid, const int64_t *cols, int n, int ipk);
/* The same, some columns text: texts[i], when not NULL, is column i's value (NUL-terminated
 * UTF-8; cols[i] is then not read). */
int btree_table_add_text(btree_table *t, int64_t rowid, const int64_t *cols,
                         const char *const *texts, int n, int ipk);
/* Writes the interior pages and the root; frees t. 0 or -1. */
int btree_table_end(btree_table *t);
void btree_table_free(btree_table *t);

/* An index: keys of n integers (the indexed columns, then the rowid), strictly ascending. */
typedef struct btree_index btree_index;
btree_index *btree_index_begin(btree_file *f, uint32_t root_page);
int btree_index_add(btree_index *x, const int64_t *key, int n);
int btree_index_end(btree_index *x);
void btree_index_free(btree_index *x);

#endif
