/* trace_format.h — the one codec for gpumemtrace traces: record types, the
 * streaming writer and the streaming reader.
 *
 * Everyone who touches a trace goes through this header: the recorder, the
 * synthetic generator, the importers, the analyzer and the tests. The byte
 * layout it implements is specified in schema/TRACE_FORMAT.md; this header is
 * the C view of the same records.
 *
 * Ownership: a trace_writer / trace_reader is created by *_open and owned by
 * the caller until *_close. Pointers inside a record returned by the reader
 * (strings, build-ids, symbol entries) point into the reader's buffers and
 * stay valid only until the next trace_reader_next() call.
 *
 * Errors are returned, never printed: functions return 0 on success and -1 on
 * failure, with a one-line message in trace_writer_error()/the err buffer. */
#ifndef GMT_TRACE_FORMAT_H
#define GMT_TRACE_FORMAT_H

#include "gmt_vocab.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The format version this build writes and the newest it reads. */
#define TRACE_FORMAT_VERSION 2

/* ---- record vocabulary ------------------------------------------------ */

/* The enums below are generated from gmt_vocab.h, where each value is
 * defined once with its SQL name and meaning. Numeric values are part of the
 * file format. */
#define GMT_VOCAB_ENUM(prefix, id, code, name, meaning) prefix##id = code,
#define GMT_VOCAB_ONE(id, code, name, meaning) +1

#define X(id, code, name, meaning) GMT_VOCAB_ENUM(TRACE_OP_, id, code, name, meaning)
typedef enum trace_op { TRACE_OP_LIST(X) TRACE_OP_COUNT } trace_op;
#undef X
/* The database's own ops (DB_OP_SEED, ...): never in a trace. */
#define X(id, code, name, meaning) GMT_VOCAB_ENUM(DB_OP_, id, code, name, meaning)
typedef enum db_op { DB_OP_LIST(X) DB_OP_END } db_op;
#undef X
#define X(id, code, name, meaning) GMT_VOCAB_ENUM(TRACE_LEVEL_, id, code, name, meaning)
typedef enum trace_level { TRACE_LEVEL_LIST(X) TRACE_LEVEL_COUNT } trace_level;
#undef X
#define X(id, code, name, meaning) GMT_VOCAB_ENUM(TRACE_KIND_, id, code, name, meaning)
typedef enum trace_mem_kind { TRACE_KIND_LIST(X) TRACE_KIND_COUNT } trace_mem_kind;
#undef X
#define X(id, code, name, meaning) GMT_VOCAB_ENUM(TRACE_SOURCE_, id, code, name, meaning)
typedef enum trace_source { TRACE_SOURCE_LIST(X) TRACE_SOURCE_COUNT } trace_source;
#undef X
#define X(id, code, name, meaning) GMT_VOCAB_ENUM(TRACE_MARK_, id, code, name, meaning)
typedef enum trace_marker_kind { TRACE_MARK_LIST(X) TRACE_MARK_COUNT } trace_marker_kind;
#undef X
#define X(id, code, name, meaning) GMT_VOCAB_ENUM(TRACE_COUNTER_, id, code, name, meaning)
typedef enum trace_counter_kind { TRACE_COUNTER_LIST(X) TRACE_COUNTER_COUNT } trace_counter_kind;
#undef X

#ifndef __cplusplus
/* Each list is dense (codes 0 .. COUNT-1, written in order: test_vocab checks
 * the order), so a code indexes its name table; the database's own op codes
 * come after every trace op, so a new trace op cannot silently take one. */
_Static_assert(0 TRACE_OP_LIST(GMT_VOCAB_ONE) == TRACE_OP_COUNT, "TRACE_OP_LIST is not dense");
_Static_assert(0 TRACE_LEVEL_LIST(GMT_VOCAB_ONE) == TRACE_LEVEL_COUNT,
               "TRACE_LEVEL_LIST is not dense");
_Static_assert(0 TRACE_KIND_LIST(GMT_VOCAB_ONE) == TRACE_KIND_COUNT,
               "TRACE_KIND_LIST is not dense");
_Static_assert(0 TRACE_SOURCE_LIST(GMT_VOCAB_ONE) == TRACE_SOURCE_COUNT,
               "TRACE_SOURCE_LIST is not dense");
