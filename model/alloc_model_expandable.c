/* alloc_model_expandable.c — expandable segments in decide mode (alloc_model_policy.h).
 *
 * PyTorch (c10/cuda/CUDACachingAllocator.cpp, ExpandableSegment and DeviceCachingAllocator)
 * reserves, per stream and pool, an address range of 1 1/8 of the device's memory and maps
 * physical pages into it: 20 MiB pages in the large pool, 2 MiB in the small one (the note in
 * the source that speaks of "2MiB pages" means the small pool). Its blocks tile the whole
 * range, unmapped ones included; here a reservation is a range (aml_reservation), the mapped
 * pages are the model's expandable segments inside it and the unmapped pages are the gaps
 * between them. The rules mirrored:
 *  - find_expandable_block: over the reservation's unmapped gaps in address order, the first
 *    one that, together with the free block just before it (taken as the start when free) and
 *    the free and unmapped space after it, holds the request; else a new reservation.
 *  - map_block: a map covers whole pages from the start of the gap (the request rounded up to
 *    pages, at most the gap) and fails as a whole when the device cannot hold them; the mapped
 *    memory merges with free neighbours.
 *  - unmap_block: only the pages lying entirely inside a free block are unmapped; a reservation
 *    with nothing mapped is given back.
 * Every map and unmap is reported as an effect, as PyTorch records segment_map and
 * segment_unmap. */
#include "alloc_model_policy.h"

#include "gmt_assert.h"

#include <stdlib.h>

#define VA_ALIGN AM_ROUND_LARGE       /* address reservations are 2 MiB aligned */
#define UNLIMITED_DEVICE (1ULL << 40) /* the "device size" of a model without a capacity */

static uint64_t reservation_end(const aml_reservation *r) { return r->addr + r->size; }

static aml_reservation *reservation_at(const am_model *model, uint64_t addr) {
    for (size_t i = 0; i < model->reservation_count; i++) {
        aml_reservation *r = &model->reservations[i];
        if (addr - r->addr < r->size)
            return r;
    }
    return NULL;
}

static uint64_t expandable_base(const am_model *model) {
    uint64_t base = model->config.va_base;
    return base > UINT64_MAX - AM_EXPANDABLE_VA_OFFSET ? UINT64_MAX
                                                       : base + AM_EXPANDABLE_VA_OFFSET;
}

bool amp_below_expandable_region(const am_model *model, uint64_t addr, uint64_t size) {
    uint64_t base = expandable_base(model);
    return addr < base && size <= base - addr;
}

/* The first gap after the segment that ends at `end` inside `r`: up to the next segment or the
 * end of the range. */
static uint64_t gap_end_after(const am_model *model, const aml_reservation *r, uint64_t end) {
    ami_node *node = ami_search(&model->segments, AMI_GE, end, 0, 0);
    uint64_t limit = reservation_end(r);
    if (node && AML_SEGMENT_OF(node)->addr < limit)
        return AML_SEGMENT_OF(node)->addr;
    return limit;
}

uint64_t amp_expandable_size(const am_model *model, const am_block *block) {
    if (!block->is_expandable || block->next)
        return block->size;
    uint64_t end = aml_block_end(block);
    const aml_reservation *r = reservation_at(model, block->addr);
    if (!r || end >= reservation_end(r))
        return block->size;
    return block->size + (gap_end_after(model, r, end) - end);
}

/* ---- walking a reservation: free blocks and unmapped gaps in address order ---- */

typedef struct span {
    am_block *block; /* NULL: unmapped */
    uint64_t addr, size;
} span;

static span block_span(am_block *block) { return (span){block, block->addr, block->size}; }

static bool allocatable(const span *s) { return !s->block || s->block->state == AM_BLOCK_INACTIVE; }

