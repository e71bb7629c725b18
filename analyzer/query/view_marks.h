/* view_marks.h — what `memanalyze view` marks along its timeline: the steps as spans on the
 * timeline's axis (ts_ns, or the event id for an input without times, view_timeline.h), the
 * NVTX ranges (the `ranges` view: pushes and starts with their ends) as spans with their
 * nesting depth, and a device's OOMs (and failed driver allocations) as moments on it, with
 * the bytes asked for. A window's steps, at most a number of them: beyond it every k-th (a run
 * of 100 k steps drawn at 1000 pixels shows no single step anyway); its ranges, at most a
 * number of them: the outermost first, of one depth the longest. */
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

/* The longest range name (and domain) kept, in bytes; a longer one is cut (at a UTF-8
 * boundary) and ends in "...": an answer of VIEW_MARKS range marks stays small. */
#define VIEW_MARKS_NAME_MAX 96

typedef struct view_range_mark {
    int64_t marker_id;  /* the 'push'/'start' marker's */
    int64_t begin, end; /* on the axis: [begin, end); a range still open ends at the run's end */
    int open;           /* 1: still open at the end of the trace */
    int depth;          /* its row (view_marks): 0 outermost; for nested ranges the depth */
    int64_t tid;        /* the thread that opened it; -1: process-wide or unknown */
    char *name;         /* NULL: none */
    char *domain;       /* NULL: the default domain */
} view_range_mark;

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
    int64_t ooms_total;      /* the device's recorded OOMs and failed driver allocations */
    int64_t steps_total;     /* the steps in the window */
    int64_t step_stride;     /* 1: every step of the window; k: every k-th */
    view_range_mark *ranges; /* in begin order (then outermost first) */
    size_t nranges;
    int64_t ranges_total; /* the ranges overlapping the window */
    int ranges_depth;     /* the deepest depth among them + 1 (0: none) */
} view_marks_result;

/* The steps in [lo, hi) on the axis (those that overlap it), at most max_steps of them (every
 * k-th beyond), the NVTX ranges overlapping it, at most max_ranges (those of the least depth
 * kept, then the longest, then the earliest), and, when with_ooms, `device`'s OOMs in the
 * window; event_axis as view_timeline_axis says. A range's depth: its row, the lowest whose
 * ranges so far (in begin order, the longer first) end by its begin, at most 63 (for nested
 * ranges, as one thread's pushes are, the nesting depth; ranges of other threads that overlap
 * take rows of their own). Ranges are process-wide, on every device; on the event axis (an input
 * without times) none, as markers then have no place among the events. The ranges are read
 * from the markers alone (markers_ts, markers_begin), never the events; the events are read
 * only when the device has OOMs (devices.ooms, devices.alloc_failed). 0, or -1 with a
 * message. */
int view_marks(sqlite3 *db, int device, int event_axis, int64_t lo, int64_t hi, size_t max_steps,
               size_t max_ranges, int with_ooms, view_marks_result *out, char *err, size_t errlen);

void view_marks_free(view_marks_result *out);

#endif
