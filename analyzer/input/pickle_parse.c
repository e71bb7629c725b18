/* pickle_parse.c — the pickle reader's opcode machine (see pickle.h for the
 * contract): reading the input, the stack, marks and memo, the limits, the
 * refusals, and the entry points. The nodes it makes and the containers it
 * fills are pickle_value.c's.
 *
 * A stack machine like Python's own unpickler, iterative (no recursion), fed
 * straight from the input buffer. It is shaped for large snapshots (a million
 * trace entries, 100–200 MB) and for hostile bytes:
 *   - str and bytes point into the input (nothing is copied);
 *   - a file parsed by pickle_parse_file is paged in ahead of the cursor and
 *     dropped behind it (window_advance), so the process holds about the
 *     tree, not the tree plus the file;
 *   - every allocation (arena, large arrays, stack, memo, marks) is counted
 *     against max_memory before it is made (pickle_charge); every length is
 *     checked against what is left of the input before it is used (NEED);
 *   - every refusal is one line naming the opcode and its byte offset. */
#include "pickle_internal.h"
#include "prefault.h"

#include "gmt_assert.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- opcodes ------------------------------------------------------------ */

static const char *const opcode_names[256] = {
    ['('] = "MARK",
    ['.'] = "STOP",
    ['0'] = "POP",
    ['1'] = "POP_MARK",
    ['2'] = "DUP",
    ['F'] = "FLOAT",
    ['I'] = "INT",
    ['J'] = "BININT",
    ['K'] = "BININT1",
    ['L'] = "LONG",
    ['M'] = "BININT2",
    ['N'] = "NONE",
    ['P'] = "PERSID",
    ['Q'] = "BINPERSID",
    ['R'] = "REDUCE",
    ['S'] = "STRING",
    ['T'] = "BINSTRING",
    ['U'] = "SHORT_BINSTRING",
    ['V'] = "UNICODE",
    ['X'] = "BINUNICODE",
    ['a'] = "APPEND",
    ['b'] = "BUILD",
    ['c'] = "GLOBAL",
    ['d'] = "DICT",
    ['}'] = "EMPTY_DICT",
    ['e'] = "APPENDS",
    ['g'] = "GET",
    ['h'] = "BINGET",
    ['i'] = "INST",
    ['j'] = "LONG_BINGET",
    ['l'] = "LIST",
    [']'] = "EMPTY_LIST",
    ['o'] = "OBJ",
    ['p'] = "PUT",
    ['q'] = "BINPUT",
    ['r'] = "LONG_BINPUT",
    ['s'] = "SETITEM",
    ['t'] = "TUPLE",
    [')'] = "EMPTY_TUPLE",
    ['u'] = "SETITEMS",
    ['G'] = "BINFLOAT",
    [0x80] = "PROTO",
    [0x81] = "NEWOBJ",
    [0x82] = "EXT1",
    [0x83] = "EXT2",
    [0x84] = "EXT4",
    [0x85] = "TUPLE1",
    [0x86] = "TUPLE2",
    [0x87] = "TUPLE3",
    [0x88] = "NEWTRUE",
    [0x89] = "NEWFALSE",
    [0x8a] = "LONG1",
    [0x8b] = "LONG4",
    ['B'] = "BINBYTES",
    ['C'] = "SHORT_BINBYTES",
    [0x8c] = "SHORT_BINUNICODE",
    [0x8d] = "BINUNICODE8",
    [0x8e] = "BINBYTES8",
    [0x8f] = "EMPTY_SET",
    [0x90] = "ADDITEMS",
    [0x91] = "FROZENSET",
    [0x92] = "NEWOBJ_EX",
    [0x93] = "STACK_GLOBAL",
    [0x94] = "MEMOIZE",
    [0x95] = "FRAME",
    [0x96] = "BYTEARRAY8",
    [0x97] = "NEXT_BUFFER",
    [0x98] = "READONLY_BUFFER",
};

/* ---- refusals and limits ------------------------------------------------ */

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* "pickle: <what> at offset N", always naming the opcode being run. */
int pickle_fail(parser *P, const char *fmt, ...) {
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *name = opcode_names[*P->op_at] ? opcode_names[*P->op_at] : "?";
    set_err(P->err, P->errlen, "pickle: %s: %s at offset %zu", name, what,
            (size_t)(P->op_at - P->base));
    return -1;
}

