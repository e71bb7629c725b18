/* db_open.h — a database's life in a command: the process's SQLite settings, opening a
 * memanalyze database to read it, closing it.
 *
 * Every command reads a database the same way (read-only, one read transaction, the event
 * store's virtual table known, refused unless its schema is ours), so the way lives here once and
 * the commands above (cli/) never call SQLite: they hold the handle and hand it to query/. */
#ifndef GMT_DB_OPEN_H
#define GMT_DB_OPEN_H

#include <sqlite3.h>
#include <stddef.h>

/* Once, before any connection opens: SQLite's memory statistics off (a global mutex on every
 * allocation that nothing reads: imports 4 % faster), and its log of failures that cannot be
 * returned (out of memory, I/O, a full disk, corruption, from any thread) noted with
 * db_note_failure (db_query.h), so a command that met one fails when it ends. */
void db_configure_process(void);

/* Opens the database file at `path` read-only in one read transaction, the event store
 * registered and db_profile_if_asked applied; it must be ours by its schema version. 0, or -1
 * with a one-line message in err and *db NULL. */
int db_open_readonly(const char *path, sqlite3 **db, char *err, size_t errlen);

/* A connection to a file that may not be ours, made safe to read (sqlite.org/security.html):
 * defensive mode (nothing can corrupt the file through SQL) and the two-argument fts3_tokenizer
 * off (its views are checked apart: replay/schema_check.h). db_open_readonly does it; a connection
 * opened elsewhere calls it. */
void db_harden(sqlite3 *db);

/* Closes a database opened here (NULL is fine). */
void db_close(sqlite3 *db);

#endif
