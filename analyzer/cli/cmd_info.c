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
#include "trace_info.h"
#include "units.h"

#include <stdio.h>

static void print_info(const char *path, const trace_info *in) {
    char b1[32];
    printf("trace: %s (%s, format v%u, %llu zstd frames)\n", path,
           units_bytes(in->file_bytes, b1, sizeof b1), in->version, (unsigned long long)in->frames);
    if (in->have_process) {
        printf("process: pid %u", in->process.pid);
        if (in->process.rank >= 0)
            printf(", rank %d", in->process.rank);
        printf(", host %s, producer %s\n", in->host[0] ? in->host : "?",
               in->producer[0] ? in->producer : "?");
        if (in->cmdline[0])
            printf("command: %s\n", in->cmdline);
    }
    printf("records: %llu\n", (unsigned long long)in->records);
    static const unsigned kinds[] = {TRACE_REC_EVENT,  TRACE_REC_STRING,  TRACE_REC_FRAME,
                                     TRACE_REC_SYMBOL, TRACE_REC_STACK,   TRACE_REC_MODULE,
                                     TRACE_REC_MARKER, TRACE_REC_COUNTER, TRACE_REC_THREAD,
                                     TRACE_REC_DEVICE, TRACE_REC_PROCESS, TRACE_REC_END};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (in->by_kind[kinds[i] & 0xff])
            printf("  %-8s %llu\n", trace_record_kind_name(kinds[i]),
                   (unsigned long long)in->by_kind[kinds[i] & 0xff]);
    for (int dev = 0; dev < GMT_MAX_DEVICES; dev++) {
        const trace_device_tally *d = &in->devices[dev];
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
    if (in->lost_events)
        printf("lost: %llu events in damaged frames\n", (unsigned long long)in->lost_events);
    for (size_t i = 0; i < in->nwarnings_kept; i++)
        printf("warning: %s\n", in->warnings[i]);
    if (in->nwarnings > in->nwarnings_kept)
        printf("warning: ... and %zu more\n", in->nwarnings - in->nwarnings_kept);
}

const char info_usage[] =
    "usage: memanalyze info TRACE\n"
    "Prints what a trace holds: record counts by kind, events per device and op,\n"
    "time span, steps, how the recording ended, the calls seen but not recorded\n"
    "as memory (counted: CUDA graph memory nodes, other processes' memory,\n"
    "allocations refused for another reason than out of memory), and any damage\n"
    "found.\n";

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
    trace_info *in;
    if (trace_info_read(path, &in, err, sizeof err) != 0)
        return cli_error("%s", err);
    print_info(path, in);
    trace_info_free(in);
    return 0;
}
