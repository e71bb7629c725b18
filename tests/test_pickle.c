/* test_pickle.c — the safe pickle reader (analyzer/pickle.h).
 *
 * Known answers for every accepted opcode (hand-assembled bytes, each
 * rendered back as a Python-like repr), memo sharing, the 64-bit integer
 * edges, every refusal naming its opcode and offset, and hostile input:
 * truncation at every offset of a small snapshot, each byte overwritten,
 * huge lengths, deep nesting, MARK storms, bad memo indices, cycles, the
 * memory bound. Then pickles written by Python itself (tests/make_pickles.py,
 * protocols 2–5, compared field by field; skipped without python3) and the
 * real snapshots in ../shared/data/pytorch (exit 77 when they are absent,
 * after everything else ran).
 *
 * Usage: test_pickle [SOURCE_DIR]; without it the repository is found from
 * GMT_SOURCE_DIR or this file's path. */
#include "check.h"
#include "pickle.h"
#include "pickle_build.h"

#include <stdarg.h>

/* ---- rendering a value like Python's repr ------------------------------- */

typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n >= 0 && b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)(n > 0 ? n : 0)) * 2 + 64;
        b->s = realloc(b->s, b->cap);
        if (!b->s)
            abort();
    }
}

static void render(sbuf *b, pickle_value v) {
    size_t n;
    const pickle_value *it;
    int64_t i;
    uint64_t u;
    double d;
    int t;
    switch (pickle_typeof(v)) {
    case PICKLE_MISSING:
        sb_printf(b, "<missing>");
        break;
    case PICKLE_NONE:
        sb_printf(b, "None");
        break;
    case PICKLE_BOOL:
        pickle_get_bool(v, &t);
        sb_printf(b, t ? "True" : "False");
        break;
    case PICKLE_INT:
        if (pickle_get_i64(v, &i))
            sb_printf(b, "%" PRId64, i);
        else if (pickle_get_u64(v, &u))
            sb_printf(b, "%" PRIu64, u);
        break;
    case PICKLE_FLOAT:
        pickle_get_f64(v, &d);
        sb_printf(b, "%.17g", d);
        break;
    case PICKLE_STR:
    case PICKLE_BYTES: {
        const char *s = pickle_get_str(v, &n);
        sb_printf(b, "%s'", pickle_typeof(v) == PICKLE_BYTES ? "b" : "");
        for (size_t k = 0; k < n; k++) {
            unsigned char c = (unsigned char)s[k];
            if (c < 32 || c > 126 || c == '\'' || c == '\\')
                sb_printf(b, "\\x%02x", c);
            else
                sb_printf(b, "%c", c);
        }
        sb_printf(b, "'");
        break;
    }
    case PICKLE_DICT:
        it = pickle_items(v, &n);
        sb_printf(b, "{");
        for (size_t k = 0; k < n; k += 2) {
            sb_printf(b, k ? ", " : "");
            render(b, it[k]);
            sb_printf(b, ": ");
            render(b, it[k + 1]);
        }
        sb_printf(b, "}");
        break;
    default: {
        pickle_type ty = pickle_typeof(v);
        const char *open = ty == PICKLE_TUPLE ? "(" : ty == PICKLE_LIST ? "[" : "{|";
        const char *close = ty == PICKLE_TUPLE ? ")" : ty == PICKLE_LIST ? "]" : "|}";
        sb_printf(b, "%s%s", ty == PICKLE_FROZENSET ? "frozen" : "", open);
        for (size_t k = 0; k < pickle_len(v); k++) {
            sb_printf(b, k ? ", " : "");
            render(b, pickle_item(v, k));
        }
        sb_printf(b, "%s%s", ty == PICKLE_TUPLE && pickle_len(v) == 1 ? "," : "", close);
    }
    }
}

/* Parses and renders; returns a malloc'd string or the error text. */
static char *repr_of(const void *data, size_t len, int *ok) {
    char err[256];
    pickle_doc *d = pickle_parse(data, len, NULL, err, sizeof err);
    *ok = d != NULL;
    if (!d)
        return strdup(err);
    sbuf b = {0};
    render(&b, pickle_root(d));
    pickle_free(d);
    return b.s;
}

/* ---- known answers ------------------------------------------------------ */

typedef struct known {
    const char *bytes;
    size_t len;
    const char *repr; /* the rendering, or a piece of the error */
    int ok;
} known;

#define K(lit, r)                                                                                  \
    { lit, sizeof(lit) - 1, r, 1 }
#define E(lit, r)                                                                                  \
    { lit, sizeof(lit) - 1, r, 0 }

