/* gmt_vocab.h — every word of the project's vocabulary, defined once.
 *
 * An op, a level, a memory kind, a source, a marker kind, a counter kind, a
 * warning kind, a fragmentation band: each is one line below, with its code
 * (stored in the trace and in the database), its SQL name (what the views,
 * text reports and JSON say) and its meaning (the description rows of
 * schema.sql). Everything else is generated from these lists:
 *
 *   - trace_format.h's enums (TRACE_OP_ALLOC, ...) and their counts;
 *   - the name tables and name -> code lookups of gmt_vocab.c;
 *   - the codes inside SQL text: queries write `{op:alloc}`, `{level:block}`,
 *     `{warning:free_unknown}`, and the analyzer's prepare expands the token
 *     to the value the database stores (0, 1, 'free_unknown'), so no SQL
 *     string repeats a number (analyzer/base/db_query.h);
 *   - schema.sql keeps its lookup rows and view CASE arms for people reading
 *     it; tests/test_vocab.c fails when they fall out of step with this file.
 *
 * Codes are part of the trace format and of the database: stable, never
 * reused. To add an op: a line in TRACE_OP_LIST with the next code, the same
 * row in schema.sql's `ops` and a WHEN arm in its `events` view; the
 * static assertions and test_vocab say what else is missing. */
#ifndef GMT_VOCAB_H
#define GMT_VOCAB_H

#include <stddef.h>
#include <stdint.h>

/* ---- limits --------------------------------------------------------------- */

/* Devices an analysis follows (ordinals 0 .. GMT_MAX_DEVICES-1); events on
 * others are a `device_out_of_range` warning. */
#define GMT_MAX_DEVICES 256

/* An input without timestamps (a PyTorch <= 2.1 snapshot) keeps its events'
 * order, this many ns apart; meta `timestamps` = 0 says so, and pictures
 * then draw over event numbers. */
#define GMT_UNTIMED_EVENT_NS 1000

/* ---- trace vocabulary: X(ID, code, "sql name", "meaning") ------------------ */

/* What happened to memory (trace_event.op; event_rows.op). */
#define TRACE_OP_LIST(X)                                                                           \
    X(ALLOC, 0, "alloc",                                                                           \
      "memory handed out: a segment from the driver (cuMemAlloc*, pool reserve, PyTorch "          \
      "segment_alloc) or a block inside a segment (a tensor, a region); addr/size = the "          \
      "allocation, size as the allocator accounts it (pitch x height for cuMemAllocPitch)")        \
    X(FREE, 1, "free",                                                                             \
      "the allocation ends (for blocks: PyTorch's free_completed); size = the bytes of its "       \
      "alloc, never the free record's size field")                                                 \
    X(FREE_REQUESTED, 2, "free_requested",                                                         \
      "a block freed by the program but still used by a stream: stays live until its free; "       \
      "size = the bytes of its alloc")                                                             \
    X(MAP, 3, "map",                                                                               \
      "cuMemMap: a VMM address range becomes a mapped segment; addr/size = the range")             \
    X(UNMAP, 4, "unmap", "cuMemUnmap: the mapped range ends")                                      \
    X(POOL_TRIM, 5, "pool_trim",                                                                   \
      "cuMemPoolTrimTo on pool `pool`; size = the minBytesToKeep argument, addr NULL; what it "    \
      "released shows in the next pool counters")                                                  \
    X(ALLOC_FAILED, 6, "alloc_failed",                                                             \
      "a driver allocation failed for want of memory (CUDA_ERROR_OUT_OF_MEMORY; not yet an OOM: "  \
      "PyTorch frees its cache and retries); size = bytes asked for, addr NULL")                   \
    X(OOM, 7, "oom",                                                                               \
      "the allocator gave up (PyTorch's oom entry); size = bytes asked for, addr NULL")            \
    X(PHYS_CREATE, 8, "phys_create",                                                               \
      "cuMemCreate: physical memory reserved; size = its bytes, addr NULL")                        \
    X(PHYS_RELEASE, 9, "phys_release", "cuMemRelease: that physical memory is released")           \
    X(VA_RESERVE, 10, "va_reserve",                                                                \
      "cuMemAddressReserve: an address range only, no memory; addr/size = the range")              \
    X(VA_FREE, 11, "va_free", "cuMemAddressFree: the address range is given back")

