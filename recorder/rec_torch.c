/* rec_torch.c — PyTorch's caching-allocator history into the trace (see
 * rec_torch.h): the frame and stack tables Python's definitions fill, the
 * symbolic-frame resolver the writer calls, the bulk emit, and the tensor
 * names' marks (one late marker each, stamped with one clock reading).
 *
 * Shape: two growable tables under one mutex. They are touched once per
 * distinct frame or stack (definitions, the writer's resolution) and once
 * per drain (emit), never per event, so one lock costs nothing that a
 * buffer could save. Frame strings are allocated once and never freed while
 * the process lives: the resolver hands out pointers into them after
 * unlocking, and tokens already in the stack trie keep naming them in later
 * sessions. The per-entry loop of an emit allocates nothing. */
#include "rec_torch.h"

#include "rec_core.h"
#include "rec_stack.h"

#include "gmt_grow.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EMIT_CHUNK 2048u        /* entries converted per lock hold */
#define MAX_FRAME_ID (1u << 24) /* far beyond any real run; bounds the tables */
#define MAX_STACK_ID (1u << 26)

typedef struct torch_frame {
    char *function, *file; /* NULL: not defined */
    uint32_t line;
    uint8_t kind;
} torch_frame;

static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;

/* Made anew in a forked child (rec_core.h). */
__attribute__((constructor)) static void register_tables_lock(void) {
    rec_reset_after_fork(&tables_lock);
}

static torch_frame *frames; /* index = frame id */
static size_t frames_cap;
static uint32_t *stack_nodes; /* index = Python stack id -> recorder stack id */
static size_t stacks_cap;
static uint64_t token_prefix; /* 0 until the resolver is registered */

static uint64_t anchor_serial;   /* the session the anchor belongs to */
static int64_t wall_to_trace_ns; /* trace clock - Unix time, in ns */
static int warned[64];

/* ---- the tables ------------------------------------------------------------ */

static int is_python_file(const char *file) {
    size_t n = strlen(file);
    return n > 3 && strcmp(file + n - 3, ".py") == 0;
}

/* Writer thread: the names of frame `value`. */
static int resolve_frame(uint64_t value, rec_symbolic_frame *out) {
    int rc = -1;
    pthread_mutex_lock(&tables_lock);
    if (value < frames_cap && frames[value].function) {
        const torch_frame *f = &frames[value];
        *out = (rec_symbolic_frame){f->function, f->file, f->line, f->kind};
        rc = 0;
    }
    pthread_mutex_unlock(&tables_lock);
    return rc;
}

/* Under tables_lock. */
static uint64_t prefix_locked(void) {
    if (!token_prefix)
        token_prefix = rec_stack_register_symbolic(resolve_frame);
    return token_prefix;
}

int memrec_torch_define_frames(uint32_t first_id, uint32_t count, const char *const *functions,
                               const char *const *files, const uint32_t *lines) {
    if (first_id == 0 || count > MAX_FRAME_ID || first_id > MAX_FRAME_ID - count)
        return -1;
    int rc = 0;
    pthread_mutex_lock(&tables_lock);
    if (gmt_grow((void **)&frames, &frames_cap, (size_t)first_id + count, sizeof *frames) != 0)
        rc = -1;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        torch_frame *f = &frames[first_id + i];
        if (f->function)
            continue;
        const char *fn = functions && functions[i] ? functions[i] : "";
        const char *file = files && files[i] ? files[i] : "";
        char *fn_copy = strdup(fn), *file_copy = strdup(file);
        if (!fn_copy || !file_copy) {
            free(fn_copy);
            free(file_copy);
            rc = -1;
            break;
        }
        f->line = lines ? lines[i] : 0;
        f->kind = is_python_file(file) ? TRACE_FRAME_PYTHON : TRACE_FRAME_OTHER;
        f->file = file_copy;
        f->function = fn_copy; /* last: marks the frame defined */
    }
    pthread_mutex_unlock(&tables_lock);
    return rc;
}

int memrec_torch_define_stacks(uint32_t first_id, uint32_t count, const uint32_t *depths,
                               const uint32_t *frame_ids) {
    if (first_id == 0 || count > MAX_STACK_ID || first_id > MAX_STACK_ID - count)
        return -1;
    int rc = 0;
    uint64_t tokens[REC_STACK_MAX_DEPTH];
    pthread_mutex_lock(&tables_lock);
    uint64_t prefix = prefix_locked();
    if (gmt_grow((void **)&stack_nodes, &stacks_cap, (size_t)first_id + count, sizeof *stack_nodes))
        rc = -1;
    size_t at = 0;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        uint32_t depth = depths[i], kept = 0;
        int known = prefix != 0;
        for (uint32_t k = 0; k < depth; k++) {
            uint32_t id = frame_ids[at + k];
            if (id == 0 || id >= frames_cap || !frames[id].function)
                known = 0;
            else if (kept < REC_STACK_MAX_DEPTH) /* innermost frames first */
                tokens[kept++] = prefix | id;
        }
        at += depth;
        uint32_t node = known ? rec_stack_intern(tokens, kept) : 0;
        if (!known && depth)
            rc = -1;
        stack_nodes[first_id + i] = node;
    }
    pthread_mutex_unlock(&tables_lock);
    return rc;
}