static const known answers[] = {
    K("\x80\x04N.", "None"),
    K("\x80\x04\x88.", "True"),
    K("\x80\x04\x89.", "False"),
    K("J\xff\xff\xff\xff.", "-1"),
    K("J\x00\x00\x00\x80.", "-2147483648"),
    K("K\xff.", "255"),
    K("M\xff\xff.", "65535"),
    K("\x8a\x00.", "0"),
    K("\x8a\x01\xff.", "-1"),
    K("\x8a\x02\x00\x80.", "-32768"),
    K("\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40.", "4611686018427387904"),  /* 2^62 */
    K("\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x3f.", "4611686018427387903"),  /* 2^62-1 */
    K("\x8a\x08\xff\xff\xff\xff\xff\xff\xff\xbf.", "-4611686018427387905"), /* -2^62-1 */
    K("\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f.", "9223372036854775807"),
    K("\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80.", "-9223372036854775808"),
    K("\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00.", "9223372036854775808"),
    K("\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00.", "18446744073709551615"),
    K("\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\xff.", "-9223372036854775808"),
    K("\x8b\x02\x00\x00\x00\x00\x01.", "256"),
    K("\x8b\x09\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\x00.", "18446744073709551615"),
    K("G\x3f\xf8\x00\x00\x00\x00\x00\x00.", "1.5"),
    K("G\xc0\x02\x00\x00\x00\x00\x00\x00.", "-2.25"),
    K("\x8c\x03"
      "abc.",
      "'abc'"),
    K("\x8c\x00.", "''"),
    K("X\x03\x00\x00\x00h\xc3\xa9.", "'h\\xc3\\xa9'"),
    K("\x8d\x02\x00\x00\x00\x00\x00\x00\x00hi.", "'hi'"),
    K("C\x02h\x00.", "b'h\\x00'"),
    K("B\x01\x00\x00\x00z.", "b'z'"),
    K("\x8e\x01\x00\x00\x00\x00\x00\x00\x00z.", "b'z'"),
    K("\x96\x01\x00\x00\x00\x00\x00\x00\x00z.", "b'z'"),
    K("].", "[]"),
    K("]K\x01"
      "a.",
      "[1]"),
    K("](K\x01K\x02"
      "e.",
      "[1, 2]"),
    K("](e.", "[]"),
    K("(K\x01N\x88l.", "[1, None, True]"),
    K("}.", "{}"),
    K("}\x8c\x01"
      "aK\x01s.",
      "{'a': 1}"),
    K("}(\x8c\x01"
      "aK\x01\x8c\x01"
      "bK\x02u.",
      "{'a': 1, 'b': 2}"),
    K("(\x8c\x01"
      "aK\x01"
      "d.",
      "{'a': 1}"),
    K("}(K\x07\x8c\x01"
      "aK\x07\x8c\x01"
      "bu.",
      "{7: 'a', 7: 'b'}"), /* repeats kept */
    K(").", "()"),
    K("K\x01\x85.", "(1,)"),
    K("K\x01K\x02\x86.", "(1, 2)"),
    K("K\x01K\x02K\x03\x87.", "(1, 2, 3)"),
    K("(K\x01K\x02K\x03K\x04t.", "(1, 2, 3, 4)"),
    K("(t.", "()"),
    K("\x8f(K\x01K\x02\x90.", "{|1, 2|}"),
    K("\x8f.", "{||}"),
    K("(K\x01\x91.", "frozen{|1|}"),
    K("K\x01K\x02"
      "0.",
      "1"),
    K("K\x01(0.", "1"), /* POP takes an empty MARK */
    K("K\x01(K\x02K\x03"
      "1.",
      "1"), /* POP_MARK */
    K("K\x01"
      "2\x86.",
      "(1, 1)"),                      /* DUP */
    K("]\x94h\x00\x86.", "([], [])"), /* MEMOIZE + BINGET */
    K("]q\x05h\x05\x86.", "([], [])"),
    K("]r\x01\x00\x00\x00j\x01\x00\x00\x00\x86.", "([], [])"),
    K("\x80\x04\x95\x02\x00\x00\x00\x00\x00\x00\x00K\x01.", "1"),
    K("K\x01K\x02.", "2"),   /* STOP takes the top; the rest is left */
    K("K\x01.garbage", "1"), /* bytes after STOP are not read */
    K("(K\x01.", "1"),       /* an open MARK at STOP is left too */
    /* refusals and damage */
    E("", "pickle: empty input"),
    E("K\x01", "no STOP before the end at offset 2"),
    E(".", "STOP: stack underflow at offset 0"),
    E("\x80\x06N.", "protocol 6 is newer than 5"),
    E("\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.", "does not fit in 64 bits at offset 0"),
    E("\x8a\x09\xff\xff\xff\xff\xff\xff\xff\x7f\xff.", "does not fit in 64 bits"),
    E("\x8b\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01.",
      "does not fit in 64 bits"),
    E("\x8b\xff\xff\xff\xff.", "negative byte count"),
    E("\x8b\xff\xff\xff\x7f.", "truncated: needs 2147483647 bytes, 1 left at offset 0"),
    E("\x8d\x00\x00\x00\x00\x00\x00\x00\x10"
      "abc.",
      "BINUNICODE8: truncated: needs 1152921504606846976 bytes, 4 left at offset 0"),
    E("\x8e\xff\xff\xff\xff\xff\xff\xff\xff.", "BINBYTES8: truncated"),
    E("\x96\xff\xff\xff\xff\xff\xff\xff\x7f.", "BYTEARRAY8: truncated"),
    E("X\xff\xff\xff\xff.", "BINUNICODE: truncated"),
    E("\x95\xff\x00\x00\x00\x00\x00\x00\x00N.", "FRAME: truncated"),
    E("h\x05.", "BINGET: memo index 5 is not defined at offset 0"),
    E("]\x94j\x01\x00\x00\x00.", "LONG_BINGET: memo index 1 is not defined at offset 2"),
    E("]r\xff\xff\xff\xff.", "LONG_BINPUT: memo index 4294967295 is beyond"),
    E("a.", "APPEND: stack underflow at offset 0"),
    E("](K\x01"
      "a.",
      "APPEND: stack underflow"), /* the list is below the MARK */
    E("}K\x01"
      "a.",
      "APPEND: target is a dict, not a list at offset 3"),
    E("]K\x01K\x02s.", "SETITEM: target is a list, not a dict"),
    E("}(K\x01u.", "SETITEMS: odd number of items for a dict"),
    E("(K\x01"
      "d.",
      "DICT: odd number of items"),
    E("}]K\x01s.", "unhashable list used as a dict key"),
    E("(}K\x01"
      "d.",
      "unhashable dict used as a dict key"),
    E("\x8f(]\x90.", "unhashable list"),
    E("K\x01\x90.", "ADDITEMS: no MARK to close"),
    E("1.", "POP_MARK: no MARK to close"),
    E("e.", "APPENDS: no MARK to close"),
    E("(2.", "DUP: stack underflow"),
    E("K\x01(\x85.", "TUPLE1: stack underflow"),
    E("]\x94h\x00"
      "a.",
      "APPEND: a list stored inside itself (a cycle) is not supported at offset 4"),
    E("]\x94]h\x00"
      "a0K\x01"
      "a.",
      "APPEND: changes a list already stored in another container"),
    /* opcodes that could run code, each after a valid prefix */
    E("\x80\x04]cos\nsystem\n.", "opcode GLOBAL (0x63) at offset 3 is not allowed: snapshots are "
                                 "data only"),
    E("\x80\x04]\x93.", "opcode STACK_GLOBAL (0x93) at offset 3 is not allowed"),
    E("\x80\x04]R.", "opcode REDUCE (0x52) at offset 3 is not allowed"),
    E("\x80\x04]b.", "opcode BUILD (0x62) at offset 3 is not allowed"),
    E("\x80\x04]ios\nsystem\n.", "opcode INST (0x69) at offset 3 is not allowed"),
    E("\x80\x04](o.", "opcode OBJ (0x6F) at offset 4 is not allowed"),
    E("\x80\x04]\x81.", "opcode NEWOBJ (0x81) at offset 3 is not allowed"),
    E("\x80\x04]\x92.", "opcode NEWOBJ_EX (0x92) at offset 3 is not allowed"),
    E("\x80\x04]\x82\x01.", "opcode EXT1 (0x82) at offset 3 is not allowed"),
    E("\x80\x04]\x83\x01\x00.", "opcode EXT2 (0x83) at offset 3 is not allowed"),
    E("\x80\x04]\x84\x01\x00\x00\x00.", "opcode EXT4 (0x84) at offset 3 is not allowed"),
    E("\x80\x04]P1\n.", "opcode PERSID (0x50) at offset 3 is not allowed"),
    E("\x80\x04]Q.", "opcode BINPERSID (0x51) at offset 3 is not allowed"),
    E("\x80\x05\x97.", "opcode NEXT_BUFFER (0x97) at offset 2 is not supported"),
    E("\x80\x04]I1\n.", "opcode INT (0x49) at offset 3 is not supported"),
    E("\x80\x02U\x01"
      "a.",
      "opcode SHORT_BINSTRING (0x55) at offset 2 is not supported"),
    E("\x80\x04]\xff.", "pickle: unknown opcode 0xFF at offset 3"),
};

