/* event_table.c — import -o's event_rows as pages, the rest copied from staging (see
 * event_table.h).
 *
 * What is checked rather than assumed, since the pages must match what SQLite would have
 * written for schema.sql: event_rows' columns are event_store.h's, in that order, all INTEGER
 * and none generated, with event_id its INTEGER PRIMARY KEY (the rowid); no CHECK, COLLATE or
 * WITHOUT ROWID; its NOT NULL columns are read from SQLite and enforced row by row; the indexes
 * on event_rows are exactly the one built here. A schema.sql
 * that changes any of that fails every import -o at once, with a message saying what. */
#include "event_table.h"

#include "btree_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one index on event_rows, as schema.sql declares it (SQLite keeps the text without the
 * final ';'): its keys are (alloc_event_id, event_id) of each row with an alloc_event_id. */
#define ALLOC_INDEX_NAME "event_rows_alloc_event"
#define ALLOC_INDEX_SQL                                                                            \
    "CREATE INDEX " ALLOC_INDEX_NAME " ON event_rows (alloc_event_id)"                             \
    " WHERE alloc_event_id IS NOT NULL"

_Static_assert(EVENT_STORE_NULL == BTREE_NULL, "one NULL for the rows and the pages");
_Static_assert(EVENT_COL_event_id == 0, "event_id, the rowid, is the first column");
_Static_assert(EVENT_STORE_NCOLS <= 64, "a NOT NULL mask of 64 bits");

struct event_table {
    char *path, *setup;
    btree_file *file;
    btree_table *rows;
    btree_index *index;
};

static int sql_fail(sqlite3 *db, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
    return -1;
}

/* The first column of the first row of sql, an integer (-1: none). */
static int64_t query_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* event_rows as SQLite made it: its columns must be the store's; their NOT NULL mask. */
static int read_columns(sqlite3 *db, uint64_t *not_null, char *err, size_t errlen) {
    sqlite3_stmt *st;
    /* table_xinfo: generated columns too (hidden, column 6) */
    if (sqlite3_prepare_v2(db, "PRAGMA table_xinfo(event_rows)", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, "reading event_rows' columns", err, errlen);
    int n = 0, ok = 1;
    *not_null = 0;
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        const char *type = (const char *)sqlite3_column_text(st, 2);
        int pk = sqlite3_column_int(st, 5), hidden = sqlite3_column_int(st, 6);
        ok = n < EVENT_STORE_NCOLS && name && !strcmp(name, event_store_column_names[n]) && type &&
             !strcmp(type, "INTEGER") && !hidden && pk == (n == EVENT_COL_event_id);
        if (sqlite3_column_int(st, 3))
            *not_null |= (uint64_t)1 << n;
        n++;
    }
    sqlite3_finalize(st);
    if (!ok || n != EVENT_STORE_NCOLS) {
        snprintf(err, errlen, "schema.sql's event_rows is not event_store.h's columns (column %d)",
                 n - 1);
        return -1;
    }
    return 0;
}

event_table *event_table_create(const char *path, const char *setup, const char *schema,
                                const char *index_sql, char *err, size_t errlen) {
    sqlite3 *db = NULL;
    uint64_t not_null = 0;
    int64_t table_root = -1, index_root = -1;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK || sqlite3_exec(db, setup, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, index_sql, NULL, NULL, NULL) != SQLITE_OK) {
        char what[600];
        snprintf(what, sizeof what, "cannot create database %s", path);
        rc = sql_fail(db, what, err, errlen);
    } else if (query_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'index'"
                             " AND tbl_name = 'event_rows'") != 1 ||
               query_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = '" ALLOC_INDEX_NAME
                             "' AND sql = '" ALLOC_INDEX_SQL "'") != 1) {
        snprintf(err, errlen,
                 "schema.sql's indexes on event_rows are not the one import -o "
                 "writes (" ALLOC_INDEX_SQL ")");
        rc = -1;
    } else if (query_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'event_rows' AND"
                             " (sql LIKE '%CHECK%' OR sql LIKE '%GENERATED%' OR sql LIKE"
                             " '%COLLATE%' OR sql LIKE '%WITHOUT ROWID%')") != 0) {
        snprintf(err, errlen, "schema.sql's event_rows has constraints the pages do not check");
        rc = -1;
    } else if ((rc = read_columns(db, &not_null, err, errlen)) == 0) {
        table_root = query_int(db, "SELECT rootpage FROM sqlite_schema WHERE name = 'event_rows'");
        index_root =
            query_int(db, "SELECT rootpage FROM sqlite_schema WHERE name = '" ALLOC_INDEX_NAME "'");
    }
    if (db && sqlite3_close(db) != SQLITE_OK && rc == 0)
        rc = sql_fail(NULL, "closing the new database", err, errlen);
    if (rc != 0)
        return NULL;
    event_table *t = calloc(1, sizeof *t);
    if (!t || !(t->setup = strdup(setup)) || !(t->path = strdup(path))) {
        event_table_abort(t);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!(t->file = btree_file_open(path, err, errlen))) {
        event_table_abort(t);
        return NULL;
    }
    t->rows = btree_table_begin(t->file, (uint32_t)table_root);
    t->index = btree_index_begin(t->file, (uint32_t)index_root);
    if (!t->rows || !t->index) {
        snprintf(err, errlen, "%s", btree_file_error(t->file));
        event_table_abort(t);
        return NULL;
    }
    btree_table_not_null(t->rows, not_null);
    return t;
}

