/* category_levels.c — series_levels' and series_deltas' category rows from the categorizer's
 * blocks (see category_levels.h). */
#include "category_levels.h"

#include "db_query.h"
#include "gmt_assert.h"
#include "gmt_grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a vector's event is: a whole vector (series_levels), one of the chain (series_deltas). */
enum { AT_FULL = 1, AT_CHAIN = 2 };

typedef struct device_vectors {
    int64_t device;
    int64_t *events;      /* the vectors' events, ascending */
    unsigned char *kinds; /* per event: AT_FULL | AT_CHAIN */
    size_t n, cap, kinds_cap;
    int64_t (*diff)[BLOCK_CATEGORY_COUNT]; /* n + 1 rows */
} device_vectors;

struct category_levels {
    device_vectors *dev[GMT_MAX_DEVICES];
};

void category_levels_free(category_levels *cl) {
    if (!cl)
        return;
    for (int d = 0; d < GMT_MAX_DEVICES; d++)
        if (cl->dev[d]) {
            free(cl->dev[d]->events), free(cl->dev[d]->kinds), free(cl->dev[d]->diff);
            free(cl->dev[d]);
        }
    free(cl);
}

int category_levels_open(sqlite3 *db, category_levels **out, char *err, size_t errlen) {
    *out = NULL;
    if (!db_has_table(db, "series_levels") ||
        db_query_i64(db, "SELECT value FROM meta WHERE key = 'series_level_ns'", 0, 0, 0) <= 0)
        return 0;
    char sql[400];
    /* the site vectors' events: every vector has its rest row (the chain's: entry 0) */
    int chain = db_has_table(db, "series_deltas");
    int len = snprintf(sql, sizeof sql,
                       "SELECT device, event_id, %d FROM series_levels WHERE series_by = %d AND "
                       "key IS NULL",
                       AT_FULL, (int)STACK_BY_SITE);
    if (chain)
        len += snprintf(sql + len, sizeof sql - (size_t)len,
                        " UNION ALL SELECT device, event_id, %d FROM series_deltas WHERE "
                        "series_by = %d AND entry = 0",
                        AT_CHAIN, (int)STACK_BY_SITE);
    snprintf(sql + len, sizeof sql - (size_t)len, " ORDER BY 1, 2");
    sqlite3_stmt *st = db_statement(db, sql);
    category_levels *cl = calloc(1, sizeof *cl);
    int failed = !st || !cl, oom = !cl;
    while (!failed && db_next_row(st, &failed)) {
        int64_t d = sqlite3_column_int64(st, 0), id = sqlite3_column_int64(st, 1);
        int kind = sqlite3_column_int(st, 2);
        if (d < 0 || d >= GMT_MAX_DEVICES)
            continue;
        device_vectors *v = cl->dev[d];
        if (!v && !(v = cl->dev[d] = calloc(1, sizeof *v))) {
            failed = oom = 1;
            break;
        }
        v->device = d;
        if (v->n && v->events[v->n - 1] == id) { /* both kinds at one event */
            v->kinds[v->n - 1] |= (unsigned char)kind;
            continue;
        }
        if (gmt_grow_uninit((void **)&v->events, &v->cap, v->n, sizeof *v->events, 256) != 0 ||
            gmt_grow_uninit((void **)&v->kinds, &v->kinds_cap, v->n, sizeof *v->kinds, 256) != 0) {
            failed = oom = 1;
            break;
        }
        v->kinds[v->n] = (unsigned char)kind;
        v->events[v->n++] = id;
    }
    for (int d = 0; !failed && d < GMT_MAX_DEVICES; d++)
        if (cl->dev[d] && !(cl->dev[d]->diff = calloc(cl->dev[d]->n + 1, sizeof *cl->dev[d]->diff)))
            failed = oom = 1;
    if (failed) {
        snprintf(err, errlen, "reading series_levels: %s",
                 oom ? "out of memory" : sqlite3_errmsg(db));
        sqlite3_finalize(st);
        category_levels_free(cl);
        return -1;
    }
    sqlite3_finalize(st);
    *out = cl;
    return 1;
}