static void test_known_answers(void) {
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) {
        const known *k = &answers[i];
        int ok;
        char *got = repr_of(k->bytes, k->len, &ok);
        int match = k->ok ? ok && strcmp(got, k->repr) == 0 : !ok && strstr(got, k->repr) != NULL;
        if (!match) {
            fprintf(stderr, "case %zu: expected %s \"%s\", got %s \"%s\"\n", i,
                    k->ok ? "value" : "error", k->repr, ok ? "value" : "error", got);
            check_failures++;
        }
        if (!ok) /* every error is one line */
            CHECK(strchr(got, '\n') == NULL && strncmp(got, "pickle: ", 8) == 0);
        free(got);
    }
}

/* ---- memo sharing and integer accessors --------------------------------- */

static void test_sharing(void) {
    char err[256];
    /* ([1, 2], <the same list>, [1, 2]): one node reached twice, one equal */
    static const char bytes[] = "](K\x01K\x02"
                                "e\x94h\x00](K\x01K\x02"
                                "e\x87.";
    pickle_doc *d = pickle_parse(bytes, sizeof bytes - 1, NULL, err, sizeof err);
    CHECK(d != NULL);
    if (!d)
        return;
    pickle_value t = pickle_root(d);
    CHECK(pickle_typeof(t) == PICKLE_TUPLE && pickle_len(t) == 3);
    pickle_value a = pickle_item(t, 0), b = pickle_item(t, 1), c = pickle_item(t, 2);
    CHECK(a.bits == b.bits);
    CHECK(pickle_identity(a) == pickle_identity(b));
    CHECK(pickle_identity(a) != pickle_identity(c)); /* distinct objects ... */
    size_t na, nc;
    CHECK(pickle_items(a, &na) == pickle_items(c, &nc)); /* ... equal items, one array */
    CHECK(na == 2 && nc == 2);
    CHECK(pickle_identity(pickle_item(a, 0)) == NULL); /* small ints are immediate */
    CHECK(pickle_is_missing(pickle_item(t, 3)));
    CHECK(pickle_is_missing(pickle_dict_get(t, "x")));
    pickle_free(d);

    /* accessors and typed lookups */
    pb w = {0};
    pb_op(&w, 0x80);
    pb_op(&w, 4);
    pb_op(&w, '}');
    pb_op(&w, '(');
    pb_str(&w, "i");
    pb_int(&w, -5);
    pb_str(&w, "big");
    pb_raw(&w, "\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00", 11);
    pb_str(&w, "f");
    pb_raw(&w, "G\x3f\xf8\x00\x00\x00\x00\x00\x00", 9);
    pb_str(&w, "s");
    pb_str(&w, "text");
    pb_str(&w, "t");
    pb_op(&w, 0x88);
    pb_op(&w, 'u');
    pb_op(&w, '.');
    d = pickle_parse(w.b, w.len, NULL, err, sizeof err);
    CHECK(d != NULL);
    if (d) {
        pickle_value r = pickle_root(d);
        int64_t i = 0;
        uint64_t u = 0;
        CHECK(pickle_dict_i64(r, "i", 0) == -5);
        CHECK(!pickle_get_u64(pickle_dict_get(r, "i"), &u));   /* negative: no u64 */
        CHECK(!pickle_get_i64(pickle_dict_get(r, "big"), &i)); /* 2^64-1: no i64 */
        CHECK_EQ_U64(pickle_dict_u64(r, "big", 0), UINT64_MAX);
        CHECK(pickle_dict_f64(r, "f", 0) == 1.5);
        CHECK(pickle_dict_f64(r, "i", 0) == -5.0);
        CHECK(pickle_dict_bool(r, "t", 0) == 1);
        CHECK(pickle_dict_bool(r, "i", 7) == 7); /* an int is not a bool */
        size_t len;
        const char *s = pickle_dict_str(r, "s", &len);
        CHECK(s && len == 4 && memcmp(s, "text", 4) == 0);
        CHECK(pickle_str_eq(pickle_dict_get(r, "s"), "text"));
        CHECK(!pickle_str_eq(pickle_dict_get(r, "s"), "tex"));
        CHECK(pickle_dict_str(r, "i", &len) == NULL && len == 0);
        CHECK(pickle_dict_i64(r, "absent", 42) == 42);
        CHECK(pickle_len(r) == 5);
        CHECK_STR_EQ(pickle_type_name(pickle_typeof(r)), "dict");
        CHECK(pickle_memory_used(d) > 0);
        pickle_free(d);
    }
    free(w.b);
}

