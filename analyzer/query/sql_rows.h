/* sql_rows.h — the user's own query (`memanalyze sql`): the one place a statement the user
 * wrote meets SQLite. It is prepared on the command's database (opened read-only, so it can
 * change nothing), its columns are described (name, whether it holds bytes, whether a table
 * declares its type), and a cursor hands back its rows as typed cells, plain C values, so the
 * command only formats them (an aligned table, CSV, JSON) and never touches a statement.
 *
 * Usage: sql_rows_open, sql_rows_columns, sql_rows_next until it returns 0 (the end) or -1 (an
 * error met in the middle: the rows before it were real), then sql_rows_close. */
#ifndef GMT_SQL_ROWS_H
#define GMT_SQL_ROWS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sql_cell_type {
    SQL_CELL_NULL,
    SQL_CELL_INTEGER,
    SQL_CELL_REAL,
    SQL_CELL_TEXT,
    SQL_CELL_BLOB,
} sql_cell_type;

/* One value of a row. */
typedef struct sql_cell {
    sql_cell_type type;
    int64_t integer; /* SQL_CELL_INTEGER */
    double real;     /* SQL_CELL_REAL */
    /* TEXT and BLOB, and INTEGER and REAL when the cursor was opened with number_text: the
     * text SQLite makes of the value, `bytes` of them followed by a NUL (a number as SQLite
     * writes it; a blob's bytes, which read as text up to their first NUL); else NULL */
    const char *text;
    size_t bytes;
} sql_cell;

typedef struct sql_column {
    const char *name;
    int holds_bytes; /* its name says so: one with "bytes" in it, "size", or one ending "_size" */
    int declared;    /* a table's column with a declared type (not an expression's result) */
} sql_column;

typedef struct sql_rows sql_rows;

/* Prepares the statement of `sql` on db (one only: text after it other than comments, spaces and
 * ';' is an error, never ignored); number_text:
 * numbers come with their text as well (CSV writes SQLite's spelling of them). 0 with *out
 * (sql_rows_close frees it), or -1 with SQLite's message in err. */
int sql_rows_open(sqlite3 *db, const char *sql, int number_text, sql_rows **out, char *err,
                  size_t errlen);

/* Its columns (sql_rows_column_count of them), valid until sql_rows_close. A text holding no
 * statement (only a comment, say) has none. */
size_t sql_rows_column_count(const sql_rows *q);
const sql_column *sql_rows_columns(const sql_rows *q);

/* The next row: 1 with *cells (sql_rows_column_count of them, valid until the next call), 0 at
 * the end, or -1 with SQLite's message in err (also for a text holding no statement). */
int sql_rows_next(sql_rows *q, const sql_cell **cells, char *err, size_t errlen);

/* The next row without its cells (a table that shows only the first rows still counts them):
 * 1, 0 at the end, or -1 with SQLite's message in err. */
int sql_rows_skip(sql_rows *q, char *err, size_t errlen);

void sql_rows_close(sql_rows *q);

/* Whether the first statement of `sql` reads block_categories (itself, or through
 * allocations.category: views are expanded), which a database holds only when asked
 * (category_blocks_stored). 0 also when it cannot be prepared. */
int sql_reads_block_categories(sqlite3 *db, const char *sql);

#endif
