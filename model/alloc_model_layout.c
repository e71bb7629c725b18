/* alloc_model_layout.c — the layout under the caching-allocator model (see
 * alloc_model_layout.h for what it owns; alloc_model.c decides what to change).
 *
 * Shape, and why:
 *  - Blocks of a segment form a doubly linked list (PyTorch's prev/next): merging is O(1).
 *  - Every block is in one address-ordered treap (`blocks`): "which block holds this address"
 *    is a floor search, for apply-mode placement and unmapping. A block split off another is
 *    inserted right after it, without a search.
 *  - Inactive blocks are also in a treap per pool keyed (stream, size, address), exactly
 *    PyTorch's BlockComparatorSize, so best fit is one lower bound and cache release walks in
 *    PyTorch's order. The trees keep their largest size: the largest free block is O(1).
 *  - Live blocks are in a hash table by start address: a free finds its block in O(1).
 *  - Segments are in an address-ordered treap whose nodes carry the usable gap before each
 *    segment, so first-fit placement of a new segment (decide mode) is one descent.
 *  - Blocks do not point at their segment, so joining or splitting expandable segments moves
 *    no blocks; a block carries the segment facts it needs (pool, stream, expandable).
 *  - Nodes come from chunked free lists aligned to cache lines (a tree node is one line).
 *    Callers reserve what an operation may need first, so nothing here can fail. */
#include "alloc_model_layout.h"

#include "gmt_assert.h"
#include "gmt_hash.h"

#include <stdlib.h>

#define VA_ALIGN AM_ROUND_LARGE
#define CACHE_LINE 64
#define FIRST_LIVE_SLOTS 64

static void set_key(ami_node *node, uint64_t k0, uint64_t k1, uint64_t k2) {
    node->key[0] = k0;
    node->key[1] = k1;
    node->key[2] = k2;
}

static uint64_t align_up_saturating(uint64_t value, uint64_t alignment) {
    if (value > UINT64_MAX - (alignment - 1))
        return UINT64_MAX;
    return (value + alignment - 1) / alignment * alignment;
}

/* ---- node pools ---- */

