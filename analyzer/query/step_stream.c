/* step_stream.c — the steps of a window one at a time (see step_stream.h).
 *
 * Every fact here is a pass of the cursor, one SQL statement reset between passes: nothing
 * holds a row per step, so a report's memory does not follow the number of steps. A pass over
 * step_ends is cheap next to the rest of a report (0.15 s for 315 k steps), which is what makes
 * the medians' few passes affordable. */
#include "step_stream.h"

#include "db_query.h"
#include "gmt_grow.h"
#include "median.h"
#include "when.h"

#include <stdlib.h>
#include <string.h>

struct step_cursor {
    sqlite3_stmt *st;
};

step_cursor *step_cursor_open(sqlite3 *db, int device, int64_t from, int64_t to) {
    /* Each step's end state in one statement: the device's last timeline row at or before the
     * step's end event, as the replay kept it (step_ends), else found in the events (an older
     * database, or GMT_NO_SUMMARIES). The ORDER BY follows the steps_begin index (step is the
     * rowid it ends with): no sort, nothing held. CROSS JOIN keeps steps the outer loop: the
     * other order scans steps once per step end. */
    static const char *const kept =
        "SELECT s.step, m.event_id, m.ts_ns, m.allocated_bytes, m.requested_bytes, "
        "m.reserved_bytes, m.largest_free_bytes FROM steps AS s CROSS JOIN step_ends AS m ON "
        "m.device = ?1 AND m.end_event_id = s.end_event_id WHERE s.end_event_id > ?2 AND "
        "s.end_event_id <= ?3 ORDER BY s.begin_ts_ns, s.step";
    static const char *const found =
        "SELECT s.step, m.event_id, m.ts_ns, m.allocated_bytes, m.requested_bytes, "
        "m.reserved_bytes, m.largest_free_bytes FROM steps AS s JOIN event_rows AS m ON "
        "m.event_id = (SELECT r.event_id FROM event_rows AS r WHERE r.device = ?1 AND "
        "r.event_id <= s.end_event_id AND (r.event_id > 0 OR r.op = {op:seed}) ORDER BY "
        "r.event_id DESC LIMIT 1) WHERE s.end_event_id > ?2 AND s.end_event_id <= ?3 "
        "ORDER BY s.begin_ts_ns, s.step";
    sqlite3_stmt *st = analysis_summaries_allowed() ? db_statement(db, kept) : NULL;
    if (!st)
        st = db_statement(db, found);
    step_cursor *c = st ? malloc(sizeof *c) : NULL;
    if (!c) {
        sqlite3_finalize(st);
        return NULL;
    }
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    c->st = st;
    return c;
}

int step_cursor_next(step_cursor *c, step_state *out) {
    int rc = sqlite3_step(c->st);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW)
        return -1;
    out->step = sqlite3_column_int64(c->st, 0);
    analysis_read_moment(c->st, 1, &out->at_end);
    return 1;
}

int step_cursor_rewind(step_cursor *c) { return sqlite3_reset(c->st) == SQLITE_OK ? 0 : -1; }

void step_cursor_close(step_cursor *c) {
    if (c) {
        sqlite3_finalize(c->st);
        free(c);
    }
}

int analysis_steps_visit(sqlite3 *db, int device, int64_t from, int64_t to,
                         int (*visit)(void *ctx, const step_state *step), void *ctx) {
    step_cursor *c = step_cursor_open(db, device, from, to);
    if (!c)
        return -1;
    step_state one;
    int got;
    while ((got = step_cursor_next(c, &one)) == 1 && visit(ctx, &one) == 0)
        ;
    step_cursor_close(c);
    return got == 0 ? 0 : -1;
}

typedef struct step_array {
    step_state *items;
    size_t len, cap;
} step_array;

static int keep_step(void *ctx, const step_state *step) {
    step_array *a = ctx;
    if (gmt_grow((void **)&a->items, &a->cap, a->len, sizeof *a->items) != 0)
        return -1;
    a->items[a->len++] = *step;
    return 0;
}

int analysis_steps(sqlite3 *db, int device, int64_t from, int64_t to, step_state **out,
                   size_t *count) {
    step_array a = {0};
    int rc = analysis_steps_visit(db, device, from, to, keep_step, &a);
    *out = a.items;
    *count = a.len;
    return rc;
}

