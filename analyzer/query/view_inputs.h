/* view_inputs.h — the facts behind `memanalyze view A B …`'s strip of inputs (/api/inputs): per
 * input what `ranks` says of it (rank_stats.h: its summary of the device with the highest peak,
 * its rank and where it came from, its OOMs, whether it leaks alone), what `report` says of its
 * run (events, span, timestamps) and its timeline's axis (view_timeline.h), in the order given;
 * across them whether they are the ranks of one job or separate runs, and whether they share
 * one clock.
 *
 * Ranks or runs: the inputs are ranks of one job when there are two or more, each names its
 * rank (in the trace, or explicitly in its file name: rank_of_name) and no two name the same
 * one; else they are runs side by side (what `compare` puts side by side: the same summaries,
 * run_summary.h), and `why` says which input made it so. Ranks share one clock when every one
 * has timestamps and its wall clock at ts 0 (meta t0_unix_ns): each one's `offset_ns` then
 * places its axis on the earliest one's; otherwise each is drawn over its own duration. */
#ifndef GMT_VIEW_INPUTS_H
#define GMT_VIEW_INPUTS_H

#include "rank_stats.h"

#include <stddef.h>
#include <stdint.h>

typedef struct view_input {
    const char *input;   /* as the user named it (the caller's string) */
    const rank_entry *e; /* its entry (in st.ranks); e->failed: not read, and why */
    long long events;    /* recorded events (report_run.events) */
    long long span_ns;   /* report_run.span_ns */
    int timestamps;      /* 0: times are event order */
    int event_axis;      /* the timeline's axis: 1 event ids, 0 ts_ns (view_timeline_axis) */
    int64_t axis_end;    /* the end of its data on that axis */
    int64_t peak_allocated_ts_ns, peak_reserved_ts_ns; /* the peaks' places on the axis */
    int64_t offset_ns; /* shared clock: its t0 minus the earliest input's; else 0 */
    int64_t device_ids[DEVICE_BALANCE_MAX]; /* its devices with events, in order */
    size_t ndevices;
} view_input;

typedef struct view_inputs {
    size_t count;
    view_input *inputs; /* in the order given */
    rank_entry *entries;
    rank_stats st;         /* over the entries (rank_stats_build, top 10 as `ranks`) */
    int same_job;          /* 1: ranks of one job; 0: runs */
    int shared_clock;      /* 1: same_job and one wall clock (offset_ns says where each starts) */
    char why[512];         /* one line: why ranks or runs, and why the clock is (not) shared */
    char **failed_strings; /* the failed entries' messages (each entry's `failed`), owned */
} view_inputs;

/* The facts of n inputs (names[i], its database at db_paths[i]), each database opened read-only
 * in turn and closed again. An input that cannot be read keeps its entry's `failed` message. 0,
 * or -1 with a one-line message (out of memory; rank_stats_build's). */
int view_inputs_read(const char *const *names, const char *const *db_paths, size_t n,
                     view_inputs *out, char *err, size_t errlen);
void view_inputs_release(view_inputs *v);

#endif