/* Counts n more bytes against the memory budget. */
int pickle_charge(parser *P, size_t n) {
    pickle_doc *d = P->doc;
    if (n > d->budget - d->budget_used)
        return pickle_fail(P, "needs more than %zu bytes of memory (the limit for this input)",
                           d->budget);
    d->budget_used += n;
    return 0;
}

/* ---- stack, marks and memo ---------------------------------------------- */

int pickle_grow_stack(parser *P) {
    size_t cap = P->stack_cap ? P->stack_cap * 2 : 256;
    if (pickle_charge(P, (cap - P->stack_cap) * sizeof *P->stack) < 0)
        return -1;
    pickle_value *s = realloc(P->stack, cap * sizeof *s);
    if (!s)
        return pickle_fail(P, "out of memory");
    P->stack = s;
    P->stack_cap = cap;
    return 0;
}

static inline size_t fence(const parser *P) { return P->nmarks ? P->marks[P->nmarks - 1] : 0; }

static int pop(parser *P, pickle_value *out) {
    if (P->sp <= fence(P))
        return pickle_fail(P, "stack underflow");
    *out = P->stack[--P->sp];
    return 0;
}

/* Pops the innermost MARK; *start gets the stack index it recorded. */
static int pop_mark(parser *P, size_t *start) {
    if (!P->nmarks)
        return pickle_fail(P, "no MARK to close");
    *start = P->marks[--P->nmarks];
    /* a MARK records sp, and nothing pops below the innermost one (fence) */
    if (GMT_NEVER(*start > P->sp))
        return pickle_fail(P, "a MARK above the stack");
    return 0;
}

/* The memo's slots [0, memo_init) are defined or zero (undefined); those beyond are reserved
 * but never touched: Python numbers its entries densely, so zeroing a doubled array ahead of
 * them would touch up to twice the memory the entries use (fresh pages are what a large parse
 * spends most on, see pickle_value.c). A slot past memo_init gets the zeros below it first. */
/* How far ahead of memo_init its pages are made ready (prefault.h). */
#define MEMO_LEAD ((size_t)2 << 20)

static int memo_set(parser *P, uint64_t idx, pickle_value v) {
    if (idx >= P->memo_limit)
        return pickle_fail(P, "memo index %llu is beyond anything this input can hold",
                           (unsigned long long)idx);
    if (idx >= P->memo_cap) {
        size_t cap = P->memo_cap ? P->memo_cap * 2 : 1024;
        if (cap <= idx)
            cap = (size_t)idx + 1;
        if (cap > P->memo_limit)
            cap = P->memo_limit;
        size_t words = (cap + 63) / 64, had = (P->memo_cap + 63) / 64;
        if (pickle_charge(P, (cap - P->memo_cap) * sizeof *P->memo +
                                 (words - had) * sizeof *P->memo_read) < 0)
            return -1;
        prefault_stop(P->memo_pages); /* the memo may move */
        P->memo_pages = NULL;
        pickle_value *m = realloc(P->memo, cap * sizeof *m);
        if (m) {
            P->memo = m;
            P->memo_pages = prefault_start(m, cap * sizeof *m, MEMO_LEAD);
            prefault_progress(P->memo_pages, P->memo_init * sizeof *m);
        }
        uint64_t *r = m ? realloc(P->memo_read, words * sizeof *r) : NULL;
        if (!r)
            return pickle_fail(P, "out of memory");
        memset(r + had, 0, (words - had) * sizeof *r);
        P->memo_read = r;
        P->memo_cap = cap;
    }
    if (idx >= P->memo_init) {
        memset(P->memo + P->memo_init, 0, (idx + 1 - P->memo_init) * sizeof *P->memo);
        P->memo_init = idx + 1;
        if ((P->memo_init & 16383) == 0)
            prefault_progress(P->memo_pages, P->memo_init * sizeof *P->memo);
    }
    if (P->memo[idx].bits == 0)
        P->memo_count++;
    P->memo[idx] = v;
    const node *n = node_of(v);
    if (n && n->type == PICKLE_DICT) { /* where a record hook's dict is referenced from */
        cont_node *c = (cont_node *)(uintptr_t)v.bits;
        c->memo_slot = c->memo_slot == 0 && idx < MEMO_SLOT_SEVERAL - 1 ? (uint32_t)idx + 1
                                                                        : MEMO_SLOT_SEVERAL;
    }
    return 0;
}

