/* rec_core.h — the recorder's core: one recording session per process, and
 * the calls every capture source (CUPTI callbacks, NVTX injection, memrec.h,
 * later Python) uses to put records into the trace.
 *
 * Why it is shaped this way: the sources run on the program's threads, often
 * inside a CUDA call that holds an allocator lock, so an emit must be cheap,
 * must never block for long and must never fail loudly. Each emit copies the
 * record into the calling thread's buffer; one writer thread owns the
 * trace_writer, drains the buffers, interns strings and stacks and writes a
 * zstd frame at least once a second. When a buffer is full the record is
 * dropped and counted (the END record carries the count).
 *
 * Stack ids returned by rec_stack_* are the recorder's own ids; the writer
 * translates them into trace stack ids when it writes the event, so callers
 * never see the trace_writer.
 *
 * Every emit is a no-op when no session is running, so sources may call them
 * unconditionally (memrec.h's promise: cheap no-ops when not recording). */
#ifndef GMT_REC_CORE_H
#define GMT_REC_CORE_H

#include "trace_format.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a session records and where. Filled by rec_config_from_env (the
 * launcher passes its options through MEMREC_* variables) or by tests. */
typedef struct rec_config {
    char path[4096];         /* output file, already expanded (no %p left) */
    char pattern[4096];      /* the pattern it came from ("" when given as a path): a
                                forked child of a process that recorded nothing yet
                                records on its own when the pattern holds %p */
    unsigned stack_depth;    /* native frames per stack; 0 = no stacks */
    uint64_t max_bytes;      /* compressed size cap; 0 = no cap */
    uint32_t buffer_records; /* per-thread buffer capacity in records; 0 = default */
    unsigned flush_ms;       /* writer wakes at least this often; 0 = default 200 */
    char manifest[4096];     /* "" or a file the trace's path is appended to
                                (one line, O_APPEND) when the trace is created:
                                how the launcher learns which traces exist */
    int no_cupti;            /* 1: do not subscribe CUPTI (NVTX, memrec.h only) */
    int has_start_step;      /* 1: the trace starts at step `start_step` (rec_window.h) */
    int64_t start_step;
    int quiet;  /* 1: no warnings on stderr (tests) */
    int stacks; /* rec_stacks: which frames a stack holds in CPython */
} rec_config;

/* MEMREC_STACKS: Python frames interleaved with native ones (default),
 * Python frames only (no native unwinding: fast), or native frames only. */
typedef enum rec_stacks { REC_STACKS_MIXED = 0, REC_STACKS_PYTHON, REC_STACKS_NATIVE } rec_stacks;

/* Defaults, then MEMREC_OUTPUT (pattern with %p %h %r; default
 * "memrec-%h-%p.zst"), MEMREC_STACK_DEPTH, MEMREC_MAX_BYTES,
 * MEMREC_BUFFER_RECORDS, MEMREC_MANIFEST, MEMREC_NO_CUPTI, MEMREC_QUIET,
 * MEMREC_STACKS (mixed, python or native). Returns 0, or -1 with err
 * filled when a variable is malformed. */
int rec_config_from_env(rec_config *c, char *err, size_t errlen);

/* Expands %p (pid), %h (host), %r (rank from RANK / OMPI_COMM_WORLD_RANK /
 * SLURM_PROCID, "0" when none) and %% in `pattern`. Only the pattern's own
 * text may make folders: a rank that is not digits becomes REC_PATH_NO_RANK,
 * a host name that is not a plain one (rec_core.c) REC_PATH_NO_HOST, and
 * `replaced` (NULL: not wanted) gets REC_PATH_BAD_RANK / _HOST for each.
 * Returns 0, -1 when the result does not fit. */
enum { REC_PATH_BAD_RANK = 1, REC_PATH_BAD_HOST = 2 };
#define REC_PATH_NO_RANK "unknown"
#define REC_PATH_NO_HOST "host"
int rec_expand_path(const char *pattern, char *out, size_t outlen, unsigned *replaced);

