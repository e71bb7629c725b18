/* phase_timeline.c — iterations and phase runs from the events' stacks (see phase_timeline.h).
 *
 * The scan keeps runs, not events: consecutive decided events of one phase (and, with steps,
 * one iteration) are one run [first_id, last_id], so a run of thousands of forward allocations
 * costs one entry and the timeline stays a few entries per iteration. Everything is in event
 * order, not time: the replay's order is the one steps were cut by (steps.begin_event_id), a
 * snapshot's microseconds tie often, and threads may write records out of time order. */
#include "phase_timeline.h"

#include "db_query.h"
#include "event_scan.h"
#include "gmt_grow.h"
#include "gmt_search.h"
#include "trace_format.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct run {
    int64_t first_id, last_id; /* event ids */
    int64_t iteration;
    step_phase phase;
} run;

typedef struct span {
    int64_t begin_ts, end_ts; /* [begin, end) ns; end INT64_MAX: open at the end */
    int64_t reach;            /* the latest end of this range and every one begun before it */
} span;

struct phase_timeline {
    stack_phases *phases;
    span *optimizer; /* Optimizer.step#... ranges, by begin */
    size_t noptimizer, cap_optimizer;
    int64_t *begins; /* iteration k begins at event begins[k] (sorted) */
    size_t nbegins, cap_begins;
    run *runs;     /* sorted by first_id */
    int has_steps; /* iterations are the steps: the runs are fed as a sweep goes */
    int last_open; /* the last iteration had not ended when the recording did */
    size_t nruns, cap_runs;
};

/* Whether ts lies inside a range PyTorch's profiler opens around an optimizer's step. */
static int in_optimizer_step(const phase_timeline *t, int64_t ts) {
    size_t lo = gmt_search_i64(t->optimizer, t->noptimizer, sizeof *t->optimizer,
                               offsetof(span, begin_ts), ts, 1);
    /* the latest end so far, not the last range's: a wrapper's step (ZeroRedundancyOptimizer)
     * encloses its inner optimizer's */
    return lo > 0 && ts < t->optimizer[lo - 1].reach;
}

int phase_timeline_decided(const phase_timeline *t, int64_t stack_id, int64_t ts) {
    int p = step_phase_of(stack_phases_get(t->phases, stack_id));
    return p >= 0 ? p : in_optimizer_step(t, ts) ? (int)STEP_PHASE_OPTIMIZER : -1;
}

int step_phase_of(phase p) {
    return p == PHASE_FORWARD     ? STEP_PHASE_FORWARD
           : p == PHASE_BACKWARD  ? STEP_PHASE_BACKWARD
           : p == PHASE_OPTIMIZER ? STEP_PHASE_OPTIMIZER
                                  : -1;
}

/* The iteration of event id: the last k with begins[k] <= id; -1 before the first. */
static int64_t iteration_of(const phase_timeline *t, int64_t id) {
    return (int64_t)gmt_search_i64(t->begins, t->nbegins, sizeof *t->begins, 0, id, 1) - 1;
}

static int add_begin(phase_timeline *t, int64_t id) {
    if (gmt_grow((void **)&t->begins, &t->cap_begins, t->nbegins, sizeof *t->begins) != 0)
        return -1;
    t->begins[t->nbegins++] = id;
    return 0;
}

/* Without steps: a forward after a backward or an optimizer step begins an iteration right
 * after that step's last event. A run that opens with a forward has a setup before it;
 * one that opens mid-iteration (a recording started late) has none. */
static int infer_iterations(phase_timeline *t) {
    int64_t current = -1;
    for (size_t i = 0; i < t->nruns; i++) {
        run *r = &t->runs[i];
        if (i == 0 && (r->phase != STEP_PHASE_FORWARD ? add_begin(t, INT64_MIN)
                                                      : add_begin(t, r->first_id)) != 0)
            return -1;
        if (i == 0)
            current = 0;
        else if (r->phase == STEP_PHASE_FORWARD && t->runs[i - 1].phase != STEP_PHASE_FORWARD) {
            if (add_begin(t, t->runs[i - 1].last_id + 1) != 0)
                return -1;
            current++;
        }
        r->iteration = current;
    }
    return 0;
}

/* One event's evidence (see phase_timeline_feed). 0, or -1 when out of memory. */
static int add_event(phase_timeline *t, int64_t id, int p) {
    if (p < 0)
        return 0;
    int64_t it = t->has_steps ? iteration_of(t, id) : 0;
    run *r = t->nruns ? &t->runs[t->nruns - 1] : NULL;
    if (r && r->phase == (step_phase)p && r->iteration == it) {
        r->last_id = id;
        return 0;
    }
    if (gmt_grow((void **)&t->runs, &t->cap_runs, t->nruns, sizeof *t->runs) != 0)
        return -1;
    t->runs[t->nruns++] = (run){id, id, it, (step_phase)p};
    return 0;
}

int phase_timeline_feed(phase_timeline *t, int64_t event_id, int64_t stack_id, int64_t ts) {
    if (event_id <= 0 || !stack_id)
        return 0; /* the seed happened before: it decides nothing */
    return add_event(t, event_id, phase_timeline_decided(t, stack_id, ts));
}

int phase_timeline_incremental(const phase_timeline *t) { return t->has_steps; }

/* Without steps: the whole timeline now (iterations need what comes after), from the device's
 * block events a chunk of columns at a time (event_scan.h). */
