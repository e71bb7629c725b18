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

/* The growth alone, nothing zeroed: for an array only ever appended to, whose items are written
 * before they are read, so the pages it reserves ahead stay untouched until it fills them (the
 * big append-only arrays, where zeroing was most of the cost of growing). `first`: the capacity
 * an empty array starts from (0: 16). */
static inline int gmt_grow_uninit(void **arr, size_t *cap, size_t need, size_t item, size_t first) {
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

/* gmt_grow itself (see the top): the growth, then the new items zeroed. */
static inline int gmt_grow(void **arr, size_t *cap, size_t need, size_t item) {
    size_t had = *cap;
    if (gmt_grow_uninit(arr, cap, need, item, 16) != 0)
        return -1;
    memset((char *)*arr + had * item, 0, (*cap - had) * item);
    return 0;
}

#endif
