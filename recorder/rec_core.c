/* rec_core.c — the recording session and the emit calls (see rec_core.h).
 *
 * The session is a small state machine: OFF -> ARMED (configured; nothing
 * written yet) -> RUNNING (first record: file created, writer thread
 * started) -> back to OFF at stop, or HALTED after a write error or the size
 * cap. Emits check the state with one relaxed load, copy the record into the
 * calling thread's ring and return; they never wait for the writer.
 *
 * A forked child stops recording (it must never write into the parent's
 * file; the fork handler only resets state, it takes no lock). */
#include "gmt_env.h"
#include "rec_buffer.h"
#include "rec_internal.h"
#include "rec_stack.h"
#include "rec_writer.h"
#include "step_rule.h"

#include "gmt_rank.h"
#include "gmt_size.h"

#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { STATE_OFF = 0, STATE_ARMED, STATE_RUNNING, STATE_HALTED };

static _Atomic int session_state;
static _Atomic uint64_t session_serial;
static _Atomic pid_t session_pid; /* the process the session belongs to */
static rec_config session_config;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t process_hooks_once = PTHREAD_ONCE_INIT;
static __thread uint32_t cached_tid;

/* Calls counted, not recorded (rec_count_call): a slot's name is set at its
 * first count of the session, its call id just before it. */
typedef struct count_slot {
    _Atomic(const char *) name; /* NULL: not counted this session */
    _Atomic uint32_t call_id;
    _Atomic uint64_t calls, bytes;
} count_slot;
static count_slot count_slots[REC_COUNT_SLOTS];
_Static_assert(REC_COUNT_SLOTS <= TRACE_END_MAX_CALLS, "every slot fits in the END record");

/* A new session's counts start at zero (no session records meanwhile: nobody counts). */
static void reset_counts(void) {
    for (int i = 0; i < REC_COUNT_SLOTS; i++) {
        atomic_store(&count_slots[i].calls, 0);
        atomic_store(&count_slots[i].bytes, 0);
        atomic_store(&count_slots[i].name, NULL);
    }
}

/* The late lane (see rec_core.h): its ring, the lock its producers take, the
 * watermark, and the session it was opened in. */
static pthread_mutex_t late_lock = PTHREAD_MUTEX_INITIALIZER;
static rec_buffer *late_ring;
static _Atomic uint64_t late_watermark;
static _Atomic uint64_t late_hold_ns = REC_LATE_MAX_HOLD_NS; /* rec_late_expect */
static _Atomic uint64_t late_session; /* serial of the session it is open in; 0 none */
#define LATE_RING_BYTES (64u << 20)   /* ~800 k events: more than a drain brings */

/* ---- configuration ---------------------------------------------------- */

/* A number, with an optional unit (gmt_size.h: "4096", "64k", "2G"). */
static int parse_u64(const char *name, const char *v, uint64_t *out, char *err, size_t errlen) {
    if (gmt_parse_size(v, out) != 0) {
        snprintf(err, errlen, "%s=%s is not a number", name, v);
        return -1;
    }
    return 0;
}

/* A rank names a file only when it is digits (all torchrun, Open MPI and Slurm write): any
 * other text may hold a '/' or "..", and the trace would land outside the folder -o names. */
static int plain_rank(const char *r) {
    size_t n = 0;
    for (; r[n]; n++)
        if (r[n] < '0' || r[n] > '9')
            return 0;
    return n > 0 && n <= 18;
}

/* A host name names a file only when it is what RFC 1123 allows (letters, digits, '-', '.',
 * and the '_' some sites use), not starting with '.' (so never "." or ".."): a name set
 * with sethostname(2) in a UTS namespace can be anything but '\0'. */
static int plain_host(const char *h) {
    if (!*h || *h == '.')
        return 0;
    for (; *h; h++) {
        char c = *h;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_'))
            return 0;
    }
    return 1;
}

