/* stage_table.c — memory per named range (see stage_table.h): the ranges in order of their
 * start, and one sweep of the device's timeline that opens and closes them as it goes. */
#include "stage_table.h"

#include "addr_map.h"
#include "db_query.h"
#include "gmt_grow.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct range {
    size_t stage;             /* index into the rows */
    int64_t begin_ts, end_ts; /* end INT64_MAX: open at the end of the trace */
    int64_t begin_allocated;  /* the state entering it */
} range;

typedef struct site_sum {
    size_t stage;
    int64_t stack, bytes;
} site_sum;

typedef struct sweep {
    stage_row *rows;
    size_t nrows, cap_rows;
    range *ranges;
    size_t nranges, cap_ranges;
    size_t *open; /* indexes of the ranges open now */
    size_t nopen;
    addr_map site_of; /* (stage, stack) -> 1 + index into sums */
    site_sum *sums;
    size_t nsums, cap_sums;
    int64_t allocated; /* the device's allocated now */
    int64_t last_id;   /* the event of that state */
} sweep;

static size_t stage_named(sweep *w, const char *name) {
    for (size_t i = 0; i < w->nrows; i++) /* names are few: a linear search */
        if (!strcmp(w->rows[i].name, name))
            return i;
    if (gmt_grow((void **)&w->rows, &w->cap_rows, w->nrows, sizeof *w->rows) != 0)
        return SIZE_MAX;
    stage_row *r = &w->rows[w->nrows];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->peak_allocated = -1;
    return w->nrows++;
}

static int read_ranges(sqlite3 *db, sweep *w) {
    sqlite3_stmt *st = db_statement(db, "SELECT name, begin_ts_ns, end_ts_ns FROM ranges WHERE "
                                        "name IS NOT NULL ORDER BY begin_ts_ns, marker_id");
    if (!st)
        return -1;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        size_t stage = stage_named(w, (const char *)sqlite3_column_text(st, 0));
        if (stage == SIZE_MAX ||
            gmt_grow((void **)&w->ranges, &w->cap_ranges, w->nranges, sizeof *w->ranges) != 0) {
            rc = -1;
            break;
        }
        w->ranges[w->nranges++] =
            (range){stage, sqlite3_column_int64(st, 1), db_column_i64(st, 2, INT64_MAX), 0};
    }
    sqlite3_finalize(st);
    w->open = malloc((w->nranges ? w->nranges : 1) * sizeof *w->open);
    return rc == 0 && w->open ? 0 : -1;
}

static void close_range(sweep *w, size_t k) {
    range *g = &w->ranges[w->open[k]];
    stage_row *r = &w->rows[g->stage];
    int64_t net = w->allocated - g->begin_allocated;
    if (r->count == 0)
        r->net_first = net;
    r->count++;
    r->net_total += net;
    w->open[k] = w->open[--w->nopen];
}

static int add_site(sweep *w, size_t stage, int64_t stack, int64_t bytes) {
    uint32_t *slot = addr_map_get(&w->site_of, stage, (uint64_t)stack);
    if (slot) {
        w->sums[*slot - 1].bytes += bytes;
        return 0;
    }
    if (gmt_grow((void **)&w->sums, &w->cap_sums, w->nsums, sizeof *w->sums) != 0 ||
        addr_map_put(&w->site_of, stage, (uint64_t)stack, (uint32_t)(w->nsums + 1)) != 0)
        return -1;
    w->sums[w->nsums++] = (site_sum){stage, stack, bytes};
    return 0;
}

