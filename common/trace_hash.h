/* trace_hash.h — the one 64-bit mixer every hash table of the project uses
 * (the codec's intern tables, the recorder's stack trie, the snapshot
 * reader): MurmurHash3's finalizer, so neighbouring keys (addresses, ids)
 * land far apart. Header-only: it is three multiplies and must inline. */
#ifndef GMT_TRACE_HASH_H
#define GMT_TRACE_HASH_H

#include <stdint.h>

static inline uint64_t trace_hash_mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#endif
