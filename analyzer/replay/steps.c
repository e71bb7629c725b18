/* steps.c — step intervals from markers; see steps.h for the rule.
 *
 * Open ranges are kept per thread (push/pop nest per thread) and per range
 * id (start/end pair across threads); only those whose name is a step
 * become intervals, but every push is tracked so that pops stay paired.
 * Intervals with the same number (two threads or devices marking the same
 * step) merge into one: a step is global. */
#include "steps.h"

#include "gmt_grow.h"

#include "step_rule.h"
#include "trace_format.h"

#include <stdlib.h>
#include <string.h>

typedef struct open_push {
    uint32_t tid;
    int64_t interval; /* index into intervals, or -1 for a range that is no step */
} open_push;

typedef struct open_range {
    uint64_t range_id;
    int64_t interval;
} open_range;

struct step_tracker {
    char *word;
    step_interval *intervals;
    size_t count, cap;
    open_push *pushes; /* a stack; pops search from the top for their thread */
    size_t pushes_len, pushes_cap;
    open_range *ranges;
    size_t ranges_len, ranges_cap;
    int64_t open_mark; /* interval opened by a step mark, or -1 */
};

step_tracker *steps_new(const char *word) {
    step_tracker *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->word = word ? strdup(word) : NULL;
    t->open_mark = -1;
    return t;
}

void steps_free(step_tracker *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->count; i++)
        free(t->intervals[i].name);
    free(t->intervals);
    free(t->pushes);
    free(t->ranges);
    free(t->word);
    free(t);
}

/* Opens an interval; returns its index or -1 (out of memory). */
static int64_t open_interval(step_tracker *t, int64_t number, const char *name, int64_t ts,
                             int64_t event_id) {
    if (gmt_grow((void **)&t->intervals, &t->cap, t->count, sizeof *t->intervals) != 0)
        return -1;
    step_interval *s = &t->intervals[t->count];
    s->step = number;
    s->name = name ? strdup(name) : NULL;
    s->begin_ts = ts;
    s->end_ts = INT64_MAX;
    s->begin_event_id = event_id;
    s->end_event_id = INT64_MAX;
    return (int64_t)t->count++;
}

/* Returns 1 when it closed an open interval (a step ended), else 0. */
static int close_interval(step_tracker *t, int64_t index, int64_t ts, int64_t event_id) {
    if (index < 0 || (size_t)index >= t->count)
        return 0;
    step_interval *s = &t->intervals[index];
    if (s->end_ts != INT64_MAX)
        return 0;
    s->end_ts = ts;
    s->end_event_id = event_id;
    return 1;
}

int steps_marker(step_tracker *t, unsigned kind, uint32_t tid, uint64_t range_id, const char *name,
                 int64_t value, int64_t ts, int64_t last_event_id) {
    int64_t number = -1;
    int is_step = 0;
    if (kind == TRACE_MARK_RANGE_PUSH || kind == TRACE_MARK_RANGE_START || kind == TRACE_MARK_MARK)
        is_step = step_rule_match(name, t->word, &number);
    int64_t index = -1;
    int ended = 0;
    switch (kind) {
    case TRACE_MARK_RANGE_PUSH:
        if (is_step && (index = open_interval(t, number, name, ts, last_event_id)) < 0)
            return -1;
        if (gmt_grow((void **)&t->pushes, &t->pushes_cap, t->pushes_len, sizeof *t->pushes) != 0)
            return -1;
        t->pushes[t->pushes_len++] = (open_push){tid, index};
        break;
    case TRACE_MARK_RANGE_POP:
        for (size_t i = t->pushes_len; i-- > 0;) {
            if (t->pushes[i].tid != tid)
                continue;
            ended = close_interval(t, t->pushes[i].interval, ts, last_event_id);
            memmove(&t->pushes[i], &t->pushes[i + 1], (t->pushes_len - i - 1) * sizeof *t->pushes);
            t->pushes_len--;
            break;
        }
        break;
    case TRACE_MARK_RANGE_START:
        if (!is_step)
            break;
        if ((index = open_interval(t, number, name, ts, last_event_id)) < 0 ||
            gmt_grow((void **)&t->ranges, &t->ranges_cap, t->ranges_len, sizeof *t->ranges) != 0)
            return -1;
        t->ranges[t->ranges_len++] = (open_range){range_id, index};
        break;
    case TRACE_MARK_RANGE_END:
        for (size_t i = 0; i < t->ranges_len; i++) {
            if (t->ranges[i].range_id != range_id)
                continue;
            ended = close_interval(t, t->ranges[i].interval, ts, last_event_id);
            t->ranges[i] = t->ranges[--t->ranges_len];
            break;
        }
        break;
    case TRACE_MARK_MARK:
        if (!is_step)
            break;
        ended = close_interval(t, t->open_mark, ts, last_event_id);
        if ((t->open_mark = open_interval(t, number, name, ts, last_event_id)) < 0)
            return -1;
        break;
    case TRACE_MARK_STEP_BEGIN:
        if (open_interval(t, value, name, ts, last_event_id) < 0)
            return -1;
        break;
    case TRACE_MARK_STEP_END:
        for (size_t i = t->count; i-- > 0;)
            if (t->intervals[i].step == value && t->intervals[i].end_ts == INT64_MAX) {
                ended = close_interval(t, (int64_t)i, ts, last_event_id);
                break;
            }
        break;
    default:
        break;
    }
    return ended;
}

static int by_begin(const void *a, const void *b) {
    const step_interval *x = a, *y = b;
    if (x->begin_ts != y->begin_ts)
        return x->begin_ts < y->begin_ts ? -1 : 1;
    return x->begin_event_id < y->begin_event_id ? -1 : x->begin_event_id > y->begin_event_id;
}

static int by_step(const void *a, const void *b) {
    const step_interval *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return by_begin(a, b);
}

const step_interval *steps_finish(step_tracker *t, int64_t last_ts, int64_t last_event_id,
                                  size_t *count) {
    *count = 0;
    if (!t->count)
        return t->intervals;
    for (size_t i = 0; i < t->count; i++) {
        t->intervals[i].open = t->intervals[i].end_ts == INT64_MAX;
        close_interval(t, (int64_t)i, last_ts, last_event_id);
    }
    qsort(t->intervals, t->count, sizeof *t->intervals, by_begin);
    int64_t order = 0;
    for (size_t i = 0; i < t->count; i++)
        if (t->intervals[i].step < 0)
            t->intervals[i].step = order++;
    /* One interval per step number: [earliest begin, latest end). Sorting
     * by number (stable on begin) puts the pieces of a step side by side. */
    qsort(t->intervals, t->count, sizeof *t->intervals, by_step);
    size_t out = 0;
    for (size_t i = 0; i < t->count; i++) {
        step_interval *s = &t->intervals[i];
        if (out == 0 || t->intervals[out - 1].step != s->step) {
            t->intervals[out++] = *s;
            continue;
        }
        step_interval *m = &t->intervals[out - 1];
        if (s->end_ts > m->end_ts) {
            m->end_ts = s->end_ts;
            m->end_event_id = s->end_event_id;
        }
        m->open |= s->open;
        free(s->name);
    }
    qsort(t->intervals, out, sizeof *t->intervals, by_begin);
    t->count = out;
    *count = out;
    return t->intervals;
}
