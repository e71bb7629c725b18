/* schema_check.h — whether a database the user gave is one memanalyze made, before any command
 * reads it. A database file is untrusted input like a trace: its schema can hold SQL that runs
 * when a command reads it (a view named like ours with an endless recursive query hangs
 * `report`; a trigger, a virtual table of another module). The views and virtual tables that
 * run a command's queries must be exactly schema.sql's; triggers there are none. SQLite's
 * "Defense against the dark arts" (sqlite.org/security.html) is the model. */
#ifndef GMT_SCHEMA_CHECK_H
#define GMT_SCHEMA_CHECK_H

#include <stddef.h>

/* 0 when the database at path has schema.sql's views, word for word, no trigger, and no virtual
 * table but the event store's; else -1 with a one-line reason in err (what differs, and what to
 * do: import the trace again). A database that cannot be read is left to the opener (0). */
int schema_check_file(const char *path, char *err, size_t errlen);

#endif
