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

/* One scan of the device's block events that carry a stack. NULL when out of memory or on a
 * query error. */
phase_timeline *phase_timeline_build(sqlite3 *db, int64_t device, stack_phases *phases);

/* The phase at an event (event_rows.event_id: order, not time), and in *iteration the
 * iteration it falls in (-1: the setup, before the first). */
step_phase phase_timeline_at(const phase_timeline *t, int64_t event_id, int64_t *iteration);

/* The phase an event's own evidence decides (a step_phase), or -1: its stack's phase when that
 * is forward, backward or optimizer; else optimizer inside a range "Optimizer.step#..." (the
 * profiler's annotation of any optimizer's step, custom ones too). */
int phase_timeline_decided(const phase_timeline *t, int64_t stack_id, int64_t ts);

/* The last iteration (the one the recording ends in); -1 when there is none. */
int64_t phase_timeline_last_iteration(const phase_timeline *t);

/* The step phase of a decided stack phase (forward, backward, optimizer); -1 for the others. */
int step_phase_of(phase p);

/* "setup", "prelude", "forward", "backward", "optimizer". */
const char *step_phase_name(step_phase p);

void phase_timeline_free(phase_timeline *t);

#endif
