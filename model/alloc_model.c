/* alloc_model.c — the caching-allocator model's policy and public API (alloc_model.h).
 *
 * This file decides; alloc_model_layout.c changes the layout. Here live PyTorch's rules
 * (DeviceCachingAllocator in c10/cuda/CUDACachingAllocator.cpp): pools, best fit, split, the
 * malloc sequence with its cache release and retry, empty_cache (the size rules, rounding
 * included, are in alloc_model_size.c; expandable segments in decide mode in
 * alloc_model_expandable.c); and the checks that turn an apply-mode operation that does not
 * fit the layout into an error before anything changes. Functions that mirror a PyTorch
 * function say which. */
#include "alloc_model.h"

#include "alloc_model_layout.h"
#include "alloc_model_policy.h"

#include <stdlib.h>

typedef amp_sink effect_sink;
#define emit amp_emit

static void describe_block(const am_block *block, uint64_t segment_addr, am_block_info *out) {
    *out = (am_block_info){.addr = block->addr,
                           .size = block->size,
                           .requested = block->requested,
                           .stream = block->stream,
                           .tag = block->tag,
                           .segment_addr = segment_addr,
                           .state = block->state};
}

static void describe_segment(const am_segment *segment, am_segment_info *out) {
    *out = (am_segment_info){.addr = segment->addr,
                             .size = segment->size,
                             .stream = segment->stream,
                             .tag = segment->tag,
                             .is_small = segment->is_small,
                             .is_expandable = segment->is_expandable};
}

/* ---- public: configuration, rules, stats ---- */

const char *am_strerror(am_error error) {
    switch (error) {
    case AM_OK:
        return "success";
    case AM_ERR_INVALID_ARG:
        return "invalid argument";
    case AM_ERR_NOMEM:
        return "out of host memory";
    case AM_ERR_OOM:
        return "out of device memory";
    case AM_ERR_NO_SEGMENT:
        return "no segment contains the address";
    case AM_ERR_NOT_FREE:
        return "range is not inside one inactive block";
    case AM_ERR_UNKNOWN_BLOCK:
        return "no allocated block starts at the address";
    case AM_ERR_ALREADY_PENDING:
        return "block is already pending-free";
    case AM_ERR_UNKNOWN_SEGMENT:
        return "no segment starts at the address";
    case AM_ERR_SEGMENT_OVERLAP:
        return "range overlaps an existing segment";
    case AM_ERR_SEGMENT_IN_USE:
        return "segment still holds live blocks";
    case AM_ERR_NOT_EXPANDABLE:
        return "segment is not expandable";
    case AM_ERR_CORRUPT:
        return "model invariant broken";
    }
    return "unknown error";
}

am_config am_config_default(void) {
    return (am_config){.device_capacity = 0,
                       .max_split_size = UINT64_MAX,
                       .va_base = AM_DEFAULT_VA_BASE,
                       .expandable_segments = false,
                       .max_non_split_rounding = AM_LARGE_BUFFER};
}

am_model *am_model_new(const am_config *cfg) {
    am_config config = cfg ? *cfg : am_config_default();
    /* PyTorch accepts max_split_size_mb and max_non_split_rounding_mb from 20 */
    if (config.max_split_size < AM_LARGE_BUFFER || config.max_non_split_rounding < AM_LARGE_BUFFER)
        return NULL;
    /* large_segment_size_mb must be above 10 (kMinLargeAlloc) */
    if (config.large_segment_size && config.large_segment_size <= AM_MIN_LARGE_ALLOC)
        return NULL;
    am_model *model = calloc(1, sizeof *model);
    if (!model)
        return NULL;
    model->config = config;
    aml_init_storage(model);
    return model;
}

void am_model_free(am_model *model) {
    if (!model)
        return;
    aml_release_storage(model);
    free(model);
}

am_stats_info am_stats(const am_model *model) {
    uint64_t largest_large = ami_max_value(&model->free_blocks[0]);
    uint64_t largest_small = ami_max_value(&model->free_blocks[1]);
    return (am_stats_info){
        .reserved_bytes = model->reserved,
        .allocated_bytes = model->allocated,
        .requested_bytes = model->requested,
        .segment_count = model->segments.count,
        .allocated_block_count = model->live_blocks,
        .pending_block_count = model->pending_blocks,
        .inactive_block_count = model->free_blocks[0].count + model->free_blocks[1].count,
        .largest_inactive_bytes = largest_large > largest_small ? largest_large : largest_small,
        .releasable_bytes = model->releasable};
}

