/* trace_varint.h — LEB128 varints and zigzag, shared by the trace writer and
 * reader (internal to schema/: not part of the public codec API).
 *
 * Header-only and static inline because both sides call these once per
 * field on the hot path; a function call per field would cost more than the
 * encoding itself. The decoder is bounds-checked: it never reads past `end`
 * and rejects varints longer than 10 bytes. */
#ifndef GMT_TRACE_VARINT_H
#define GMT_TRACE_VARINT_H

#include <stdint.h>

static inline uint64_t zigzag_encode(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline int64_t zigzag_decode(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Writes v at p (room for 10 bytes is the caller's job); returns the end. */
static inline uint8_t *varint_put(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Reads one varint from *pp (not past end) into *out and advances *pp.
 * Returns 0, or -1 on a varint that runs past end or is over 10 bytes. */
static inline int varint_get(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
    const uint8_t *p = *pp;
    if (p < end && *p < 0x80) { /* the common one-byte case */
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            if (shift == 63 && b > 1)
                return -1; /* more than 64 bits */
            *out = v;
            *pp = p;
            return 0;
        }
    }
    return -1;
}

#endif
