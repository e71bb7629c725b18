/* pickle.c — the safe pickle reader (see pickle.h for the contract).
 *
 * A stack machine like Python's own unpickler, iterative (no recursion), fed
 * straight from the input buffer. It is shaped for large snapshots (a million
 * trace entries, 100–200 MB) and for hostile bytes:
 *   - values are 8-byte handles: ints that fit 63 bits, None and bools are
 *     immediate; everything else is a node in one arena, so a trace-entry
 *     dict costs one 24-byte node plus 8 bytes per key and value, and a
 *     frame list shared through the memo is one node however often it is
 *     referenced (the memo holds handles, BINGET copies a handle);
 *   - str and bytes point into the input (nothing is copied);
 *   - container items are one array; SETITEMS/APPENDS copy a slice of the
 *     stack into it. Small arrays live in the arena (sized exactly on the
 *     first batch, which is all Python writes for a small dict or list);
 *     large ones are malloc'd and grow by realloc. Lists with equal first
 *     batches share one array (see dedup below: frame lists repeat a lot);
 *   - fresh memory is the dearest thing in a large parse (each first touch
 *     of a page faults), so arena chunks grow to 4 MiB and are offered to
 *     transparent huge pages, and a file parsed by pickle_parse_file is
 *     paged in ahead of the cursor and dropped behind it (window_advance),
 *     so the process holds about the tree, not the tree plus the file;
 *   - every allocation (arena, large arrays, stack, memo, marks) is counted
 *     against max_memory before it is made; every length is checked against
 *     what is left of the input before it is used;
 *   - a container becomes frozen once stored in another one: mutating it
 *     later, or storing it in itself, is refused. That rules out cycles
 *     (Python's pickler writes such mutations only for self-referencing
 *     objects) and makes a node's nesting depth final when it is stored,
 *     so depth is tracked exactly and cheaply on each store. */
#include "pickle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- handles ------------------------------------------------------------
 * bits == 0        MISSING
 * bits & 1         int: the value is (int64)bits >> 1 (63-bit range)
 * bits & 3 == 2    immediate: None, False, True
 * otherwise        pointer to a node (8-byte aligned) */
#define V_NONE 0x2u
#define V_FALSE 0x6u
#define V_TRUE 0xAu
#define INLINE_MIN (-(INT64_C(1) << 62))
#define INLINE_MAX ((INT64_C(1) << 62) - 1)

enum { NODE_FROZEN = 1, NODE_HEAP = 2, NODE_U64 = 4 };

typedef struct node {
    uint8_t type; /* pickle_type */
    uint8_t flags;
    uint16_t depth; /* containers: 1 + the deepest child's depth */
    uint32_t len;   /* str/bytes: byte count; containers: items (dict: pairs) */
} node;

typedef struct num_node {
    node h;
    union {
        int64_t i;
        uint64_t u; /* when NODE_U64: a value above INT64_MAX */
        double f;
    } v;
} num_node;

typedef struct str_node {
    node h;
    const char *ptr;
} str_node;

typedef struct cont_node {
    node h;
    uint32_t cap; /* in values (a dict pair is two) */
    uint32_t pad;
    pickle_value *items; /* dict: key, value, key, value, ... */
} cont_node;

/* A large item array: malloc'd with this header, indexed in doc->heap. */
typedef struct heap_hdr {
    size_t slot;
    size_t bytes;
} heap_hdr;

typedef struct chunk {
    struct chunk *next;
    size_t size;
    int mapped; /* from map_chunk(), else malloc'd */
} chunk;

#define CHUNK_HDR ((sizeof(chunk) + 15) & ~(size_t)15)
#define CHUNK_MIN ((size_t)64 << 10) /* the first chunk; each next one doubles */
#define CHUNK_MAX ((size_t)4 << 20)
#define HUGE_PAGE ((size_t)2 << 20)      /* chunks this big are mapped for huge pages */
#define BIG_ALLOC (CHUNK_MIN / 2)        /* arena requests above this get their own chunk */
#define HEAP_ARRAY_BYTES ((size_t)16384) /* item arrays this big move to the heap */

/* A list's first batch of items, kept to share equal arrays (see dedup). */
typedef struct dedup_slot {
    uint64_t hash;
    const pickle_value *items; /* NULL: free slot */
    size_t n;
} dedup_slot;

