/* plots.c — timeline, fragmentation and segment pictures from the database
 * (see plots.h); the heatmap is in plots_heatmap.c.
 *
 * Everything drawn comes from small summaries: timeline_buckets for the
 * envelopes, steps for the step lines, devices for the peak, one layout for
 * the segments. The only pass over events is the timeline's breakdown of
 * allocated bytes by series (sites, streams or size classes), which needs
 * each block's bytes per bucket: one ordered scan, values kept per bucket. */
#include "plots.h"

#ifdef GMT_HAVE_CAIRO

#include "addr_map.h"
#include "analysis.h"
#include "block_sweep.h"
#include "categories.h"
#include "db_query.h"
#include "free_split.h"
#include "gmt_grow.h"
#include "gmt_hash.h"
#include "layout.h"
#include "render.h"
#include "stack_names.h"
#include "step_stream.h"
#include "trace_format.h"
#include "units.h"
#include "when.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int plots_available(void) { return 1; }

/* Time axes of an input without timestamps count events (render_options). */
int64_t ns_per_event(sqlite3 *db) { return when_has_timestamps(db) ? 0 : GMT_UNTIMED_EVENT_NS; }

uint64_t plot_site_key(const char *label) {
    uint64_t h = gmt_hash_bytes(GMT_HASH_SEED, label ? label : "", label ? strlen(label) : 0);
    h &= ~RENDER_COLOR_KEY(0);  /* the top bit asks for an explicit colour (render.h) */
    return h > 20 ? h : h + 21; /* 0 is "other", 1..20 are ranks (site_ranks) */
}

/* The run's 20 biggest sites (by bytes at the device's peak) get the
 * palette's 20 distinct colours, keys 1..20, the same in every picture of
 * the run; the others a hash of their label. */
#define RANKED_SITES 20
typedef struct site_ranks {
    char labels[RANKED_SITES][256];
    size_t n;
} site_ranks;

/* The stacks live at the device's peak, largest first (at most `most`), with their labels
 * as one list (stack_labels_distinct): two stacks of one site never share a colour or a
 * series. *ids and *labels are malloc'ed (256 bytes a label); the count, 0 when none. */
static size_t peak_stacks(sqlite3 *db, int device, size_t most, int64_t **ids, char **labels) {
    *ids = NULL;
    *labels = NULL;
    sqlite3_stmt *st = NULL;
    if (db_prepare(db,
                   "SELECT stack_id FROM site_stats WHERE device = ? AND peak_bytes > 0 "
                   "ORDER BY peak_bytes DESC, stack_id LIMIT ?",
                   &st) != SQLITE_OK)
        return 0;
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, (int64_t)most);
    size_t n = 0, cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (gmt_grow((void **)ids, &cap, n, sizeof **ids) != 0)
            break;
        (*ids)[n++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    char **rows = malloc((n ? n : 1) * sizeof *rows);
    *labels = malloc((n ? n : 1) * 256);
    if (!rows || !*labels) {
        free(rows);
        free(*labels);
        free(*ids);
        *ids = NULL;
        *labels = NULL;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        rows[i] = *labels + 256 * i;
    stack_labels_of(db, *ids, n, rows, 256);
    free(rows);
    return n;
}

static void site_ranks_load(sqlite3 *db, int device, site_ranks *r) {
    r->n = 0;
    int64_t *ids;
    char *labels;
    size_t n = peak_stacks(db, device, 200, &ids, &labels);
    for (size_t i = 0; i < n && r->n < RANKED_SITES; i++) {
        const char *label = labels + 256 * i;
        size_t k = 0;
        while (k < r->n && strcmp(r->labels[k], label))
            k++;
        if (k == r->n)
            snprintf(r->labels[r->n++], sizeof r->labels[0], "%s", label);
    }
    free(ids);
    free(labels);
}

static uint64_t site_key(const site_ranks *r, const char *label) {
    for (size_t k = 0; r && k < r->n; k++)
        if (!strcmp(r->labels[k], label))
            return k + 1;
    return plot_site_key(label);
}

/* "train.zst — device 0 (Simulated GPU, 80.0 GiB)" */
static void device_title(sqlite3 *db, const plot_request *rq, const char *what, char *buf,
                         size_t len) {
    const char *base = rq->input ? strrchr(rq->input, '/') : NULL;
    base = base ? base + 1 : rq->input ? rq->input : "trace";
    char name[128] = "", total[32] = "";
    sqlite3_stmt *st = db_statement(db, "SELECT name, total_bytes FROM devices WHERE device = ?");
    if (st) {
        sqlite3_bind_int(st, 1, rq->device);
        if (sqlite3_step(st) == SQLITE_ROW) {
            if (sqlite3_column_text(st, 0))
                snprintf(name, sizeof name, "%s", (const char *)sqlite3_column_text(st, 0));
            if (sqlite3_column_int64(st, 1) > 0)
                units_bytes((uint64_t)sqlite3_column_int64(st, 1), total, sizeof total);
        }
        sqlite3_finalize(st);
    }
    snprintf(buf, len, "%s: %s, %s, device %d%s%s%s%s%s", what, base, "GPU memory", rq->device,
             name[0] || total[0] ? " (" : "", name, name[0] && total[0] ? ", " : "", total,
             name[0] || total[0] ? ")" : "");
}

/* ---- timeline -------------------------------------------------------------- */

/* What a block row adds to: a series index, or -1 for "other". */
typedef struct series_map {
    char **labels;
    uint64_t *keys;
    size_t n;
    const char *by;
    sqlite3 *db;
    addr_map stack_series; /* cache: stack id -> series + 2 (absent: not looked up); a hash,
                              so a forged id of 2^40 costs one slot, not an array that long */
    const site_ranks *ranks;
} series_map;

static const char *size_class(int64_t size) {
    return size < (1 << 20)     ? "< 1 MiB (small pool)"
           : size < (10 << 20)  ? "1-10 MiB"
           : size < (100 << 20) ? "10-100 MiB"
                                : ">= 100 MiB";
}

static int series_add(series_map *m, const char *label) {
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->labels[i], label))
            return (int)i;
    char **labels = realloc(m->labels, (m->n + 1) * sizeof *labels);
    uint64_t *keys = labels ? realloc(m->keys, (m->n + 1) * sizeof *keys) : NULL;
    if (labels)
        m->labels = labels;
    if (!keys)
        return -1;
    m->keys = keys;
    m->labels[m->n] = strdup(label);
    m->keys[m->n] = site_key(m->ranks, label);
    return m->labels[m->n] ? (int)m->n++ : -1;
}

