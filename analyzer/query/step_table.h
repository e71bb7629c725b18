/* step_table.h — a row per step of one device: the fragmentation guide's table (fragmentation
 * and segments at each step's end) with the step's own peak and the phase it was in, its
 * allocations and frees, its growth, and the steps that stand out.
 *
 * A step is steps' [begin_event_id, end_event_id] (Time, steps and WHEN in DESIGN.md). The end
 * state is step_ends' and free_splits' (summary tables); the peak inside and the counts are one
 * pass over the step's events (event_rows by rowid range), the peak's phase is its stack's
 * (phases.h).
 *
 * Anomalies, each said in a few words (the first that applies):
 *   "peak X above its neighbours"   the step's peak exceeds the median peak of the up to 10
 *                                   steps around it by 20 % and 16 MiB at least
 *   "grew X (neighbours Y)"         its growth (allocated at its end minus the step before's)
 *                                   exceeds the median growth of its neighbours by more than 3
 *                                   median absolute deviations and 16 MiB
 *   "reserved first jumps by X"     the first step after the warm-up (steps 0 and 1, where the
 *                                   cache forms) whose reserved at its end exceeds the step
 *                                   before's by 10 % and 64 MiB at least; a step with an anomaly
 *                                   above is that jump too when it qualifies
 * A step still open when the trace ends (cut mid-step) has no anomaly: its end is not an end.
 *
 * A history that begins mid-run (the device's seed already holds memory: what made it is not in
 * the input, as when PyTorch's ring had dropped its oldest entries) measures nothing before its
 * first event. A step that ended before it is no row (its end state would be the seed's, which
 * is the state when the history begins, not when that step ended): step_history counts them. A
 * step that began before it is `partial`: its peak and counts are those of the part the history
 * holds, and its growth is not known (the state at its begin is not), nor is one computed across
 * the hole. Nothing else changes: a history that begins with nothing live begins the run.
 *
 * An input without steps (most snapshots: one training iteration, no step markers) has implicit
 * ones, so that "is the peak in forward, backward or the optimizer step?" has its answer: the
 * history is one step, or, where the program's optimizer ran under torch.profiler's
 * "Optimizer.step#<Class>.step" ranges, each such range (with the ones it encloses) ends one, and
 * what follows the last is one more, open. An implicit step holding none of the device's events
 * is none. Their peak's phase is the phase timeline's (phase_timeline.h: the rule the
 * categories use, which knows the events before the peak and the optimizer's ranges), one of
 * setup, prelude, forward, backward, optimizer; a marked step's stays its stack's (phases.h). */
#ifndef GMT_STEP_TABLE_H
#define GMT_STEP_TABLE_H

#include "phase_timeline.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct step_row {
    int64_t step;
    int64_t begin_event_id, end_event_id; /* steps': the step holds the events in (begin, end] */
    int64_t peak_allocated, peak_event_id;
    const char *peak_phase; /* phase_name */
    int64_t allocated_at_end, reserved_at_end, segments_at_end;
    double fragmentation_at_end, trapped_at_end; /* trapped: -1 when not known */
    int64_t allocs, frees;
    int64_t growth;   /* allocated at its end minus the previous step's (the first: minus the
                         state before it) */
    int growth_known; /* 0: it began before a history that begins mid-run (growth is 0) */
    char anomaly[96]; /* "" none */
    int open;         /* the trace ended inside it */
    int partial;      /* it began before a history that begins mid-run */
    int implicit;     /* the input marks no steps: an implicit one (see above) */
} step_row;

/* Where the device's history begins, for what it measures (see above). */
typedef struct step_history {
    int mid_run;          /* the device's seed holds memory: the history begins mid-run */
    int64_t first_event;  /* the device's first recorded event; 0: none */
    int64_t first_step;   /* the first step it measures (its first row); -1: none */
    int64_t before;       /* steps that ended before it: not rows */
    int64_t before_first; /* their lowest and highest numbers (when before > 0) */
    int64_t before_last;
} step_history;

