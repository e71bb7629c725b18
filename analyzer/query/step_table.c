/* step_table.c — the per-step table (see step_table.h). */
#include "step_table.h"
#include "step_table_internal.h"

#include "analysis.h"
#include "db_query.h"
#include "event_scan.h"
#include "free_split.h"
#include "gmt_assert.h"
#include "gmt_grow.h"
#include "median.h"
#include "phases.h"
#include "stack_names.h"
#include "stack_phases.h"
#include "trace_format.h"
#include "units.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void step_row_read(sqlite3_stmt *st, step_row *r) {
    memset(r, 0, sizeof *r);
    r->step = sqlite3_column_int64(st, 0);
    r->begin_event_id = sqlite3_column_int64(st, 1);
    r->end_event_id = sqlite3_column_int64(st, 2);
    r->allocated_at_end = sqlite3_column_int64(st, 3);
    r->reserved_at_end = sqlite3_column_int64(st, 4);
    r->open = sqlite3_column_int(st, 8);
    r->fragmentation_at_end =
        r->reserved_at_end > 0
            ? (double)(r->reserved_at_end - r->allocated_at_end) / (double)r->reserved_at_end
            : 0;
    int64_t split_reserved = db_column_i64(st, 7, 0);
    r->trapped_at_end = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1
                        : split_reserved > 0
                            ? (double)sqlite3_column_int64(st, 6) / (double)split_reserved
                            : 0;
}

#define PEAK_RATIO 1.2                 /* a peak this far above its neighbours' median */
#define ANOMALY_MIN_BYTES (16LL << 20) /* and at least this much */
#define JUMP_RATIO 1.1                 /* reserved first grows this much at a step's end */
#define JUMP_MIN_BYTES (64LL << 20)    /* and at least this much */
#define GROWTH_DEVIATIONS 3
#define IMPLICIT_SPLITS_MAX 128 /* implicit steps whose trapped part at the end is measured */

/* The end states (step_ends, free_splits) and each step's range. */
static int read_ends(sqlite3 *db, int device, step_row **rows, size_t *count) {
    sqlite3_stmt *st = db_statement(
        db, "SELECT s.step, s.begin_event_id, s.end_event_id, e.allocated_bytes, "
            "e.reserved_bytes, (SELECT r.segments FROM event_rows r WHERE r.event_id = "
            "e.event_id), f.trapped_bytes, f.reserved_bytes, s.end_ts_ns IS NULL FROM steps s "
            "JOIN step_ends e ON "
            "e.device = ?1 AND e.end_event_id = s.end_event_id LEFT JOIN free_splits f ON "
            "f.device = ?1 AND f.event_id = e.event_id ORDER BY s.end_event_id, s.step");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    size_t n = 0, cap = 0;
    step_row *out = NULL;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        if (gmt_grow((void **)&out, &cap, n, sizeof *out) != 0) {
            rc = -1;
            break;
        }
        step_row *r = &out[n++];
        step_row_read(st, r);
        r->segments_at_end = db_column_i64(st, 5, 0);
    }
    sqlite3_finalize(st);
    *rows = out;
    *count = n;
    return rc;
}

typedef struct step_begin {
    int64_t begin_event_id;
    size_t index;
} step_begin;

static int by_begin(const void *a, const void *b) {
    int64_t x = ((const step_begin *)a)->begin_event_id,
            y = ((const step_begin *)b)->begin_event_id;
    if (x != y)
        return (x > y) - (x < y);
    size_t i = ((const step_begin *)a)->index, j = ((const step_begin *)b)->index;
    return (i > j) - (i < j);
}

/* The peak inside each step (the first event at the highest allocated), its stack's phase, and
 * the allocations and frees: one pass over the device's events from the first step's begin to
 * the last one's end (event_scan.h), each row counted in every step whose (begin, end] holds it
 * (steps that overlap, rare, are each counted whole). */
