/* alloc_model.h — a model of PyTorch's CUDA caching allocator for one device.
 *
 * One model, two ways to drive it, one data structure underneath:
 *
 *  - decide mode (the synthetic trace generator): am_malloc / am_free_request / am_free /
 *    am_empty_cache. The model chooses addresses exactly as PyTorch's DeviceCachingAllocator
 *    would (rounding, small/large pools, best fit per stream, split, merge, cache release and
 *    retry, OOM) and reports what the allocator did through an effect callback.
 *  - apply mode (the analyzer's replay of a real trace or snapshot): addresses are given.
 *    am_segment_insert / _remove / _map / _unmap, am_block_place / _release / _mark_pending.
 *    An operation that does not fit the current layout returns an error and changes nothing.
 *
 * The layout can be walked at any time (segments by address, each with blocks that tile it
 * exactly, free gaps being AM_BLOCK_INACTIVE blocks), and am_stats is O(1).
 *
 * PyTorch's rules (DeviceCachingAllocator in c10/cuda/CUDACachingAllocator.cpp), with its
 * defaults; the knobs are am_config's (alloc_settings.h reads them from PYTORCH_CUDA_ALLOC_CONF):
 *  - round_size(s) = s < 512 ? 512 : 512 * ceil(s / 512); with roundup_power2_divisions d for
 *    the size's interval (d > 1 and s > 512 d), s rounds up to the next of d equal divisions
 *    between the powers of two around it (roundup_power2_next_division).
 *  - rounded <= 1 MiB: small pool, segments of 2 MiB; larger: large pool, segments of 20 MiB
 *    when rounded < 10 MiB, else rounded up to a multiple of 2 MiB.
 *  - best fit: the smallest free block of the pool with the same stream that is large enough,
 *    ties by lowest address. With max_split_size: a request below it never gets a block of at
 *    least that size; a request at or above it never gets a block max_non_split_rounding
 *    (20 MiB) or more larger.
 *  - split (should_split): with expandable_segments on, the block is cut (allocated part at the
 *    lower address) whenever the rest is >= 512, in either pool; otherwise when the rest is
 *    >= 512 in the small pool, > 1 MiB in the large pool (and the request is below
 *    max_split_size).
 *  - a freed block merges with inactive neighbours of its segment; a pending-free block
 *    (free requested, a stream still uses it) stays allocated until its free completes.
 *  - expandable segments (expandable_segments:True): one address range reserved per stream and
 *    pool (1 1/8 of the device, in pages of 20 MiB in the large pool, 2 MiB in the small one),
 *    of which mapped pages form the segments (a segment is one contiguous mapped range, as in
 *    PyTorch's snapshot). A request takes the best-fitting free mapped block (among blocks that
 *    can grow into unmapped pages right after them, the one that can grow least is preferred:
 *    get_free_block's expandable_size), else maps pages at the lowest address of the range
 *    where free and unmapped space together hold it (find_expandable_block, map_block).
 *    Releasing the cache unmaps the pages that lie entirely inside free blocks (unmap_block)
 *    and forgets a range with nothing mapped.
 *
 *  - garbage_collection_threshold: with a memory limit (PyTorch's memory fraction; here
 *    device_capacity), a request no free block serves first releases whole cached segments of
 *    the large pool that sat unused for at least the average number of pool searches, until
 *    reserved is back under the threshold (garbage_collect_cached_blocks).
 *
 * Settings without an effect on the layout are not modelled: release_lock_on_cudamalloc.
 *
 * The modes may be mixed on one model (e.g. seed from a snapshot, then decide); expandable
 * segments made in apply mode have no reserved range the model knows of, so decide mode does
 * not grow them (it still reuses and unmaps their free pages).
 *
 * Ownership: the model owns all its memory; handles (am_segment, am_block) returned by the
 * walk functions point into it and stay valid until the next call that changes the model.
 * A model is not thread-safe; distinct models are independent (no globals). Nothing prints.
 * Every operation is O(log n) expected in the number of blocks, except am_empty_cache and an
 * am_malloc that has to release the cache (both visit every free block of the pools, as
 * PyTorch does) and am_validate. */