/* ---- the overview, a sample ------------------------------------------------ */

static void add_to_overview(steps_overview *o, const step_state *step) {
    double f = frag_of(&step->at_end);
    if (!o->count++) {
        o->frag_min = o->frag_max = f;
        o->frag_max_step = step->step;
    } else if (f < o->frag_min) {
        o->frag_min = f;
    } else if (f > o->frag_max) { /* the first step of the highest value */
        o->frag_max = f;
        o->frag_max_step = step->step;
    }
    o->frag_mean += f; /* the sum until the pass ends */
}

typedef struct sampling {
    size_t stride, seen, max, len;
    step_state *out;
} sampling;

static int take_sample(void *ctx, const step_state *step) {
    sampling *s = ctx;
    if (s->seen++ % s->stride == 0)
        s->out[s->len++] = *step;
    return s->len < s->max ? 0 : 1; /* full: the pass stops */
}

int steps_sample(sqlite3 *db, int device, int64_t from, int64_t to, size_t stride, step_state *out,
                 size_t max, size_t *count) {
    sampling s = {stride ? stride : 1, 0, max, 0, out};
    *count = 0;
    if (!max)
        return 0;
    int rc = analysis_steps_visit(db, device, from, to, take_sample, &s);
    *count = s.len;
    return rc == 0 || s.len == max ? 0 : -1;
}

/* ---- the headroom trend ---------------------------------------------------- */

/* The changes of allocated bytes from one step end to the next, as a median's source; each
 * pass also counts the steps and keeps the first and the last, and the first pass fills the
 * overview when there is one to fill. */
typedef struct step_deltas {
    step_cursor *cursor;
    size_t steps;
    step_state first, last;
    int pass;
    steps_overview *overview; /* NULL: none wanted */
} step_deltas;

static int deltas_rewind(void *ctx) {
    step_deltas *d = ctx;
    d->steps = 0;
    if (++d->pass == 1 && d->overview)
        memset(d->overview, 0, sizeof *d->overview);
    return step_cursor_rewind(d->cursor);
}

static int deltas_next(void *ctx, int64_t *value) {
    step_deltas *d = ctx;
    step_state s;
    int got;
    while ((got = step_cursor_next(d->cursor, &s)) == 1) {
        if (d->pass == 1 && d->overview)
            add_to_overview(d->overview, &s);
        int first = d->steps++ == 0;
        int64_t change = s.at_end.allocated - d->last.at_end.allocated;
        d->last = s;
        if (first) {
            d->first = s;
            continue;
        }
        *value = change;
        return 1;
    }
    return got;
}

/* The trend and the steps it was taken over (*d: count, first, last), and their overview when
 * `overview` is not NULL. */
static int headroom_of(sqlite3 *db, int device, int64_t from, int64_t to, int64_t total_bytes,
                       int64_t *growth, int64_t *limit_step, step_deltas *d,
                       steps_overview *overview) {
    *limit_step = -1;
    *growth = 0;
    memset(d, 0, sizeof *d);
    if (overview)
        memset(overview, 0, sizeof *overview);
    d->overview = overview;
    if (!(d->cursor = step_cursor_open(db, device, from, to)))
        return -1;
    value_source src = {d, deltas_rewind, deltas_next};
    int64_t median;
    size_t n;
    int rc = median_stream(&src, 0, &median, &n);
    step_cursor_close(d->cursor);
    d->cursor = NULL;
    if (rc != 0) {
        d->steps = 0;
        if (overview)
            memset(overview, 0, sizeof *overview);
        return -1;
    }
    if (overview && overview->count)
        overview->frag_mean /= (double)overview->count; /* the sum until here */
    if (d->steps < 3)
        return 0;
    *growth = median;
    *limit_step =
        headroom_limit_step(*growth, d->steps, d->last.step, d->last.at_end.allocated, total_bytes);
    return 0;
}

int64_t headroom_limit_step(int64_t growth, size_t steps, int64_t last_step, int64_t last_allocated,
                            int64_t total_bytes) {
    if (steps < 3 || growth <= 0 || total_bytes <= last_allocated)
        return -1;
    return last_step + (total_bytes - last_allocated) / growth;
}

