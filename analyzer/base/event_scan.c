/* event_scan.c — event_rows a batch at a time (see event_scan.h): the store's chunks decoded
 * here, or a plain table's rows through one SQL statement. */
#include "event_scan.h"

#include "event_store_chunk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define PLAIN_BATCH 4096

struct event_scan {
    sqlite3_stmt *st;
    int store;    /* 1: st reads event_chunks; 0: event_rows' rows */
    int backward; /* batches last first */
    uint32_t columns;
    int64_t first, last;
    int done;
    ZSTD_DCtx *dctx;
    uint8_t *raw;
    size_t raw_cap;
    int64_t *values[EVENT_STORE_NCOLS];
    char error[256];
};

void event_scan_close(event_scan *s) {
    if (!s)
        return;
    sqlite3_finalize(s->st);
    ZSTD_freeDCtx(s->dctx);
    free(s->raw);
    for (int c = 0; c < EVENT_STORE_NCOLS; c++)
        free(s->values[c]);
    free(s);
}

const char *event_scan_error(const event_scan *s) { return s->error; }

uint32_t event_scan_mask(const int *want, size_t n) {
    uint32_t mask = 0;
    for (size_t k = 0; k < n; k++)
        mask |= 1u << want[k];
    return mask;
}

void event_scan_pick(const int64_t *const cols[EVENT_STORE_NCOLS], const int *want, size_t n,
                     const int64_t **v) {
    for (size_t k = 0; k < n; k++)
        v[k] = cols[want[k]];
}

/* Whether the database keeps the event store's chunks (the cache; `import -o` beside its
 * plain table; not a database of an older memanalyze). */
static int has_store(sqlite3 *db) {
    sqlite3_stmt *st;
    int yes = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "
                           "'event_chunks'",
                           -1, &st, NULL) == SQLITE_OK)
        yes = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

static event_scan *scan_open(sqlite3 *db, uint32_t columns, int64_t first, int64_t last,
                             int backward, char *err, size_t errlen) {
    event_scan *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->columns = columns | EVENT_SCAN_COLUMN(event_id); /* the bounds need it */
    s->first = first;
    s->last = last;
    s->backward = backward;
    s->store = has_store(db);
    for (int c = 0; c < EVENT_STORE_NCOLS; c++)
        if ((s->columns & (1u << c)) &&
            !(s->values[c] = malloc(EVENT_STORE_CHUNK_ROWS * sizeof(int64_t)))) {
            snprintf(err, errlen, "out of memory");
            event_scan_close(s);
            return NULL;
        }
    int rc;
    if (s->store) {
        /* The chunks that may hold ids in range: the first whose last id is >= first, on. The
         * lowest and highest such chunk come from the store's covering index (a chunk's own row
         * is a page of blob: filtering the table reads one per chunk), the rows between them
         * by rowid, filtered the same way. */
#define CHUNKS_IN_RANGE                                                                            \
    "SELECT data, raw_bytes FROM event_chunks WHERE chunk BETWEEN (SELECT min(chunk) FROM "        \
    "event_chunks WHERE last_event_id >= ?1 AND first_event_id <= ?2) AND (SELECT max(chunk) "     \
    "FROM event_chunks WHERE last_event_id >= ?1 AND first_event_id <= ?2) AND last_event_id >= "  \
    "?1 AND first_event_id <= ?2 ORDER BY chunk"
        rc = sqlite3_prepare_v2(db, backward ? CHUNKS_IN_RANGE " DESC" : CHUNKS_IN_RANGE, -1,
                                &s->st, NULL);
#undef CHUNKS_IN_RANGE
        s->dctx = ZSTD_createDCtx();
    } else {
        char sql[1024] = "SELECT ";
        size_t n = strlen(sql);
        for (int c = 0; c < EVENT_STORE_NCOLS; c++)
            if (s->columns & (1u << c))
                n += (size_t)snprintf(sql + n, sizeof sql - n, "%s%s", n > 7 ? ", " : "",
                                      event_store_column_names[c]);
        snprintf(sql + n, sizeof sql - n,
                 " FROM event_rows WHERE event_id >= ?1 AND event_id <= ?2 ORDER BY event_id%s",
                 backward ? " DESC" : "");
        rc = sqlite3_prepare_v2(db, sql, -1, &s->st, NULL);
    }
    if (rc != SQLITE_OK || (s->store && !s->dctx)) {
        snprintf(err, errlen, "reading the events: %s", sqlite3_errmsg(db));
        event_scan_close(s);
        return NULL;
    }
    sqlite3_bind_int64(s->st, 1, first);
    sqlite3_bind_int64(s->st, 2, last);
    return s;
}

