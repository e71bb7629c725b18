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
 * pass over the device's events; per event, work for each name open then. */
#ifndef GMT_STAGE_TABLE_H
#define GMT_STAGE_TABLE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define STAGE_SITES 3

typedef struct stage_row {
    char *name; /* the whole name (stage_table_free frees it) */
    int64_t count;
    int64_t peak_allocated, peak_event_id;
    int64_t net_first, net_total;
    double net_mean;
    int64_t allocs, allocated_bytes; /* block allocations inside, and their bytes */
    int64_t site_stack[STAGE_SITES], site_bytes[STAGE_SITES]; /* 0 bytes: none */
} stage_row;

/* The stages of `device`, by their peak (highest first); *rows malloc'ed. 0, or -1 with a
 * one-line message in err. */
int stage_table(sqlite3 *db, int device, stage_row **rows, size_t *count, char *err, size_t errlen);

/* Frees rows and their names. */
void stage_table_free(stage_row *rows, size_t count);

#endif