int step_table_insides(sqlite3 *db, int device, step_row *rows, size_t n) {
    enum { ID, ALLOCATED, STACK, OP, LEVEL, DEVICE, NCOL };
    static const int want[NCOL] = {EVENT_COL_event_id, EVENT_COL_allocated_bytes,
                                   EVENT_COL_stack_id, EVENT_COL_op,
                                   EVENT_COL_level,    EVENT_COL_device};
    if (n == 0)
        return 0;
    step_begin *order = malloc(n * sizeof *order);
    int64_t *peak_stack = calloc(n, sizeof *peak_stack);
    stack_names *names = stack_names_new(db);
    int rc = order && peak_stack && names ? 0 : -1;
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        order[i] = (step_begin){rows[i].begin_event_id, i};
        rows[i].peak_allocated = -1;
        if (rows[i].begin_event_id < first)
            first = rows[i].begin_event_id;
        if (rows[i].end_event_id > last)
            last = rows[i].end_event_id;
    }
    if (rc == 0)
        qsort(order, n, sizeof *order, by_begin);
    uint32_t mask = event_scan_mask(want, NCOL);
    char err[256];
    event_scan *scan = rc == 0 && first < last
                           ? event_scan_open(db, mask, first + 1, last, err, sizeof err)
                           : NULL;
    if (rc == 0 && first < last && !scan)
        rc = -1;
    size_t lo = 0, hi = 0; /* order[lo..hi): the steps begun before the row, not all ended */
    const int64_t *col[EVENT_STORE_NCOLS], *v[NCOL];
    long got = 0;
    while (rc == 0 && scan && (got = event_scan_next(scan, col)) > 0) {
        event_scan_pick(col, want, NCOL, v);
        for (long r = 0; r < got; r++) {
            if (v[DEVICE][r] != device)
                continue;
            int64_t id = v[ID][r], allocated = v[ALLOCATED][r];
            while (hi < n && order[hi].begin_event_id < id)
                hi++;
            while (lo < hi && rows[order[lo].index].end_event_id < id)
                lo++;
            int alloc = v[LEVEL][r] == TRACE_LEVEL_BLOCK && v[OP][r] == TRACE_OP_ALLOC;
            int free_ = v[LEVEL][r] == TRACE_LEVEL_BLOCK && v[OP][r] == TRACE_OP_FREE;
            for (size_t k = lo; k < hi; k++) {
                step_row *s = &rows[order[k].index];
                if (id > s->end_event_id)
                    continue;
                if (allocated > s->peak_allocated) {
                    s->peak_allocated = allocated;
                    s->peak_event_id = id;
                    peak_stack[order[k].index] = event_value_or(v[STACK][r], 0);
                }
                s->allocs += alloc;
                s->frees += free_;
            }
        }
    }
    if (rc == 0 && got < 0)
        rc = -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        step_row *r = &rows[i];
        if (r->peak_allocated < 0) { /* no event of this device inside: its end state */
            r->peak_allocated = r->allocated_at_end;
            r->peak_event_id = 0;
        }
        r->peak_phase = phase_name(
            peak_stack[i] ? phase_of_stack(stack_names_get(names, peak_stack[i])) : PHASE_UNKNOWN);
    }
    event_scan_close(scan);
    stack_names_free(names);
    free(order);
    free(peak_stack);
    return rc;
}

/* The median of rows [lo, hi) but i (rows[k] is row base + k), of peak (which = 0) or growth
 * (1); a partial step's peak and an unknown growth are no neighbour's. */
static int64_t neighbours_median(const step_row *rows, size_t base, size_t n, size_t i, int which,
                                 int64_t *scratch) {
    size_t lo = i > NEIGHBOURS ? i - NEIGHBOURS : 0,
           hi = i + NEIGHBOURS + 1 < n ? i + NEIGHBOURS + 1 : n;
    size_t k = 0;
    for (size_t j = lo; j < hi; j++) {
        const step_row *x = &rows[j - base];
        if (j != i && !(which == 1 && (j == 0 || !x->growth_known)) && !(which == 0 && x->partial))
            scratch[k++] = which ? x->growth : x->peak_allocated;
    }
    const step_row *r = &rows[i - base];
    return k ? median_i64(scratch, k) : (which ? r->growth : r->peak_allocated);
}

