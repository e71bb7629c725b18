/* stack_phases.c — a phase per stack trie node (see stack_phases.h). */
#include "stack_phases.h"

#include "addr_map.h"
#include "db_query.h"
#include "gmt_grow.h"

#include <stdlib.h>
#include <string.h>

#define RESOLVED 0x80000000u /* node flags: the bits of every frame out to the root are in */
/* Events carry the trace's own stack ids, small and dense (the replay numbers its inline nodes
 * from 2^32 and no event has one): below this, a stack's phase is an array read after its
 * first lookup, not a hash probe per event. */
#define DENSE_IDS (1u << 22)
#define NOT_YET 0xFF

typedef struct node {
    int64_t parent_id;
    unsigned flags; /* its own frame's bits, then (RESOLVED) the whole stack's */
} node;

struct stack_phases {
    addr_map index; /* stack_id -> 1 + index into nodes */
    node *nodes;
    size_t len, cap;
    size_t *path; /* resolve's work list */
    size_t path_cap;
    uint8_t *dense; /* [stack_id] phase + 0, or NOT_YET; ids below dense_len */
    size_t dense_len;
};

static node *find(stack_phases *p, int64_t stack_id) {
    uint32_t *at = addr_map_get(&p->index, 0, (uint64_t)stack_id);
    return at ? &p->nodes[*at - 1] : NULL;
}

/* Walks out to the first resolved node (or the root), then fills the bits in on the way back. */
static unsigned resolve(stack_phases *p, node *n) {
    size_t depth = 0;
    while (n && !(n->flags & RESOLVED)) {
        if (gmt_grow((void **)&p->path, &p->path_cap, depth, sizeof *p->path) != 0)
            return 0;
        p->path[depth++] = (size_t)(n - p->nodes);
        node *up = n->parent_id ? find(p, n->parent_id) : NULL;
        if (up && depth > p->len) /* a cycle in a damaged trie: cut it here */
            up = NULL;
        n = up;
    }
    unsigned bits = n ? n->flags & ~RESOLVED : 0;
    while (depth-- > 0) {
        node *m = &p->nodes[p->path[depth]];
        bits |= m->flags;
        m->flags = bits | RESOLVED;
    }
    return bits;
}

stack_phases *stack_phases_load(sqlite3 *db) {
    stack_phases *p = calloc(1, sizeof *p);
    addr_map frame_bits = {0};
    sqlite3_stmt *st = db_statement(db, "SELECT frame_id, name, file FROM frames");
    int ok = p && st, failed = 0;
    while (ok && db_next_row(st, &failed)) {
        named_frame f = {.name = (const char *)sqlite3_column_text(st, 1),
                         .file = (const char *)sqlite3_column_text(st, 2)};
        unsigned bits = phase_frame_flags(&f);
        if (bits && addr_map_put(&frame_bits, 0, (uint64_t)sqlite3_column_int64(st, 0), bits) != 0)
            ok = 0;
    }
    sqlite3_finalize(st);
    st =
        ok && !failed ? db_statement(db, "SELECT stack_id, parent_id, frame_id FROM stacks") : NULL;
    ok = ok && st;
    while (ok && db_next_row(st, &failed)) {
        if (gmt_grow((void **)&p->nodes, &p->cap, p->len, sizeof *p->nodes) != 0 ||
            addr_map_put(&p->index, 0, (uint64_t)sqlite3_column_int64(st, 0),
                         (uint32_t)(p->len + 1)) != 0) {
            ok = 0;
            break;
        }
        const uint32_t *bits =
            sqlite3_column_type(st, 2) == SQLITE_NULL
                ? NULL
                : addr_map_get(&frame_bits, 0, (uint64_t)sqlite3_column_int64(st, 2));
        p->nodes[p->len++] = (node){db_column_i64(st, 1, 0), bits ? *bits : 0};
        int64_t id = sqlite3_column_int64(st, 0);
        if (id > 0 && (uint64_t)id < DENSE_IDS && (size_t)id >= p->dense_len)
            p->dense_len = (size_t)id + 1;
    }
    sqlite3_finalize(st);
    ok = ok && !failed;
    if (ok && p->dense_len && !(p->dense = malloc(p->dense_len)))
        ok = 0;
    if (p->dense)
        memset(p->dense, NOT_YET, p->dense_len);
    addr_map_free(&frame_bits);
    if (!ok) {
        stack_phases_free(p);
        return NULL;
    }
    return p;
}

phase stack_phases_get(stack_phases *p, int64_t stack_id) {
    int dense = stack_id > 0 && (uint64_t)stack_id < p->dense_len;
    if (dense && p->dense[stack_id] != NOT_YET)
        return (phase)p->dense[stack_id];
    node *n = stack_id ? find(p, stack_id) : NULL;
    phase result = n ? phase_of_flags(resolve(p, n)) : PHASE_UNKNOWN;
    if (dense)
        p->dense[stack_id] = (uint8_t)result;
    return result;
}

unsigned stack_phases_bits(stack_phases *p, int64_t stack_id) {
    node *n = stack_id ? find(p, stack_id) : NULL;
    return n ? resolve(p, n) & ~RESOLVED : 0u;
}

void stack_phases_free(stack_phases *p) {
    if (!p)
        return;
    addr_map_free(&p->index);
    free(p->dense);
    free(p->nodes);
    free(p->path);
    free(p);
}