int rec_expand_path(const char *pattern, char *out, size_t outlen, unsigned *replaced) {
    size_t o = 0;
    if (replaced)
        *replaced = 0;
    for (const char *p = pattern; *p; p++) {
        char piece[300];
        const char *add = piece;
        piece[0] = 0;
        if (*p == '%' && p[1]) {
            p++;
            if (*p == 'p') {
                snprintf(piece, sizeof piece, "%d", (int)getpid());
            } else if (*p == 'h') {
                if (gethostname(piece, sizeof piece - 1) != 0)
                    piece[0] = 0;
                piece[sizeof piece - 1] = 0;
                if (!plain_host(piece)) {
                    if (replaced && piece[0])
                        *replaced |= REC_PATH_BAD_HOST;
                    add = REC_PATH_NO_HOST;
                }
            } else if (*p == 'r') {
                const char *r = gmt_rank_text(); /* getenv only: fine after fork */
                add = !r ? "0" : plain_rank(r) ? r : REC_PATH_NO_RANK;
                if (replaced && r && !plain_rank(r))
                    *replaced |= REC_PATH_BAD_RANK;
            } else if (*p == '%') {
                add = "%";
            } else {
                snprintf(piece, sizeof piece, "%%%c", *p);
            }
        } else {
            piece[0] = *p;
            piece[1] = 0;
        }
        size_t len = strlen(add);
        if (o + len + 1 > outlen)
            return -1;
        memcpy(out + o, add, len);
        o += len;
    }
    out[o] = 0;
    return 0;
}

/* `text` for a one-line message: at most 80 bytes, a control character as '?'. */
static void printable(const char *text, char *out, size_t len) {
    size_t n = 0;
    for (; text[n] && n + 1 < len && n < 80; n++)
        out[n] = (unsigned char)text[n] < 0x20 || text[n] == 0x7f ? '?' : text[n];
    out[n] = 0;
}

/* One warning per value rec_expand_path would not put in a file name. */
static void warn_replaced(unsigned replaced) {
    static int warned_rank, warned_host;
    char shown[96];
    if (replaced & REC_PATH_BAD_RANK) {
        const char *name = gmt_rank_variable(), *text = gmt_rank_text();
        printable(text ? text : "", shown, sizeof shown);
        rec_warn_once(&warned_rank,
                      "%s=\"%s\" is not a rank number: %%r is \"" REC_PATH_NO_RANK
                      "\" in the trace's name",
                      name ? name : "RANK", shown);
    }
    if (replaced & REC_PATH_BAD_HOST) {
        char host[300] = "";
        if (gethostname(host, sizeof host - 1) != 0)
            host[0] = 0;
        host[sizeof host - 1] = 0;
        printable(host, shown, sizeof shown);
        rec_warn_once(&warned_host,
                      "the host name \"%s\" is not a plain name: %%h is \"" REC_PATH_NO_HOST
                      "\" in the trace's name",
                      shown);
    }
}

int rec_config_from_env(rec_config *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->stack_depth = 64;
    const char *pattern = getenv(GMT_ENV_MEMREC_OUTPUT);
    if (!pattern || !*pattern)
        pattern = "memrec-%h-%p.zst";
    snprintf(c->pattern, sizeof c->pattern, "%s", pattern);
    if (rec_expand_path(pattern, c->path, sizeof c->path, NULL) != 0) {
        snprintf(err, errlen, GMT_ENV_MEMREC_OUTPUT " is too long");
        return -1;
    }
    uint64_t v;
    const char *s;
    if ((s = getenv(GMT_ENV_MEMREC_STACK_DEPTH)) && *s) {
        if (parse_u64(GMT_ENV_MEMREC_STACK_DEPTH, s, &v, err, errlen) != 0)
            return -1;
        c->stack_depth = v > REC_STACK_MAX_DEPTH ? REC_STACK_MAX_DEPTH : (unsigned)v;
    }
    if ((s = getenv(GMT_ENV_MEMREC_MAX_BYTES)) && *s &&
        parse_u64(GMT_ENV_MEMREC_MAX_BYTES, s, &c->max_bytes, err, errlen) != 0)
        return -1;
    if ((s = getenv(GMT_ENV_MEMREC_BUFFER_RECORDS)) && *s) {
        if (parse_u64(GMT_ENV_MEMREC_BUFFER_RECORDS, s, &v, err, errlen) != 0)
            return -1;
        c->buffer_records = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    }
    if ((s = getenv(GMT_ENV_MEMREC_START_STEP)) && *s) {
        if (parse_u64(GMT_ENV_MEMREC_START_STEP, s, &v, err, errlen) != 0)
            return -1;
        c->has_start_step = 1;
        c->start_step = v > INT64_MAX ? INT64_MAX : (int64_t)v;
    }
    if ((s = getenv(GMT_ENV_MEMREC_MANIFEST)) && *s)
        snprintf(c->manifest, sizeof c->manifest, "%s", s);
    c->no_cupti = (s = getenv(GMT_ENV_MEMREC_NO_CUPTI)) && *s && strcmp(s, "0") != 0;
    c->quiet = (s = getenv(GMT_ENV_MEMREC_QUIET)) && *s && strcmp(s, "0") != 0;
    if ((s = getenv(GMT_ENV_MEMREC_STACKS)) && *s) {
        static const char *const modes[] = {"mixed", "python", "native"};
        c->stacks = -1;
        for (int m = 0; m < 3; m++)
            if (strcmp(s, modes[m]) == 0)
                c->stacks = m;
        if (c->stacks < 0) {
            snprintf(err, errlen,
                     GMT_ENV_MEMREC_STACKS " must be mixed, python or native, not \"%.40s\"", s);
            return -1;
        }
    }
    return 0;
}