int64_t step_table_reserved_jump(int64_t reserved_before, const step_row *r, size_t i) {
    if (i < 2 || r->open)
        return 0;
    int64_t before = reserved_before, now = r->reserved_at_end;
    return now - before >= JUMP_MIN_BYTES && (double)now >= JUMP_RATIO * (double)before
               ? now - before
               : 0;
}

void step_table_anomalies(step_row *rows, size_t base, size_t n, size_t from, size_t to, int jumped,
                          int64_t *scratch) {
    char b1[32], b2[32];
    assert(base <= from && from <= to && to <= n && (base == 0 || base < from));
    /* rows [2, base] were looked at for the reserved jump (jumped: one of them is it) */
    for (size_t i = base ? base + 1 : 0; i < to; i++) {
        step_row *r = &rows[i - base];
        if (r->open)
            continue;
        int64_t jump = jumped || i < 2
                           ? 0
                           : step_table_reserved_jump(rows[i - 1 - base].reserved_at_end, r, i);
        jumped |= jump > 0;
        if (i < from)
            continue; /* only the first reserved jump is one: the rows before say whether */
        int64_t peak_median = neighbours_median(rows, base, n, i, 0, scratch);
        if (n > 2 && !r->partial && r->peak_allocated - peak_median >= ANOMALY_MIN_BYTES &&
            (double)r->peak_allocated >= PEAK_RATIO * (double)peak_median) {
            snprintf(r->anomaly, sizeof r->anomaly, "peak %s above its neighbours",
                     units_bytes((uint64_t)(r->peak_allocated - peak_median), b1, sizeof b1));
            continue;
        }
        if (i > 0 && n > 3 && r->growth_known) {
            int64_t g = neighbours_median(rows, base, n, i, 1, scratch);
            size_t k = 0; /* the neighbours' deviation from their median */
            size_t lo = i > NEIGHBOURS ? i - NEIGHBOURS : 1;
            size_t hi = i + NEIGHBOURS + 1 < n ? i + NEIGHBOURS + 1 : n;
            for (size_t j = lo; j < hi; j++) {
                const step_row *x = &rows[j - base];
                if (j != i && x->growth_known)
                    scratch[k++] = x->growth > g ? x->growth - g : g - x->growth;
            }
            int64_t mad = k ? median_i64(scratch, k) : 0;
            int64_t d = r->growth - g; /* upward only: a step that frees more is no alarm */
            if (d > GROWTH_DEVIATIONS * mad && d >= ANOMALY_MIN_BYTES) {
                snprintf(
                    r->anomaly, sizeof r->anomaly, "grew %s%s (neighbours %s%s)",
                    r->growth < 0 ? "-" : "+",
                    units_bytes((uint64_t)(r->growth < 0 ? -r->growth : r->growth), b1, sizeof b1),
                    g < 0 ? "-" : "+", units_bytes((uint64_t)(g < 0 ? -g : g), b2, sizeof b2));
                continue;
            }
        }
        if (jump)
            snprintf(r->anomaly, sizeof r->anomaly, "reserved first jumps by %s",
                     units_bytes((uint64_t)jump, b1, sizeof b1));
    }
}

const char *step_phase_word(step_phase p) {
    switch (p) {
    case STEP_PHASE_SETUP:
        return "setup";
    case STEP_PHASE_PRELUDE:
        return "prelude";
    case STEP_PHASE_FORWARD:
        return phase_name(PHASE_FORWARD);
    case STEP_PHASE_BACKWARD:
        return phase_name(PHASE_BACKWARD);
    case STEP_PHASE_OPTIMIZER:
        return phase_name(PHASE_OPTIMIZER);
    default:
        break;
    }
    if (GMT_NEVER(p >= STEP_PHASE_COUNT || (int)p < 0)) /* a step phase without a word */
        return phase_name(PHASE_UNKNOWN);
    return phase_name(PHASE_UNKNOWN);
}

