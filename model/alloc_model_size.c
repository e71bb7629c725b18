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
