/* cmd_info.c — `memanalyze info TRACE`: what is in a trace, read straight
 * through the codec with no replay and no database.
 *
 * It is the quickest proof that a recording is usable: record counts by
 * kind, events per device and op, the time span, the steps the step rule
 * finds, whether the recording ended cleanly, the calls the recorder saw and
 * counted instead of recording (the END record's list: graph memory, other
 * processes' memory), and every damage warning the reader raised
 * (truncation, corrupt frames with their offsets). */
#include "cli.h"
#include "commands.h"
#include "step_rule.h"
#include "trace_format.h"
#include "units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct device_tally {
    int seen;
    char name[128];
    uint64_t total_bytes;
    uint64_t events, by_op[TRACE_OP_COUNT], by_level[TRACE_LEVEL_COUNT];
} device_tally;

typedef struct info {
    uint64_t by_kind[256];
    device_tally devices[GMT_MAX_DEVICES];
    uint64_t other_device_events;
    uint64_t first_ts, last_ts;
    int any_ts;
    char **strings; /* by string id, for marker names */
    size_t strings_cap;
    uint64_t steps;
    int64_t first_step, last_step;
    trace_process process;
    char host[256], cmdline[512], producer[128];
    int have_process;
    trace_end end; /* end.calls: NULL (they are copied into calls and call_names) */
    int have_end;
    trace_call_count calls[TRACE_END_MAX_CALLS];
    char call_names[TRACE_END_MAX_CALLS][TRACE_END_MAX_CALL_NAME + 1];
} info;

static void note_ts(info *in, uint64_t ts) {
    if (!in->any_ts || ts < in->first_ts)
        in->first_ts = ts;
    if (!in->any_ts || ts > in->last_ts)
        in->last_ts = ts;
    in->any_ts = 1;
}

static int keep_string(info *in, const trace_string *s) {
    if (s->string_id >= in->strings_cap) {
        size_t cap = in->strings_cap ? in->strings_cap : 256;
        while (cap <= s->string_id)
            cap *= 2;
        char **grown = realloc(in->strings, cap * sizeof *grown);
        if (!grown)
            return -1;
        memset(grown + in->strings_cap, 0, (cap - in->strings_cap) * sizeof *grown);
        in->strings = grown;
        in->strings_cap = cap;
    }
    free(in->strings[s->string_id]);
    in->strings[s->string_id] = strdup(s->text.ptr);
    return in->strings[s->string_id] ? 0 : -1;
}

static const char *string_of(const info *in, uint32_t id) {
    return id < in->strings_cap && in->strings[id] ? in->strings[id] : NULL;
}

/* Steps open with a range or a mark whose name follows the step rule, or
 * with an explicit STEP_BEGIN; info only counts them. */