const char *step_table_phase_at(sqlite3 *db, int device, int64_t event_id) {
    stack_phases *phases = stack_phases_load(db);
    phase_timeline *t = phases ? phase_timeline_build(db, device, phases) : NULL;
    const char *word = NULL;
    if (t && phase_timeline_incremental(t)) { /* a run with steps: fed in event order */
        enum { ID, STACK, TS, OP, LEVEL, DEVICE, NCOL };
        static const int want[NCOL] = {EVENT_COL_event_id, EVENT_COL_stack_id, EVENT_COL_ts_ns,
                                       EVENT_COL_op,       EVENT_COL_level,    EVENT_COL_device};
        char err[256];
        event_scan *scan =
            event_scan_open(db, event_scan_mask(want, NCOL), 1, event_id, err, sizeof err);
        const int64_t *col[EVENT_STORE_NCOLS], *v[NCOL];
        long got = scan ? 0 : -1;
        while (scan && (got = event_scan_next(scan, col)) > 0) {
            event_scan_pick(col, want, NCOL, v);
            for (long r = 0; got > 0 && r < got; r++)
                if (v[DEVICE][r] == device && v[LEVEL][r] == TRACE_LEVEL_BLOCK &&
                    (v[OP][r] == TRACE_OP_ALLOC || v[OP][r] == TRACE_OP_FREE ||
                     v[OP][r] == TRACE_OP_FREE_REQUESTED) &&
                    phase_timeline_feed(t, v[ID][r], event_value_or(v[STACK][r], 0), v[TS][r]) != 0)
                    got = -1;
            if (got < 0)
                break;
        }
        event_scan_close(scan);
        if (got < 0) {
            phase_timeline_free(t);
            t = NULL;
        }
    }
    if (t) {
        int64_t iteration;
        word = step_phase_word(phase_timeline_at(t, NULL, event_id, &iteration));
    }
    phase_timeline_free(t);
    stack_phases_free(phases);
    return word;
}

/* The ends of torch.profiler's optimizer step ranges (each with the ones it encloses), in
 * order; *ends malloc'ed. 0, or -1. */
static int optimizer_ends(sqlite3 *db, int64_t **ends, size_t *n) {
    *ends = NULL;
    *n = 0;
    sqlite3_stmt *st = db_statement(db, "SELECT begin_ts_ns, end_ts_ns FROM ranges WHERE name "
                                        "LIKE 'Optimizer.step#%' ORDER BY begin_ts_ns");
    if (!st)
        return -1;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 1) == SQLITE_NULL)
            break; /* open at the end: it ends nothing, nor does what begins after it */
        int64_t begin = sqlite3_column_int64(st, 0), end = sqlite3_column_int64(st, 1);
        if (*n && begin < (*ends)[*n - 1]) { /* enclosed, or overlapping: one range */
            if (end > (*ends)[*n - 1])
                (*ends)[*n - 1] = end;
            continue;
        }
        if (gmt_grow((void **)ends, &cap, *n, sizeof **ends) != 0)
            rc = -1;
        else
            (*ends)[(*n)++] = end;
    }
    sqlite3_finalize(st);
    return rc;
}

/* The implicit steps of an input without steps (see step_table.h): their ranges and end states
 * in one pass over the device's events. */