#ifndef GMT_ALLOC_MODEL_H
#define GMT_ALLOC_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#define AM_MIN_BLOCK_SIZE 512ULL             /* kMinBlockSize: rounding granule */
#define AM_SMALL_SIZE (1ULL << 20)           /* kSmallSize: largest small-pool request */
#define AM_SMALL_BUFFER (2ULL << 20)         /* kSmallBuffer: small-pool segment size */
#define AM_LARGE_BUFFER (20ULL << 20)        /* kLargeBuffer: segment for 1..10 MiB requests */
#define AM_MIN_LARGE_ALLOC (10ULL << 20)     /* kMinLargeAlloc */
#define AM_ROUND_LARGE (2ULL << 20)          /* kRoundLarge: larger segments round to this */
#define AM_MAX_REQUEST (1ULL << 62)          /* larger requests are AM_ERR_INVALID_ARG */
#define AM_DEFAULT_VA_BASE 0x7f0000000000ULL /* where decide mode starts placing segments */
#define AM_EXPANDABLE_VA_OFFSET                                                                    \
    (1ULL << 44)                      /* expandable ranges are reserved from va_base + this */
#define AM_PAGE_SMALL AM_SMALL_BUFFER /* an expandable segment's page, small pool */
#define AM_PAGE_LARGE AM_LARGE_BUFFER /* an expandable segment's page, large pool */
/* A stream key with this bit set is a private pool's (a CUDA graph's or a MemPool's, each with
 * keys of its own): its blocks serve only its requests, as any stream's; it never uses
 * expandable segments (PyTorch's private pools do not); empty_cache, garbage collection and
 * the cache release before an OOM leave its cached segments alone (PyTorch frees a private
 * pool's memory only after its graph or MemPool is gone, which a trace does not show). */
#define AM_STREAM_PRIVATE_POOL (1ULL << 63)
#define AM_ROUNDUP_INTERVALS 16 /* roundup_power2_divisions: 1 MiB, 2 MiB, ... 32 GiB and up */

typedef enum am_error {
    AM_OK = 0,
    AM_ERR_INVALID_ARG,     /* NULL model, zero size, size too large, address range overflows */
    AM_ERR_NOMEM,           /* the host ran out of memory; the model is unchanged */
    AM_ERR_OOM,             /* am_malloc: the device cannot hold it even after freeing the cache */
    AM_ERR_NO_SEGMENT,      /* no segment contains the address */
    AM_ERR_NOT_FREE,        /* the range is not inside one inactive block */
    AM_ERR_UNKNOWN_BLOCK,   /* no allocated or pending-free block starts at the address */
    AM_ERR_ALREADY_PENDING, /* the block is already pending-free */
    AM_ERR_UNKNOWN_SEGMENT, /* no segment starts at the address */
    AM_ERR_SEGMENT_OVERLAP, /* the new range overlaps an existing segment */
    AM_ERR_SEGMENT_IN_USE,  /* the segment still holds allocated or pending-free blocks */
    AM_ERR_NOT_EXPANDABLE,  /* unmap of a segment that was not created by am_segment_map */
    AM_ERR_CORRUPT          /* am_validate found a broken invariant (a bug in the model) */
} am_error;

/* A static English description of `error` ("unknown error" for values outside the enum). */
const char *am_strerror(am_error error);

/* --- configuration and lifetime --------------------------------------------------------- */

typedef struct am_config {
    uint64_t device_capacity; /* bytes the driver can hand out (decide mode); 0 = unlimited */
    uint64_t max_split_size;  /* PYTORCH_CUDA_ALLOC_CONF max_split_size_mb in bytes; UINT64_MAX
                                 = off (PyTorch's default); otherwise at least 20 MiB */
    uint64_t va_base;         /* decide mode places segments first-fit, 2 MiB aligned, from here */
    bool expandable_segments; /* expandable_segments:True: decide mode maps pages, and blocks
                                 split whenever 512 bytes remain (both modes) */
    uint64_t max_non_split_rounding; /* max_non_split_rounding_mb in bytes (AM_LARGE_BUFFER) */
    uint32_t roundup_power2_divisions[AM_ROUNDUP_INTERVALS]; /* 0 or 1: plain rounding */
    uint64_t large_segment_size; /* large_segment_size_mb in bytes (PyTorch 2.9): the segment
                                    for 1..10 MiB requests; 0 = AM_LARGE_BUFFER. Expandable
                                    segments' pages stay 20 MiB here */
    double garbage_collection_threshold; /* 0 = off; in (0, 1): PyTorch collects old cached
                                            segments once reserved passes this share of its
                                            memory fraction, which is device_capacity here (no
                                            effect while that is 0: no fraction set) */
} am_config;

/* device_capacity 0, max_split_size UINT64_MAX, va_base AM_DEFAULT_VA_BASE, expandable
 * segments off, max_non_split_rounding AM_LARGE_BUFFER, no roundup divisions. */
