/* alloc_model_policy.h — what the model's two policy files share. Internal.
 *
 * alloc_model.c holds PyTorch's rules for plain segments and the public API;
 * alloc_model_expandable.c those of expandable segments in decide mode (find_expandable_block,
 * map_block, unmap_block). Both change the layout only through alloc_model_layout.h. */
#ifndef GMT_ALLOC_MODEL_POLICY_H
#define GMT_ALLOC_MODEL_POLICY_H

#include "alloc_model.h"
#include "alloc_model_layout.h"

typedef struct amp_sink {
    am_effect_fn fn;
    void *ctx;
} amp_sink;

static inline void amp_emit(amp_sink sink, am_effect effect) {
    if (sink.fn)
        sink.fn(sink.ctx, &effect);
}

/* Maps [addr, addr+size) (no segment holds any of it) as inactive memory of an expandable
 * segment of `stream` and the given pool, joining the segments of that stream and pool that
 * end at addr or start at addr+size (am_segment_map). Needs aml_reserve(model, 1, 1, 0). */
void amp_map_range(am_model *model, uint64_t addr, uint64_t size, uint64_t stream, uint64_t tag,
                   bool is_small);

/* ---- alloc_model_expandable.c ---- */

/* get_free_block's expandable_size: the block's size plus, when it is the last mapped block
 * before unmapped pages of its reserved range, the size of those pages. */
uint64_t amp_expandable_size(const am_model *model, const am_block *block);

/* try_allocate_expandable_block: a free block of at least `size` bytes at the lowest address of
 * a reserved range of `stream` and the pool where free and unmapped space hold it, mapping
 * pages as needed (SEGMENT_MAP effects, or ALLOC_FAILED when the device is full); a new range
 * is reserved when none has room. The block is returned still free (indexed), or NULL with
 * *error AM_ERR_OOM (no room; pages mapped before the failure stay mapped) or AM_ERR_NOMEM. */
am_block *amp_allocate_expandable(am_model *model, uint64_t size, uint64_t stream, bool is_small,
                                  uint64_t tag, amp_sink sink, am_error *error);

/* release_blocks' second half for one pool: unmaps the pages that lie entirely inside each free
 * block of an expandable segment, by (stream, size, address) (SEGMENT_UNMAP effects), and
 * forgets reserved ranges left with nothing mapped. AM_OK or AM_ERR_NOMEM. */
am_error amp_unmap_free_pages(am_model *model, bool is_small, amp_sink sink);

/* Whether [addr, addr+size) stays clear of the ranges decide mode reserves for expandable
 * segments (plain segments are placed below them). */
bool amp_below_expandable_region(const am_model *model, uint64_t addr, uint64_t size);

#endif
