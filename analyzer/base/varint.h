/* varint.h — LEB128 varints and zigzag, as the analyzer's own files pack integers (the blocks
 * index, view_blocks_file.h; the layouts' checkpoints, layout_index.c): seven bits a byte, low
 * first, the high bit set while more follow; signed values zigzagged first (0, -1, 1, -2 ... →
 * 0, 1, 2, 3 ...) so that small deltas of either sign take one byte. */
#ifndef GMT_VARINT_H
#define GMT_VARINT_H

#include <stdint.h>

#define VARINT_MAX_BYTES 10 /* a uint64_t's */

static inline uint8_t *varint_put(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* One varint at *p, not past end (what is past end reads as 0 bits: callers check their
 * bounds, or that *p did not pass end). */
static inline uint64_t varint_get(const uint8_t **p, const uint8_t *end) {
    uint64_t v = 0;
    for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80)
            break;
    }
    return v;
}

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

#endif