static size_t round_to_line(size_t size) {
    return (size + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE;
}

static bool pool_reserve(aml_node_pool *pool, size_t wanted) {
    while (pool->free_count < wanted) {
        size_t items = pool->next_chunk_items;
        /* the header takes one cache line so that every item starts on one */
        aml_pool_chunk *chunk = aligned_alloc(CACHE_LINE, CACHE_LINE + items * pool->item_size);
        if (!chunk)
            return false;
        chunk->next = pool->chunks;
        pool->chunks = chunk;
        unsigned char *first = (unsigned char *)chunk + CACHE_LINE;
        for (size_t i = items; i-- > 0;) {
            void *item = first + i * pool->item_size;
            *(void **)item = pool->free_items;
            pool->free_items = item;
        }
        pool->free_count += items;
        if (pool->next_chunk_items < 65536)
            pool->next_chunk_items *= 2;
    }
    return true;
}

static void *pool_take(aml_node_pool *pool) /* only after pool_reserve */
{
    void *item = pool->free_items;
    pool->free_items = *(void **)item;
    pool->free_count--;
    return item;
}

static void pool_give(aml_node_pool *pool, void *item) {
    *(void **)item = pool->free_items;
    pool->free_items = item;
    pool->free_count++;
}

static void pool_release_all(aml_node_pool *pool) {
    while (pool->chunks) {
        aml_pool_chunk *next = pool->chunks->next;
        free(pool->chunks);
        pool->chunks = next;
    }
}

/* ---- live blocks by address: open addressing, linear probing, backward-shift deletion ---- */

static uint64_t live_home(const aml_live_table *table, uint64_t addr) {
    return gmt_hash_fib(addr >> 9, 64 - table->shift);
}

static void live_put(aml_live_table *table, uint64_t addr, am_block *block) {
    uint64_t i = live_home(table, addr);
    while (table->slots[i].block)
        i = (i + 1) & table->mask;
    table->slots[i] = (aml_live_slot){addr, block};
    table->count++;
}

static bool live_reserve(aml_live_table *table, uint64_t extra) {
    uint64_t capacity = table->slots ? table->mask + 1 : 0;
    if ((table->count + extra) * 2 <= capacity)
        return true;
    uint64_t new_capacity = capacity ? capacity : FIRST_LIVE_SLOTS;
    unsigned bits = 0;
    while ((table->count + extra) * 2 > new_capacity)
        new_capacity *= 2;
    while ((1ULL << bits) < new_capacity)
        bits++;
    aml_live_slot *slots = calloc(new_capacity, sizeof *slots);
    if (!slots)
        return false;
    aml_live_table grown = {.slots = slots, .mask = new_capacity - 1, .shift = 64 - bits};
    for (uint64_t i = 0; i < capacity; i++) {
        if (table->slots[i].block)
            live_put(&grown, table->slots[i].addr, table->slots[i].block);
    }
    free(table->slots);
    *table = grown;
    return true;
}

static uint64_t live_slot_of(const aml_live_table *table, uint64_t addr) {
    if (!table->slots)
        return UINT64_MAX;
    for (uint64_t i = live_home(table, addr); table->slots[i].block; i = (i + 1) & table->mask) {
        if (table->slots[i].addr == addr)
            return i;
    }
    return UINT64_MAX;
}

static void live_delete(aml_live_table *table, uint64_t addr) {
    uint64_t hole = live_slot_of(table, addr);
    if (GMT_NEVER(hole == UINT64_MAX)) /* only a live block is deleted: it is in the table */
        return;
    for (uint64_t i = (hole + 1) & table->mask; table->slots[i].block; i = (i + 1) & table->mask) {
        uint64_t home = live_home(table, table->slots[i].addr);
        /* the entry may move into the hole unless its home lies cyclically in (hole, i] */
        bool stays = hole <= i ? hole < home && home <= i : hole < home || home <= i;
        if (!stays) {
            table->slots[hole] = table->slots[i];
            hole = i;
        }
    }
    table->slots[hole] = (aml_live_slot){0, NULL};
    table->count--;
}

/* ---- storage ---- */

void aml_init_storage(am_model *model) {
    model->free_blocks[0].has_values = model->free_blocks[1].has_values = true;
    model->segments.has_values = true;
    model->block_pool =
        (aml_node_pool){.item_size = round_to_line(sizeof(am_block)), .next_chunk_items = 256};
    model->segment_pool =
        (aml_node_pool){.item_size = round_to_line(sizeof(am_segment)), .next_chunk_items = 64};
}

bool aml_reserve(am_model *model, size_t blocks, size_t segments, size_t live) {
    return pool_reserve(&model->block_pool, blocks) &&
           pool_reserve(&model->segment_pool, segments) && live_reserve(&model->live, live);
}

void aml_release_storage(am_model *model) {
    free(model->reservations);
    pool_release_all(&model->block_pool);
    pool_release_all(&model->segment_pool);
    free(model->live.slots);
}

/* ---- blocks ---- */

/* A new inactive block with the segment facts of `like`, in the address index right beside
 * `neighbour` (after it when `side` is 1, before when 0; no search) or, without a neighbour,
 * where its address sorts. Not yet linked into a segment. */
static am_block *block_new(am_model *model, uint64_t addr, uint64_t size, const am_block *like,
                           am_block *neighbour, int side) {
    am_block *block = pool_take(&model->block_pool);
    *block = (am_block){.addr = addr,
                        .size = size,
                        .stream = like->segment_stream,
                        .segment_stream = like->segment_stream,
                        .state = AM_BLOCK_INACTIVE,
                        .is_small = like->is_small,
                        .is_expandable = like->is_expandable};
    set_key(&block->by_addr, addr, 0, 0);
    if (!neighbour)
        ami_insert(&model->blocks, &block->by_addr);
    else if (side)
        ami_insert_after(&model->blocks, &neighbour->by_addr, &block->by_addr);
    else
        ami_insert_before(&model->blocks, &neighbour->by_addr, &block->by_addr);
    return block;
}

static void block_destroy(am_model *model, am_block *block) {
    ami_remove(&model->blocks, &block->by_addr);
    pool_give(&model->block_pool, block);
}

static void link_after(am_block *before, am_block *block) {
    block->prev = before;
    block->next = before->next;
    if (before->next)
        before->next->prev = block;
    before->next = block;
}

static void link_before(am_block *after, am_block *block) {
    block->next = after;
    block->prev = after->prev;
    if (after->prev)
        after->prev->next = block;
    after->prev = block;
}

static void unlink_block(am_block *block) {
    if (block->prev)
        block->prev->next = block->next;
    if (block->next)
        block->next->prev = block->prev;
    block->prev = block->next = NULL;
}

/* ---- what empty_cache() would give back ---- */

uint64_t aml_releasable_of(const am_model *model, const am_block *block) {
    if (!block->prev && !block->next)
        return block->size;
    if (!block->is_expandable)
        return 0;
    const am_segment *segment = aml_segment_containing(model, block->addr);
    if (GMT_NEVER(!segment)) /* every block lies in its segment */
        return 0;
    uint64_t page = am_expandable_page(block->is_small);
    uint64_t first = (block->addr - segment->addr + page - 1) / page;
    uint64_t end = (aml_block_end(block) - segment->addr) / page;
    return end > first ? (end - first) * page : 0;
}

/* The inactive blocks carry their part of model->releasable, set at every change of their
 * place in the free index (the only times an inactive block's range or neighbours change,
 * except for the segment surgery below, which refreshes its blocks itself), so the total is
 * O(1) to keep and to read. */
static void releasable_refresh(am_model *model, am_block *block) {
    model->releasable -= block->releasable;
    block->releasable = aml_releasable_of(model, block);
    model->releasable += block->releasable;
}

static void free_index_insert(am_model *model, am_block *block) {
    set_key(&block->by_size, block->segment_stream, block->size, block->addr);
    block->by_size.value = block->size;
    ami_insert(&model->free_blocks[block->is_small], &block->by_size);
    block->gc_base = model->free_block_searches[block->is_small]; /* insert_into_blocks */
    block->releasable = 0;
    releasable_refresh(model, block);
}

/* An indexed inactive block changed its size or address: moves it in the free index. */
static void free_index_update(am_model *model, am_block *block) {
    ami_update(&model->free_blocks[block->is_small], &block->by_size, block->segment_stream,
               block->size, block->addr, block->size);
    block->gc_base = model->free_block_searches[block->is_small]; /* PyTorch re-inserts it */
    releasable_refresh(model, block);
}

static void free_index_remove(am_model *model, am_block *block) {
    ami_remove(&model->free_blocks[block->is_small], &block->by_size);
    model->releasable -= block->releasable;
    block->releasable = 0;
}

/* An inactive block whose neighbours changed without a move in the free index. */
static void releasable_refresh_if_inactive(am_model *model, am_block *block) {
    if (block && block->state == AM_BLOCK_INACTIVE)
        releasable_refresh(model, block);
}

/* After a map or unmap moved the start of an expandable segment's page grid by `shift` bytes
 * (its blocks keep their addresses): the parts of its inactive blocks change only when the
 * shift is not a whole number of pages — never for PyTorch's maps, which come in whole pages,
 * so the walk over the segment's blocks is for other VMM users' odd sizes only. */
static void releasable_after_shift(am_model *model, const am_segment *segment, uint64_t shift) {
    if (!segment->is_expandable || shift % am_expandable_page(segment->is_small) == 0)
        return;
    for (am_block *b = aml_first_block_of(model, segment); b; b = b->next)
        releasable_refresh_if_inactive(model, b);
}

am_block *aml_block_containing(const am_model *model, uint64_t addr) {
    ami_node *node = ami_search(&model->blocks, AMI_LE, addr, 0, 0);
    if (!node)
        return NULL;
    am_block *block = AML_BLOCK_BY_ADDR(node);
    return addr - block->addr < block->size ? block : NULL;
}

am_block *aml_live_block_at(const am_model *model, uint64_t addr) {
    uint64_t slot = live_slot_of(&model->live, addr);
    return slot == UINT64_MAX ? NULL : model->live.slots[slot].block;
}

am_block *aml_carve(am_model *model, am_block *block, uint64_t addr, uint64_t size) {
    uint64_t end = addr + size, old_end = aml_block_end(block);
    /* `block` keeps a free piece when one is left, so that its index entry can often stay */
    if (addr > block->addr) { /* block stays the piece before */
        am_block *middle = block_new(model, addr, size, block, block, 1);
        link_after(block, middle);
        if (end < old_end) {
            am_block *after = block_new(model, end, old_end - end, block, middle, 1);
            link_after(middle, after);
            free_index_insert(model, after);
        }
        block->size = addr - block->addr;
        free_index_update(model, block);
        return middle;
    }
    if (end < old_end) {   /* block becomes the piece after */
        block->addr = end; /* moves up within its own range: order is kept */
        block->by_addr.key[0] = end;
        block->size = old_end - end;
        am_block *middle = block_new(model, addr, size, block, block, 0);
        link_before(block, middle);
        free_index_update(model, block);
        return middle;
    }
    free_index_remove(model, block);
    return block;
}

/* Merges the inactive, unindexed `block` with inactive neighbours and indexes the result. The
 * survivor is an already indexed neighbour when there is one, so its entry can often stay. */
static void merge_and_index(am_model *model, am_block *block) {
    am_block *prev = block->prev, *next = block->next;
    bool merge_prev = prev && prev->state == AM_BLOCK_INACTIVE;
    bool merge_next = next && next->state == AM_BLOCK_INACTIVE;
    if (!merge_prev && !merge_next) {
        free_index_insert(model, block);
        return;
    }
    am_block *survivor = merge_prev ? prev : next;
    uint64_t addr = merge_prev ? prev->addr : block->addr;
    survivor->size += block->size;
    unlink_block(block);
    block_destroy(model, block);
    if (merge_prev && merge_next) {
        free_index_remove(model, next);
        survivor->size += next->size;
        unlink_block(next);
        block_destroy(model, next);
    }
    survivor->addr = addr; /* next grows down into the range just destroyed: order is kept */
    survivor->by_addr.key[0] = addr;
    free_index_update(model, survivor);
}

void aml_make_allocated(am_model *model, am_block *block, uint64_t requested, uint64_t stream,
                        uint64_t tag) {
    block->state = AM_BLOCK_ALLOCATED;
    block->requested = requested;
    block->stream = stream;
    block->tag = tag;
    live_put(&model->live, block->addr, block);
    model->allocated += block->size;
    model->requested += requested;
    model->live_blocks++;
}

void aml_mark_pending(am_model *model, am_block *block) {
    block->state = AM_BLOCK_PENDING_FREE;
    block->pending_older = model->pending_newest;
    block->pending_newer = NULL;
    if (model->pending_newest)
        model->pending_newest->pending_newer = block;
    else
        model->pending_oldest = block;
    model->pending_newest = block;
    model->pending_blocks++;
}

static void pending_unlink(am_model *model, am_block *block) {
    if (block->pending_older)
        block->pending_older->pending_newer = block->pending_newer;
    else
        model->pending_oldest = block->pending_newer;
    if (block->pending_newer)
        block->pending_newer->pending_older = block->pending_older;
    else
        model->pending_newest = block->pending_older;
    block->pending_older = block->pending_newer = NULL;
    model->pending_blocks--;
}

void aml_make_inactive(am_model *model, am_block *block) {
    /* its callers take it from the live table or the pending list */
    if (GMT_NEVER(block->state == AM_BLOCK_INACTIVE))
        return;
    if (block->state == AM_BLOCK_PENDING_FREE)
        pending_unlink(model, block);
    live_delete(&model->live, block->addr);
    model->allocated -= block->size;
    model->requested -= block->requested;
    model->live_blocks--;
    block->state = AM_BLOCK_INACTIVE;
    block->requested = 0;
    block->tag = 0;
    block->stream = block->segment_stream;
    merge_and_index(model, block);
}

/* ---- segments ---- */

am_segment *aml_segment_containing(const am_model *model, uint64_t addr) {
    ami_node *node = ami_search(&model->segments, AMI_LE, addr, 0, 0);
    if (!node)
        return NULL;
    am_segment *segment = AML_SEGMENT_OF(node);
    return addr - segment->addr < segment->size ? segment : NULL;
}

am_block *aml_first_block_of(const am_model *model, const am_segment *segment) {
    return AML_BLOCK_BY_ADDR(ami_search(&model->blocks, AMI_LE, segment->addr, 0, 0));
}

static am_block *last_block_of(const am_model *model, const am_segment *segment) {
    ami_node *node = ami_search(&model->blocks, AMI_LE, aml_segment_end(segment) - 1, 0, 0);
    return AML_BLOCK_BY_ADDR(node);
}

bool aml_range_overlaps_segment(const am_model *model, uint64_t addr, uint64_t size) {
    ami_node *node = ami_search(&model->segments, AMI_LT, addr + size, 0, 0);
    return node && aml_segment_end(AML_SEGMENT_OF(node)) > addr;
}

/* The usable gap before `segment`: from the previous segment's end (or va_base), aligned. */
static void expected_gap(const am_model *model, const am_segment *segment, uint64_t *start,
                         uint64_t *length) {
    uint64_t from = segment->prev ? aml_segment_end(segment->prev) : 0;
    if (from < model->config.va_base)
        from = model->config.va_base;
    *start = align_up_saturating(from, VA_ALIGN);
    *length = segment->addr > *start ? segment->addr - *start : 0;
}

static void refresh_gap(am_model *model, am_segment *segment) {
    if (!segment)
        return;
    uint64_t length;
    expected_gap(model, segment, &segment->gap_start, &length);
    ami_set_value(&model->segments, &segment->by_addr, length);
}

bool aml_find_free_range(const am_model *model, uint64_t size, uint64_t *addr) {
    ami_node *gap = ami_first_with_value(&model->segments, size);
    if (gap) {
        *addr = AML_SEGMENT_OF(gap)->gap_start;
        return true;
    }
    uint64_t from = model->last_segment ? aml_segment_end(model->last_segment) : 0;
    *addr =
        align_up_saturating(from > model->config.va_base ? from : model->config.va_base, VA_ALIGN);
    return aml_range_is_valid(*addr, size);
}

/* Puts a filled-in segment into the list and the index after `prev` (NULL: first). */
static void segment_attach(am_model *model, am_segment *segment, am_segment *prev) {
    segment->prev = prev;
    segment->next = prev ? prev->next : model->first_segment;
    if (segment->next)
        segment->next->prev = segment;
    else
        model->last_segment = segment;
    if (prev)
        prev->next = segment;
    else
        model->first_segment = segment;
    set_key(&segment->by_addr, segment->addr, 0, 0);
    segment->by_addr.value = 0;
    ami_insert(&model->segments, &segment->by_addr);
    refresh_gap(model, segment);
    refresh_gap(model, segment->next);
}

static void segment_detach(am_model *model, am_segment *segment) {
    if (segment->prev)
        segment->prev->next = segment->next;
    else
        model->first_segment = segment->next;
    if (segment->next)
        segment->next->prev = segment->prev;
    else
        model->last_segment = segment->prev;
    ami_remove(&model->segments, &segment->by_addr);
    refresh_gap(model, segment->next);
    pool_give(&model->segment_pool, segment);
}

am_block *aml_segment_create(am_model *model, uint64_t addr, uint64_t size, uint64_t stream,
                             uint64_t tag, bool is_small, bool is_expandable) {
    am_segment *segment = pool_take(&model->segment_pool);
    *segment = (am_segment){.addr = addr,
                            .size = size,
                            .stream = stream,
                            .tag = tag,
                            .is_small = is_small,
                            .is_expandable = is_expandable};
    ami_node *prev = ami_search(&model->segments, AMI_LT, addr, 0, 0);
    segment_attach(model, segment, prev ? AML_SEGMENT_OF(prev) : NULL);
    model->reserved += size;
    am_block like = {
        .segment_stream = stream, .is_small = is_small, .is_expandable = is_expandable};
    am_block *block = block_new(model, addr, size, &like, NULL, 1);
    free_index_insert(model, block);
    return block;
}

void aml_segment_destroy(am_model *model, am_segment *segment) {
    am_block *block = aml_first_block_of(model, segment);
    free_index_remove(model, block);
    block_destroy(model, block);
    model->reserved -= segment->size;
    segment_detach(model, segment);
}

void aml_segment_extend(am_model *model, am_segment *below, am_segment *above, uint64_t addr,
                        uint64_t size) {
    /* where the page grid of above's blocks starts after the join, against before */
    uint64_t above_shift = above ? (below ? above->addr - below->addr : size) : 0;
    model->reserved += size;
    am_block *mapped;
    if (below) {
        am_block *last = last_block_of(model, below);
        mapped = block_new(model, addr, size, last, last, 1);
        link_after(last, mapped);
        below->size += size;
        if (above) { /* the range filled a hole: the two mapped ranges become one segment */
            am_block *first_above = aml_first_block_of(model, above);
            mapped->next = first_above;
            first_above->prev = mapped;
            below->size += above->size;
            segment_detach(model, above);
        }
        refresh_gap(model, below->next);
    } else {
        am_block *first_above = aml_first_block_of(model, above);
        mapped = block_new(model, addr, size, first_above, first_above, 0);
        mapped->next = first_above;
        first_above->prev = mapped;
        above->addr = addr; /* moves down into a range no segment holds: order is kept */
        above->by_addr.key[0] = addr;
        above->size += size;
        refresh_gap(model, above);
    }
    /* mapped merged with its free neighbours (their parts refreshed); the blocks that came
     * from above are on the joined segment's grid now */
    merge_and_index(model, mapped);
    if (above_shift)
        releasable_after_shift(model, below ? below : above, above_shift);
}

void aml_segment_cut(am_model *model, am_segment *segment, am_block *block, uint64_t addr,
                     uint64_t size) {
    am_block *hole = aml_carve(model, block, addr, size);
    am_block *front = hole->prev, *back = hole->next;
    if (front) /* the hole cuts the block list: no neighbour links across it */
        front->next = NULL;
    if (back)
        back->prev = NULL;
    block_destroy(model, hole);
    model->reserved -= size;
    uint64_t old_end = aml_segment_end(segment), old_addr = segment->addr;
    if (!front && !back) {
        segment_detach(model, segment);
    } else if (!front) {
        segment->addr = addr + size; /* moves up within its own range: order is kept */
        segment->by_addr.key[0] = segment->addr;
        segment->size -= size;
        refresh_gap(model, segment);
        releasable_after_shift(model, segment, segment->addr - old_addr);
    } else if (!back) {
        segment->size -= size;
        refresh_gap(model, segment->next);
    } else { /* a hole in the middle: the mapped range above becomes its own segment */
        am_segment *upper = pool_take(&model->segment_pool);
        *upper = *segment;
        upper->addr = addr + size;
        upper->size = old_end - upper->addr;
        segment->size = addr - segment->addr;
        segment_attach(model, upper, segment);
        releasable_after_shift(model, upper, upper->addr - old_addr);
    }
    /* the blocks beside the hole lost a neighbour: a free one may be its segment's only one */
    releasable_refresh_if_inactive(model, front);
    releasable_refresh_if_inactive(model, back);
}

/* ---- checking ---- */

typedef struct walk_totals {
    uint64_t reserved, allocated, requested, live, pending, inactive, blocks, segments, largest;
    uint64_t releasable;
} walk_totals;

static bool block_is_sound(const am_model *model, const am_segment *segment, const am_block *block,
                           walk_totals *totals) {
    if (block->size == 0 || block->by_addr.key[0] != block->addr ||
        ami_search(&model->blocks, AMI_LE, block->addr, 0, 0) != &block->by_addr ||
        block->segment_stream != segment->stream || block->is_small != segment->is_small ||
        block->is_expandable != segment->is_expandable ||
        (block->next && block->next->prev != block))
        return false;
    totals->blocks++;
    if (block->state == AM_BLOCK_INACTIVE) {
        const ami_node *indexed = ami_search(&model->free_blocks[block->is_small], AMI_LE,
                                             block->segment_stream, block->size, block->addr);
        if (indexed != &block->by_size || block->by_size.value != block->size ||
            block->requested != 0 || block->tag != 0 || block->stream != block->segment_stream ||
            (block->prev && block->prev->state == AM_BLOCK_INACTIVE) ||
            aml_live_block_at(model, block->addr))
            return false;
        if (block->releasable != aml_releasable_of(model, block))
            return false;
        totals->releasable += block->releasable;
        totals->inactive++;
        if (block->size > totals->largest)
            totals->largest = block->size;
        return true;
    }
    totals->live++;
    totals->allocated += block->size;
    totals->requested += block->requested;
    totals->pending += block->state == AM_BLOCK_PENDING_FREE;
    return (block->state == AM_BLOCK_ALLOCATED || block->state == AM_BLOCK_PENDING_FREE) &&
           aml_live_block_at(model, block->addr) == block;
}

static bool segment_is_sound(const am_model *model, const am_segment *segment,
                             walk_totals *totals) {
    uint64_t gap_start, gap;
    expected_gap(model, segment, &gap_start, &gap);
    if (segment->size == 0 || segment->by_addr.key[0] != segment->addr ||
        ami_search(&model->segments, AMI_LE, segment->addr, 0, 0) != &segment->by_addr ||
        segment->gap_start != gap_start || segment->by_addr.value != gap ||
        (segment->prev && aml_segment_end(segment->prev) > segment->addr) ||
        (segment->next ? segment->next->prev != segment : model->last_segment != segment))
        return false;
    totals->segments++;
    totals->reserved += segment->size;
    const am_block *block = aml_first_block_of(model, segment);
    if (block->addr != segment->addr || block->prev)
        return false;
    uint64_t expected_addr = segment->addr;
    for (; block; block = block->next) {
        if (block->addr != expected_addr || !block_is_sound(model, segment, block, totals))
            return false;
        expected_addr = aml_block_end(block);
    }
    return expected_addr == aml_segment_end(segment);
}

bool aml_is_sound(const am_model *model) {
    walk_totals totals = {0};
    if (model->first_segment && model->first_segment->prev)
        return false;
    for (const am_segment *segment = model->first_segment; segment; segment = segment->next) {
        if (!segment_is_sound(model, segment, &totals))
            return false;
    }
    uint64_t pending = 0;
    for (const am_block *block = model->pending_oldest; block; block = block->pending_newer) {
        if (block->state != AM_BLOCK_PENDING_FREE ||
            (block->pending_newer ? block->pending_newer->pending_older != block
                                  : model->pending_newest != block))
            return false;
        pending++;
    }
    uint64_t largest = ami_max_value(&model->free_blocks[0]);
    if (ami_max_value(&model->free_blocks[1]) > largest)
        largest = ami_max_value(&model->free_blocks[1]);
    return totals.segments == model->segments.count && totals.blocks == model->blocks.count &&
           totals.reserved == model->reserved && totals.allocated == model->allocated &&
           totals.requested == model->requested && totals.live == model->live_blocks &&
           totals.live == model->live.count && totals.pending == model->pending_blocks &&
           pending == totals.pending &&
           totals.inactive == model->free_blocks[0].count + model->free_blocks[1].count &&
           totals.largest == largest && totals.releasable == model->releasable &&
           (model->first_segment != NULL) == (model->last_segment != NULL) &&
           ami_validate(&model->free_blocks[0]) == 0 && ami_validate(&model->free_blocks[1]) == 0 &&
           ami_validate(&model->blocks) == 0 && ami_validate(&model->segments) == 0;
}
