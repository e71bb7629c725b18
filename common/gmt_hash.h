/* gmt_hash.h — the hashes of the project's tables, written once.
 *
 * gmt_hash_mix64: MurmurHash3's finalizer, every bit of the key into every bit
 * of the hash, so neighbouring keys (addresses, ids) land far apart: the
 * codec's intern tables, the recorder's stack trie and its window, the
 * snapshot reader, the address map, the model's heap priorities.
 * gmt_hash_fib: Fibonacci hashing, one multiply, for a table of 2^bits slots
 * on a path where a multiply counts (the recorder's CUDA and Python callbacks
 * and memrec.h's regions, the model's live blocks); it takes the product's top
 * bits, the only ones mixed: the low bits of x * K are as regular as x's, so
 * 2 MiB-aligned addresses would all share a slot. gmt_hash_bytes: FNV-1a over bytes,
 * chainable (pass the previous result as `h`, GMT_HASH_SEED to start), for
 * strings and cache keys. Header-only: they must inline.
 *
 * Three hashes are their own, on purpose: rec_stack.c's second key of a
 * whole stack (the cache trusts a match of two 64-bit keys, so the second
 * must not be a function of the first), the pickle reader's hash of a list's
 * items (one multiply per item: it hashes every list of frames of a
 * snapshot), and render/'s colour of a key (render/ links nothing of the
 * project, and a site's colour is part of every picture). */
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

/* The slot of x in a table of 2^bits slots (1 <= bits <= 64; 64: the whole product). */
static inline uint64_t gmt_hash_fib(uint64_t x, unsigned bits) {
    return (x * 0x9E3779B97F4A7C15ULL) >> (64 - bits);
}

static inline uint64_t gmt_hash_bytes(uint64_t h, const void *data, size_t len) {
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

#endif