/* ---- a small snapshot, for damage tests ----------------------------------- */

/* ~4 KB, shaped like the real thing: memo-shared keys and frame dicts,
 * frames lists, LONG1 addresses, a tuple, floats, bools, BINPUT. */
static void build_mini_snapshot(pb *w) {
    pb_op(w, 0x80);
    pb_op(w, 4);
    pb_op(w, '}');
    pb_op(w, '(');
    pb_str(w, "segments");
    pb_op(w, ']');
    pb_op(w, '(');
    for (int s = 0; s < 4; s++) {
        pb_op(w, '}');
        pb_op(w, '(');
        pb_str(w, "address");
        pb_int(w, INT64_C(0x7f0000000000) + s * 0x200000);
        pb_str(w, "total_size");
        pb_int(w, 0x200000);
        pb_str(w, "segment_pool_id");
        pb_int(w, 0);
        pb_int(w, 0);
        pb_op(w, 0x86);
        pb_str(w, "is_expandable");
        pb_op(w, 0x89);
        pb_str(w, "blocks");
        pb_op(w, ']');
        pb_op(w, '(');
        for (int b = 0; b < 3; b++) {
            pb_op(w, '}');
            pb_op(w, '(');
            pb_str(w, "size");
            pb_int(w, 0x80000 + b * 0x1000);
            pb_str(w, "state");
            pb_str(w, b ? "inactive" : "active_allocated");
            pb_op(w, 'u');
        }
        pb_op(w, 'e');
        pb_op(w, 'u');
    }
    pb_op(w, 'e');
    pb_str(w, "device_traces");
    pb_op(w, ']');
    pb_op(w, ']');
    pb_op(w, '(');
    /* frame dicts, memoized at 0..4 via BINPUT */
    for (int e = 0; e < 20; e++) {
        pb_op(w, '}');
        pb_op(w, '(');
        pb_str(w, "action");
        pb_str(w, e % 2 ? "free_completed" : "alloc");
        pb_str(w, "addr");
        pb_raw(w, "\x8a\x06\x00\x00\x20\x00\x00\x7f", 8);
        pb_str(w, "size");
        pb_int(w, 512 * (e + 1));
        pb_str(w, "time_us");
        pb_raw(w, "\x8a\x07\x3d\x4a\x0b\x7c\x6b\x36\x06", 9);
        pb_str(w, "frames");
        pb_op(w, ']');
        pb_op(w, '(');
        for (int f = 0; f < 3; f++) {
            if (e == 0) {
                pb_op(w, '}');
                pb_op(w, '(');
                pb_str(w, "name");
                pb_str(w, "forward");
                pb_str(w, "filename");
                pb_str(w, "/home/user/model.py");
                pb_str(w, "line");
                pb_int(w, 100 + f);
                pb_op(w, 'u');
                pb_op(w, 'q');
                pb_op(w, f);
            } else {
                pb_op(w, 'h');
                pb_op(w, f);
            }
        }
        pb_op(w, 'e');
        pb_op(w, 'u');
    }
    pb_op(w, 'e');
    pb_op(w, 'a');
    pb_str(w, "allocator_settings");
    pb_op(w, '}');
    pb_op(w, '(');
    pb_str(w, "garbage_collection_threshold");
    pb_raw(w, "G\x00\x00\x00\x00\x00\x00\x00\x00", 9);
    pb_str(w, "expandable_segments");
    pb_op(w, 0x88);
    pb_op(w, 'u');
    pb_op(w, 'u');
    pb_op(w, '.');
}