/* ---- decide mode ---- */

/* get_free_block: best fit in the pool, same stream, within max_split_size's limits. Among
 * free blocks of expandable segments, one that could grow into unmapped pages counts as that
 * large (expandable_size): a later, larger block that can grow less is preferred. With
 * expandable segments off, their free blocks are not used. */
static am_block *find_free_block(const am_model *model, bool is_small, uint64_t stream,
                                 uint64_t size) {
    ami_node *node = ami_search(&model->free_blocks[is_small], AMI_GE, stream, size, 0);
    if (!node || node->key[0] != stream)
        return NULL;
    am_block *block = AML_BLOCK_BY_SIZE(node);
    if (block->is_expandable && model->config.expandable_segments) {
        uint64_t grows_to = amp_expandable_size(model, block);
        for (ami_node *next = ami_next(node); block->is_expandable && next; next = ami_next(node)) {
            uint64_t next_grows_to = amp_expandable_size(model, AML_BLOCK_BY_SIZE(next));
            if (next->key[0] != stream || next_grows_to >= grows_to)
                break;
            node = next;
            block = AML_BLOCK_BY_SIZE(node);
            grows_to = next_grows_to;
        }
    } else if (block->is_expandable) {
        do
            node = ami_next(node);
        while (node && node->key[0] == stream && AML_BLOCK_BY_SIZE(node)->is_expandable);
        if (!node || node->key[0] != stream)
            return NULL;
        block = AML_BLOCK_BY_SIZE(node);
    }
    uint64_t max_split = model->config.max_split_size;
    uint64_t found = block->size;
    if (size < max_split && found >= max_split)
        return NULL; /* no oversized block for a small request */
    if (size >= max_split && found - size >= model->config.max_non_split_rounding)
        return NULL; /* an oversized block may be rounded up, within a limit */
    return block;
}

static bool should_split(const am_model *model, const am_block *block, uint64_t size) {
    return am_should_split(&model->config, block->is_small, block->size, size);
}

/* alloc_block: "cudaMalloc" a segment of alloc_size, or report the failure. */
static am_block *alloc_segment(am_model *model, uint64_t alloc_size, uint64_t stream, bool is_small,
                               uint64_t tag, effect_sink sink) {
    uint64_t capacity = model->config.device_capacity;
    bool fits =
        capacity == 0 || (model->reserved <= capacity && alloc_size <= capacity - model->reserved);
    uint64_t addr = 0;
    if (fits) /* the address space itself may be full too */
        fits = aml_find_free_range(model, alloc_size, &addr) &&
               amp_below_expandable_region(model, addr, alloc_size);
    if (!fits) {
        emit(sink, (am_effect){.kind = AM_EFFECT_ALLOC_FAILED,
                               .size = alloc_size,
                               .stream = stream,
                               .is_small = is_small});
        return NULL;
    }
    am_block *block = aml_segment_create(model, addr, alloc_size, stream, tag, is_small, false);
    emit(sink, (am_effect){.kind = AM_EFFECT_SEGMENT_ALLOC,
                           .addr = addr,
                           .size = alloc_size,
                           .stream = stream,
                           .tag = tag,
                           .is_small = is_small});
    return block;
}

/* release_block: gives a cached segment (one inactive block) back to the driver. */
static void release_cached_segment(am_model *model, am_block *block, effect_sink sink) {
    am_segment *segment = aml_segment_containing(model, block->addr);
    am_effect effect = {.kind = AM_EFFECT_SEGMENT_FREE,
                        .addr = segment->addr,
                        .size = segment->size,
                        .stream = segment->stream,
                        .tag = segment->tag,
                        .is_small = segment->is_small};
    aml_segment_destroy(model, segment);
    emit(sink, effect);
}

static bool is_cached_segment(const am_block *block) {
    return !block->prev && !block->next && !block->is_expandable;
}

static bool in_private_pool(const am_block *block) {
    return (block->segment_stream & AM_STREAM_PRIVATE_POOL) != 0;
}

