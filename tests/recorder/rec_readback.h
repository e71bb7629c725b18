/* rec_readback.h — what the recorder's C tests share: a temporary folder for
 * their traces (rb_tmpdir, rb_path, rb_finish), a quiet session recording
 * into it (rb_config, rb_session_start), and a trace read back into plain
 * arrays (rb_read: events, markers with their names and domains, counters,
 * devices, strings, frames and stacks by id, the END record with its
 * counted calls, and how many records of each other kind) for the tests to
 * CHECK; also one text form of an event
 * (rb_describe), so that two events compare with CHECK_STR_EQ.
 *
 * It owns no expectation: every CHECK stays in its test, which is why the
 * session helper returns rec_session_start's result instead of checking it
 * (a failure is reported at the test's line). Header-only and all static
 * inline, like check.h and trace_build.h: a test stays one .c file, the
 * CMake helper that builds it does not change, and a test that uses part of
 * it compiles without unused warnings. Include it after check.h. */
#ifndef GMT_TESTS_REC_READBACK_H
#define GMT_TESTS_REC_READBACK_H

#include "check.h"
#include "rec_core.h"
#include "trace_format.h"

#include <stdlib.h>
#include <unistd.h>

/* ---- the temporary folder and the session ---------------------------------- */

static char rb_dir[64] __attribute__((unused)); /* the test's folder, made by rb_tmpdir */

/* Makes /tmp/NAME.XXXXXX (rb_dir); skips the test when it cannot. */
static inline void rb_tmpdir(const char *name) {
    snprintf(rb_dir, sizeof rb_dir, "/tmp/%s.XXXXXX", name);
    if (!mkdtemp(rb_dir))
        CHECK_SKIP("no temporary directory");
}

/* rb_dir/FILE into out. */
static inline void rb_path(char *out, size_t len, const char *file) {
    snprintf(out, len, "%s/%s", rb_dir, file);
}

/* Ends main(): removes rb_dir and what it holds when every check held (kept
 * for a look otherwise), then check_finish. */
static inline int rb_finish(const char *name) {
    if (!check_failures && rb_dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", rb_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", rb_dir);
    }
    return check_finish(name);
}

/* A quiet session's configuration: the trace at rb_dir/FILE, stacks of
 * STACK_DEPTH frames, every other setting at its default. */
static inline void rb_config(rec_config *c, const char *file, unsigned stack_depth) {
    memset(c, 0, sizeof *c);
    rb_path(c->path, sizeof c->path, file);
    c->stack_depth = stack_depth;
    c->quiet = 1;
}

/* rb_config, then rec_session_start: its result (0: recording). */
static inline int rb_session_start(rec_config *c, const char *file, unsigned stack_depth) {
    rb_config(c, file, stack_depth);
    char err[300];
    return rec_session_start(c, err, sizeof err);
}

/* ---- reading a trace back -------------------------------------------------- */

#define RB_IDS 256     /* strings, frames and stacks are kept by id below this */
#define RB_TEXT 300    /* bytes kept of a string (names are cut at 255) */
#define RB_MARKERS 64  /* markers kept, in trace order; later ones are dropped */
#define RB_COUNTERS 64 /* likewise counters */
#define RB_DEVICES 4   /* likewise devices */

/* A growing array of events (every event of a trace). */
typedef struct event_list {
    trace_event *ev;
    size_t n, cap;
} event_list;

static inline void list_push(event_list *l, const trace_event *e) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->ev = realloc(l->ev, l->cap * sizeof *l->ev);
        if (!l->ev)
            abort();
    }
    l->ev[l->n++] = *e;
}

/* Everything a test looks at after reading a trace back. */
typedef struct readback {
    trace_event *events; /* every event, in trace order (rb_free frees them) */
    size_t n_events, cap_events;
    trace_marker markers[RB_MARKERS]; /* every thread's, in trace order */
    char marker_names[RB_MARKERS][RB_TEXT], marker_domains[RB_MARKERS][RB_TEXT]; /* "?": no id */
    size_t n_markers;
    trace_counter counters[RB_COUNTERS];
    size_t n_counters;
    trace_device devices[RB_DEVICES]; /* name: in device_names */
    char device_names[RB_DEVICES][64];
    size_t n_devices;
    char strings[RB_IDS][RB_TEXT];                     /* by string id; "" when never defined */
    trace_frame frames[RB_IDS];                        /* by frame id */
    trace_stack stacks[RB_IDS];                        /* by stack id */
    uint32_t n_threads, n_modules, n_stacks, n_frames; /* records of these kinds, all counted */
    int exe_module_id, exe_has_build_id; /* the MODULE record of this program, if any */
    uint32_t native_frames_in_exe;       /* frames in that module */
    uint32_t process_pid;                /* the PROCESS record's */
    int32_t process_rank;                /* the PROCESS record's (-1: none) */
    char clock_source[32];
    trace_end end; /* end.calls points at end_calls below */
    int has_end;
    trace_call_count end_calls[TRACE_END_MAX_CALLS]; /* the END record's counted calls */
    char end_call_names[TRACE_END_MAX_CALLS][TRACE_END_MAX_CALL_NAME + 1];
    trace_reader_stats stats;
} readback;

/* Opens path for reading; prints the reader's error when it cannot. */
static inline trace_reader *rb_open(const char *path) {
    char err[300];
    trace_reader *r = trace_reader_open(path, err, sizeof err);
    if (!r)
        fprintf(stderr, "%s\n", err);
    return r;
}

