/* export_perfetto.h — `memanalyze export --to perfetto` and `--to chrome-json`: the memory
 * timeline as a trace Perfetto's UI (ui.perfetto.dev) or Chrome's trace viewer opens. */
#ifndef GMT_EXPORT_PERFETTO_H
#define GMT_EXPORT_PERFETTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes the Perfetto trace (protobuf) of the database ctx (a sqlite3 *) to f. 0, or -1 with a
 * one-line message in err (a write error shows on f: the caller checks it). */
int export_perfetto_fill(FILE *f, void *ctx, char *err, size_t errlen);

/* The most recorded events (the last event id) --to chrome-json takes (above it: an error naming
 * perfetto). */
#define EXPORT_CHROME_MAX_EVENTS 1000000

/* The same counters, slices and instants as Chrome trace-event JSON; refused (-1, err) above
 * EXPORT_CHROME_MAX_EVENTS. */
int export_chrome_fill(FILE *f, void *ctx, char *err, size_t errlen);

/* What the file holds, for the command's line: the tracks' processes (devices) and the
 * allocations and OOMs written by the last fill. */
typedef struct export_timeline_counts {
    int devices;
    int64_t allocations, ooms, slices, counter_samples;
} export_timeline_counts;
extern export_timeline_counts export_timeline_last;

#endif
