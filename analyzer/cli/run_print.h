/* run_print.h — a run summary (run_summary.h) as `compare` and `ranks` print it: the same
 * JSON keys and the same words in both, so a fleet's rows read like a comparison's. */
#ifndef GMT_RUN_PRINT_H
#define GMT_RUN_PRINT_H

#include "device_balance.h"
#include "run_summary.h"

#include <sqlite3.h>
#include <stdio.h>

/* The JSON members of s (no braces): "device", "rank", "host", "settings", "command",
 * "steps", "peak_allocated_bytes", "peak_allocated_step", "peak_requested_bytes",
 * "peak_reserved_bytes", "peak_reserved_step", "fragmentation_at_peak",
 * "trapped_ratio_at_peak", "fragmentation_at_end", "trapped_ratio_at_end", "fragmentation_mean",
 * "fragmentation_max", "trapped_ratio_mean", "trapped_ratio_max" (the four null without steps),
 * "segments_max", "ooms", "device_memory_bytes", "growth_bytes_per_step", "limit_step",
 * "top_growth" ({"site", "bytes_per_step"} or null). "rank" is `rank` (-1: null), the caller's idea
 * of it. */
void run_print_json_fields(FILE *out, const run_summary *s, int64_t rank);

/* Fragmentation (trapped: the trapped ratio) as "mean / max" over the step ends; without steps
 * "end / peak", marked "*" with `mark` (a table of both kinds: RUN_PRINT_NO_STEPS_NOTE says what
 * the star means). */
const char *run_print_fragmentation(const run_summary *s, int trapped, int mark, char *buf,
                                    size_t len);
#define RUN_PRINT_NO_STEPS_NOTE "* no steps: at the end / at the peak allocated"

/* "1.20 GiB (step 4)", or without the step when there is none. */
const char *run_print_bytes_at_step(int64_t bytes, int64_t step, char *buf, size_t len);

/* The devices of one process compared like ranks (device_balance.h), as `report` and `ranks`
 * print them; only for d->bottleneck >= 0. JSON: {"count", "imbalance",
 * "mean_peak_allocated_bytes", "spread_bytes", "bottleneck_device", "peak_allocated":
 * [{"device", "bytes"}]}, or null with fewer than two devices with events. Text: "2 devices,
 * imbalance: max / mean of peak allocated 1.50 (mean …, spread …); bottleneck: device 0, peak
 * allocated …" (no newline). */
void run_print_devices_json(FILE *out, const device_balance *d);
void run_print_devices_text(FILE *out, const device_balance *d);

#endif