/* Whether the device's history begins mid-run, and its first recorded event (0: none). 0, or
 * -1 (SQL). */
int step_history_begin(sqlite3 *db, int device, int *mid_run, int64_t *first_event);

/* "setup", "prelude", "forward", "backward", "optimizer". */
const char *step_phase_word(step_phase p);

/* The phase timeline's phase at an event of the device (see above), as step_phase_word says
 * it; NULL when out of memory or on a query error. */
const char *step_table_phase_at(sqlite3 *db, int device, int64_t event_id);

/* The steps of `device` (implicit ones when the input marks none); *rows malloc'ed; *history (may
 * be NULL) where its history begins. 0, or -1 with a one-line message in err. */
int step_table(sqlite3 *db, int device, step_row **rows, size_t *count, step_history *history,
               char *err, size_t errlen);

/* What the parts of a device's table share, found once and kept by whoever asks for many
 * (the viewer: per database file and device; the database does not change under it). */
typedef struct step_order {
    int begins_sorted; /* each step begins where or after the one before it in the table's
                          order begins, none with a NULL begin: a window's ends are seeks */
    int jump_known;    /* first_jump said (step_table_part says it the first time it is needed) */
    size_t first_jump; /* the row of the table's first reserved jump; SIZE_MAX: none */
} step_order;

/* *o of `device`'s table, the jump not known yet: a walk of steps_end's entries (~60 ms per
 * 300 k steps; stopped at the first begin out of order). 0, or -1 with a one-line message in
 * err. */
int step_table_order(sqlite3 *db, int device, step_order *o, char *err, size_t errlen);

/* Rows [first, first + count) of step_table's answer (fewer at its end), each the same to the
 * byte, in the time of those rows, not of the run: the rows and their neighbours (the anomalies
 * compare with up to 5 on each side) come from the summary tables through the steps_end index,
 * from the row before the first neighbour on (a seek: an OFFSET walk over the index's entries,
 * ~20 ns each), and only their events are read. Of the rows before them only whether the first
 * reserved jump is among them matters: order's first_jump when known; else found (the steps_end
 * entries walked beside the device's step_ends rows, ~0.3 µs a row, stopped at the jump) up to
 * them (order NULL) or to the table's end and kept in *order. The table's row count in *total.
 * *rows malloc'ed (*n of them); *history (may be NULL) as step_table's. 0; 1 when the input has
 * implicit steps (no summary rows: only step_table's pass makes them; nothing made); or -1 with
 * a one-line message in err. */
int step_table_part(sqlite3 *db, int device, size_t first, size_t count, step_order *order,
                    step_row **rows, size_t *n, size_t *total, step_history *history, char *err,
                    size_t errlen);

/* Which rows of step_table's answer a window (from, to] of event ids has (the viewer's window
 * summary, then step_table_part for those rows): [*first, *first + *count), from the first row
 * of a step that overlaps it (ends after from, begins before to: a step holds (begin, end]) to
 * the last, the rows between included whether they overlap or not (steps may overlap, so a
 * row's begin need not rise with the table's order: both ends are looked for); *count 0 (and
 * *first 0) when none does. From the steps_end and steps_begin_event indexes' entries alone, no
 * row of steps and no event: with order's begins_sorted, a seek for each end; else (order NULL,
 * or steps that nest) walks: from the first step that ends after from, forward to the first that
 * begins before to, and from the table's end back to the last that does (up to ~2 ms per 30 k
 * steps). Then a count of the entries before the first and between the two (~20 ns each). 0; 1
 * when the input has implicit steps (nothing said: only step_table's pass makes them); or -1
 * with a one-line message in err. */
int step_table_overlap(sqlite3 *db, int device, int64_t from, int64_t to, const step_order *order,
                       size_t *first, size_t *count, char *err, size_t errlen);

#endif