static int memo_get(parser *P, uint64_t idx) {
    if (idx >= P->memo_init || P->memo[idx].bits == 0)
        return pickle_fail(P, "memo index %llu is not defined", (unsigned long long)idx);
    /* A dict the record hook took comes back here as its node (when it could not be reused,
     * see release_taken) or as V_TAKEN (it was): then as one empty dict node flagged the same
     * way. Whatever stores it (adopt), fills it (frozen) or returns it (STOP) refuses it, with
     * the message of the opcode that does; a GET alone, then popped, is no use of it. */
    pickle_value v = P->memo[idx];
    if (v.bits == V_TAKEN) {
        if (!P->taken_dict && pickle_make_container(P, PICKLE_DICT, &P->taken_dict) < 0)
            return -1;
        P->taken_dict->h.flags = NODE_TAKEN | NODE_FROZEN;
        v = handle(P->taken_dict);
    }
    P->memo_read[idx / 64] |= UINT64_C(1) << (idx % 64);
    return push(P, v);
}

/* ---- reading arguments -------------------------------------------------- */

static inline uint64_t le(const uint8_t *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* LONG1/LONG4 payload: little-endian two's complement, any length whose
 * value lies in [-2^63, 2^64). */
static int decode_long(parser *P, const uint8_t *b, size_t n, pickle_value *out) {
    if (n == 0)
        return pickle_make_i64(P, 0, out);
    int neg = (b[n - 1] & 0x80) != 0;
    if (n <= 8) {
        uint64_t u = le(b, (unsigned)n);
        if (neg && n < 8)
            u |= ~(uint64_t)0 << (8 * n);
        return pickle_make_i64(P, u64_as_i64(u), out);
    }
    for (size_t i = 8; i < n; i++)
        if (b[i] != (neg ? 0xFF : 0x00))
            return pickle_fail(P, "integer of %zu bytes does not fit in 64 bits", n);
    uint64_t u = le(b, 8);
    if (neg) {
        if (!(b[7] & 0x80))
            return pickle_fail(P, "integer of %zu bytes does not fit in 64 bits", n);
        return pickle_make_i64(P, u64_as_i64(u), out);
    }
    return pickle_make_u64(P, u, out);
}

static int make_str(parser *P, pickle_type type, const uint8_t *p, uint64_t len) {
    if (len > UINT32_MAX)
        return pickle_fail(P, "string of %llu bytes is too long (the limit is 4 GiB)",
                           (unsigned long long)len);
    str_node *s = pickle_arena_alloc(P, sizeof *s);
    if (!s)
        return -1;
    s->h = (node){(uint8_t)type, 0, 0, (uint32_t)len};
    s->ptr = (const char *)p;
    return push(P, handle(s));
}

/* ---- the loop ----------------------------------------------------------- */

static int refuse(parser *P, uint8_t op) {
    const char *name = opcode_names[op];
    size_t off = (size_t)(P->op_at - P->base);
    switch (op) {
    case 'c':
    case 0x93:
    case 'R':
    case 'b':
    case 'i':
    case 'o':
    case 0x81:
    case 0x92:
    case 0x82:
    case 0x83:
    case 0x84:
    case 'P':
    case 'Q':
        set_err(P->err, P->errlen,
                "pickle: opcode %s (0x%02X) at offset %zu is not allowed: snapshots are data only",
                name, op, off);
        break;
    case 0x97:
    case 0x98:
        set_err(P->err, P->errlen,
                "pickle: opcode %s (0x%02X) at offset %zu is not supported: it needs "
                "out-of-band buffers",
                name, op, off);
        break;
    default:
        if (name)
            set_err(P->err, P->errlen,
                    "pickle: opcode %s (0x%02X) at offset %zu is not supported: protocol-0 text "
                    "and Python 2 string opcodes are not read (write with protocol 2 or later)",
                    name, op, off);
        else
            set_err(P->err, P->errlen, "pickle: unknown opcode 0x%02X at offset %zu", op, off);
    }
    return -1;
}

/* For a file the document maps itself, resident memory stays near the tree
 * size rather than tree + file: the next WINDOW bytes are paged in ahead in
 * one call, and pages behind the cursor are dropped. They are clean pages of
 * a private file mapping, so a later read of a string there simply faults
 * them back in from the file. */
#define WINDOW ((size_t)16 << 20)

static void window_advance(parser *P, const uint8_t *p) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uint8_t *drop_to = (const uint8_t *)((uintptr_t)p & ~(page - 1));
    if (drop_to > P->win_dropped) {
        madvise((void *)P->win_dropped, (size_t)(drop_to - P->win_dropped), MADV_DONTNEED);
        P->win_dropped = drop_to;
    }
    /* page-aligned ends; the mapping covers the last page in full */
    const uint8_t *want = (size_t)(P->map_end - p) > 2 * WINDOW ? p + 2 * WINDOW : P->map_end;
    want = (const uint8_t *)(((uintptr_t)want + page - 1) & ~(page - 1));
    if (want > P->win_populated) {
#ifdef MADV_POPULATE_READ
        madvise((void *)P->win_populated, (size_t)(want - P->win_populated), MADV_POPULATE_READ);
#else
        madvise((void *)P->win_populated, (size_t)(want - P->win_populated), MADV_WILLNEED);
#endif
        P->win_populated = want;
    }
    P->win_next = (size_t)(P->end - p) > WINDOW ? p + WINDOW : P->end;
}

