/* step_stream.h — the steps of a window one at a time, and the facts across them taken in
 * passes rather than from an array.
 *
 * A long run has hundreds of thousands of steps: an array of their end states (56 bytes each)
 * made `report`'s memory grow with the trace, so nothing here keeps one. A cursor gives the
 * steps in order; the headroom trend, a median across the steps, is taken exactly by
 * base/median.h in one pass (a few more when the changes spread), the first of which also
 * gives the overview (count, fragmentation at step ends); an evenly spread
 * sample is one more. The definitions are DESIGN.md's; the step
 * end states are step_ends' rows (or, without the replay's summaries, found in the events). */
#ifndef GMT_STEP_STREAM_H
#define GMT_STEP_STREAM_H

#include "analysis.h"

/* One step's end state. */
typedef struct step_state {
    int64_t step;
    moment at_end;
} step_state;

/* Steps whose end lies in the window (from, to], in step order (by begin time, then number). */
typedef struct step_cursor step_cursor;

step_cursor *step_cursor_open(sqlite3 *db, int device, int64_t from, int64_t to); /* NULL: SQL */
int step_cursor_next(step_cursor *c, step_state *out); /* 1, 0 at the end, -1 (SQL) */
int step_cursor_rewind(step_cursor *c);                /* back to the first step: 0, or -1 */
void step_cursor_close(step_cursor *c);

/* The same steps to a callback that returns 0 to go on. 0, or -1 (SQL, or the callback). */
int analysis_steps_visit(sqlite3 *db, int device, int64_t from, int64_t to,
                         int (*visit)(void *ctx, const step_state *step), void *ctx);

/* The same steps in an array, for what draws every one of them (a picture's points); *out is
 * malloc'ed (caller frees). */
int analysis_steps(sqlite3 *db, int device, int64_t from, int64_t to, step_state **out,
                   size_t *count);

/* How many steps, and the fragmentation at their ends (analysis_forecast's first
 * pass fills it). */
typedef struct steps_overview {
    size_t count;
    double frag_min, frag_mean, frag_max; /* frag_of at each step end */
    int64_t frag_max_step;                /* the first step with frag_max */
} steps_overview;

/* Steps 0, stride, 2 stride... of the cursor's order into out (at most `max`), *count of them.
 * 0, or -1 (SQL). */
int steps_sample(sqlite3 *db, int device, int64_t from, int64_t to, size_t stride, step_state *out,
                 size_t max, size_t *count);

/* The headroom trend: the median change of allocated bytes from one step end to the next
 * (*growth; 0 with fewer than 3 step ends), and the step at which that trend reaches
 * `total_bytes` from the last step end (*limit_step; -1 when it does not grow or the device
 * size is unknown). 0, or -1 (SQL, out of memory: then no growth). */
int analysis_headroom(sqlite3 *db, int device, int64_t from, int64_t to, int64_t total_bytes,
                      int64_t *growth, int64_t *limit_step);

/* Headroom as a forecast people act on: when the growth trend reaches the device, in steps
 * and in time, and how urgent that is. Risk levels, from the share of the device the peak
 * reserved uses, the steps left at the trend, and the recorded OOMs:
 *   critical  an OOM was recorded, or >= 95 % used, or <= 100 steps left
 *   high      >= 85 % used, or <= 1,000 steps left
 *   medium    >= 70 % used, or any growth toward the device
 *   low       otherwise (and "unknown" when the device's size is not known) */
typedef struct headroom_forecast {
    int64_t growth_per_step; /* bytes, analysis_headroom */
    int64_t limit_step;      /* -1: not reached */
    double limit_seconds;    /* since the first event; < 0: not reached or no times */
    size_t steps;            /* step ends in the window */
    const char *risk;
} headroom_forecast;

/* The rules above on plain numbers, the one copy analysis_forecast and memanalyze watch (its
 * live trend, replay/replay_live.h) use. The step at which `growth` per step reaches
 * total_bytes from the last step end (last_step, last_allocated), -1 when it does not grow,
 * the device's size is unknown or fewer than 3 step ends make the trend: */
int64_t headroom_limit_step(int64_t growth, size_t steps, int64_t last_step, int64_t last_allocated,
                            int64_t total_bytes);
/* That step's time (s since the origin) at step_ns a step from the last step end's time; < 0
 * when not reached. */
double headroom_limit_seconds(int64_t limit_step, int64_t last_step, int64_t last_ts_ns,
                              int64_t step_ns);
/* The risk level: peak_reserved of total_bytes, the OOMs, the steps left to limit_step. */
const char *headroom_risk(int64_t total_bytes, int64_t peak_reserved, int64_t ooms,
                          int64_t limit_step, size_t steps, int64_t last_step);
/* A level's rank, 0 "unknown" to 4 "critical" in the order above (watch --alert risk>=high);
 * -1: no level. */
int headroom_risk_level(const char *word);

/* The forecast for s's device over the window, and the overview of its steps into *overview
 * (when not NULL) from the same pass. 0, or -1 (SQL, out of memory: the forecast then says no
 * growth, the overview no steps). */
int analysis_forecast(sqlite3 *db, const device_summary *s, int64_t from, int64_t to,
                      headroom_forecast *out, steps_overview *overview);

#endif
