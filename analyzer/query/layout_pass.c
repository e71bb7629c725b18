/* layout_pass.c — the live blocks of one device as the rows come (layout_pass.h): slots on a
 * free list, an address map to find the block a free names. */
#include "layout_pass.h"

#include "event_scan.h"
#include "gmt_assert.h"
#include "gmt_grow.h"
#include "trace_format.h"

#include <stdlib.h>

const int layout_pass_columns[LAYOUT_PASS_NCOLS] = {
    EVENT_COL_event_id,       EVENT_COL_op,     EVENT_COL_addr,     EVENT_COL_size,
    EVENT_COL_requested_size, EVENT_COL_stream, EVENT_COL_stack_id, EVENT_COL_segment_id,
    EVENT_COL_alloc_event_id, EVENT_COL_device, EVENT_COL_level,    EVENT_COL_kind};

int layout_pass_takes(const int64_t *const *v, long r, int64_t *device) {
    int64_t op = v[LAYOUT_PASS_OP][r];
    *device = v[LAYOUT_PASS_DEVICE][r];
    return v[LAYOUT_PASS_LEVEL][r] == TRACE_LEVEL_BLOCK &&
           v[LAYOUT_PASS_KIND][r] == TRACE_KIND_DEVICE &&
           (op == TRACE_OP_ALLOC || op == TRACE_OP_FREE || op == TRACE_OP_FREE_REQUESTED);
}

void layout_pass_drop(layout_pass *p, uint32_t index) {
    layout_live_block *b = &p->blocks[index];
    (void)GMT_ALWAYS(b->live && p->live > 0);
    addr_map_remove(&p->by_addr, 0, b->addr);
    b->live = 0;
    b->next_free = p->free_head;
    p->free_head = index + 1;
    p->live--;
}

int layout_pass_alloc(layout_pass *p, const layout_live_block *nb) {
    uint32_t *old = addr_map_get(&p->by_addr, 0, nb->addr);
    if (old) /* an alloc over a live block: the replay ended the old one */
        layout_pass_drop(p, *old);
    uint32_t index;
    if (p->free_head) {
        index = p->free_head - 1;
        p->free_head = p->blocks[index].next_free;
    } else {
        if (p->len >= UINT32_MAX - 1 ||
            gmt_grow((void **)&p->blocks, &p->cap, p->len, sizeof *p->blocks) != 0)
            return -1;
        index = (uint32_t)p->len++;
    }
    p->blocks[index] = *nb;
    p->blocks[index].live = 1;
    p->blocks[index].next_free = 0;
    p->live++;
    return addr_map_put(&p->by_addr, 0, nb->addr, index);
}

int layout_pass_apply(layout_pass *p, const int64_t *const *v, long r) {
    int64_t op = v[LAYOUT_PASS_OP][r];
    uint64_t addr = (uint64_t)v[LAYOUT_PASS_ADDR][r];
    if (op == TRACE_OP_ALLOC) {
        layout_live_block nb = {0};
        nb.alloc_id = v[LAYOUT_PASS_ID][r];
        nb.addr = addr;
        nb.size = (uint64_t)event_value_or(v[LAYOUT_PASS_SIZE][r], 0); /* none */
        nb.requested = (uint64_t)event_value_or(v[LAYOUT_PASS_REQ][r], (int64_t)nb.size);
        nb.stream = (uint64_t)event_value_or(v[LAYOUT_PASS_STREAM][r], 0);
        nb.stack_id = event_value_or(v[LAYOUT_PASS_STACK][r], 0);
        nb.segment_id = event_value_or(v[LAYOUT_PASS_SEGMENT][r], 0);
        return nb.size != 0 ? layout_pass_alloc(p, &nb) : 0;
    }
    uint32_t *index = addr_map_get(&p->by_addr, 0, addr);
    int64_t alloc = v[LAYOUT_PASS_ALLOC][r];
    if (!index || alloc == EVENT_STORE_NULL || p->blocks[*index].alloc_id != alloc)
        return 0; /* a free the replay could not match: it changed nothing */
    if (op == TRACE_OP_FREE)
        layout_pass_drop(p, *index);
    else
        p->blocks[*index].pending = 1;
    return 0;
}

static int by_alloc_id(const void *a, const void *b) {
    const layout_live_block *x = a, *y = b;
    if (x->alloc_id != y->alloc_id)
        return x->alloc_id < y->alloc_id ? -1 : 1;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

layout_live_block *layout_pass_live(const layout_pass *p, size_t *count) {
    layout_live_block *out = malloc((p->live ? p->live : 1) * sizeof *out);
    if (!out)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < p->len; i++)
        if (p->blocks[i].live)
            out[n++] = p->blocks[i];
    (void)GMT_ALWAYS(n == p->live);
    if (n > 1)
        qsort(out, n, sizeof *out, by_alloc_id);
    *count = n;
    return out;
}

void layout_pass_free(layout_pass *p) {
    free(p->blocks);
    addr_map_free(&p->by_addr);
    *p = (layout_pass){0};
}