struct pickle_doc {
    chunk *chunks;
    char *cur, *end; /* bump region of chunks */
    size_t next_chunk;
    heap_hdr **heap;
    size_t heap_len, heap_cap;
    size_t tree_bytes; /* arena chunks + heap arrays */
    size_t budget_used, budget;
    cont_node *empty_tuple;
    pickle_value root;
    size_t input_len;
    void *map; /* pickle_parse_file's mapping */
    size_t map_len;
};

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

/* ---- the parser --------------------------------------------------------- */

typedef struct parser {
    pickle_doc *doc;
    const uint8_t *base, *end;
    const uint8_t *op_at; /* the opcode being run, for errors */
    unsigned max_depth;
    pickle_value *stack;
    size_t sp, stack_cap;
    size_t *marks;
    size_t nmarks, marks_cap;
    pickle_value *memo;
    size_t memo_cap, memo_count, memo_limit;
    dedup_slot *dedup;
    size_t dedup_cap, dedup_len;
    /* pickle_parse_file only: the mapping is paged in ahead and dropped
     * behind the cursor (see window_advance); win_next = end otherwise. */
    const uint8_t *win_next, *win_dropped, *win_populated, *map_end;
    char *err;
    size_t errlen;
} parser;

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* "pickle: <what> at offset N", always naming the opcode being run. */
static int fail(parser *P, const char *fmt, ...) {
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
static int charge(parser *P, size_t n) {
    pickle_doc *d = P->doc;
    if (n > d->budget - d->budget_used)
        return fail(P, "needs more than %zu bytes of memory (the limit for this input)", d->budget);
    d->budget_used += n;
    return 0;
}

/* Fresh memory is what a large parse spends most on (every first touch of a
 * page faults, and in a VM each fault is dear), so big chunks are 2 MiB
 * aligned and offered to transparent huge pages. */
static void *map_chunk(size_t size) {
    size_t span = size + HUGE_PAGE;
    char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    char *a = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (a > p)
        munmap(p, (size_t)(a - p));
    if ((size_t)(p + span - (a + size)) > 0)
        munmap(a + size, (size_t)(p + span - (a + size)));
#ifdef MADV_HUGEPAGE
    madvise(a, size, MADV_HUGEPAGE);
#endif
    return a;
}

static void *arena_alloc(parser *P, size_t n) {
    pickle_doc *d = P->doc;
    n = (n + 7) & ~(size_t)7;
    if ((size_t)(d->end - d->cur) >= n) {
        void *p = d->cur;
        d->cur += n;
        return p;
    }
    int big = n > BIG_ALLOC;
    size_t size = big ? n + CHUNK_HDR : d->next_chunk ? d->next_chunk : CHUNK_MIN;
    if (charge(P, size) < 0)
        return NULL;
    int mapped = !big && size >= HUGE_PAGE;
    chunk *c = mapped ? map_chunk(size) : malloc(size);
    if (!c) {
        fail(P, "out of memory");
        return NULL;
    }
    c->size = size;
    c->mapped = mapped;
    d->tree_bytes += size;
    char *mem = (char *)c + CHUNK_HDR;
    if (big) { /* keep the current bump region */
        c->next = d->chunks ? d->chunks->next : NULL;
        if (d->chunks)
            d->chunks->next = c;
        else
            d->chunks = c;
        return mem;
    }
    if (size < CHUNK_MAX)
        d->next_chunk = size * 2;
    c->next = d->chunks;
    d->chunks = c;
    d->cur = mem + n;
    d->end = (char *)c + size;
    return mem;
}

static inline const node *node_of(pickle_value v) {
    return (v.bits & 3) == 0 && v.bits ? (const node *)(uintptr_t)v.bits : NULL;
}

static inline pickle_value handle(const void *n) {
    pickle_value v = {(uint64_t)(uintptr_t)n};
    return v;
}

static inline int is_container_type(unsigned t) {
    return t >= PICKLE_TUPLE && t <= PICKLE_FROZENSET;
}

static inline int64_t u64_as_i64(uint64_t u) {
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

static int make_i64(parser *P, int64_t x, pickle_value *out) {
    if (x >= INLINE_MIN && x <= INLINE_MAX) {
        out->bits = ((uint64_t)x << 1) | 1u;
        return 0;
    }
    num_node *n = arena_alloc(P, sizeof *n);
    if (!n)
        return -1;
    n->h = (node){PICKLE_INT, 0, 0, 0};
    n->v.i = x;
    *out = handle(n);
    return 0;
}

static int make_u64(parser *P, uint64_t x, pickle_value *out) {
    if (x <= (uint64_t)INT64_MAX)
        return make_i64(P, (int64_t)x, out);
    num_node *n = arena_alloc(P, sizeof *n);
    if (!n)
        return -1;
    n->h = (node){PICKLE_INT, NODE_U64, 0, 0};
    n->v.u = x;
    *out = handle(n);
    return 0;
}

static int make_container(parser *P, pickle_type type, cont_node **out) {
    cont_node *c = arena_alloc(P, sizeof *c);
    if (!c)
        return -1;
    c->h = (node){(uint8_t)type, 0, 1, 0};
    c->cap = 0;
    c->pad = 0;
    c->items = NULL;
    *out = c;
    return 0;
}

/* ---- stack, marks and memo ---------------------------------------------- */

static int grow_stack(parser *P) {
    size_t cap = P->stack_cap ? P->stack_cap * 2 : 256;
    if (charge(P, (cap - P->stack_cap) * sizeof *P->stack) < 0)
        return -1;
    pickle_value *s = realloc(P->stack, cap * sizeof *s);
    if (!s)
        return fail(P, "out of memory");
    P->stack = s;
    P->stack_cap = cap;
    return 0;
}

static inline int push(parser *P, pickle_value v) {
    if (P->sp == P->stack_cap && grow_stack(P) < 0)
        return -1;
    P->stack[P->sp++] = v;
    return 0;
}

static inline size_t fence(const parser *P) { return P->nmarks ? P->marks[P->nmarks - 1] : 0; }

static int pop(parser *P, pickle_value *out) {
    if (P->sp <= fence(P))
        return fail(P, "stack underflow");
    *out = P->stack[--P->sp];
    return 0;
}

/* Pops the innermost MARK; *start gets the stack index it recorded. */
static int pop_mark(parser *P, size_t *start) {
    if (!P->nmarks)
        return fail(P, "no MARK to close");
    *start = P->marks[--P->nmarks];
    return 0;
}

static int memo_set(parser *P, uint64_t idx, pickle_value v) {
    if (idx >= P->memo_limit)
        return fail(P, "memo index %llu is beyond anything this input can hold",
                    (unsigned long long)idx);
    if (idx >= P->memo_cap) {
        size_t cap = P->memo_cap ? P->memo_cap * 2 : 1024;
        if (cap <= idx)
            cap = (size_t)idx + 1;
        if (cap > P->memo_limit)
            cap = P->memo_limit;
        if (charge(P, (cap - P->memo_cap) * sizeof *P->memo) < 0)
            return -1;
        pickle_value *m = realloc(P->memo, cap * sizeof *m);
        if (!m)
            return fail(P, "out of memory");
        memset(m + P->memo_cap, 0, (cap - P->memo_cap) * sizeof *m);
        P->memo = m;
        P->memo_cap = cap;
    }
    if (P->memo[idx].bits == 0)
        P->memo_count++;
    P->memo[idx] = v;
    return 0;
}

static int memo_get(parser *P, uint64_t idx) {
    if (idx >= P->memo_cap || P->memo[idx].bits == 0)
        return fail(P, "memo index %llu is not defined", (unsigned long long)idx);
    return push(P, P->memo[idx]);
}

/* ---- containers --------------------------------------------------------- */

/* Checks a value about to be stored in container c (NULL for a container
 * being created) and freezes it; *depth grows to cover it. */
static inline int adopt(parser *P, const cont_node *c, pickle_value v, unsigned *depth) {
    if ((v.bits & 7) != 0)
        return 0; /* immediate */
    node *n = (node *)(uintptr_t)v.bits;
    if (!is_container_type(n->type))
        return 0;
    if ((const node *)c == n)
        return fail(P, "a %s stored inside itself (a cycle) is not supported",
                    pickle_type_name(n->type));
    if (!(n->flags & NODE_FROZEN))
        n->flags |= NODE_FROZEN;
    if ((unsigned)n->depth + 1 > *depth) {
        *depth = (unsigned)n->depth + 1;
        if (*depth > P->max_depth)
            return fail(P, "nesting deeper than %u", P->max_depth);
    }
    return 0;
}

/* Dict keys and set elements must be hashable, as in Python. */
static inline int check_hashable(parser *P, pickle_value k) {
    const node *n = node_of(k);
    if (n && (n->type == PICKLE_LIST || n->type == PICKLE_DICT || n->type == PICKLE_SET))
        return fail(P, "unhashable %s used as a dict key or set element",
                    pickle_type_name(n->type));
    return 0;
}

/* Makes room for `more` values in c's item array. */
static int reserve(parser *P, cont_node *c, size_t more) {
    size_t used = c->h.type == PICKLE_DICT ? (size_t)c->h.len * 2 : c->h.len;
    size_t need = used + more;
    if (need <= c->cap)
        return 0;
    if (need > UINT32_MAX - 1)
        return fail(P, "container with more than 2^32 items");
    size_t cap = c->cap ? (size_t)c->cap * 2 : need;
    if (cap < need)
        cap = need;
    if (cap > UINT32_MAX - 1)
        cap = UINT32_MAX - 1;
    size_t bytes = cap * sizeof(pickle_value);
    pickle_doc *d = P->doc;
    if (bytes < HEAP_ARRAY_BYTES) {
        pickle_value *items = arena_alloc(P, bytes);
        if (!items)
            return -1;
        if (used)
            memcpy(items, c->items, used * sizeof *items);
        c->items = items;
        c->cap = (uint32_t)cap;
        return 0;
    }
    heap_hdr *h = NULL;
    size_t old_bytes = 0;
    if (c->h.flags & NODE_HEAP) {
        h = (heap_hdr *)c->items - 1;
        old_bytes = h->bytes;
    } else if (d->heap_len == d->heap_cap) {
        size_t hcap = d->heap_cap ? d->heap_cap * 2 : 64;
        if (charge(P, (hcap - d->heap_cap) * sizeof *d->heap) < 0)
            return -1;
        heap_hdr **heap = realloc(d->heap, hcap * sizeof *heap);
        if (!heap)
            return fail(P, "out of memory");
        d->heap = heap;
        d->heap_cap = hcap;
    }
    size_t total = sizeof(heap_hdr) + bytes;
    if (charge(P, total - old_bytes) < 0)
        return -1;
    heap_hdr *nh = realloc(h, total);
    if (!nh)
        return fail(P, "out of memory");
    if (!h) { /* moving from the arena */
        nh->slot = d->heap_len;
        d->heap[d->heap_len++] = nh;
        if (used)
            memcpy(nh + 1, c->items, used * sizeof(pickle_value));
        c->h.flags |= NODE_HEAP;
    }
    d->heap[nh->slot] = nh;
    d->tree_bytes += total - old_bytes;
    nh->bytes = total;
    c->items = (pickle_value *)(nh + 1);
    c->cap = (uint32_t)cap;
    return 0;
}

/* Equal lists share one item array. PyTorch's symbolizer gives every
 * allocation its own frames list (its frees reuse it), so a snapshot holds
 * hundreds of thousands of lists of ~100 frame handles with only a few
 * hundred distinct contents: sharing their arrays cuts the tree by more than
 * half. A list's first batch (the only one Python writes below 1000 items)
 * is looked up by content; an array is shared only while its owner's cap
 * equals its length, so any later append copies it first. */
static uint64_t hash_items(const pickle_value *v, size_t n) {
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < n; i++) {
        h ^= v[i].bits;
        h *= 0xFF51AFD7ED558CCDu;
        h ^= h >> 32;
    }
    return h;
}

static const pickle_value *dedup_find(const parser *P, uint64_t h, const pickle_value *v,
                                      size_t n) {
    if (!P->dedup_cap)
        return NULL;
    size_t mask = P->dedup_cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        const dedup_slot *s = &P->dedup[i];
        if (!s->items)
            return NULL;
        if (s->hash == h && s->n == n && memcmp(s->items, v, n * sizeof *v) == 0)
            return s->items;
    }
}