/* ---- time ------------------------------------------------------------------ */

/* Under tables_lock: the offset between Unix time and the trace clock, from
 * the tightest of a few paired readings; read again when it is more than a
 * second old, so an NTP step or slew does not shift PyTorch's events against
 * CUPTI's for the rest of a long run. */
static void anchor_locked(void) {
    static uint64_t anchored_at;
    uint64_t serial = rec_session_serial();
    if (serial == anchor_serial && rec_clock_ns() - anchored_at < 1000000000ull)
        return;
    anchored_at = rec_clock_ns();
    int64_t best_gap = INT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t before = rec_clock_ns();
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        uint64_t after = rec_clock_ns();
        int64_t gap = (int64_t)(after - before);
        if (gap < best_gap) {
            best_gap = gap;
            int64_t wall_ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec;
            wall_to_trace_ns = (int64_t)(before + (after - before) / 2) - wall_ns;
        }
    }
    anchor_serial = serial;
}

static uint64_t trace_time_locked(uint64_t time_us, uint64_t now) {
    int64_t ts = (int64_t)(time_us * 1000) + wall_to_trace_ns;
    if (ts <= 0)
        return 1; /* 0 would mean "now" to rec_emit_event */
    return (uint64_t)ts > now ? now : (uint64_t)ts;
}

uint64_t rec_torch_trace_time(uint64_t time_us) {
    pthread_mutex_lock(&tables_lock);
    anchor_locked();
    uint64_t ts = trace_time_locked(time_us, rec_clock_ns());
    pthread_mutex_unlock(&tables_lock);
    return ts;
}

/* ---- emit ------------------------------------------------------------------ */

/* An annotation entry: a late range marker (ranges pair by name). */
static int emit_range(const uint64_t *f, uint64_t ts, const char *name) {
    if (!name)
        return 0;
    uint64_t id = 1469598103934665603ull; /* FNV-1a of the name */
    for (const char *c = name; *c; c++)
        id = (id ^ (uint8_t)*c) * 1099511628211ull;
    int start = f[MEMREC_TORCH_ACTION] == MEMREC_TORCH_RANGE_START;
    rec_late_emit_marker(start ? TRACE_MARK_RANGE_START : TRACE_MARK_RANGE_END, "torch", name, id,
                         0, ts);
    return 1;
}

/* One entry, by torch_history.h's rules: 1 when it became an event. */
static int emit_one(const uint64_t *f, uint64_t ts, uint32_t stack) {
    gmt_torch_entry e = {.action = f[MEMREC_TORCH_ACTION],
                         .addr = f[MEMREC_TORCH_ADDR],
                         .size = f[MEMREC_TORCH_SIZE],
                         .stream = f[MEMREC_TORCH_STREAM],
                         .device_free = f[MEMREC_TORCH_DEVICE_FREE],
                         .ts_ns = ts,
                         .device = (uint32_t)f[MEMREC_TORCH_DEVICE],
                         .stack_id = stack,
                         .pool = f[MEMREC_TORCH_POOL]};
    trace_event ev;
    trace_counter c;
    if (!gmt_torch_event(&e, &ev))
        return 0;
    if (gmt_torch_counter(&e, &c))
        rec_late_emit_counter(&c);
    if (ev.op == TRACE_OP_MAP && ev.size) { /* an event per page, as the importer writes them */
        uint64_t page = gmt_torch_map_page(ev.size), end = ev.addr + ev.size;
        for (uint64_t at = ev.addr; at < end; at += page) {
            trace_event one = ev;
            one.addr = at;
            one.size = one.requested = end - at < page ? end - at : page;
            rec_late_emit_event(&one);
        }
        return 1;
    }
    rec_late_emit_event(&ev); /* tid 0: the history does not say which thread */
    return 1;
}