static void test_damage(const unsigned char *data, size_t len, const char *what, int overwrite) {
    char err[256];
    pickle_doc *d = pickle_parse(data, len, NULL, err, sizeof err);
    if (!d)
        fprintf(stderr, "%s: %s\n", what, err);
    CHECK(d != NULL);
    pickle_free(d);
    /* Cut at every offset: STOP is the last byte, so every prefix fails. */
    size_t bad = 0;
    for (size_t cut = 0; cut < len; cut++) {
        unsigned char *copy = malloc(cut ? cut : 1); /* exact size: ASan sees overreads */
        memcpy(copy, data, cut);
        err[0] = '\0';
        d = pickle_parse(copy, cut, NULL, err, sizeof err);
        if (d || strncmp(err, "pickle: ", 8) != 0 || !strstr(err, "offset") || strchr(err, '\n'))
            bad++;
        pickle_free(d);
        free(copy);
    }
    if (bad)
        fprintf(stderr, "%s: %zu truncations not refused cleanly\n", what, bad);
    CHECK(bad == 0);
    /* Overwrite every byte with a few values: either a value or one clean
     * line, never a crash (ASan/UBSan builds check the rest). */
    if (!overwrite)
        return;
    unsigned char *copy = malloc(len);
    static const unsigned char subst[] = {0x00, 0xFF, '(', 'e', 'h', 0x8a, 0x94, '.'};
    bad = 0;
    for (size_t i = 0; i < len; i++) {
        for (size_t k = 0; k < sizeof subst; k++) {
            memcpy(copy, data, len);
            copy[i] = subst[k];
            err[0] = '\0';
            d = pickle_parse(copy, len, NULL, err, sizeof err);
            if (!d && strncmp(err, "pickle: ", 8) != 0)
                bad++;
            pickle_free(d);
        }
    }
    free(copy);
    CHECK(bad == 0);
}

/* ---- hostile shapes ------------------------------------------------------- */

static void expect_error(const pb *w, const pickle_options *opt, const char *piece) {
    char err[256] = "";
    pickle_doc *d = pickle_parse(w->b, w->len, opt, err, sizeof err);
    if (d || !strstr(err, piece)) {
        fprintf(stderr, "expected an error with \"%s\", got \"%s\"\n", piece, d ? "a value" : err);
        check_failures++;
    }
    pickle_free(d);
}

static void test_limits(void) {
    pb w = {0};
    /* 100 000 nested lists: EMPTY_LIST x N then APPEND x N */
    for (int i = 0; i < 100000; i++)
        pb_op(&w, ']');
    for (int i = 0; i < 99999; i++)
        pb_op(&w, 'a');
    pb_op(&w, '.');
    expect_error(&w, NULL, "nesting deeper than 1000");
    w.len = 0;
    /* a MARK storm */
    for (int i = 0; i < 100000; i++)
        pb_op(&w, '(');
    pb_op(&w, 'N');
    pb_op(&w, '.');
    expect_error(&w, NULL, "more than 1000 open MARKs");
    w.len = 0;
    /* nested tuples through MARK ... TUPLE: exactly the limit is fine */
    for (int depth = 999; depth <= 1000; depth++) {
        w.len = 0;
        for (int i = 0; i < depth; i++)
            pb_op(&w, '(');
        for (int i = 0; i < depth; i++)
            pb_op(&w, 't');
        pb_op(&w, '.');
        char err[256];
        pickle_doc *d = pickle_parse(w.b, w.len, NULL, err, sizeof err);
        CHECK(d != NULL); /* depth N from N MARK+TUPLE: the limit itself is fine */
        pickle_free(d);
    }
    w.len = 0;
    for (int i = 0; i < 1001; i++)
        pb_op(&w, ']');
    for (int i = 0; i < 1000; i++)
        pb_op(&w, 'a');
    pb_op(&w, '.');
    expect_error(&w, NULL, "nesting deeper than 1000"); /* depth 1001 */
    pickle_options deep = {.max_depth = 2000};
    char err[256];
    pickle_doc *d = pickle_parse(w.b, w.len, &deep, err, sizeof err);
    CHECK(d != NULL); /* a raised limit lets it through */
    if (d) {
        pickle_value v = pickle_root(d);
        int depth = 0;
        while (pickle_typeof(v) == PICKLE_LIST && pickle_len(v)) {
            v = pickle_item(v, 0);
            depth++;
        }
        CHECK(depth == 1000);
    }
    pickle_free(d);
    /* the memory bound: 200 000 empty dicts in a list */
    w.len = 0;
    pb_op(&w, ']');
    pb_op(&w, '(');
    for (int i = 0; i < 200000; i++)
        pb_op(&w, '}');
    pb_op(&w, 'e');
    pb_op(&w, '.');
    pickle_options small = {.max_memory = 1 << 20};
    expect_error(&w, &small, "needs more than 1048576 bytes of memory");
    d = pickle_parse(w.b, w.len, NULL, err, sizeof err);
    CHECK(d != NULL); /* the default bound (16x + 64 MiB) is enough */
    if (d)
        CHECK(pickle_len(pickle_root(d)) == 200000);
    pickle_free(d);
    /* many APPENDs one at a time stay linear (a 300 000-item list) */
    w.len = 0;
    pb_op(&w, ']');
    for (int i = 0; i < 300000; i++) {
        pb_op(&w, 'N');
        pb_op(&w, 'a');
    }
    pb_op(&w, '.');
    d = pickle_parse(w.b, w.len, NULL, err, sizeof err);
    CHECK(d != NULL && pickle_len(pickle_root(d)) == 300000);
    pickle_free(d);
    free(w.b);
}

/* ---- pickles written by Python --------------------------------------------- */

static pickle_doc *load(const char *dir, const char *name) {
    char path[8192], err[256];
    if ((size_t)snprintf(path, sizeof path, "%.4096s/%.1024s", dir, name) >= sizeof path)
        return NULL;
    pickle_doc *d = pickle_parse_file(path, NULL, err, sizeof err);
    if (!d) {
        fprintf(stderr, "%s\n", err);
        check_failures++;
    }
    return d;
}

