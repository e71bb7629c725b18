/* db_query.h — the smallest question a layer asks the database: one integer.
 *
 * Every analyzer layer above the replay reads the database; most of what
 * they ask is one number (a count, a max event id, a step's end). Every
 * query goes through db_prepare, which turns vocabulary words into codes. */
#ifndef GMT_DB_QUERY_H
#define GMT_DB_QUERY_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* SQL text names codes by their vocabulary words (schema/gmt_vocab.h):
 * `{op:alloc}`, `{level:block}`, `{kind:device}`, `{source:torch}`,
 * `{marker:push}`, `{counter:driver_free}`, `{warning:free_unknown}`.
 * db_sql_expand writes the text with each token replaced by what the
 * database stores for it (0, 1, 'free_unknown'). Returns a malloc'd string
 * (the caller frees it), or NULL when out of memory or a token names no
 * word (a programming error: the tests run every query). */
char *db_sql_expand(const char *sql);

/* sqlite3_prepare_v2 of the expanded text. Returns SQLITE_OK, or an SQLite
 * error code (SQLITE_ERROR for an unknown token, SQLITE_NOMEM). */
int db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st);

/* db_prepare's statement, or NULL when it fails. */
sqlite3_stmt *db_statement(sqlite3 *db, const char *sql);

/* Runs a query that returns one integer (or NULL / no row / error -> dflt). */
long long db_query_int(sqlite3 *db, const char *sql, long long dflt);

/* The same with ?1 and ?2 bound to a and b; a query with fewer parameters
 * ignores the extra ones (SQLite reports SQLITE_RANGE, which is harmless). */
int64_t db_query_i64(sqlite3 *db, const char *sql, int64_t a, int64_t b, int64_t dflt);

/* With GMT_SQL_PROFILE set, every statement of this connection that takes 1 ms or more (or the
 * variable's value in ms, when it is a number: 0 prints every one) is printed with its time on
 * stderr (bench/: where a command's time goes). */
void db_profile_if_asked(sqlite3 *db);

/* The file of the connection's main database ("" for a database in memory or a temporary one):
 * what tells two connections to the same file apart from two files. */
const char *db_file_name(sqlite3 *db);

/* Whether the database has a table or view of that name (a database of an older memanalyze
 * lacks the newer ones). */
int db_has_table(sqlite3 *db, const char *name);

/* A failure met where it cannot be returned (a stack's label that could not be made for want of
 * memory becomes "unknown stack"; a query whose text could not be made answers nothing): noted
 * here, the first one kept, and the command fails when it ends (memanalyze.c), whatever it
 * printed. Any thread may note one (SQLite's log does, memanalyze.c); db_failure_noted, once
 * the command's threads are done, gives its description, or NULL. */
void db_note_failure(const char *what);
const char *db_failure_noted(void);

/* Between db_failures_expected(1) and (0): what is noted is the answer of a check that expects
 * SQLite to fail on a damaged file (input.c's look at a cached database before it is used, which
 * builds it again then), not a failure of the command: nothing is kept. Only while no other
 * thread runs queries. */
void db_failures_expected(int expected);

/* meta's text for `key` in buf ("" when absent or on an error, cut to len - 1 bytes); buf. */
const char *db_meta_text(sqlite3 *db, const char *key, char *buf, size_t len);

/* What names the database a file made from it was made for (the view's indexes beside a cache:
 * view_blocks.h, layout_index.h): `tag` (the file's kind and version), then meta's facts of the
 * input and of the build that replayed it — no pass over the events, so that such a file is
 * checked at every open. Into buf (cut to len - 1 bytes). */
void db_meta_identity(sqlite3 *db, const char *tag, char *buf, size_t len);

/* sqlite3_step for a loop over rows: 1 on a row; 0 at the end, and on an error 0 with *failed
 * set (a read that stops early must not pass for the whole answer). */
static inline int db_next_row(sqlite3_stmt *st, int *failed) {
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc != SQLITE_DONE)
        *failed = 1;
    return 0;
}

/* Column i of the current row, or null_value when it is NULL. */
static inline int64_t db_column_i64(sqlite3_stmt *st, int i, int64_t null_value) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? null_value : sqlite3_column_int64(st, i);
}

#endif