static int dedup_add(parser *P, uint64_t h, const pickle_value *v, size_t n) {
    if ((P->dedup_len + 1) * 2 > P->dedup_cap) {
        size_t cap = P->dedup_cap ? P->dedup_cap * 2 : 1024;
        if (charge(P, cap * sizeof(dedup_slot)) < 0)
            return -1;
        dedup_slot *t = calloc(cap, sizeof *t);
        if (!t)
            return fail(P, "out of memory");
        for (size_t j = 0; j < P->dedup_cap; j++) {
            const dedup_slot *s = &P->dedup[j];
            if (!s->items)
                continue;
            size_t i = (size_t)s->hash & (cap - 1);
            while (t[i].items)
                i = (i + 1) & (cap - 1);
            t[i] = *s;
        }
        free(P->dedup);
        P->dedup = t;
        P->dedup_cap = cap;
    }
    size_t mask = P->dedup_cap - 1;
    size_t i = (size_t)h & mask;
    while (P->dedup[i].items)
        i = (i + 1) & mask;
    P->dedup[i] = (dedup_slot){h, v, n};
    P->dedup_len++;
    return 0;
}

/* Adds stack[from, sp) to the container below them or at `target`, then
 * pops them: APPEND(S), SETITEM(S), ADDITEMS. */
