/* db_query.h — the smallest question a layer asks the database: one integer.
 *
 * Every analyzer layer above the replay reads the database; most of what
 * they ask is one number (a count, a max event id, a step's end). */
#ifndef GMT_DB_QUERY_H
#define GMT_DB_QUERY_H

#include <sqlite3.h>
#include <stdint.h>

/* Runs a query that returns one integer (or NULL / no row / error -> dflt). */
long long db_query_int(sqlite3 *db, const char *sql, long long dflt);

/* The same with ?1 and ?2 bound to a and b; a query with fewer parameters
 * ignores the extra ones (SQLite reports SQLITE_RANGE, which is harmless). */
int64_t db_query_i64(sqlite3 *db, const char *sql, int64_t a, int64_t b, int64_t dflt);

#endif