am_config am_config_default(void);

typedef struct am_model am_model;

/* A new, empty model; cfg NULL means am_config_default(). NULL when out of memory or when
 * cfg->max_split_size or cfg->max_non_split_rounding is below 20 MiB (PyTorch refuses such a
 * setting too). */
am_model *am_model_new(const am_config *cfg);

/* Frees the model and everything it holds; NULL is fine. */
void am_model_free(am_model *model);

/* --- PyTorch's size rules (pure functions) ------------------------------------------------ */

uint64_t am_round_size(uint64_t requested);    /* round_size without roundup divisions */
bool am_is_small(uint64_t rounded);            /* rounded <= AM_SMALL_SIZE */
uint64_t am_allocation_size(uint64_t rounded); /* get_allocation_size: the segment size */
/* get_allocation_size with cfg's large_segment_size (cfg may be NULL: the default) */
uint64_t am_config_allocation_size(const am_config *cfg, uint64_t rounded);
/* The division count PyTorch uses for an allocation of `size` bytes with `table`
 * (roundup_power2_divisions: interval 0 holds sizes below 2 MiB, interval i sizes in
 * [2^i, 2^(i+1)) MiB, the last one everything from 32 GiB). */
uint32_t am_roundup_divisions(const uint32_t table[AM_ROUNDUP_INTERVALS], uint64_t size);
/* round_size under `cfg`'s roundup_power2_divisions (am_round_size when there are none). */
uint64_t am_config_round_size(const am_config *cfg, uint64_t requested);
/* roundup_power2_next_division: `size` rounded up to the next of `divisions` (a power of two)
 * equal steps between the powers of two around it. */
uint64_t am_roundup_power2_next_division(uint64_t size, uint64_t divisions);
/* should_split: whether a free block of `block_size` bytes in the given pool is cut for a
 * request of `size` (rounded) bytes under `cfg`. */
bool am_should_split(const am_config *cfg, bool is_small, uint64_t block_size, uint64_t size);
/* The page of an expandable segment in a pool: AM_PAGE_SMALL or AM_PAGE_LARGE. */
uint64_t am_expandable_page(bool is_small);

/* --- what the layout holds ------------------------------------------------------------------ */

typedef enum am_block_state {
    AM_BLOCK_INACTIVE = 0,    /* free space inside a segment */
    AM_BLOCK_ALLOCATED = 1,   /* live */
    AM_BLOCK_PENDING_FREE = 2 /* free requested, still used by a stream: live until completed */
} am_block_state;

typedef struct am_block_info {
    uint64_t addr, size;   /* size as the allocator accounts it (rounded) */
    uint64_t requested;    /* what the program asked for; 0 for inactive blocks */
    uint64_t stream;       /* the allocating stream; the segment's stream for inactive blocks */
    uint64_t tag;          /* the caller's payload; 0 for inactive blocks */
    uint64_t segment_addr; /* base of the segment holding the block: set by am_block_lookup
                              only (0 elsewhere, to keep the hot paths free of a search) */
    am_block_state state;
} am_block_info;

typedef struct am_segment_info {
    uint64_t addr, size, stream;
    uint64_t tag;       /* decide mode: the tag of the am_malloc that created it */
    bool is_small;      /* small pool (2 MiB segments) or large pool */
    bool is_expandable; /* created by am_segment_map */
} am_segment_info;

typedef struct am_stats_info {
    uint64_t reserved_bytes;  /* sum of segment sizes */
    uint64_t allocated_bytes; /* sum of sizes of allocated and pending-free blocks */
    uint64_t requested_bytes; /* sum of their requested sizes */
    uint64_t segment_count;
    uint64_t allocated_block_count; /* allocated + pending-free */
    uint64_t pending_block_count;   /* pending-free only */
    uint64_t inactive_block_count;
    uint64_t largest_inactive_bytes; /* the largest free block, any pool, any stream */
    uint64_t releasable_bytes;       /* what empty_cache() would give back: whole free segments,
                                        and the pages of expandable segments that lie wholly
                                        inside free blocks (the rest of the free bytes is
                                        trapped: reserved - allocated - releasable) */
} am_stats_info;

/* The running totals; O(1). */
am_stats_info am_stats(const am_model *model);

/* --- decide mode --------------------------------------------------------------------------- */

