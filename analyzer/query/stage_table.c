/* stage_table.c — memory per named range (see stage_table.h): the ranges in order of their
 * start, and one sweep of the device's timeline that opens and closes them as it goes.
 *
 * Per event the sweep touches the stages open then, not the ranges: a stage open several times
 * over (nested or overlapping ranges of one name) counts an event once, and a thousand ranges of
 * one name open at once cost one update. Names are found by a hash of the whole name (stored
 * whole: a long record_function name with shapes is still one stage). */
#include "stage_table.h"

#include "addr_map.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_grow.h"
#include "gmt_hash.h"
#include "step_table.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct range {
    size_t stage;             /* index into the rows */
    int64_t begin_ts, end_ts; /* end INT64_MAX: open at the end of the trace */
    int64_t begin_allocated;  /* the state entering it */
    int64_t events_at_open;   /* the device's events before it: none inside if equal at close */
    int64_t number;           /* a numbered kind's number, or -1 */
    int before_history;       /* opened before the device's first event */
} range;

typedef struct site_sum {
    size_t stage;
    int64_t stack, bytes;
} site_sum;

typedef struct sweep {
    stage_row *rows;
    char **names;  /* whole names, by row */
    size_t *depth; /* ranges of each stage open now */
    size_t nrows, cap_rows, cap_names, cap_depth;
    addr_map name_of; /* (hash, length) -> 1 + row */
    range *ranges;
    size_t nranges, cap_ranges;
    size_t *open; /* indexes of the ranges open now */
    size_t nopen;
    size_t *open_stages; /* stages with depth > 0, each once */
    size_t nopen_stages;
    addr_map site_of; /* (stage, stack) -> 1 + index into sums */
    site_sum *sums;
    size_t nsums, cap_sums;
    int64_t allocated;        /* the device's allocated now */
    int64_t last_id;          /* the event of that state */
    int64_t events;           /* the device's recorded events so far */
    int count_empty;          /* one device: a range without its events still counts */
    int mid_run;              /* the device's history begins mid-run (step_table.h) */
    int64_t ranges_elsewhere; /* closed ranges no stage counted */
    int64_t lost;             /* of them, ended before a history begun mid-run */
} sweep;

/* The number of a name that ends in "#" and digits, and the length of its kind (the name up to
 * and with the "#"); -1 for any other name. */
static int64_t name_number(const char *name, size_t *kind_len) {
    size_t len = strlen(name), d = len;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
        d--;
    if (d == len || d == 0 || name[d - 1] != '#' || len - d > 18)
        return -1;
    *kind_len = d;
    return strtoll(name + d, NULL, 10);
}

static size_t stage_named_row(sweep *w, const char *name, int numbered);

static size_t stage_named(sweep *w, const char *whole, int64_t *number_out) {
    size_t kind_len = 0;
    int64_t number = name_number(whole, &kind_len);
    char kind[4096];
    const char *name = whole;
    if (number >= 0 && kind_len < sizeof kind) { /* the kind stands for every number of it */
        memcpy(kind, whole, kind_len);
        kind[kind_len] = '\0';
        name = kind;
    } else {
        number = -1;
    }
    *number_out = number;
    return stage_named_row(w, name, number >= 0);
}

static size_t stage_named_row(sweep *w, const char *name, int numbered) {
    size_t len = strlen(name) + (numbered ? 1 : 0); /* a kind is no name of the same text */
    uint64_t h = gmt_hash_bytes(GMT_HASH_SEED, name, len);
    uint32_t *at = addr_map_get(&w->name_of, h, len);
    if (at && !strcmp(w->names[*at - 1], name) && (w->rows[*at - 1].number_first != -1) == numbered)
        return *at - 1;
    for (size_t i = 0; at && i < w->nrows; i++) /* a hash collision: rare, searched */
        if (!strcmp(w->names[i], name) && (w->rows[i].number_first != -1) == numbered)
            return i;
    if (gmt_grow((void **)&w->rows, &w->cap_rows, w->nrows, sizeof *w->rows) != 0 ||
        gmt_grow((void **)&w->names, &w->cap_names, w->nrows, sizeof *w->names) != 0 ||
        gmt_grow((void **)&w->depth, &w->cap_depth, w->nrows, sizeof *w->depth) != 0 ||
        !(w->names[w->nrows] = strdup(name)) ||
        (!at && addr_map_put(&w->name_of, h, len, (uint32_t)(w->nrows + 1)) != 0))
        return SIZE_MAX;
    stage_row *r = &w->rows[w->nrows];
    memset(r, 0, sizeof *r);
    r->name = w->names[w->nrows]; /* shared until the end: the rows take them over */
    r->peak_allocated = -1;
    r->number_first = numbered ? INT64_MAX : -1; /* a kind's: the counted ranges' (close_range) */
    r->number_last = numbered ? INT64_MIN : -1;
    w->depth[w->nrows] = 0;
    return w->nrows++;
}

