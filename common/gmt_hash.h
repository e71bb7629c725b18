/* gmt_hash.h — the hashes every table of the project uses, written once.
 *
 * gmt_hash_mix64: MurmurHash3's finalizer, so neighbouring keys (addresses,
 * ids) land far apart (the codec's intern tables, the recorder's stack trie,
 * the snapshot reader, the address map). gmt_hash_bytes: FNV-1a over bytes,
 * chainable (pass the previous result as `h`, GMT_HASH_SEED to start), for
 * strings and cache keys. Header-only: both must inline. */
#ifndef GMT_HASH_H
#define GMT_HASH_H

#include <stddef.h>
#include <stdint.h>

#define GMT_HASH_SEED 0xcbf29ce484222325ULL /* FNV-1a's offset basis */

static inline uint64_t gmt_hash_mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline uint64_t gmt_hash_bytes(uint64_t h, const void *data, size_t len) {
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

#endif
