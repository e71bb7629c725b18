/* event_store_chunk.h — one chunk's bytes (internal to the event store: event_store_write.c
 * encodes, event_store_vtab.c decodes).
 *
 * A chunk, before zstd:
 *   varint rows
 *   varint length of each column's bytes, EVENT_STORE_NCOLS of them (a reader jumps to the
 *     columns a query uses and decodes nothing else)
 *   each column's bytes:
 *     one byte: 0 no NULL, 1 all NULL (nothing follows), 2 a bitmap of (rows + 7) / 8 bytes
 *       follows (bit set: NULL)
 *     then, for each non-NULL value in row order, zigzag(value - previous non-NULL value) as a
 *       varint (the first against 0; wrapping arithmetic, so any int64 round-trips).
 * Running totals, timestamps and ids change little from one event to the next, so most deltas
 * are one or two bytes before zstd sees them.
 *
 * The alloc_event_id index is stored in parts of sorted (alloc_event_id, event_id) pairs:
 *   varint pairs, then per pair zigzag(alloc - previous alloc), zigzag(event - alloc). */
#ifndef GMT_EVENT_STORE_CHUNK_H
#define GMT_EVENT_STORE_CHUNK_H

#include "event_store.h"

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

/* The most bytes chunk_encode writes for n rows. */
size_t chunk_encoded_bound(size_t n);

/* Encodes n rows into out (chunk_encoded_bound(n) bytes); returns the length. */
size_t chunk_encode(const int64_t (*rows)[EVENT_STORE_NCOLS], size_t n, uint8_t *out);

/* Where each column's bytes are in an encoded chunk. */
typedef struct chunk_columns {
    size_t rows;
    const uint8_t *start[EVENT_STORE_NCOLS];
    size_t len[EVENT_STORE_NCOLS];
} chunk_columns;

/* Reads the chunk's header. 0, or -1 on bytes that are not a chunk. */
int chunk_parse(const uint8_t *raw, size_t len, chunk_columns *out);

/* A chunk's blob (zstd, raw_len bytes once decompressed) into *raw (grown as needed, *cap its
 * size), parsed into *out. 0; -1 out of memory; -2 on bytes that are not a chunk. */
int chunk_unpack(ZSTD_DCtx *dctx, const void *packed, size_t packed_len, size_t raw_len,
                 uint8_t **raw, size_t *cap, chunk_columns *out);

/* Decodes column col into out[0 .. rows) (NULL as EVENT_STORE_NULL). 0, or -1 on bad bytes. */
int chunk_decode_column(const chunk_columns *c, int col, int64_t *out);

/* One pair of the alloc_event_id index. */
typedef struct store_end_pair {
    int64_t alloc_event_id, event_id;
} store_end_pair;

#define STORE_END_PART_PAIRS 4096

size_t ends_encoded_bound(size_t n);
size_t ends_encode(const store_end_pair *pairs, size_t n, uint8_t *out);
/* Decodes a part into out (room for STORE_END_PART_PAIRS); the pair count, or -1. */
long ends_decode(const uint8_t *raw, size_t len, store_end_pair *out);

#endif