/* release_available_cached_blocks: with max_split_size set, frees oversized cached blocks of
 * the stream, one large enough or else the largest ones until enough is released. */
static bool release_oversized(am_model *model, bool is_small, uint64_t stream, uint64_t size,
                              effect_sink sink) {
    uint64_t max_split = model->config.max_split_size;
    if (max_split == UINT64_MAX)
        return false;
    ami_tree *pool = &model->free_blocks[is_small];
    uint64_t wanted = size < max_split ? max_split : size;
    ami_node *node = ami_search(pool, AMI_GE, stream, wanted, 0);
    if (node && node->key[0] == stream) {
        if (is_cached_segment(AML_BLOCK_BY_SIZE(node)))
            release_cached_segment(model, AML_BLOCK_BY_SIZE(node), sink);
        return true;
    }
    uint64_t released = 0;
    node = ami_search(pool, AMI_LT, stream, wanted, 0);
    while (node && released < wanted && node->key[1] >= max_split && node->key[0] == stream) {
        am_block *block = AML_BLOCK_BY_SIZE(node);
        node = ami_search(pool, AMI_LT, node->key[0], node->key[1], node->key[2]);
        if (is_cached_segment(block)) {
            released += block->size;
            release_cached_segment(model, block, sink);
        }
    }
    return released >= wanted;
}

/* synchronize_and_free_events: every pending free completes, oldest request first. */
static void complete_pending_frees(am_model *model, effect_sink sink) {
    while (model->pending_oldest) {
        am_block *block = model->pending_oldest;
        am_effect effect = {.kind = AM_EFFECT_FREE_COMPLETED,
                            .addr = block->addr,
                            .size = block->size,
                            .requested = block->requested,
                            .stream = block->stream,
                            .tag = block->tag,
                            .is_small = block->is_small};
        aml_make_inactive(model, block);
        emit(sink, effect);
    }
}

/* release_blocks for one pool: every cached segment, in (stream, size, address) order; private
 * pools keep theirs (release_cached_blocks frees only pools no graph uses any more). */
static void release_pool(am_model *model, bool is_small, effect_sink sink) {
    ami_tree *pool = &model->free_blocks[is_small];
    ami_node *node = ami_search(pool, AMI_GE, 0, 0, 0);
    while (node) {
        uint64_t key[3] = {node->key[0], node->key[1], node->key[2]};
        if (is_cached_segment(AML_BLOCK_BY_SIZE(node)) && !in_private_pool(AML_BLOCK_BY_SIZE(node)))
            release_cached_segment(model, AML_BLOCK_BY_SIZE(node), sink);
        node = ami_search(pool, AMI_GT, key[0], key[1], key[2]);
    }
}

/* release_cached_blocks: release_blocks of the large pool, then of the small one */
static am_error release_cache(am_model *model, effect_sink sink) {
    complete_pending_frees(model, sink);
    for (int is_small = 0; is_small < 2; is_small++) {
        release_pool(model, is_small, sink);
        am_error error = amp_unmap_free_pages(model, is_small, sink);
        if (error != AM_OK)
            return error;
    }
    return AM_OK;
}

/* garbage_collection_threshold applies: PyTorch's set_fraction (a memory limit) and a threshold. */
static bool collects_garbage(const am_model *model) {
    return model->config.garbage_collection_threshold > 0 && model->config.device_capacity > 0;
}

/* garbage_collect_cached_blocks: past threshold x limit reserved, releases the large pool's
 * cached segments (unsplit, not expandable) whose age (free-block searches since they became
 * free) is at least the average age of the unsplit free blocks, and again with the average of
 * those left, until enough is released or nothing more goes. Each round releases every block
 * at or above that round's average, not only as many as needed: PyTorch does not want the
 * collection to run again soon. */
