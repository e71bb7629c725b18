/* median.h — medians of int64 values: of an array, and exactly of a sequence too long to keep.
 *
 * A report over half a million training steps wants medians across them (the growth of
 * allocated bytes from one step end to the next, the duration of a step). Keeping the values
 * to sort them made the analyzer's memory grow with the steps, so with the trace. median_stream
 * bounds it whatever the count: a short sequence (up to MEDIAN_STREAM_KEPT values, nearly every
 * run) is kept and sorted after one pass; a longer one is sorted into buckets by magnitude in
 * that pass, and the middle values are found in their buckets: at once when a bucket is one
 * value (a steady run's changes: mostly 0), else in one to four more passes (median.c).
 *
 * Both give the middle value, or the mean of the two middle ones rounded toward zero; 0 for
 * none. */
#ifndef GMT_MEDIAN_H
#define GMT_MEDIAN_H

#include <stddef.h>
#include <stdint.h>

#define MEDIAN_STREAM_KEPT (1u << 16) /* values sorted in memory: 512 KiB */

/* The median of n values (sorts them in place). */
int64_t median_i64(int64_t *values, size_t n);

/* The median of an even count from its two middle values: (lo + hi) / 2 as C computes it
 * (toward zero), without the sum's overflow. */
int64_t median_of_middles(int64_t lo, int64_t hi);

/* A sequence that can be read again from its start, the same values each time: an SQL
 * statement (rewind = sqlite3_reset), a cursor. */
typedef struct value_source {
    void *ctx;
    int (*rewind)(void *ctx);               /* 0, or -1 on an error */
    int (*next)(void *ctx, int64_t *value); /* 1 and a value, 0 at the end, -1 on an error */
} value_source;

/* The median of the source's values into *median, and how many there are into *count.
 * `kept` bounds the values held in memory (0: MEDIAN_STREAM_KEPT; a test makes it small).
 * 0, or -1 (the source failed, or out of memory). */
int median_stream(const value_source *src, size_t kept, int64_t *median, size_t *count);

#endif
