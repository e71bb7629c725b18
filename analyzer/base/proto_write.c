/* proto_write.c — see proto_write.h. */
#include "proto_write.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void proto_buf_init(proto_buf *b) { memset(b, 0, sizeof *b); }

void proto_buf_free(proto_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* The buffer fails for good: cap 0 sends the inline fast path to the slow one, which says no. */
static void fail(proto_buf *b) {
    b->failed = 1;
    b->cap = 0;
}

/* Room for `more` bytes; 0, or -1 (the buffer failed). */
static int room(proto_buf *b, size_t more) {
    if (b->failed)
        return -1;
    if (b->n + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + more)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        fail(b);
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static size_t varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void put_varint(uint8_t *p, size_t *n, uint64_t v) {
    while (v >= 0x80) {
        p[(*n)++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[(*n)++] = (uint8_t)v;
}

void proto_raw_varint_slow(proto_buf *b, uint64_t v) {
    if (room(b, 10) == 0)
        put_varint(b->p, &b->n, v);
}

static void tag(proto_buf *b, uint32_t field, unsigned wire) {
    assert(field > 0 && wire <= 5);
    proto_raw_varint(b, (uint64_t)field << 3 | wire);
}

void proto_varint(proto_buf *b, uint32_t field, uint64_t v) {
    tag(b, field, 0);
    proto_raw_varint(b, v);
}

void proto_double(proto_buf *b, uint32_t field, double v) {
    tag(b, field, 1);
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (room(b, 8) != 0)
        return;
    for (int i = 0; i < 8; i++)
        b->p[b->n++] = (uint8_t)(bits >> (8 * i)); /* little-endian, whatever the host */
}

void proto_bytes(proto_buf *b, uint32_t field, const void *data, size_t len) {
    tag(b, field, 2);
    proto_raw_varint(b, len);
    if (len && room(b, len) == 0) {
        memcpy(b->p + b->n, data, len);
        b->n += len;
    }
}

void proto_string(proto_buf *b, uint32_t field, const char *s) {
    proto_bytes(b, field, s ? s : "", s ? strlen(s) : 0);
}

void proto_begin(proto_buf *b, uint32_t field) {
    if (b->depth >= PROTO_MAX_DEPTH)
        fail(b);
    tag(b, field, 2);
    if (b->failed)
        return;
    b->open[b->depth++] = b->n; /* the length goes here when the message ends */
}

void proto_end(proto_buf *b) {
    if (b->failed)
        return;
    assert(b->depth > 0);
    size_t at = b->open[--b->depth], len = b->n - at, ll = varint_len(len);
    if (room(b, ll) != 0)
        return;
    memmove(b->p + at + ll, b->p + at, len);
    size_t n = at;
    put_varint(b->p, &n, len);
    b->n += ll;
}

void proto_buf_clear(proto_buf *b) {
    assert(b->depth == 0);
    b->n = 0;
}

int proto_flush(proto_buf *b, FILE *f) {
    assert(b->depth == 0);
    if (b->n && fwrite(b->p, 1, b->n, f) != b->n)
        return -1;
    b->n = 0;
    return 0;
}