/* The top sites by bytes at the device's peak, grouped by their labels as one list: the
 * stacks of one site told apart are series of their own. Those stacks keep the series of
 * their label (else "other"); any other stack joins the series of its site, if there is one. */
static void series_top_sites(series_map *m, int device, size_t top) {
    int64_t *ids;
    char *labels;
    size_t n = peak_stacks(m->db, device, SIZE_MAX / 512, &ids, &labels);
    for (size_t i = 0; i < n; i++) {
        const char *label = labels + 256 * i;
        int found = -1;
        for (size_t k = 0; k < m->n && found < 0; k++)
            if (!strcmp(m->labels[k], label))
                found = (int)k;
        if (found < 0 && m->n < top)
            found = series_add(m, label);
        if (ids[i] >= 0) /* out of memory: looked up again when met */
            addr_map_put(&m->stack_series, 0, (uint64_t)ids[i], (uint32_t)(found + 2));
    }
    free(ids);
    free(labels);
}

static int series_of(series_map *m, int64_t stack, int64_t stream, int64_t size) {
    if (!strcmp(m->by, "stream")) {
        char label[64];
        snprintf(label, sizeof label, "stream %#llx", (unsigned long long)stream);
        return m->n < 12 ? series_add(m, label) : -1;
    }
    if (!strcmp(m->by, "size-class"))
        return series_add(m, size_class(size));
    if (stack < 0)
        return -1;
    const uint32_t *cached = addr_map_get(&m->stack_series, 0, (uint64_t)stack);
    if (cached)
        return (int)*cached - 2;
    char label[256];
    stack_label(m->db, stack, label, sizeof label);
    int found = -1;
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->labels[i], label))
            found = (int)i;
    if (addr_map_put(&m->stack_series, 0, (uint64_t)stack, (uint32_t)(found + 2)) != 0)
        return -1;
    return found;
}

static void series_free(series_map *m) {
    for (size_t i = 0; i < m->n; i++)
        free(m->labels[i]);
    free(m->labels);
    free(m->keys);
    addr_map_free(&m->stack_series);
}

typedef struct timeline_data {
    size_t n, cap;
    int64_t *bucket, *start, *amin, *amax, *rmin, *rmax, *first_id, *last_id;
    int64_t *aend, *rend; /* allocated and reserved after each bucket's last event */
    int has_end;          /* aend/rend read from timeline_buckets (not an older database) */
} timeline_data;

static void free_timeline_data(timeline_data *t);
static int fill_gaps(sqlite3 *db, int64_t bucket_ns, timeline_data *t);

static int load_buckets(sqlite3 *db, const plot_request *rq, int64_t bucket_ns, timeline_data *t) {
    /* The state at each bucket's end is in the row (a database of an older memanalyze lacks
     * it: then each is looked up, one event row per bucket). */
    static const char with_end[] =
        "SELECT bucket, min_allocated_bytes, max_allocated_bytes, min_reserved_bytes, "
        "max_reserved_bytes, first_event_id, last_event_id, end_allocated_bytes, "
        "end_reserved_bytes FROM timeline_buckets WHERE device = ?1 AND bucket_ns = ?2 AND "
        "last_event_id >= ?3 AND first_event_id <= ?4 ORDER BY bucket";
    static const char without_end[] =
        "SELECT bucket, min_allocated_bytes, max_allocated_bytes, min_reserved_bytes, "
        "max_reserved_bytes, first_event_id, last_event_id, NULL, NULL FROM timeline_buckets "
        "WHERE device = ?1 AND bucket_ns = ?2 AND last_event_id >= ?3 AND first_event_id <= ?4 "
        "ORDER BY bucket";
    sqlite3_stmt *st = NULL;
    t->has_end = db_prepare(db, with_end, &st) == SQLITE_OK;
    if (!t->has_end && !(st = db_statement(db, without_end)))
        return -1;
    sqlite3_bind_int(st, 1, rq->device);
    sqlite3_bind_int64(st, 2, bucket_ns);
    sqlite3_bind_int64(st, 3, rq->from);
    sqlite3_bind_int64(st, 4, rq->to);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 1024;
            int64_t **arrays[] = {&t->bucket, &t->start,    &t->amin,    &t->amax, &t->rmin,
                                  &t->rmax,   &t->first_id, &t->last_id, &t->aend, &t->rend};
            for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++) {
                int64_t *grown = realloc(*arrays[k], cap * sizeof *grown);
                if (!grown) {
                    sqlite3_finalize(st);
                    return -1;
                }
                *arrays[k] = grown;
            }
            t->cap = cap;
        }
        size_t i = t->n++;
        t->bucket[i] = sqlite3_column_int64(st, 0);
        t->start[i] = t->bucket[i] * bucket_ns;
        t->amin[i] = sqlite3_column_int64(st, 1);
        t->amax[i] = sqlite3_column_int64(st, 2);
        t->rmin[i] = sqlite3_column_int64(st, 3);
        t->rmax[i] = sqlite3_column_int64(st, 4);
        t->first_id[i] = sqlite3_column_int64(st, 5);
        t->last_id[i] = sqlite3_column_int64(st, 6);
        if (sqlite3_column_type(st, 7) == SQLITE_NULL || sqlite3_column_type(st, 8) == SQLITE_NULL)
            t->has_end = 0; /* not written by this database's memanalyze */
        t->aend[i] = sqlite3_column_int64(st, 7);
        t->rend[i] = sqlite3_column_int64(st, 8);
    }
    sqlite3_finalize(st);
    return fill_gaps(db, bucket_ns, t);
}

