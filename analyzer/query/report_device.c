/* report_device.c — `report`'s facts about one device over a window (report.h): the summary
 * and the moments of its peaks, what held memory at the peak (stacks, categories, named
 * tensors), the cache at work, fragmentation and the trapped part of the free memory at the
 * peak, the end, step ends and OOMs, the largest allocations, the growing sites, and the
 * headroom; the peak's phase in an input without steps and where a history that begins mid-run
 * begins (step_table.h's rules). The OOMs' verdicts and the recommendations are report_oom.c's. */
#include "block_sweep.h"
#include "category_store.h"
#include "db_query.h"
#include "report_internal.h"
#include "stack_names.h"
#include "step_table.h"
#include "when.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARM_CACHE_MIN (64 << 20) /* releasable bytes below which a cache is not worth saying */

/* The labels of a list of n rows of `size` bytes (stack_labels_of): the row's stack id at
 * id_at, its label (len bytes) written at label_at. 0, or -1 when out of memory. */
static int list_labels(sqlite3 *db, void *rows, size_t n, size_t size, size_t id_at,
                       size_t label_at, size_t len) {
    int64_t *ids = malloc((n ? n : 1) * sizeof *ids);
    char **labels = malloc((n ? n : 1) * sizeof *labels);
    int rc = ids && labels ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *row = (char *)rows + i * size;
        memcpy(&ids[i], row + id_at, sizeof ids[i]);
        labels[i] = row + label_at;
    }
    if (rc == 0)
        rc = stack_labels_of(db, ids, n, labels, len);
    free(ids);
    free(labels);
    return rc;
}

static double share_of(int64_t part, int64_t whole) {
    return whole ? (double)part / (double)whole : 0;
}

/* The steps, the trend of allocated bytes at their ends, where it leads, and the cache's
 * counters (the whole run's: none in a window). 0, or -1 (the steps could not be read). */
static int headroom(sqlite3 *db, int64_t from, int64_t to, report_device *d) {
    if (analysis_forecast(db, &d->s, from, to, &d->forecast, &d->steps) != 0)
        return -1;
    d->peak_reserved_share =
        d->s.total_bytes ? share_of(d->s.peak_reserved.reserved, d->s.total_bytes) : -1;
    d->cache_allocs = d->cache_misses = -1;
    d->cache_hit_rate = -1;
    if (from > 0 || to < analysis_last_event(db))
        return 0;
    sqlite3_stmt *st =
        db_statement(db, "SELECT cache_allocs, cache_misses FROM devices WHERE device = ?1");
    if (st) {
        sqlite3_bind_int(st, 1, d->s.device);
        if (sqlite3_step(st) == SQLITE_ROW) {
            d->cache_allocs = db_column_i64(st, 0, 0);
            d->cache_misses = db_column_i64(st, 1, 0);
        }
    }
    sqlite3_finalize(st);
    if (d->cache_allocs > 0)
        d->cache_hit_rate = share_of(d->cache_allocs - d->cache_misses, d->cache_allocs);
    return 0;
}

/* The trapped ratio at the measured step ends: mean, and the first step with the max. */
static void trapped_steps(const free_split *at, const int64_t *steps, size_t n, size_t stride,
                          report_trapped_steps *t) {
    double hi = -1, sum = 0;
    int64_t hi_step = 0;
    for (size_t k = 0; k < n; k++) {
        double f = free_split_trapped_ratio(&at[k]);
        sum += f;
        if (f > hi) {
            hi = f;
            hi_step = steps[k];
        }
    }
    t->measured = n;
    t->stride = stride;
    if (!n)
        return;
    t->mean = sum / (double)n;
    t->max = hi;
    t->max_step = hi_step;
    t->rating = frag_rating(hi);
}

/* Releasable and trapped at the peak, the end, each step's end and each OOM: one pass over the
 * events (layouts). Without it the report still stands. */
