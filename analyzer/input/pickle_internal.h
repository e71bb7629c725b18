/* pickle_internal.h — what the pickle reader's two halves share: the handle
 * encoding, the node layouts, the document and the parser's state.
 * Internal to the analyzer: only pickle_parse.c (the opcode machine) and
 * pickle_value.c (the value tree) include it; pickle.h is the contract.
 *
 * The parser's state is shared because building the tree is done on its
 * behalf: every allocation is counted against its budget and every refusal
 * names the opcode being run (pickle_fail), and containers take their items
 * straight from a slice of its stack. The few helpers both halves call per
 * value (handles, push) are inline here so the split costs no calls. */
#ifndef GMT_PICKLE_INTERNAL_H
#define GMT_PICKLE_INTERNAL_H

#include "pickle.h"

#include <stddef.h>
#include <stdint.h>

/* ---- handles ------------------------------------------------------------
 * bits == 0        MISSING
 * bits & 1         int: the value is (int64)bits >> 1 (63-bit range)
 * bits & 3 == 2    immediate: None, False, True, or (bits & 15 == 14) a record, its
 *                  number bits >> 4
 * otherwise        pointer to a node (8-byte aligned) */
#define V_NONE 0x2u
#define V_FALSE 0x6u
#define V_TRUE 0xAu
#define V_RECORD_TAG 0xEu
/* In a memo slot only: the dict stored there was taken by the record hook (its node reused);
 * memo_get pushes parser.taken_dict for it, so it is never on the stack */
#define V_TAKEN 0x12u
#define RECORD_MAX ((UINT64_C(1) << 59) - 1)
#define INLINE_MIN (-(INT64_C(1) << 62))
#define INLINE_MAX ((INT64_C(1) << 62) - 1)

/* NODE_TAKEN: a dict the record hook took (its handle in the memo must not be used again) */
/* NODE_COPIED: a dict DUP copied on the stack (see release_taken in pickle_value.c) */
enum { NODE_FROZEN = 1, NODE_HEAP = 2, NODE_U64 = 4, NODE_TAKEN = 8, NODE_COPIED = 16 };

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

/* cont_node.memo_slot of a dict memoized more than once, or at a slot beyond 32 bits */
#define MEMO_SLOT_SEVERAL UINT32_MAX

typedef struct cont_node {
    node h;
    uint32_t cap;        /* in values (a dict pair is two) */
    uint32_t memo_slot;  /* dicts: 1 + the memo slot it was stored in, 0: none (see memo_set) */
    pickle_value *items; /* dict: key, value, key, value, ... */
} cont_node;

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

/* ---- the document and the parser ---------------------------------------- */

struct chunk;      /* an arena chunk (pickle_value.c) */
struct heap_hdr;   /* a large item array's header (pickle_value.c) */
struct dedup_slot; /* a shared list array (pickle_value.c) */

struct pickle_doc {
    struct chunk *chunks;
    char *cur, *end; /* bump region of chunks */
    size_t next_chunk;
    struct heap_hdr **heap;
    size_t heap_len, heap_cap;
    size_t tree_bytes; /* arena chunks + heap arrays */
    size_t budget_used, budget;
    cont_node *empty_tuple;
    pickle_value root;
    size_t input_len;
    void *map; /* pickle_parse_file's mapping */
    size_t map_len;
};

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
    size_t memo_cap, memo_init, memo_count, memo_limit; /* memo_init: see memo_set */
    uint64_t *memo_read; /* a bit per memo slot: a GET has pushed what it held */
    struct dedup_slot *dedup;
    size_t dedup_cap, dedup_len;
    pickle_record_hook record_hook;
    void *record_ctx;
    cont_node *spare_dict; /* a taken dict's node, for the next empty dict (pickle_extend) */
    cont_node *taken_dict; /* what a GET of a V_TAKEN memo slot pushes (memo_get) */
    /* pages made ready on the other core (prefault.h): the arena chunk being filled, and the
     * memo's slots ahead of memo_init; both stopped before the region may move or go */
    struct prefault *chunk_pages, *memo_pages;
    /* pickle_parse_file only: the mapping is paged in ahead and dropped
     * behind the cursor (see window_advance); win_next = end otherwise. */
    const uint8_t *win_next, *win_dropped, *win_populated, *map_end;
    char *err;
    size_t errlen;
} parser;

/* ---- pickle_parse.c: refusals, limits, the stack ------------------------- */

/* "pickle: <opcode>: <what> at offset N"; returns -1. */
int pickle_fail(parser *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Counts n more bytes against the memory budget (-1 and a message past it). */
int pickle_charge(parser *P, size_t n);
int pickle_grow_stack(parser *P);

static inline int push(parser *P, pickle_value v) {
    if (P->sp == P->stack_cap && pickle_grow_stack(P) < 0)
        return -1;
    P->stack[P->sp++] = v;
    return 0;
}

/* ---- pickle_value.c: nodes and containers -------------------------------- */

void *pickle_arena_alloc(parser *P, size_t n);
int pickle_make_i64(parser *P, int64_t x, pickle_value *out);
int pickle_make_u64(parser *P, uint64_t x, pickle_value *out);
int pickle_make_container(parser *P, pickle_type type, cont_node **out);
/* APPEND(S), SETITEM(S), ADDITEMS: stack[from, sp) into the container at
 * stack[target], then popped. */
int pickle_extend(parser *P, size_t target, size_t from, pickle_type want);
/* A new container from stack[from, sp), which it replaces. */
int pickle_build(parser *P, size_t from, pickle_type type);
/* Frees the arena and the large arrays (not the document itself). */
void pickle_doc_free_memory(pickle_doc *d);

#endif