/* Buckets without events are absent from the table; the state carries over
 * through them. Filling them in (the previous bucket's end state, flat)
 * keeps a picture from drawing a band across a quiet stretch. */
static int fill_gaps(sqlite3 *db, int64_t bucket_ns, timeline_data *t) {
    if (t->n < 2)
        return 0;
    size_t dense = (size_t)(t->bucket[t->n - 1] - t->bucket[0]) + 1;
    if (dense == t->n)
        return 0;
    timeline_data d = {0};
    int64_t **dst[] = {&d.bucket, &d.start,    &d.amin,    &d.amax, &d.rmin,
                       &d.rmax,   &d.first_id, &d.last_id, &d.aend, &d.rend};
    for (size_t k = 0; k < sizeof dst / sizeof dst[0]; k++)
        if (!(*dst[k] = calloc(dense, sizeof(int64_t)))) {
            free_timeline_data(&d);
            return -1;
        }
    sqlite3_stmt *st = t->has_end ? NULL
                                  : db_statement(db, "SELECT allocated_bytes, reserved_bytes FROM "
                                                     "event_rows WHERE event_id = ?");
    if (!t->has_end && !st) {
        free_timeline_data(&d);
        return -1;
    }
    size_t j = 0;
    int64_t end_alloc = 0, end_res = 0;
    for (size_t i = 0; i < dense; i++) {
        int64_t b = t->bucket[0] + (int64_t)i;
        d.bucket[i] = b;
        d.start[i] = b * bucket_ns;
        if (j < t->n && t->bucket[j] == b) {
            d.amin[i] = t->amin[j];
            d.amax[i] = t->amax[j];
            d.rmin[i] = t->rmin[j];
            d.rmax[i] = t->rmax[j];
            d.first_id[i] = t->first_id[j];
            d.last_id[i] = t->last_id[j];
            if (t->has_end) {
                end_alloc = t->aend[j];
                end_res = t->rend[j];
            } else {
                sqlite3_bind_int64(st, 1, t->last_id[j]);
                if (sqlite3_step(st) == SQLITE_ROW) {
                    end_alloc = sqlite3_column_int64(st, 0);
                    end_res = sqlite3_column_int64(st, 1);
                }
                sqlite3_reset(st);
            }
            j++;
        } else {
            d.amin[i] = d.amax[i] = end_alloc;
            d.rmin[i] = d.rmax[i] = end_res;
            d.first_id[i] = d.last_id[i] = d.last_id[i - 1];
        }
        d.aend[i] = end_alloc;
        d.rend[i] = end_res;
    }
    sqlite3_finalize(st);
    d.n = d.cap = dense;
    d.has_end = t->has_end;
    free_timeline_data(t);
    *t = d;
    return 0;
}

static void free_timeline_data(timeline_data *t) {
    free(t->bucket);
    free(t->start);
    free(t->amin);
    free(t->amax);
    free(t->rmin);
    free(t->rmax);
    free(t->first_id);
    free(t->last_id);
    free(t->aend);
    free(t->rend);
}

/* Live bytes per series at each bucket's last event: one ordered pass over
 * the device's block allocs and frees up to the window's end. */
static int sweep_series(sqlite3 *db, const plot_request *rq, const timeline_data *t, series_map *m,
                        int64_t *bytes /* [nseries_max * n] */, size_t max_series) {
    block_sweep *bs = block_sweep_open(db, rq->device, rq->to);
    if (!bs)
        return -1;
    int64_t *live = calloc(max_series + 1, sizeof *live);
    if (!live) {
        block_sweep_close(bs);
        return -1;
    }
    /* each bucket shows its series at its highest allocated moment (the envelope's top) */
    int64_t *at_max = calloc(max_series + 1, sizeof *at_max);
    if (!at_max) {
        free(live);
        block_sweep_close(bs);
        return -1;
    }
    size_t b = 0;
    int64_t total = 0, bucket_max = INT64_MIN;
    block_change c;
    while (block_sweep_next(bs, &c)) {
        while (b < t->n && c.event_id > t->last_id[b]) {
            const int64_t *v = bucket_max == INT64_MIN ? live : at_max;
            for (size_t s = 0; s < max_series; s++)
                bytes[s * t->n + b] = v[s];
            b++;
            bucket_max = INT64_MIN;
        }
        int s = series_of(m, c.stack_id, c.stream, c.size);
        if (s >= 0 && (size_t)s < max_series)
            live[s] += c.is_alloc ? c.size : -c.size;
        total += c.is_alloc ? c.size : -c.size;
        if (b < t->n && c.event_id > t->first_id[b] - 1 && total > bucket_max) {
            bucket_max = total;
            memcpy(at_max, live, max_series * sizeof *live);
        }
    }
    for (; b < t->n; b++) {
        const int64_t *v = bucket_max == INT64_MIN ? live : at_max;
        for (size_t s = 0; s < max_series; s++)
            bytes[s * t->n + b] = v[s];
        bucket_max = INT64_MIN;
    }
    free(at_max);
    free(live);
    block_sweep_close(bs);
    return 0;
}