static void splits(sqlite3 *db, int64_t from, int64_t to, report_device *d) {
    enum { N = 3 + REPORT_MAX_SPLIT_STEPS + REPORT_MAX_OOMS };
    /* a layout per point: at most REPORT_MAX_SPLIT_STEPS step ends, evenly spread */
    size_t nsteps = d->steps.count;
    size_t stride = nsteps > REPORT_MAX_SPLIT_STEPS
                        ? (nsteps + REPORT_MAX_SPLIT_STEPS - 1) / REPORT_MAX_SPLIT_STEPS
                        : 1;
    step_state sample[REPORT_MAX_SPLIT_STEPS];
    int64_t step_numbers[REPORT_MAX_SPLIT_STEPS];
    size_t m = 0;
    if (steps_sample(db, d->s.device, from, to, stride, sample, REPORT_MAX_SPLIT_STEPS, &m) != 0)
        m = 0; /* the peak and the end still get theirs */
    int64_t ids[N];
    free_split out[N];
    size_t n = 3 + m + d->nooms;
    ids[0] = d->s.peak_allocated.event_id;
    ids[1] = d->s.end.event_id;
    ids[2] = d->s.worst_fragmentation.event_id > 0 ? d->s.worst_fragmentation.event_id : 0;
    for (size_t k = 0; k < m; k++) {
        ids[3 + k] = sample[k].at_end.event_id;
        step_numbers[k] = sample[k].step;
    }
    for (size_t i = 0; i < d->nooms; i++)
        ids[3 + m + i] = d->ooms[i].event_id;
    char err[256];
    if (free_split_at(db, d->s.device, ids, n, out, err, sizeof err) != 0)
        return;
    d->have_split = 1;
    d->split_peak = out[0];
    d->split_end = out[1];
    d->trapped_at_peak = free_split_trapped_ratio(&d->split_peak);
    d->trapped_at_end = free_split_trapped_ratio(&d->split_end);
    d->trapped_at_peak_rating = frag_rating(d->trapped_at_peak);
    d->trapped_at_end_rating = frag_rating(d->trapped_at_end);
    d->end_warm_cache =
        d->split_end.releasable > d->split_end.trapped && d->split_end.releasable >= WARM_CACHE_MIN;
    trapped_steps(out + 3, step_numbers, m, stride, &d->trapped_steps);
    for (size_t i = 0; i < d->nooms; i++) {
        d->ooms[i].have_split = 1;
        d->ooms[i].releasable = out[3 + m + i].releasable;
        d->ooms[i].trapped = out[3 + m + i].trapped;
    }
    /* the raw ratio's verdict words follow the trapped ratio at the same moment */
    d->frag_at_peak_by = d->trapped_at_peak;
    d->frag_at_end_by = d->trapped_at_end;
    d->frag_worst_by = free_split_trapped_ratio(&out[2]);
    d->frag_at_peak_rating = frag_rating(d->frag_at_peak_by);
    d->frag_at_end_rating = frag_rating(d->frag_at_end_by);
    d->frag_worst_rating = frag_rating(d->frag_worst_by);
    for (size_t k = 0; k < m; k++)
        if (step_numbers[k] == d->steps.frag_max_step) {
            d->frag_step_max_by = free_split_trapped_ratio(&out[3 + k]);
            d->frag_step_max_rating = frag_rating(d->frag_step_max_by);
            break;
        }
}

/* What memory is at the peak: categories (a sweep of the device's blocks) and the named
 * tensors. Without it the report still stands. */
static void categories(sqlite3 *db, categorizer *cats, int whole_run, int rules, size_t top,
                       report_device *d) {
    char err[256];
    int64_t peak = d->s.peak_allocated.event_id;
    /* the whole run's peak without rules: the sums the database keeps */
    if (!(whole_run && !rules && category_peaks_read(db, d->s.device, d->categories)) &&
        (!cats || categories_at_event(cats, d->s.device, peak, d->categories, err, sizeof err)))
        return;
    d->have_categories = 1;
    d->categories_one_moment = categories_no_history(db, d->s.device);
    for (int c = 0; c < BLOCK_CATEGORY_COUNT; c++)
        d->category_share[c] = share_of(d->categories[c], d->s.peak_allocated.allocated);
    if (tensor_rows_at(db, cats, d->s.device, peak, top, &d->named, &d->nnamed, err, sizeof err))
        db_note_failure(err); /* the report stands without them, but must not pass for whole */
}

/* Whether the blocks of alloc stack_id have no allocation stack of their own: none at all, or
 * the stack a snapshot's import gives the blocks its ring lost ("alloc not recorded", one
 * frame). */
