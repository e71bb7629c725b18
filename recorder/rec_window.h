/* rec_window.h — the recording window `--start-step N`: nothing before
 * step N goes into the trace, yet the trace starts with the exact memory
 * state of that moment.
 *
 * Before the window the writer feeds every event to rec_window_absorb,
 * which keeps only what is still live (allocations not freed, maps not
 * unmapped, ...), in the order they were made. When the first marker of
 * step N or later arrives the live set is written as the trace's seed
 * (events followed by a SEED_END marker, TRACE_FORMAT.md), exactly as a
 * snapshot's pre-history is, and recording goes on normally. Markers and
 * counters before the window are dropped. Owned by the writer thread. */
#ifndef GMT_REC_WINDOW_H
#define GMT_REC_WINDOW_H

#include "trace_format.h"

#include <stdint.h>

typedef struct rec_window rec_window;

/* A window opening at step `start_step` (>= 0). NULL when out of memory. */
rec_window *rec_window_new(int64_t start_step);
void rec_window_free(rec_window *w);

/* Before the window: applies one event to the live set. Returns -1 when
 * the live set cannot grow (the event is then lost). */
int rec_window_absorb(rec_window *w, const trace_event *ev);

/* Whether a marker (kind, name, value) starts step `start_step` or later by
 * the step rule; the caller then seeds and the window is open. */
int rec_window_opens(rec_window *w, trace_marker_kind kind, const char *name, size_t name_len,
                     int64_t value);

/* Calls `emit` for every live event in the order they were made, then
 * forgets them and marks the window open. */
void rec_window_seed(rec_window *w, void (*emit)(void *ctx, const trace_event *ev), void *ctx);

#endif
