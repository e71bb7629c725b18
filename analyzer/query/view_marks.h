/* view_marks.h — what `memanalyze view` marks along its timeline: the steps as spans on the
 * timeline's axis (ts_ns, or the event id for an input without times, view_timeline.h) and a
 * device's OOMs (and failed driver allocations) as moments on it, with the bytes asked for.
 * A window's steps, at most a number of them: beyond it every k-th (a run of 100 k steps drawn
 * at 1000 pixels shows no single step anyway). */
#ifndef GMT_VIEW_MARKS_H
#define GMT_VIEW_MARKS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* The most OOM marks kept per device (the first ones). */
#define VIEW_MARKS_MAX_OOMS 1000

typedef struct view_step_mark {
    int64_t step;
    int64_t begin, end; /* on the axis: [begin, end); end -1: still open at the trace's end */
    int64_t begin_event_id, end_event_id; /* steps' */
} view_step_mark;

typedef struct view_oom_mark {
    int64_t event_id;
    int64_t at;   /* on the axis */
    int64_t size; /* bytes asked for */
    int driver;   /* 0: the allocator's oom; 1: a failed driver allocation (alloc_failed) */
} view_oom_mark;

typedef struct view_marks_result {
    view_step_mark *steps;
    size_t nsteps;
    view_oom_mark *ooms;
    size_t nooms;
    int64_t ooms_total;  /* the device's recorded OOMs and failed driver allocations */
    int64_t steps_total; /* the steps in the window */
    int64_t step_stride; /* 1: every step of the window; k: every k-th */
} view_marks_result;

/* The steps in [lo, hi) on the axis (those that overlap it), at most max_steps of them (every
 * k-th beyond), and, when with_ooms, `device`'s OOMs in the window; event_axis as
 * view_timeline_axis says. The events are read only when the device has OOMs (devices.ooms,
 * devices.alloc_failed). 0, or -1 with a message. */
int view_marks(sqlite3 *db, int device, int event_axis, int64_t lo, int64_t hi, size_t max_steps,
               int with_ooms, view_marks_result *out, char *err, size_t errlen);

void view_marks_free(view_marks_result *out);

#endif