/* By category: each category's live bytes at each bucket's last event (categories.h). */
static int category_series(sqlite3 *db, const plot_request *rq, const timeline_data *t,
                           int64_t *bytes, char *err, size_t errlen) {
    categorizer *c = categorizer_new(db, NULL, err, errlen);
    int rc = c ? categories_live_at(c, rq->device, t->last_id, t->n, bytes, err, errlen) : -1;
    categorizer_free(c);
    return rc;
}

/* By site, from the replay's site_buckets: each site's live bytes where it
 * changed, carried over between its rows; no pass over the events. */
static int series_from_site_buckets(sqlite3 *db, const plot_request *rq, int64_t bucket_ns,
                                    const timeline_data *t, series_map *m, int64_t *bytes,
                                    size_t max_series) {
    sqlite3_stmt *st = db_statement(db, "SELECT bucket, stack_id, live_bytes, peak_live_bytes "
                                        "FROM site_buckets WHERE device = ?1 AND bucket_ns = ?2 "
                                        "AND bucket <= ?3 ORDER BY bucket");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, rq->device);
    sqlite3_bind_int64(st, 2, bucket_ns);
    sqlite3_bind_int64(st, 3, t->n ? t->bucket[t->n - 1] : -1);
    addr_map last = {0}; /* stack -> index into values (its live bytes at its last row) */
    int64_t *values = NULL;
    /* live: each series after the rows read; at_max: the rows' bucket at its highest moment */
    int64_t *live = calloc(max_series + 1, sizeof *live);
    int64_t *at_max = calloc(max_series + 1, sizeof *at_max);
    size_t nvalues = 0, cap = 0, b = 0;
    int64_t cur = INT64_MIN; /* the bucket of the rows being read */
    int rc = live && at_max ? 0 : -1;
    /* Buckets before `limit`: the rows' bucket shows its highest moment, later ones what
     * was live after it. */
#define FLUSH_BEFORE(limit)                                                                        \
    for (; b < t->n && t->bucket[b] < (limit); b++)                                                \
        for (size_t s = 0; s < max_series; s++)                                                    \
            bytes[s * t->n + b] = t->bucket[b] == cur ? at_max[s] : live[s];
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int64_t bucket = sqlite3_column_int64(st, 0), stack = sqlite3_column_int64(st, 1);
        int64_t value = sqlite3_column_int64(st, 2), peak = sqlite3_column_int64(st, 3);
        if (bucket != cur) {
            FLUSH_BEFORE(bucket);
            memcpy(at_max, live, max_series * sizeof *live);
            cur = bucket;
        }
        uint32_t *slot = addr_map_get(&last, 0, (uint64_t)stack);
        if (!slot) {
            if (gmt_grow((void **)&values, &cap, nvalues, sizeof *values) != 0 ||
                addr_map_put(&last, 0, (uint64_t)stack, (uint32_t)nvalues) != 0) {
                rc = -1;
                break;
            }
            values[nvalues] = 0;
            slot = addr_map_get(&last, 0, (uint64_t)stack);
            nvalues++;
        }
        int s = series_of(m, stack, 0, 0);
        if (s >= 0 && (size_t)s < max_series) {
            at_max[s] += peak - values[*slot];
            live[s] += value - values[*slot];
        }
        values[*slot] = value;
    }
    if (rc == 0)
        FLUSH_BEFORE(INT64_MAX);
#undef FLUSH_BEFORE
    sqlite3_finalize(st);
    addr_map_free(&last);
    free(values);
    free(live);
    free(at_max);
    return rc;
}