static int extend(parser *P, size_t target, size_t from, pickle_type want) {
    pickle_value tv = P->stack[target];
    const node *tn = node_of(tv);
    if (!tn || tn->type != want) {
        pickle_type got = pickle_typeof(tv);
        return fail(P, "target is %s %s, not a %s", got == PICKLE_INT ? "an" : "a",
                    pickle_type_name(got), pickle_type_name(want));
    }
    cont_node *c = (cont_node *)(uintptr_t)tv.bits;
    if (c->h.flags & NODE_FROZEN)
        return fail(P,
                    "changes a %s already stored in another container (a cycle?): "
                    "not supported",
                    pickle_type_name(want));
    size_t n = P->sp - from;
    if (want == PICKLE_DICT && (n & 1))
        return fail(P, "odd number of items for a dict");
    unsigned depth = c->h.depth;
    for (size_t i = from; i < P->sp; i++) {
        if (adopt(P, c, P->stack[i], &depth) < 0)
            return -1;
        if (want != PICKLE_LIST && (want == PICKLE_SET || ((i - from) & 1) == 0) &&
            check_hashable(P, P->stack[i]) < 0)
            return -1;
    }
    const pickle_value *items = P->stack + from;
    if (want == PICKLE_LIST && c->h.len == 0 && n >= 2 &&
        n * sizeof(pickle_value) < HEAP_ARRAY_BYTES) {
        uint64_t h = hash_items(items, n);
        const pickle_value *same = dedup_find(P, h, items, n);
        if (same) {
            c->items = (pickle_value *)same; /* cap == len: never written in place */
        } else {
            if (reserve(P, c, n) < 0)
                return -1;
            memcpy(c->items, items, n * sizeof *items);
            if (dedup_add(P, h, c->items, n) < 0)
                return -1;
        }
        c->cap = (uint32_t)n;
        c->h.len = (uint32_t)n;
    } else if (n) {
        if (reserve(P, c, n) < 0)
            return -1;
        size_t used = want == PICKLE_DICT ? (size_t)c->h.len * 2 : c->h.len;
        memcpy(c->items + used, items, n * sizeof *items);
        c->h.len += (uint32_t)(want == PICKLE_DICT ? n / 2 : n);
    }
    c->h.depth = (uint16_t)depth;
    P->sp = from;
    return 0;
}

