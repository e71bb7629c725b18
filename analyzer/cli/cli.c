/* cli.c — shared plumbing of the memanalyze commands (see cli.h). */
#include "cli.h"

#include "category_store.h"
#include "event_store.h"
#include "when.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("memanalyze: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

int cli_open_db_file(const char *path, sqlite3 **db, char *err, size_t errlen) {
    event_store_register(); /* a cache's event_rows is the store's virtual table */
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open database %s: %s", path, *db ? sqlite3_errmsg(*db) : "?");
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    db_profile_if_asked(*db);
    /* One read transaction for the whole command: otherwise SQLite takes and
     * drops its file lock (and rereads the header) around every statement,
     * which dominated a report's time. */
    sqlite3_exec(*db, "BEGIN", NULL, NULL, NULL);
    /* A database made by someone else must still be ours. */
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

int cli_open_db(const char *input, const input_options *given, sqlite3 **db) {
    char path[PATH_MAX + 64], err[PATH_MAX + 256];
    input_options opt = given ? *given : (input_options){0};
    if (!opt.finish) /* a database built here keeps its categories at the peaks */
        opt.finish = category_store_file;
    if (input_database(input, &opt, path, sizeof path, err, sizeof err) != 0 ||
        cli_open_db_file(path, db, err, sizeof err) != 0)
        return cli_error("%s", err);
    return 0;
}

int cli_open_device(const char *input, const input_options *opt, long wanted, sqlite3 **db,
                    int *device) {
    int rc = cli_open_db(input, opt, db);
    if (rc != 0)
        return rc;
    if (wanted < 0) {
        *device = when_default_device(*db);
    } else if (!when_device_answers(*db, (int)wanted)) {
        sqlite3_close(*db);
        *db = NULL;
        return cli_error("%s: no device %ld", input, wanted);
    } else {
        *device = (int)wanted;
    }
    return 0;
}

int cli_parse_count(const char *name, const char *text, long max, long *out) {
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < 0 || v > max)
        return cli_error("bad --%s '%s': a number from 0 to %ld", name, text, max);
    *out = v;
    return 0;
}

int cli_window_option(cli_window *w, int c, const char *arg) {
    long number;
    switch (c) {
    case 'd':
        if (cli_parse_count("device", arg, 1023, &number) != 0)
            return 2;
        w->device = (int)number;
        return 1;
    case 'f':
        w->from = arg;
        return 1;
    case 't':
        w->to = arg;
        return 1;
    case 'j':
        w->json = 1;
        return 1;
    case 'n':
        if (cli_parse_count("top", arg, 1000000, &number) != 0)
            return 2;
        w->top = number;
        return 1;
    case 's':
        w->io.step_word = arg;
        return 1;
    default:
        return 0;
    }
}