/* ---- session ------------------------------------------------------------ */

/* In the child after fork, before anything else runs: the writer thread
 * does not exist here and the parent's file is the parent's. Locks another
 * thread may have held are made anew; what the rings held is the parent's.
 * A child of a process that had recorded nothing yet (a CPU-only parent
 * starting CUDA workers) records on its own when the pattern names files by
 * pid; any other child (a DataLoader worker of a recording process) stops. */
static pthread_mutex_t *fork_mutexes[32];
static _Atomic unsigned fork_mutex_count;

void rec_reset_after_fork(pthread_mutex_t *mutex) {
    unsigned i = atomic_fetch_add(&fork_mutex_count, 1);
    if (i < sizeof fork_mutexes / sizeof fork_mutexes[0])
        fork_mutexes[i] = mutex;
}

static void child_after_fork(void) {
    int was = atomic_load(&session_state);
    unsigned n = atomic_load(&fork_mutex_count);
    for (unsigned i = 0; i < n && i < sizeof fork_mutexes / sizeof fork_mutexes[0]; i++)
        pthread_mutex_init(fork_mutexes[i], NULL);
    pthread_mutex_t fresh_start = PTHREAD_MUTEX_INITIALIZER, fresh_late = PTHREAD_MUTEX_INITIALIZER;
    start_lock = fresh_start;
    late_lock = fresh_late;
    atomic_store(&late_session, 0);
    late_ring = NULL; /* the child's writer frees the parent's (rec_buffers_abandon_after_fork) */
    cached_tid = 0;
    rec_writer_abandon_after_fork();
    rec_buffers_abandon_after_fork();
    if (was == STATE_ARMED && strstr(session_config.pattern, "%p") &&
        rec_expand_path(session_config.pattern, session_config.path, sizeof session_config.path,
                        NULL) == 0) {
        reset_counts(); /* what the parent counted is the parent's */
        atomic_fetch_add(&session_serial, 1);
        atomic_store(&session_pid, getpid());
        atomic_store(&session_state, STATE_ARMED);
    } else {
        atomic_store(&session_state, STATE_OFF);
    }
}

static void stop_at_exit(void) { rec_session_stop(); }

static void install_process_hooks(void) { atexit(stop_at_exit); }

/* At load, so a fork before the first session still resets the sources'
 * locks in the child. */
__attribute__((constructor)) static void install_fork_handler(void) {
    pthread_atfork(NULL, NULL, child_after_fork);
}

int rec_session_start(const rec_config *c, char *err, size_t errlen) {
    pthread_mutex_lock(&start_lock);
    if (atomic_load(&session_state) != STATE_OFF) {
        pthread_mutex_unlock(&start_lock);
        snprintf(err, errlen, "a recording session is already running");
        return -1;
    }
    if (!c->path[0]) {
        pthread_mutex_unlock(&start_lock);
        snprintf(err, errlen, "no output path");
        return -1;
    }
    session_config = *c;
    rec_log_set_quiet(c->quiet);
    rec_stack_set_depth(c->stack_depth);
    rec_stack_set_mode(c->stacks);
    if (c->stack_depth && rec_stack_table_init() != 0)
        rec_stack_set_depth(0);
    /* ~80 bytes per event item: records -> bytes. */
    rec_buffer_set_capacity(c->buffer_records ? (size_t)c->buffer_records * 80 : 4u << 20);
    pthread_once(&process_hooks_once, install_process_hooks);
    reset_counts();
    atomic_fetch_add(&session_serial, 1);
    atomic_store(&session_pid, getpid());
    atomic_store(&session_state, STATE_ARMED);
    pthread_mutex_unlock(&start_lock);
    return 0;
}