static void check_values(pickle_value r, int proto) {
    static const char *const ints[] = {"0",
                                       "1",
                                       "255",
                                       "256",
                                       "65535",
                                       "65536",
                                       "-1",
                                       "-129",
                                       "2147483647",
                                       "-2147483648",
                                       "2147483648",
                                       "4611686018427387904",
                                       "9223372036854775807",
                                       "-9223372036854775808",
                                       "9223372036854775808",
                                       "18446744073709551615"};
    CHECK(pickle_typeof(r) == PICKLE_DICT);
    CHECK(pickle_typeof(pickle_dict_get(r, "none")) == PICKLE_NONE);
    CHECK(pickle_dict_bool(r, "true", 0) == 1 && pickle_dict_bool(r, "false", 1) == 0);
    pickle_value l = pickle_dict_get(r, "ints");
    CHECK(pickle_len(l) == sizeof ints / sizeof ints[0]);
    for (size_t i = 0; i < pickle_len(l) && i < sizeof ints / sizeof ints[0]; i++) {
        sbuf b = {0};
        render(&b, pickle_item(l, i));
        CHECK_STR_EQ(b.s, ints[i]);
        free(b.s);
    }
    CHECK(pickle_dict_f64(r, "float", 0) == 1.5);
    CHECK(pickle_dict_f64(r, "negfloat", 0) == -2.25e-300);
    CHECK(pickle_str_eq(pickle_dict_get(r, "str"), "h\xc3\xa9llo"));
    CHECK(pickle_str_eq(pickle_dict_get(r, "empty_str"), ""));
    size_t n;
    const char *s = pickle_dict_str(r, "long_str", &n);
    CHECK(s && n == 300 && s[0] == 'x' && s[299] == 'x');
    const char *expect[][2] = {{"tuple0", "()"},
                               {"tuple1", "(1,)"},
                               {"tuple2", "(1, 'a')"},
                               {"tuple3", "(1, 2, 3)"},
                               {"tuple4", "(1, 2, 3, 4)"},
                               {"list", "['a', 1, None]"},
                               {"dict", "{'k': 'v', 7: [8]}"},
                               {"shared_a", "[1, 2, 3]"},
                               {"bytes", "b'\\x00\\x01\\xff'"},
                               {"bytearray", "b'ba'"},
                               {"set", "{|5|}"},
                               {"frozenset", "frozen{|6|}"}};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        pickle_value v = pickle_dict_get(r, expect[i][0]);
        if (pickle_is_missing(v)) {
            /* only what the protocol cannot write without REDUCE is absent */
            CHECK((proto < 3 && !strcmp(expect[i][0], "bytes")) ||
                  (proto < 5 && !strcmp(expect[i][0], "bytearray")) ||
                  (proto < 4 && strstr(expect[i][0], "set")));
            continue;
        }
        sbuf b = {0};
        render(&b, v);
        CHECK_STR_EQ(b.s, expect[i][1]);
        free(b.s);
    }
    pickle_value big = pickle_dict_get(r, "biglist");
    CHECK(pickle_len(big) == 2500);
    int64_t sum = 0, x;
    for (size_t i = 0; i < pickle_len(big); i++)
        if (pickle_get_i64(pickle_item(big, i), &x))
            sum += x;
    CHECK(sum == 2500 * 2499 / 2);
    CHECK(pickle_identity(pickle_dict_get(r, "shared_a")) ==
          pickle_identity(pickle_dict_get(r, "shared_b")));
    CHECK(pickle_identity(pickle_dict_get(r, "shared_a")) != NULL);
}

static void test_python_pickles(void) {
    char tmpl[] = "/tmp/test_pickle.XXXXXX";
    char *dir = python_pickles_make(tmpl, "Python-written pickles");
    if (!dir)
        return;
    for (int proto = 2; proto <= 5; proto++) {
        char name[64];
        snprintf(name, sizeof name, "values-p%d.pickle", proto);
        pickle_doc *d = load(dir, name);
        if (d)
            check_values(pickle_root(d), proto);
        pickle_free(d);
    }
    char path[4200], err[256] = "";
    snprintf(path, sizeof path, "%s/object.pickle", dir);
    pickle_doc *d = pickle_parse_file(path, NULL, err, sizeof err);
    CHECK(d == NULL);
    CHECK(strstr(err, "opcode STACK_GLOBAL (0x93) at offset ") != NULL);
    pickle_free(d);
    /* the same snapshot written with protocols 2 (BINPUT) and 4 (MEMOIZE) */
    pickle_doc *p2 = load(dir, "snapshot-p2.pickle"), *p4 = load(dir, "snapshot-p4.pickle");
    if (p2 && p4) {
        sbuf a = {0}, b = {0};
        render(&a, pickle_root(p2));
        render(&b, pickle_root(p4));
        CHECK(a.len > 100000 && a.len == b.len && strcmp(a.s, b.s) == 0);
        free(a.s);
        free(b.s);
    }
    pickle_free(p2);
    pickle_free(p4);
    python_pickles_remove(dir);
}

/* ---- the real snapshots --------------------------------------------------- */

/* Returns 0 when ../shared is absent. */
static int test_real_files(void) {
    char dir[4200];
    if (!real_snapshots_dir(dir, sizeof dir))
        return 0;
    /* root keys and segment counts, as Python's pickle module reads them */
    static const struct {
        const char *name;
        size_t root_keys, segments;
    } files[] = {{"legacy-format.pickle", 2, 7},
                 {"lm-ctx512-forward.pickle", 4, 649},
                 {"lm-small-forward.pickle", 4, 30},
                 {"segments-only.pickle", 4, 1457}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        pickle_doc *d = load(dir, files[i].name);
        if (!d)
            continue;
        pickle_value r = pickle_root(d);
        CHECK(pickle_len(r) == files[i].root_keys);
        CHECK(pickle_len(pickle_dict_get(r, "segments")) == files[i].segments);
        pickle_free(d);
    }
    /* 2^64-1 as a frame's line, the one LONG1 of 9 bytes in the real files */
    pickle_doc *d = load(dir, "lm-small-forward.pickle");
    if (d) {
        pickle_value e =
            pickle_item(pickle_item(pickle_dict_get(pickle_root(d), "device_traces"), 0), 1);
        pickle_value f = pickle_item(pickle_dict_get(e, "frames"), 11);
        CHECK_EQ_U64(pickle_dict_u64(f, "line", 0), UINT64_MAX);
        pickle_free(d);
    }
    /* truncation and damage on a real file (12.5 KB) */
    char path[4300];
    snprintf(path, sizeof path, "%s/legacy-format.pickle", dir);
    FILE *fp = fopen(path, "rb");
    CHECK(fp != NULL);
    if (fp) {
        unsigned char *buf = malloc(1 << 16);
        size_t n = fread(buf, 1, 1 << 16, fp);
        fclose(fp);
        CHECK(n == 12567);
        test_damage(buf, n, "legacy-format.pickle", 0);
        free(buf);
    }
    return 1;
}