/* Starts the session. The file is created at the first record that needs it
 * (so a process that never touches CUDA leaves no file); the writer thread
 * starts with it. Returns 0, or -1 with err filled (a session already runs,
 * a bad config). */
int rec_session_start(const rec_config *c, char *err, size_t errlen);

/* Drains every buffer, writes the END record (clean flag, totals, drops),
 * closes the file and ends the session. Idempotent; also registered with
 * atexit. Returns 0, or -1 when the trace could not be written completely
 * (the warning was already printed once). */
int rec_session_stop(void);

/* Increases with every rec_session_start: state a source keeps about what
 * it recorded (e.g. the region table) belongs to one session. */
uint64_t rec_session_serial(void);

/* For an _exit() interposer: stops the session (drain, END record, close)
 * when this process started it. A vfork child shares its parent's memory and
 * must not touch it: it has another pid, so nothing happens there. */
void rec_session_stop_before_exit(void);

/* 1 while a session records (one relaxed atomic load). */
int rec_enabled(void);

/* The trace clock: CLOCK_MONOTONIC in ns (the process record names it). */
uint64_t rec_clock_ns(void);

/* The calling thread's kernel tid (cached per thread). */
uint32_t rec_thread_id(void);

/* Captures the caller's native stack, leaving out the `skip` innermost frames
 * (the recorder's own), and interns it. Returns a recorder stack id, 0 when
 * stacks are off or the stack table is full. Allocation-free after the first
 * call on a thread. */
uint32_t rec_stack_here(unsigned skip);

/* Interns a stack given as instruction pointers, innermost first. */
uint32_t rec_stack_intern(const uint64_t *ips, unsigned n);

/* A call is in progress on this thread whose event will be stamped with
 * `since_ns` (its start): until rec_call_closed, the writer writes nothing
 * newer, so the event still lands in time order (a cuMemFree may block for
 * a long synchronisation between its entry and its exit). */
void rec_call_open(uint64_t since_ns);
void rec_call_closed(void);

/* Memory event. ts_ns 0 means now; tid 0 means the calling thread; stack_id
 * is a recorder stack id (0 = none). */
void rec_emit_event(const trace_event *ev);

/* The most bytes of a marker's domain or name, and of a device's name: the
 * ring keeps their lengths in a byte (rec_internal.h). */
#define REC_TEXT_MAX 255

/* NVTX/memrec.h marker. `domain` and `name` are copied (NULL = none, names
 * longer than REC_TEXT_MAX bytes are cut); ts is now, tid the caller's. */
void rec_emit_marker(trace_marker_kind kind, const char *domain, const char *name,
                     uint64_t range_id, int64_t value);

/* The domain of the steps the PyTorch optimizer hook marks (rec_torch.h):
 * they do not count as the program marking steps. */
#define REC_OPTIMIZER_DOMAIN "memrec.optimizer"

/* 1 once a marker the program emitted (NVTX, memrec.h) was a step: a
 * STEP_BEGIN/END or a name the step rule matches (step_rule.h). */
int rec_program_marked_steps(void);

/* Counter sample (ts_ns 0 = now). */
void rec_emit_counter(const trace_counter *c);

/* Device description (name copied). Written once per device id. */
void rec_emit_device(uint32_t device, uint64_t total_bytes, const char *name);

/* ---- the late lane -------------------------------------------------------
 * A source that learns of events after the fact — PyTorch's allocator
 * history, drained from Python about once a second — writes them through
 * the late lane: one ring of its own, filled in time order under a lock.
 * While a late source is open the writer holds back every record newer than
 * the lane's watermark (but never longer than the hold: REC_LATE_MAX_HOLD_NS,
 * or what the source says its next drain needs, rec_late_expect), so the
 * file stays in time order across sources: the replay sees PyTorch freeing
 * its blocks before CUPTI sees the cuMemFree of their segment, and a step's
 * blocks before its end. The price: a SIGKILLed program loses up to the
 * hold more than its last second. */
