/* snapshot.h — a PyTorch CUDA memory snapshot as plain C structs.
 *
 * The input is the dict that torch.cuda.memory._snapshot() returns and
 * _dump_snapshot() pickles: `segments` (the allocator's state when the
 * snapshot was taken: segments and the blocks tiling them), `device_traces`
 * (per device, the ring buffer of allocator events before it),
 * `external_annotations` and `allocator_settings` (newer PyTorch). Every
 * format generation is read: blocks without `address` (their address is
 * accumulated from the segment's, as PyTorch's viewer does), blocks with a
 * 2.0-style `history` instead of `frames`, entries without `frames` or
 * `time_us`, and the newest keys (compile_context, user_metadata). A bare
 * list of segments (torch.cuda.memory_snapshot()) is read as a snapshot with
 * no trace. Unknown keys are ignored; a required key missing or of the wrong
 * type fails with one line naming it and where it is
 * ("snapshot: segments[12].blocks[3]: 'size' missing").
 *
 * user_metadata is the text the program set with
 * torch.cuda.memory._set_memory_metadata() (PyTorch's TraceEntry::user_metadata_,
 * a thread-local string the allocator copies into every trace entry it records,
 * "" when none is set). It is kept only when it is a non-empty str: "", None
 * and values of any other type read as absent (it names memory, it never decides
 * how much). Blocks carry no such key in PyTorch's snapshots so far; one that
 * does is read the same way.
 *
 * Stack traces are interned: each distinct frame (name, filename, line) is
 * stored once, each distinct stack once as an array of frame ids, innermost
 * first as PyTorch lists them. Stack 0 is the empty stack.
 *
 * Ownership: snapshot_from_pickle copies everything it keeps (strings too),
 * so the pickle document (and its input buffer) may be freed right after; a snapshot is freed by
 * snapshot_free. This module knows nothing of the trace format: the importer
 * turns a snapshot into trace events. */
#ifndef GMT_SNAPSHOT_H
#define GMT_SNAPSHOT_H

#include "pickle.h"
#include "torch_history.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* snapshot_entry.action: PyTorch's actions are model/torch_history.h's
 * gmt_torch_action (GMT_TORCH_ALLOC, ..., GMT_TORCH_OOM, GMT_TORCH_SNAPSHOT);
 * an action this reader does not know is SNAPSHOT_ACTION_OTHER (its text in
 * action_name). */
#define SNAPSHOT_ACTION_OTHER GMT_TORCH_ACTION_COUNT
#define SNAPSHOT_ACTION_COUNT (SNAPSHOT_ACTION_OTHER + 1)

typedef enum snapshot_block_state {
    SNAPSHOT_BLOCK_ACTIVE_ALLOCATED = 0,
    SNAPSHOT_BLOCK_ACTIVE_PENDING_FREE, /* also read from "active_awaiting_free" */
    SNAPSHOT_BLOCK_INACTIVE,
    SNAPSHOT_BLOCK_OTHER
} snapshot_block_state;

typedef enum snapshot_pool {
    SNAPSHOT_POOL_LARGE = 0,
    SNAPSHOT_POOL_SMALL,
    SNAPSHOT_POOL_OTHER
} snapshot_pool;

typedef enum snapshot_stage {
    SNAPSHOT_STAGE_START = 0,
    SNAPSHOT_STAGE_END,
    SNAPSHOT_STAGE_OTHER
} snapshot_stage;

typedef struct snapshot_frame {
    const char *name, *filename;
    int64_t line; /* PyTorch writes 2^64-1 for "unknown": that reads as -1 */
} snapshot_frame;

typedef struct snapshot_stack {
    uint32_t first; /* index into snapshot.stack_frames */
    uint32_t depth;
} snapshot_stack;

/* snapshot_entry_kind.flags */
#define SNAPSHOT_HAS_TIME 1u   /* time_us was present */
#define SNAPSHOT_HAS_FRAMES 2u /* frames was present (possibly empty) */

/* What a trace entry says besides its address, size, time and stack. A run has few distinct
 * ones (an action on one of a few streams, a name now and then), so each is stored once
 * (snapshot.entry_kinds) and an entry is 32 bytes: a million entries are the largest thing a
 * snapshot's reading touches, and fresh memory is what it spends most on. */
typedef struct snapshot_entry_kind {
    uint64_t stream;          /* the cudaStream_t as an integer */
    uint64_t device_free;     /* oom only: bytes the driver reported free */
    uint32_t action_name;     /* string id of the action text (for SNAPSHOT_ACTION_OTHER) */
    uint32_t compile_context; /* string id, 0 when absent */
    uint32_t user_metadata;   /* string id, 0 when absent, empty or not a str */
    uint8_t action;           /* gmt_torch_action or SNAPSHOT_ACTION_OTHER */
    uint8_t flags;
} snapshot_entry_kind;

typedef struct snapshot_entry {
    uint64_t addr; /* 0 for oom, which has device_free instead */
    uint64_t size;
    int64_t time_us; /* 0 when absent */
    uint32_t stack;  /* stack id */
    uint32_t kind;   /* index into snapshot.entry_kinds: see snapshot_kind */
} snapshot_entry;