static void note_marker(info *in, const trace_marker *m) {
    note_ts(in, m->ts_ns);
    int64_t number = -1;
    int is_step = 0;
    if (m->kind == TRACE_MARK_STEP_BEGIN) {
        is_step = 1;
        number = m->value;
    } else if (m->kind == TRACE_MARK_RANGE_PUSH || m->kind == TRACE_MARK_RANGE_START ||
               m->kind == TRACE_MARK_MARK) {
        is_step = step_rule_match(string_of(in, m->name_id), NULL, &number);
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

static void note_event(info *in, const trace_event *ev) {
    note_ts(in, ev->ts_ns);
    if (ev->device >= GMT_MAX_DEVICES) {
        in->other_device_events++;
        return;
    }
    device_tally *d = &in->devices[ev->device];
    d->seen = 1;
    d->events++;
    d->by_op[ev->op]++;
    d->by_level[ev->level]++;
}

static void note_record(info *in, const trace_record *rec) {
    in->by_kind[rec->kind & 0xff]++;
    switch (rec->kind) {
    case TRACE_REC_EVENT:
        note_event(in, &rec->u.event);
        break;
    case TRACE_REC_STRING:
        keep_string(in, &rec->u.string);
        break;
    case TRACE_REC_MARKER:
        note_marker(in, &rec->u.marker);
        break;
    case TRACE_REC_COUNTER:
        note_ts(in, rec->u.counter.ts_ns);
        break;
    case TRACE_REC_DEVICE:
        if (rec->u.device.device < GMT_MAX_DEVICES) {
            device_tally *d = &in->devices[rec->u.device.device];
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
}

static void print_info(const char *path, const info *in, const trace_reader *r) {
    const trace_reader_stats *st = trace_reader_get_stats(r);
    char b1[32];
    printf("trace: %s (%s, format v%u, %llu zstd frames)\n", path,
           units_bytes(st->file_bytes, b1, sizeof b1), trace_reader_version(r),
           (unsigned long long)st->frames);
    if (in->have_process) {
        printf("process: pid %u", in->process.pid);
        if (in->process.rank >= 0)
            printf(", rank %d", in->process.rank);
        printf(", host %s, producer %s\n", in->host[0] ? in->host : "?",
               in->producer[0] ? in->producer : "?");
        if (in->cmdline[0])
            printf("command: %s\n", in->cmdline);
    }
    printf("records: %llu\n", (unsigned long long)st->records);
    static const unsigned kinds[] = {TRACE_REC_EVENT,  TRACE_REC_STRING,  TRACE_REC_FRAME,
                                     TRACE_REC_SYMBOL, TRACE_REC_STACK,   TRACE_REC_MODULE,
                                     TRACE_REC_MARKER, TRACE_REC_COUNTER, TRACE_REC_THREAD,
                                     TRACE_REC_DEVICE, TRACE_REC_PROCESS, TRACE_REC_END};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (in->by_kind[kinds[i] & 0xff])
            printf("  %-8s %llu\n", trace_record_kind_name(kinds[i]),
                   (unsigned long long)in->by_kind[kinds[i] & 0xff]);
    for (int dev = 0; dev < GMT_MAX_DEVICES; dev++) {
        const device_tally *d = &in->devices[dev];
        if (!d->seen)
            continue;
        printf("device %d", dev);
        if (d->name[0] || d->total_bytes)
            printf(" (%s, %s)", d->name[0] ? d->name : "?",
                   units_bytes(d->total_bytes, b1, sizeof b1));
        printf(": %llu events (%llu segment, %llu block)\n", (unsigned long long)d->events,
               (unsigned long long)d->by_level[0], (unsigned long long)d->by_level[1]);
        for (unsigned op = 0; op < TRACE_OP_COUNT; op++)
            if (d->by_op[op])
                printf("  %-15s %llu\n", trace_op_name(op), (unsigned long long)d->by_op[op]);
    }
    if (in->other_device_events)
        printf("events on devices >= %d: %llu\n", GMT_MAX_DEVICES,
               (unsigned long long)in->other_device_events);
    if (in->any_ts)
        printf("time span: %s\n", units_duration(in->last_ts - in->first_ts, b1, sizeof b1));
    if (in->steps)
        printf("steps: %llu (step %lld .. step %lld)\n", (unsigned long long)in->steps,
               (long long)in->first_step, (long long)in->last_step);
    else
        printf("steps: none found\n");
    if (in->have_end)
        printf("end: %s, %llu events written, %llu dropped\n",
               (in->end.flags & TRACE_END_CLEAN) ? "clean shutdown" : "unclean",
               (unsigned long long)in->end.events, (unsigned long long)in->end.dropped);
    else
        printf("end: no end record (the recording did not close: killed or still running)\n");
    for (uint32_t i = 0; in->have_end && i < in->end.n_calls; i++) { /* TRACE_FORMAT.md */
        const trace_call_count *c = &in->calls[i];
        printf("not recorded: %s %llu call%s", c->name.len ? c->name.ptr : "?",
               (unsigned long long)c->calls, c->calls == 1 ? "" : "s");
        if (c->bytes)
            printf(", %s", units_bytes(c->bytes, b1, sizeof b1));
        printf("\n");
    }
    if (st->lost_events)
        printf("lost: %llu events in damaged frames\n", (unsigned long long)st->lost_events);
    size_t nw = trace_reader_warning_count(r);
    for (size_t i = 0; i < nw && i < TRACE_READER_MAX_WARNINGS; i++)
        printf("warning: %s\n", trace_reader_warning(r, i));
    if (nw > TRACE_READER_MAX_WARNINGS)
        printf("warning: ... and %zu more\n", nw - TRACE_READER_MAX_WARNINGS);
}

const char info_usage[] =
    "usage: memanalyze info TRACE\n"
    "Prints what a trace holds: record counts by kind, events per device and op,\n"
    "time span, steps, how the recording ended, the calls seen but not recorded\n"
    "as memory (counted: CUDA graph memory nodes, other processes' memory), and\n"
    "any damage found.\n";

const cli_option info_options[] = {CLI_OPT_END};

int run_info(cli_ctx *ctx) {
    const char *path = ctx->input;
    char err[512];
    input_kind kind;
    if (input_detect(path, &kind, err, sizeof err) == 0 && kind != INPUT_TRACE)
        return cli_error("info reads gpumemtrace traces; %s is a %s: `memanalyze report %s` (or "
                         "sql) reads it",
                         path, kind == INPUT_SNAPSHOT ? "PyTorch memory snapshot" : "database",
                         path);
    trace_reader *r = trace_reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "memanalyze: %s\n", err);
        return 2;
    }
    info *in = calloc(1, sizeof *in);
    if (!in) {
        fprintf(stderr, "memanalyze: out of memory\n");
        trace_reader_close(r);
        return 2;
    }
    trace_record rec;
    int rc;
    while ((rc = trace_reader_next(r, &rec)) == 1)
        note_record(in, &rec);
    int status = 0;
    if (rc < 0) {
        fprintf(stderr, "memanalyze: %s: %s\n", path, trace_reader_error(r));
        status = 2;
    } else {
        print_info(path, in, r);
    }
    for (size_t i = 0; i < in->strings_cap; i++)
        free(in->strings[i]);
    free(in->strings);
    free(in);
    trace_reader_close(r);
    return status;
}
