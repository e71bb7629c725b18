/* alloc_model_layout.h — the data structure under the caching-allocator model. Internal.
 *
 * alloc_model_layout.c owns the layout of one device: segments, the blocks that tile them,
 * the indexes over both and the running totals, and every change to them. alloc_model.c owns
 * the policy (PyTorch's rules: which block, which segment, when to release) and the public
 * API's argument checks. Both modes of the model go through the same primitives here, so a
 * mistake in the layout logic shows up in both.
 *
 * Preconditions are the callers' business (alloc_model.c checks them before calling):
 * functions named "may need" nodes require a successful aml_reserve first, and none of them
 * fails or allocates. */
#ifndef GMT_ALLOC_MODEL_LAYOUT_H
#define GMT_ALLOC_MODEL_LAYOUT_H

#include "alloc_model.h"
#include "alloc_model_index.h"

#include <stddef.h>

#define AML_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#define AML_BLOCK_BY_ADDR(node) AML_CONTAINER_OF(node, am_block, by_addr)
#define AML_BLOCK_BY_SIZE(node) AML_CONTAINER_OF(node, am_block, by_size)
#define AML_SEGMENT_OF(node) AML_CONTAINER_OF(node, am_segment, by_addr)

struct am_block {
    ami_node by_size;             /* while inactive, in model->free_blocks[is_small]:
                                     key {segment_stream, size, addr}, value size */
    ami_node by_addr;             /* in model->blocks: key {addr} */
    struct am_block *prev, *next; /* neighbours in the segment, NULL at its ends */
    uint64_t addr, size;
    uint64_t segment_stream; /* the segment's stream: free blocks are indexed by it */
    am_block_state state;
    bool is_small, is_expandable; /* the segment's pool and kind */
    uint64_t requested, stream, tag;
    struct am_block *pending_newer; /* FIFO of pending-free blocks, oldest first */
    struct am_block *pending_older;
    uint64_t releasable; /* while inactive: its part of model->releasable (aml_releasable_of) */
    uint64_t gc_base;    /* while inactive: its pool's free-block searches when it entered the
                            free index (gc_count_base: its age is the searches since) */
}; /* the fields merging and splitting read come first: they share a cache line */

struct am_segment {
    ami_node by_addr;               /* in model->segments: key {addr}, value = usable gap before */
    struct am_segment *prev, *next; /* address order */
    uint64_t addr, size, stream, tag;
    uint64_t gap_start; /* where the usable gap before this segment starts */
    bool is_small, is_expandable;
};

typedef struct aml_pool_chunk {
    struct aml_pool_chunk *next;
} aml_pool_chunk;

typedef struct aml_node_pool { /* fixed-size items from chunks, recycled through a free list */
    size_t item_size;
    size_t next_chunk_items;
    void *free_items; /* singly linked through each free item's first bytes */
    size_t free_count;
    aml_pool_chunk *chunks;
} aml_node_pool;

typedef struct aml_live_slot {
    uint64_t addr;
    am_block *block; /* NULL: an empty slot */
} aml_live_slot;

typedef struct aml_live_table { /* live blocks by start address: open addressing, linear probe */
    aml_live_slot *slots;
    uint64_t mask;
    uint64_t count;
    unsigned shift;
} aml_live_table;

typedef struct aml_reservation { /* decide mode: the address range of an expandable segment */
    uint64_t addr, size, stream;
    bool is_small;
} aml_reservation;

struct am_model {
    am_config config;
    aml_reservation *reservations; /* by address */
    size_t reservation_count, reservation_cap;
    ami_tree segments;
    ami_tree blocks;
    ami_tree free_blocks[2]; /* [0] large pool, [1] small pool */
    aml_live_table live;
    am_segment *first_segment, *last_segment;
    am_block *pending_oldest, *pending_newest;
    aml_node_pool block_pool, segment_pool;
    uint64_t reserved, allocated, requested, live_blocks, pending_blocks;
    uint64_t releasable; /* what empty_cache() would give back: the inactive blocks' parts */
    uint64_t free_block_searches[2]; /* per pool, counted while garbage collection is on
                                        (get_free_blocks_call_count) */
};

static inline uint64_t aml_block_end(const am_block *block) { return block->addr + block->size; }

static inline uint64_t aml_segment_end(const am_segment *segment) {
    return segment->addr + segment->size;
}

/* size > 0 and [addr, addr + size) does not wrap around. */
static inline bool aml_range_is_valid(uint64_t addr, uint64_t size) {
    return size > 0 && size <= UINT64_MAX - addr;
}

/* ---- storage ---- */

void aml_init_storage(am_model *model);
/* Makes sure the next operation finds `blocks` block nodes, `segments` segment nodes and room
 * for `live` more live blocks; false when the host is out of memory (nothing changed). */
bool aml_reserve(am_model *model, size_t blocks, size_t segments, size_t live);
void aml_release_storage(am_model *model);

/* ---- lookups ---- */

am_block *aml_block_containing(const am_model *model, uint64_t addr); /* any state; or NULL */
am_block *aml_live_block_at(const am_model *model, uint64_t addr);    /* exact start; or NULL */
am_segment *aml_segment_containing(const am_model *model, uint64_t addr);
am_block *aml_first_block_of(const am_model *model, const am_segment *segment);
bool aml_range_overlaps_segment(const am_model *model, uint64_t addr, uint64_t size);
/* The first 2 MiB aligned range of `size` bytes from va_base that no segment holds. */
bool aml_find_free_range(const am_model *model, uint64_t size, uint64_t *addr);

/* ---- blocks ---- */

/* Cuts [addr, addr+size) out of the inactive `block` that holds it; the pieces before and
 * after stay inactive. Returns the block for the range, out of the free index, for the caller
 * to fill. May need two block nodes. */
am_block *aml_carve(am_model *model, am_block *block, uint64_t addr, uint64_t size);
void aml_make_allocated(am_model *model, am_block *block, uint64_t requested, uint64_t stream,
                        uint64_t tag);
void aml_mark_pending(am_model *model, am_block *block);
/* Completes the free of a live block: inactive, merged with inactive neighbours. */
void aml_make_inactive(am_model *model, am_block *block);

/* ---- segments ---- */

/* A new segment over a range no segment holds, as one inactive block (returned). May need one
 * block and one segment node. */
am_block *aml_segment_create(am_model *model, uint64_t addr, uint64_t size, uint64_t stream,
                             uint64_t tag, bool is_small, bool is_expandable);
/* Removes a segment that is one inactive block. */
void aml_segment_destroy(am_model *model, am_segment *segment);
/* Maps a range no segment holds: extends `below` (ends at addr) and/or `above` (starts at
 * addr + size), either of which may be NULL but not both. May need one block node. */
void aml_segment_extend(am_model *model, am_segment *below, am_segment *above, uint64_t addr,
                        uint64_t size);
/* Unmaps [addr, addr+size) inside the inactive `block` of `segment`: shrinks, splits or
 * removes the segment. May need two block nodes and one segment node. */
void aml_segment_cut(am_model *model, am_segment *segment, am_block *block, uint64_t addr,
                     uint64_t size);

/* What empty_cache() would give back of the inactive `block` (the rule of
 * PyTorch's release_cached_blocks and ExpandableSegment::unmap): all of it
 * when it is its segment's only block (the segment is free); else, in an
 * expandable segment, the pages from the segment's start that lie wholly
 * inside it; else nothing. */
uint64_t aml_releasable_of(const am_model *model, const am_block *block);

/* Walks everything and compares with the indexes and totals; true when all invariants hold. */
bool aml_is_sound(const am_model *model);

#endif