int plot_timeline(sqlite3 *db, const plot_request *rq, const char *path, char *err, size_t errlen) {
    if (errlen)
        err[0] = '\0';
    int64_t bucket_ns = db_query_int(db, "SELECT value FROM meta WHERE key = 'bucket_ns'", 1);
    timeline_data t = {0};
    site_ranks ranks;
    site_ranks_load(db, rq->device, &ranks);
    series_map m = {.by = rq->by ? rq->by : "site", .db = db, .ranks = &ranks};
    size_t top = rq->top ? rq->top : 8, max_series = 16;
    int64_t *bytes = NULL, *stacked = NULL;
    int rc = load_buckets(db, rq, bucket_ns, &t);
    int history = when_has_history(db);
    if (!history)
        t.n = 0; /* one moment: no time to draw it over */
    int by_category = !strcmp(m.by, "category");
    if (rc == 0 && !strcmp(m.by, "site"))
        series_top_sites(&m, rq->device, top);
    if (rc == 0 && by_category) /* the profiler's colours; "other" is the grey rest below */
        for (int k = 0; k < BLOCK_CATEGORY_OTHER && rc == 0; k++)
            if (series_add(&m, gmt_category_name((gmt_category)k)) != k)
                rc = -1;
    if (rc == 0 && t.n) {
        bytes = calloc((by_category ? BLOCK_CATEGORY_COUNT : max_series) * t.n, sizeof *bytes);
        rc = !bytes        ? -1
             : by_category ? category_series(db, rq, &t, bytes, err, errlen)
             : !strcmp(m.by, "site")
                 ? series_from_site_buckets(db, rq, bucket_ns, &t, &m, bytes, max_series)
                 : sweep_series(db, rq, &t, &m, bytes, max_series);
    }
    /* the series drawn, then "other" = allocated - their sum (at bucket ends) */
    size_t nseries = m.n < max_series ? m.n : max_series;
    const char **labels = calloc(nseries + 1, sizeof *labels);
    uint64_t *keys = calloc(nseries + 1, sizeof *keys);
    stacked = calloc((nseries + 1) * (t.n ? t.n : 1), sizeof *stacked);
    if (rc == 0 && (!labels || !keys || !stacked))
        rc = -1;
    for (size_t i = 0; rc == 0 && i < t.n; i++) {
        int64_t sum = 0;
        for (size_t s = 0; s < nseries; s++) {
            stacked[s * t.n + i] = bytes[s * t.n + i];
            sum += bytes[s * t.n + i];
        }
        layout_totals tot;
        if (!t.has_end) { /* an older database: the state after the bucket's last event */
            int known = layout_timeline_at(db, rq->device, t.last_id[i], &tot) == 0;
            t.aend[i] = known ? tot.allocated_bytes : t.amax[i];
            t.rend[i] = known ? tot.reserved_bytes : t.rmax[i];
        }
        int64_t alloc_end = t.aend[i];
        stacked[nseries * t.n + i] = alloc_end > sum ? alloc_end - sum : 0;
    }
    for (size_t s = 0; rc == 0 && s < nseries; s++) {
        labels[s] = m.labels[s];
        keys[s] = by_category ? RENDER_COLOR_KEY(gmt_category_colour((gmt_category)s)) : m.keys[s];
    }
    if (rc == 0) {
        labels[nseries] = "other";
        keys[nseries] = 0;
    }
    /* without timestamps the x axis is the events' ids, GMT_UNTIMED_EVENT_NS apart, so the
     * picture's "event N" is the report's even where one entry made several events */
    const int64_t per = GMT_UNTIMED_EVENT_NS;
    int untimed = !when_has_timestamps(db);
    for (size_t i = 0; untimed && i < t.n; i++) {
        int64_t first = t.first_id[i] > 0 ? t.first_id[i] : 0;
        if (i && first <= t.last_id[i - 1])
            first = t.last_id[i - 1] + 1;
        t.start[i] = first * per;
    }
    /* steps, peak, OOMs */
    size_t nsteps = 0;
    int64_t *step_ns = NULL;
    char **step_text = NULL;
    sqlite3_stmt *st =
        db_statement(db, "SELECT step, begin_ts_ns, begin_event_id FROM steps WHERE "
                         "end_event_id >= ?1 AND begin_event_id <= ?2 ORDER BY begin_ts_ns");
    if (st && rc == 0) {
        sqlite3_bind_int64(st, 1, rq->from);
        sqlite3_bind_int64(st, 2, rq->to);
        size_t cap = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (nsteps == cap) {
                cap = cap ? cap * 2 : 64;
                step_ns = realloc(step_ns, cap * sizeof *step_ns);
                step_text = realloc(step_text, cap * sizeof *step_text);
                if (!step_ns || !step_text) {
                    rc = -1;
                    break;
                }
            }
            char label[32];
            snprintf(label, sizeof label, "%lld", (long long)sqlite3_column_int64(st, 0));
            step_ns[nsteps] =
                untimed ? sqlite3_column_int64(st, 2) * per : sqlite3_column_int64(st, 1);
            step_text[nsteps++] = strdup(label);
        }
    }
    sqlite3_finalize(st);
    int64_t peak_id = db_query_i64(
        db, "SELECT peak_allocated_event_id FROM devices WHERE device = ?1", rq->device, 0, 0);
    layout_totals peak = {0};
    if (peak_id < rq->from || peak_id > rq->to ||
        layout_timeline_at(db, rq->device, peak_id, &peak))
        peak.allocated_bytes = 0;
    if (untimed)
        peak.ts_ns = (peak_id > 0 ? peak_id : 0) * per;
    size_t nooms = 0;
    int64_t *oom_ns = NULL;
    if (db_query_i64(db, "SELECT ooms FROM devices WHERE device = ?1", rq->device, 0, 0) > 0 &&
        (st = db_statement(db, "SELECT ts_ns, event_id FROM event_rows WHERE device = ?1 AND op = "
                               "{op:oom} AND event_id BETWEEN ?2 AND ?3"))) {
        sqlite3_bind_int(st, 1, rq->device);
        sqlite3_bind_int64(st, 2, rq->from);
        sqlite3_bind_int64(st, 3, rq->to);
        while (sqlite3_step(st) == SQLITE_ROW && nooms < 256) {
            int64_t *grown = realloc(oom_ns, (nooms + 1) * sizeof *grown);
            if (!grown)
                break;
            oom_ns = grown;
            oom_ns[nooms++] =
                untimed ? sqlite3_column_int64(st, 1) * per : sqlite3_column_int64(st, 0);
        }
        sqlite3_finalize(st);
    }
    char title[512], subtitle[256], span[32], heading[64];
    device_title(db, rq, "Timeline", title, sizeof title);
    snprintf(heading, sizeof heading, "allocated by %s", m.by);
    int64_t end_ns = !t.n      ? 0
                     : untimed ? (t.last_id[t.n - 1] + 1) * per
                               : t.start[t.n - 1] + bucket_ns;
    int64_t length = end_ns; /* the whole run: to its last bucket's end */
    int64_t last_event = db_query_i64(db, "SELECT max(event_id) FROM event_rows", 0, 0, 0);
    if (rq->from > 0 || rq->to < last_event) { /* a window: its own length */
        static const char ts_sql[] = "SELECT ts_ns FROM event_rows WHERE event_id = ?1";
        int64_t to_ns = db_query_i64(db, ts_sql, rq->to < last_event ? rq->to : last_event, 0, 0);
        int64_t from_ns = rq->from > 0 ? db_query_i64(db, ts_sql, rq->from, 0, 0) : 0;
        length = to_ns > from_ns ? to_ns - from_ns : 0;
    }
    if (!untimed)
        units_duration(length > 0 ? (uint64_t)length : 0, span, sizeof span);
    else /* the events of the window (of the run: all of them) */
        snprintf(span, sizeof span, "%lld events",
                 (long long)((rq->to < last_event ? rq->to : last_event) -
                             (rq->from > 0 ? rq->from : 0)));
    snprintf(subtitle, sizeof subtitle,
             "allocated (stacked by %s) and reserved over %s; steps, the peak and the device "
             "limit marked",
             m.by, span);
    if (!history)
        snprintf(subtitle, sizeof subtitle, "%s", PLOT_NO_HISTORY);
    render_timeline rt = {
        .title = title,
        .subtitle = subtitle,
        .nbuckets = t.n,
        .bucket_start_ns = t.start,
        .end_ns = end_ns,
        .allocated_min = t.amin,
        .allocated_max = t.amax,
        .reserved_min = t.rmin,
        .reserved_max = t.rmax,
        .allocated_end = t.aend,
        .reserved_end = t.rend,
        .nseries = rc == 0 && t.n ? nseries + 1 : 0,
        .series_heading = heading,
        .series_label = labels,
        .series_key = keys,
        .series_bytes = stacked,
        .nsteps = nsteps,
        .step_ns = step_ns,
        .step_label = (const char *const *)step_text,
        .peak_ns = peak.ts_ns,
        .peak_bytes = peak.allocated_bytes,
        .device_total_bytes =
            db_query_i64(db, "SELECT total_bytes FROM devices WHERE device = ?1", rq->device, 0, 0),
        .nooms = nooms,
        .oom_ns = oom_ns};
    render_options ro = {
        .width = rq->width, .height = rq->height, .ns_per_event = ns_per_event(db)};
    if (rc != 0 && !err[0]) /* the categories say what went wrong themselves */
        snprintf(err, errlen, "reading the database for the timeline: %s", sqlite3_errmsg(db));
    else if (rc == 0)
        rc = render_timeline_draw(&rt, path, &ro, err, errlen);
    for (size_t i = 0; i < nsteps; i++)
        free(step_text[i]);
    free(step_text);
    free(step_ns);
    free(oom_ns);
    free(labels);
    free(keys);
    free(stacked);
    free(bytes);
    series_free(&m);
    free_timeline_data(&t);
    return rc;
}

