/* gmt_search.h — binary search over an array sorted by an int64 key, the one search the
 * analyzer's sorted tables share (event chunks, index parts, phase runs, category moments).
 *
 * Header-only and static inline: it runs in per-row loops, and with the stride and offset
 * known at the call site the compiler turns the memcpy into one load. */
#ifndef GMT_SEARCH_H
#define GMT_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The first of n items (`stride` bytes apart, ascending in the int64 at `key_offset`) whose key
 * is >= key, or with `after` set > key; n when there is none. So with `after` set it is also how
 * many items have a key at or before `key`. */
static inline size_t gmt_search_i64(const void *items, size_t n, size_t stride, size_t key_offset,
                                    int64_t key, int after) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t at;
        memcpy(&at, (const char *)items + mid * stride + key_offset, sizeof at);
        if (at < key || (after && at == key))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
