/* db_query.c — one-integer queries on the database (see db_query.h). */
#include "db_query.h"

#include "gmt_env.h"
#include "trace_format.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *db_sql_expand(const char *sql) {
    /* A token's value is never longer than its text ("{op:oom}" -> "7";
     * "{warning:truncated}" -> "'truncated'"), so the input's length bounds the output. */
    size_t len = strlen(sql);
    char *out = malloc(len + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p = sql; *p;) {
        const char *colon, *close;
        if (*p != '{' || !(close = strchr(p, '}')) ||
            !(colon = memchr(p, ':', (size_t)(close - p)))) {
            *o++ = *p++;
            continue;
        }
        const char *list = p + 1, *name = colon + 1;
        int code = gmt_vocab_code(list, (size_t)(colon - list), name, (size_t)(close - name));
        if (code < 0) {
            free(out);
            return NULL;
        }
        if ((size_t)(colon - list) == 7 && !memcmp(list, "warning", 7))
            o += sprintf(o, "'%.*s'", (int)(close - name), name); /* warnings.code is text */
        else
            o += sprintf(o, "%d", code);
        p = close + 1;
    }
    *o = '\0';
    return out;
}

static atomic_int failure_claimed; /* the first noter writes failure_noted */
static char failure_noted[256];
static atomic_int failures_expected; /* > 0: a check's answers, not failures */

void db_failures_expected(int expected) { atomic_fetch_add(&failures_expected, expected ? 1 : -1); }

void db_note_failure(const char *what) {
    int none = 0;
    if (atomic_load(&failures_expected) == 0 &&
        atomic_compare_exchange_strong(&failure_claimed, &none, 1))
        snprintf(failure_noted, sizeof failure_noted, "%s", what && *what ? what : "a failure");
}

const char *db_failure_noted(void) { return failure_noted[0] ? failure_noted : NULL; }

int db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st) {
    *st = NULL;
    char *text = db_sql_expand(sql);
    if (!text) {
        db_note_failure("out of memory preparing a query");
        return SQLITE_ERROR;
    }
    int rc = sqlite3_prepare_v2(db, text, -1, st, NULL);
    free(text);
    return rc;
}

sqlite3_stmt *db_statement(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    if (db_prepare(db, sql, &st) != SQLITE_OK) {
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

const char *db_meta_text(sqlite3 *db, const char *key, char *buf, size_t len) {
    sqlite3_stmt *st;
    if (len)
        buf[0] = 0;
    if (db_prepare(db, "SELECT value FROM meta WHERE key = ?", &st) != SQLITE_OK) {
        sqlite3_finalize(st);
        return buf;
    }
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (len && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

void db_meta_identity(sqlite3 *db, const char *tag, char *buf, size_t len) {
    static const char *const keys[] = {"input_path",      "input_size",      "input_mtime_ns",
                                       "last_ts_ns",      "recorded_events", "timestamps",
                                       "analyzer_version"};
    size_t at = (size_t)snprintf(buf, len, "%s", tag);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && at < len; i++) {
        char v[200];
        db_meta_text(db, keys[i], v, sizeof v);
        at += (size_t)snprintf(buf + at, len - at, " %s=%s", keys[i], v);
    }
}

int64_t db_query_i64(sqlite3 *db, const char *sql, int64_t a, int64_t b, int64_t dflt) {
    sqlite3_stmt *st;
    int64_t v = dflt;
    if (db_prepare(db, sql, &st) != SQLITE_OK)
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

const char *db_file_name(sqlite3 *db) {
    const char *p = sqlite3_db_filename(db, "main");
    return p ? p : "";
}

int db_has_table(sqlite3 *db, const char *name) {
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE name = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

static double profile_threshold_ms = 1.0;

static int print_statement_time(unsigned type, void *ctx, void *stmt, void *ns) {
    (void)type, (void)ctx;
    double ms = (double)*(const sqlite3_int64 *)ns / 1e6;
    if (ms >= profile_threshold_ms) {
        char *sql = sqlite3_expanded_sql(stmt);
        fprintf(stderr, "sql %9.1f ms  %.160s\n", ms, sql ? sql : sqlite3_sql(stmt));
        sqlite3_free(sql);
    }
    return 0;
}

void db_profile_if_asked(sqlite3 *db) {
    const char *v = getenv(GMT_ENV_SQL_PROFILE);
    if (!v)
        return;
    char *end;
    double ms = strtod(v, &end); /* a number: the threshold in ms (0: every statement) */
    if (end != v && *end == 0 && ms >= 0)
        profile_threshold_ms = ms;
    sqlite3_trace_v2(db, SQLITE_TRACE_PROFILE, print_statement_time, NULL);
}