uint32_t memrec_torch_emit(const uint64_t *fields, uint32_t count) {
    if (!fields || !rec_enabled())
        return 0;
    uint32_t emitted = 0;
    uint32_t stacks[EMIT_CHUNK];
    uint64_t times[EMIT_CHUNK];
    const char *names[EMIT_CHUNK];
    rec_late_open(); /* normally open since memrec_torch_history_on */
    for (uint32_t start = 0; start < count; start += EMIT_CHUNK) {
        uint32_t n = count - start > EMIT_CHUNK ? EMIT_CHUNK : count - start;
        const uint64_t *chunk = fields + (size_t)start * MEMREC_TORCH_FIELDS;
        /* The lock covers the table lookups only: the writer resolves
         * frames under it while this thread fills its buffer. */
        pthread_mutex_lock(&tables_lock);
        anchor_locked();
        uint64_t now = rec_clock_ns();
        for (uint32_t i = 0; i < n; i++) {
            const uint64_t *f = chunk + (size_t)i * MEMREC_TORCH_FIELDS;
            uint64_t sid = f[MEMREC_TORCH_STACK];
            uint64_t action = f[MEMREC_TORCH_ACTION];
            names[i] = NULL;
            if (action == MEMREC_TORCH_RANGE_START || action == MEMREC_TORCH_RANGE_END) {
                stacks[i] = 0; /* the id is a frame: its function names the range */
                if (sid < frames_cap)
                    names[i] = frames[sid].function; /* never freed */
            } else {
                stacks[i] = sid && sid < stacks_cap ? stack_nodes[sid] : 0;
            }
            times[i] = trace_time_locked(f[MEMREC_TORCH_TIME_US], now);
        }
        pthread_mutex_unlock(&tables_lock);
        for (uint32_t i = 0; i < n; i++) {
            const uint64_t *f = chunk + (size_t)i * MEMREC_TORCH_FIELDS;
            uint64_t action = f[MEMREC_TORCH_ACTION];
            if (action == MEMREC_TORCH_RANGE_START || action == MEMREC_TORCH_RANGE_END)
                emitted += (uint32_t)emit_range(f, times[i], names[i]);
            else
                emitted += (uint32_t)emit_one(f, times[i], stacks[i]);
        }
    }
    return emitted;
}

int memrec_torch_recording(void) { return rec_enabled(); }

void memrec_torch_history_on(void) {
    if (rec_enabled())
        rec_late_open();
}

void memrec_torch_history_off(void) { rec_late_close(); }

void memrec_torch_drained(uint64_t time_us) {
    if (rec_enabled())
        rec_late_complete(rec_torch_trace_time(time_us));
}

void memrec_torch_expect_drain(uint64_t within_ms) {
    rec_late_expect(within_ms > UINT64_MAX / 1000000u ? UINT64_MAX : within_ms * 1000000u);
}

void memrec_torch_device(uint32_t device, uint64_t total_bytes, const char *name) {
    rec_emit_device(device, total_bytes, name);
}

void memrec_torch_warn(uint32_t code, const char *message) {
    if (message)
        rec_warn_once(&warned[code & 63], "%s", message);
}

int memrec_torch_program_steps(void) { return rec_program_marked_steps(); }

static void optimizer_step_marker(trace_marker_kind kind, int64_t step) {
    char name[32];
    snprintf(name, sizeof name, "step %" PRId64, step);
    rec_emit_marker(kind, REC_OPTIMIZER_DOMAIN, name, 0, step);
}

int memrec_torch_optimizer_step(int64_t ended, int64_t begun) {
    if (!rec_enabled() || rec_program_marked_steps())
        return 0;
    if (ended >= 0)
        optimizer_step_marker(TRACE_MARK_STEP_END, ended);
    if (begun >= 0)
        optimizer_step_marker(TRACE_MARK_STEP_BEGIN, begun);
    return 1;
}

int memrec_torch_allocator_settings(const char *conf) {
    char name[REC_TEXT_MAX + 1];
    int n = conf ? snprintf(name, sizeof name, "%s%s", TRACE_TORCH_SETTINGS_PREFIX, conf) : -1;
    if (n < 0 || (size_t)n >= sizeof name)
        return 0; /* a mark's name holds REC_TEXT_MAX bytes: a cut configuration would mislead */
    if (!rec_enabled())
        return 0;
    rec_emit_marker(TRACE_MARK_MARK, TRACE_ALLOCATOR_DOMAIN, name, 0, 0);
    return 1;
}

int memrec_torch_tensor_names(uint32_t count, const uint64_t *addrs, const char *const *texts) {
    if (!addrs || !texts || !rec_enabled() || rec_late_watermark() == UINT64_MAX)
        return 0; /* not recording, or the lane is not open in this session */
    uint64_t now = rec_clock_ns();
    int written = 0;
    for (uint32_t i = 0; i < count; i++) {
        const char *text = texts[i];
        /* a mark's name holds REC_TEXT_MAX bytes: a cut name would name another tensor */
        if (!addrs[i] || !text || !text[0] || strnlen(text, REC_TEXT_MAX + 1) > REC_TEXT_MAX)
            continue;
        rec_late_emit_marker(TRACE_MARK_MARK, TRACE_TENSOR_DOMAIN, text, 0, (int64_t)addrs[i], now);
        written++;
    }
    return written;
}

void memrec_torch_report(const char *message) {
    if (message)
        rec_warn_once(NULL, "%s", message);
}
