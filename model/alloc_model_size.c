/* alloc_model_size.c — PyTorch's size rules (alloc_model.h: round_size, the pool of a size,
 * get_allocation_size), pure functions in a file of their own: the recorder reads PyTorch's
 * history with them (torch_history.c) and links them without the rest of the model. */
#include "alloc_model.h"

uint64_t am_round_size(uint64_t requested) {
    if (requested < AM_MIN_BLOCK_SIZE)
        return AM_MIN_BLOCK_SIZE;
    return (requested + AM_MIN_BLOCK_SIZE - 1) / AM_MIN_BLOCK_SIZE * AM_MIN_BLOCK_SIZE;
}

bool am_is_small(uint64_t rounded) { return rounded <= AM_SMALL_SIZE; }

uint64_t am_allocation_size(uint64_t rounded) {
    if (rounded <= AM_SMALL_SIZE)
        return AM_SMALL_BUFFER;
    if (rounded < AM_MIN_LARGE_ALLOC)
        return AM_LARGE_BUFFER;
    return (rounded + AM_ROUND_LARGE - 1) / AM_ROUND_LARGE * AM_ROUND_LARGE;
}

uint64_t am_config_allocation_size(const am_config *cfg, uint64_t rounded) {
    if (cfg && cfg->large_segment_size && rounded > AM_SMALL_SIZE && rounded < AM_MIN_LARGE_ALLOC)
        return cfg->large_segment_size;
    return am_allocation_size(rounded);
}

static bool is_power_of_2(uint64_t v) { return v && !(v & (v - 1)); }

static uint64_t power2_floor(uint64_t v) {
    uint64_t p = 1;
    while (p <= v / 2)
        p <<= 1;
    return p;
}

uint64_t am_roundup_power2_next_division(uint64_t size, uint64_t divisions) {
    if (is_power_of_2(size) || divisions < 2)
        return size;
    uint64_t floor = power2_floor(size);
    /* divisions is a power of two: power2_floor >> log2(divisions) */
    uint64_t step = floor / power2_floor(divisions);
    if (step == 0)
        return floor << 1;
    uint64_t rounded_down = size & ~(step - 1);
    return rounded_down == size ? size : rounded_down + step;
}

uint32_t am_roundup_divisions(const uint32_t table[AM_ROUNDUP_INTERVALS], uint64_t size) {
    /* AllocatorConfig::roundup_power2_divisions: interval i holds sizes in [2^i, 2^(i+1)) MiB,
     * interval 0 also everything below, the last one everything above */
    unsigned index = 0;
    for (uint64_t v = size >> 20; v > 1; v >>= 1)
        index++;
    return table[index < AM_ROUNDUP_INTERVALS ? index : AM_ROUNDUP_INTERVALS - 1];
}

uint64_t am_config_round_size(const am_config *cfg, uint64_t requested) {
    if (requested < AM_MIN_BLOCK_SIZE || !cfg)
        return am_round_size(requested);
    uint64_t divisions = am_roundup_divisions(cfg->roundup_power2_divisions, requested);
    if (divisions > 1 && requested > AM_MIN_BLOCK_SIZE * divisions)
        return am_roundup_power2_next_division(requested, divisions);
    return am_round_size(requested);
}

bool am_should_split(const am_config *cfg, bool is_small, uint64_t block_size, uint64_t size) {
    uint64_t remaining = block_size - size;
    if (is_small || cfg->expandable_segments)
        return remaining >= AM_MIN_BLOCK_SIZE;
    return size < cfg->max_split_size && remaining > AM_SMALL_SIZE;
}

uint64_t am_expandable_page(bool is_small) { return is_small ? AM_PAGE_SMALL : AM_PAGE_LARGE; }