_Static_assert(0 TRACE_MARK_LIST(GMT_VOCAB_ONE) == TRACE_MARK_COUNT,
               "TRACE_MARK_LIST is not dense");
_Static_assert(0 TRACE_COUNTER_LIST(GMT_VOCAB_ONE) == TRACE_COUNTER_COUNT,
               "TRACE_COUNTER_LIST is not dense");
_Static_assert((int)DB_OP_SEED >= (int)TRACE_OP_COUNT,
               "a trace op took the database's seed code: give DB_OP_SEED a free code");
_Static_assert(TRACE_OP_COUNT <= 128 && DB_OP_END <= 256, "ops are stored in a byte");
#endif

/* The allocator's configuration rides in marks of domain TRACE_ALLOCATOR_DOMAIN
 * (TRACE_FORMAT.md, "Markers and counters"): the environment's at the start,
 * named "PYTORCH_CUDA_ALLOC_CONF=<text>" or "PYTORCH_ALLOC_CONF=<text>", and the
 * settings PyTorch itself reports it runs with (they include run-time
 * torch.cuda.memory._set_allocator_settings calls), named
 * TRACE_TORCH_SETTINGS_PREFIX "<text>" in the same syntax, marked when first
 * seen and at each change. */
#define TRACE_ALLOCATOR_DOMAIN "memrec.allocator"
#define TRACE_TORCH_SETTINGS_PREFIX "torch.allocator_settings="

/* Tensor names ride in marks of domain TRACE_TENSOR_DOMAIN (TRACE_FORMAT.md,
 * "Tensor names"): `value` is the address of a tensor's storage, and the
 * name is "<category> <name>[ <count>]": a category of BLOCK_CATEGORY_LIST
 * (what the program knows the tensor is: parameter, gradient,
 * optimizer_state, ...), the tensor's name ("layers.3.attn.q_proj.weight",
 * "...weight.grad", "...weight.exp_avg"), and, when several tensors share the
 * storage (a DDP bucket), how many. Text whose first word is no category is
 * a name alone (a snapshot's user metadata): the analyzer then decides the
 * category. The name binds to the block live at that address at the mark. */
#define TRACE_TENSOR_DOMAIN "memrec.tensor"

/* Warning kinds of the database (warnings.code holds the name). */
#define X(id, name, meaning) DB_WARNING_##id,
typedef enum db_warning { DB_WARNING_LIST(X) DB_WARNING_COUNT } db_warning;
#undef X

typedef enum trace_frame_kind {
    TRACE_FRAME_NATIVE = 0, /* ip in a module; names come from SYMBOL records */
    TRACE_FRAME_PYTHON = 1, /* Python frame: function, file, line known */
    TRACE_FRAME_OTHER = 2,  /* already symbolized frame from an importer (e.g. a snapshot) */
    TRACE_FRAME_COUNT
} trace_frame_kind;

typedef enum trace_record_kind {
    TRACE_REC_PROCESS = 2,
    TRACE_REC_DEVICE = 3,
    TRACE_REC_MODULE = 4,
    TRACE_REC_STRING = 5,
    TRACE_REC_FRAME = 6,
    TRACE_REC_SYMBOL = 7,
    TRACE_REC_STACK = 8,
    TRACE_REC_MARKER = 9,
    TRACE_REC_COUNTER = 10,
    TRACE_REC_THREAD = 11,
    TRACE_REC_END = 12,
    TRACE_REC_EVENT = 128, /* memory event: the hot record, tag bytes 0x80..0xFF */
} trace_record_kind;

/* Bytes as stored in a record: not NUL-terminated in the file; the reader
 * NUL-terminates its copy, so `ptr` is also a C string. */
typedef struct trace_bytes {
    const char *ptr;
    uint32_t len;
} trace_bytes;

/* One memory event. `size` is the allocator's accounted (rounded) size;
 * `requested` what the program asked for (equal to size when unknown). */
typedef struct trace_event {
    uint64_t ts_ns;
    uint64_t addr;
    uint64_t size;
    uint64_t requested;
    uint64_t stream;   /* CUstream handle or allocator stream id; 0 = default */
    uint64_t pool;     /* async pool handle / allocator pool id; 0 = none */
    uint32_t stack_id; /* 0 = no stack */
    uint32_t tid;
    uint32_t device;
    uint8_t op;     /* trace_op */
    uint8_t level;  /* trace_level */
    uint8_t kind;   /* trace_mem_kind */
    uint8_t source; /* trace_source */
} trace_event;

