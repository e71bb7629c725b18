/* steps.c — step intervals from markers; see steps.h for the rule.
 *
 * Open ranges are kept per thread (push/pop nest per thread) and per range
 * id (start/end pair across threads); only those whose name is a step
 * become intervals, but every push is tracked so that pops stay paired.
 * Intervals with the same number (two threads or devices marking the same
 * step) merge into one: a step is global. The merge is the database's
 * (db_writer_step): the tracker hands each interval over as it closes and
 * keeps only the open ones, in slots that closing frees, so its memory is
 * what is open now, not the run's step count. */
#include "steps.h"

#include "gmt_grow.h"

#include "step_rule.h"
#include "trace_format.h"

#include <stdlib.h>
#include <string.h>

typedef struct open_push {
    uint32_t tid;
    int64_t interval; /* slot of its interval, or -1 for a range that is no step */
} open_push;

typedef struct open_range {
    uint64_t range_id;
    int64_t interval;
} open_range;

struct step_tracker {
    char *word;
    step_interval *slots; /* open intervals; a free slot has end_ts != INT64_MAX */
    size_t slots_len, slots_cap;
    size_t *free_slots; /* a stack of free slot indexes */
    size_t free_len, free_cap;
    int64_t next_unnumbered; /* the number of the next step named without one */
    step_interval closed;    /* what the last call closed (name owned here) */
    open_push *pushes;       /* a stack; pops search from the top for their thread */
    size_t pushes_len, pushes_cap;
    open_range *ranges;
    size_t ranges_len, ranges_cap;
    int64_t open_mark; /* interval opened by a step mark, or -1 */
    int finished;      /* steps_finish ran: every slot holds an interval it returned */
};

step_tracker *steps_new(const char *word) {
    step_tracker *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->word = word ? strdup(word) : NULL;
    t->open_mark = -1;
    if (word && !t->word) {
        free(t);
        return NULL;
    }
    return t;
}

void steps_free(step_tracker *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->slots_len; i++)
        if (t->finished || t->slots[i].end_ts == INT64_MAX)
            free(t->slots[i].name);
    free(t->closed.name);
    free(t->slots);
    free(t->free_slots);
    free(t->pushes);
    free(t->ranges);
    free(t->word);
    free(t);
}

/* Opens an interval; returns its slot or -1 (out of memory). A step named
 * without a number takes the next in order of opening, which is the order
 * of begin: markers come in time order. */
static int64_t open_interval(step_tracker *t, int64_t number, const char *name, int64_t ts,
                             int64_t event_id) {
    char *copy = name ? strdup(name) : NULL;
    if (name && !copy)
        return -1;
    size_t slot;
    if (t->free_len) {
        slot = t->free_slots[--t->free_len];
    } else {
        if (gmt_grow((void **)&t->slots, &t->slots_cap, t->slots_len, sizeof *t->slots) != 0) {
            free(copy);
            return -1;
        }
        slot = t->slots_len++;
    }
    step_interval *s = &t->slots[slot];
    s->step = number >= 0 ? number : t->next_unnumbered++;
    s->name = copy;
    s->begin_ts = ts;
    s->end_ts = INT64_MAX;
    s->begin_event_id = event_id;
    s->end_event_id = INT64_MAX;
    s->open = 0;
    return (int64_t)slot;
}

/* Closes the interval in `slot` into t->closed and frees the slot. Returns
 * 1 when it closed one (a step ended), 0 when the slot holds none, -1 out
 * of memory. */
static int close_interval(step_tracker *t, int64_t slot, int64_t ts, int64_t event_id) {
    if (slot < 0 || (size_t)slot >= t->slots_len || t->slots[slot].end_ts != INT64_MAX)
        return 0;
    if (gmt_grow((void **)&t->free_slots, &t->free_cap, t->free_len, sizeof *t->free_slots) != 0)
        return -1;
    step_interval *s = &t->slots[slot];
    free(t->closed.name);
    t->closed = *s;
    t->closed.end_ts = ts;
    t->closed.end_event_id = event_id;
    s->name = NULL;
    s->end_ts = ts; /* free */
    t->free_slots[t->free_len++] = (size_t)slot;
    /* whatever opened it (a push, a range, a mark) may be open still when something else
     * closed it (a step_end): it must not close the slot's next interval */
    for (size_t i = 0; i < t->pushes_len; i++)
        if (t->pushes[i].interval == slot)
            t->pushes[i].interval = -1;
    for (size_t i = 0; i < t->ranges_len; i++)
        if (t->ranges[i].interval == slot)
            t->ranges[i].interval = -1;
    if (t->open_mark == slot)
        t->open_mark = -1;
    return 1;
}

const step_interval *steps_closed(const step_tracker *t) { return &t->closed; }

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
    case TRACE_MARK_STEP_END: /* the latest opened of that number */
        for (size_t i = t->slots_len; i-- > 0;)
            if (t->slots[i].step == value && t->slots[i].end_ts == INT64_MAX &&
                (index < 0 || t->slots[i].begin_ts > t->slots[index].begin_ts))
                index = (int64_t)i;
        ended = close_interval(t, index, ts, last_event_id);
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

int steps_current(const step_tracker *t, int64_t *step) {
    const step_interval *latest = NULL;
    for (size_t i = 0; i < t->slots_len; i++) {
        const step_interval *s = &t->slots[i];
        if (s->end_ts == INT64_MAX && (!latest || s->begin_ts >= latest->begin_ts))
            latest = s;
    }
    if (latest)
        *step = latest->step;
    return latest != NULL;
}

const step_interval *steps_finish(step_tracker *t, int64_t last_ts, int64_t last_event_id,
                                  size_t *count) {
    size_t out = 0;
    for (size_t i = 0; i < t->slots_len; i++) {
        step_interval *s = &t->slots[i];
        if (s->end_ts != INT64_MAX)
            continue; /* a free slot */
        s->end_ts = last_ts;
        s->end_event_id = last_event_id;
        s->open = 1;
        t->slots[out++] = *s;
    }
    t->slots_len = out; /* every slot holds an interval still open at the end */
    t->free_len = 0;
    t->finished = 1;
    if (out > 1) /* (qsort of NULL is undefined even for no elements) */
        qsort(t->slots, out, sizeof *t->slots, by_begin);
    *count = out;
    return t->slots;
}