/* ---- fragmentation ---------------------------------------------------------- */

/* The trapped ratio at each point (free_split.h), from layouts: at most
 * TRAPPED_POINTS of them (a layout each), the points between holding the
 * last value. NULL
 * when it cannot be had (the picture then shows the ratio without it). */
#define TRAPPED_POINTS 256
static double *trapped_ratios(sqlite3 *db, int device, const step_state *points, size_t n) {
    size_t stride = n > TRAPPED_POINTS ? (n + TRAPPED_POINTS - 1) / TRAPPED_POINTS : 1;
    size_t m = n ? (n + stride - 1) / stride : 0;
    double *out = calloc(n + 1, sizeof *out);
    int64_t *ids = calloc(m + 1, sizeof *ids);
    free_split *splits = calloc(m + 1, sizeof *splits);
    char err[256];
    int ok = out && ids && splits;
    for (size_t k = 0; ok && k < m; k++)
        ids[k] = points[k * stride].at_end.event_id;
    ok = ok && free_split_at(db, device, ids, m, splits, err, sizeof err) == 0;
    for (size_t i = 0; ok && i < n; i++)
        out[i] = free_split_trapped_ratio(&splits[i / stride]);
    free(ids);
    free(splits);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

int plot_fragmentation(sqlite3 *db, const plot_request *rq, const char *path, char *err,
                       size_t errlen) {
    step_state *steps = NULL;
    size_t n = 0;
    double *x = NULL, *frag = NULL, *trapped = NULL;
    int64_t *largest = NULL;
    int x_is_time = 0, rc = analysis_steps(db, rq->device, rq->from, rq->to, &steps, &n);
    if (rc == 0 && n == 0) { /* no steps: over time, from the buckets' ends */
        int64_t bucket_ns = db_query_int(db, "SELECT value FROM meta WHERE key = 'bucket_ns'", 1);
        timeline_data t = {0};
        rc = load_buckets(db, rq, bucket_ns, &t);
        steps = rc == 0 && t.n ? calloc(t.n, sizeof *steps) : NULL;
        int untimed = !when_has_timestamps(db); /* then the axis is the report's event ids */
        for (size_t i = 0; steps && i < t.n; i++) {
            analysis_moment(db, rq->device, t.last_id[i], &steps[i].at_end);
            steps[i].step = untimed ? t.last_id[i] * GMT_UNTIMED_EVENT_NS : t.start[i];
        }
        n = steps ? t.n : 0;
        x_is_time = 1;
        free_timeline_data(&t);
    }
    x = calloc(n + 1, sizeof *x);
    frag = calloc(n + 1, sizeof *frag);
    largest = calloc(n + 1, sizeof *largest);
    if (!x || !frag || !largest)
        rc = -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        x[i] = x_is_time ? (double)steps[i].step / 1e9 : (double)steps[i].step;
        frag[i] = frag_of(&steps[i].at_end);
        largest[i] = steps[i].at_end.largest_free;
    }
    if (!when_has_history(db))
        n = 0; /* one moment: no time to draw it over */
    if (rc == 0)
        trapped = trapped_ratios(db, rq->device, steps, n);
    char title[512];
    device_title(db, rq, "Fragmentation", title, sizeof title);
    render_band bands[FRAG_BAND_COUNT];
    _Static_assert(FRAG_BAND_COUNT <= RENDER_MAX_BANDS, "the picture shades this many bands");
    for (int b = 0; b < FRAG_BAND_COUNT; b++)
        bands[b] = (render_band){gmt_frag_band_from(b), gmt_frag_band_name(b)};
    const char *no_history = when_has_history(db) ? NULL : PLOT_NO_HISTORY;
    render_fragmentation rf = {
        .title = title,
        .nbands = FRAG_BAND_COUNT,
        .bands = bands,
        /* the verdict is the trapped ratio (a warm cache is not fragmentation) */
        .bands_rate = trapped ? "rating of trapped / reserved"
                              : "rating of (reserved - allocated) / reserved",
        .subtitle = no_history  ? no_history
                    : x_is_time ? "(reserved - allocated) / reserved and its trapped "
                                  "part over time (no steps found), and the "
                                  "largest free block"
                                : "(reserved - allocated) / reserved and its trapped "
                                  "part at each step's end, and the largest free "
                                  "block",
        .npoints = n,
        .x = x,
        .x_is_time = x_is_time,
        .fragmentation = frag,
        .trapped = trapped,
        .largest_free = largest};
    render_options ro = {
        .width = rq->width, .height = rq->height, .ns_per_event = ns_per_event(db)};
    if (rc != 0)
        snprintf(err, errlen, "reading the database for fragmentation: %s", sqlite3_errmsg(db));
    else
        rc = render_fragmentation_draw(&rf, path, &ro, err, errlen);
    free(steps);
    free(x);
    free(frag);
    free(trapped);
    free(largest);
    return rc;
}

