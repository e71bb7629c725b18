/* gmt_grow.h — the growable array, written once.
 *
 * Every part keeps arrays that grow as a trace is read or written (frames,
 * stacks, segments, rows). gmt_grow makes index `need` usable: the capacity
 * doubles until it exceeds `need`, and the new items are zeroed so an id-
 * indexed table reads "absent" (0) where nothing was stored yet. On failure
 * (out of memory, or a size that would overflow) the array is left as it
 * was and -1 is returned. Header-only: it sits on the replay's path. */
#ifndef GMT_GROW_H
#define GMT_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline int gmt_grow(void **arr, size_t *cap, size_t need, size_t item) {
    if (need < *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n <= need) {
        if (n > SIZE_MAX / 2 / item)
            return -1;
        n *= 2;
    }
    void *p = realloc(*arr, n * item);
    if (!p)
        return -1;
    memset((char *)p + *cap * item, 0, (n - *cap) * item);
    *arr = p;
    *cap = n;
    return 0;
}

/* The same for an array only ever appended to, whose items are written before they are read:
 * nothing is zeroed, so pages the array reserves ahead are not touched until it fills them
 * (for the big append-only arrays, where zeroing was most of the cost of growing them).
 * `first`: the capacity to start from when the array is empty (0: 16). */
static inline int gmt_grow_uninit(void **arr, size_t *cap, size_t need, size_t item,
                                  size_t first) {
    if (need < *cap)
        return 0;
    size_t n = *cap ? *cap : first ? first : 16;
    while (n <= need) {
        if (n > SIZE_MAX / 2 / item)
            return -1;
        n *= 2;
    }
    void *p = realloc(*arr, n * item);
    if (!p)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}

#endif