static inline const char *rb_string(const readback *rb, uint32_t id) {
    return id < RB_IDS ? rb->strings[id] : "?";
}

static inline void rb_take(readback *rb, const trace_record *rec, const char *exe) {
    switch (rec->kind) {
    case TRACE_REC_EVENT: {
        event_list l = {rb->events, rb->n_events, rb->cap_events};
        list_push(&l, &rec->u.event);
        rb->events = l.ev, rb->n_events = l.n, rb->cap_events = l.cap;
        break;
    }
    case TRACE_REC_STRING:
        if (rec->u.string.string_id < RB_IDS)
            snprintf(rb->strings[rec->u.string.string_id], RB_TEXT, "%s", rec->u.string.text.ptr);
        break;
    case TRACE_REC_MARKER:
        if (rb->n_markers < RB_MARKERS) {
            const trace_marker *m = &rec->u.marker;
            snprintf(rb->marker_names[rb->n_markers], RB_TEXT, "%s", rb_string(rb, m->name_id));
            snprintf(rb->marker_domains[rb->n_markers], RB_TEXT, "%s", rb_string(rb, m->domain_id));
            rb->markers[rb->n_markers++] = *m;
        }
        break;
    case TRACE_REC_COUNTER:
        if (rb->n_counters < RB_COUNTERS)
            rb->counters[rb->n_counters++] = rec->u.counter;
        break;
    case TRACE_REC_DEVICE:
        if (rb->n_devices < RB_DEVICES) {
            snprintf(rb->device_names[rb->n_devices], 64, "%s", rec->u.device.name.ptr);
            rb->devices[rb->n_devices] = rec->u.device;
            rb->devices[rb->n_devices++].name = (trace_bytes){0};
        }
        break;
    case TRACE_REC_THREAD:
        rb->n_threads++;
        break;
    case TRACE_REC_MODULE:
        rb->n_modules++;
        if (!strcmp(rec->u.module.path.ptr, exe)) {
            rb->exe_module_id = (int)rec->u.module.module_id;
            rb->exe_has_build_id = rec->u.module.build_id.len > 0;
        }
        break;
    case TRACE_REC_STACK:
        rb->n_stacks++;
        if (rec->u.stack.stack_id < RB_IDS)
            rb->stacks[rec->u.stack.stack_id] = rec->u.stack;
        break;
    case TRACE_REC_FRAME:
        rb->n_frames++;
        if (rb->exe_module_id && rec->u.frame.module_id == (uint32_t)rb->exe_module_id)
            rb->native_frames_in_exe++;
        if (rec->u.frame.frame_id < RB_IDS)
            rb->frames[rec->u.frame.frame_id] = rec->u.frame;
        break;
    case TRACE_REC_PROCESS:
        rb->process_pid = rec->u.process.pid;
        rb->process_rank = rec->u.process.rank;
        snprintf(rb->clock_source, sizeof rb->clock_source, "%s", rec->u.process.clock_source.ptr);
        break;
    case TRACE_REC_END: /* its counted calls copied: the reader's last one record */
        rb->end = rec->u.end;
        for (uint32_t i = 0; i < rec->u.end.n_calls && i < TRACE_END_MAX_CALLS; i++) {
            rb->end_calls[i] = rec->u.end.calls[i];
            snprintf(rb->end_call_names[i], sizeof rb->end_call_names[i], "%s",
                     rec->u.end.calls[i].name.ptr);
            rb->end_calls[i].name.ptr = rb->end_call_names[i];
        }
        rb->end.calls = rb->end_calls;
        rb->has_end = 1;
        break;
    default:
        break;
    }
}

/* Reads the trace at path into rb (rb_free it after, whatever the result);
 * -1 when it cannot be opened (the error printed). */
static inline int rb_read(const char *path, readback *rb) {
    memset(rb, 0, sizeof *rb);
    rb->cap_events = RB_MARKERS; /* room from the start: events[0] reads as zeros, as a test may */
    rb->events = calloc(rb->cap_events, sizeof *rb->events);
    if (!rb->events)
        abort();
    trace_reader *r = rb_open(path);
    if (!r)
        return -1;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    trace_record rec;
    while (trace_reader_next(r, &rec) == 1)
        rb_take(rb, &rec, exe);
    rb->stats = *trace_reader_get_stats(r);
    trace_reader_close(r);
    return 0;
}

static inline void rb_free(readback *rb) {
    free(rb->events);
    rb->events = NULL;
    rb->n_events = rb->cap_events = 0;
}

/* Only the events of the trace at path, appended to out; -1 as rb_read. */
static inline int rb_read_events(const char *path, event_list *out) {
    trace_reader *r = rb_open(path);
    if (!r)
        return -1;
    trace_record rec;
    while (trace_reader_next(r, &rec) == 1)
        if (rec.kind == TRACE_REC_EVENT)
            list_push(out, &rec.u.event);
    trace_reader_close(r);
    return 0;
}

/* An event's identity as text (not its time, thread, stack, level, source). */
static inline void rb_describe(char *out, size_t len, const trace_event *e) {
    snprintf(out, len, "%s kind %u dev %u addr 0x%llx size %llu req %llu stream 0x%llx pool 0x%llx",
             trace_op_name(e->op), e->kind, e->device, (unsigned long long)e->addr,
             (unsigned long long)e->size, (unsigned long long)e->requested,
             (unsigned long long)e->stream, (unsigned long long)e->pool);
}

#endif