/* Builds a new container from stack[from, sp) and replaces them with it. */
static int build(parser *P, size_t from, pickle_type type) {
    size_t n = P->sp - from;
    if (type == PICKLE_TUPLE && n == 0) {
        pickle_doc *d = P->doc;
        if (!d->empty_tuple && make_container(P, PICKLE_TUPLE, &d->empty_tuple) < 0)
            return -1;
        P->sp = from;
        return push(P, handle(d->empty_tuple));
    }
    if (type == PICKLE_DICT && (n & 1))
        return fail(P, "odd number of items for a dict");
    cont_node *c;
    if (make_container(P, type, &c) < 0)
        return -1;
    unsigned depth = 1;
    for (size_t i = from; i < P->sp; i++) {
        if (adopt(P, NULL, P->stack[i], &depth) < 0)
            return -1;
        if ((type == PICKLE_FROZENSET || (type == PICKLE_DICT && ((i - from) & 1) == 0)) &&
            check_hashable(P, P->stack[i]) < 0)
            return -1;
    }
    if (n) {
        if (reserve(P, c, n) < 0)
            return -1;
        memcpy(c->items, P->stack + from, n * sizeof(pickle_value));
        c->h.len = (uint32_t)(type == PICKLE_DICT ? n / 2 : n);
    }
    c->h.depth = (uint16_t)depth;
    P->sp = from;
    return push(P, handle(c));
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
        return make_i64(P, 0, out);
    int neg = (b[n - 1] & 0x80) != 0;
    if (n <= 8) {
        uint64_t u = le(b, (unsigned)n);
        if (neg && n < 8)
            u |= ~(uint64_t)0 << (8 * n);
        return make_i64(P, u64_as_i64(u), out);
    }
    for (size_t i = 8; i < n; i++)
        if (b[i] != (neg ? 0xFF : 0x00))
            return fail(P, "integer of %zu bytes does not fit in 64 bits", n);
    uint64_t u = le(b, 8);
    if (neg) {
        if (!(b[7] & 0x80))
            return fail(P, "integer of %zu bytes does not fit in 64 bits", n);
        return make_i64(P, u64_as_i64(u), out);
    }
    return make_u64(P, u, out);
}

