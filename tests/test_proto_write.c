/* test_proto_write.c — analyzer/base/proto_write.h against protobuf's wire format: the
 * encodings of the protobuf documentation's examples (150 as a varint field, "testing" as a
 * string, a message inside a message), an int64 below 0 as ten bytes, a double's eight bytes in
 * little-endian order, nested messages whose bodies need a length of one, two and three bytes
 * (the body moved up behind the shortest length), and 100,000 fields read back by a decoder of
 * its own across the buffer's growth; nesting past PROTO_MAX_DEPTH fails and stays failed;
 * proto_flush writes the bytes and empties the buffer. */
#include "check.h"

#include "proto_write.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bytes_are(const proto_buf *b, const uint8_t *want, size_t n) {
    return b->n == n && memcmp(b->p, want, n) == 0;
}

static void examples(void) {
    proto_buf b;
    proto_buf_init(&b);
    proto_varint(&b, 1, 150);
    static const uint8_t v150[] = {0x08, 0x96, 0x01};
    CHECK(bytes_are(&b, v150, sizeof v150));
    proto_buf_clear(&b);

    proto_string(&b, 2, "testing");
    static const uint8_t str[] = {0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'};
    CHECK(bytes_are(&b, str, sizeof str));
    proto_buf_clear(&b);

    proto_begin(&b, 3);
    proto_varint(&b, 1, 150);
    proto_end(&b);
    static const uint8_t nested[] = {0x1a, 0x03, 0x08, 0x96, 0x01};
    CHECK(bytes_are(&b, nested, sizeof nested));
    proto_buf_clear(&b);

    proto_varint(&b, 1, (uint64_t)(int64_t)-1);
    static const uint8_t minus1[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK(bytes_are(&b, minus1, sizeof minus1));
    proto_buf_clear(&b);

    proto_double(&b, 57, 1.0); /* field 57: a two-byte tag, 57 << 3 | 1 = 457 */
    static const uint8_t one[] = {0xc9, 0x03, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
    CHECK(bytes_are(&b, one, sizeof one));
    proto_buf_clear(&b);

    proto_begin(&b, 1); /* an empty message */
    proto_end(&b);
    static const uint8_t empty[] = {0x0a, 0x00};
    CHECK(bytes_are(&b, empty, sizeof empty));
    CHECK(!proto_buf_failed(&b));
    proto_buf_free(&b);
}

/* A body of n bytes (a bytes field of n - 1 - len(varint) ... simply n raw varints of 1 byte)
 * inside field 5: the length's varint takes 1, 2 or 3 bytes. */
static void lengths(void) {
    static const size_t sizes[] = {0, 1, 127, 128, 200, 16383, 16384, 100000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        proto_buf b;
        proto_buf_init(&b);
        proto_varint(&b, 1, 7); /* something before, to be kept in place */
        proto_begin(&b, 5);
        for (size_t k = 0; k < n; k++)
            proto_raw_varint(&b, k & 0x7f);
        proto_end(&b);
        size_t ll = n < 128 ? 1 : n < 16384 ? 2 : 3;
        CHECK_EQ_U64(b.n, 2 + 1 + ll + n);
        CHECK(b.p[0] == 0x08 && b.p[1] == 7 && b.p[2] == 0x2a);
        uint64_t len = 0;
        for (size_t k = 0; k < ll; k++)
            len |= (uint64_t)(b.p[3 + k] & 0x7f) << (7 * k);
        CHECK_EQ_U64(len, n);
        int body_ok = 1;
        for (size_t k = 0; k < n; k++)
            body_ok &= b.p[3 + ll + k] == (k & 0x7f);
        CHECK(body_ok);
        proto_buf_free(&b);
    }
}

static uint64_t read_varint(const uint8_t *p, size_t *i) {
    uint64_t v = 0;
    for (int s = 0;; s += 7) {
        uint8_t c = p[(*i)++];
        v |= (uint64_t)(c & 0x7f) << s;
        if (c < 0x80)
            return v;
    }
}

/* 100,000 fields of every varint length in three nested levels, read back. */
static void round_trip(void) {
    proto_buf b;
    proto_buf_init(&b);
    uint64_t rng = 1;
    proto_begin(&b, 1);
    proto_begin(&b, 2);
    for (int k = 0; k < 100000; k++) {
        uint64_t v = check_random(&rng) >> (check_random(&rng) % 64);
        proto_varint(&b, 1 + (uint32_t)(k % 40), v);
    }
    proto_end(&b);
    proto_end(&b);
    CHECK(!proto_buf_failed(&b));
    size_t i = 0;
    CHECK_EQ_U64(read_varint(b.p, &i), 1 << 3 | 2);
    uint64_t outer = read_varint(b.p, &i);
    CHECK_EQ_U64(i + outer, b.n);
    CHECK_EQ_U64(read_varint(b.p, &i), 2 << 3 | 2);
    uint64_t inner = read_varint(b.p, &i);
    CHECK_EQ_U64(i + inner, b.n);
    rng = 1;
    int ok = 1;
    for (int k = 0; k < 100000 && ok; k++) {
        uint64_t v = check_random(&rng) >> (check_random(&rng) % 64);
        ok &= read_varint(b.p, &i) == ((uint64_t)(1 + k % 40) << 3);
        ok &= read_varint(b.p, &i) == v;
    }
    CHECK(ok);
    CHECK_EQ_U64(i, b.n);

    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        size_t n = b.n;
        uint8_t *copy = malloc(n);
        memcpy(copy, b.p, n);
        CHECK(proto_flush(&b, f) == 0);
        CHECK_EQ_U64(b.n, 0);
        CHECK_EQ_U64((uint64_t)ftell(f), n);
        rewind(f);
        uint8_t *back = malloc(n);
        CHECK(fread(back, 1, n, f) == n && memcmp(back, copy, n) == 0);
        free(copy);
        free(back);
        fclose(f);
    }
    proto_buf_free(&b);
}

static void too_deep(void) {
    proto_buf b;
    proto_buf_init(&b);
    for (int d = 0; d < PROTO_MAX_DEPTH; d++)
        proto_begin(&b, 1);
    CHECK(!proto_buf_failed(&b));
    proto_begin(&b, 1);
    CHECK(proto_buf_failed(&b));
    size_t n = b.n;
    proto_varint(&b, 1, 1);
    proto_end(&b);
    CHECK(proto_buf_failed(&b));
    CHECK_EQ_U64(b.n, n); /* nothing more written */
    proto_buf_free(&b);
}

int main(void) {
    examples();
    lengths();
    round_trip();
    too_deep();
    return check_finish("test_proto_write");
}
