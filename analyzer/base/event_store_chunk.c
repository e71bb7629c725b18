/* event_store_chunk.c — the bytes of one event chunk and of one part of the alloc_event_id
 * index (format in event_store_chunk.h). Pure functions, no SQLite: the round trip is tested
 * by tests/test_event_store.c on its own. */
#include "event_store_chunk.h"

#include "trace_varint.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

const char *const event_store_column_names[EVENT_STORE_NCOLS] = {
#define EVENT_STORE_NAME(name) #name,
    EVENT_STORE_COLUMN_LIST(EVENT_STORE_NAME)
#undef EVENT_STORE_NAME
};

#define VARINT_MAX 10

size_t chunk_encoded_bound(size_t n) {
    return VARINT_MAX * (1 + EVENT_STORE_NCOLS) +
           EVENT_STORE_NCOLS * (1 + (n + 7) / 8 + n * VARINT_MAX);
}

/* One column: its null byte, bitmap and deltas at p; returns the end. */
static uint8_t *encode_column(const int64_t (*rows)[EVENT_STORE_NCOLS], size_t n, int col,
                              uint8_t *p) {
    size_t nulls = 0;
    for (size_t i = 0; i < n; i++)
        nulls += rows[i][col] == EVENT_STORE_NULL;
    if (nulls == n) {
        *p++ = 1;
        return p;
    }
    if (nulls == 0) {
        *p++ = 0;
    } else {
        *p++ = 2;
        size_t bytes = (n + 7) / 8;
        memset(p, 0, bytes);
        for (size_t i = 0; i < n; i++)
            if (rows[i][col] == EVENT_STORE_NULL)
                p[i / 8] |= (uint8_t)(1u << (i % 8));
        p += bytes;
    }
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t v = rows[i][col];
        if (v == EVENT_STORE_NULL)
            continue;
        p = varint_put(p, zigzag_encode((int64_t)((uint64_t)v - prev)));
        prev = (uint64_t)v;
    }
    return p;
}

size_t chunk_encode(const int64_t (*rows)[EVENT_STORE_NCOLS], size_t n, uint8_t *out) {
    /* The columns go after a header whose size depends on their lengths: encode them past
     * the largest header, then move them into place. */
    uint8_t *body = out + VARINT_MAX * (1 + EVENT_STORE_NCOLS);
    size_t len[EVENT_STORE_NCOLS];
    uint8_t *p = body;
    for (int c = 0; c < EVENT_STORE_NCOLS; c++) {
        uint8_t *end = encode_column(rows, n, c, p);
        len[c] = (size_t)(end - p);
        p = end;
    }
    size_t body_len = (size_t)(p - body);
    uint8_t *h = varint_put(out, n);
    for (int c = 0; c < EVENT_STORE_NCOLS; c++)
        h = varint_put(h, len[c]);
    memmove(h, body, body_len);
    return (size_t)(h - out) + body_len;
}

int chunk_parse(const uint8_t *raw, size_t len, chunk_columns *out) {
    const uint8_t *p = raw, *end = raw + len;
    uint64_t v;
    if (varint_get(&p, end, &v) != 0 || v == 0 || v > EVENT_STORE_CHUNK_ROWS)
        return -1;
    out->rows = (size_t)v;
    for (int c = 0; c < EVENT_STORE_NCOLS; c++) {
        if (varint_get(&p, end, &v) != 0 || v > len)
            return -1;
        out->len[c] = (size_t)v;
    }
    for (int c = 0; c < EVENT_STORE_NCOLS; c++) {
        if (out->len[c] < 1 || out->len[c] > (size_t)(end - p))
            return -1;
        out->start[c] = p;
        p += out->len[c];
    }
    return 0;
}

static uint64_t chunks_unpacked;
static _Thread_local int thread_uncounted;

uint64_t event_store_chunks_unpacked(void) {
    return __atomic_load_n(&chunks_unpacked, __ATOMIC_RELAXED);
}

void event_store_chunks_uncounted(void) { thread_uncounted = 1; }

int chunk_unpack(ZSTD_DCtx *dctx, const void *packed, size_t packed_len, size_t raw_len,
                 uint8_t **raw, size_t *cap, chunk_columns *out) {
    if (!thread_uncounted)
        __atomic_fetch_add(&chunks_unpacked, 1, __ATOMIC_RELAXED);
    if (raw_len > chunk_encoded_bound(EVENT_STORE_CHUNK_ROWS))
        return -2; /* no chunk is that large: a damaged size, not a reason to allocate it */
    if (raw_len > *cap) {
        uint8_t *grown = realloc(*raw, raw_len);
        if (!grown)
            return -1;
        *raw = grown;
        *cap = raw_len;
    }
    size_t got = ZSTD_decompressDCtx(dctx, *raw, raw_len, packed, packed_len);
    return ZSTD_isError(got) || got != raw_len || chunk_parse(*raw, raw_len, out) != 0 ? -2 : 0;
}

int chunk_decode_column(const chunk_columns *c, int col, int64_t *out) {
    const uint8_t *p = c->start[col], *end = p + c->len[col];
    size_t n = c->rows;
    uint8_t mode = *p++;
    if (mode == 1) {
        for (size_t i = 0; i < n; i++)
            out[i] = EVENT_STORE_NULL;
        return 0;
    }
    const uint8_t *bitmap = NULL;
    if (mode == 2) {
        if ((size_t)(end - p) < (n + 7) / 8)
            return -1;
        bitmap = p;
        p += (n + 7) / 8;
    } else if (mode != 0) {
        return -1;
    }
    uint64_t prev = 0, z;
    for (size_t i = 0; i < n; i++) {
        if (bitmap && (bitmap[i / 8] >> (i % 8)) & 1) {
            out[i] = EVENT_STORE_NULL;
            continue;
        }
        if (varint_get(&p, end, &z) != 0)
            return -1;
        prev += (uint64_t)zigzag_decode(z);
        out[i] = (int64_t)prev;
    }
    return p == end ? 0 : -1;
}

size_t ends_encoded_bound(size_t n) { return VARINT_MAX * (1 + 2 * n); }

size_t ends_encode(const store_end_pair *pairs, size_t n, uint8_t *out) {
    uint8_t *p = varint_put(out, n);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = (uint64_t)pairs[i].alloc_event_id;
        p = varint_put(p, zigzag_encode((int64_t)(a - prev)));
        p = varint_put(p, zigzag_encode((int64_t)((uint64_t)pairs[i].event_id - a)));
        prev = a;
    }
    return (size_t)(p - out);
}

long ends_decode(const uint8_t *raw, size_t len, store_end_pair *out) {
    const uint8_t *p = raw, *end = raw + len;
    uint64_t n, z, prev = 0;
    if (varint_get(&p, end, &n) != 0 || n > STORE_END_PART_PAIRS)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (varint_get(&p, end, &z) != 0)
            return -1;
        prev += (uint64_t)zigzag_decode(z);
        out[i].alloc_event_id = (int64_t)prev;
        if (varint_get(&p, end, &z) != 0)
            return -1;
        out[i].event_id = (int64_t)(prev + (uint64_t)zigzag_decode(z));
    }
    return p == end ? (long)n : -1;
}