/* The first vector at or after event `id` (n: none). */
static size_t first_from(const device_vectors *v, int64_t id) {
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->events[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void category_levels_add(category_levels *cl, int64_t device, int64_t alloc_id,
                         int64_t free_event_id, int64_t size, gmt_category category) {
    if (device < 0 || device >= GMT_MAX_DEVICES || !cl->dev[device] ||
        (unsigned)category >= BLOCK_CATEGORY_COUNT)
        return;
    device_vectors *v = cl->dev[device];
    /* live after alloc_id and before free_event_id: at the vectors [i, j) */
    size_t i = first_from(v, alloc_id), j = first_from(v, free_event_id);
    if (i >= j)
        return;
    v->diff[i][category] += size;
    v->diff[j][category] -= size;
}

typedef struct ranked {
    int64_t bytes, key;
} ranked;

static int by_bytes(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* One row into `st` (series_levels' or series_deltas' INSERT: the same columns). */
static int put_row(sqlite3_stmt *st, int64_t device, int64_t event_id, int64_t place, int64_t key,
                   int named, int64_t bytes) {
    sqlite3_bind_int64(st, 1, device);
    sqlite3_bind_int(st, 2, STACK_BY_CATEGORY);
    sqlite3_bind_int64(st, 3, event_id);
    sqlite3_bind_int64(st, 4, place);
    if (named)
        sqlite3_bind_int64(st, 5, key);
    else
        sqlite3_bind_null(st, 5);
    sqlite3_bind_int64(st, 6, bytes);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_reset(st);
    return rc;
}

/* The vector at one event: whole (ranked, the rest 0: every category named) into series_levels,
 * and as the chain's next (the rest, then each category whose bytes moved since the chain's
 * previous vector) into series_deltas. */
static int write_vector(sqlite3_stmt *full, sqlite3_stmt *delta, int64_t device, int64_t event_id,
                        int kinds, const int64_t *live, int64_t *chain_prev) {
    int rc = 0;
    if (kinds & AT_FULL) {
        ranked r[BLOCK_CATEGORY_COUNT];
        size_t n = 0;
        for (int c = 0; c < BLOCK_CATEGORY_COUNT; c++)
            if (live[c])
                r[n++] = (ranked){live[c], c};
        qsort(r, n, sizeof *r, by_bytes);
        for (size_t k = 0; rc == 0 && k <= n; k++) /* the last: the rest, none */
            rc = put_row(full, device, event_id, (int64_t)k, k < n ? r[k].key : 0, k < n,
                         k < n ? r[k].bytes : 0);
    }
    if (rc == 0 && (kinds & AT_CHAIN) && !GMT_NEVER(!delta)) { /* open saw the table too */
        int64_t entry = 0;
        rc = put_row(delta, device, event_id, entry++, 0, 0, 0);
        for (int c = 0; rc == 0 && c < BLOCK_CATEGORY_COUNT; c++) {
            if (live[c] != chain_prev[c])
                rc = put_row(delta, device, event_id, entry++, c, 1, live[c]);
            chain_prev[c] = live[c];
        }
    }
    return rc;
}

int category_levels_write(category_levels *cl, sqlite3 *db, char *err, size_t errlen) {
    int chain = db_has_table(db, "series_deltas");
    char del[160]; /* the rows of an earlier sweep (without block_categories then) */
    int len = snprintf(del, sizeof del, "DELETE FROM series_levels WHERE series_by = %d",
                       (int)STACK_BY_CATEGORY);
    if (chain)
        snprintf(del + len, sizeof del - (size_t)len,
                 "; DELETE FROM series_deltas WHERE series_by = %d", (int)STACK_BY_CATEGORY);
    if (sqlite3_exec(db, del, NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "writing series_levels' categories: %s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_stmt *st = db_statement(db, "INSERT INTO series_levels (device, series_by, event_id, "
                                        "rank, key, bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    sqlite3_stmt *dt = chain ? db_statement(db, "INSERT INTO series_deltas (device, series_by, "
                                                "event_id, entry, key, bytes) VALUES (?1, ?2, ?3, "
                                                "?4, ?5, ?6)")
                             : NULL;
    int rc = st && (dt || !chain) ? 0 : -1;
    for (int d = 0; rc == 0 && d < GMT_MAX_DEVICES; d++) {
        device_vectors *v = cl->dev[d];
        int64_t live[BLOCK_CATEGORY_COUNT] = {0}, chain_prev[BLOCK_CATEGORY_COUNT] = {0};
        for (size_t e = 0; rc == 0 && v && e < v->n; e++) {
            for (int c = 0; c < BLOCK_CATEGORY_COUNT; c++)
                live[c] += v->diff[e][c];
            rc = write_vector(st, dt, d, v->events[e], v->kinds[e], live, chain_prev);
        }
    }
    sqlite3_finalize(st);
    sqlite3_finalize(dt);
    if (rc == 0 && sqlite3_exec(db,
                                "INSERT OR REPLACE INTO meta VALUES "
                                "('series_level_categories', 1)",
                                NULL, NULL, NULL) != SQLITE_OK)
        rc = -1;
    if (rc != 0)
        snprintf(err, errlen, "writing series_levels' categories: %s", sqlite3_errmsg(db));
    return rc;
}
