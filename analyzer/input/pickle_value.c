/* pickle_value.c — the pickle reader's value tree (see pickle.h for the
 * contract): where nodes live, how containers are built and checked, and
 * every read access. pickle_parse.c runs the opcodes and calls in here to
 * make a number node, a container, or to fill one from a slice of its stack.
 *
 * It is shaped for large snapshots (a million trace entries, 100–200 MB):
 *   - values are 8-byte handles: ints that fit 63 bits, None and bools are
 *     immediate; everything else is a node in one arena, so a trace-entry
 *     dict costs one 24-byte node plus 8 bytes per key and value, and a
 *     frame list shared through the memo is one node however often it is
 *     referenced (the memo holds handles, BINGET copies a handle);
 *   - container items are one array; SETITEMS/APPENDS copy a slice of the
 *     stack into it. Small arrays live in the arena (sized exactly on the
 *     first batch, which is all Python writes for a small dict or list);
 *     large ones are malloc'd and grow by realloc. Lists with equal first
 *     batches share one array (see dedup below: frame lists repeat a lot);
 *   - fresh memory is the dearest thing in a large parse (each first touch
 *     of a page faults), so arena chunks grow to 4 MiB and are offered to
 *     transparent huge pages;
 *   - every allocation (arena chunks, large arrays, the dedup table) is
 *     counted against max_memory before it is made (pickle_charge);
 *   - a container becomes frozen once stored in another one: mutating it
 *     later, or storing it in itself, is refused. That rules out cycles
 *     (Python's pickler writes such mutations only for self-referencing
 *     objects) and makes a node's nesting depth final when it is stored,
 *     so depth is tracked exactly and cheaply on each store. */
#include "pickle_internal.h"
#include "prefault.h"

#include "gmt_assert.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/* ---- memory ------------------------------------------------------------- */

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