/* The first record of a session creates the file and starts the writer. */
static int start_running(void) {
    static int warned;
    pthread_mutex_lock(&start_lock);
    int state = atomic_load(&session_state);
    if (state == STATE_ARMED) {
        /* The pattern is expanded again now, in the process that records, at
         * its first record: a worker started by mp.spawn (a fresh interpreter
         * that armed at start-up) sets RANK itself before it uses CUDA, so %r
         * read at arm time would make every worker rank 0. */
        char fresh[sizeof session_config.path];
        unsigned replaced = 0;
        if (session_config.pattern[0] &&
            rec_expand_path(session_config.pattern, fresh, sizeof fresh, &replaced) == 0) {
            memcpy(session_config.path, fresh, sizeof fresh);
            warn_replaced(replaced);
        }
        char err[600] = "";
        if (rec_writer_start(&session_config, err, sizeof err) == 0) {
            state = STATE_RUNNING;
        } else {
            rec_warn_once(&warned, "%s; the program runs unrecorded", err);
            /* the launcher then does not say the program made no CUDA calls */
            rec_manifest_append(session_config.manifest, REC_MANIFEST_WARNED "trace");
            state = STATE_HALTED;
        }
        atomic_store(&session_state, state);
    }
    pthread_mutex_unlock(&start_lock);
    return state == STATE_RUNNING;
}

void rec_session_halt(void) { atomic_store(&session_state, STATE_HALTED); }

void rec_session_stop_before_exit(void) {
    int s = atomic_load(&session_state);
    if ((s == STATE_RUNNING || s == STATE_HALTED) && atomic_load(&session_pid) == getpid())
        rec_session_stop();
}

int rec_session_stop(void) {
    pthread_mutex_lock(&start_lock);
    int state = atomic_exchange(&session_state, STATE_OFF);
    int rc = 0;
    if (state == STATE_RUNNING || state == STATE_HALTED)
        rc = rec_writer_stop();
    if (state != STATE_OFF)
        rec_buffers_reset();
    pthread_mutex_unlock(&start_lock);
    return rc;
}

uint64_t rec_session_serial(void) { return atomic_load(&session_serial); }

void rec_manifest_note(const char *prefix, const char *text) {
    char manifest[sizeof session_config.manifest], line[1024];
    pthread_mutex_lock(&start_lock);
    int on = atomic_load(&session_state) != STATE_OFF;
    memcpy(manifest, session_config.manifest, sizeof manifest);
    pthread_mutex_unlock(&start_lock);
    if (on && manifest[0] && text && !strchr(text, '\n')) {
        snprintf(line, sizeof line, "%s%s", prefix, text);
        rec_manifest_append(manifest, line);
    }
}

int rec_enabled(void) {
    int s = atomic_load_explicit(&session_state, memory_order_relaxed);
    return s == STATE_ARMED || s == STATE_RUNNING;
}

uint64_t rec_clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t rec_thread_id(void) {
    if (!cached_tid)
        cached_tid = (uint32_t)syscall(SYS_gettid);
    return cached_tid;
}

void rec_get_stats(rec_stats *out) {
    memset(out, 0, sizeof *out);
    out->records = rec_buffers_committed();
    out->dropped = rec_buffers_dropped();
    out->written = rec_writer_events_written();
    out->stacks = rec_stack_node_count();
    out->stopped_error = atomic_load(&session_state) == STATE_HALTED;
}

/* ---- calls counted, not recorded ------------------------------------------ */