typedef struct snapshot_device {
    snapshot_entry *entries; /* oldest first, as recorded */
    size_t entry_count;
} snapshot_device;

/* snapshot_block.flags */
#define SNAPSHOT_BLOCK_ADDRESS_COMPUTED 1u /* no address in the file: accumulated */
#define SNAPSHOT_BLOCK_HAS_REQUESTED 2u    /* requested_size came from the file */
#define SNAPSHOT_BLOCK_HAS_FRAMES 4u

typedef struct snapshot_block {
    uint64_t address, size;
    uint64_t requested_size; /* == size when absent */
    uint32_t stack;
    uint32_t user_metadata; /* string id, 0 when absent, empty or not a str */
    uint8_t state;          /* snapshot_block_state */
    uint8_t flags;
} snapshot_block;

/* snapshot_segment.flags */
#define SNAPSHOT_SEGMENT_HAS_REQUESTED 1u
#define SNAPSHOT_SEGMENT_HAS_POOL_ID 2u
#define SNAPSHOT_SEGMENT_HAS_FRAMES 4u

typedef struct snapshot_segment {
    int64_t device;
    uint64_t address, total_size, allocated_size, active_size;
    uint64_t requested_size; /* 0 when absent */
    uint64_t stream;
    int64_t pool_id[2]; /* segment_pool_id: (0, 0) outside CUDA-graph pools */
    uint32_t stack;
    uint8_t pool;         /* snapshot_pool, from segment_type */
    int8_t is_expandable; /* 1, 0, or -1 when absent */
    uint8_t flags;
    snapshot_block *blocks; /* in address order, as listed */
    size_t block_count;
} snapshot_segment;

typedef struct snapshot_annotation {
    int64_t device; /* -1 when absent */
    uint8_t stage;  /* snapshot_stage */
    const char *stage_name, *name;
    int64_t time_us;
} snapshot_annotation;

/* allocator_settings, when present; fields absent from it keep the
 * defaults shown. */
typedef struct snapshot_settings {
    int present;
    const char *alloc_conf;              /* PYTORCH_CUDA_ALLOC_CONF; NULL */
    int64_t max_split_size;              /* -1 (unlimited) */
    int has_max_split_size;              /* the key was there (with an int) */
    double garbage_collection_threshold; /* 0 */
    int has_garbage_collection_threshold;
    int expandable_segments;               /* -1 (unknown), else 0/1 */
    int release_lock_on_cudamalloc;        /* -1, else 0/1 */
    int pinned_use_cuda_host_register;     /* -1, else 0/1 */
    int64_t pinned_num_register_threads;   /* -1 */
    int graph_capture_record_stream_reuse; /* -1, else 0/1 */
    size_t roundup_count;                  /* roundup_power2_divisions */
    struct snapshot_roundup {
        uint64_t size; /* the key: a size in MiB ("1", "2", ..., or ">") */
        int64_t divisions;
    } * roundup;
} snapshot_settings;

typedef struct snapshot {
    size_t device_count; /* len(device_traces) */
    snapshot_device *devices;
    size_t segment_count;
    snapshot_segment *segments;
    size_t entry_kind_count;
    snapshot_entry_kind *entry_kinds; /* what the entries of every device say (see above) */
    size_t annotation_count;
    snapshot_annotation *annotations;
    int has_device_traces, has_annotations; /* the keys were present */
    snapshot_settings settings;

    size_t frame_count;
    snapshot_frame *frames;
    size_t stack_count; /* stacks[0] is the empty stack */
    snapshot_stack *stacks;
    uint32_t *stack_frames; /* frame ids; a stack's are [first, first + depth) */
    size_t string_count;    /* strings[0] is NULL ("absent") */
    const char **strings;

    struct snapshot_store *store; /* owns all of the above */
} snapshot;

/* Converts a parsed snapshot (the document's root). Returns NULL with a
 * one-line message in err. Hostile sharing (one record referenced a million
 * times through the memo) cannot blow up: the records' memory is bounded by
 * SNAPSHOT_MEMORY_FACTOR bytes per pickle byte + SNAPSHOT_MEMORY_BASE, and a
 * record dict may hold at most SNAPSHOT_MAX_RECORD_KEYS keys. */
#define SNAPSHOT_MEMORY_FACTOR 16u
#define SNAPSHOT_MEMORY_BASE (64u << 20)
#define SNAPSHOT_MAX_RECORD_KEYS 64u
snapshot *snapshot_from_pickle(const pickle_doc *doc, char *err, size_t errlen);
/* Parses the file (pickle_parse_file), converts it and frees the pickle. */
snapshot *snapshot_load(const char *path, char *err, size_t errlen);
void snapshot_free(snapshot *s);

/* An entry's action, stream and the rest (e must be one of s's). */
static inline const snapshot_entry_kind *snapshot_kind(const snapshot *s, const snapshot_entry *e) {
    return &s->entry_kinds[e->kind];
}

/* A stack's frame ids, innermost first; NULL and *depth 0 for a bad id. */
const uint32_t *snapshot_stack_frames(const snapshot *s, uint32_t stack, size_t *depth);

#ifdef __cplusplus
}
#endif

#endif
