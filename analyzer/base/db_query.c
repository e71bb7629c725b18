/* db_query.c — one-integer queries on the database (see db_query.h). */
#include "db_query.h"

#include <stddef.h>

int64_t db_query_i64(sqlite3 *db, const char *sql, int64_t a, int64_t b, int64_t dflt) {
    sqlite3_stmt *st;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return dflt;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

long long db_query_int(sqlite3 *db, const char *sql, long long dflt) {
    return db_query_i64(db, sql, 0, 0, dflt);
}
