/* live_trace.h — a trace followed while it is written, as the commands open it
 * (memanalyze watch).
 *
 * What the user gave, checked as every input is (input_detect: a PyTorch snapshot or a
 * database is refused with what reads it), then followed by the replay kept alive between
 * polls (replay/replay_live.h: how it reads only the frames appended since the last poll, and
 * where a live answer may differ from the post-run replay's). The facts are that header's
 * plain structs; cli/ reaches them through the functions here, never the replay's. */
#ifndef GMT_LIVE_TRACE_H
#define GMT_LIVE_TRACE_H

#include "input.h"
#include "replay_live.h" /* live_facts, live_device, live_frame */

#include <stddef.h>
#include <stdint.h>

typedef struct live_trace live_trace;

/* NULL with a one-line message in err; *not_yet = 1 when path is a trace with no complete
 * frame yet (its writer is starting: try again later). opt: the step rule (io.step_word). */
live_trace *live_trace_open(const char *path, const input_options *opt, int *not_yet, char *err,
                            size_t errlen);
/* The records of the frames appended since the last poll, applied: their count (0: none), or
 * -1 with a one-line message in err. */
int64_t live_trace_poll(live_trace *t, char *err, size_t errlen);
void live_trace_facts(live_trace *t, live_facts *out);
/* A stack's frames, innermost first (replay_live_stack). */
size_t live_trace_stack(live_trace *t, int64_t stack_id, live_frame *out, size_t max);
/* The sites of `device` at its peak so far, the most bytes first (replay_live_sites_at_peak). */
size_t live_trace_sites_at_peak(live_trace *t, int device, live_site *out, size_t max);
void live_trace_close(live_trace *t);

#endif
