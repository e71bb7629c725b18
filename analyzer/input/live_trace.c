/* live_trace.c — a trace followed while it is written (see live_trace.h): the input's checks,
 * then the live replay. */
#include "live_trace.h"

#include <stdio.h>
#include <stdlib.h>

struct live_trace {
    replay_live *lv;
};

live_trace *live_trace_open(const char *path, const input_options *opt, int *not_yet, char *err,
                            size_t errlen) {
    *not_yet = 0;
    input_kind kind;
    char why[512];
    if (input_detect(path, &kind, why, sizeof why) == 0 && kind != INPUT_TRACE) {
        snprintf(err, errlen,
                 "%s is a %s, not a trace being written: `memanalyze report %s` reads it", path,
                 kind == INPUT_SNAPSHOT ? "PyTorch memory snapshot" : "database", path);
        return NULL;
    }
    live_trace *t = malloc(sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!(t->lv = replay_live_open(path, opt ? opt->step_word : NULL, not_yet, err, errlen))) {
        free(t);
        return NULL;
    }
    return t;
}

int64_t live_trace_poll(live_trace *t, char *err, size_t errlen) {
    return replay_live_poll(t->lv, err, errlen);
}

void live_trace_facts(live_trace *t, live_facts *out) { replay_live_facts(t->lv, out); }

size_t live_trace_stack(live_trace *t, int64_t stack_id, live_frame *out, size_t max) {
    return replay_live_stack(t->lv, stack_id, out, max);
}

size_t live_trace_sites_at_peak(live_trace *t, int device, live_site *out, size_t max) {
    return replay_live_sites_at_peak(t->lv, device, out, max);
}

void live_trace_close(live_trace *t) {
    if (!t)
        return;
    replay_live_close(t->lv);
    free(t);
}