static int read_ranges(sqlite3 *db, sweep *w) {
    sqlite3_stmt *st = db_statement(db, "SELECT name, begin_ts_ns, end_ts_ns FROM ranges WHERE "
                                        "name IS NOT NULL ORDER BY begin_ts_ns, marker_id");
    if (!st)
        return -1;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int64_t number;
        size_t stage = stage_named(w, (const char *)sqlite3_column_text(st, 0), &number);
        if (stage == SIZE_MAX ||
            gmt_grow((void **)&w->ranges, &w->cap_ranges, w->nranges, sizeof *w->ranges) != 0) {
            rc = -1;
            break;
        }
        w->ranges[w->nranges++] = (range){
            stage, sqlite3_column_int64(st, 1), db_column_i64(st, 2, INT64_MAX), 0, 0, number, 0};
    }
    sqlite3_finalize(st);
    w->open = malloc((w->nranges ? w->nranges : 1) * sizeof *w->open);
    w->open_stages = malloc((w->nrows ? w->nrows : 1) * sizeof *w->open_stages);
    return rc == 0 && w->open && w->open_stages ? 0 : -1;
}

static void peak_at(stage_row *r, int64_t allocated, int64_t event_id) {
    if (allocated > r->peak_allocated) {
        r->peak_allocated = allocated;
        r->peak_event_id = event_id;
    }
}

static void open_range(sweep *w, size_t index) {
    range *g = &w->ranges[index];
    g->begin_allocated = w->allocated;
    g->events_at_open = w->events;
    g->before_history = w->events == 0;
    w->open[w->nopen++] = index;
    if (w->depth[g->stage]++ == 0)
        w->open_stages[w->nopen_stages++] = g->stage;
}

