/* db_file.h — the files of a database being made, and what it may replace.
 *
 * A database is built (or changed: the categories `sql` adds to a cached one) under a temporary
 * name beside its path and renamed into place once complete, so nobody ever opens a half-made
 * one and a kill leaves the published file as it was. The temporaries are named
 * PATH.tmp-PID[SUFFIX], created new (O_EXCL, O_NOFOLLOW: never through a link another user
 * planted) with the mode asked for, and locked (flock) by their process for as long as it has
 * them: what a killed process leaves is found by name, and removed by the next build only when
 * its process is gone (no such pid) and nobody holds its lock (a process of another pid
 * namespace or host, on a shared folder) and it is the user's own. A database is renamed only
 * over a regular file or nothing — never over a link, a device, a FIFO or a directory — and the
 * rollback journal or WAL of the file it replaces goes first, so that SQLite never plays the old
 * file's journal into the new one. */
#ifndef GMT_DB_FILE_H
#define GMT_DB_FILE_H

#include <stddef.h>
#include <stdio.h>

/* Whether a database may be written at path: 0 when it is a regular file or nothing, -1 with a
 * one-line message (a symbolic link, a device, a FIFO, a directory; or lstat failed). */
int db_file_replaceable(const char *path, char *err, size_t errlen);

/* Creates path.tmp-PID followed by suffix ("" or e.g. ".staging"), empty, with `mode` (less the
 * umask), its name in name[len]. Returns a descriptor that holds the file's lock until it is
 * closed (after the rename, or the file's removal), or -1 with a one-line message. */
int db_file_temp(const char *path, const char *suffix, int mode, char *name, size_t len, char *err,
                 size_t errlen);

/* Renames the finished temporary tmp to path, if path is still a regular file or nothing (its
 * -journal, -wal and -shm removed first). 0, or -1 with a one-line message (tmp is left). */
int db_file_publish(const char *tmp, const char *path, char *err, size_t errlen);

/* Writes a file at path the same way: under a temporary name (db_file_temp), through stdio, by
 * write(f, ctx, err, errlen) (0, or -1 with a one-line message), then renamed into place; on a
 * failure (the writer's, a full disk at the close, path not replaceable) nothing is left and
 * path is as it was. `what` names the file in the messages ("view index"). 0, or -1. */
typedef int (*db_file_writer)(FILE *f, void *ctx, char *err, size_t errlen);
int db_file_write(const char *path, const char *what, db_file_writer write, void *ctx, char *err,
                  size_t errlen);

/* Maps the regular, non-empty file at path read-only (the indexes beside a cache: view_blocks.h,
 * layout_index.h): 0 with *map and *size (munmap them), or -1 when it is missing, not a regular
 * file, empty or cannot be mapped. */
int db_file_map(const char *path, const void **map, size_t *size);

/* Removes, in dir, the temporaries of dead processes: those of the database base (a file name),
 * or with base NULL every one (the cache folder, which is memanalyze's alone). Quietly: what
 * cannot be removed stays. */
void db_file_sweep(const char *dir, const char *base);

#endif