int event_table_rows(event_table *t, const int64_t (*rows)[EVENT_STORE_NCOLS], size_t n, char *err,
                     size_t errlen) {
    for (size_t i = 0; i < n; i++)
        if (btree_table_add(t->rows, rows[i][EVENT_COL_event_id], rows[i], EVENT_STORE_NCOLS,
                            EVENT_COL_event_id) != 0) {
            snprintf(err, errlen, "%s", btree_file_error(t->file));
            return -1;
        }
    return 0;
}

int event_table_pairs(void *ctx, const int64_t (*pairs)[2], size_t n, char *err, size_t errlen) {
    event_table *t = ctx;
    for (size_t i = 0; i < n; i++)
        if (btree_index_add(t->index, pairs[i], 2) != 0) {
            snprintf(err, errlen, "%s", btree_file_error(t->file));
            return -1;
        }
    return 0;
}

/* Every table but event_rows is staging's, whole: the rows schema.sql put in the new file (its
 * lookup tables, meta) are in staging too, with the load's. Identical tables copied whole into
 * an empty one: SQLite's transfer optimization copies the records as they are. */
static int copy_staging(sqlite3 *db, const char *staging_path, char *err, size_t errlen) {
    char *attach = sqlite3_mprintf("ATTACH %Q AS staging", staging_path);
    if (!attach || sqlite3_exec(db, attach, NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_free(attach);
        return sql_fail(db, "opening the staging database", err, errlen);
    }
    sqlite3_free(attach);
    sqlite3_stmt *tables = NULL;
    int rc =
        sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK &&
                sqlite3_prepare_v2(db,
                                   "SELECT name FROM staging.sqlite_schema WHERE type = 'table'"
                                   " AND name <> 'event_rows' AND name NOT LIKE 'sqlite%'",
                                   -1, &tables, NULL) == SQLITE_OK
            ? 0
            : sql_fail(db, "listing the staging tables", err, errlen);
    while (rc == 0 && sqlite3_step(tables) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(tables, 0);
        char *copy = sqlite3_mprintf("DELETE FROM main.%w; INSERT INTO main.%w SELECT * FROM"
                                     " staging.%w",
                                     name, name, name);
        if (!copy || sqlite3_exec(db, copy, NULL, NULL, NULL) != SQLITE_OK)
            rc = sql_fail(copy ? db : NULL, name, err, errlen);
        sqlite3_free(copy);
    }
    sqlite3_finalize(tables);
    if (rc == 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = sql_fail(db, "committing the copied tables", err, errlen);
    if (rc == 0 && sqlite3_exec(db, "DETACH staging", NULL, NULL, NULL) != SQLITE_OK)
        rc = sql_fail(db, "closing the staging database", err, errlen);
    return rc;
}

int event_table_finish(event_table *t, const char *staging_path, sqlite3 **db, char *err,
                       size_t errlen) {
    *db = NULL;
    int rc = btree_table_end(t->rows);
    rc |= btree_index_end(t->index);
    t->rows = NULL;
    t->index = NULL;
    btree_file *file = t->file;
    t->file = NULL;
    if (rc != 0) {
        snprintf(err, errlen, "%s", btree_file_error(file));
        btree_file_abort(file);
    } else {
        rc = btree_file_close(file, err, errlen);
    }
    if (rc == 0) {
        sqlite3 *conn = NULL;
        if (sqlite3_open_v2(t->path, &conn, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
                SQLITE_OK ||
            sqlite3_exec(conn, t->setup, NULL, NULL, NULL) != SQLITE_OK)
            rc = sql_fail(conn, "reopening the database", err, errlen);
        else
            rc = copy_staging(conn, staging_path, err, errlen);
        if (rc == 0)
            *db = conn;
        else
            sqlite3_close(conn);
    }
    event_table_abort(t);
    return rc;
}

void event_table_abort(event_table *t) {
    if (!t)
        return;
    btree_table_free(t->rows);
    btree_index_free(t->index);
    btree_file_abort(t->file);
    free(t->setup);
    free(t->path);
    free(t);
}