typedef enum am_effect_kind {
    AM_EFFECT_SEGMENT_ALLOC,  /* cudaMalloc succeeded: addr, size, stream, is_small, tag */
    AM_EFFECT_SEGMENT_FREE,   /* a cached segment went back to the driver: addr, size, stream,
                                 is_small, tag (the segment's) */
    AM_EFFECT_ALLOC_FAILED,   /* cudaMalloc of `size` bytes failed (or, with expandable segments,
                                 mapping `size` bytes of pages did): size, stream, is_small */
    AM_EFFECT_OOM,            /* the allocator gave up: requested, size (rounded), stream,
                                 device_free (capacity - reserved; 0 when unlimited) */
    AM_EFFECT_FREE_COMPLETED, /* a pending-free block was completed because the allocator
                                synchronized (empty_cache, or the retry after a failed
                                cudaMalloc): addr, size, requested, stream, tag (the block's) */
    AM_EFFECT_SEGMENT_MAP,    /* pages of an expandable segment were mapped (PyTorch's
                                 segment_map): addr, size (whole pages), stream, is_small, tag */
    AM_EFFECT_SEGMENT_UNMAP   /* free pages were unmapped (segment_unmap): addr, size, stream,
                                 is_small, tag (the segment's) */
} am_effect_kind;

typedef struct am_effect {
    am_effect_kind kind;
    uint64_t addr, size, requested, stream, tag, device_free;
    bool is_small;
} am_effect;

/* Called once per effect, in the order the allocator performs them, after the model reflects
 * the effect. `effect` lives for the call only. The callback must not call into the model. */
typedef void (*am_effect_fn)(void *ctx, const am_effect *effect);

/* Allocates `requested` bytes (1..AM_MAX_REQUEST) on `stream`, as PyTorch's malloc would, and
 * describes the block in *out (may be NULL). `effect_fn` may be NULL. Returns AM_OK, or
 * AM_ERR_OOM after the effects ALLOC_FAILED, (FREE_COMPLETED, SEGMENT_FREE, SEGMENT_UNMAP)...,
 * ALLOC_FAILED, OOM: the model then keeps the cache release (and pages mapped before a later
 * map failed) but holds no new block. Releasing the cache may complete pending frees
 * (FREE_COMPLETED): the caller must forget those blocks. */
am_error am_malloc(am_model *model, uint64_t requested, uint64_t stream, uint64_t tag,
                   am_effect_fn effect_fn, void *ctx, am_block_info *out);

/* Frees the allocated or pending-free block starting at `addr` (completing a pending free):
 * it becomes inactive and merges with inactive neighbours. AM_ERR_UNKNOWN_BLOCK otherwise. */
am_error am_free(am_model *model, uint64_t addr);

/* Marks the allocated block at `addr` pending-free (PyTorch's free_requested while a stream
 * still uses it): it stays live and unmerged until am_free. AM_ERR_UNKNOWN_BLOCK, or
 * AM_ERR_ALREADY_PENDING. */
am_error am_free_request(am_model *model, uint64_t addr);

/* torch.cuda.empty_cache() (release_cached_blocks): completes every pending free
 * (FREE_COMPLETED effects, oldest request first), then per pool, large then small: releases
 * every non-expandable segment that is one inactive block (SEGMENT_FREE effects, by (stream,
 * size, address)), then unmaps the pages that lie entirely inside free blocks of expandable
 * segments (SEGMENT_UNMAP effects, same order). */
am_error am_empty_cache(am_model *model, am_effect_fn effect_fn, void *ctx);

/* --- apply mode ---------------------------------------------------------------------------- */

/* Adds a segment [addr, addr+size) holding one inactive block. Its pool is small when size
 * <= AM_SMALL_BUFFER. AM_ERR_SEGMENT_OVERLAP when it overlaps a segment. */
am_error am_segment_insert(am_model *model, uint64_t addr, uint64_t size, uint64_t stream,
                           uint64_t tag);

/* Removes the segment starting at `addr`: AM_ERR_UNKNOWN_SEGMENT when none starts there,
 * AM_ERR_SEGMENT_IN_USE when it holds allocated or pending-free blocks. */
am_error am_segment_remove(am_model *model, uint64_t addr);

/* Expandable segments (PyTorch's cuMemMap/cuMemUnmap). A segment here is one contiguous
 * mapped range, as in PyTorch's snapshot. am_segment_map makes [addr, addr+size) inactive
 * memory of the small pool when size <= AM_SMALL_BUFFER (PyTorch maps the small pool one
 * 2 MiB page at a time, the large pool in 20 MiB pages), else of the large pool: it extends an
 * expandable segment of the same stream and pool that ends at addr, or one that starts at
 * addr+size, or joins the two; the segment keeps its tag (the lower one's when joining).
 * Otherwise it creates a new expandable segment with `tag`. Plain segments never grow. */