typedef struct trace_process {
    uint32_t pid, ppid;
    int32_t rank;             /* -1 = unknown */
    uint64_t wall_anchor_ns;  /* Unix time (ns) at trace time `clock_anchor_ns` */
    uint64_t clock_anchor_ns; /* trace clock reading taken with wall_anchor_ns */
    trace_bytes host, cmdline, clock_source, producer; /* producer: "memrec 0.1", "synth", ... */
} trace_process;

typedef struct trace_device {
    uint32_t device;
    uint64_t total_bytes;
    trace_bytes name;
} trace_device;

typedef struct trace_module {
    uint32_t module_id; /* 1-based */
    uint64_t base, size;
    trace_bytes path;
    trace_bytes build_id; /* raw bytes of the GNU build-id note; may be empty */
} trace_module;

typedef struct trace_string {
    uint32_t string_id; /* 1-based; 0 means "no string" everywhere */
    trace_bytes text;
} trace_string;

typedef struct trace_frame {
    uint32_t frame_id;             /* 1-based */
    uint8_t kind;                  /* trace_frame_kind */
    uint32_t module_id;            /* native: module of ip; 0 = unknown */
    uint64_t ip;                   /* native: absolute instruction pointer */
    uint32_t function_id, file_id; /* string ids; 0 = unknown (native before symbolization) */
    uint32_t line;
} trace_frame;

/* Symbolization of a native frame: the inline chain at its ip, innermost
 * (the inlined callee) first, the function that really holds the ip last. */
#define TRACE_SYMBOL_MAX_INLINE 32
typedef struct trace_symbol_entry {
    uint32_t function_id, file_id, line;
} trace_symbol_entry;

typedef struct trace_symbol {
    uint32_t frame_id;
    uint32_t count;
    const trace_symbol_entry *entries;
} trace_symbol;

/* A stack is a node of a trie: the path from the node to the root, read
 * innermost first, is the call stack. 0 is the empty stack (the root). */
typedef struct trace_stack {
    uint32_t stack_id, parent_id, frame_id;
} trace_stack;

typedef struct trace_marker {
    uint64_t ts_ns;
    uint64_t range_id; /* pairs RANGE_START/END; 0 otherwise */
    int64_t value;     /* step number for STEP_BEGIN/END; payload otherwise */
    uint32_t tid;
    uint32_t domain_id, name_id; /* string ids */
    uint8_t kind;                /* trace_marker_kind */
} trace_marker;

typedef struct trace_counter {
    uint64_t ts_ns;
    uint64_t key; /* pool handle for pool counters, 0 otherwise */
    uint64_t value;
    uint32_t device;
    uint8_t kind; /* trace_counter_kind */
} trace_counter;

typedef struct trace_thread {
    uint32_t tid, name_id;
} trace_thread;

/* Calls the producer saw and did not record as memory events (TRACE_FORMAT.md, "Calls
 * counted, not recorded"): memory of other processes mapped here, CUDA graph memory, multicast
 * bindings. One entry per kind of call, in the END record (version 2 on). */
#define TRACE_END_MAX_CALLS 64      /* entries in one END record */
#define TRACE_END_MAX_CALL_NAME 255 /* bytes of an entry's name; the writer cuts longer ones */
typedef struct trace_call_count {
    uint32_t call_id; /* the CUPTI driver-API callback id (CUpti_driver_api_trace_cbid) */
    trace_bytes name; /* the call's name as CUPTI spells it: "cuGraphAddMemAllocNode" */
    uint64_t calls;   /* successful calls of it that were counted */
    uint64_t bytes;   /* the bytes those calls named; 0 when the call names none */
} trace_call_count;

#define TRACE_END_CLEAN 1u /* written by an orderly shutdown */
typedef struct trace_end {
    uint64_t ts_ns;
    uint64_t events;  /* memory events the writer wrote */
    uint64_t dropped; /* events the producer could not record (buffers full) */
    uint32_t flags;
    /* The counted calls: n_calls (<= TRACE_END_MAX_CALLS) entries, each call_id once; none
     * in a version 1 trace. From the reader they live until the next trace_reader_next. */
    uint32_t n_calls;
    const trace_call_count *calls;
} trace_end;