static int alloc_not_recorded(sqlite3 *db, int64_t stack_id) {
    if (!stack_id)
        return 1;
    sqlite3_stmt *st = db_statement(db, "SELECT 1 FROM stacks AS s JOIN frames AS f USING "
                                        "(frame_id) WHERE s.stack_id = ?1 AND s.parent_id IS "
                                        "NULL AND f.name = 'alloc not recorded'");
    int yes = 0;
    if (st) {
        sqlite3_bind_int64(st, 1, stack_id);
        yes = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return yes;
}

/* For a top row whose allocation was not recorded: the free stack that ends most of its
 * bytes live at the peak (only seeded blocks can lack one: event ids <= 0). */
static void freed_at(sqlite3 *db, const report_device *d, report_stack *t) {
    if (!alloc_not_recorded(db, t->stack_id))
        return;
    sqlite3_stmt *st = db_statement(
        db,
        "SELECT f.stack_id FROM event_rows AS a JOIN event_rows AS f ON f.alloc_event_id = "
        "a.event_id AND f.op IN ({op:free}, {op:unmap}) WHERE a.event_id <= ?4 AND "
        "a.device = ?1 AND a.kind = {kind:device} AND a.op IN "
        "({op:alloc}, {op:map}) AND " SQL_IS_BLOCK(
            "a") " AND coalesce(a.stack_id, 0) = ?3 "
                 "AND f.event_id > ?2 AND "
                 "f.stack_id IS NOT NULL GROUP BY f.stack_id ORDER BY sum(a.size) DESC, f.stack_id "
                 "LIMIT 1");
    if (!st)
        return;
    sqlite3_bind_int64(st, 1, d->s.device);
    sqlite3_bind_int64(st, 2, d->s.peak_allocated.event_id);
    sqlite3_bind_int64(st, 3, t->stack_id);
    /* one bound on the ids, the store's range: the seed's rows, not the run's */
    sqlite3_bind_int64(st, 4, d->s.peak_allocated.event_id < 0 ? d->s.peak_allocated.event_id : 0);
    if (sqlite3_step(st) == SQLITE_ROW) {
        t->freed_at_stack_id = sqlite3_column_int64(st, 0);
        stack_label(db, t->freed_at_stack_id, t->freed_at, sizeof t->freed_at);
    }
    sqlite3_finalize(st);
}

/* The stacks holding memory at the peak, each with its site; two rows of one site say where
 * they differ. */
static int top_stacks(sqlite3 *db, size_t top, report_device *d) {
    stack_bytes *rows;
    size_t n;
    if (analysis_top_stacks_at(db, d->s.device, d->s.peak_allocated.event_id, top, &rows, &n) != 0)
        return -1;
    d->top = n ? calloc(n, sizeof *d->top) : NULL;
    if (n && !d->top) {
        free(rows);
        return -1;
    }
    d->ntop = n;
    for (size_t i = 0; i < n; i++) {
        report_stack *t = &d->top[i];
        t->stack_id = rows[i].stack_id;
        t->bytes = rows[i].bytes;
        t->blocks = rows[i].blocks;
        t->share = share_of(t->bytes, d->s.peak_allocated.allocated);
        stack_label(db, t->stack_id, t->site, sizeof t->site);
        freed_at(db, d, t);
    }
    free(rows);
    return list_labels(db, d->top, n, sizeof *d->top, offsetof(report_stack, stack_id),
                       offsetof(report_stack, label), sizeof d->top->label);
}

/* The sites that grow (or keep blocks never freed), the first max(REPORT_JSON_LEAKS, top)
 * of them with their labels. */
static int growth(sqlite3 *db, int64_t from, int64_t to, size_t top, report_device *d) {
    site_growth *g;
    size_t n;
    if (analysis_site_growth(db, d->s.device, from, to, &g, &n, &d->windows) != 0)
        return -1;
    size_t keep = top > REPORT_JSON_LEAKS ? top : REPORT_JSON_LEAKS;
    if (keep > n)
        keep = n;
    d->ngrowth = n;
    d->leaks = keep ? calloc(keep, sizeof *d->leaks) : NULL;
    if (keep && !d->leaks) {
        free(g);
        return -1;
    }
    d->nleaks = keep;
    for (size_t i = 0; i < keep; i++) {
        d->leaks[i].g = g[i];
    }
    free(g);
    return list_labels(db, d->leaks, keep, sizeof *d->leaks,
                       offsetof(report_growth, g) + offsetof(site_growth, stack_id),
                       offsetof(report_growth, site), sizeof d->leaks->site);
}

/* The largest allocations of the window: the whole run's the replay kept, a window's sorted
 * from its allocations. 0, or -1 (the database). */
static int largest(sqlite3 *db, int64_t from, int64_t to, size_t top, report_device *d) {
    const char *sql =
        analysis_whole_run(db, from, to)
            ? "SELECT alloc_id, size, stack_id FROM largest_allocations WHERE device = ?1 AND "
              "alloc_id <= ?2 AND alloc_id > ?3 ORDER BY size DESC, alloc_id LIMIT ?4"
            : "SELECT event_id, size, stack_id FROM event_rows AS e WHERE device = ?1 AND "
              "kind = {kind:device} AND op IN ({op:alloc}, {op:map}) AND " SQL_IS_BLOCK(
                  "e") " AND event_id <= ?2 AND event_id > ?3 ORDER BY size DESC, event_id LIMIT "
                       "?4";
    sqlite3_stmt *st;
    if (db_prepare(db, sql, &st) != SQLITE_OK)
        return 0; /* as the text always was: no list, the report stands */
    sqlite3_bind_int(st, 1, d->s.device);
    sqlite3_bind_int64(st, 2, to);
    sqlite3_bind_int64(st, 3, from > 0 ? from : INT64_MIN);
    sqlite3_bind_int64(st, 4, (int64_t)top);
    size_t cap = 0; /* --top may ask for many more than there are */
    while (d->nlargest < top && sqlite3_step(st) == SQLITE_ROW) {
        if (d->nlargest == cap) {
            cap = cap ? 2 * cap : 16;
            report_allocation *more = realloc(d->largest, cap * sizeof *more);
            if (!more) {
                sqlite3_finalize(st);
                return -1;
            }
            d->largest = more;
        }
        report_allocation *a = &d->largest[d->nlargest++];
        a->event_id = sqlite3_column_int64(st, 0);
        a->bytes = sqlite3_column_int64(st, 1);
        a->stack_id = db_column_i64(st, 2, 0);
        when_describe(db, a->event_id, a->when, sizeof a->when);
    }
    sqlite3_finalize(st);
    return list_labels(db, d->largest, d->nlargest, sizeof *d->largest,
                       offsetof(report_allocation, stack_id), offsetof(report_allocation, site),
                       sizeof d->largest->site);
}

/* The phase of the peak in an input without steps, and where a history begun mid-run begins
 * (step_table.h's rules). 0, or -1 (SQL). */
static int steps_facts(sqlite3 *db, report_device *d) {
    int64_t first_event;
    d->history_first_step = -1;
    if (step_history_begin(db, d->s.device, &d->history_mid_run, &first_event) != 0)
        return -1;
    int64_t steps = db_query_i64(db, "SELECT count(*) FROM steps", 0, 0, 0);
    if (steps == 0 && first_event > 0 && d->s.peak_allocated.event_id > 0 &&
        !(d->peak_phase = step_table_phase_at(db, d->s.device, d->s.peak_allocated.event_id)))
        return -1;
    if (!d->history_mid_run || first_event <= 0 || steps == 0)
        return 0;
    sqlite3_stmt *st =
        db_statement(db, "SELECT count(*), min(step), max(step), (SELECT step FROM steps WHERE "
                         "end_event_id >= ?1 ORDER BY begin_ts_ns, step LIMIT 1) FROM steps "
                         "WHERE end_event_id < ?1");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, first_event);
    int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -1;
    if (rc == 0) {
        d->steps_before_history = sqlite3_column_int64(st, 0);
        d->first_step_before = db_column_i64(st, 1, -1);
        d->last_step_before = db_column_i64(st, 2, -1);
        d->history_first_step = db_column_i64(st, 3, -1);
    }
    sqlite3_finalize(st);
    return rc;
}

