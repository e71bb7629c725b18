/* pickle_write.c — see pickle_write.h. */
#include "pickle_write.h"

#include "gmt_assert.h"

#include <string.h>

void pickle_write_begin(pickle_writer *w, FILE *f) {
    w->f = f;
    w->memo_next = 0;
    putc_unlocked(0x80, f); /* PROTO */
    putc_unlocked(4, f);
}

void pickle_write_stop(pickle_writer *w) { putc_unlocked('.', w->f); }
void pickle_write_empty_dict(pickle_writer *w) { putc_unlocked('}', w->f); }
void pickle_write_empty_list(pickle_writer *w) { putc_unlocked(']', w->f); }
void pickle_write_mark(pickle_writer *w) { putc_unlocked('(', w->f); }
void pickle_write_setitems(pickle_writer *w) { putc_unlocked('u', w->f); }
void pickle_write_appends(pickle_writer *w) { putc_unlocked('e', w->f); }
void pickle_write_none(pickle_writer *w) { putc_unlocked('N', w->f); }
void pickle_write_tuple2(pickle_writer *w) { putc_unlocked(0x86, w->f); }
void pickle_write_bool(pickle_writer *w, int v) { putc_unlocked(v ? 0x88 : 0x89, w->f); }

static void put_le(FILE *f, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++)
        putc_unlocked((int)((v >> (8 * i)) & 0xff), f);
}

void pickle_write_str(pickle_writer *w, const char *s) {
    size_t n = strlen(s);
    if (n < 256) {
        putc_unlocked(0x8c, w->f); /* SHORT_BINUNICODE */
        putc_unlocked((int)n, w->f);
    } else {
        if (GMT_NEVER(n > UINT32_MAX))
            n = UINT32_MAX;
        putc_unlocked('X', w->f); /* BINUNICODE */
        put_le(w->f, n, 4);
    }
    fwrite_unlocked(s, 1, n, w->f);
}

void pickle_write_int(pickle_writer *w, int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
        putc_unlocked('J', w->f); /* BININT */
        put_le(w->f, (uint64_t)v, 4);
        return;
    }
    /* LONG1: the fewest little-endian two's complement bytes that keep the sign */
    int n = 8;
    while (n > 1) {
        int64_t top = v >> (8 * (n - 1) - 1); /* the dropped byte and the new sign bit */
        if (top != 0 && top != -1)
            break;
        n--;
    }
    putc_unlocked(0x8a, w->f);
    putc_unlocked(n, w->f);
    put_le(w->f, (uint64_t)v, n);
}

void pickle_write_uint(pickle_writer *w, uint64_t v) {
    if (v <= INT64_MAX) {
        pickle_write_int(w, (int64_t)v);
        return;
    }
    putc_unlocked(0x8a, w->f); /* LONG1, 9 bytes: the top bit needs a 0 sign byte */
    putc_unlocked(9, w->f);
    put_le(w->f, v, 8);
    putc_unlocked(0, w->f);
}

uint32_t pickle_write_memoize(pickle_writer *w) {
    putc_unlocked(0x94, w->f);
    return w->memo_next++;
}

void pickle_write_get(pickle_writer *w, uint32_t index) {
    if (GMT_NEVER(index >= w->memo_next))
        return;
    if (index < 256) {
        putc_unlocked('h', w->f); /* BINGET */
        putc_unlocked((int)index, w->f);
    } else {
        putc_unlocked('j', w->f); /* LONG_BINGET */
        put_le(w->f, index, 4);
    }
}

void pickle_write_float(pickle_writer *w, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    putc_unlocked('G', w->f); /* BINFLOAT: big-endian IEEE 754 */
    for (int i = 7; i >= 0; i--)
        putc_unlocked((int)((bits >> (8 * i)) & 0xff), w->f);
}