void rec_count_call(unsigned slot, uint32_t call_id, const char *name, uint64_t bytes) {
    assert(slot < REC_COUNT_SLOTS && name); /* the counter's table is static */
    if (slot >= REC_COUNT_SLOTS || !name || !rec_enabled())
        return;
    count_slot *c = &count_slots[slot];
    if (!atomic_load_explicit(&c->name, memory_order_acquire)) {
        atomic_store_explicit(&c->call_id, call_id, memory_order_relaxed);
        atomic_store_explicit(&c->name, name, memory_order_release);
    }
    atomic_fetch_add_explicit(&c->bytes, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
}

size_t rec_counted_calls(trace_call_count *out, size_t max) {
    size_t n = 0;
    for (int i = 0; i < REC_COUNT_SLOTS && n < max; i++) {
        const count_slot *c = &count_slots[i];
        const char *name = atomic_load_explicit(&c->name, memory_order_acquire);
        uint64_t calls = atomic_load_explicit(&c->calls, memory_order_relaxed);
        if (!name || !calls)
            continue;
        out[n++] = (trace_call_count){.call_id = atomic_load(&c->call_id),
                                      .name = {name, (uint32_t)strlen(name)},
                                      .calls = calls,
                                      .bytes = atomic_load(&c->bytes)};
    }
    return n;
}

/* ---- emits -------------------------------------------------------------- */

/* The calling thread's ring when the session records, else NULL (a record
 * arriving while halted counts as dropped). */
static rec_buffer *ring_for_emit(void) {
    int s = atomic_load_explicit(&session_state, memory_order_relaxed);
    if (s == STATE_ARMED && !start_running())
        return NULL;
    if (s == STATE_OFF)
        return NULL;
    if (s == STATE_HALTED) { /* never a new ring after a halt: the writer is gone */
        rec_buffer_count_drop(rec_buffer_current());
        return NULL;
    }
    rec_buffer *b = rec_buffer_for_thread();
    if (!b)
        rec_buffer_count_drop(NULL);
    return b;
}

void rec_call_open(uint64_t since_ns) {
    rec_buffer *b = rec_enabled() ? rec_buffer_for_thread() : NULL;
    if (b)
        rec_buffer_set_open_call(b, since_ns ? since_ns : 1);
}

void rec_call_closed(void) {
    rec_buffer *b = rec_buffer_current();
    if (b)
        rec_buffer_set_open_call(b, 0);
}

static void commit(rec_buffer *b) {
    if (rec_buffer_commit(b))
        rec_writer_wake();
}

void rec_emit_event(const trace_event *ev) {
    rec_buffer *b = ring_for_emit();
    if (!b)
        return;
    uint64_t ts = ev->ts_ns ? ev->ts_ns : rec_clock_ns();
    trace_event *slot = rec_buffer_reserve(b, sizeof *slot, REC_ITEM_EVENT, ts);
    if (!slot)
        return;
    *slot = *ev;
    slot->ts_ns = ts;
    if (!slot->tid)
        slot->tid = rec_thread_id();
    commit(b);
}

_Static_assert(REC_TEXT_MAX <= UINT8_MAX, "the ring keeps text lengths in a byte");

static size_t cut(const char *s, size_t max) { return s ? strnlen(s, max) : 0; }

/* A marker record into ring b (a thread's own, or the late lane under its lock). */
static void put_marker(rec_buffer *b, uint64_t ts_ns, uint32_t tid, trace_marker_kind kind,
                       const char *domain, const char *name, uint64_t range_id, int64_t value) {
    size_t dlen = cut(domain, REC_TEXT_MAX), nlen = cut(name, REC_TEXT_MAX);
    rec_marker_item *m = rec_buffer_reserve(b, sizeof *m + dlen + nlen, REC_ITEM_MARKER, ts_ns);
    if (!m)
        return;
    m->range_id = range_id;
    m->value = value;
    m->tid = tid;
    m->kind = (uint8_t)kind;
    m->domain_len = (uint8_t)dlen;
    m->name_len = (uint8_t)nlen;
    memcpy((char *)(m + 1), domain ? domain : "", dlen);
    memcpy((char *)(m + 1) + dlen, name ? name : "", nlen);
    commit(b);
}

/* Set once the program marks a step itself (NVTX or memrec.h): the PyTorch
 * optimizer hook's steps (domain REC_OPTIMIZER_DOMAIN) then stay silent. */
static atomic_int program_marked_steps;

int rec_program_marked_steps(void) {
    return atomic_load_explicit(&program_marked_steps, memory_order_relaxed);
}

static void note_step(trace_marker_kind kind, const char *domain, const char *name) {
    if (domain && strcmp(domain, REC_OPTIMIZER_DOMAIN) == 0)
        return;
    int64_t n;
    if (kind == TRACE_MARK_STEP_BEGIN || kind == TRACE_MARK_STEP_END ||
        (name && kind != TRACE_MARK_RANGE_END && kind != TRACE_MARK_RANGE_POP &&
         step_rule_match(name, NULL, &n)))
        atomic_store_explicit(&program_marked_steps, 1, memory_order_relaxed);
}

void rec_emit_marker(trace_marker_kind kind, const char *domain, const char *name,
                     uint64_t range_id, int64_t value) {
    note_step(kind, domain, name);
    rec_buffer *b = ring_for_emit();
    if (b)
        put_marker(b, rec_clock_ns(), rec_thread_id(), kind, domain, name, range_id, value);
}

void rec_emit_counter(const trace_counter *c) {
    rec_buffer *b = ring_for_emit();
    if (!b)
        return;
    uint64_t ts = c->ts_ns ? c->ts_ns : rec_clock_ns();
    trace_counter *slot = rec_buffer_reserve(b, sizeof *slot, REC_ITEM_COUNTER, ts);
    if (!slot)
        return;
    *slot = *c;
    slot->ts_ns = ts;
    commit(b);
}

void rec_emit_device(uint32_t device, uint64_t total_bytes, const char *name) {
    rec_buffer *b = ring_for_emit();
    if (!b)
        return;
    size_t nlen = cut(name, REC_TEXT_MAX);
    rec_device_item *d = rec_buffer_reserve(b, sizeof *d + nlen, REC_ITEM_DEVICE, rec_clock_ns());
    if (!d)
        return;
    d->device = device;
    d->total_bytes = total_bytes;
    d->name_len = (uint8_t)nlen;
    memcpy((char *)(d + 1), name ? name : "", nlen);
    commit(b);
}

/* ---- the late lane ------------------------------------------------------ */

int rec_late_open(void) {
    pthread_mutex_lock(&late_lock);
    if (!late_ring)
        late_ring = rec_buffer_new_shared(LATE_RING_BYTES, 0);
    int ok = late_ring != NULL;
    uint64_t serial = rec_session_serial();
    if (ok && atomic_load(&late_session) != serial) {
        atomic_store(&late_watermark, rec_clock_ns());
        atomic_store(&late_hold_ns, REC_LATE_MAX_HOLD_NS);
        atomic_store(&late_session, serial);
    }
    pthread_mutex_unlock(&late_lock);
    return ok ? 0 : -1;
}

/* The lane's ring for an emit, locked; NULL (unlocked) when the session does
 * not record or the lane is not open in it. */
static rec_buffer *late_ring_locked(void) {
    int s = atomic_load_explicit(&session_state, memory_order_relaxed);
    if (s == STATE_ARMED && !start_running())
        return NULL;
    if (s == STATE_OFF || atomic_load(&late_session) != rec_session_serial())
        return NULL;
    pthread_mutex_lock(&late_lock);
    if (atomic_load_explicit(&session_state, memory_order_relaxed) == STATE_HALTED) {
        rec_buffer_count_drop(late_ring);
        pthread_mutex_unlock(&late_lock);
        return NULL;
    }
    return late_ring;
}

/* Copies one late record into the lane's ring. */
static void late_put(rec_item_type type, const void *record, size_t size, uint64_t ts_ns) {
    rec_buffer *b = late_ring_locked();
    if (!b)
        return;
    void *slot = rec_buffer_reserve(b, size, type, ts_ns);
    if (slot) {
        memcpy(slot, record, size);
        commit(b);
    }
    pthread_mutex_unlock(&late_lock);
}

void rec_late_emit_event(const trace_event *ev) {
    late_put(REC_ITEM_EVENT, ev, sizeof *ev, ev->ts_ns);
}

void rec_late_emit_counter(const trace_counter *c) {
    late_put(REC_ITEM_COUNTER, c, sizeof *c, c->ts_ns);
}

void rec_late_emit_marker(trace_marker_kind kind, const char *domain, const char *name,
                          uint64_t range_id, int64_t value, uint64_t ts_ns) {
    rec_buffer *b = late_ring_locked();
    if (!b)
        return;
    put_marker(b, ts_ns, 0, kind, domain, name, range_id, value); /* tid 0: not a thread's */
    pthread_mutex_unlock(&late_lock);
}

void rec_late_close(void) { atomic_store(&late_session, 0); }

void rec_late_complete(uint64_t ts_ns) {
    uint64_t old = atomic_load(&late_watermark);
    while (ts_ns > old && !atomic_compare_exchange_weak(&late_watermark, &old, ts_ns)) {
    }
}

void rec_late_expect(uint64_t within_ns) {
    uint64_t hold = within_ns < REC_LATE_MAX_HOLD_NS   ? REC_LATE_MAX_HOLD_NS
                    : within_ns > REC_LATE_HOLD_CAP_NS ? REC_LATE_HOLD_CAP_NS
                                                       : within_ns;
    atomic_store(&late_hold_ns, hold);
}

uint64_t rec_late_watermark(void) {
    if (atomic_load(&late_session) != rec_session_serial())
        return UINT64_MAX;
    uint64_t now = rec_clock_ns(), hold = atomic_load(&late_hold_ns);
    uint64_t floor = now > hold ? now - hold : 0;
    uint64_t mark = atomic_load(&late_watermark);
    return mark > floor ? mark : floor;
}