/* Moves *s to what follows it inside r; false at the end of r. */
static bool span_next(const am_model *model, const aml_reservation *r, span *s) {
    uint64_t end = s->addr + s->size;
    if (s->block && s->block->next) {
        *s = block_span(s->block->next);
        return true;
    }
    if (end >= reservation_end(r))
        return false;
    if (s->block) { /* the end of a mapped range: unmapped pages follow */
        uint64_t gap_end = gap_end_after(model, r, end);
        *s = (span){NULL, end, gap_end - end};
        return gap_end > end;
    }
    am_block *next = aml_block_containing(model, end); /* the next mapped range */
    if (!next)
        return false;
    *s = block_span(next);
    return true;
}

static bool has_room(const am_model *model, const aml_reservation *r, span s, uint64_t size) {
    uint64_t bytes = 0;
    for (;;) {
        if (bytes >= size || !allocatable(&s))
            break;
        bytes += s.size;
        if (!span_next(model, r, &s))
            break;
    }
    return bytes >= size;
}

/* find_expandable_block over the existing reservations of (stream, pool). */
static bool find_in_reservations(const am_model *model, uint64_t stream, bool is_small,
                                 uint64_t size, span *out, size_t *reservation) {
    for (size_t i = 0; i < model->reservation_count; i++) {
        const aml_reservation *r = &model->reservations[i];
        if (r->stream != stream || r->is_small != is_small)
            continue;
        uint64_t cursor = r->addr, limit = reservation_end(r);
        ami_node *node = ami_search(&model->segments, AMI_GE, r->addr, 0, 0);
        const am_segment *segment = node ? AML_SEGMENT_OF(node) : NULL;
        for (;;) {
            uint64_t gap_end = segment && segment->addr < limit ? segment->addr : limit;
            if (gap_end > cursor) {
                span c = {NULL, cursor, gap_end - cursor};
                if (cursor > r->addr) { /* a free block right before the gap starts it */
                    am_block *before = aml_block_containing(model, cursor - 1);
                    if (before && before->state == AM_BLOCK_INACTIVE)
                        c = block_span(before);
                }
                if (has_room(model, r, c, size)) {
                    *out = c;
                    *reservation = i;
                    return true;
                }
            }
            if (!segment || segment->addr >= limit)
                break;
            cursor = aml_segment_end(segment);
            segment = segment->next;
        }
    }
    return false;
}

static uint64_t align_up(uint64_t value, uint64_t alignment) {
    return value > UINT64_MAX - (alignment - 1) ? UINT64_MAX
                                                : (value + alignment - 1) / alignment * alignment;
}

/* The length of a reservation: 1 1/8 of the device, in whole pages. */
static uint64_t reservation_size(const am_model *model, bool is_small) {
    uint64_t page = am_expandable_page(is_small);
    uint64_t total =
        model->config.device_capacity ? model->config.device_capacity : UNLIMITED_DEVICE;
    if (total > (1ULL << 60)) /* no device is that large; keeps the sums below from wrapping */
        total = 1ULL << 60;
    uint64_t wanted = total + total / 8;
    return wanted / page * page + (wanted % page ? page : 0);
}

/* Inserts the reservation [addr, addr + size) at index `at` of the sorted list. */
static long insert_reservation(am_model *model, size_t at, uint64_t addr, uint64_t size,
                               uint64_t stream, bool is_small, am_error *error) {
    if (model->reservation_count == model->reservation_cap) {
        size_t cap = model->reservation_cap ? 2 * model->reservation_cap : 4;
        aml_reservation *grown = realloc(model->reservations, cap * sizeof *grown);
        if (!grown) {
            *error = AM_ERR_NOMEM;
            return -1;
        }
        model->reservations = grown;
        model->reservation_cap = cap;
    }
    for (size_t i = model->reservation_count; i > at; i--)
        model->reservations[i] = model->reservations[i - 1];
    model->reservations[at] = (aml_reservation){addr, size, stream, is_small};
    model->reservation_count++;
    return (long)at;
}