/* ---- segments ---------------------------------------------------------------- */

typedef struct legend_entry {
    char label[256];
    uint64_t key, bytes;
} legend_entry;

static int by_bytes_desc(const void *a, const void *b) {
    const legend_entry *x = a, *y = b;
    return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

/* The labels of the stacks of a layout's live blocks, as one list (stack_labels_distinct). */
typedef struct live_labels {
    const named_stack **stacks; /* each once, by address */
    char *labels;               /* 256 bytes each */
    size_t n;
} live_labels;

static int by_address(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (const named_stack *const *)a;
    uintptr_t y = (uintptr_t) * (const named_stack *const *)b;
    return x < y ? -1 : x > y;
}

static int live_labels_read(live_labels *ll, const layout *l, stack_names *cache) {
    ll->stacks = malloc((l->block_count + 1) * sizeof *ll->stacks);
    if (!ll->stacks)
        return -1;
    for (size_t i = 0; i < l->block_count; i++)
        if (l->blocks[i].state != LAYOUT_INACTIVE) {
            const named_stack *s = stack_names_get(cache, l->blocks[i].stack_id);
            if (!s)
                return -1;
            ll->stacks[ll->n++] = s;
        }
    qsort(ll->stacks, ll->n, sizeof *ll->stacks, by_address);
    size_t m = 0;
    for (size_t i = 0; i < ll->n; i++)
        if (!m || ll->stacks[m - 1] != ll->stacks[i])
            ll->stacks[m++] = ll->stacks[i];
    ll->n = m;
    char **rows = malloc((m + 1) * sizeof *rows);
    ll->labels = malloc((m + 1) * 256);
    if (!rows || !ll->labels) {
        free(rows);
        return -1;
    }
    for (size_t i = 0; i < m; i++)
        rows[i] = ll->labels + 256 * i;
    int rc = stack_labels_distinct(ll->stacks, m, rows, 256);
    free(rows);
    return rc;
}

static const char *live_label(const live_labels *ll, const named_stack *s) {
    const named_stack **at =
        s ? bsearch(&s, ll->stacks, ll->n, sizeof *ll->stacks, by_address) : NULL;
    return at ? ll->labels + 256 * (size_t)(at - ll->stacks) : "no stack";
}

int plot_segments(sqlite3 *db, const plot_request *rq, const char *path, char *err, size_t errlen) {
    layout *l = NULL;
    if (layout_build(db, rq->device, rq->at, &l, err, errlen) != 0)
        return -1;
    render_segment *segs = calloc(l->segment_count + 1, sizeof *segs);
    render_block *blocks = calloc(l->block_count + 1, sizeof *blocks);
    legend_entry *legend = calloc(l->block_count + 1, sizeof *legend);
    stack_names *cache = stack_names_new(db);
    size_t nlegend = 0;
    site_ranks ranks;
    site_ranks_load(db, rq->device, &ranks);
    int rc = segs && blocks && legend && cache ? 0 : -1;
    live_labels live = {0};
    if (rc == 0)
        rc = live_labels_read(&live, l, cache);
    for (size_t i = 0; rc == 0 && i < l->block_count; i++) {
        const layout_block *b = &l->blocks[i];
        blocks[i].size = b->size;
        blocks[i].state = b->state == LAYOUT_INACTIVE       ? RENDER_BLOCK_FREE
                          : b->state == LAYOUT_PENDING_FREE ? RENDER_BLOCK_PENDING_FREE
                                                            : RENDER_BLOCK_ALLOCATED;
        if (b->state == LAYOUT_INACTIVE)
            continue;
        const char *site = live_label(&live, stack_names_get(cache, b->stack_id));
        blocks[i].site_key = site_key(&ranks, site);
        size_t k = 0;
        while (k < nlegend && legend[k].key != blocks[i].site_key)
            k++;
        if (k == nlegend) {
            snprintf(legend[k].label, sizeof legend[k].label, "%s", site);
            legend[k].key = blocks[i].site_key;
            nlegend++;
        }
        legend[k].bytes += b->size;
    }
    for (size_t i = 0; rc == 0 && i < l->segment_count; i++) {
        const layout_segment *s = &l->segments[i];
        segs[i] = (render_segment){.address = s->addr,
                                   .size = s->size,
                                   .nblocks = s->block_count,
                                   .blocks = &blocks[s->first_block]};
        for (size_t k = 0; k < s->block_count; k++)
            blocks[s->first_block + k].offset = l->blocks[s->first_block + k].addr - s->addr;
    }
    qsort(legend, nlegend, sizeof *legend, by_bytes_desc);
    size_t shown = nlegend < (rq->top ? rq->top : 12) ? nlegend : (rq->top ? rq->top : 12);
    const char **labels = calloc(shown + 1, sizeof *labels);
    uint64_t *keys = calloc(shown + 1, sizeof *keys);
    for (size_t i = 0; labels && keys && i < shown; i++) {
        labels[i] = legend[i].label;
        keys[i] = legend[i].key;
    }
    /* The sites the legend leaves out are drawn as "other" (key 0, grey), so
     * every colour in the picture is in its legend. */
    char other[64];
    size_t nlisted = shown;
    if (labels && keys && nlegend > shown) {
        for (size_t i = 0; i < l->block_count; i++) {
            size_t k = 0;
            while (k < shown && keys[k] != blocks[i].site_key)
                k++;
            if (k == shown)
                blocks[i].site_key = 0;
        }
        snprintf(other, sizeof other, "other (%zu sites)", nlegend - shown);
        labels[nlisted] = other;
        keys[nlisted++] = 0;
    }
    char title[512], subtitle[256], when[96], b1[32], b2[32];
    device_title(db, rq, "Segments", title, sizeof title);
    when_describe(db, rq->at, when, sizeof when);
    snprintf(subtitle, sizeof subtitle, "at %s: %zu segments, %s reserved, %s allocated", when,
             l->segment_count, units_bytes(l->reserved_bytes, b1, sizeof b1),
             units_bytes(l->allocated_bytes, b2, sizeof b2));
    render_layout rl = {.title = title,
                        .subtitle = subtitle,
                        .nsegments = l->segment_count,
                        .segments = segs,
                        .nlegend = labels && keys ? nlisted : 0,
                        .legend_label = labels,
                        .legend_key = keys};
    render_options ro = {
        .width = rq->width, .height = rq->height, .ns_per_event = ns_per_event(db)};
    if (rc != 0)
        snprintf(err, errlen, "out of memory drawing segments");
    else
        rc = render_segments_draw(&rl, path, &ro, err, errlen);
    free(labels);
    free(keys);
    free(legend);
    free(segs);
    free(blocks);
    free(live.stacks);
    free(live.labels);
    stack_names_free(cache);
    layout_free(l);
    return rc;
}

#else /* no Cairo: the commands exist and say why they cannot draw */

#include <stdio.h>

int plots_available(void) { return 0; }

uint64_t plot_site_key(const char *label) {
    (void)label;
    return 1;
}

static int no_cairo(char *err, size_t errlen) {
    snprintf(err, errlen, "pictures are off in this build: Cairo was not found at configure time");
    return -1;
}

int plot_timeline(sqlite3 *db, const plot_request *rq, const char *path, char *err, size_t errlen) {
    (void)db, (void)rq, (void)path;
    return no_cairo(err, errlen);
}

int plot_heatmap(sqlite3 *db, const plot_request *rq, const char *path, char *err, size_t errlen) {
    (void)db, (void)rq, (void)path;
    return no_cairo(err, errlen);
}

int plot_segments(sqlite3 *db, const plot_request *rq, const char *path, char *err, size_t errlen) {
    (void)db, (void)rq, (void)path;
    return no_cairo(err, errlen);
}

int plot_fragmentation(sqlite3 *db, const plot_request *rq, const char *path, char *err,
                       size_t errlen) {
    (void)db, (void)rq, (void)path;
    return no_cairo(err, errlen);
}

#endif
