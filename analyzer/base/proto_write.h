/* proto_write.h — protocol buffers written by hand, field by field, into a growing buffer
 * (`export --to perfetto`): varints, fixed64 doubles, length-delimited strings, and nested
 * messages whose length is written when they end (the body moved up by the few bytes the
 * length takes, so every length is the shortest varint). No protobuf library: the messages
 * are few and their field numbers are the writer's (export_perfetto.c), checked by a test
 * that decodes the file with protoc.
 *
 * Errors stick: once out of memory (or nested too deep) every call is a no-op and
 * proto_buf_failed says so; the caller checks it once per message. */
#ifndef GMT_PROTO_WRITE_H
#define GMT_PROTO_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PROTO_MAX_DEPTH 16

typedef struct proto_buf {
    uint8_t *p;
    size_t n, cap;
    size_t open[PROTO_MAX_DEPTH]; /* where each open message's body begins */
    int depth, failed;
} proto_buf;

void proto_buf_init(proto_buf *b);
void proto_buf_free(proto_buf *b);
static inline int proto_buf_failed(const proto_buf *b) { return b->failed; }

/* Field `field` as a varint (uint32/uint64/int64/bool/enum: an int64 below 0 is 10 bytes, as
 * protobuf encodes it). */
void proto_varint(proto_buf *b, uint32_t field, uint64_t v);
/* A double (wire type 1). */
void proto_double(proto_buf *b, uint32_t field, double v);
/* bytes or string: len bytes of data. */
void proto_bytes(proto_buf *b, uint32_t field, const void *data, size_t len);
void proto_string(proto_buf *b, uint32_t field, const char *s);

/* A nested message (or a packed repeated field): proto_begin, its fields (or proto_raw_varint
 * for a packed field's values), proto_end. */
void proto_begin(proto_buf *b, uint32_t field);
void proto_end(proto_buf *b);
void proto_raw_varint_slow(proto_buf *b, uint64_t v);
static inline void proto_raw_varint(proto_buf *b, uint64_t v) {
    if (b->n + 10 > b->cap) { /* or failed: cap stays 0 once it is */
        proto_raw_varint_slow(b, v);
        return;
    }
    while (v >= 0x80) {
        b->p[b->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (uint8_t)v;
}

/* Empties the buffer (no message may be open): its bytes taken by the caller. */
void proto_buf_clear(proto_buf *b);

/* Writes what the buffer holds to f and empties it (no message may be open). 0, or -1 on a
 * write error (errno set; the caller's ferror shows it too). */
int proto_flush(proto_buf *b, FILE *f);

#endif