static int run_sweep(sqlite3 *db, int device, sweep *w) {
    sqlite3_stmt *st = db_statement(
        db, "SELECT event_id, ts_ns, allocated_bytes, op, level, size, coalesce(stack_id, 0) FROM "
            "event_rows WHERE device = ?1 AND (event_id > 0 OR op = {op:seed}) ORDER BY event_id");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    size_t next = 0;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), ts = sqlite3_column_int64(st, 1);
        if (id > 0) { /* the seed is the state before everything: no range holds it */
            for (size_t k = w->nopen; k-- > 0;)
                if (w->ranges[w->open[k]].end_ts <= ts)
                    close_range(w, k);
            for (; next < w->nranges && w->ranges[next].begin_ts <= ts; next++) {
                range *g = &w->ranges[next];
                if (g->end_ts <= ts) { /* began and ended between two events: nothing changed */
                    w->open[w->nopen++] = next;
                    g->begin_allocated = w->allocated;
                    close_range(w, w->nopen - 1);
                    continue;
                }
                g->begin_allocated = w->allocated;
                stage_row *r = &w->rows[g->stage];
                if (w->allocated > r->peak_allocated) { /* the state entering it */
                    r->peak_allocated = w->allocated;
                    r->peak_event_id = w->last_id;
                }
                w->open[w->nopen++] = next;
            }
        }
        w->allocated = sqlite3_column_int64(st, 2);
        w->last_id = id > 0 ? id : 0;
        int block_alloc = sqlite3_column_int(st, 3) == TRACE_OP_ALLOC &&
                          sqlite3_column_int(st, 4) == TRACE_LEVEL_BLOCK && id > 0;
        for (size_t k = 0; k < w->nopen; k++) {
            stage_row *r = &w->rows[w->ranges[w->open[k]].stage];
            if (w->allocated > r->peak_allocated) {
                r->peak_allocated = w->allocated;
                r->peak_event_id = id;
            }
            if (block_alloc) {
                int64_t size = sqlite3_column_int64(st, 5);
                r->allocs++;
                r->allocated_bytes += size;
                rc = add_site(w, w->ranges[w->open[k]].stage, sqlite3_column_int64(st, 6), size);
            }
        }
    }
    sqlite3_finalize(st);
    while (w->nopen) /* open at the end of the trace: they end there */
        close_range(w, w->nopen - 1);
    for (; next < w->nranges; next++) { /* begun after the last event: nothing inside */
        w->open[w->nopen++] = next;
        w->ranges[next].begin_allocated = w->allocated;
        close_range(w, 0);
    }
    return rc;
}

/* Each stage's STAGE_SITES sites that allocated the most inside it. */
static void top_sites(sweep *w) {
    for (size_t i = 0; i < w->nsums; i++) {
        stage_row *r = &w->rows[w->sums[i].stage];
        int64_t bytes = w->sums[i].bytes, stack = w->sums[i].stack;
        for (size_t k = 0; k < STAGE_SITES; k++) {
            if (bytes > r->site_bytes[k] ||
                (bytes == r->site_bytes[k] && bytes > 0 && stack < r->site_stack[k])) {
                int64_t b = r->site_bytes[k], s = r->site_stack[k];
                r->site_bytes[k] = bytes;
                r->site_stack[k] = stack;
                bytes = b;
                stack = s;
            }
        }
    }
}

static int by_peak(const void *a, const void *b) {
    const stage_row *x = a, *y = b;
    if (x->peak_allocated != y->peak_allocated)
        return x->peak_allocated > y->peak_allocated ? -1 : 1;
    return strcmp(x->name, y->name);
}

int stage_table(sqlite3 *db, int device, stage_row **rows, size_t *count, char *err,
                size_t errlen) {
    sweep w;
    memset(&w, 0, sizeof w);
    int rc = read_ranges(db, &w);
    if (rc == 0)
        rc = run_sweep(db, device, &w);
    if (rc == 0) {
        top_sites(&w);
        for (size_t i = 0; i < w.nrows; i++) {
            stage_row *r = &w.rows[i];
            r->net_mean = r->count ? (double)r->net_total / (double)r->count : 0;
            if (r->peak_allocated < 0) /* never open while an event happened */
                r->peak_allocated = 0;
        }
        qsort(w.rows, w.nrows, sizeof *w.rows, by_peak);
    } else {
        snprintf(err, errlen, "reading the stages: %s", sqlite3_errmsg(db));
        free(w.rows);
        w.rows = NULL;
        w.nrows = 0;
    }
    free(w.ranges);
    free(w.open);
    free(w.sums);
    addr_map_free(&w.site_of);
    *rows = w.rows;
    *count = w.nrows;
    return rc == 0 ? 0 : -1;
}