/* Ops only the database has: rows the replay synthesizes. Their codes must
 * stay clear of every trace op (a static assertion in trace_format.h). */
#define DB_OP_LIST(X)                                                                              \
    X(SEED, 12, "seed",                                                                            \
      "synthesized, not recorded: the seeded start state of `device` (event_id <= 0, one per "     \
      "device); addr/size NULL")

/* Segment: memory the process got from the driver. Block: memory an allocator
 * handed to the program inside a segment. */
#define TRACE_LEVEL_LIST(X)                                                                        \
    X(SEGMENT, 0, "segment",                                                                       \
      "memory the process got from the driver: cuMemAlloc*, a pool's reserve, a VMM range or "     \
      "physical handle; counted in reserved")                                                      \
    X(BLOCK, 1, "block",                                                                           \
      "memory an allocator handed to the program inside a segment: a PyTorch tensor, an "          \
      "NVTX-mem region, a memrec.h region; counted in allocated")

/* Only device memory counts towards reserved/allocated sums. */
#define TRACE_KIND_LIST(X)                                                                         \
    X(DEVICE, 0, "device",                                                                         \
      "device memory; the only kind summed into reserved/allocated/requested")                     \
    X(MANAGED, 1, "managed", "unified memory (cuMemAllocManaged): recorded, not summed")           \
    X(PINNED_HOST, 2, "pinned_host",                                                               \
      "page-locked host memory (cuMemHostAlloc, cudaMallocHost): recorded, not summed")

/* Who reported an event. */
#define TRACE_SOURCE_LIST(X)                                                                       \
    X(CUPTI, 0, "cupti", "a CUDA driver/runtime API call seen by the CUPTI callback")              \
    X(TORCH, 1, "torch",                                                                           \
      "PyTorch's caching-allocator history (live through memrec, or an imported snapshot "         \
      "pickle)")                                                                                   \
    X(NVTX, 2, "nvtx", "an NVTX memory-region annotation")                                         \
    X(MEMREC, 3, "memrec", "the program itself through memrec.h")

/* Markers (trace_marker.kind; markers.kind holds the name). */
#define TRACE_MARK_LIST(X)                                                                         \
    X(RANGE_PUSH, 0, "push", "nvtxRangePush: a nested range opens on one thread")                  \
    X(RANGE_POP, 1, "pop", "nvtxRangePop: the thread's innermost range closes")                    \
    X(RANGE_START, 2, "start", "nvtxRangeStart or a snapshot's START: a process-wide range opens") \
    X(RANGE_END, 3, "end", "nvtxRangeEnd or a snapshot's END: the range of that id closes")        \
    X(MARK, 4, "mark", "an instantaneous mark")                                                    \
    X(STEP_BEGIN, 5, "step_begin", "memrec.h: step `value` begins")                                \
    X(STEP_END, 6, "step_end", "memrec.h: step `value` ends")                                      \
    X(SEED_END, 7, "seed_end",                                                                     \
      "the memory events before it are the seed (what existed when the recording began), "         \
      "not things that happened; at most one; never a markers row")

/* Counter samples (trace_counter.kind; counters.kind holds the name). */
#define TRACE_COUNTER_LIST(X)                                                                      \
    X(DRIVER_FREE, 0, "driver_free", "cuMemGetInfo free bytes")                                    \
    X(DRIVER_TOTAL, 1, "driver_total", "cuMemGetInfo total bytes")                                 \
    X(POOL_RESERVED, 2, "pool_reserved", "CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT of pool `key`")     \
    X(POOL_USED, 3, "pool_used", "CU_MEMPOOL_ATTR_USED_MEM_CURRENT of pool `key`")

/* ---- database vocabulary ---------------------------------------------------- */

/* Anomalies met while decoding or replaying (warnings.code; code = position).
 * X(ID, "code", "meaning") */