static int implicit_steps(sqlite3 *db, int device, step_row **rows, size_t *count) {
    enum { ID, TS, ALLOCATED, RESERVED, SEGMENTS, DEVICE, NCOL };
    static const int want[NCOL] = {EVENT_COL_event_id,        EVENT_COL_ts_ns,
                                   EVENT_COL_allocated_bytes, EVENT_COL_reserved_bytes,
                                   EVENT_COL_segments,        EVENT_COL_device};
    int64_t *ends;
    size_t nends, k = 0, n = 0, cap = 0;
    if (optimizer_ends(db, &ends, &nends) != 0)
        return -1;
    char err[256];
    event_scan *scan =
        event_scan_open(db, event_scan_mask(want, NCOL), 1, INT64_MAX, err, sizeof err);
    int rc = scan ? 0 : -1;
    step_row *out = NULL, *cur = NULL;
    int64_t last_id = 0; /* the device's last event so far (0: the seed) */
    const int64_t *col[EVENT_STORE_NCOLS], *v[NCOL];
    long got = 0;
    while (rc == 0 && scan && (got = event_scan_next(scan, col)) > 0) {
        event_scan_pick(col, want, NCOL, v);
        for (long r = 0; rc == 0 && r < got; r++) {
            if (v[DEVICE][r] != device)
                continue;
            while (k < nends && v[TS][r] >= ends[k]) { /* the optimizer's step ended before it */
                k++;
                cur = NULL;
            }
            if (!cur) {
                if (gmt_grow((void **)&out, &cap, n, sizeof *out) != 0) {
                    rc = -1;
                    break;
                }
                cur = &out[n];
                memset(cur, 0, sizeof *cur);
                cur->step = (int64_t)n++;
                cur->begin_event_id = last_id;
                cur->implicit = 1;
            }
            last_id = cur->end_event_id = v[ID][r];
            cur->allocated_at_end = v[ALLOCATED][r];
            cur->reserved_at_end = v[RESERVED][r];
            cur->segments_at_end = event_value_or(v[SEGMENTS][r], 0);
        }
    }
    if (rc == 0 && got < 0)
        rc = -1;
    event_scan_close(scan);
    free(ends);
    if (n)
        out[n - 1].open = k >= nends; /* no optimizer's step ended it: the trace did */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        step_row *r = &out[i];
        r->fragmentation_at_end =
            r->reserved_at_end > 0
                ? (double)(r->reserved_at_end - r->allocated_at_end) / (double)r->reserved_at_end
                : 0;
        r->trapped_at_end = -1;
    }
    /* the trapped part at their ends: a layout each where the replay kept none, so only for a
     * few (else not known, as for marked steps without the replay's split) */
    size_t m = n <= IMPLICIT_SPLITS_MAX ? n : 0;
    int64_t *ids = m ? malloc(m * sizeof *ids) : NULL;
    free_split *splits = m ? malloc(m * sizeof *splits) : NULL;
    for (size_t i = 0; ids && i < m; i++)
        ids[i] = out[i].end_event_id;
    if (rc == 0 && m && ids && splits &&
        free_split_at(db, device, ids, m, splits, err, sizeof err) == 0)
        for (size_t i = 0; i < m; i++)
            out[i].trapped_at_end = free_split_trapped_ratio(&splits[i]);
    else if (rc == 0 && m)
        rc = -1;
    free(ids);
    free(splits);
    *rows = out;
    *count = n;
    return rc;
}

int step_history_begin(sqlite3 *db, int device, int *mid_run, int64_t *first_event) {
    *mid_run = 0;
    *first_event = 0;
    sqlite3_stmt *st = db_statement(
        db, "SELECT (SELECT allocs FROM devices WHERE device = ?1) IS NOT NULL, "
            "(SELECT reserved_bytes FROM event_rows WHERE device = ?1 AND event_id <= 0 AND op = "
            "{op:seed} ORDER BY event_id DESC LIMIT 1)");
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, device);
    int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -1;
    int has_events = rc == 0 && sqlite3_column_int(st, 0);
    *mid_run = rc == 0 && db_column_i64(st, 1, 0) > 0;
    sqlite3_finalize(st);
    if (rc == 0 && has_events) /* ascending from the first event: stops at the device's first */
        *first_event = db_query_i64(db,
                                    "SELECT event_id FROM event_rows WHERE event_id > 0 AND "
                                    "device = ?1 ORDER BY event_id LIMIT 1",
                                    device, 0, 0);
    return rc;
}

