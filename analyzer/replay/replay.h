/* replay.h — replays a trace into the SQLite database.
 *
 * Reads the trace twice through the codec (or takes its records twice from a
 * producer: replay_records). The first pass is a quick scan
 * for what the second needs before it starts: the time origin, the devices,
 * how many seed events there are, which segment addresses PyTorch reports
 * (so CUPTI's report of the same memory joins it instead of counting twice)
 * and the time span (for the per-bucket summaries). The second pass applies
 * every event to a caching-allocator model per device (model/
 * alloc_model.h, apply mode) and writes one event_rows row per event with
 * the device's totals after it, plus segments, markers, steps, counters,
 * frames, stacks, buckets and warnings, as schema/schema.sql describes.
 *
 * Anomalies (a free of unknown memory, overlapping segments, a block outside
 * any segment, a damaged trace frame) become rows in `warnings` and never
 * stop the replay. So do broken invariants, checked at every event:
 * allocated <= reserved and requested <= allocated on every device (blocks
 * lie inside their segment and never overlap by construction: the model
 * refuses anything else, and the refusal is a warning), and the model's
 * self-check after the seed and at the end. */
#ifndef GMT_REPLAY_H
#define GMT_REPLAY_H

#include "alloc_settings.h"
#include "db_writer.h"
#include "trace_format.h"

#include <stddef.h>
#include <stdint.h>

typedef struct replay_options {
    const char *step_word; /* replaces "step" in the step rule; NULL: default */
    /* Called now and then during the replay with the bytes of the trace read
     * so far and its size; NULL: none. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    /* The caching allocator's settings the input states (a snapshot's), and
     * where they come from ("snapshot", "inferred"); NULL: none known. The
     * model of every device follows them (split rule, rounding); when they do
     * not say whether expandable segments were on, PyTorch's mapped memory in
     * the trace says so. Written to meta 'allocator_settings' and
     * 'allocator_settings_source'. */
    const am_settings *settings;
    const char *settings_source;
    /* meta 'timestamps' and 'history' (schema.sql); -1: 1, as for a trace. */
    int timestamps, history;
} replay_options;

typedef struct replay_summary {
    uint64_t events;      /* recorded events replayed (event_id >= 1) */
    uint64_t seed_events; /* events before the seed_end marker */
    uint64_t warnings; /* anomalies found (all of them; the table keeps the first of each kind) */
} replay_summary;

/* Returns 0, or -1 with a one-line message in err (the trace cannot be
 * opened, or the database cannot be written). */
int replay_trace(const char *trace_path, db_writer *db, const replay_options *opt,
                 replay_summary *summary, char *err, size_t errlen);

/* The same from records made in this process rather than read from a file (a snapshot
 * replayed as it is converted: no temporary trace to encode, compress and decode twice).
 * `source` hands every record of the input to `sink`, in order, as a trace reader would
 * (trace_writer_open_sink makes such a stream); it is called twice, once per pass, and must
 * give the same records both times. It returns 0, or -1 with its reason in err (when the sink
 * refused a record, the replay's own reason is the one reported). The progress callback gets
 * records done and the total. */
typedef int (*replay_source)(void *ctx, trace_record_sink sink, void *sink_ctx, char *err,
                             size_t errlen);
int replay_records(replay_source source, void *source_ctx, db_writer *db, const replay_options *opt,
                   replay_summary *summary, char *err, size_t errlen);

#endif
