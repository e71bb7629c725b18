/* steps.h — finds the training steps in a stream of markers (DESIGN.md,
 * "Time, steps and WHEN").
 *
 * A step is a global time interval [begin, end). It opens with a range
 * (NVTX push on a thread, or start/end with a range id, or a snapshot's
 * START/END annotation) whose name follows the step rule, with an explicit
 * step_begin (memrec.h), or with a mark that follows the step rule (then it
 * lasts until the next step mark). Step N is the number in its name; when
 * names carry no number, steps are numbered 0, 1, 2... in order of begin.
 *
 * The tracker is fed markers in trace order together with the id of the
 * last event before them, which is how `step:N` (the state just before step
 * N ends) becomes an event id without a search. Ownership: the tracker owns
 * copies of the names; steps_free releases everything. */
#ifndef GMT_STEPS_H
#define GMT_STEPS_H

#include <stddef.h>
#include <stdint.h>

typedef struct step_interval {
    int64_t step;             /* the N of step:N */
    char *name;               /* the marker name, or NULL */
    int64_t begin_ts, end_ts; /* end_ts = INT64_MAX while open */
    int64_t begin_event_id, end_event_id;
    int open; /* still open when the trace ended: end_* are the trace's end */
} step_interval;

typedef struct step_tracker step_tracker;

/* `word` replaces "step" in the rule; NULL for the default. */
step_tracker *steps_new(const char *word);
void steps_free(step_tracker *t);

/* Feeds one marker. kind is a trace_marker_kind; name may be NULL; value
 * is the explicit step number of step_begin/step_end; last_event_id is the
 * id of the last event before this marker. Returns 1 when the marker ended
 * a step interval (steps_closed says which), 0 otherwise, -1 out of
 * memory. */
int steps_marker(step_tracker *t, unsigned kind, uint32_t tid, uint64_t range_id, const char *name,
                 int64_t value, int64_t ts, int64_t last_event_id);

/* The interval the last steps_marker call ended (when it returned 1): a
 * piece of step `step`; pieces of one step are merged by whoever stores
 * them (db_writer_step: earliest begin and its name, latest end, open when
 * one is). Valid until the next call. */
const step_interval *steps_closed(const step_tracker *t);

/* The step open now that began last (its number in *step): 1, or 0 when none is open. */
int steps_current(const step_tracker *t, int64_t *step);

/* Closes what is still open at the end (end_ts = last_ts, end_event_id =
 * last_event_id, open = 1, so step:N of an unfinished step is the trace's
 * end) and returns those intervals sorted by begin; the tracker keeps
 * nothing else (the closed ones went out one by one). The array stays owned
 * by the tracker; call once. */
const step_interval *steps_finish(step_tracker *t, int64_t last_ts, int64_t last_event_id,
                                  size_t *count);

#endif