typedef struct trace_record {
    trace_record_kind kind;
    union {
        trace_event event;
        trace_process process;
        trace_device device;
        trace_module module;
        trace_string string;
        trace_frame frame;
        trace_symbol symbol;
        trace_stack stack;
        trace_marker marker;
        trace_counter counter;
        trace_thread thread;
        trace_end end;
    } u;
} trace_record;

/* Names used in text, JSON and SQL ("alloc", "segment", "device", ...), from
 * gmt_vocab.h; "unknown" for a code outside the list. trace_op_name also
 * names the database's own ops ("seed"). */
const char *trace_op_name(unsigned op);
const char *trace_level_name(unsigned level);
const char *trace_kind_name(unsigned kind);
const char *trace_source_name(unsigned source);
const char *trace_marker_kind_name(unsigned kind);
const char *trace_counter_kind_name(unsigned kind);
const char *trace_record_kind_name(unsigned kind);
const char *db_warning_name(unsigned warning);

/* The code of a vocabulary word, for text that names it: `list` is "op",
 * "level", "kind", "source", "marker", "counter" or "warning", `name` its SQL
 * name ("alloc"). Returns the code, or -1 when the list or the name is not
 * in gmt_vocab.h. */
int gmt_vocab_code(const char *list, size_t list_len, const char *name, size_t name_len);

/* ---- writer ------------------------------------------------------------ */

typedef struct trace_writer trace_writer;

typedef struct trace_writer_options {
    int zstd_level;     /* default 1 (the recorder's speed setting) */
    size_t chunk_bytes; /* uncompressed bytes per zstd frame; default 256 KiB */
} trace_writer_options;

/* Opens `path` for writing ("-" is not accepted: a trace must be seekable for
 * nothing, but we keep it a file so a killed process leaves a usable one).
 * `opt` may be NULL. On failure returns NULL and fills err. */
trace_writer *trace_writer_open(const char *path, const trace_writer_options *opt, char *err,
                                size_t errlen);
/* Same, on an already open file descriptor, which the writer then owns. */
trace_writer *trace_writer_open_fd(int fd, const trace_writer_options *opt, char *err,
                                   size_t errlen);

/* Continues a finished trace (the symbolizer adds SYMBOL records after the
 * run): the writer takes `fd`, positioned at the end of the existing trace
 * (O_APPEND or after lseek), writes no file header, numbers its frames and
 * ids after what `st` says the trace already holds, and writes no END record
 * on close, so the trace's own END stays the word on how the recording
 * ended. Ids it interns are new even when an equal value is already in the
 * file (the reader accepts duplicates). Owns fd as trace_writer_open_fd. */
typedef struct trace_append_state {
    uint64_t frames; /* zstd frames already in the file: the next sequence number */
    uint64_t events; /* memory events already in the file (incl. lost ones) */
    uint32_t next_string_id, next_frame_id, next_stack_id; /* first free ids (>= 1) */
} trace_append_state;
trace_writer *trace_writer_open_append(int fd, const trace_writer_options *opt,
                                       const trace_append_state *st, char *err, size_t errlen);

/* A writer that writes nothing: it hands every record to `sink`, as a reader of the trace it
 * would have written would yield it (the same records in the same order, text NUL-terminated
 * and cut at the cap, an event's op and level as the wire keeps them, the END record at
 * close), and pays for no encoding, compression or file. For a producer and a consumer in one
 * process: a snapshot replayed as it is converted. Values the format has no code for (a kind
 * or source out of range) are the caller's error here as in a file, where the reader drops
 * them as damage; a sink gets them as given. A sink returning non-zero fails the writer ("its
 * reader stopped"; the sink keeps its own reason). The record and its text are valid during
 * the call only (the writer may not be called from the sink). */
typedef int (*trace_record_sink)(void *ctx, const trace_record *rec);
trace_writer *trace_writer_open_sink(trace_record_sink sink, void *ctx, char *err, size_t errlen);

/* Each returns 0 or -1 (error in trace_writer_error; once failed, the writer
 * stays failed and every later call returns -1 without writing). */