void *pickle_arena_alloc(parser *P, size_t n) {
    pickle_doc *d = P->doc;
    n = (n + 7) & ~(size_t)7;
    if ((size_t)(d->end - d->cur) >= n) {
        void *p = d->cur;
        d->cur += n;
        return p;
    }
    int big = n > BIG_ALLOC;
    size_t size = big ? n + CHUNK_HDR : d->next_chunk ? d->next_chunk : CHUNK_MIN;
    /* a request above BIG_ALLOC has a chunk of its own; chunks for the rest start at twice that */
    if (GMT_NEVER(!big && CHUNK_HDR + n > size)) {
        pickle_fail(P, "arena chunk too small");
        return NULL;
    }
    if (pickle_charge(P, size) < 0)
        return NULL;
    int mapped = !big && size >= HUGE_PAGE;
    chunk *c = mapped ? map_chunk(size) : malloc(size);
    if (!c) {
        pickle_fail(P, "out of memory");
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
    if (mapped) { /* its pages made ready while the one before fills (stopped: it is full) */
        prefault_stop(P->chunk_pages);
        P->chunk_pages = prefault_start(c, size, size);
    }
    return mem;
}

void pickle_doc_free_memory(pickle_doc *d) {
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

/* ---- nodes -------------------------------------------------------------- */

int pickle_make_i64(parser *P, int64_t x, pickle_value *out) {
    if (x >= INLINE_MIN && x <= INLINE_MAX) {
        out->bits = ((uint64_t)x << 1) | 1u;
        return 0;
    }
    num_node *n = pickle_arena_alloc(P, sizeof *n);
    if (!n)
        return -1;
    n->h = (node){PICKLE_INT, 0, 0, 0};
    n->v.i = x;
    *out = handle(n);
    return 0;
}

int pickle_make_u64(parser *P, uint64_t x, pickle_value *out) {
    if (x <= (uint64_t)INT64_MAX)
        return pickle_make_i64(P, (int64_t)x, out);
    num_node *n = pickle_arena_alloc(P, sizeof *n);
    if (!n)
        return -1;
    n->h = (node){PICKLE_INT, NODE_U64, 0, 0};
    n->v.u = x;
    *out = handle(n);
    return 0;
}

int pickle_make_container(parser *P, pickle_type type, cont_node **out) {
    cont_node *c =
        type == PICKLE_DICT && P->spare_dict ? P->spare_dict : pickle_arena_alloc(P, sizeof *c);
    if (!c)
        return -1;
    if (c == P->spare_dict)
        P->spare_dict = NULL;
    c->h = (node){(uint8_t)type, 0, 1, 0};
    c->cap = 0;
    c->memo_slot = 0;
    c->items = NULL;
    *out = c;
    return 0;
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
        return pickle_fail(P, "a %s stored inside itself (a cycle) is not supported",
                           pickle_type_name(n->type));
    if (n->flags & NODE_TAKEN) /* a copy of a dict the record hook took (DUP before it) */
        return pickle_fail(P, "a dict read as a record is used a second time: not supported");
    if (!(n->flags & NODE_FROZEN))
        n->flags |= NODE_FROZEN;
    if ((unsigned)n->depth + 1 > *depth) {
        *depth = (unsigned)n->depth + 1;
        if (*depth > P->max_depth)
            return pickle_fail(P, "nesting deeper than %u", P->max_depth);
    }
    return 0;
}

/* Dict keys and set elements must be hashable, as in Python. */
static inline int check_hashable(parser *P, pickle_value k) {
    const node *n = node_of(k);
    if (n && (n->type == PICKLE_LIST || n->type == PICKLE_DICT || n->type == PICKLE_SET))
        return pickle_fail(P, "unhashable %s used as a dict key or set element",
                           pickle_type_name(n->type));
    if ((k.bits & 15) == V_RECORD_TAG) /* a dict, taken: as unhashable as it was */
        return pickle_fail(P, "unhashable dict used as a dict key or set element");
    return 0;
}

/* Makes room for `more` values in c's item array. */
static int reserve(parser *P, cont_node *c, size_t more) {
    size_t used = c->h.type == PICKLE_DICT ? (size_t)c->h.len * 2 : c->h.len;
    size_t need = used + more;
    if (need <= c->cap)
        return 0;
    if (need > UINT32_MAX - 1)
        return pickle_fail(P, "container with more than 2^32 items");
    size_t cap = c->cap ? (size_t)c->cap * 2 : need;
    if (cap < need)
        cap = need;
    if (cap > UINT32_MAX - 1)
        cap = UINT32_MAX - 1;
    size_t bytes = cap * sizeof(pickle_value);
    pickle_doc *d = P->doc;
    if (bytes < HEAP_ARRAY_BYTES) {
        pickle_value *items = pickle_arena_alloc(P, bytes);
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
        if (GMT_NEVER(h->slot >= d->heap_len || d->heap[h->slot] != h)) /* indexed when made */
            return pickle_fail(P, "a large array lost from the index");
    } else if (d->heap_len == d->heap_cap) {
        size_t hcap = d->heap_cap ? d->heap_cap * 2 : 64;
        if (pickle_charge(P, (hcap - d->heap_cap) * sizeof *d->heap) < 0)
            return -1;
        heap_hdr **heap = realloc(d->heap, hcap * sizeof *heap);
        if (!heap)
            return pickle_fail(P, "out of memory");
        d->heap = heap;
        d->heap_cap = hcap;
    }
    size_t total = sizeof(heap_hdr) + bytes;
    if (pickle_charge(P, total - old_bytes) < 0)
        return -1;
    heap_hdr *nh = realloc(h, total);
    if (!nh)
        return pickle_fail(P, "out of memory");
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
        if (pickle_charge(P, cap * sizeof(dedup_slot)) < 0)
            return -1;
        dedup_slot *t = calloc(cap, sizeof *t);
        if (!t)
            return pickle_fail(P, "out of memory");
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

/* A taken dict's node is kept only for the references to it that remain, so when none can
 * remain it serves the next empty dict: a million trace entries then cost one node, not 24 MB
 * of fresh memory. The references there can be besides the stack slot the record replaced:
 * the memo slot it was stored in (memo_set noted which; that slot now reads V_TAKEN), and
 * copies on the stack, which only a GET of that slot (memo_read) or a DUP (NODE_COPIED) can
 * have made. It is in no container: a container's items are frozen, and a frozen dict is never
 * filled (so never taken). A node memoized twice, or copied, stays as it is, flagged
 * NODE_TAKEN, and each of those references is refused where it is used. */
static void release_taken(parser *P, cont_node *c) {
    pickle_value self = handle(c);
    uint32_t slot = c->memo_slot;
    if (slot && slot != MEMO_SLOT_SEVERAL && GMT_NEVER(slot > P->memo_init))
        return; /* memo_set noted a slot it had defined */
    if (slot == MEMO_SLOT_SEVERAL || (c->h.flags & NODE_COPIED) ||
        (slot && (P->memo_read[(slot - 1) / 64] >> ((slot - 1) % 64) & 1)))
        return;
    if (slot && P->memo[slot - 1].bits == self.bits)
        P->memo[slot - 1].bits = V_TAKEN;
    P->spare_dict = c;
}

/* Adds stack[from, sp) to the container below them or at `target`, then
 * pops them: APPEND(S), SETITEM(S), ADDITEMS. */
int pickle_extend(parser *P, size_t target, size_t from, pickle_type want) {
    pickle_value tv = P->stack[target];
    const node *tn = node_of(tv);
    if ((tv.bits & 15) == V_RECORD_TAG) /* Python's pickler fills a dict in one batch */
        return pickle_fail(P, "a dict read as a record is filled again: not supported");
    if (!tn || tn->type != want) {
        pickle_type got = pickle_typeof(tv);
        return pickle_fail(P, "target is %s %s, not a %s", got == PICKLE_INT ? "an" : "a",
                           pickle_type_name(got), pickle_type_name(want));
    }
    cont_node *c = (cont_node *)(uintptr_t)tv.bits;
    if (c->h.flags & NODE_TAKEN) /* a copy made before it was taken, or a GET of it since */
        return pickle_fail(P, "a dict read as a record is filled again: not supported");
    if (c->h.flags & NODE_FROZEN)
        return pickle_fail(P,
                           "changes a %s already stored in another container (a cycle?): "
                           "not supported",
                           pickle_type_name(want));
    size_t n = P->sp - from;
    if (want == PICKLE_DICT && (n & 1))
        return pickle_fail(P, "odd number of items for a dict");
    unsigned depth = c->h.depth;
    for (size_t i = from; i < P->sp; i++) {
        if (adopt(P, c, P->stack[i], &depth) < 0)
            return -1;
        if (want != PICKLE_LIST && (want == PICKLE_SET || ((i - from) & 1) == 0) &&
            check_hashable(P, P->stack[i]) < 0)
            return -1;
    }
    const pickle_value *items = P->stack + from;
    if (want == PICKLE_DICT && c->h.len == 0 && P->record_hook && n) {
        uint64_t index = 0;
        int taken = P->record_hook(P->record_ctx, items, n, &index);
        if (taken < 0)
            return pickle_fail(P, "the reader refused a record");
        if (taken > 0) {
            if (index > RECORD_MAX)
                return pickle_fail(P, "record number out of range");
            c->h.flags |= NODE_TAKEN | NODE_FROZEN; /* no item may be added later */
            P->stack[target] = (pickle_value){index << 4 | V_RECORD_TAG};
            P->sp = from;
            release_taken(P, c);
            return 0;
        }
    }
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
int pickle_build(parser *P, size_t from, pickle_type type) {
    size_t n = P->sp - from;
    if (type == PICKLE_TUPLE && n == 0) {
        pickle_doc *d = P->doc;
        if (!d->empty_tuple && pickle_make_container(P, PICKLE_TUPLE, &d->empty_tuple) < 0)
            return -1;
        P->sp = from;
        return push(P, handle(d->empty_tuple));
    }
    if (type == PICKLE_DICT && (n & 1))
        return pickle_fail(P, "odd number of items for a dict");
    cont_node *c;
    if (pickle_make_container(P, type, &c) < 0)
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

/* ---- the document ------------------------------------------------------- */

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
        return v.bits == V_NONE                ? PICKLE_NONE
               : (v.bits & 15) == V_RECORD_TAG ? PICKLE_RECORD
                                               : PICKLE_BOOL;
    return (pickle_type)((const node *)(uintptr_t)v.bits)->type;
}

int pickle_get_record(pickle_value v, uint64_t *index) {
    if ((v.bits & 15) != V_RECORD_TAG)
        return 0;
    *index = v.bits >> 4;
    return 1;
}

const char *pickle_type_name(pickle_type t) {
    static const char *const names[] = {"missing", "None",      "bool",  "int",  "float",
                                        "str",     "bytes",     "tuple", "list", "dict",
                                        "set",     "frozenset", "record"};
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