/* Makes sure n argument bytes follow the opcode at p. */
#define NEED(n)                                                                                    \
    do {                                                                                           \
        if ((uint64_t)(P->end - p) < (uint64_t)(n)) {                                              \
            pickle_fail(P, "truncated: needs %llu bytes, %zu left", (unsigned long long)(n),       \
                        (size_t)(P->end - p));                                                     \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

static int run(parser *P, pickle_value *root) {
    const uint8_t *p = P->base;
    pickle_value v;
    size_t start = 0;
    for (;;) {
        if (p >= P->end) {
            set_err(P->err, P->errlen, "pickle: truncated: no STOP before the end at offset %zu",
                    (size_t)(p - P->base));
            return -1;
        }
        if (p >= P->win_next)
            window_advance(P, p);
        P->op_at = p;
        uint8_t op = *p++;
        int rc = 0;
        switch (op) {
        case 0x80: /* PROTO */
            NEED(1);
            if (*p > 5)
                return pickle_fail(P, "protocol %u is newer than 5", *p);
            p++;
            break;
        case 0x95: /* FRAME: a length prefix; the opcodes inside are read as usual */
            NEED(8);
            if (le(p, 8) > (uint64_t)(P->end - p - 8))
                return pickle_fail(P, "truncated: frame of %llu bytes, %zu left",
                                   (unsigned long long)le(p, 8), (size_t)(P->end - p - 8));
            p += 8;
            break;
        case '.': /* STOP */
            if (pop(P, root) < 0)
                return -1;
            if (node_of(*root) && (node_of(*root)->flags & NODE_TAKEN))
                return pickle_fail(P, "a dict read as a record is used a second time: not "
                                      "supported");
            return 0;
        case '(': /* MARK */
            if (P->nmarks >= P->max_depth)
                return pickle_fail(P, "more than %u open MARKs", P->max_depth);
            if (P->nmarks == P->marks_cap) {
                size_t cap = P->marks_cap ? P->marks_cap * 2 : 64;
                if (pickle_charge(P, (cap - P->marks_cap) * sizeof *P->marks) < 0)
                    return -1;
                size_t *m = realloc(P->marks, cap * sizeof *m);
                if (!m)
                    return pickle_fail(P, "out of memory");
                P->marks = m;
                P->marks_cap = cap;
            }
            P->marks[P->nmarks++] = P->sp;
            break;
        case '0': /* POP: a MARK right at the top goes instead of an item */
            if (P->nmarks && P->marks[P->nmarks - 1] == P->sp)
                P->nmarks--;
            else
                rc = pop(P, &v);
            break;
        case '1': /* POP_MARK */
            rc = pop_mark(P, &start);
            if (rc == 0)
                P->sp = start;
            break;
        case '2': /* DUP */
            if (P->sp <= fence(P))
                return pickle_fail(P, "stack underflow");
            if (node_of(P->stack[P->sp - 1]) && node_of(P->stack[P->sp - 1])->type == PICKLE_DICT)
                ((node *)(uintptr_t)P->stack[P->sp - 1].bits)->flags |= NODE_COPIED;
            rc = push(P, P->stack[P->sp - 1]);
            break;
        case 'N':
            rc = push(P, (pickle_value){V_NONE});
            break;
        case 0x88:
            rc = push(P, (pickle_value){V_TRUE});
            break;
        case 0x89:
            rc = push(P, (pickle_value){V_FALSE});
            break;
        case 'J': /* BININT */
            NEED(4);
            rc = pickle_make_i64(P, (int32_t)(uint32_t)le(p, 4), &v);
            p += 4;
            if (rc == 0)
                rc = push(P, v);
            break;
        case 'K': /* BININT1 */
            NEED(1);
            rc = push(P, (pickle_value){((uint64_t)*p++ << 1) | 1u});
            break;
        case 'M': /* BININT2 */
            NEED(2);
            rc = push(P, (pickle_value){(le(p, 2) << 1) | 1u});
            p += 2;
            break;
        case 0x8a: /* LONG1 */
            NEED(1);
            start = *p++;
            NEED(start);
            rc = decode_long(P, p, start, &v);
            p += start;
            if (rc == 0)
                rc = push(P, v);
            break;
        case 0x8b: { /* LONG4 */
            NEED(4);
            int32_t n = (int32_t)(uint32_t)le(p, 4);
            p += 4;
            if (n < 0)
                return pickle_fail(P, "negative byte count");
            NEED((size_t)n);
            rc = decode_long(P, p, (size_t)n, &v);
            p += n;
            if (rc == 0)
                rc = push(P, v);
            break;
        }
        case 'G': { /* BINFLOAT: big-endian IEEE double */
            NEED(8);
            uint64_t u = 0;
            for (int i = 0; i < 8; i++)
                u = (u << 8) | p[i];
            p += 8;
            num_node *n = pickle_arena_alloc(P, sizeof *n);
            if (!n)
                return -1;
            n->h = (node){PICKLE_FLOAT, 0, 0, 0};
            memcpy(&n->v.f, &u, sizeof u);
            rc = push(P, handle(n));
            break;
        }
        case 0x8c: /* SHORT_BINUNICODE */
        case 'C':  /* SHORT_BINBYTES */
            NEED(1);
            start = *p++;
            NEED(start);
            rc = make_str(P, op == 'C' ? PICKLE_BYTES : PICKLE_STR, p, start);
            p += start;
            break;
        case 'X': /* BINUNICODE */
        case 'B': /* BINBYTES */
            NEED(4);
            start = (size_t)le(p, 4);
            p += 4;
            NEED(start);
            rc = make_str(P, op == 'B' ? PICKLE_BYTES : PICKLE_STR, p, start);
            p += start;
            break;
        case 0x8d:   /* BINUNICODE8 */
        case 0x8e:   /* BINBYTES8 */
        case 0x96: { /* BYTEARRAY8 */
            NEED(8);
            uint64_t n = le(p, 8);
            p += 8;
            NEED(n);
            rc = make_str(P, op == 0x8d ? PICKLE_STR : PICKLE_BYTES, p, n);
            p += n;
            break;
        }
        case '}':
        case ']':
        case 0x8f: { /* EMPTY_DICT, EMPTY_LIST, EMPTY_SET */
            cont_node *c;
            rc = pickle_make_container(P,
                                       op == '}'   ? PICKLE_DICT
                                       : op == ']' ? PICKLE_LIST
                                                   : PICKLE_SET,
                                       &c);
            if (rc == 0)
                rc = push(P, handle(c));
            break;
        }
        case ')': /* EMPTY_TUPLE */
            rc = pickle_build(P, P->sp, PICKLE_TUPLE);
            break;
        case 0x85:
        case 0x86:
        case 0x87: { /* TUPLE1..3 */
            size_t n = (size_t)(op - 0x84);
            if (P->sp < fence(P) + n)
                return pickle_fail(P, "stack underflow");
            rc = pickle_build(P, P->sp - n, PICKLE_TUPLE);
            break;
        }
        case 't':
        case 'l':
        case 'd':
        case 0x91: /* TUPLE, LIST, DICT, FROZENSET: from the items above MARK */
            rc = pop_mark(P, &start);
            if (rc == 0)
                rc = pickle_build(P, start,
                                  op == 't'   ? PICKLE_TUPLE
                                  : op == 'l' ? PICKLE_LIST
                                  : op == 'd' ? PICKLE_DICT
                                              : PICKLE_FROZENSET);
            break;
        case 'a': /* APPEND: the list must be above the innermost MARK too */
            if (P->sp < fence(P) + 2)
                return pickle_fail(P, "stack underflow");
            rc = pickle_extend(P, P->sp - 2, P->sp - 1, PICKLE_LIST);
            break;
        case 's': /* SETITEM */
            if (P->sp < fence(P) + 3)
                return pickle_fail(P, "stack underflow");
            rc = pickle_extend(P, P->sp - 3, P->sp - 2, PICKLE_DICT);
            break;
        case 'e':
        case 'u':
        case 0x90: /* APPENDS, SETITEMS, ADDITEMS */
            rc = pop_mark(P, &start);
            if (rc == 0 && start <= fence(P))
                return pickle_fail(P, "stack underflow");
            if (rc == 0)
                rc = pickle_extend(P, start - 1, start,
                                   op == 'e'   ? PICKLE_LIST
                                   : op == 'u' ? PICKLE_DICT
                                               : PICKLE_SET);
            break;
        case 0x94: /* MEMOIZE */
            if (P->sp <= fence(P))
                return pickle_fail(P, "stack underflow");
            rc = memo_set(P, P->memo_count, P->stack[P->sp - 1]);
            break;
        case 'q': /* BINPUT */
        case 'r': /* LONG_BINPUT */
            NEED(op == 'q' ? 1 : 4);
            if (P->sp <= fence(P))
                return pickle_fail(P, "stack underflow");
            rc = memo_set(P, op == 'q' ? *p : le(p, 4), P->stack[P->sp - 1]);
            p += op == 'q' ? 1 : 4;
            break;
        case 'h': /* BINGET */
            NEED(1);
            rc = memo_get(P, *p++);
            break;
        case 'j': /* LONG_BINGET */
            NEED(4);
            rc = memo_get(P, le(p, 4));
            p += 4;
            break;
        default:
            return refuse(P, op);
        }
        if (rc < 0)
            return -1;
    }
}

static pickle_doc *parse(const void *data, size_t len, const pickle_options *opt, int windowed,
                         char *err, size_t errlen) {
    if (err && errlen)
        err[0] = '\0';
    pickle_doc *d = calloc(1, sizeof *d);
    if (!d) {
        set_err(err, errlen, "pickle: out of memory");
        return NULL;
    }
    parser P = {0};
    P.doc = d;
    P.base = data;
    P.end = P.base + len;
    P.op_at = P.base;
    P.win_next = windowed ? P.base : P.end;
    P.win_dropped = P.win_populated = P.base;
    P.map_end = P.end;
    P.err = err;
    P.errlen = errlen;
    d->input_len = len;
    P.max_depth = opt && opt->max_depth ? opt->max_depth : PICKLE_DEFAULT_MAX_DEPTH;
    P.record_hook = opt ? opt->record_hook : NULL;
    P.record_ctx = opt ? opt->record_ctx : NULL;
    if (P.max_depth > 60000)
        P.max_depth = 60000;
    /* Python numbers memo entries densely; each needs an opcode byte. */
    P.memo_limit = len + 1;
    if (opt && opt->max_memory)
        d->budget = opt->max_memory;
    else if (len > (SIZE_MAX - PICKLE_DEFAULT_MEMORY_BASE) / PICKLE_DEFAULT_MEMORY_FACTOR)
        d->budget = SIZE_MAX;
    else
        d->budget = len * PICKLE_DEFAULT_MEMORY_FACTOR + PICKLE_DEFAULT_MEMORY_BASE;
    int rc =
        len ? run(&P, &d->root) : (set_err(err, errlen, "pickle: empty input at offset 0"), -1);
    prefault_stop(P.chunk_pages);
    prefault_stop(P.memo_pages);
    free(P.stack);
    free(P.marks);
    free(P.memo);
    free(P.memo_read);
    free(P.dedup);
    if (rc < 0) {
        pickle_doc_free_memory(d);
        free(d);
        return NULL;
    }
    return d;
}

pickle_doc *pickle_parse(const void *data, size_t len, const pickle_options *opt, char *err,
                         size_t errlen) {
    return parse(data, len, opt, 0, err, errlen);
}

pickle_doc *pickle_parse_file(const char *path, const pickle_options *opt, char *err,
                              size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errlen, "pickle: cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        set_err(err, errlen, "pickle: %s: not a regular file", path);
        close(fd);
        return NULL;
    }
    if (st.st_size == 0) {
        set_err(err, errlen, "pickle: %s: empty file", path);
        close(fd);
        return NULL;
    }
    size_t len = (size_t)st.st_size;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    int saved = errno;
    close(fd);
    if (map == MAP_FAILED) {
        set_err(err, errlen, "pickle: cannot map %s: %s", path, strerror(saved));
        return NULL;
    }
    pickle_doc *d = parse(map, len, opt, 1, err, errlen);
    if (!d) {
        munmap(map, len);
        return NULL;
    }
    d->map = map;
    d->map_len = len;
    return d;
}

void pickle_free(pickle_doc *d) {
    if (!d)
        return;
    pickle_doc_free_memory(d);
    if (d->map)
        munmap(d->map, d->map_len);
    free(d);
}
