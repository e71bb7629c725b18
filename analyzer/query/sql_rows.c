/* sql_rows.c — the user's query prepared and stepped, its rows as typed cells (see sql_rows.h).
 * It owns every SQLite call `memanalyze sql` makes on the user's text, and the rule for a column
 * that holds bytes, so the command keeps formatting only. */
#include "sql_rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sql_rows {
    sqlite3 *db;
    sqlite3_stmt *st; /* NULL: the text held no statement */
    int number_text;  /* numbers get their text too */
    size_t ncol;
    sql_column *columns;
    sql_cell *cells;
};

/* A column holds bytes when its name says so: *_bytes, size, *_size, bytes. */
static int is_bytes_column(const char *name) {
    size_t n = strlen(name);
    return strstr(name, "bytes") != NULL || !strcmp(name, "size") ||
           (n > 5 && !strcmp(name + n - 5, "_size"));
}

int sql_rows_open(sqlite3 *db, const char *sql, int number_text, sql_rows **out, char *err,
                  size_t errlen) {
    *out = NULL;
    sqlite3_stmt *st = NULL, *next = NULL;
    const char *tail = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, &tail) != SQLITE_OK) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
        return -1;
    }
    /* One statement: a second one would silently not run (the sqlite3 shell runs them all; a
     * query with one answer is what the outputs print). Comments, spaces and ';' may follow. */
    if (tail && *tail && (sqlite3_prepare_v2(db, tail, -1, &next, NULL) != SQLITE_OK || next)) {
        sqlite3_finalize(next);
        sqlite3_finalize(st);
        snprintf(err, errlen,
                 "one statement at a time: remove the text after the first one (\"%.60s\")",
                 tail + strspn(tail, " \t\r\n;"));
        return -1;
    }
    size_t ncol = st ? (size_t)sqlite3_column_count(st) : 0;
    sql_rows *q = calloc(1, sizeof *q);
    if (q) {
        q->columns = calloc(ncol ? ncol : 1, sizeof *q->columns);
        q->cells = calloc(ncol ? ncol : 1, sizeof *q->cells);
    }
    if (!q || !q->columns || !q->cells) {
        sqlite3_finalize(st);
        sql_rows_close(q);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    q->db = db;
    q->st = st;
    q->number_text = number_text;
    q->ncol = ncol;
    for (size_t i = 0; i < ncol; i++) {
        const char *name = sqlite3_column_name(st, (int)i);
        if (!name) { /* SQLite out of memory */
            sql_rows_close(q);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        q->columns[i] =
            (sql_column){name, is_bytes_column(name), sqlite3_column_decltype(st, (int)i) != NULL};
    }
    *out = q;
    return 0;
}

size_t sql_rows_column_count(const sql_rows *q) { return q->ncol; }

const sql_column *sql_rows_columns(const sql_rows *q) { return q->columns; }

int sql_rows_skip(sql_rows *q, char *err, size_t errlen) {
    int rc = q->st ? sqlite3_step(q->st) : SQLITE_MISUSE;
    if (rc == SQLITE_ROW)
        return 1;
    if (rc == SQLITE_DONE)
        return 0;
    snprintf(err, errlen, "%s", sqlite3_errmsg(q->db));
    return -1;
}

int sql_rows_next(sql_rows *q, const sql_cell **cells, char *err, size_t errlen) {
    *cells = NULL;
    int rc = sql_rows_skip(q, err, errlen);
    if (rc != 1)
        return rc;
    for (size_t i = 0; i < q->ncol; i++) {
        int c = (int)i, type = sqlite3_column_type(q->st, c);
        sql_cell *cell = &q->cells[i];
        *cell = (sql_cell){SQL_CELL_NULL, 0, 0, NULL, 0};
        if (type == SQLITE_NULL)
            continue;
        /* the type and the number first: a conversion to text leaves the type undefined */
        if (type == SQLITE_INTEGER) {
            cell->type = SQL_CELL_INTEGER;
            cell->integer = sqlite3_column_int64(q->st, c);
        } else if (type == SQLITE_FLOAT) {
            cell->type = SQL_CELL_REAL;
            cell->real = sqlite3_column_double(q->st, c);
        } else {
            cell->type = type == SQLITE_BLOB ? SQL_CELL_BLOB : SQL_CELL_TEXT;
        }
        if (cell->type != SQL_CELL_TEXT && cell->type != SQL_CELL_BLOB && !q->number_text)
            continue; /* SQLite's text of a number costs as much as the rest of the row */
        /* then the text, then its length: SQLite's order that converts at most once (a blob
         * gets its terminator here) */
        cell->text = (const char *)sqlite3_column_text(q->st, c);
        cell->bytes = (size_t)sqlite3_column_bytes(q->st, c);
        if (!cell->text) { /* only when SQLite ran out of memory making it */
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    *cells = q->cells;
    return 1;
}

void sql_rows_close(sql_rows *q) {
    if (!q)
        return;
    sqlite3_finalize(q->st);
    free(q->columns);
    free(q->cells);
    free(q);
}

/* The authorizer sees every table a statement reads, views expanded. */
static int reads_block_categories(void *flag, int action, const char *table, const char *column,
                                  const char *db, const char *trigger) {
    (void)column, (void)db, (void)trigger;
    if (action == SQLITE_READ && table && !strcmp(table, "block_categories"))
        *(int *)flag = 1;
    return SQLITE_OK;
}

int sql_reads_block_categories(sqlite3 *db, const char *sql) {
    int flag = 0;
    sqlite3_stmt *st = NULL;
    sqlite3_set_authorizer(db, reads_block_categories, &flag);
    sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    sqlite3_finalize(st);
    sqlite3_set_authorizer(db, NULL, NULL);
    return flag;
}