/* ---- the record hook ---------------------------------------------------- */

/* Takes the dicts with a key "a" (numbering them), keeps the others, refuses "bad". */
typedef struct took {
    uint64_t next;
    int64_t a_sum;
} took;

static int take_a(void *ctx, const pickle_value *pairs, size_t n, uint64_t *index) {
    took *t = ctx;
    for (size_t i = 0; i + 1 < n; i += 2) {
        if (pickle_str_eq(pairs[i], "bad"))
            return -1;
        int64_t v;
        if (pickle_str_eq(pairs[i], "a") && pickle_get_i64(pairs[i + 1], &v)) {
            t->a_sum += v;
            *index = t->next++;
            return 1;
        }
    }
    return 0;
}

/* [{"a": 1}, {"b": 2}, {"a": 3, "c": 4}] as Python writes it (each dict memoized), then `tail`
 * before the STOP. */
static void records_pickle(pb *w, const char *tail, size_t tail_len) {
    w->len = 0;
    pb_op(w, 0x80);
    pb_op(w, 4);
    pb_op(w, ']');
    pb_op(w, 0x94);
    pb_op(w, '(');
    static const char *const keys[] = {"a", "b", "a"};
    for (int i = 0; i < 3; i++) {
        pb_op(w, '}');
        pb_op(w, 0x94);
        pb_op(w, '(');
        pb_str(w, keys[i]);
        pb_int(w, 2 * i + 1);
        if (i == 2) {
            pb_str(w, "c");
            pb_int(w, 4);
        }
        pb_op(w, 'u');
    }
    pb_op(w, 'e');
    pb_raw(w, tail, tail_len);
    pb_op(w, '.');
}

static void test_record_hook(void) {
    pb w = {0};
    char err[256];
    took t = {0};
    pickle_options opt = {.record_hook = take_a, .record_ctx = &t};
    records_pickle(&w, "", 0);
    pickle_doc *d = pickle_parse(w.b, w.len, &opt, err, sizeof err);
    CHECK(d != NULL);
    if (d) {
        pickle_value r = pickle_root(d);
        uint64_t i0 = 9, i2 = 9;
        CHECK(pickle_typeof(r) == PICKLE_LIST && pickle_len(r) == 3);
        CHECK(pickle_typeof(pickle_item(r, 0)) == PICKLE_RECORD);
        CHECK(pickle_get_record(pickle_item(r, 0), &i0) && i0 == 0);
        CHECK(pickle_typeof(pickle_item(r, 1)) == PICKLE_DICT); /* kept */
        CHECK(pickle_dict_i64(pickle_item(r, 1), "b", 0) == 3);
        CHECK(pickle_get_record(pickle_item(r, 2), &i2) && i2 == 1);
        CHECK(!pickle_get_record(pickle_item(r, 1), &i0));
        CHECK(t.a_sum == 1 + 5);
        CHECK_STR_EQ(pickle_type_name(PICKLE_RECORD), "record");
    }
    pickle_free(d);
    /* without the hook, the same bytes are three dicts */
    d = pickle_parse(w.b, w.len, NULL, err, sizeof err);
    CHECK(d && pickle_typeof(pickle_item(pickle_root(d), 0)) == PICKLE_DICT);
    pickle_free(d);
    /* a taken dict got back from the memo and filled: refused as what it is */
    t = (took){0};
    records_pickle(&w, "h\x01(\x8c\x01zK\x02u", 9);
    expect_error(&w, &opt, "SETITEMS: a dict read as a record is filled again");
    /* a taken dict got back from the memo and dropped is no use of it (Python reads it) */
    t = (took){0};
    records_pickle(&w,
                   "h\x01"
                   "0",
                   3);
    d = pickle_parse(w.b, w.len, &opt, err, sizeof err);
    CHECK(d && pickle_len(pickle_root(d)) == 3 && t.next == 2);
    pickle_free(d);
    /* a taken dict reached again: through the memo (h\x01 is the first dict), the message
     * naming the opcode that uses it ... */
    t = (took){0};
    records_pickle(&w, "h\x01\x86", 3);
    expect_error(&w, &opt, "TUPLE2: a dict read as a record is used a second time");
    /* ... or as a copy made before it was filled, by DUP or by a GET, or through a second memo
     * slot. Its node then stays taken: were it given to the next dict ({"b": 2}), the copy
     * would read as that dict and pass. */
    for (int copy = 0; copy < 3; copy++) {
        w.len = 0;
        pb_op(&w, ']');
        pb_op(&w, '}');
        pb_op(&w, 0x94); /* memo 0 */
        if (copy == 0)
            pb_op(&w, '2');
        else if (copy == 1)
            pb_raw(&w, "h\x00", 2);
        else
            pb_raw(&w, "q\x05", 2); /* memo 5 too */
        pb_op(&w, '(');
        pb_str(&w, "a");
        pb_int(&w, 1);
        pb_op(&w, 'u');
        pb_op(&w, '}');
        pb_op(&w, '(');
        pb_str(&w, "b");
        pb_int(&w, 2);
        pb_op(&w, 'u');
        if (copy == 2) /* (the record, the new dict, memo 0) */
            pb_raw(&w, "h\x00", 2);
        pb_op(&w, 0x87); /* a tuple of the three */
        pb_op(&w, 'a');
        pb_op(&w, '.');
        t = (took){0};
        expect_error(&w, &opt, "used a second time");
    }
    /* ... or filled again */
    w.len = 0;
    pb_op(&w, '}');
    pb_op(&w, '(');
    pb_str(&w, "a");
    pb_int(&w, 1);
    pb_op(&w, 'u');
    pb_op(&w, '(');
    pb_str(&w, "z");
    pb_int(&w, 2);
    pb_op(&w, 'u');
    pb_op(&w, '.');
    t = (took){0};
    expect_error(&w, &opt, "filled again");
    /* ... or used as a dict key (a dict is unhashable, taken or not) */
    w.len = 0;
    pb_op(&w, '}');
    pb_op(&w, '(');
    pb_op(&w, '}');
    pb_op(&w, '(');
    pb_str(&w, "a");
    pb_int(&w, 1);
    pb_op(&w, 'u');
    pb_int(&w, 2);
    pb_op(&w, 'u');
    pb_op(&w, '.');
    t = (took){0};
    expect_error(&w, &opt, "unhashable dict");
    expect_error(&w, NULL, "unhashable dict"); /* the same without the hook */
    /* the hook's refusal stops the parse */
    w.len = 0;
    pb_op(&w, '}');
    pb_op(&w, '(');
    pb_str(&w, "bad");
    pb_int(&w, 1);
    pb_op(&w, 'u');
    pb_op(&w, '.');
    expect_error(&w, &opt, "refused a record");
    free(w.b);
}