static int make_str(parser *P, pickle_type type, const uint8_t *p, uint64_t len) {
    if (len > UINT32_MAX)
        return fail(P, "string of %llu bytes is too long (the limit is 4 GiB)",
                    (unsigned long long)len);
    str_node *s = arena_alloc(P, sizeof *s);
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
            fail(P, "truncated: needs %llu bytes, %zu left", (unsigned long long)(n),              \
                 (size_t)(P->end - p));                                                            \
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
                return fail(P, "protocol %u is newer than 5", *p);
            p++;
            break;
        case 0x95: /* FRAME: a length prefix; the opcodes inside are read as usual */
            NEED(8);
            if (le(p, 8) > (uint64_t)(P->end - p - 8))
                return fail(P, "truncated: frame of %llu bytes, %zu left",
                            (unsigned long long)le(p, 8), (size_t)(P->end - p - 8));
            p += 8;
            break;
        case '.': /* STOP */
            if (pop(P, root) < 0)
                return -1;
            return 0;
        case '(': /* MARK */
            if (P->nmarks >= P->max_depth)
                return fail(P, "more than %u open MARKs", P->max_depth);
            if (P->nmarks == P->marks_cap) {
                size_t cap = P->marks_cap ? P->marks_cap * 2 : 64;
                if (charge(P, (cap - P->marks_cap) * sizeof *P->marks) < 0)
                    return -1;
                size_t *m = realloc(P->marks, cap * sizeof *m);
                if (!m)
                    return fail(P, "out of memory");
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
                return fail(P, "stack underflow");
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
            rc = make_i64(P, (int32_t)(uint32_t)le(p, 4), &v);
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
                return fail(P, "negative byte count");
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
            num_node *n = arena_alloc(P, sizeof *n);
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
            rc = make_container(P,
                                op == '}'   ? PICKLE_DICT
                                : op == ']' ? PICKLE_LIST
                                            : PICKLE_SET,
                                &c);
            if (rc == 0)
                rc = push(P, handle(c));
            break;
        }
        case ')': /* EMPTY_TUPLE */
            rc = build(P, P->sp, PICKLE_TUPLE);
            break;
        case 0x85:
        case 0x86:
        case 0x87: { /* TUPLE1..3 */
            size_t n = (size_t)(op - 0x84);
            if (P->sp < fence(P) + n)
                return fail(P, "stack underflow");
            rc = build(P, P->sp - n, PICKLE_TUPLE);
            break;
        }
        case 't':
        case 'l':
        case 'd':
        case 0x91: /* TUPLE, LIST, DICT, FROZENSET: from the items above MARK */
            rc = pop_mark(P, &start);
            if (rc == 0)
                rc = build(P, start,
                           op == 't'   ? PICKLE_TUPLE
                           : op == 'l' ? PICKLE_LIST
                           : op == 'd' ? PICKLE_DICT
                                       : PICKLE_FROZENSET);
            break;
        case 'a': /* APPEND: the list must be above the innermost MARK too */
            if (P->sp < fence(P) + 2)
                return fail(P, "stack underflow");
            rc = extend(P, P->sp - 2, P->sp - 1, PICKLE_LIST);
            break;
        case 's': /* SETITEM */
            if (P->sp < fence(P) + 3)
                return fail(P, "stack underflow");
            rc = extend(P, P->sp - 3, P->sp - 2, PICKLE_DICT);
            break;
        case 'e':
        case 'u':
        case 0x90: /* APPENDS, SETITEMS, ADDITEMS */
            rc = pop_mark(P, &start);
            if (rc == 0 && start <= fence(P))
                return fail(P, "stack underflow");
            if (rc == 0)
                rc = extend(P, start - 1, start,
                            op == 'e'   ? PICKLE_LIST
                            : op == 'u' ? PICKLE_DICT
                                        : PICKLE_SET);
            break;
        case 0x94: /* MEMOIZE */
            if (P->sp <= fence(P))
                return fail(P, "stack underflow");
            rc = memo_set(P, P->memo_count, P->stack[P->sp - 1]);
            break;
        case 'q': /* BINPUT */
        case 'r': /* LONG_BINPUT */
            NEED(op == 'q' ? 1 : 4);
            if (P->sp <= fence(P))
                return fail(P, "stack underflow");
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

static void doc_free_memory(pickle_doc *d) {
    for (chunk *c = d->chunks; c;) {
        chunk *next = c->next;
        if (c->mapped)
            munmap(c, c->size);
        else
            free(c);
        c = next;
    }
    for (size_t i = 0; i < d->heap_len; i++)
        free(d->heap[i]);
    free(d->heap);
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
    free(P.stack);
    free(P.marks);
    free(P.memo);
    free(P.dedup);
    if (rc < 0) {
        doc_free_memory(d);
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
    doc_free_memory(d);
    if (d->map)
        munmap(d->map, d->map_len);
    free(d);
}

pickle_value pickle_root(const pickle_doc *d) { return d ? d->root : (pickle_value){0}; }

size_t pickle_memory_used(const pickle_doc *d) { return d ? d->tree_bytes : 0; }

size_t pickle_input_size(const pickle_doc *d) { return d ? d->input_len : 0; }

/* ---- access ------------------------------------------------------------- */

pickle_type pickle_typeof(pickle_value v) {
    if (v.bits == 0)
        return PICKLE_MISSING;
    if (v.bits & 1)
        return PICKLE_INT;
    if ((v.bits & 3) == 2)
        return v.bits == V_NONE ? PICKLE_NONE : PICKLE_BOOL;
    return (pickle_type)((const node *)(uintptr_t)v.bits)->type;
}

const char *pickle_type_name(pickle_type t) {
    static const char *const names[] = {"missing", "None",  "bool", "int",  "float", "str",
                                        "bytes",   "tuple", "list", "dict", "set",   "frozenset"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

const void *pickle_identity(pickle_value v) { return node_of(v); }

int pickle_get_bool(pickle_value v, int *out) {
    if (v.bits != V_TRUE && v.bits != V_FALSE)
        return 0;
    *out = v.bits == V_TRUE;
    return 1;
}

int pickle_get_i64(pickle_value v, int64_t *out) {
    if (v.bits & 1) { /* shift right, keeping the sign */
        *out = u64_as_i64((v.bits >> 1) | (v.bits & ((uint64_t)1 << 63)));
        return 1;
    }
    const node *n = node_of(v);
    if (!n || n->type != PICKLE_INT || (n->flags & NODE_U64))
        return 0;
    *out = ((const num_node *)n)->v.i;
    return 1;
}

int pickle_get_u64(pickle_value v, uint64_t *out) {
    int64_t i;
    if (pickle_get_i64(v, &i)) {
        if (i < 0)
            return 0;
        *out = (uint64_t)i;
        return 1;
    }
    const node *n = node_of(v);
    if (!n || n->type != PICKLE_INT)
        return 0;
    *out = ((const num_node *)n)->v.u;
    return 1;
}

int pickle_get_f64(pickle_value v, double *out) {
    const node *n = node_of(v);
    if (n && n->type == PICKLE_FLOAT) {
        *out = ((const num_node *)n)->v.f;
        return 1;
    }
    int64_t i;
    uint64_t u;
    if (pickle_get_i64(v, &i)) {
        *out = (double)i;
        return 1;
    }
    if (pickle_get_u64(v, &u)) {
        *out = (double)u;
        return 1;
    }
    return 0;
}

const char *pickle_get_str(pickle_value v, size_t *len) {
    const node *n = node_of(v);
    if (!n || (n->type != PICKLE_STR && n->type != PICKLE_BYTES)) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = n->len;
    return ((const str_node *)n)->ptr;
}

static inline int str_node_eq(const node *n, const char *s, size_t slen) {
    return n->type == PICKLE_STR && n->len == slen &&
           (slen == 0 || (((const str_node *)n)->ptr[0] == s[0] &&
                          memcmp(((const str_node *)n)->ptr, s, slen) == 0));
}

int pickle_str_eq(pickle_value v, const char *s) {
    const node *n = node_of(v);
    return n && str_node_eq(n, s, strlen(s));
}

size_t pickle_len(pickle_value v) {
    const node *n = node_of(v);
    return n && is_container_type(n->type) ? n->len : 0;
}

pickle_value pickle_item(pickle_value v, size_t i) {
    const node *n = node_of(v);
    if (!n || !is_container_type(n->type) || n->type == PICKLE_DICT || i >= n->len)
        return (pickle_value){0};
    return ((const cont_node *)n)->items[i];
}

pickle_value pickle_dict_key(pickle_value v, size_t i) {
    const node *n = node_of(v);
    if (!n || n->type != PICKLE_DICT || i >= n->len)
        return (pickle_value){0};
    return ((const cont_node *)n)->items[2 * i];
}

pickle_value pickle_dict_value(pickle_value v, size_t i) {
    const node *n = node_of(v);
    if (!n || n->type != PICKLE_DICT || i >= n->len)
        return (pickle_value){0};
    return ((const cont_node *)n)->items[2 * i + 1];
}

const pickle_value *pickle_items(pickle_value v, size_t *n) {
    const node *nd = node_of(v);
    if (!nd || !is_container_type(nd->type) || nd->len == 0) {
        *n = 0;
        return NULL;
    }
    *n = nd->type == PICKLE_DICT ? (size_t)nd->len * 2 : nd->len;
    return ((const cont_node *)nd)->items;
}

pickle_value pickle_dict_get(pickle_value v, const char *key) {
    const node *n = node_of(v);
    if (!n || n->type != PICKLE_DICT)
        return (pickle_value){0};
    const cont_node *c = (const cont_node *)n;
    size_t klen = strlen(key);
    for (size_t i = c->h.len; i-- > 0;) {
        const node *kn = node_of(c->items[2 * i]);
        if (kn && str_node_eq(kn, key, klen))
            return c->items[2 * i + 1];
    }
    return (pickle_value){0};
}

int64_t pickle_dict_i64(pickle_value dict, const char *key, int64_t dflt) {
    int64_t v;
    return pickle_get_i64(pickle_dict_get(dict, key), &v) ? v : dflt;
}

uint64_t pickle_dict_u64(pickle_value dict, const char *key, uint64_t dflt) {
    uint64_t v;
    return pickle_get_u64(pickle_dict_get(dict, key), &v) ? v : dflt;
}

double pickle_dict_f64(pickle_value dict, const char *key, double dflt) {
    double v;
    return pickle_get_f64(pickle_dict_get(dict, key), &v) ? v : dflt;
}

int pickle_dict_bool(pickle_value dict, const char *key, int dflt) {
    int v;
    return pickle_get_bool(pickle_dict_get(dict, key), &v) ? v : dflt;
}

const char *pickle_dict_str(pickle_value dict, const char *key, size_t *len) {
    pickle_value v = pickle_dict_get(dict, key);
    if (pickle_typeof(v) != PICKLE_STR) {
        if (len)
            *len = 0;
        return NULL;
    }
    return pickle_get_str(v, len);
}