static void collect_garbage(am_model *model, effect_sink sink) {
    uint64_t threshold = (uint64_t)(model->config.garbage_collection_threshold *
                                    (double)model->config.device_capacity);
    if (model->reserved <= threshold)
        return;
    uint64_t target = model->reserved - threshold, reclaimed = 0;
    ami_tree *pool = &model->free_blocks[0];
    uint64_t searches = model->free_block_searches[0], total_age = 0, freeable = 0;
    for (ami_node *node = ami_search(pool, AMI_GE, 0, 0, 0); node; node = ami_next(node)) {
        const am_block *block = AML_BLOCK_BY_SIZE(node);
        /* !is_split(): a free block of an expandable segment is split in PyTorch, whose
         * chain goes on into the range's unmapped blocks; large_blocks is the default pool */
        if (is_cached_segment(block) && !in_private_pool(block)) {
            total_age += searches - block->gc_base;
            freeable++;
        }
    }
    bool freed = true;
    while (reclaimed < target && freed && freeable > 0) {
        double age_threshold = (double)total_age / (double)freeable;
        freed = false;
        ami_node *node = ami_search(pool, AMI_GE, 0, 0, 0);
        while (node) {
            uint64_t key[3] = {node->key[0], node->key[1], node->key[2]};
            am_block *block = AML_BLOCK_BY_SIZE(node);
            uint64_t age = searches - block->gc_base;
            if (is_cached_segment(block) && !in_private_pool(block) &&
                (double)age >= age_threshold) {
                freed = true;
                reclaimed += block->size;
                total_age -= age;
                freeable--;
                release_cached_segment(model, block, sink);
            }
            node = ami_search(pool, AMI_GT, key[0], key[1], key[2]);
        }
    }
}

/* alloc_block: a new segment (cudaMalloc), or with expandable segments on, pages mapped
 * (try_allocate_expandable_block). NULL with *error AM_ERR_OOM or AM_ERR_NOMEM. */
static am_block *alloc_block(am_model *model, uint64_t size, uint64_t stream, bool is_small,
                             uint64_t tag, effect_sink sink, am_error *error) {
    if (model->config.expandable_segments && !(stream & AM_STREAM_PRIVATE_POOL))
        return amp_allocate_expandable(model, size, stream, is_small, tag, sink, error);
    am_block *block = alloc_segment(model, am_config_allocation_size(&model->config, size), stream,
                                    is_small, tag, sink);
    *error = block ? AM_OK : AM_ERR_OOM;
    return block;
}

am_error am_malloc(am_model *model, uint64_t requested, uint64_t stream, uint64_t tag,
                   am_effect_fn effect_fn, void *ctx, am_block_info *out) {
    if (!model || requested == 0 || requested > AM_MAX_REQUEST)
        return AM_ERR_INVALID_ARG;
    if (!aml_reserve(model, 2, 1, 1))
        return AM_ERR_NOMEM;
    effect_sink sink = {effect_fn, ctx};
    uint64_t size = am_config_round_size(&model->config, requested);
    bool is_small = am_is_small(size);
    bool collecting = collects_garbage(model);
    if (collecting && !(stream & AM_STREAM_PRIVATE_POOL)) /* a private pool counts its own */
        model->free_block_searches[is_small]++;
    am_block *block = find_free_block(model, is_small, stream, size);
    if (!block) {
        am_error error;
        if (collecting)
            collect_garbage(model, sink);
        block = alloc_block(model, size, stream, is_small, tag, sink, &error);
        if (!block && error == AM_ERR_OOM && release_oversized(model, is_small, stream, size, sink))
            block = alloc_block(model, size, stream, is_small, tag, sink, &error);
        if (!block && error == AM_ERR_OOM) {
            error = release_cache(model, sink);
            if (error == AM_OK)
                block = alloc_block(model, size, stream, is_small, tag, sink, &error);
        }
        if (!block && error == AM_ERR_NOMEM)
            return AM_ERR_NOMEM;
        if (!block) {
            uint64_t capacity = model->config.device_capacity;
            emit(sink, (am_effect){.kind = AM_EFFECT_OOM,
                                   .requested = requested,
                                   .size = size,
                                   .stream = stream,
                                   .device_free =
                                       capacity > model->reserved ? capacity - model->reserved : 0,
                                   .is_small = is_small});
            return AM_ERR_OOM;
        }
    }
    uint64_t taken = should_split(model, block, size) ? size : block->size;
    block = aml_carve(model, block, block->addr, taken);
    aml_make_allocated(model, block, requested, stream, tag);
    if (out)
        describe_block(block, 0, out);
    return AM_OK;
}

