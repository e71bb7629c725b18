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

/* The most rows (depths) told apart; deeper ranges share the last. */
#define VIEW_RANGE_ROWS_MAX 64

/* One NVTX range of the run in its row. */
typedef struct view_range_entry {
    int64_t begin, end; /* on the axis; an open range ends at the run's end */
    int64_t marker_id, tid;
    int32_t depth, open;
} view_range_entry;

/* Every NVTX range of the input, each in its row over the whole run (a range keeps its row at
 * every zoom): the lowest whose ranges so far (in begin order, the longer first) end by its
 * begin, at most VIEW_RANGE_ROWS_MAX - 1 (for nested ranges, as one thread's pushes are, the
 * nesting depth; ranges of other threads that overlap take rows of their own). In a row but
 * the last, ranges do not overlap, so their begins and ends both ascend and any window's ranges
 * of the row are a slice found by two binary searches: view_marks answers a window without a
 * pass over the ranges (one was 130-350 ms per /api/marks at 158 k ranges, 10 M events).
 * Made once by a pass over the ranges view (view_ranges_index_build), kept by the caller (the
 * server keeps one per database: ~40 bytes a range). */
typedef struct view_ranges_index {
    view_range_entry *ranges; /* by row, then begin (then the longer, then marker order) */
    size_t n;
    size_t row_start[VIEW_RANGE_ROWS_MAX + 1]; /* row r: ranges[row_start[r], row_start[r+1]) */
    int rows;
} view_ranges_index;

/* The index of db's ranges; none on the event axis (markers have times only). 0, or -1 with
 * a message. */
int view_ranges_index_build(sqlite3 *db, int event_axis, view_ranges_index *out, char *err,
                            size_t errlen);
void view_ranges_index_free(view_ranges_index *x);

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
 * k-th beyond), the NVTX ranges of `ranges` overlapping it (or an instant in it), at most
 * max_ranges (those of the least depth kept, then the longest, then the earliest; their names
 * read for those alone), and, when with_ooms, `device`'s OOMs in the window; event_axis as
 * view_timeline_axis says. Ranges are process-wide, on every device; on the event axis (an
 * input without times) none. The events are read only when the device has OOMs
 * (devices.ooms, devices.alloc_failed). 0, or -1 with a message. */
int view_marks(sqlite3 *db, int device, int event_axis, int64_t lo, int64_t hi, size_t max_steps,
               const view_ranges_index *ranges, size_t max_ranges, int with_ooms,
               view_marks_result *out, char *err, size_t errlen);

void view_marks_free(view_marks_result *out);

#endif
