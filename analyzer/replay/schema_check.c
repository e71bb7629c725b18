/* schema_check.c — a user's database against the schema memanalyze writes (schema_check.h).
 * Ours is schema.sql run in memory; theirs is read from sqlite_master, nothing of it run. */
#include "schema_check.h"

#include "db_open.h"
#include "db_query.h"
#include "db_writer.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The module of the event store's virtual table (base/event_store_write.c). */
#define STORE_VTAB_SQL "CREATE VIRTUAL TABLE event_rows USING gmt_event_rows"

/* schema.sql's view of that name in `ours`, compared with `sql`: 1 same, 0 not ours. */
static int same_view(sqlite3 *ours, const char *name, const char *sql) {
    sqlite3_stmt *st = NULL;
    int same = 0;
    if (sqlite3_prepare_v2(ours, "SELECT sql FROM sqlite_master WHERE type = 'view' AND name = ?1",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const char *mine = (const char *)sqlite3_column_text(st, 0);
        same = mine && sql && strcmp(mine, sql) == 0;
    }
    sqlite3_finalize(st);
    return same;
}

int schema_check_file(const char *path, char *err, size_t errlen) {
    sqlite3 *theirs = NULL, *ours = NULL;
    if (sqlite3_open_v2(path, &theirs, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        sqlite3_close(theirs);
        return 0; /* the opener says why */
    }
    db_harden(theirs);
    int rc = 0;
    sqlite3_stmt *st = NULL;
    char *schema = db_sql_expand(schema_sql_text); /* {op:alloc} -> 0, as db_writer.c writes */
    if (!schema ||
        sqlite3_open_v2(":memory:", &ours, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(ours, schema, NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot check %s: out of memory", path);
        rc = -1;
    } else if (sqlite3_prepare_v2(theirs,
                                  "SELECT type, name, sql FROM sqlite_master WHERE type IN "
                                  "('view', 'trigger') OR sql LIKE 'CREATE VIRTUAL TABLE%'",
                                  -1, &st, NULL) != SQLITE_OK) {
        rc = 0; /* not a database we can read: the opener says why */
    } else {
        while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
            const char *type = (const char *)sqlite3_column_text(st, 0);
            const char *name = (const char *)sqlite3_column_text(st, 1);
            const char *sql = (const char *)sqlite3_column_text(st, 2);
            type = type ? type : "?";
            name = name ? name : "?";
            if (!strcmp(type, "trigger"))
                rc = -1;
            else if (!strcmp(type, "view"))
                rc = same_view(ours, name, sql) ? 0 : -1;
            else /* a virtual table: the event store's only */
                rc = sql && strncmp(sql, STORE_VTAB_SQL, strlen(STORE_VTAB_SQL)) == 0 &&
                             !strcmp(name, "event_rows")
                         ? 0
                         : -1;
            if (rc != 0)
                snprintf(err, errlen,
                         "%s: not a database this memanalyze made: its %s '%.64s' is not "
                         "memanalyze's (another version made it, or it was changed); import the "
                         "trace again",
                         path, !strcmp(type, "table") ? "virtual table" : type, name);
        }
    }
    sqlite3_finalize(st);
    free(schema);
    sqlite3_close(ours);
    sqlite3_close(theirs);
    return rc;
}