event_scan *event_scan_open(sqlite3 *db, uint32_t columns, int64_t first, int64_t last, char *err,
                            size_t errlen) {
    return scan_open(db, columns, first, last, 0, err, errlen);
}

event_scan *event_scan_open_backward(sqlite3 *db, uint32_t columns, int64_t first, int64_t last,
                                     char *err, size_t errlen) {
    return scan_open(db, columns, first, last, 1, err, errlen);
}

static long fail(event_scan *s, const char *what) {
    snprintf(s->error, sizeof s->error, "reading the events: %s", what);
    s->done = 1;
    return -1;
}

/* The store: the next chunk with a row in range, decoded; its rows in range. */
static long next_chunk(event_scan *s, const int64_t *cols[EVENT_STORE_NCOLS]) {
    for (;;) {
        int rc = sqlite3_step(s->st);
        if (rc == SQLITE_DONE) {
            s->done = 1;
            return 0;
        }
        if (rc != SQLITE_ROW)
            return fail(s, sqlite3_errmsg(sqlite3_db_handle(s->st)));
        chunk_columns cc;
        int unpacked = chunk_unpack(
            s->dctx, sqlite3_column_blob(s->st, 0), (size_t)sqlite3_column_bytes(s->st, 0),
            (size_t)sqlite3_column_int64(s->st, 1), &s->raw, &s->raw_cap, &cc);
        if (unpacked != 0)
            return fail(s, unpacked == -1 ? "out of memory"
                                          : "a chunk does not decode: a damaged database");
        for (int c = 0; c < EVENT_STORE_NCOLS; c++)
            if ((s->columns & (1u << c)) && chunk_decode_column(&cc, c, s->values[c]) != 0)
                return fail(s, "a column does not decode: a damaged database");
        const int64_t *ids = s->values[EVENT_COL_event_id];
        size_t lo = 0, hi = cc.rows;
        while (lo < hi && ids[lo] < s->first)
            lo++;
        while (hi > lo && ids[hi - 1] > s->last)
            hi--;
        if (lo == hi)
            continue;
        for (int c = 0; c < EVENT_STORE_NCOLS; c++)
            cols[c] = s->values[c] ? s->values[c] + lo : NULL;
        return (long)(hi - lo);
    }
}

/* A plain table: up to PLAIN_BATCH rows of the statement. */
static long next_rows(event_scan *s, const int64_t *cols[EVENT_STORE_NCOLS]) {
    long n = 0;
    while (n < PLAIN_BATCH) {
        int rc = sqlite3_step(s->st);
        if (rc == SQLITE_DONE) {
            s->done = 1;
            break;
        }
        if (rc != SQLITE_ROW)
            return fail(s, sqlite3_errmsg(sqlite3_db_handle(s->st)));
        int k = 0;
        for (int c = 0; c < EVENT_STORE_NCOLS; c++)
            if (s->columns & (1u << c)) {
                s->values[c][n] = sqlite3_column_type(s->st, k) == SQLITE_NULL
                                      ? EVENT_STORE_NULL
                                      : sqlite3_column_int64(s->st, k);
                k++;
            }
        n++;
    }
    if (s->backward) /* read newest first: put the batch back in ascending order */
        for (int c = 0; c < EVENT_STORE_NCOLS; c++)
            for (long i = 0, j = n - 1; s->values[c] && i < j; i++, j--) {
                int64_t t = s->values[c][i];
                s->values[c][i] = s->values[c][j];
                s->values[c][j] = t;
            }
    for (int c = 0; c < EVENT_STORE_NCOLS; c++)
        cols[c] = s->values[c];
    return n;
}

static __thread const int *thread_stop;

void event_scan_stop_when(const int *flag) { thread_stop = flag; }

int event_scan_stop_asked(void) {
    return thread_stop && __atomic_load_n(thread_stop, __ATOMIC_RELAXED);
}

long event_scan_next(event_scan *s, const int64_t *cols[EVENT_STORE_NCOLS]) {
    if (s->done)
        return 0;
    if (event_scan_stop_asked()) {
        snprintf(s->error, sizeof s->error, "stopped");
        return -1;
    }
    return s->store ? next_chunk(s, cols) : next_rows(s, cols);
}
