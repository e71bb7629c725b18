/* phase_timeline.h — when each phase of training ran: the iterations of a run and, inside
 * each, its forward, backward and optimizer step, from the stacks of the memory events.
 *
 * A free often carries no stack, and an allocation's stack may say nothing (a data loader, a
 * helper outside any module): what phase it belongs to is then a matter of time. The timeline
 * answers that: the phase at an event is the phase of the last event before it, in the same
 * iteration, whose stack decides one (phases.h: a module call, autograd's engine, an optimizer's
 * code). Before the first such event of an iteration lies its prelude (data loading, zero_grad);
 * before the first iteration, the setup (model creation). Inside an "Optimizer.step#..."
 * range (torch.profiler's annotation of every optimizer's step) the optimizer decides.
 *
 * Iterations are the steps (the steps table) when the run has steps. Without steps they are
 * found from the phases themselves: a forward after a backward or an optimizer step begins a
 * new one right after the last event of that step, so the data loading in between is the new
 * iteration's prelude. A timeline is a device's: a process that drives several GPUs in turn
 * runs each one's phases at its own times. */
#ifndef GMT_PHASE_TIMELINE_H
#define GMT_PHASE_TIMELINE_H

#include "stack_phases.h"

#include <sqlite3.h>
#include <stdint.h>

typedef enum step_phase {
    STEP_PHASE_SETUP = 0, /* before the first iteration */
    STEP_PHASE_PRELUDE,   /* in an iteration, before its first decided event */
    STEP_PHASE_FORWARD,
    STEP_PHASE_BACKWARD,
    STEP_PHASE_OPTIMIZER,
    STEP_PHASE_COUNT
} step_phase;

typedef struct phase_timeline phase_timeline;

/* Where the last question stood: questions in ascending event order (a sweep's) move it forward
 * instead of searching; an earlier event searches. Start from PHASE_CURSOR_INIT. */
typedef struct phase_cursor {
    int64_t last_id;
    size_t begins, runs; /* iterations and runs begun at or before last_id */
} phase_cursor;
#define PHASE_CURSOR_INIT                                                                          \
    { INT64_MIN, 0, 0 }

/* The device's timeline. With steps it starts empty and the caller feeds it every block event
 * (alloc, free_requested, free) in event order (phase_timeline_feed), asking about an event only
 * once it and all before it are fed: the phase at an event depends on the past alone. Without
 * steps the iterations depend on what comes after, so it scans the device's block events at
 * once. NULL when out of memory or on a query error. */
phase_timeline *phase_timeline_build(sqlite3 *db, int64_t device, stack_phases *phases);

/* 1 when the timeline wants phase_timeline_feed (a run with steps), 0 when it is complete. */
int phase_timeline_incremental(const phase_timeline *t);

/* A block event of the device, in event order (stack_id 0: none). 0, or -1 out of memory. */
int phase_timeline_feed(phase_timeline *t, int64_t event_id, int64_t stack_id, int64_t ts);

/* The phase at an event (event_rows.event_id: order, not time), and in *iteration the
 * iteration it falls in (-1: the setup, before the first). cursor may be NULL. */
step_phase phase_timeline_at(const phase_timeline *t, phase_cursor *cursor, int64_t event_id,
                             int64_t *iteration);

/* Drops the runs a sweep has passed (every run before the one `cursor` stands in), so a sweep
 * over a long run keeps a few runs, not a few per iteration (~30 MB at 315 k steps). Only for a
 * timeline asked nothing from now on but through `cursor`, forward. */
void phase_timeline_forget(phase_timeline *t, phase_cursor *cursor);

/* The phase an event's own evidence decides (a step_phase), or -1: its stack's phase when that
 * is forward, backward or optimizer; else optimizer inside a range "Optimizer.step#..." (the
 * profiler's annotation of any optimizer's step, custom ones too). */
int phase_timeline_decided(const phase_timeline *t, int64_t stack_id, int64_t ts);

/* The iteration the recording stopped in before it ended (the last, when its step is still open
 * or the iterations were found from the phases); INT64_MIN when the last step ended. */
int64_t phase_timeline_open_iteration(const phase_timeline *t);

/* The step phase of a decided stack phase (forward, backward, optimizer); -1 for the others. */
int step_phase_of(phase p);

void phase_timeline_free(phase_timeline *t);

#endif
