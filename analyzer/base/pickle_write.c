/* pickle_write.c — see pickle_write.h. */
#include "pickle_write.h"

#include "gmt_assert.h"

#include <string.h>

void pickle_write_begin(pickle_writer *w, FILE *f) {
    w->f = f;
    w->memo_next = 0;
    fputc(0x80, f); /* PROTO */
    fputc(4, f);
}

void pickle_write_stop(pickle_writer *w) { fputc('.', w->f); }
void pickle_write_empty_dict(pickle_writer *w) { fputc('}', w->f); }
void pickle_write_empty_list(pickle_writer *w) { fputc(']', w->f); }
void pickle_write_mark(pickle_writer *w) { fputc('(', w->f); }
void pickle_write_setitems(pickle_writer *w) { fputc('u', w->f); }
void pickle_write_appends(pickle_writer *w) { fputc('e', w->f); }
void pickle_write_none(pickle_writer *w) { fputc('N', w->f); }
void pickle_write_bool(pickle_writer *w, int v) { fputc(v ? 0x88 : 0x89, w->f); }

static void put_le(FILE *f, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++)
        fputc((int)((v >> (8 * i)) & 0xff), f);
}

void pickle_write_str(pickle_writer *w, const char *s) {
    size_t n = strlen(s);
    if (n < 256) {
        fputc(0x8c, w->f); /* SHORT_BINUNICODE */
        fputc((int)n, w->f);
    } else {
        if (GMT_NEVER(n > UINT32_MAX))
            n = UINT32_MAX;
        fputc('X', w->f); /* BINUNICODE */
        put_le(w->f, n, 4);
    }
    fwrite(s, 1, n, w->f);
}

void pickle_write_int(pickle_writer *w, int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
        fputc('J', w->f); /* BININT */
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
    fputc(0x8a, w->f);
    fputc(n, w->f);
    put_le(w->f, (uint64_t)v, n);
}

void pickle_write_uint(pickle_writer *w, uint64_t v) {
    if (v <= INT64_MAX) {
        pickle_write_int(w, (int64_t)v);
        return;
    }
    fputc(0x8a, w->f); /* LONG1, 9 bytes: the top bit needs a 0 sign byte */
    fputc(9, w->f);
    put_le(w->f, v, 8);
    fputc(0, w->f);
}

uint32_t pickle_write_memoize(pickle_writer *w) {
    fputc(0x94, w->f);
    return w->memo_next++;
}

void pickle_write_get(pickle_writer *w, uint32_t index) {
    if (GMT_NEVER(index >= w->memo_next))
        return;
    if (index < 256) {
        fputc('h', w->f); /* BINGET */
        fputc((int)index, w->f);
    } else {
        fputc('j', w->f); /* LONG_BINGET */
        put_le(w->f, index, 4);
    }
}

void pickle_write_float(pickle_writer *w, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    fputc('G', w->f); /* BINFLOAT: big-endian IEEE 754 */
    for (int i = 7; i >= 0; i--)
        fputc((int)((bits >> (8 * i)) & 0xff), w->f);
}