am_error am_segment_map(am_model *model, uint64_t addr, uint64_t size, uint64_t stream,
                        uint64_t tag);

/* am_segment_map with the pool given rather than read from the size. */
am_error am_segment_map_in_pool(am_model *model, uint64_t addr, uint64_t size, uint64_t stream,
                                uint64_t tag, bool is_small);

/* Decide mode with a start state taken from a recording: the address range PyTorch reserved
 * for (stream, pool) begins at `addr` (the lowest page the recording shows mapped there), so
 * decide mode's maps for that stream and pool go on in it, page after page, rather than in a
 * range of its own. The range is as long as the model's own (1 1/8 of the device), but ends
 * where the next adopted range begins, and shortens an adopted range below it to end at
 * `addr` (ranges never overlap; the device's size may be unknown). Then map the recorded pages
 * with am_segment_map_in_pool. AM_ERR_SEGMENT_OVERLAP when a range already starts at `addr` or
 * a mapped page of the range below lies above `addr`, AM_ERR_NOMEM. */
am_error am_expandable_adopt(am_model *model, uint64_t addr, uint64_t stream, bool is_small);

/* Unmaps [addr, addr+size), which must lie inside one inactive block of an expandable
 * segment: the segment shrinks, splits in two (a hole in the middle; the upper part keeps the
 * tag) or disappears. AM_ERR_NO_SEGMENT, AM_ERR_NOT_EXPANDABLE, AM_ERR_NOT_FREE. */
am_error am_segment_unmap(am_model *model, uint64_t addr, uint64_t size);

/* Makes [addr, addr+size) an allocated block, cutting it out of the inactive block that holds
 * it (free space before and after stays inactive). AM_ERR_NO_SEGMENT when no segment holds
 * addr, AM_ERR_NOT_FREE when the range is not inside one inactive block. */
am_error am_block_place(am_model *model, uint64_t addr, uint64_t size, uint64_t requested,
                        uint64_t stream, uint64_t tag);

/* Places a block as PyTorch's malloc did when only the request is known (its history records
 * requested sizes): the block starts at `addr` inside an inactive block and takes
 * round_size(requested), or everything up to the end of that inactive block when the rest is
 * too small to split (should_split). *out (may be NULL) gets the block as placed
 * (segment_addr left 0). Errors as am_block_place. */
am_error am_block_place_requested(am_model *model, uint64_t addr, uint64_t requested,
                                  uint64_t stream, uint64_t tag, am_block_info *out);

/* The same operations as am_free and am_free_request, named for the replay. */
am_error am_block_release(am_model *model, uint64_t addr);
am_error am_block_mark_pending(am_model *model, uint64_t addr);

/* --- queries and walking ------------------------------------------------------------------- */

/* The block (of any state) containing `addr`; AM_ERR_NO_SEGMENT when no segment holds it. */
am_error am_block_lookup(const am_model *model, uint64_t addr, am_block_info *out);

/* The segment containing `addr`; AM_ERR_NO_SEGMENT when none. */
am_error am_segment_lookup(const am_model *model, uint64_t addr, am_segment_info *out);

/* Walking the layout, e.g.
 *     for (const am_segment *s = am_first_segment(m); s; s = am_next_segment(s))
 *         for (const am_block *b = am_segment_first_block(m, s); b; b = am_next_block(b))
 * visits segments in address order and each segment's blocks in address order. Handles are
 * invalidated by any call that changes the model. am_segment_first_block is O(log n), the
 * other steps O(1). */
typedef struct am_segment am_segment;
typedef struct am_block am_block;

const am_segment *am_first_segment(const am_model *model);
const am_segment *am_next_segment(const am_segment *segment);
void am_segment_get(const am_segment *segment, am_segment_info *out);
const am_block *am_segment_first_block(const am_model *model, const am_segment *segment);
const am_block *am_next_block(const am_block *block);         /* NULL after the segment's last */
void am_block_get(const am_block *block, am_block_info *out); /* segment_addr is left 0 */

/* Checks every internal invariant (indexes, tiling, merging, totals); AM_OK or AM_ERR_CORRUPT.
 * O(n log n): for tests and debugging. */
am_error am_validate(const am_model *model);

#endif
