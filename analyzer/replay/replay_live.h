/* replay_live.h — the replay of a trace that is still being written (memanalyze watch).
 *
 * The same replay as replay_trace (replay_state.h: the same event application, per-device
 * allocator models, peaks, steps, sites), kept alive between polls and writing no database
 * (a discarding db_writer takes its rows). Each poll reads only the complete frames appended
 * since the last one (the reader follows the file: trace_reader_follow), and runs the replay's
 * two passes over them: the first pass (replay_scan_record) over the new records, then the
 * second over the same records from a second reader that lags behind the first.
 *
 * What the post-run replay knows from its first pass over the whole file, the live one knows
 * from what has been read so far:
 *   - the time origin, the seed's size and the allocator settings: from the first poll that
 *     holds an event after the seed (or the end record); nothing is applied before it, so
 *     on a trace whose writer wrote its seed and first events in the first frames (memrec
 *     does) they are the post-run replay's;
 *   - devices: those of the frames read by the poll that starts the replay have their seed row
 *     as after the whole first pass; a device whose first event comes later has none (its peak,
 *     and its points of the trend, begin at its first event, where report's begin at the seed);
 *   - PyTorch's segment addresses (CUPTI's report of one joins it): those of every frame read
 *     up to this poll, so a CUPTI report whose PyTorch twin comes in a later poll counts as a
 *     whole block of its own until then, where the post-run replay joins them;
 *   - physical memory (cuMemCreate) and PyTorch's mapped memory found after the first poll:
 *     reserved counts physical memory, and expandable segments are inferred, only from then on.
 * The facts after the last poll of a finished trace equal `report --json`'s (peaks, end state,
 * OOMs, the headroom trend) when none of these cases arise (tests/test_watch.py checks it).
 *
 * Memory: the replay's live state (live blocks, segments, sites, stacks and frames, strings in
 * a window) plus 16 bytes per step end and device for the trend, the last LIVE_TREND_STEPS
 * step ends at most (the trend is then over those, where report's is over every step). */
#ifndef GMT_REPLAY_LIVE_H
#define GMT_REPLAY_LIVE_H

#include "trace_format.h"

#include <stddef.h>
#include <stdint.h>

#define LIVE_TREND_STEPS (1u << 17)

typedef struct replay_live replay_live;

/* One device now. Times are ns since the trace's origin, as report's *_ts_ns. */
typedef struct live_device {
    int device;
    const char *name;    /* NULL: no DEVICE record; valid until the next poll */
    int64_t total_bytes; /* 0: unknown */
    int64_t allocated, requested, reserved, segments;
    int64_t peak_allocated, peak_allocated_event_id, peak_allocated_ts_ns;
    int64_t peak_allocated_step; /* the step open at the peak; -1: none */
    int64_t peak_reserved, peak_reserved_event_id;
    /* the free split now, as report's end_trapped_bytes: trapped = reserved - allocated -
     * releasable, of the segments' memory (split_reserved) */
    int64_t split_reserved, trapped_bytes, releasable_bytes;
    int64_t ooms, alloc_failed;
    /* the headroom trend as report's: the median change of allocated from one step end to
     * the next over `trend_steps` step ends (the open step's end is now), 0 with fewer than 3 */
    size_t trend_steps;
    int64_t growth_per_step;
    int64_t last_step, last_step_allocated, last_step_ts_ns; /* of the trend's last step end */
    int64_t median_step_ns; /* of the closed steps in the trend; -1: none */
    /* the site whose live bytes grew most since the first step end; stack 0: none */
    int64_t top_site_stack, top_site_growth, top_site_live;
} live_device;

typedef struct live_facts {
    int started;             /* the origin is known: events are applied */
    int64_t events;          /* recorded events applied (the last event id) */
    int64_t last_ts_ns;      /* the last event's time */
    int64_t current_step;    /* the step open now; -1: none */
    int64_t steps_ended;     /* step ends seen */
    int ended, clean_end;    /* the END record was read; it says the shutdown was orderly */
    uint64_t dropped_events; /* the END record's count of events the recorder could not keep */
    uint64_t bytes_read;     /* of the file: where the complete frames read so far end */
    uint64_t warnings;       /* the replay's anomalies so far */
    int64_t rank;            /* the trace's process's rank (RANK, as meta 'rank'); -1: unknown */
    size_t ndevices;
    live_device devices[GMT_MAX_DEVICES];
} live_facts;

/* Opens path (the reader's checks: not a trace, too new a version, a directory...). NULL with a
 * one-line message in err; *not_yet = 1 when the file is a trace but holds no complete frame
 * yet (being created: open it again later), else 0. step_word: as replay_options'. */
replay_live *replay_live_open(const char *path, const char *step_word, int *not_yet, char *err,
                              size_t errlen);

/* Reads the complete frames appended since the last poll and applies their records. Returns
 * the records read (0: nothing new), or -1 with a one-line message in err (an I/O error, out
 * of memory). A frame not yet complete waits for the next poll. */
int64_t replay_live_poll(replay_live *lv, char *err, size_t errlen);

/* The facts now (O(sites + trend steps) per device). */
void replay_live_facts(replay_live *lv, live_facts *out);

/* One frame of a stack, innermost first, the fields of query/stack_names.h's named_frame. */
typedef struct live_frame {
    const char *name, *file, *module; /* NULL: unknown */
    int64_t line;
    uint64_t ip;
} live_frame;

/* The frames of trace stack `stack_id` (inline chains expanded) into out, at most max (256);
 * their count (0: an unknown stack). The strings are copies, valid until the next call. */
size_t replay_live_stack(replay_live *lv, int64_t stack_id, live_frame *out, size_t max);

/* A site's live bytes at its device's peak of allocated bytes (site_stats' lazy snapshot). */
typedef struct live_site {
    int64_t stack_id, bytes;
} live_site;

/* The sites of `device` with live bytes at its peak so far, the most bytes first, at most max
 * (`ranks` compares them across ranks: the bottleneck's sites over the median rank's); their
 * count. */
size_t replay_live_sites_at_peak(replay_live *lv, int device, live_site *out, size_t max);

void replay_live_close(replay_live *lv);

#endif