double headroom_limit_seconds(int64_t limit_step, int64_t last_step, int64_t last_ts_ns,
                              int64_t step_ns) {
    if (limit_step < 0)
        return -1;
    return ((double)last_ts_ns + (double)(limit_step - last_step) * (double)step_ns) / 1e9;
}

/* The levels, least urgent first: the one list (headroom_risk_level orders by it). */
static const char *const risk_levels[] = {"unknown", "low", "medium", "high", "critical"};

int headroom_risk_level(const char *word) {
    for (int i = 0; i < (int)(sizeof risk_levels / sizeof *risk_levels); i++)
        if (word && strcmp(word, risk_levels[i]) == 0)
            return i;
    return -1;
}

const char *headroom_risk(int64_t total_bytes, int64_t peak_reserved, int64_t ooms,
                          int64_t limit_step, size_t steps, int64_t last_step) {
    double used = total_bytes > 0 ? (double)peak_reserved / (double)total_bytes : -1;
    int64_t left = limit_step >= 0 && steps ? limit_step - last_step : -1;
    if (total_bytes <= 0 && !ooms)
        return risk_levels[0];
    if (ooms > 0 || used >= 0.95 || (left >= 0 && left <= 100))
        return risk_levels[4];
    if (used >= 0.85 || (left >= 0 && left <= 1000))
        return risk_levels[3];
    if (used >= 0.70 || left >= 0)
        return risk_levels[2];
    return risk_levels[1];
}

int analysis_headroom(sqlite3 *db, int device, int64_t from, int64_t to, int64_t total_bytes,
                      int64_t *growth, int64_t *limit_step) {
    step_deltas d;
    return headroom_of(db, device, from, to, total_bytes, growth, limit_step, &d, NULL);
}

/* Step durations (end - begin) of the steps numbered first..last, at most `max` of them, as a
 * median's source. */
typedef struct step_durations {
    sqlite3_stmt *st;
    size_t read, max;
} step_durations;

static int durations_rewind(void *ctx) {
    step_durations *d = ctx;
    d->read = 0;
    return sqlite3_reset(d->st) == SQLITE_OK ? 0 : -1;
}

static int durations_next(void *ctx, int64_t *value) {
    step_durations *d = ctx;
    if (d->read >= d->max)
        return 0;
    int rc = sqlite3_step(d->st);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW)
        return -1;
    d->read++;
    *value = sqlite3_column_int64(d->st, 0);
    return 1;
}

/* The median step duration over the trend's steps: 1, or 0 when there is none. */
static int median_step_ns(sqlite3 *db, const step_deltas *trend, int64_t *step_ns) {
    step_durations d = {db_statement(db, "SELECT end_ts_ns - begin_ts_ns FROM steps WHERE "
                                         "end_ts_ns IS NOT NULL AND step BETWEEN ?1 AND ?2"),
                        0, trend->steps};
    if (!d.st)
        return 0;
    sqlite3_bind_int64(d.st, 1, trend->first.step);
    sqlite3_bind_int64(d.st, 2, trend->last.step);
    value_source src = {&d, durations_rewind, durations_next};
    size_t n;
    int rc = median_stream(&src, 0, step_ns, &n);
    sqlite3_finalize(d.st);
    return rc == 0 && n;
}

int analysis_forecast(sqlite3 *db, const device_summary *s, int64_t from, int64_t to,
                      headroom_forecast *out, steps_overview *overview) {
    step_deltas trend;
    int rc = headroom_of(db, s->device, from, to, s->total_bytes, &out->growth_per_step,
                         &out->limit_step, &trend, overview);
    size_t n = out->steps = trend.steps;
    out->limit_seconds = -1;
    if (out->limit_step >= 0 && n && when_has_timestamps(db)) {
        /* the median duration of these steps, from the last one's end */
        int64_t step_ns;
        if (median_step_ns(db, &trend, &step_ns))
            out->limit_seconds = headroom_limit_seconds(out->limit_step, trend.last.step,
                                                        trend.last.at_end.ts_ns, step_ns);
    }
    out->risk = headroom_risk(s->total_bytes, s->peak_reserved.reserved, s->ooms, out->limit_step,
                              n, trend.last.step);
    return rc;
}