static int scan(phase_timeline *t, sqlite3 *db, int64_t device) {
    enum { ID, STACK, TS, OP, LEVEL, DEVICE, NCOL };
    static const int want[NCOL] = {EVENT_COL_event_id, EVENT_COL_stack_id, EVENT_COL_ts_ns,
                                   EVENT_COL_op,       EVENT_COL_level,    EVENT_COL_device};
    uint32_t mask = event_scan_mask(want, NCOL);
    char err[256];
    event_scan *es = event_scan_open(db, mask, 1, INT64_MAX, err, sizeof err);
    if (!es)
        return -1;
    int rc = 0;
    const int64_t *col[EVENT_STORE_NCOLS], *v[NCOL];
    long got;
    while (rc == 0 && (got = event_scan_next(es, col)) > 0) {
        event_scan_pick(col, want, NCOL, v);
        for (long r = 0; rc == 0 && r < got; r++) {
            int64_t op = v[OP][r];
            if (v[DEVICE][r] != device || v[STACK][r] == EVENT_STORE_NULL ||
                v[LEVEL][r] != TRACE_LEVEL_BLOCK ||
                (op != TRACE_OP_ALLOC && op != TRACE_OP_FREE_REQUESTED && op != TRACE_OP_FREE))
                continue;
            rc = phase_timeline_feed(t, v[ID][r], v[STACK][r], v[TS][r]);
        }
    }
    if (got < 0)
        rc = -1;
    event_scan_close(es);
    return rc == 0 ? infer_iterations(t) : -1;
}

phase_timeline *phase_timeline_build(sqlite3 *db, int64_t device, stack_phases *phases) {
    phase_timeline *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    /* A step's first event follows its begin_event_id (the state when it starts). What lies
     * between one step's end and the next one's begin (a batch copied in before the step
     * range opens) is the next iteration's prelude: an iteration begins right after the
     * previous step's end when that comes first. */
    sqlite3_stmt *st = db_statement(db, "SELECT begin_event_id, end_event_id, end_ts_ns IS NULL "
                                        "FROM steps WHERE begin_event_id IS NOT NULL ORDER BY "
                                        "begin_event_id");
    int ok = st != NULL, failed = 0;
    int64_t previous_end = INT64_MAX;
    while (ok && db_next_row(st, &failed)) {
        int64_t begin = sqlite3_column_int64(st, 0);
        ok = add_begin(t, (previous_end < begin ? previous_end : begin) + 1) == 0;
        previous_end = db_column_i64(st, 1, INT64_MAX);
        t->last_open = sqlite3_column_int(st, 2);
    }
    ok = ok && !failed;
    sqlite3_finalize(st);
    t->has_steps = t->nbegins > 0;
    if (!t->has_steps)
        t->last_open = 1; /* found from the phases: the recording may stop anywhere */
    t->phases = phases;
    /* torch.optim.Optimizer's profile hook wraps every optimizer's step, custom ones too, in
     * a record_function range "Optimizer.step#<Class>.step" (a snapshot's annotation) */
    st = ok ? db_statement(db, "SELECT begin_ts_ns, end_ts_ns FROM ranges WHERE name LIKE "
                               "'Optimizer.step#%' ORDER BY begin_ts_ns")
            : NULL;
    ok = ok && st;
    while (ok && db_next_row(st, &failed)) {
        if (gmt_grow((void **)&t->optimizer, &t->cap_optimizer, t->noptimizer,
                     sizeof *t->optimizer) != 0)
            ok = 0;
        else {
            span r = {sqlite3_column_int64(st, 0), db_column_i64(st, 1, INT64_MAX), 0};
            int64_t before = t->noptimizer ? t->optimizer[t->noptimizer - 1].reach : INT64_MIN;
            r.reach = r.end_ts > before ? r.end_ts : before;
            t->optimizer[t->noptimizer++] = r;
        }
    }
    ok = ok && !failed;
    sqlite3_finalize(st);
    if (ok && !t->has_steps)
        ok = scan(t, db, device) == 0;
    if (!ok) {
        phase_timeline_free(t);
        return NULL;
    }
    return t;
}

/* How many runs began at or before event_id. */
static size_t runs_upto(const phase_timeline *t, int64_t event_id) {
    return gmt_search_i64(t->runs, t->nruns, sizeof *t->runs, offsetof(run, first_id), event_id, 1);
}

step_phase phase_timeline_at(const phase_timeline *t, phase_cursor *cur, int64_t event_id,
                             int64_t *iteration) {
    int64_t it;
    size_t runs;
    if (cur && event_id >= cur->last_id) { /* forward from where the cursor stands */
        while (cur->begins < t->nbegins && t->begins[cur->begins] <= event_id)
            cur->begins++;
        while (cur->runs < t->nruns && t->runs[cur->runs].first_id <= event_id)
            cur->runs++;
        cur->last_id = event_id;
        it = (int64_t)cur->begins - 1;
        runs = cur->runs;
    } else {
        it = iteration_of(t, event_id);
        runs = runs_upto(t, event_id);
        if (cur)
            *cur = (phase_cursor){event_id, (size_t)(it + 1), runs};
    }
    if (iteration)
        *iteration = it;
    if (runs > 0 && t->runs[runs - 1].iteration == it)
        return t->runs[runs - 1].phase;
    return it < 0 ? STEP_PHASE_SETUP : STEP_PHASE_PRELUDE;
}

void phase_timeline_forget(phase_timeline *t, phase_cursor *cur) {
    if (cur->runs < 2)
        return;
    size_t gone = cur->runs - 1; /* the cursor's run stays: phase_timeline_at reads it */
    memmove(t->runs, t->runs + gone, (t->nruns - gone) * sizeof *t->runs);
    t->nruns -= gone;
    cur->runs -= gone;
}

int64_t phase_timeline_open_iteration(const phase_timeline *t) {
    return t->last_open ? (int64_t)t->nbegins - 1 : INT64_MIN;
}

void phase_timeline_free(phase_timeline *t) {
    if (!t)
        return;
    free(t->begins);
    free(t->runs);
    free(t->optimizer);
    free(t);
}