#define DB_WARNING_LIST(X)                                                                         \
    X(TRUNCATED, "truncated",                                                                      \
      "the trace ends inside a frame: the process was killed or the "                              \
      "file cut; events up to the last complete frame are used")                                   \
    X(CORRUPT_FRAME, "corrupt_frame",                                                              \
      "a damaged zstd frame was skipped (its byte offset is in "                                   \
      "the message); ids interned in it read as unknown")                                          \
    X(DEVICE_OUT_OF_RANGE, "device_out_of_range",                                                  \
      "an event on a device ordinal beyond the "                                                   \
      "analyzer's limit was ignored")                                                              \
    X(SEGMENT_SIZE_MISMATCH, "segment_size_mismatch",                                              \
      "two reports of one segment (PyTorch's "                                                     \
      "and the driver's) disagree on its size")                                                    \
    X(SEGMENT_OVERLAP, "segment_overlap",                                                          \
      "a new segment or mapped range overlaps a live one; "                                        \
      "it is left out of the layout")                                                              \
    X(SEGMENT_FREE_IN_USE, "segment_free_in_use",                                                  \
      "a segment was freed while blocks inside it "                                                \
      "were live; they end with it")                                                               \
    X(FREE_UNKNOWN, "free_unknown",                                                                \
      "a free of memory that is not live (never seen allocated, "                                  \
      "or already freed)")                                                                         \
    X(UNMAP_UNKNOWN, "unmap_unknown", "an unmap of a range that is not mapped")                    \
    X(DOUBLE_FREE, "double_free", "a block's free was requested twice")                            \
    X(DOUBLE_ALLOC, "double_alloc",                                                                \
      "a block was allocated where a live block already was; the "                                 \
      "old one ends")                                                                              \
    X(BLOCK_OUTSIDE_SEGMENT, "block_outside_segment",                                              \
      "a block lies outside every live "                                                           \
      "segment; it is counted on its own")                                                         \
    X(BLOCK_OVERLAP, "block_overlap", "a block overlaps a live block; it is counted on its own")   \
    X(ALLOCATED_ABOVE_RESERVED, "allocated_above_reserved",                                        \
      "invariant: after this event a device's allocated bytes exceed its reserved bytes (a "       \
      "block counted outside every segment, or a segment the replay missed); raised when it "      \
      "starts")                                                                                    \
    X(REQUESTED_ABOVE_ALLOCATED, "requested_above_allocated",                                      \
      "invariant: after this event a device's requested bytes exceed its allocated bytes (a "      \
      "block smaller than its request); raised when it starts")                                    \
    X(LAYOUT_INVALID, "layout_invalid",                                                            \
      "invariant: the replay's layout of a device failed its self-check (blocks not tiling "       \
      "their segment, overlaps, totals that disagree); checked after the seed and at the end")     \
    X(EVENT_OUT_OF_RANGE, "event_out_of_range",                                                    \
      "a memory event no memory can have: a size over 2^60 bytes, a range past the end of the "    \
      "address space, one that holds or ends at the address 2^63 (the database's NULL), or bytes " \
      "that would take a device's totals over 2^60; it is left out (no row; the message says "     \
      "where it was)")

/* ---- fragmentation bands (DESIGN.md) ---------------------------------------
 * X(ID, lower bound, "name"): a ratio r is rated by the last band whose lower
 * bound is <= r. The same bands rate (reserved - allocated) / reserved and
 * the trapped ratio, in report, JSON and the fragmentation picture. */
#define FRAG_BAND_LIST(X)                                                                          \
    X(GOOD, 0.00, "good")                                                                          \
    X(MODERATE, 0.15, "moderate")                                                                  \
    X(SERIOUS, 0.30, "serious")                                                                    \
    X(SEVERE, 0.40, "severe")

#define FRAG_BAND_ENUM(id, from, name) FRAG_BAND_##id,
typedef enum gmt_frag_band { FRAG_BAND_LIST(FRAG_BAND_ENUM) FRAG_BAND_COUNT } gmt_frag_band;
#undef FRAG_BAND_ENUM

/* Where band b starts, its name, and the band that rates `ratio`. */
double gmt_frag_band_from(gmt_frag_band b);
const char *gmt_frag_band_name(gmt_frag_band b);
gmt_frag_band gmt_frag_rate(double ratio);

