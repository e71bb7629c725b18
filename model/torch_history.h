/* torch_history.h — PyTorch's caching-allocator history, read in one place.
 *
 * torch.cuda.memory._record_memory_history makes PyTorch keep a ring of
 * entries (TraceEntry in c10/cuda/CUDACachingAllocator.h): an action, an
 * address, a size, a stream, frames and a time. Two parts of gpumemtrace turn
 * them into trace events: the recorder drains them live (recorder/rec_torch.c,
 * fed by recorder/python/memrec_torch.py), the analyzer reads them from a
 * snapshot pickle (analyzer/input/snapshot_import.c). Both follow this table,
 * so a live recording and a pickle of the same run replay alike:
 *
 *   action          trace op        level    size in the history
 *   alloc           alloc           block    the request: size = round_size(request)
 *   free_requested  free_requested  block    the request, as alloc
 *   free_completed  free            block    the request, as alloc
 *   segment_alloc   alloc           segment  the segment's size
 *   segment_free    free            segment  the segment's size
 *   segment_map     map             segment  the mapped range (expandable segments)
 *   segment_unmap   unmap           segment  the unmapped range
 *   oom             oom             block    the request; address 0; a driver_free
 *                                            counter (device_free) comes first
 *   snapshot        (none: a snapshot was taken here; no memory changes)
 *
 * A request is counted as 1 when the history says 0 (round_size(1) = 512),
 * and `requested` is the request; a segment's size is taken as it is (size =
 * requested, 0 stays 0). Every event is device memory, source torch.
 *
 * The numbering (gmt_torch_action) is also the recorder's wire format:
 * memrec_torch.py's ACTIONS names each action it hands libmemrec.so with
 * these numbers (tests/test_torch_history.c keeps the two in step). It
 * differs from PyTorch's own enum, which puts snapshot before oom. */
#ifndef GMT_TORCH_HISTORY_H
#define GMT_TORCH_HISTORY_H

#include "trace_format.h"

#include <stdint.h>

typedef enum gmt_torch_action {
    GMT_TORCH_ALLOC = 0,
    GMT_TORCH_FREE_REQUESTED, /* the program freed it; a stream may still use it */
    GMT_TORCH_FREE_COMPLETED, /* the allocator may reuse it */
    GMT_TORCH_SEGMENT_ALLOC,  /* cudaMalloc */
    GMT_TORCH_SEGMENT_FREE,   /* cudaFree */
    GMT_TORCH_SEGMENT_MAP,    /* expandable segments: pages mapped */
    GMT_TORCH_SEGMENT_UNMAP,
    GMT_TORCH_OOM,      /* the allocator gave up; the entry carries device_free */
    GMT_TORCH_SNAPSHOT, /* a snapshot was taken here: no event */
    GMT_TORCH_ACTION_COUNT
} gmt_torch_action;

/* One action's rule. */
typedef struct gmt_torch_rule {
    const char *name; /* PyTorch's spelling in the history: "alloc", ... */
    uint8_t emits;    /* 1: the entry becomes a memory event */
    uint8_t op;       /* trace_op (when emits) */
    uint8_t level;    /* trace_level (when emits) */
    uint8_t rounded;  /* the size is a request, rounded to the allocator's size */
} gmt_torch_rule;

/* The table, indexed by gmt_torch_action. */
extern const gmt_torch_rule gmt_torch_rules[GMT_TORCH_ACTION_COUNT];

/* The action PyTorch's history calls `name`, or -1 for one it does not
 * have (newer PyTorch may add some). */
int gmt_torch_action_named(const char *name);

/* The name of `action`, or NULL outside the table. */
const char *gmt_torch_action_name(unsigned action);

/* The allocator's size of a block whose history entry says `size` (a
 * request): am_round_size of it, a zero request counting as 1. */
uint64_t gmt_torch_block_size(uint64_t size);

/* PyTorch maps expandable memory one page at a time (a cuMemMap each) but its
 * history writes one segment_map for several pages; both readers write a map
 * event per page, so a later unmap of some of them ends whole events. The
 * page of a map of `size` bytes: 2 MiB (the small pool) when the size is not
 * a multiple of 20 MiB, else 20 MiB (the large pool's page; a small-pool map
 * of a multiple of 20 MiB cannot be told apart and is taken as large). */
uint64_t gmt_torch_map_page(uint64_t size);

/* One history entry, as both readers have it. */
typedef struct gmt_torch_entry {
    uint64_t action; /* gmt_torch_action; anything else makes nothing */
    uint64_t addr, size, stream;
    uint64_t device_free; /* oom: the driver's free bytes */
    uint64_t ts_ns;       /* on the trace's clock */
    uint32_t device;
    uint32_t stack_id; /* a trace stack id; 0 = none */
    uint64_t pool;     /* a private pool's number (segment_pool_id (a, b) as a * 2^32 + b, of
                          the segment holding addr); 0 = the allocator's default pool */
} gmt_torch_entry;

/* The memory event of `e` in *ev (every field set: tid 0, pool the entry's). Returns
 * 1, or 0 when the entry makes no event (snapshot, an unknown action). */
int gmt_torch_event(const gmt_torch_entry *e, trace_event *ev);

/* The counter that goes just before the event of `e`: for an oom, the
 * driver's free bytes (driver_free) at the same time. Returns 1 with *c
 * set, or 0 when the entry has none. */
int gmt_torch_counter(const gmt_torch_entry *e, trace_counter *c);

#endif