am_error am_free(am_model *model, uint64_t addr) {
    if (!model)
        return AM_ERR_INVALID_ARG;
    am_block *block = aml_live_block_at(model, addr);
    if (!block)
        return AM_ERR_UNKNOWN_BLOCK;
    aml_make_inactive(model, block);
    return AM_OK;
}

am_error am_free_request(am_model *model, uint64_t addr) {
    if (!model)
        return AM_ERR_INVALID_ARG;
    am_block *block = aml_live_block_at(model, addr);
    if (!block)
        return AM_ERR_UNKNOWN_BLOCK;
    if (block->state == AM_BLOCK_PENDING_FREE)
        return AM_ERR_ALREADY_PENDING;
    aml_mark_pending(model, block);
    return AM_OK;
}

am_error am_empty_cache(am_model *model, am_effect_fn effect_fn, void *ctx) {
    if (!model)
        return AM_ERR_INVALID_ARG;
    return release_cache(model, (effect_sink){effect_fn, ctx});
}

/* ---- apply mode ---- */

/* Whether a new segment may take [addr, addr+size): AM_OK with room for it reserved. */
static am_error check_new_range(am_model *model, uint64_t addr, uint64_t size) {
    if (!model || !aml_range_is_valid(addr, size))
        return AM_ERR_INVALID_ARG;
    if (aml_range_overlaps_segment(model, addr, size))
        return AM_ERR_SEGMENT_OVERLAP;
    return aml_reserve(model, 1, 1, 0) ? AM_OK : AM_ERR_NOMEM;
}

am_error am_segment_insert(am_model *model, uint64_t addr, uint64_t size, uint64_t stream,
                           uint64_t tag) {
    am_error error = check_new_range(model, addr, size);
    if (error == AM_OK)
        aml_segment_create(model, addr, size, stream, tag, size <= AM_SMALL_BUFFER, false);
    return error;
}

am_error am_segment_remove(am_model *model, uint64_t addr) {
    if (!model)
        return AM_ERR_INVALID_ARG;
    am_segment *segment = aml_segment_containing(model, addr);
    if (!segment || segment->addr != addr)
        return AM_ERR_UNKNOWN_SEGMENT;
    am_block *first = aml_first_block_of(model, segment);
    if (first->next || first->state != AM_BLOCK_INACTIVE)
        return AM_ERR_SEGMENT_IN_USE;
    aml_segment_destroy(model, segment);
    return AM_OK;
}

void amp_map_range(am_model *model, uint64_t addr, uint64_t size, uint64_t stream, uint64_t tag,
                   bool is_small) {
    ami_node *node = ami_search(&model->segments, AMI_LT, addr, 0, 0);
    am_segment *below = node ? AML_SEGMENT_OF(node) : NULL;
    am_segment *above = below ? below->next : model->first_segment;
    if (below && !(below->is_expandable && below->stream == stream && below->is_small == is_small &&
                   aml_segment_end(below) == addr))
        below = NULL;
    if (above && !(above->is_expandable && above->stream == stream && above->is_small == is_small &&
                   above->addr == addr + size))
        above = NULL;
    if (below || above)
        aml_segment_extend(model, below, above, addr, size);
    else
        aml_segment_create(model, addr, size, stream, tag, is_small, true);
}

am_error am_segment_map_in_pool(am_model *model, uint64_t addr, uint64_t size, uint64_t stream,
                                uint64_t tag, bool is_small) {
    am_error error = check_new_range(model, addr, size);
    if (error == AM_OK)
        amp_map_range(model, addr, size, stream, tag, is_small);
    return error;
}

am_error am_segment_map(am_model *model, uint64_t addr, uint64_t size, uint64_t stream,
                        uint64_t tag) {
    return am_segment_map_in_pool(model, addr, size, stream, tag, size <= AM_SMALL_BUFFER);
}