/* A taken dict's node serves the next dict: 10 000 trace-entry-like dicts, taken, cost no
 * node each (24 bytes: 240 000 bytes in all), and come out as their records, in order. */
static void test_taken_nodes_reused(void) {
    enum { N = 10000 };
    pb w = {0};
    char err[256];
    pb_op(&w, 0x80);
    pb_op(&w, 4);
    pb_op(&w, ']');
    pb_op(&w, 0x94);
    for (int i = 0; i < N; i++) {
        if (i % 1000 == 0)
            pb_op(&w, '(');
        pb_op(&w, '}');
        pb_op(&w, 0x94);
        pb_op(&w, '(');
        if (i == 0) { /* the key, memoized (slot 2) and then shared, as Python writes it */
            pb_str(&w, "a");
            pb_op(&w, 0x94);
        } else {
            pb_raw(&w, "h\x02", 2);
        }
        pb_int(&w, i);
        pb_op(&w, 'u');
        if (i % 1000 == 999)
            pb_op(&w, 'e');
    }
    pb_op(&w, '.');
    took t = {0};
    pickle_options opt = {.record_hook = take_a, .record_ctx = &t};
    pickle_doc *d = pickle_parse(w.b, w.len, &opt, err, sizeof err);
    pickle_doc *tree = pickle_parse(w.b, w.len, NULL, err, sizeof err);
    CHECK(d && tree && t.next == N && t.a_sum == (int64_t)N * (N - 1) / 2);
    if (d && tree) {
        pickle_value r = pickle_root(d);
        uint64_t k = 0, bad = 0;
        for (size_t i = 0; i < N; i++)
            bad += !pickle_get_record(pickle_item(r, i), &k) || k != i;
        CHECK(pickle_len(r) == N && bad == 0);
        /* the list's items (80 000 bytes, in the heap) and one arena chunk */
        CHECK(pickle_memory_used(d) < 240000);
        CHECK(pickle_memory_used(tree) > pickle_memory_used(d) + 240000);
    }
    pickle_free(d);
    pickle_free(tree);
    free(w.b);
}

/* The memo's slots past the highest one written are reserved, not zeroed: a GET there, or in
 * a gap below it, finds nothing defined. */
static void test_memo_gaps(void) {
    pb w = {0};
    static const struct {
        uint32_t put, get;
        int defined;
    } cases[] = {{1500, 1700, 0}, {1500, 3, 0}, {1500, 1500, 1}, {5, 1023, 0}, {5, 5, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        w.len = 0;
        pb_op(&w, ']');
        pb_op(&w, 'r');
        pb_le(&w, cases[i].put, 4);
        pb_op(&w, 'j');
        pb_le(&w, cases[i].get, 4);
        pb_op(&w, 0x86);
        pb_op(&w, '.');
        for (int k = 0; k < 4000; k++) /* the memo may be as large as the input */
            pb_op(&w, 0);
        if (cases[i].defined) {
            char err[256];
            pickle_doc *d = pickle_parse(w.b, w.len, NULL, err, sizeof err);
            CHECK(d && pickle_typeof(pickle_root(d)) == PICKLE_TUPLE);
            pickle_free(d);
        } else {
            expect_error(&w, NULL, "is not defined");
        }
    }
    free(w.b);
}

int main(int argc, char **argv) {
    find_source_dir(argc, argv);
    test_record_hook();
    test_taken_nodes_reused();
    test_memo_gaps();
    test_known_answers();
    test_sharing();
    pb w = {0};
    build_mini_snapshot(&w);
    CHECK(w.len > 2000);
    test_damage(w.b, w.len, "mini snapshot", 1);
    free(w.b);
    test_limits();
    test_python_pickles();
    return finish_or_skip("test_pickle", test_real_files());
}