#define REC_LATE_MAX_HOLD_NS 2000000000ull
#define REC_LATE_HOLD_CAP_NS 60000000000ull /* what rec_late_expect may ask at most */

/* Opens the lane (idempotent per session): the watermark starts at the
 * session's start. Returns 0, -1 when its ring cannot be allocated. */
int rec_late_open(void);

/* Late records: ts_ns must be set (the time the thing happened); the tid is
 * kept as given (0 = unknown). Emit in time order. */
void rec_late_emit_event(const trace_event *ev);
void rec_late_emit_counter(const trace_counter *c);
/* A late marker at ts_ns (tid 0): PyTorch's annotations, drained. */
void rec_late_emit_marker(trace_marker_kind kind, const char *domain, const char *name,
                          uint64_t range_id, int64_t value, uint64_t ts_ns);

/* The late source stopped (its drains broke, or it was turned off): the
 * writer stops holding records back for it. */
void rec_late_close(void);

/* Everything late up to ts_ns has been emitted: the writer may write all
 * records up to it. */
void rec_late_complete(uint64_t ts_ns);

/* The source's next completion comes within `within_ns` from now (a drain
 * spaced out by its budget): the writer holds records back that long, at
 * least REC_LATE_MAX_HOLD_NS, at most REC_LATE_HOLD_CAP_NS. Without it, or
 * once the lane is opened again, the hold is REC_LATE_MAX_HOLD_NS. */
void rec_late_expect(uint64_t within_ns);

/* The watermark the writer must respect now (UINT64_MAX: no late source). */
uint64_t rec_late_watermark(void);

/* Registers a mutex of a capture source to be made anew in the child after
 * fork (another thread may hold it at the fork, and would never release it
 * there). Call it once per mutex, e.g. from a constructor; 32 at most. */
void rec_reset_after_fork(pthread_mutex_t *mutex);

/* Counts seen by the session so far (for tests and the END record). */
typedef struct rec_stats {
    uint64_t records;  /* records accepted into buffers */
    uint64_t dropped;  /* records dropped: buffer full, cap reached, after a write error */
    uint64_t written;  /* memory events the writer wrote */
    uint64_t stacks;   /* distinct stack nodes interned */
    int stopped_error; /* 1: recording stopped after a write error or the size cap */
} rec_stats;
void rec_get_stats(rec_stats *out);

/* ---- calls counted, not recorded ------------------------------------------
 * A source that sees a call it does not record as memory (memory of another
 * process mapped here, CUDA graph memory: TRACE_FORMAT.md, "Calls counted,
 * not recorded") counts it, and the END record carries, per kind of call,
 * how many there were and the bytes they named. `slot` (< REC_COUNT_SLOTS)
 * is the source's own index of the call; `call_id` and `name` (static
 * storage, at most TRACE_END_MAX_CALL_NAME bytes) are what the END record
 * names it by, the same at every count of a slot. Lock-free and
 * allocation-free (a CUDA callback counts); nothing while no session
 * records. A session starts with every count at zero. */
#define REC_COUNT_SLOTS 48
void rec_count_call(unsigned slot, uint32_t call_id, const char *name, uint64_t bytes);

/* The session's counts so far into out[0 .. max), in slot order, slots not
 * counted left out; names are the counters' static strings. Returns how
 * many were filled. */
size_t rec_counted_calls(trace_call_count *out, size_t max);

/* A note for the launcher, which prints it after the run (once per
 * distinct text, whatever the number of processes): a manifest line
 * REC_MANIFEST_NOTE + text. With REC_MANIFEST_WARNED instead, the text is
 * what a warning this process printed was about: the launcher prints
 * nothing more for it, but no longer says a run without a trace "made no
 * CUDA calls". Nothing without a session or a manifest. */
#define REC_MANIFEST_NOTE "#note "
#define REC_MANIFEST_WARNED "#warned "
void rec_manifest_note(const char *prefix, const char *text);

/* One warning line on stderr, "memrec: ..." (suppressed with quiet). Each
 * call site passes a `once` flag it owns so a warning is printed once. */
void rec_warn_once(int *once, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif
