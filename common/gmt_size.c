/* gmt_size.c — the one parser of sizes with units (gmt_size.h). */
#include "gmt_size.h"

#include <stddef.h>

#define MAX_FRACTION_DIGITS 18 /* 10^18 < 2^63: the scale and twice the remainder fit */

static int digit_value(char c, unsigned base) {
    unsigned d;
    if (c >= '0' && c <= '9')
        d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
        d = (unsigned)(c - 'a') + 10;
    else if (c >= 'A' && c <= 'F')
        d = (unsigned)(c - 'A') + 10;
    else
        return -1;
    return d < base ? (int)d : -1;
}

/* Reads digits of `base` into *value; returns how many, or -1 on overflow. */
static int read_integer(const char **p, unsigned base, uint64_t *value) {
    int n = 0, d;
    for (; (d = digit_value(**p, base)) >= 0; (*p)++, n++) {
        if (*value > (UINT64_MAX - (uint64_t)d) / base)
            return -1;
        *value = *value * base + (uint64_t)d;
    }
    return n;
}

static unsigned unit_shift(char c) {
    switch (c) {
    case 'k':
    case 'K':
        return 10;
    case 'm':
    case 'M':
        return 20;
    case 'g':
    case 'G':
        return 30;
    case 't':
    case 'T':
        return 40;
    default:
        return 0;
    }
}

int gmt_parse_size(const char *text, uint64_t *out) {
    if (!text)
        return -1;
    const char *p = text;
    while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
        p++;
    if (*p == '+')
        p++;
    uint64_t whole = 0, fraction = 0, scale = 1;
    int digits, fraction_digits = -1;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        p += 2;
        digits = read_integer(&p, 16, &whole);
    } else {
        digits = read_integer(&p, 10, &whole);
        if (digits >= 0 && *p == '.') {
            fraction_digits = 0;
            for (p++; *p >= '0' && *p <= '9'; p++, fraction_digits++)
                if (fraction_digits < MAX_FRACTION_DIGITS) {
                    fraction = fraction * 10 + (uint64_t)(*p - '0');
                    scale *= 10;
                }
        }
    }
    if (digits < 0 || digits + (fraction_digits > 0 ? fraction_digits : 0) == 0)
        return -1;
    unsigned shift = unit_shift(*p);
    if (shift) {
        p++;
        if (*p == 'i')
            p++;
    } else if (fraction_digits >= 0) {
        return -1; /* "1.5" bytes: a fraction needs a unit */
    }
    if (*p == 'B' || *p == 'b')
        p++;
    if (*p || (shift && whole > UINT64_MAX >> shift))
        return -1;
    /* fraction / scale * 2^shift, truncated, one bit at a time (no overflow) */
    uint64_t part = 0, rest = fraction;
    for (unsigned i = 0; i < shift; i++) {
        rest *= 2;
        part = part * 2 + rest / scale;
        rest %= scale;
    }
    uint64_t value = whole << shift;
    if (value > UINT64_MAX - part)
        return -1;
    *out = value + part;
    return 0;
}
