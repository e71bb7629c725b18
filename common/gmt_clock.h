/* gmt_clock.h — seconds on the monotonic clock, written once: what the
 * analyzer's timings (GMT_TIMING, the progress line's time left, simulate's
 * search budget) measure durations with. Header-only, like gmt_grow.h. */
#ifndef GMT_CLOCK_H
#define GMT_CLOCK_H

#include <time.h>

static inline double gmt_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
