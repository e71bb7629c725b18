/* sqlite_record.h — SQLite's record format, as btree_write.c writes it: varints, the serial
 * type of an integer, records of integers (and text). From https://www.sqlite.org/fileformat2.html,
 * section "Record Format"; each choice is the one SQLite's own encoder makes
 * (sqlite3VdbeSerialType), so a page written here is byte for byte what SQLite would store.
 * Header-only: it is the inner loop of writing a page. */
#ifndef GMT_SQLITE_RECORD_H
#define GMT_SQLITE_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SQLREC_MAX_VARINT 9
#define SQLREC_MAX_COLUMNS 64
/* a record of n integers: header length (one byte: n < 127), n types, n values of <= 8 bytes */
#define SQLREC_BOUND(n) (1 + (n) + 8 * (n))

/* A value equal to this is written as NULL. */
#define SQLREC_NULL INT64_MIN

/* SQLite's varint: big-endian groups of 7 bits, the 9th byte whole. */
static inline size_t sqlrec_put_varint(uint8_t *p, uint64_t v) {
    if (v <= 0x7f) {
        p[0] = (uint8_t)v;
        return 1;
    }
    if (v <= 0x3fff) {
        p[0] = (uint8_t)((v >> 7) | 0x80);
        p[1] = (uint8_t)(v & 0x7f);
        return 2;
    }
    if (v >> 56) {
        p[8] = (uint8_t)v;
        v >>= 8;
        for (int i = 7; i >= 0; i--) {
            p[i] = (uint8_t)((v & 0x7f) | 0x80);
            v >>= 7;
        }
        return 9;
    }
    uint8_t tmp[SQLREC_MAX_VARINT];
    size_t n = 0;
    do {
        tmp[n++] = (uint8_t)((v & 0x7f) | 0x80);
        v >>= 7;
    } while (v);
    tmp[0] &= 0x7f;
    for (size_t i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

/* The serial type SQLite gives an integer (sqlite3VdbeSerialType) and its byte count. */
static inline unsigned sqlrec_int_type(int64_t v, int format4, unsigned *len) {
    static const unsigned char bytes[] = {0, 1, 2, 3, 4, 6, 8};
    uint64_t u = v < 0 ? ~(uint64_t)v : (uint64_t)v;
    unsigned t;
    if (u <= 127 && format4 && (v == 0 || v == 1))
        t = 8 + (unsigned)v;
    else if (u <= 127)
        t = 1;
    else if (u <= 32767)
        t = 2;
    else if (u <= 8388607)
        t = 3;
    else if (u <= 2147483647)
        t = 4;
    else if (u <= 0x7FFFFFFFFFFFull)
        t = 5;
    else
        t = 6;
    *len = t <= 6 ? bytes[t] : 0;
    return t;
}

static inline size_t sqlrec_varint_len(uint64_t v) {
    size_t n = 1;
    while (n < 9 && (v >> (7 * n)))
        n++;
    return v >> 56 ? 9 : n;
}

/* A record of n integers (SQLREC_NULL: NULL; column skip, or -1, NULL too). Its length. */
static inline size_t sqlrec_int_record(uint8_t *out, const int64_t *v, int n, int skip,
                                       int format4) {
    uint8_t *data = out + 1 + n;
    out[0] = (uint8_t)(1 + n);
    for (int i = 0; i < n; i++) {
        if (i == skip || v[i] == SQLREC_NULL) {
            out[1 + i] = 0;
            continue;
        }
        unsigned len;
        out[1 + i] = (uint8_t)sqlrec_int_type(v[i], format4, &len);
        for (unsigned k = 0; k < len; k++)
            data[k] = (uint8_t)((uint64_t)v[i] >> (8 * (len - 1 - k)));
        data += len;
    }
    return (size_t)(data - out);
}

/* The same with text columns (texts[i] not NULL): serial type 13 + 2 * length. 0 when it would
 * not fit in cap bytes. */
static inline size_t sqlrec_text_record(uint8_t *out, size_t cap, const int64_t *v,
                                        const char *const *texts, int n, int skip, int format4) {
    uint64_t types[SQLREC_MAX_COLUMNS];
    size_t body = 0, data = 0;
    for (int i = 0; i < n; i++) {
        unsigned len = 0;
        if (texts[i]) {
            size_t tl = strlen(texts[i]);
            types[i] = 13 + 2 * (uint64_t)tl;
            data += tl;
        } else if (i == skip || v[i] == SQLREC_NULL) {
            types[i] = 0;
        } else {
            types[i] = sqlrec_int_type(v[i], format4, &len);
            data += len;
        }
        body += sqlrec_varint_len(types[i]);
    }
    size_t header = body + 1;
    if (sqlrec_varint_len(header) > 1)
        header = body + sqlrec_varint_len(body + 2);
    if (header + data > cap)
        return 0;
    size_t at = sqlrec_put_varint(out, header);
    for (int i = 0; i < n; i++)
        at += sqlrec_put_varint(out + at, types[i]);
    for (int i = 0; i < n; i++) {
        if (texts[i]) {
            size_t tl = strlen(texts[i]);
            memcpy(out + at, texts[i], tl);
            at += tl;
        } else if (types[i]) {
            unsigned len;
            sqlrec_int_type(v[i], format4, &len);
            for (unsigned k = 0; k < len; k++)
                out[at++] = (uint8_t)((uint64_t)v[i] >> (8 * (len - 1 - k)));
        }
    }
    return at;
}

#endif
