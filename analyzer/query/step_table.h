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
 * A step still open when the trace ends (cut mid-step) has no anomaly: its end is not an end. */
#ifndef GMT_STEP_TABLE_H
#define GMT_STEP_TABLE_H

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
    char anomaly[96]; /* "" none */
    int open;         /* the trace ended inside it */
} step_row;

/* The steps of `device`; *rows malloc'ed. 0, or -1 with a one-line message in err. */
int step_table(sqlite3 *db, int device, step_row **rows, size_t *count, char *err, size_t errlen);

#endif