/* Drops the steps that ended before a history that begins mid-run, and marks the one that
 * straddles its first event (see step_table.h). */
static void cut_before_history(step_row *rows, size_t *count, int64_t first_event,
                               step_history *h) {
    size_t kept = 0;
    for (size_t i = 0; i < *count; i++) {
        if (rows[i].end_event_id < first_event) {
            if (!h->before++ || rows[i].step < h->before_first)
                h->before_first = rows[i].step;
            if (h->before == 1 || rows[i].step > h->before_last)
                h->before_last = rows[i].step;
            continue;
        }
        rows[kept++] = rows[i];
    }
    *count = kept;
    if (h->before == 0) /* nothing lost that shows: the history begins at a step's begin */
        return;
    for (size_t i = 0; i < kept; i++)
        rows[i].partial = rows[i].begin_event_id < first_event;
}

int step_table(sqlite3 *db, int device, step_row **rows, size_t *count, step_history *history,
               char *err, size_t errlen) {
    step_history h = {.first_step = -1};
    *rows = NULL;
    *count = 0;
    if (read_ends(db, device, rows, count) != 0 ||
        step_history_begin(db, device, &h.mid_run, &h.first_event) != 0) {
        snprintf(err, errlen, "reading the steps: %s", sqlite3_errmsg(db));
        free(*rows);
        *rows = NULL;
        *count = 0;
        return -1;
    }
    if (*count == 0 && h.first_event > 0 &&
        db_query_i64(db, "SELECT count(*) FROM steps", 0, 0, 0) == 0) {
        free(*rows);
        if (implicit_steps(db, device, rows, count) != 0) {
            snprintf(err, errlen, "reading the implicit steps: %s", sqlite3_errmsg(db));
            free(*rows);
            *rows = NULL;
            *count = 0;
            return -1;
        }
    }
    if (h.mid_run && h.first_event > 0)
        cut_before_history(*rows, count, h.first_event, &h);
    if (step_table_insides(db, device, *rows, *count) != 0) {
        snprintf(err, errlen, "reading the steps: %s", sqlite3_errmsg(db));
        free(*rows);
        *rows = NULL;
        *count = 0;
        return -1;
    }
    for (size_t i = 0; i < *count; i++)
        if ((*rows)[i].implicit) { /* the phase timeline's phase (see step_table.h) */
            const char *word = step_table_phase_at(db, device, (*rows)[i].peak_event_id);
            if (!word) {
                snprintf(err, errlen, "reading the phases: %s", sqlite3_errmsg(db));
                free(*rows);
                *rows = NULL;
                *count = 0;
                return -1;
            }
            (*rows)[i].peak_phase = word;
        }
    if (*count)
        h.first_step = (*rows)[0].step;
    if (history)
        *history = h;
    /* growth from the state before the first step's start; none across the history's hole */
    int64_t first_begin = INT64_MAX;
    for (size_t i = 0; i < *count; i++)
        if ((*rows)[i].begin_event_id < first_begin)
            first_begin = (*rows)[i].begin_event_id;
    int64_t before = db_query_i64(db,
                                  "SELECT allocated_bytes FROM event_rows WHERE device = ?1 AND "
                                  "event_id <= ?2 ORDER BY event_id DESC LIMIT 1",
                                  device, first_begin, 0);
    for (size_t i = 0; i < *count; i++) {
        step_row *r = &(*rows)[i];
        r->growth_known = !r->partial;
        r->growth = r->growth_known ? r->allocated_at_end - before : 0;
        before = r->allocated_at_end;
    }
    int64_t *scratch = malloc((2 * NEIGHBOURS + 2) * sizeof *scratch);
    if (scratch)
        step_table_anomalies(*rows, 0, *count, 0, *count, 0, scratch);
    free(scratch);
    return 0;
}