am_error am_segment_unmap(am_model *model, uint64_t addr, uint64_t size) {
    if (!model || !aml_range_is_valid(addr, size))
        return AM_ERR_INVALID_ARG;
    am_block *block = aml_block_containing(model, addr);
    if (!block)
        return AM_ERR_NO_SEGMENT;
    am_segment *segment = aml_segment_containing(model, addr);
    if (!segment->is_expandable)
        return AM_ERR_NOT_EXPANDABLE;
    if (block->state != AM_BLOCK_INACTIVE || size > aml_block_end(block) - addr)
        return AM_ERR_NOT_FREE;
    if (!aml_reserve(model, 2, 1, 0))
        return AM_ERR_NOMEM;
    aml_segment_cut(model, segment, block, addr, size);
    return AM_OK;
}

am_error am_block_place(am_model *model, uint64_t addr, uint64_t size, uint64_t requested,
                        uint64_t stream, uint64_t tag) {
    if (!model || !aml_range_is_valid(addr, size))
        return AM_ERR_INVALID_ARG;
    am_block *block = aml_block_containing(model, addr);
    if (!block)
        return AM_ERR_NO_SEGMENT;
    if (block->state != AM_BLOCK_INACTIVE || size > aml_block_end(block) - addr)
        return AM_ERR_NOT_FREE;
    if (!aml_reserve(model, 2, 0, 1))
        return AM_ERR_NOMEM;
    block = aml_carve(model, block, addr, size);
    aml_make_allocated(model, block, requested, stream, tag);
    return AM_OK;
}

am_error am_block_place_requested(am_model *model, uint64_t addr, uint64_t requested,
                                  uint64_t stream, uint64_t tag, am_block_info *out) {
    if (!model || requested == 0 || requested > AM_MAX_REQUEST)
        return AM_ERR_INVALID_ARG;
    am_block *block = aml_block_containing(model, addr);
    if (!block)
        return AM_ERR_NO_SEGMENT;
    uint64_t size = am_config_round_size(&model->config, requested);
    if (block->state != AM_BLOCK_INACTIVE || size > aml_block_end(block) - addr)
        return AM_ERR_NOT_FREE;
    /* PyTorch handed out the start of a free block and split off the rest only when
     * should_split allowed it; otherwise the block kept the whole free block. What lies
     * from addr on is that free block (before addr it may have merged with a neighbour
     * freed since). */
    uint64_t remaining = aml_block_end(block) - addr - size;
    if (!am_should_split(&model->config, block->is_small, size + remaining, size))
        size += remaining;
    /* as am_block_place, without searching for the block a second time */
    if (!aml_reserve(model, 2, 0, 1))
        return AM_ERR_NOMEM;
    block = aml_carve(model, block, addr, size);
    aml_make_allocated(model, block, requested, stream, tag);
    if (out)
        describe_block(block, 0, out);
    return AM_OK;
}

am_error am_block_release(am_model *model, uint64_t addr) { return am_free(model, addr); }

am_error am_block_mark_pending(am_model *model, uint64_t addr) {
    return am_free_request(model, addr);
}

/* ---- queries and walking ---- */

am_error am_block_lookup(const am_model *model, uint64_t addr, am_block_info *out) {
    if (!model || !out)
        return AM_ERR_INVALID_ARG;
    am_block *block = aml_block_containing(model, addr);
    if (!block)
        return AM_ERR_NO_SEGMENT;
    describe_block(block, aml_segment_containing(model, addr)->addr, out);
    return AM_OK;
}

am_error am_segment_lookup(const am_model *model, uint64_t addr, am_segment_info *out) {
    if (!model || !out)
        return AM_ERR_INVALID_ARG;
    am_segment *segment = aml_segment_containing(model, addr);
    if (!segment)
        return AM_ERR_NO_SEGMENT;
    describe_segment(segment, out);
    return AM_OK;
}

const am_segment *am_first_segment(const am_model *model) { return model->first_segment; }

const am_segment *am_next_segment(const am_segment *segment) { return segment->next; }

void am_segment_get(const am_segment *segment, am_segment_info *out) {
    describe_segment(segment, out);
}

const am_block *am_segment_first_block(const am_model *model, const am_segment *segment) {
    return aml_first_block_of(model, segment);
}

const am_block *am_next_block(const am_block *block) { return block->next; }

void am_block_get(const am_block *block, am_block_info *out) { describe_block(block, 0, out); }

am_error am_validate(const am_model *model) {
    if (!model)
        return AM_ERR_INVALID_ARG;
    return aml_is_sound(model) ? AM_OK : AM_ERR_CORRUPT;
}