am_error am_expandable_adopt(am_model *model, uint64_t addr, uint64_t stream, bool is_small) {
    if (!model)
        return AM_ERR_INVALID_ARG;
    uint64_t size = reservation_size(model, is_small);
    if (size > UINT64_MAX - addr)
        return AM_ERR_INVALID_ARG;
    size_t at = 0;
    while (at < model->reservation_count && model->reservations[at].addr < addr)
        at++;
    /* Ranges never overlap in PyTorch, and the device's size (hence a range's length) may be
     * unknown: two adopted ranges end where the next begins. Only a range's unused tail is
     * given up; a mapped page in the way is a real overlap. */
    if (at < model->reservation_count && model->reservations[at].addr == addr)
        return AM_ERR_SEGMENT_OVERLAP;
    if (at < model->reservation_count && model->reservations[at].addr - addr < size)
        size = model->reservations[at].addr - addr;
    if (at > 0 && reservation_end(&model->reservations[at - 1]) > addr) {
        aml_reservation *before = &model->reservations[at - 1];
        ami_node *node = ami_search(&model->segments, AMI_GE, addr, 0, 0);
        if (aml_segment_containing(model, addr) ||
            (node && AML_SEGMENT_OF(node)->addr < reservation_end(before)))
            return AM_ERR_SEGMENT_OVERLAP;
        before->size = addr - before->addr;
    }
    am_error error = AM_OK;
    return insert_reservation(model, at, addr, size, stream, is_small, &error) < 0 ? error : AM_OK;
}

/* A new reservation of (stream, pool), first fit above the plain segments' region; its index,
 * or -1 (no address space: AM_ERR_OOM, or no host memory: AM_ERR_NOMEM). */
static long reserve_range(am_model *model, uint64_t stream, bool is_small, am_error *error) {
    uint64_t size = reservation_size(model, is_small);
    uint64_t addr = align_up(expandable_base(model), VA_ALIGN);
    size_t at = 0;
    for (; at < model->reservation_count; at++) {
        const aml_reservation *r = &model->reservations[at];
        if (addr <= r->addr && size <= r->addr - addr)
            break;
        if (reservation_end(r) > addr)
            addr = align_up(reservation_end(r), VA_ALIGN);
    }
    if (addr == UINT64_MAX || size > UINT64_MAX - addr) {
        *error = AM_ERR_OOM;
        return -1;
    }
    return insert_reservation(model, at, addr, size, stream, is_small, error);
}

/* map_block: maps whole pages of r from addr (a page boundary) to cover `size` bytes. */
static am_error map_pages(am_model *model, const aml_reservation *r, uint64_t addr, uint64_t size,
                          uint64_t tag, amp_sink sink) {
    uint64_t page = am_expandable_page(r->is_small);
    uint64_t end = addr + size - r->addr;
    end = r->addr + (end / page + (end % page ? 1 : 0)) * page;
    if (end > reservation_end(r))
        end = reservation_end(r);
    uint64_t map_size = end - addr;
    uint64_t capacity = model->config.device_capacity;
    if (capacity && (model->reserved > capacity || map_size > capacity - model->reserved)) {
        amp_emit(sink, (am_effect){.kind = AM_EFFECT_ALLOC_FAILED,
                                   .size = map_size,
                                   .stream = r->stream,
                                   .is_small = r->is_small});
        return AM_ERR_OOM;
    }
    if (!aml_reserve(model, 1, 1, 0))
        return AM_ERR_NOMEM;
    amp_map_range(model, addr, map_size, r->stream, tag, r->is_small);
    amp_emit(sink, (am_effect){.kind = AM_EFFECT_SEGMENT_MAP,
                               .addr = addr,
                               .size = map_size,
                               .stream = r->stream,
                               .tag = tag,
                               .is_small = r->is_small});
    return AM_OK;
}

