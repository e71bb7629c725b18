/* trace_info.c — a trace's records tallied (trace_info.h). Marker names need the strings they
 * name: found by id through an addr_map, so a forged id of 2^26 costs one entry, not an array
 * of 2^26 pointers; a string defined again replaces the first. */
#include "trace_info.h"

#include "addr_map.h"
#include "gmt_grow.h"
#include "step_rule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tally {
    trace_info *in;
    addr_map string_at; /* string id -> 1 + its index in texts */
    char **texts;
    size_t ntexts, cap;
} tally;

static void note_ts(trace_info *in, uint64_t ts) {
    if (!in->any_ts || ts < in->first_ts)
        in->first_ts = ts;
    if (!in->any_ts || ts > in->last_ts)
        in->last_ts = ts;
    in->any_ts = 1;
}

static int keep_string(tally *t, const trace_string *s) {
    char *text = strdup(s->text.ptr ? s->text.ptr : "");
    if (!text)
        return -1;
    uint32_t *at = addr_map_get(&t->string_at, 0, s->string_id);
    if (at) { /* defined again: the later text wins */
        free(t->texts[*at - 1]);
        t->texts[*at - 1] = text;
        return 0;
    }
    if (gmt_grow((void **)&t->texts, &t->cap, t->ntexts, sizeof *t->texts) != 0 ||
        addr_map_put(&t->string_at, 0, s->string_id, (uint32_t)t->ntexts + 1) != 0) {
        free(text);
        return -1;
    }
    t->texts[t->ntexts++] = text;
    return 0;
}

/* The text of string id (its last definition so far), or NULL. */
static const char *string_of(const tally *t, uint32_t id) {
    const uint32_t *at = addr_map_get(&t->string_at, 0, id);
    return at ? t->texts[*at - 1] : NULL;
}

/* Steps open with a range or a mark whose name follows the step rule, or with an explicit
 * STEP_BEGIN; info only counts them. */
static void note_marker(tally *t, const trace_marker *m) {
    trace_info *in = t->in;
    note_ts(in, m->ts_ns);
    int64_t number = -1;
    int is_step = 0;
    if (m->kind == TRACE_MARK_STEP_BEGIN) {
        is_step = 1;
        number = m->value;
    } else if (m->kind == TRACE_MARK_RANGE_PUSH || m->kind == TRACE_MARK_RANGE_START ||
               m->kind == TRACE_MARK_MARK) {
        is_step = step_rule_match(string_of(t, m->name_id), NULL, &number);
    }
    if (!is_step)
        return;
    if (number < 0)
        number = (int64_t)in->steps;
    if (in->steps == 0)
        in->first_step = number;
    in->last_step = number;
    in->steps++;
}

static void note_event(trace_info *in, const trace_event *ev) {
    note_ts(in, ev->ts_ns);
    if (ev->device >= GMT_MAX_DEVICES) {
        in->other_device_events++;
        return;
    }
    trace_device_tally *d = &in->devices[ev->device];
    d->seen = 1;
    d->events++;
    d->by_op[ev->op]++;
    d->by_level[ev->level]++;
}

static int note_record(tally *t, const trace_record *rec) {
    trace_info *in = t->in;
    in->by_kind[rec->kind & 0xff]++;
    switch (rec->kind) {
    case TRACE_REC_EVENT:
        note_event(in, &rec->u.event);
        break;
    case TRACE_REC_STRING:
        return keep_string(t, &rec->u.string);
    case TRACE_REC_MARKER:
        note_marker(t, &rec->u.marker);
        break;
    case TRACE_REC_COUNTER:
        note_ts(in, rec->u.counter.ts_ns);
        break;
    case TRACE_REC_DEVICE:
        if (rec->u.device.device < GMT_MAX_DEVICES) {
            trace_device_tally *d = &in->devices[rec->u.device.device];
            d->seen = 1;
            d->total_bytes = rec->u.device.total_bytes;
            snprintf(d->name, sizeof d->name, "%s", rec->u.device.name.ptr);
        }
        break;
    case TRACE_REC_PROCESS:
        in->process = rec->u.process;
        snprintf(in->host, sizeof in->host, "%s", rec->u.process.host.ptr);
        snprintf(in->cmdline, sizeof in->cmdline, "%s", rec->u.process.cmdline.ptr);
        snprintf(in->producer, sizeof in->producer, "%s", rec->u.process.producer.ptr);
        in->have_process = 1;
        break;
    case TRACE_REC_END: /* its counted calls, kept past the record */
        in->end = rec->u.end;
        in->end.calls = NULL;
        for (uint32_t i = 0; i < in->end.n_calls; i++) {
            in->calls[i] = rec->u.end.calls[i];
            snprintf(in->call_names[i], sizeof in->call_names[i], "%s",
                     rec->u.end.calls[i].name.ptr);
            in->calls[i].name = (trace_bytes){in->call_names[i], rec->u.end.calls[i].name.len};
        }
        in->have_end = 1;
        break;
    default:
        break;
    }
    return 0;
}

/* The reader's own facts: the file, its frames, what damage it met. */
static int take_reader_facts(trace_info *in, const trace_reader *r) {
    const trace_reader_stats *st = trace_reader_get_stats(r);
    in->file_bytes = st->file_bytes;
    in->frames = st->frames;
    in->records = st->records;
    in->lost_events = st->lost_events;
    in->version = trace_reader_version(r);
    in->nwarnings = trace_reader_warning_count(r);
    for (size_t i = 0; i < in->nwarnings && i < TRACE_READER_MAX_WARNINGS; i++) {
        const char *w = trace_reader_warning(r, i);
        if (!(in->warnings[i] = strdup(w ? w : "")))
            return -1;
        in->nwarnings_kept = i + 1;
    }
    return 0;
}

int trace_info_read(const char *path, trace_info **out, char *err, size_t errlen) {
    *out = NULL;
    trace_reader *r = trace_reader_open(path, err, errlen);
    if (!r)
        return -1;
    tally t = {.in = calloc(1, sizeof(trace_info))};
    int rc = t.in ? 1 : -2;
    trace_record rec;
    while (rc == 1 && (rc = trace_reader_next(r, &rec)) == 1)
        if (note_record(&t, &rec) != 0)
            rc = -2;
    if (rc == 0 && take_reader_facts(t.in, r) != 0)
        rc = -2;
    if (rc == -2)
        snprintf(err, errlen, "out of memory");
    else if (rc < 0)
        snprintf(err, errlen, "%s: %s", path, trace_reader_error(r));
    for (size_t i = 0; i < t.ntexts; i++)
        free(t.texts[i]);
    free(t.texts);
    addr_map_free(&t.string_at);
    trace_reader_close(r);
    if (rc != 0) {
        trace_info_free(t.in);
        return -1;
    }
    *out = t.in;
    return 0;
}

void trace_info_free(trace_info *in) {
    if (!in)
        return;
    for (size_t i = 0; i < in->nwarnings_kept; i++)
        free(in->warnings[i]);
    free(in);
}
