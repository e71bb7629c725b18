/* check_sqlite.h — what the C tests that open SQLite databases share: run SQL and count a
 * failure with the statement and SQLite's message, read one integer or one text. Header-only,
 * like check.h, which it needs first. */
#ifndef GMT_TESTS_CHECK_SQLITE_H
#define GMT_TESTS_CHECK_SQLITE_H

#include "check.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Runs sql (any number of statements); a failure is a failed check. */
static inline void check_exec(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, msg ? msg : "?");
        check_failures++;
    }
    sqlite3_free(msg);
}

/* The first column of the first row as an integer; -1 (and the error printed) when none. */
static inline int64_t check_query_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    else
        fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return v;
}

/* The same as text, malloc'd (NULL when there is no row). */
static inline char *check_query_text(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    char *v = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = strdup(sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0) : "");
    sqlite3_finalize(st);
    return v;
}

#endif