am_block *amp_allocate_expandable(am_model *model, uint64_t size, uint64_t stream, bool is_small,
                                  uint64_t tag, amp_sink sink, am_error *error) {
    span c;
    size_t index;
    if (!find_in_reservations(model, stream, is_small, size, &c, &index)) {
        long at = reserve_range(model, stream, is_small, error);
        if (at < 0)
            return NULL;
        index = (size_t)at;
        c = (span){NULL, model->reservations[index].addr, model->reservations[index].size};
    }
    const aml_reservation r = model->reservations[index]; /* the array may not move below */
    uint64_t start = c.addr;
    if (!c.block) {
        *error = map_pages(model, &r, start, c.size < size ? c.size : size, tag, sink);
        if (*error != AM_OK)
            return NULL;
    }
    /* the span starts at a free block or at pages just mapped: a block holds its start */
    am_block *candidate = aml_block_containing(model, start);
    while (GMT_ALWAYS(candidate) && candidate->size < size) { /* map what is missing */
        uint64_t end = aml_block_end(candidate);
        uint64_t gap = gap_end_after(model, &r, end) - end;
        uint64_t remaining = size - candidate->size;
        if (GMT_NEVER(gap == 0)) { /* the span holds the request: has_room saw to it */
            *error = AM_ERR_OOM;
            return NULL;
        }
        *error = map_pages(model, &r, end, remaining < gap ? remaining : gap, tag, sink);
        if (*error != AM_OK)
            return NULL;
        candidate = aml_block_containing(model, start);
    }
    if (!candidate) {
        *error = AM_ERR_CORRUPT;
        return NULL;
    }
    *error = AM_OK;
    return candidate;
}

/* ---- releasing ---- */

static void forget_empty_reservation(am_model *model, uint64_t addr) {
    for (size_t i = 0; i < model->reservation_count; i++) {
        aml_reservation *r = &model->reservations[i];
        if (addr - r->addr >= r->size)
            continue;
        ami_node *node = ami_search(&model->segments, AMI_GE, r->addr, 0, 0);
        if (node && AML_SEGMENT_OF(node)->addr < reservation_end(r))
            return; /* something is still mapped */
        for (size_t k = i + 1; k < model->reservation_count; k++)
            model->reservations[k - 1] = model->reservations[k];
        model->reservation_count--;
        return;
    }
}

/* unmap_block: the whole pages inside the free `block`. */
static am_error unmap_block(am_model *model, am_block *block, amp_sink sink) {
    am_segment *segment = aml_segment_containing(model, block->addr);
    const aml_reservation *r = reservation_at(model, block->addr);
    uint64_t page = am_expandable_page(segment->is_small);
    /* pages count from the reservation's start (from the segment's, which starts on a page,
     * when the segment was mapped in apply mode) */
    uint64_t origin = r ? r->addr : segment->addr;
    uint64_t first = block->addr - origin, last = aml_block_end(block) - origin;
    first = (first / page + (first % page ? 1 : 0)) * page;
    last = last / page * page;
    if (first >= last)
        return AM_OK;
    if (!aml_reserve(model, 2, 1, 0))
        return AM_ERR_NOMEM;
    am_effect effect = {.kind = AM_EFFECT_SEGMENT_UNMAP,
                        .addr = origin + first,
                        .size = last - first,
                        .stream = segment->stream,
                        .tag = segment->tag,
                        .is_small = segment->is_small};
    aml_segment_cut(model, segment, block, effect.addr, effect.size);
    forget_empty_reservation(model, effect.addr);
    amp_emit(sink, effect);
    return AM_OK;
}

am_error amp_unmap_free_pages(am_model *model, bool is_small, amp_sink sink) {
    ami_tree *pool = &model->free_blocks[is_small];
    ami_node *node = ami_search(pool, AMI_GE, 0, 0, 0);
    while (node) {
        /* what unmapping leaves of a block is smaller, so it sorts before the key: never seen
         * again, as PyTorch gathers the blocks to unmap before it unmaps any */
        uint64_t key[3] = {node->key[0], node->key[1], node->key[2]};
        am_block *block = AML_BLOCK_BY_SIZE(node);
        if (block->is_expandable) {
            am_error error = unmap_block(model, block, sink);
            if (error != AM_OK)
                return error;
        }
        node = ami_search(pool, AMI_GT, key[0], key[1], key[2]);
    }
    return AM_OK;
}
