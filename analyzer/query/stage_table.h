/* stage_table.h — memory per stage: the NVTX ranges and annotations a program names
 * (`model_creation`, `data_loading`, `## forward ##`, record_function ranges), grouped by name.
 *
 * Per name, over every range of that name on the device's timeline:
 *   count        how many ranges
 *   peak         the highest allocated inside any of them (the state entering it included), the
 *                event and the range it was in
 *   net          allocated when the range ends minus when it begins: the first one's, the mean,
 *                and the total over all (what the stage leaves behind)
 *   sites        the allocation sites that allocate the most bytes inside them (block
 *                allocations, summed over the ranges), the first STAGE_SITES
 * A range holds the events with begin <= ts < end (its time, as steps by theirs; an event at the
 * very time a range begins is inside it), and its peak counts the state entering it too. A range
 * still open at the end of the trace ends there. Ranges are process-wide: with several devices a
 * range counts for a device when one of that device's events lies inside it. Nested or
 * overlapping ranges of one name count an event once. Ranges of a step name are stages too. One
 * pass over the device's events; per event, work for each name open then.
 *
 * Numbered ranges of one kind, names that end in "#" and a number (torch.profiler's
 * `ProfilerStep#0`, `ProfilerStep#1`…), are one stage: its name is the kind and the numbers it
 * holds, "ProfilerStep#0..#11" (one number: the name as it was). A range that holds none of the
 * device's events is not counted (with one device, one that lies between two events is: the
 * state entering it is measured), nor is one that ended before a history that begins mid-run
 * (step_table.h): it holds nothing measured. When such ranges show the history's hole, one that
 * began before the device's first event has no net (the state at its begin is not known; the
 * net's three leave it out), but its peak and allocations count. stage_summary says how many
 * ranges the input has and how many of them no stage counts, so "none" is never said of an input
 * that has some. */
#ifndef GMT_STAGE_TABLE_H
#define GMT_STAGE_TABLE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define STAGE_SITES 3

typedef struct stage_row {
    char *name; /* the whole name, or a numbered kind's "KIND#first..#last" (stage_table_free
                   frees it) */
    int64_t number_first, number_last; /* a numbered kind's lowest and highest; -1: a name */
    int64_t count;
    int64_t peak_allocated, peak_event_id;
    int64_t net_first, net_total;
    double net_mean;
    int64_t
        net_unknown; /* ranges begun before a history begun mid-run: no net (not in the three) */
    int64_t allocs, allocated_bytes; /* block allocations inside, and their bytes */
    int64_t site_stack[STAGE_SITES], site_bytes[STAGE_SITES]; /* 0 bytes: none */
} stage_row;

/* The named ranges of the input, and those no stage of the device counts. */
typedef struct stage_summary {
    int64_t ranges;           /* named ranges in the input */
    int64_t ranges_elsewhere; /* of them, holding none of the device's events (on other devices,
                                 with no memory events, or before its history) */
} stage_summary;

/* The stages of `device`, by their peak (highest first); *rows malloc'ed; *summary (may be
 * NULL) the ranges. 0, or -1 with a one-line message in err. */
int stage_table(sqlite3 *db, int device, stage_row **rows, size_t *count, stage_summary *summary,
                char *err, size_t errlen);

/* Frees rows and their names. */
void stage_table_free(stage_row *rows, size_t count);

#endif
