/* run_print.h — a run summary (run_summary.h) as `compare` and `ranks` print it: the same
 * JSON keys and the same words in both, so a fleet's rows read like a comparison's. */
#ifndef GMT_RUN_PRINT_H
#define GMT_RUN_PRINT_H

#include "run_summary.h"

#include <sqlite3.h>
#include <stdio.h>

/* The JSON members of s (no braces): "device", "rank", "host", "settings", "command",
 * "steps", "peak_allocated_bytes", "peak_allocated_step", "peak_requested_bytes",
 * "peak_reserved_bytes", "peak_reserved_step", "fragmentation_at_peak",
 * "trapped_ratio_at_peak", "fragmentation_mean", "fragmentation_max", "trapped_ratio_mean",
 * "trapped_ratio_max", "segments_max", "ooms", "device_memory_bytes",
 * "growth_bytes_per_step", "limit_step", "top_growth" ({"site", "bytes_per_step"} or null).
 * "rank" is `rank` (-1: null), the caller's idea of it. */
void run_print_json_fields(FILE *out, const run_summary *s, int64_t rank);

/* "1.20 GiB (step 4)", or without the step when there is none. */
const char *run_print_bytes_at_step(int64_t bytes, int64_t step, char *buf, size_t len);

#endif
