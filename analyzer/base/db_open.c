/* db_open.c — the process's SQLite settings and a command's read-only database (db_open.h). */
#include "db_open.h"

#include "db_query.h"
#include "event_store.h"

#include <stdio.h>

/* SQLite's failures that a command may not see: a query helper that gets no row takes it for
 * an empty answer, so running out of memory or a read error in the middle of a report printed
 * wrong facts and exited 0. SQLite logs each such failure (SQLITE_CONFIG_LOG, from any thread);
 * it is noted like any failure that cannot be returned (db_note_failure), and the command fails
 * when it ends, whatever it printed before. Other logged codes (a missing file, a schema
 * change, notices) are answers the commands handle. */
static void note_sqlite_failure(void *ctx, int code, const char *message) {
    (void)ctx;
    int primary = code & 0xff;
    if (primary != SQLITE_NOMEM && primary != SQLITE_IOERR && primary != SQLITE_FULL &&
        primary != SQLITE_CORRUPT)
        return;
    char what[256];
    snprintf(what, sizeof what, "SQLite failed under it: %s (%s)", message ? message : "",
             sqlite3_errstr(code));
    db_note_failure(what);
}

void db_configure_process(void) {
    /* Before any connection opens, or SQLite ignores them. */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_config(SQLITE_CONFIG_LOG, note_sqlite_failure, NULL);
}

void db_harden(sqlite3 *db) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    /* trusted_schema stays on: schema.sql's views use json_group_object, which SQLite 3.40 does
     * not mark innocuous, so it would refuse them. What a view runs is made safe instead by
     * checking a user's database's views word for word against ours (replay/schema_check.h). */
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, NULL);
}

int db_open_readonly(const char *path, sqlite3 **db, char *err, size_t errlen) {
    event_store_register(); /* a cache's event_rows is the store's virtual table */
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open database %s: %s", path, *db ? sqlite3_errmsg(*db) : "?");
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    db_harden(*db);
    db_profile_if_asked(*db);
    /* One read transaction for the whole command: otherwise SQLite takes and drops its file
     * lock (and rereads the header) around every statement, which dominated a report's time. */
    sqlite3_exec(*db, "BEGIN", NULL, NULL, NULL);
    /* A database made by someone else must still be ours (schema.sql: schema_version 1). */
    long long version = db_query_int(*db, "SELECT value FROM meta WHERE key='schema_version'", -1);
    if (version != 1) {
        sqlite3_close(*db);
        *db = NULL;
        snprintf(err, errlen, "%s is not a memanalyze database (schema version %lld)", path,
                 version);
        return -1;
    }
    return 0;
}

void db_close(sqlite3 *db) { sqlite3_close(db); }