/* Closes open[k]: counted when this device had an event inside (or is the only one). */
static void close_range(sweep *w, size_t k) {
    range *g = &w->ranges[w->open[k]];
    stage_row *r = &w->rows[g->stage];
    int measured = w->events > 0 || !w->mid_run; /* not before a history begun mid-run */
    if ((g->events_at_open < w->events || w->count_empty) && measured) {
        int64_t net = w->allocated - g->begin_allocated;
        r->count++;
        if (g->before_history && w->lost) { /* its begin lies in the history's hole */
            r->net_unknown++;
        } else {
            if (r->count - r->net_unknown == 1)
                r->net_first = net;
            r->net_total += net;
        }
        peak_at(r, g->begin_allocated, w->last_id); /* the state entering it is inside */
        if (g->number >= 0 && g->number < r->number_first)
            r->number_first = g->number;
        if (g->number > r->number_last)
            r->number_last = g->number;
    } else {
        w->ranges_elsewhere++;
        w->lost += !measured;
    }
    w->open[k] = w->open[--w->nopen];
    if (--w->depth[g->stage] == 0)
        for (size_t i = 0; i < w->nopen_stages; i++)
            if (w->open_stages[i] == g->stage) {
                w->open_stages[i] = w->open_stages[--w->nopen_stages];
                break;
            }
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
    /* The device's events in order, a chunk of columns at a time (event_scan.h). */
    enum { ID, TS, ALLOCATED, OP, LEVEL, SIZE, STACK, DEVICE, NCOL };
    static const int want[NCOL] = {EVENT_COL_event_id, EVENT_COL_ts_ns, EVENT_COL_allocated_bytes,
                                   EVENT_COL_op,       EVENT_COL_level, EVENT_COL_size,
                                   EVENT_COL_stack_id, EVENT_COL_device};
    uint32_t mask = event_scan_mask(want, NCOL);
    char err[256];
    event_scan *scan = event_scan_open(db, mask, INT64_MIN, INT64_MAX, err, sizeof err);
    if (!scan)
        return -1;
    size_t next = 0;
    int rc = 0;
    const int64_t *col[EVENT_STORE_NCOLS], *v[NCOL];
    long got;
    while (rc == 0 && (got = event_scan_next(scan, col)) > 0) {
        event_scan_pick(col, want, NCOL, v);
        for (long i = 0; rc == 0 && i < got; i++) {
            int64_t id = v[ID][i], ts = v[TS][i];
            if (v[DEVICE][i] != device || (id <= 0 && v[OP][i] != DB_OP_SEED))
                continue;
            if (id > 0) { /* the seed is the state before everything: no range holds it */
                for (size_t k = w->nopen; k-- > 0;)
                    if (w->ranges[w->open[k]].end_ts <= ts)
                        close_range(w, k);
                for (; next < w->nranges && w->ranges[next].begin_ts <= ts; next++) {
                    open_range(w, next);
                    if (w->ranges[next].end_ts <= ts) /* began and ended between two events */
                        close_range(w, w->nopen - 1);
                }
                w->events++;
            }
            w->allocated = v[ALLOCATED][i];
            w->last_id = id > 0 ? id : 0;
            int block_alloc =
                v[OP][i] == TRACE_OP_ALLOC && v[LEVEL][i] == TRACE_LEVEL_BLOCK && id > 0;
            for (size_t k = 0; k < w->nopen_stages; k++) { /* each open stage once */
                size_t stage = w->open_stages[k];
                stage_row *r = &w->rows[stage];
                peak_at(r, w->allocated, id);
                if (block_alloc) {
                    int64_t size = event_value_or(v[SIZE][i], 0);
                    r->allocs++;
                    r->allocated_bytes += size;
                    rc = add_site(w, stage, event_value_or(v[STACK][i], 0), size);
                }
            }
        }
    }
    if (rc == 0 && got < 0)
        rc = -1; /* the query's error: what event_scan says is in its own message */
    event_scan_close(scan);
    while (w->nopen) /* open at the end of the trace: they end there */
        close_range(w, w->nopen - 1);
    for (; next < w->nranges; next++) { /* begun after the last event: nothing inside */
        open_range(w, next);
        close_range(w, w->nopen - 1);
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

/* A numbered kind's name: "KIND#first..#last", or "KIND#n" for one number. NULL: out of memory
 * (the kind's name stays). */
static char *numbered_name(const stage_row *r) {
    size_t len = strlen(r->name) + 48;
    char *out = malloc(len);
    if (!out)
        return NULL;
    if (r->number_first == r->number_last)
        snprintf(out, len, "%s%lld", r->name, (long long)r->number_first);
    else
        snprintf(out, len, "%s%lld..#%lld", r->name, (long long)r->number_first,
                 (long long)r->number_last);
    return out;
}

int stage_table(sqlite3 *db, int device, stage_row **rows, size_t *count, stage_summary *summary,
                char *err, size_t errlen) {
    sweep w;
    memset(&w, 0, sizeof w);
    w.count_empty =
        db_query_i64(db, "SELECT count(*) FROM devices WHERE allocs IS NOT NULL", 0, 0, 0) <= 1;
    int64_t first_event;
    int rc = step_history_begin(db, device, &w.mid_run, &first_event);
    if (rc == 0)
        rc = read_ranges(db, &w);
    if (rc == 0)
        rc = run_sweep(db, device, &w);
    size_t nnames = w.nrows; /* before the rows are compacted */
    if (rc == 0) {
        top_sites(&w);
        size_t kept = 0; /* stages with a range of this device */
        for (size_t i = 0; i < w.nrows; i++) {
            stage_row *r = &w.rows[i];
            if (!r->count) {
                free(r->name);
                continue;
            }
            r->net_mean = r->count > r->net_unknown
                              ? (double)r->net_total / (double)(r->count - r->net_unknown)
                              : 0;
            char *named = r->number_first != -1 ? numbered_name(r) : NULL;
            if (named) {
                free(r->name);
                r->name = named;
            }
            w.rows[kept++] = *r;
        }
        w.nrows = kept;
        if (w.nrows) /* qsort wants an array, even of none */
            qsort(w.rows, w.nrows, sizeof *w.rows, by_peak);
    } else {
        snprintf(err, errlen, "reading the stages: %s", sqlite3_errmsg(db));
        for (size_t i = 0; i < nnames; i++)
            free(w.names[i]);
        free(w.rows);
        w.rows = NULL;
        w.nrows = 0;
    }
    free(w.names);
    free(w.depth);
    free(w.ranges);
    free(w.open);
    free(w.open_stages);
    free(w.sums);
    addr_map_free(&w.site_of);
    addr_map_free(&w.name_of);
    *rows = w.rows;
    *count = w.nrows;
    if (summary)
        *summary = (stage_summary){(int64_t)w.nranges, rc == 0 ? w.ranges_elsewhere : 0};
    return rc == 0 ? 0 : -1;
}

void stage_table_free(stage_row *rows, size_t count) {
    for (size_t i = 0; i < count; i++)
        free(rows[i].name);
    free(rows);
}
