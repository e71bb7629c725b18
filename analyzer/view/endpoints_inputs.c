/* endpoints_inputs.c — /api/inputs (endpoints.h): the inputs of `memanalyze view A B …` side
 * by side, for the page's strip. The facts are view_inputs.h's (each input's rank entry as
 * `ranks` reads it, its run, its axis); the keys they share with `ranks --json` and
 * `compare --json` (run_print.c) are theirs, so a script reads one vocabulary; the rest
 * (label, index, events, span_ns, axis, offset_ns, the peaks' places) are the strip's. No SQL
 * here (tests/test_layers.py). */
#include "endpoints.h"

#include "json_out.h"
#include "view_inputs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void i64_or_null(FILE *out, const char *key, int64_t v, int known) {
    if (known)
        fprintf(out, ", \"%s\": %" PRId64, key, v);
    else
        fprintf(out, ", \"%s\": null", key);
}

/* One input: its label ("rank 3 · trace.3.zst" when it names its rank, else its file name). */
static void input_json(FILE *out, const view_input *v, size_t index) {
    const rank_entry *e = v->e;
    const run_summary *s = &e->s;
    char label[512];
    if (!e->failed && e->rank_from != RANK_FROM_ORDER)
        snprintf(label, sizeof label, "rank %lld \xc2\xb7 %s", (long long)e->rank,
                 rank_input_name(v->input));
    else
        snprintf(label, sizeof label, "%s", rank_input_name(v->input));
    fprintf(out, "%s\n  {\"index\": %zu, \"input\": ", index ? "," : "", index);
    json_string(out, v->input);
    fputs(", \"label\": ", out);
    json_string(out, label);
    if (e->failed) {
        fputs(", \"error\": ", out);
        json_string(out, e->failed);
        fputs("}", out);
        return;
    }
    fprintf(out, ", \"rank\": %lld, \"rank_from\": \"%s\"", (long long)e->rank, rank_from_word(e));
    fputs(", \"host\": ", out);
    json_string(out, s->host[0] ? s->host : NULL);
    fprintf(out, ", \"device\": %d, \"devices\": [", s->device);
    for (size_t d = 0; d < v->ndevices; d++)
        fprintf(out, "%s%" PRId64, d ? ", " : "", v->device_ids[d]);
    fprintf(out, "], \"events\": %lld, \"span_ns\": %lld, \"timestamps\": %s", v->events,
            v->span_ns, v->timestamps ? "true" : "false");
    fprintf(out, ", \"axis\": \"%s\", \"axis_end\": %" PRId64 ", \"offset_ns\": %" PRId64,
            v->event_axis ? "event" : "time", v->axis_end, v->offset_ns);
    fprintf(out, ", \"steps\": %" PRId64, s->steps);
    fprintf(out, ", \"peak_allocated_bytes\": %" PRId64, s->peak_allocated);
    i64_or_null(out, "peak_allocated_step", s->peak_allocated_step, s->peak_allocated_step >= 0);
    fprintf(out, ", \"peak_allocated_event_id\": %" PRId64 ", \"peak_allocated_at\": %" PRId64,
            s->peak_allocated_event, v->peak_allocated_ts_ns);
    fprintf(out, ", \"peak_reserved_bytes\": %" PRId64, s->peak_reserved);
    i64_or_null(out, "peak_reserved_step", s->peak_reserved_step, s->peak_reserved_step >= 0);
    fprintf(out, ", \"peak_reserved_event_id\": %" PRId64 ", \"peak_reserved_at\": %" PRId64,
            s->peak_reserved_event, v->peak_reserved_ts_ns);
    fputs(", \"fragmentation_at_peak\": ", out);
    json_number(out, s->frag_at_peak);
    fprintf(out, ", \"ooms\": %" PRId64 ", \"input_ooms\": %" PRId64, s->ooms, e->input_ooms);
    i64_or_null(out, "device_memory_bytes", s->total_bytes, s->total_bytes > 0);
    fprintf(out, ", \"growth_bytes_per_step\": %" PRId64, s->growth_per_step);
    i64_or_null(out, "limit_step", s->limit_step, s->limit_step >= 0);
    fprintf(out, ", \"leaking\": %s}", e->leaking ? "true" : "false");
}

int view_api_inputs(sqlite3 *db, const view_request *rq, FILE *out, char *err, size_t errlen) {
    (void)db;
    size_t n = view_request_input_count(rq);
    const char **names = calloc(n, sizeof *names), **paths = calloc(n, sizeof *paths);
    if (!names || !paths) {
        free(names);
        free(paths);
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    for (size_t i = 0; i < n; i++) {
        names[i] = view_request_input_name(rq, i);
        paths[i] = view_request_input_db_path(rq, i);
    }
    view_inputs v;
    int rc = view_inputs_read(names, paths, n, &v, err, errlen);
    free(paths);
    if (rc != 0) {
        free(names);
        return 500;
    }
    fprintf(out, "{\"count\": %zu, \"kind\": \"%s\", \"shared_clock\": %s, \"why\": ", n,
            n < 2        ? "one"
            : v.same_job ? "ranks"
                         : "runs",
            v.shared_clock ? "true" : "false");
    json_string(out, v.why);
    fputs(", \"imbalance\": ", out);
    json_number(out, v.st.imbalance);
    long bottleneck = -1; /* the bottleneck's index among the inputs */
    for (size_t i = 0; v.st.bottleneck >= 0 && i < n; i++)
        if (v.inputs[i].e == &v.st.ranks[v.st.bottleneck])
            bottleneck = (long)i;
    i64_or_null(out, "bottleneck_input", bottleneck, bottleneck >= 0);
    fputs(", \"inputs\": [", out);
    for (size_t i = 0; i < n; i++)
        input_json(out, &v.inputs[i], i);
    fputs("\n]}\n", out);
    view_inputs_release(&v);
    free(names);
    return 200;
}