/* ---- block categories (DESIGN.md "category") ------------------------------
 * X(ID, "name", colour, "meaning"): what a block's memory is, in torch.profiler's
 * words and its memory timeline's colours (0xRRGGBB). Decided in this order:
 * the names the program gave (tensor names, analyzer/query/categories.h), the
 * phase the block was made in and its lifetime, user rules. The order of the
 * list is the order of reports and stacked pictures; `unknown` (no history at all) comes
 * last, after `other`. */
#define BLOCK_CATEGORY_LIST(X)                                                                     \
    X(PARAMETER, "parameter", 0x006400,                                                            \
      "model weights and buffers: named parameters, or made before the first step and kept")       \
    X(GRADIENT, "gradient", 0x0000CD, "a parameter's .grad, or made in backward and kept past it") \
    X(OPTIMIZER_STATE, "optimizer_state", 0xDAA520,                                                \
      "an optimizer's state (exp_avg, momentum_buffer, ...), or made in its step and kept")        \
    X(ACTIVATION, "activation", 0xFF0000,                                                          \
      "made in forward and freed in a later phase (saved for backward)")                           \
    X(TEMPORARY, "temporary", 0x9370DB, "freed in the phase that made it")                         \
    X(INPUT, "input", 0x000000,                                                                    \
      "made at the start of a step before forward (a batch copied in) and used by it")             \
    X(OTHER, "other", 0x808080, "none of the above: caches, leaks, code the rules cannot see")     \
    X(UNKNOWN, "unknown", 0xC0C0C0,                                                                \
      "no history to tell what it is: a snapshot of one moment (segments without a trace, or a "   \
      "one-entry history)")

#define BLOCK_CATEGORY_ENUM(id, name, colour, meaning) BLOCK_CATEGORY_##id,
typedef enum gmt_category {
    BLOCK_CATEGORY_LIST(BLOCK_CATEGORY_ENUM) BLOCK_CATEGORY_COUNT
} gmt_category;
#undef BLOCK_CATEGORY_ENUM

/* A category's name and colour (0xRRGGBB); the category of a name, or -1. */
const char *gmt_category_name(gmt_category c);
unsigned gmt_category_colour(gmt_category c);
int gmt_category_from_name(const char *name, size_t len);

/* X(ID, "word"): what `memanalyze view`'s timeline is stacked by, in this order (the index is
 * series_levels.series_by, schema.sql). */
#define STACK_BY_LIST(X) X(SITE, "site") X(CATEGORY, "category") X(STREAM, "stream") X(SIZE, "size")
#define STACK_BY_ENUM(id, word) STACK_BY_##id,
typedef enum gmt_stack_by { STACK_BY_LIST(STACK_BY_ENUM) STACK_BY_COUNT } gmt_stack_by;
#undef STACK_BY_ENUM

/* The series a stored vector of series_levels and series_deltas names (schema.sql; meta
 * series_level_top); the rest is one row. */
#define SERIES_VECTOR_TOP 64

/* X(ID, "label", below): a block's size class, below `below` bytes (the last: all the rest). 1 MiB:
 * PyTorch's small pool (its blocks come from 2 MiB segments); then a factor 16 apart:
 * activations and temporaries, layers' weights and gradients, whole flat buffers and KV caches
 * fall mostly in different ones. */
#define SIZE_CLASS_LIST(X)                                                                         \
    X(SMALL, "< 1 MiB", (int64_t)1 << 20)                                                          \
    X(MEDIUM, "1-16 MiB", (int64_t)16 << 20)                                                       \
    X(LARGE, "16-256 MiB", (int64_t)256 << 20)                                                     \
    X(HUGE, ">= 256 MiB", INT64_MAX)
#define SIZE_CLASS_ENUM(id, label, below) SIZE_CLASS_##id,
typedef enum gmt_size_class { SIZE_CLASS_LIST(SIZE_CLASS_ENUM) SIZE_CLASS_COUNT } gmt_size_class;
#undef SIZE_CLASS_ENUM

/* The size class of a block of `bytes`. */
static inline gmt_size_class gmt_size_class_of(int64_t bytes) {
#define SIZE_CLASS_TEST(id, label, below)                                                          \
    if (bytes < (below))                                                                           \
        return SIZE_CLASS_##id;
    SIZE_CLASS_LIST(SIZE_CLASS_TEST)
#undef SIZE_CLASS_TEST
    return SIZE_CLASS_HUGE;
}

#endif