static void moments(sqlite3 *db, report_device *d) {
    const device_summary *s = &d->s;
    when_describe(db, s->peak_allocated.event_id, d->peak_allocated_when,
                  sizeof d->peak_allocated_when);
    when_describe(db, s->peak_requested.event_id, d->peak_requested_when,
                  sizeof d->peak_requested_when);
    when_describe(db, s->peak_reserved.event_id, d->peak_reserved_when,
                  sizeof d->peak_reserved_when);
    d->inactive_at_peak = s->peak_allocated.reserved - s->peak_allocated.allocated;
    d->frag_at_peak = frag_of(&s->peak_allocated);
    d->frag_at_end = frag_of(&s->end);
    d->frag_worst = frag_of(&s->worst_fragmentation);
    d->frag_at_peak_rating = frag_rating(d->frag_at_peak);
    d->frag_at_end_rating = frag_rating(d->frag_at_end);
    d->frag_worst_rating = frag_rating(d->frag_worst);
    d->replay_warnings = db_query_i64(db,
                                      "SELECT count(*) FROM warnings w JOIN event_rows e ON "
                                      "e.event_id = w.event_id WHERE e.device = ?",
                                      s->device, 0, 0);
}

int report_device_build(sqlite3 *db, categorizer *cats, int rules, int device, int64_t from,
                        int64_t to, size_t top, report_device *d) {
    memset(d, 0, sizeof *d);
    if (analysis_device_summary(db, device, from, to, &d->s) != 0 || top_stacks(db, top, d) != 0 ||
        growth(db, from, to, top, d) != 0 || headroom(db, from, to, d) != 0 ||
        steps_facts(db, d) != 0)
        return -1;
    d->frag_step_max_rating = frag_rating(d->steps.frag_max);
    d->frag_at_peak_by = d->frag_at_end_by = d->frag_worst_by = d->frag_step_max_by = -1;
    moments(db, d);
    report_ooms_read(db, from, to, d);
    splits(db, from, to, d);
    report_ooms_judge(d);
    categories(db, cats, analysis_whole_run(db, from, to), rules, top, d);
    if (largest(db, from, to, top, d) != 0)
        return -1;
    report_recommend(db, d);
    return 0;
}

void report_device_release(report_device *d) {
    tensor_rows_free(d->named, d->nnamed);
    free(d->top);
    free(d->leaks);
    free(d->largest);
    memset(d, 0, sizeof *d);
}
