/* trace_info.h — what a trace holds, read straight through the codec with no replay and no
 * database: `memanalyze info`'s answer. Record counts by kind, events per device, op and level,
 * the time span, the steps the step rule finds, the process, how the recording ended and the
 * calls the recorder counted instead of recording (the end record's list), and the reader's
 * damage warnings. The quickest proof that a recording is usable; memory bounded by the trace's
 * records, whatever ids they name. */
#ifndef GMT_TRACE_INFO_H
#define GMT_TRACE_INFO_H

#include "trace_format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct trace_device_tally {
    int seen;
    char name[128];
    uint64_t total_bytes;
    uint64_t events, by_op[TRACE_OP_COUNT], by_level[TRACE_LEVEL_COUNT];
} trace_device_tally;

typedef struct trace_info {
    /* the file, as the reader saw it */
    uint64_t file_bytes, frames, records, lost_events;
    unsigned version;
    char *warnings[TRACE_READER_MAX_WARNINGS]; /* the first ones */
    size_t nwarnings_kept, nwarnings;          /* kept, and raised in all */
    /* what its records say */
    uint64_t by_kind[256];
    trace_device_tally devices[GMT_MAX_DEVICES];
    uint64_t other_device_events; /* on devices >= GMT_MAX_DEVICES */
    uint64_t first_ts, last_ts;
    int any_ts;
    uint64_t steps;
    int64_t first_step, last_step;
    trace_process process; /* its strings: host, cmdline, producer below */
    char host[256], cmdline[512], producer[128];
    int have_process;
    trace_end end; /* end.calls: NULL (copied into calls, their names into call_names) */
    int have_end;
    trace_call_count calls[TRACE_END_MAX_CALLS];
    char call_names[TRACE_END_MAX_CALLS][TRACE_END_MAX_CALL_NAME + 1];
} trace_info;

/* Reads the trace at path to its end. 0 with *out set (trace_info_free it), or -1 with a
 * one-line message in err: it cannot be opened, a read failed, out of memory. */
int trace_info_read(const char *path, trace_info **out, char *err, size_t errlen);
void trace_info_free(trace_info *in);

#endif