int trace_writer_event(trace_writer *w, const trace_event *ev);
int trace_writer_process(trace_writer *w, const trace_process *p);
int trace_writer_device(trace_writer *w, const trace_device *d);
int trace_writer_module(trace_writer *w, const trace_module *m);
int trace_writer_symbol(trace_writer *w, const trace_symbol *s);
int trace_writer_marker(trace_writer *w, const trace_marker *m);
int trace_writer_counter(trace_writer *w, const trace_counter *c);
int trace_writer_thread(trace_writer *w, const trace_thread *t);

/* Interning: each returns the id of an equal earlier value, or writes the
 * definition record and returns a new id. 0 on error (and for the empty
 * stack: trace_writer_stack(w, 0, 0) is never needed, 0 is the root). */
uint32_t trace_writer_string(trace_writer *w, const char *s, size_t len);
uint32_t trace_writer_frame(trace_writer *w, const trace_frame *f); /* f->frame_id ignored */
uint32_t trace_writer_stack(trace_writer *w, uint32_t parent_id, uint32_t frame_id);

/* Ends the current zstd frame and writes it out (explicit flush: the
 * recorder calls it at least once a second). A no-op when nothing is pending. */
int trace_writer_flush(trace_writer *w);

/* Writes the END record, flushes, closes the file and frees the writer.
 * `end` may be NULL (an END record with the writer's own counts is written).
 * Its counted calls are the caller's: more than TRACE_END_MAX_CALLS, or a
 * call_id twice, fail the close (no END is written). Returns 0, or -1 when
 * anything failed along the way (err filled). The writer is freed in both
 * cases. */
int trace_writer_close(trace_writer *w, const trace_end *end, char *err, size_t errlen);

const char *trace_writer_error(const trace_writer *w);
uint64_t trace_writer_events(const trace_writer *w);
uint64_t trace_writer_bytes_written(const trace_writer *w); /* compressed bytes */

/* ---- reader ------------------------------------------------------------ */

typedef struct trace_reader trace_reader;

/* What went wrong while reading, for `memanalyze info` and friends. */
typedef struct trace_reader_stats {
    uint64_t file_bytes;
    uint64_t frames;         /* zstd frames decoded */
    uint64_t corrupt_frames; /* frames skipped (reported as warnings) */
    uint64_t events;         /* memory events returned */
    uint64_t records;        /* records of any kind returned */
    uint64_t lost_events;    /* events in skipped frames, known from later frames */
    int truncated;           /* the file ends inside a frame */
    int clean_end;           /* an END record with TRACE_END_CLEAN was read */
} trace_reader_stats;

/* Opens and checks the start of a trace. Fails (NULL, err filled, one line)
 * for: a missing or unreadable file, an empty file, a file that is not a
 * gpumemtrace trace, and a trace of a newer format version. */
trace_reader *trace_reader_open(const char *path, char *err, size_t errlen);

/* Returns 1 and fills *rec, 0 at the end of the data, -1 on an I/O error
 * (message in trace_reader_error). Damage in the file is not an error: the
 * reader skips a corrupt frame, records a warning and goes on. */
int trace_reader_next(trace_reader *r, trace_record *rec);

/* Follows a file that is still being written (memanalyze watch): from now on the end of the
 * data is where the file ends at the moment; trace_reader_next returns 0 there, or before a
 * frame not yet complete, without the truncation warning, and a later call reads on from
 * that frame's start (the frames appended since). A reader whose first frame was incomplete
 * at open stays at its end: open it again. */
void trace_reader_follow(trace_reader *r);

const trace_reader_stats *trace_reader_get_stats(const trace_reader *r);
/* Bytes of the file consumed so far (for progress reports). */
uint64_t trace_reader_position(const trace_reader *r);
uint32_t trace_reader_version(const trace_reader *r);

/* Warnings collected so far ("corrupt zstd frame at byte 1234: ..."; the
 * truncation warning "truncated after N events" once the end is reached).
 * At most TRACE_READER_MAX_WARNINGS are kept; the count keeps counting. */
#define TRACE_READER_MAX_WARNINGS 64
size_t trace_reader_warning_count(const trace_reader *r);
const char *trace_reader_warning(const trace_reader *r, size_t i);
/* What warning i is: DB_WARNING_TRUNCATED or DB_WARNING_CORRUPT_FRAME. */
db_warning trace_reader_warning_kind(const trace_reader *r, size_t i);
const char *trace_reader_error(const trace_reader *r);

void trace_reader_close(trace_reader *r);

#ifdef __cplusplus
}
#endif
#endif
