/* layout_pass.h — the forward pass that layout.h's layouts are read from: the live blocks of one
 * device as the rows come, in event order, kept by address as the replay kept them.
 *
 * Shared by layout.c (a pass to the layouts' moments) and layout_index.c (the same pass once
 * over the whole run, its state written down every so often, so that a later pass can start
 * from the written state nearest before its moment instead of from the first row). The two
 * give the same state at every moment because they are this one code: an alloc at the address
 * of a live block ends the old one (the replay's double_alloc), a free ends the block whose
 * alloc it names if that block is still the one at its address (else it changed nothing), a
 * free_requested marks it pending. */
#ifndef GMT_LAYOUT_PASS_H
#define GMT_LAYOUT_PASS_H

#include "addr_map.h"

#include <stddef.h>
#include <stdint.h>

typedef struct layout_live_block {
    int64_t alloc_id, stack_id, segment_id; /* segment_id 0: none */
    uint64_t addr, size, requested, stream;
    uint32_t next_free; /* free list of the pass, 1-based */
    uint8_t live, pending;
} layout_live_block;

typedef struct layout_pass {
    layout_live_block *blocks; /* slots, live or on the free list */
    size_t len, cap;
    size_t live; /* live slots */
    uint32_t free_head;
    addr_map by_addr; /* live block address -> slot */
} layout_pass;

/* The columns the pass reads (event_scan.h), in the order of LAYOUT_PASS_* below. */
enum {
    LAYOUT_PASS_ID,
    LAYOUT_PASS_OP,
    LAYOUT_PASS_ADDR,
    LAYOUT_PASS_SIZE,
    LAYOUT_PASS_REQ,
    LAYOUT_PASS_STREAM,
    LAYOUT_PASS_STACK,
    LAYOUT_PASS_SEGMENT,
    LAYOUT_PASS_ALLOC,
    LAYOUT_PASS_DEVICE,
    LAYOUT_PASS_LEVEL,
    LAYOUT_PASS_KIND,
    LAYOUT_PASS_NCOLS
};
extern const int layout_pass_columns[LAYOUT_PASS_NCOLS];

/* Whether row r of a batch (v: the columns above, event_scan_pick'ed) is one the pass takes:
 * a device-memory block alloc, free or free_requested; its device in *device. */
int layout_pass_takes(const int64_t *const *v, long r, int64_t *device);

/* Applies row r (one layout_pass_takes accepted) to the pass. 0, or -1 out of memory. */
int layout_pass_apply(layout_pass *p, const int64_t *const *v, long r);

/* Puts block nb in (ending a live block at its address). 0, or -1 out of memory. */
int layout_pass_alloc(layout_pass *p, const layout_live_block *nb);
/* Ends the block in slot `index`. */
void layout_pass_drop(layout_pass *p, uint32_t index);

/* The live blocks, by alloc_id (then address): malloc'd (*count of them; never NULL unless out
 * of memory). The one order every path gives build_point, so that which of two overlapping
 * blocks is placed first does not depend on the pass's slots. */
layout_live_block *layout_pass_live(const layout_pass *p, size_t *count);

void layout_pass_free(layout_pass *p);

#endif
