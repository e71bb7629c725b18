/* snapshot_import.c — a PyTorch memory snapshot becomes a trace.
 *
 * Three steps, per device:
 *  1. The final state: the snapshot's `segments` and their live blocks.
 *  2. The seed: walking the history (a ring buffer) backwards from the final
 *     state undoes each entry — an alloc removes its block, a
 *     free_completed brings one back, segment_alloc removes a segment,
 *     segment_free brings one back, map/unmap remove/add ranges — which
 *     leaves exactly what was live before the first entry. This is how
 *     PyTorch's own viewer seeds its timeline, and why a snapshot that
 *     starts at its peak still shows that peak.
 *  3. The trace: the seed as events, a seed_end marker, then the history and
 *     the external annotations merged in time order, with every stack
 *     interned as a trie.
 *
 * Names: the text a program set with torch.cuda.memory._set_memory_metadata() rides in every
 * trace entry made while it is set (user_metadata). An alloc entry's names the block it
 * allocates: a mark of the domain memrec.tensor (TRACE_FORMAT.md, "Tensor names") right after
 * the alloc event, its value the block's address, its name the text as the program wrote it
 * (a name alone, or "<category> <name>" when the text starts with a category word: the replay
 * tells them apart). A free's metadata is whatever was set when the free ran: it names nothing.
 * A seed block named in the final `segments` (a block's user_metadata) gets its mark right
 * after its seed event. A snapshot without names writes nothing more.
 *
 * Sizes: PyTorch's history records requested sizes. Seed blocks from the
 * final state carry their real (allocator) size; the others carry the
 * rounded request, and the replay applies the allocator's split rule. What
 * each history entry becomes is model/torch_history.h's rule, the one the
 * recorder applies to live history. */
#include "snapshot_import.h"

#include "addr_map.h"
#include "alloc_model.h"
#include "gmt_grow.h"
#include "gmt_radix.h"
#include "snapshot.h"
#include "snapshot_pools.h"
#include "torch_history.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the state while walking backwards ---------------------------------- */

/* A seed block's stack when the history knows only its free: PyTorch's viewer
 * says "alloc not recorded", and so do we (the free keeps its own stack). */
#define STACK_ALLOC_NOT_RECORDED UINT32_MAX

typedef struct seed_block {
    uint64_t addr, size, requested, stream;
    uint32_t stack; /* snapshot stack, or STACK_ALLOC_NOT_RECORDED */
    int pending, live;
    uint32_t name;   /* snapshot string id of the block's user_metadata, 0: none */
    size_t freed_at; /* 1 + the history entry that frees it, when the ring lost its alloc and
                      * its size is the free's rounded request; 0: the final state's own size */
} seed_block;

typedef struct seed_range {
    uint64_t addr, size, stream;
    uint32_t stack;
    int expandable, live;
    int small; /* an expandable range's pool: 1 small, 0 large, -1 not known yet */
} seed_range;

typedef struct seed_state {
    seed_block *blocks; /* the seed's order; dropped ones stay until compact_blocks */
    size_t nblocks, cap_blocks, ndropped;
    addr_map live_blocks; /* addr -> index of the live block there */
    seed_range *ranges;
    size_t nranges, cap_ranges;
} seed_state;

static int add_range(seed_state *s, const seed_range *r) {
    if (gmt_grow((void **)&s->ranges, &s->cap_ranges, s->nranges, sizeof *s->ranges) != 0)
        return -1;
    s->ranges[s->nranges++] = *r;
    return 0;
}

static seed_block *find_block(seed_state *s, uint64_t addr) {
    uint32_t *i = addr_map_get(&s->live_blocks, 0, addr);
    return i ? &s->blocks[*i] : NULL;
}

/* Walking back, every free in the history adds a block and its alloc drops it again, so most
 * of the array is dropped blocks (500 k frees: 28 MB of them). When the array is full and at
 * least half of it is dropped, the live blocks move down in order (the seed keeps its order)
 * and the index follows them: the array stays near twice the live blocks. */
static void compact_blocks(seed_state *s) {
    size_t n = 0;
    for (size_t i = 0; i < s->nblocks; i++) {
        if (!s->blocks[i].live)
            continue;
        if (n != i) {
            s->blocks[n] = s->blocks[i];
            /* the index names the newest block at an address: an older one still live there
             * (two final-state blocks at one address, in a hostile file) stays out of it */
            uint32_t *at = addr_map_get(&s->live_blocks, 0, s->blocks[n].addr);
            if (at && *at == i)
                *at = (uint32_t)n;
        }
        n++;
    }
    s->nblocks = n;
    s->ndropped = 0;
}

static int add_block(seed_state *s, const seed_block *b) {
    if (s->nblocks == s->cap_blocks && s->ndropped * 2 >= s->nblocks)
        compact_blocks(s);
    if (addr_map_put(&s->live_blocks, 0, b->addr, (uint32_t)s->nblocks) != 0 ||
        gmt_grow_uninit((void **)&s->blocks, &s->cap_blocks, s->nblocks, sizeof *s->blocks, 256) !=
            0)
        return -1;
    s->blocks[s->nblocks++] = *b;
    return 0;
}

static void drop_block(seed_state *s, seed_block *b) {
    b->live = 0;
    s->ndropped++;
    addr_map_remove(&s->live_blocks, 0, b->addr);
}

/* Removes [addr, addr+size) from every live range it touches: a map undone takes away the
 * whole mapped range, whichever ranges (final segments, unmaps undone) it lies across; what a
 * range keeps on either side stays a range. Segments are few next to blocks (hundreds to
 * thousands): a linear pass is cheaper than an ordered index of ranges. */
static int cut_ranges(seed_state *s, uint64_t addr, uint64_t size) {
    uint64_t end = addr + size;
    for (size_t i = 0, n = s->nranges; i < n; i++) {
        seed_range *r = &s->ranges[i];
        uint64_t r_end = r->addr + r->size;
        if (!r->live || r_end <= addr || end <= r->addr)
            continue;
        seed_range after = *r;
        if (r->addr < addr) {
            r->size = addr - r->addr; /* keeps the part before */
        } else {
            r->live = 0;
        }
        if (end < r_end) {
            after.addr = end;
            after.size = r_end - end;
            if (add_range(s, &after) != 0) /* may move s->ranges: r is not used after it */
                return -1;
        }
    }
    return 0;
}

/* The seed's ranges: the final `segments`, with the history's segment entries undone newest
 * first. An entry that adds memory back (segment_free, segment_unmap undone) takes it from any
 * range that claims it already (an inconsistent history: the newer state wins). */
static int restore_range(seed_state *s, const seed_range *r) {
    return cut_ranges(s, r->addr, r->size) != 0 ? -1 : add_range(s, r);
}

/* The device's final state from its segments (segs[0 .. nsegs): (device, index) pairs, in
 * order), then its history undone newest first. */
static int build_seed(const snapshot *snap, const uint64_t (*segs)[2], size_t nsegs,
                      const snapshot_device *dev, seed_state *s) {
    for (size_t n = 0; n < nsegs; n++) {
        const snapshot_segment *seg = &snap->segments[segs[n][1]];
        seed_range r = {seg->address,
                        seg->total_size,
                        seg->stream,
                        seg->stack,
                        seg->is_expandable == 1,
                        1,
                        seg->pool == SNAPSHOT_POOL_SMALL   ? 1
                        : seg->pool == SNAPSHOT_POOL_LARGE ? 0
                                                           : -1};
        if (add_range(s, &r) != 0)
            return -1;
        for (size_t k = 0; k < seg->block_count; k++) {
            const snapshot_block *b = &seg->blocks[k];
            if (b->state == SNAPSHOT_BLOCK_INACTIVE || b->state == SNAPSHOT_BLOCK_OTHER)
                continue;
            seed_block sb = {.addr = b->address,
                             .size = b->size,
                             .requested = b->requested_size,
                             .stream = seg->stream,
                             .stack = b->stack,
                             .pending = b->state == SNAPSHOT_BLOCK_ACTIVE_PENDING_FREE,
                             .live = 1,
                             .name = b->user_metadata};
            if (add_block(s, &sb) != 0)
                return -1;
        }
    }
    for (size_t i = dev ? dev->entry_count : 0; i-- > 0;) {
        const snapshot_entry *e = &dev->entries[i];
        const snapshot_entry_kind *k = snapshot_kind(snap, e);
        seed_block *b;
        seed_range r = {e->addr, e->size, k->stream, e->stack, 0, 1, -1};
        switch (k->action) {
        case GMT_TORCH_ALLOC:
            if ((b = find_block(s, e->addr)))
                drop_block(s, b);
            break;
        case GMT_TORCH_FREE_REQUESTED:
            if ((b = find_block(s, e->addr)))
                b->pending = 0;
            break;
        case GMT_TORCH_FREE_COMPLETED: {
            seed_block nb = {.addr = e->addr,
                             .size = gmt_torch_block_size(e->size),
                             .requested = e->size,
                             .stream = k->stream,
                             .stack = STACK_ALLOC_NOT_RECORDED,
                             .pending = 1,
                             .live = 1,
                             .freed_at = i + 1};
            if ((b = find_block(s, e->addr))) /* inconsistent history: keep the newer */
                drop_block(s, b);
            if (add_block(s, &nb) != 0)
                return -1;
            break;
        }
        case GMT_TORCH_SEGMENT_ALLOC:
        case GMT_TORCH_SEGMENT_MAP:
            if (cut_ranges(s, e->addr, e->size) != 0)
                return -1;
            break;
        case GMT_TORCH_SEGMENT_FREE:
            if (restore_range(s, &r) != 0)
                return -1;
            break;
        case GMT_TORCH_SEGMENT_UNMAP:
            r.expandable = 1;
            if (restore_range(s, &r) != 0)
                return -1;
            break;
        default:
            break;
        }
    }
    return 0;
}

/* ---- pools and pages of expandable ranges ----------------------------------- */

/* PyTorch maps an expandable segment in pages of 20 MiB (large pool) or 2 MiB (small pool).
 * The trace gives every page its own map event, as the driver sees them (one cuMemMap per
 * page): a page is then one row of the database's segments, and a later unmap of some pages
 * ends whole rows, whatever pages a single segment_map entry covered. The pool of a range the
 * history unmapped comes from what the history did inside it (an allocation's size, a map of
 * one small page), else from a neighbouring range, else from its size. */

typedef struct at_addr { /* something about an address: a pool hint, a range's index */
    uint64_t addr;
    size_t value;
} at_addr;
_Static_assert(sizeof(at_addr) == 2 * sizeof(uint64_t) && sizeof(size_t) == sizeof(uint64_t),
               "an at_addr is gmt_radix.h's record: the address, then the value");

static int by_addr(const void *a, const void *b) {
    uint64_t x = ((const at_addr *)a)->addr, y = ((const at_addr *)b)->addr;
    return x < y ? -1 : x > y;
}

/* by_addr, and at one address the larger value first: a range (offset by the block count)
 * before the block that starts it */
static int by_ranges_first(const void *a, const void *b) {
    const at_addr *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->value > y->value ? -1 : x->value < y->value;
}

/* The map entry's pool: small-pool maps are one 2 MiB page, large-pool ones 20 MiB pages. */
static int map_is_small(uint64_t size) { return gmt_torch_map_page(size) == AM_PAGE_SMALL; }

static int resolve_pools(const snapshot *snap, const snapshot_device *dev, seed_state *s) {
    size_t unknown = 0;
    for (size_t i = 0; i < s->nranges; i++)
        unknown += s->ranges[i].live && s->ranges[i].expandable && s->ranges[i].small < 0;
    if (!unknown)
        return 0;
    at_addr *hints = NULL;
    size_t nhints = 0, cap = 0;
    for (size_t i = 0; dev && i < dev->entry_count; i++) {
        const snapshot_entry *e = &dev->entries[i];
        unsigned action = snapshot_kind(snap, e)->action;
        at_addr h = {e->addr, 0}; /* value: 1 small pool, 0 large */
        if (action == GMT_TORCH_ALLOC)
            h.value = am_is_small(gmt_torch_block_size(e->size));
        else if (action == GMT_TORCH_SEGMENT_MAP)
            h.value = (size_t)map_is_small(e->size);
        else
            continue;
        if (gmt_grow((void **)&hints, &cap, nhints, sizeof *hints) != 0) {
            free(hints);
            return -1;
        }
        hints[nhints++] = h;
    }
    qsort(hints, nhints, sizeof *hints, by_addr);
    for (size_t i = 0; i < s->nranges; i++) {
        seed_range *r = &s->ranges[i];
        if (!r->live || !r->expandable || r->small >= 0)
            continue;
        size_t lo = 0, hi = nhints; /* the first hint at or above r->addr */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (hints[mid].addr < r->addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < nhints && hints[lo].addr < r->addr + r->size)
            r->small = (int)hints[lo].value;
    }
    free(hints);
    /* a neighbour of the same stream tells: ranges in address order, a forward and a backward
     * sweep carry a pool along a run of touching ranges */
    at_addr *order = malloc((s->nranges ? s->nranges : 1) * sizeof *order); /* value: index */
    if (!order)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < s->nranges; i++)
        if (s->ranges[i].live && s->ranges[i].expandable)
            order[n++] = (at_addr){s->ranges[i].addr, i};
    qsort(order, n, sizeof *order, by_addr);
    for (int sweep = 0; sweep < 2; sweep++) {
        for (size_t k = 1; k < n; k++) {
            seed_range *a = &s->ranges[order[sweep ? n - k : k - 1].value];
            seed_range *b = &s->ranges[order[sweep ? n - k - 1 : k].value];
            seed_range *lo = sweep ? b : a, *hi = sweep ? a : b;
            if (lo->addr + lo->size == hi->addr && lo->stream == hi->stream && b->small < 0)
                b->small = a->small;
        }
    }
    free(order);
    for (size_t i = 0; i < s->nranges; i++)
        if (s->ranges[i].small < 0)
            s->ranges[i].small = map_is_small(s->ranges[i].size);
    return 0;
}

/* ---- sizes of seed blocks known only by their request ------------------------ */

/* A seed block whose alloc the ring lost is known by its free's request only, rounded. PyTorch
 * gave it more when the free block it came from had at most kSmallSize (1 MiB) to spare: in
 * the large pool of a plain segment it splits only a remainder larger than that (should_split),
 * so no block there, free or not, is 1 MiB or smaller (with expandable segments off: on, it
 * splits any remainder, and the caller does not widen). A block boundary at most 1 MiB past the
 * rounded end is then the block's own end. Boundaries known: the next seed block, the
 * segment's end, and where the history allocates while the block is still live (an allocation
 * starts at a free block's start). The small pool and expandable segments split any remainder
 * of 512 bytes or more, and rounded sizes are multiples of 512: nothing to add there. */
static int widen_unsplit_blocks(const snapshot *snap, const snapshot_device *dev, seed_state *s) {
    size_t n = 0, nallocs = 0;
    at_addr *order = malloc((s->nblocks + s->nranges + 1) * sizeof *order);
    at_addr *allocs = malloc(((dev ? dev->entry_count : 0) + 1) * sizeof *allocs);
    at_addr *spare = malloc(((dev ? dev->entry_count : 0) + 1) * sizeof *spare);
    if (!order || !allocs || !spare) {
        free(order);
        free(allocs);
        free(spare);
        return -1;
    }
    for (size_t i = 0; dev && i < dev->entry_count; i++) /* value: the entry's index */
        if (snapshot_kind(snap, &dev->entries[i])->action == GMT_TORCH_ALLOC &&
            !am_is_small(gmt_torch_block_size(dev->entries[i].size)))
            allocs[nallocs++] = (at_addr){dev->entries[i].addr, i};
    gmt_radix_sort((uint64_t(*)[2])allocs, (uint64_t(*)[2])spare, nallocs, 0, 1); /* by address */
    free(spare);
    /* ranges and blocks in one address order, a range before the blocks it holds: value is
     * the index, ranges offset by nblocks */
    for (size_t i = 0; i < s->nranges; i++)
        if (s->ranges[i].live && !s->ranges[i].expandable)
            order[n++] = (at_addr){s->ranges[i].addr, s->nblocks + i};
    for (size_t i = 0; i < s->nblocks; i++)
        if (s->blocks[i].live)
            order[n++] = (at_addr){s->blocks[i].addr, i};
    qsort(order, n, sizeof *order, by_ranges_first);
    const seed_range *range = NULL;
    for (size_t k = 0; k < n; k++) {
        if (order[k].value >= s->nblocks) {
            range = &s->ranges[order[k].value - s->nblocks];
            continue;
        }
        seed_block *b = &s->blocks[order[k].value];
        if (!range || b->addr < range->addr || b->addr >= range->addr + range->size ||
            !b->freed_at || am_is_small(b->size) || b->size > range->addr + range->size - b->addr)
            continue;
        uint64_t end = b->addr + b->size, limit = range->addr + range->size;
        if (k + 1 < n && order[k + 1].value < s->nblocks && order[k + 1].addr < limit)
            limit = order[k + 1].addr;
        size_t lo = 0, hi = nallocs; /* the first allocation at or above the rounded end */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (allocs[mid].addr < end)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < nallocs && allocs[lo].addr < limit; lo++)
            if (allocs[lo].value < b->freed_at - 1) { /* allocated while b was live */
                limit = allocs[lo].addr;
                break;
            }
        if (limit > end && limit - end <= AM_SMALL_SIZE)
            b->size = limit - b->addr;
    }
    free(order);
    free(allocs);
    return 0;
}

/* ---- writing ---------------------------------------------------------------- */

typedef struct importer {
    const snapshot *snap;
    trace_writer *w;
    uint32_t *stack_ids;              /* snapshot stack -> trace stack (0 = not yet) */
    uint32_t *frame_ids;              /* snapshot frame -> trace frame */
    uint32_t not_recorded;            /* the stack "alloc not recorded" (0 = not yet) */
    uint32_t tensor_domain;           /* the string TRACE_TENSOR_DOMAIN (0 = not yet) */
    uint32_t last_name, last_name_id; /* the last name written: snapshot and trace string ids */
    uint64_t ts;                      /* the time of the record being written */
    const snapshot_pools *pools;      /* private pools by address (snapshot_pools.h) */
} importer;

static uint32_t str(importer *im, const char *s) {
    return s ? trace_writer_string(im->w, s, strlen(s)) : 0;
}

static int is_python_file(const char *f) {
    size_t n = f ? strlen(f) : 0;
    return n > 3 && !strcmp(f + n - 3, ".py");
}

static uint32_t frame_id(importer *im, uint32_t f) {
    if (f >= im->snap->frame_count)
        return 0;
    if (!im->frame_ids[f]) {
        const snapshot_frame *sf = &im->snap->frames[f];
        trace_frame tf = {.kind =
                              is_python_file(sf->filename) ? TRACE_FRAME_PYTHON : TRACE_FRAME_OTHER,
                          .function_id = str(im, sf->name),
                          .file_id = str(im, sf->filename),
                          .line = sf->line > 0 && sf->line < UINT32_MAX ? (uint32_t)sf->line : 0};
        im->frame_ids[f] = trace_writer_frame(im->w, &tf);
    }
    return im->frame_ids[f];
}

/* The trie node of a snapshot stack, built from its outermost frame in. */
static uint32_t stack_id(importer *im, uint32_t stack) {
    if (stack == STACK_ALLOC_NOT_RECORDED) {
        if (!im->not_recorded) {
            trace_frame tf = {.kind = TRACE_FRAME_OTHER,
                              .function_id = str(im, "alloc not recorded")};
            im->not_recorded = trace_writer_stack(im->w, 0, trace_writer_frame(im->w, &tf));
        }
        return im->not_recorded;
    }
    if (!stack || stack >= im->snap->stack_count)
        return 0;
    if (im->stack_ids[stack])
        return im->stack_ids[stack];
    size_t depth;
    const uint32_t *frames = snapshot_stack_frames(im->snap, stack, &depth);
    uint32_t node = 0;
    for (size_t i = depth; i-- > 0;)
        node = trace_writer_stack(im->w, node, frame_id(im, frames[i]));
    return im->stack_ids[stack] = node;
}

/* A seed event (entry -1) or one of history entry `entry`: its pool from the address. */
static int event(importer *im, uint32_t device, long entry, trace_op op, trace_level level,
                 uint64_t addr, uint64_t size, uint64_t requested, uint64_t stream,
                 uint32_t stack) {
    trace_event ev = {.ts_ns = im->ts,
                      .pool = snapshot_pools_at(im->pools, device, addr, entry),
                      .addr = addr,
                      .size = size,
                      .requested = requested,
                      .stream = stream,
                      .stack_id = stack_id(im, stack),
                      .device = device,
                      .op = (uint8_t)op,
                      .level = (uint8_t)level,
                      .kind = TRACE_KIND_DEVICE,
                      .source = TRACE_SOURCE_TORCH};
    return trace_writer_event(im->w, &ev);
}

/* The block just allocated at addr is named `name` (a snapshot string id): a mark of the domain
 * memrec.tensor, which the replay binds to the block live there (TRACE_FORMAT.md). */
static int name_block(importer *im, uint64_t addr, uint32_t name) {
    if (!im->tensor_domain)
        im->tensor_domain = str(im, TRACE_TENSOR_DOMAIN);
    if (name != im->last_name) { /* metadata stays set for a while: runs of one name */
        im->last_name = name;
        im->last_name_id = str(im, im->snap->strings[name]);
    }
    trace_marker m = {.ts_ns = im->ts,
                      .value = (int64_t)addr,
                      .domain_id = im->tensor_domain,
                      .name_id = im->last_name_id,
                      .kind = TRACE_MARK_MARK};
    return trace_writer_marker(im->w, &m);
}

/* One map event per page of [addr, addr+size), a page being `page` bytes. */
static int map_pages(importer *im, uint32_t device, long entry, uint64_t addr, uint64_t size,
                     uint64_t page, uint64_t stream, uint32_t stack) {
    int rc = 0;
    for (uint64_t at = addr; at < addr + size && rc == 0; at += page) {
        uint64_t n = addr + size - at < page ? addr + size - at : page;
        rc = event(im, device, entry, TRACE_OP_MAP, TRACE_LEVEL_SEGMENT, at, n, n, stream, stack);
    }
    return rc;
}

static int write_seed(importer *im, uint32_t device, const seed_state *s) {
    int rc = 0;
    for (size_t i = 0; i < s->nranges && rc == 0; i++) {
        const seed_range *r = &s->ranges[i];
        if (!r->live || !r->size)
            continue;
        if (r->expandable)
            rc = map_pages(im, device, -1, r->addr, r->size, am_expandable_page(r->small == 1),
                           r->stream, r->stack);
        else
            rc = event(im, device, -1, TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, r->addr, r->size,
                       r->size, r->stream, r->stack);
    }
    for (size_t i = 0; i < s->nblocks && rc == 0; i++) {
        const seed_block *b = &s->blocks[i];
        if (!b->live)
            continue;
        rc = event(im, device, -1, TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, b->addr, b->size,
                   b->requested ? b->requested : b->size, b->stream, b->stack);
        if (rc == 0 && b->name)
            rc = name_block(im, b->addr, b->name);
        if (rc == 0 && b->pending)
            rc = event(im, device, -1, TRACE_OP_FREE_REQUESTED, TRACE_LEVEL_BLOCK, b->addr, b->size,
                       b->requested, b->stream, 0);
    }
    return rc;
}

/* A `user_defined` entry (PyTorch 2.4-2.6 recorded record_function ranges,
 * ProfilerStep#N included, this way before external_annotations): its one
 * frame holds the stage as its name ("START"/"END") and the range's name as
 * its filename. A range marker, like an external annotation; other unknown
 * actions carry nothing. A snapshot that has external_annotations says its
 * ranges there (memanalyze's export writes both, for every MemoryViz): its
 * user_defined entries are the same ranges again, not read. */
static int user_defined(importer *im, const snapshot_entry *e) {
    const snapshot *snap = im->snap;
    uint32_t action_name = snapshot_kind(snap, e)->action_name;
    const char *action = action_name < snap->string_count ? snap->strings[action_name] : NULL;
    size_t depth = 0;
    const uint32_t *frames = e->stack && e->stack < snap->stack_count
                                 ? snapshot_stack_frames(snap, e->stack, &depth)
                                 : NULL;
    if (snap->has_annotations || !action || strcmp(action, "user_defined") != 0 || depth < 1 ||
        frames[0] >= snap->frame_count)
        return 0;
    const snapshot_frame *f = &snap->frames[frames[0]];
    int start = f->name && !strcmp(f->name, "START"), end = f->name && !strcmp(f->name, "END");
    if ((!start && !end) || !f->filename)
        return 0;
    uint32_t name = str(im, f->filename);
    trace_marker m = {.ts_ns = im->ts,
                      .range_id = name,
                      .name_id = name,
                      .kind = start ? TRACE_MARK_RANGE_START : TRACE_MARK_RANGE_END};
    return trace_writer_marker(im->w, &m);
}

/* One history entry, by model/torch_history.h's rules (the recorder's too). */
static int write_entry(importer *im, uint32_t device, const snapshot_entry *e) {
    const snapshot_entry_kind *k = snapshot_kind(im->snap, e);
    gmt_torch_entry h = {.action = k->action,
                         .addr = e->addr,
                         .size = e->size,
                         .stream = k->stream,
                         .device_free = k->device_free,
                         .ts_ns = im->ts,
                         .device = device};
    trace_event ev;
    trace_counter c;
    if (k->action == SNAPSHOT_ACTION_OTHER) /* a legacy annotation, or an unknown action */
        return user_defined(im, e);
    if (k->action == GMT_TORCH_SNAPSHOT) { /* a memory snapshot was taken here: a mark */
        trace_marker m = {.ts_ns = im->ts,
                          .name_id = str(im, "torch.cuda.memory snapshot"),
                          .kind = TRACE_MARK_MARK};
        return trace_writer_marker(im->w, &m);
    }
    if (!gmt_torch_event(&h, &ev))
        return 0; /* unknown actions carry no memory */
    if (gmt_torch_counter(&h, &c) && trace_writer_counter(im->w, &c) != 0)
        return -1;
    ev.stack_id = stack_id(im, e->stack); /* after the counter: stack records follow it */
    long entry = (long)(e - im->snap->devices[device].entries);
    ev.pool = snapshot_pools_at(im->pools, device, e->addr, entry);
    if (k->action == GMT_TORCH_SEGMENT_MAP) /* a map event per page (see resolve_pools) */
        return map_pages(im, device, entry, e->addr, e->size, gmt_torch_map_page(e->size),
                         k->stream, e->stack);
    if (trace_writer_event(im->w, &ev) != 0)
        return -1;
    /* the program's name for the block (user_metadata): only an alloc's names its block */
    return k->user_metadata && k->action == GMT_TORCH_ALLOC
               ? name_block(im, e->addr, k->user_metadata)
               : 0;
}

/* History entries of all devices and the annotations, in time order (entries
 * without time keep their order and the time of the one before). */
typedef struct cursor {
    size_t next;
} cursor;

static int write_history(importer *im) {
    const snapshot *snap = im->snap;
    cursor *cur = calloc(snap->device_count + 1, sizeof *cur);
    if (!cur)
        return -1;
    size_t ann = 0;
    uint64_t last_ts = 0;
    int rc = 0;
    for (;;) {
        /* the device whose next entry is earliest */
        int64_t best = -1, best_time = INT64_MAX;
        for (size_t d = 0; d < snap->device_count; d++) {
            const snapshot_device *dev = &snap->devices[d];
            if (cur[d].next >= dev->entry_count)
                continue;
            const snapshot_entry *e = &dev->entries[cur[d].next];
            int64_t t = (snapshot_kind(snap, e)->flags & SNAPSHOT_HAS_TIME)
                            ? e->time_us
                            : (int64_t)(last_ts / 1000);
            if (t < best_time) {
                best_time = t;
                best = (int64_t)d;
            }
        }
        if (ann < snap->annotation_count &&
            (best < 0 || snap->annotations[ann].time_us <= best_time)) {
            const snapshot_annotation *a = &snap->annotations[ann++];
            uint32_t name = str(im, a->name);
            trace_marker m = {.ts_ns = (uint64_t)(a->time_us > 0 ? a->time_us : 0) * 1000,
                              .range_id = name,
                              .name_id = name,
                              .kind = a->stage == SNAPSHOT_STAGE_END ? TRACE_MARK_RANGE_END
                                                                     : TRACE_MARK_RANGE_START};
            if (a->stage == SNAPSHOT_STAGE_OTHER)
                m.kind = TRACE_MARK_MARK;
            if ((rc = trace_writer_marker(im->w, &m)) != 0)
                break;
            continue;
        }
        if (best < 0)
            break;
        const snapshot_entry *e = &snap->devices[best].entries[cur[best].next++];
        if (snapshot_kind(snap, e)->flags & SNAPSHOT_HAS_TIME)
            im->ts = (uint64_t)(e->time_us > 0 ? e->time_us : 0) * 1000;
        else
            im->ts = last_ts + 1000; /* no time: keep the order, 1 us apart */
        last_ts = im->ts;
        if ((rc = write_entry(im, (uint32_t)best, e)) != 0)
            break;
    }
    free(cur);
    return rc;
}

static uint64_t first_time_ns(const snapshot *snap) {
    uint64_t t = UINT64_MAX;
    for (size_t d = 0; d < snap->device_count; d++)
        if (snap->devices[d].entry_count &&
            (snapshot_kind(snap, &snap->devices[d].entries[0])->flags & SNAPSHOT_HAS_TIME))
            if ((uint64_t)snap->devices[d].entries[0].time_us * 1000 < t)
                t = (uint64_t)snap->devices[d].entries[0].time_us * 1000;
    return t == UINT64_MAX ? 0 : t;
}

/* ---- facts: allocator settings, times, history ----------------------------- */

static void roundup_of(const snapshot_settings *ss, am_settings *st) {
    unsigned highest = 0;
    int any = 0, rest = -1;
    for (size_t i = 0; i < ss->roundup_count; i++) {
        int64_t divisions = ss->roundup[i].divisions;
        uint32_t d = divisions < 0 ? 0 : divisions > UINT32_MAX ? UINT32_MAX : (uint32_t)divisions;
        if (ss->roundup[i].size == UINT64_MAX) { /* ">": every interval above the others */
            rest = (int)d;
            continue;
        }
        unsigned index = am_roundup_interval_of_mib(ss->roundup[i].size);
        st->roundup_power2_divisions[index] = d;
        if (!any || index > highest)
            highest = index;
        any = 1;
    }
    for (unsigned i = any ? highest + 1 : 0; rest >= 0 && i < AM_ROUNDUP_INTERVALS; i++)
        st->roundup_power2_divisions[i] = (uint32_t)rest;
    st->known |= AM_SET_ROUNDUP;
}

/* PyTorch mapped pages: expandable segments were on (whatever the settings say). */
/* What the entries say about the whole snapshot, in one pass over them: whether memory is
 * mapped (expandable segments: a segment says so, or an entry maps or unmaps), whether any entry
 * has a time, whether there is a history at all. */
typedef struct entry_summary {
    int mapped, times, entries;
} entry_summary;

static entry_summary summarize_entries(const snapshot *snap) {
    entry_summary sum = {0, 0, 0};
    for (size_t i = 0; i < snap->segment_count; i++)
        sum.mapped |= snap->segments[i].is_expandable == 1;
    for (size_t d = 0; d < snap->device_count; d++) {
        const snapshot_device *dev = &snap->devices[d];
        sum.entries |= dev->entry_count > 0;
        for (size_t i = 0; i < dev->entry_count; i++) {
            const snapshot_entry_kind *k = snapshot_kind(snap, &dev->entries[i]);
            sum.times |= (k->flags & SNAPSHOT_HAS_TIME) != 0;
            sum.mapped |=
                k->action == GMT_TORCH_SEGMENT_MAP || k->action == GMT_TORCH_SEGMENT_UNMAP;
        }
    }
    return sum;
}

static void facts_of(const snapshot *snap, const entry_summary *sum, snapshot_facts *f) {
    const snapshot_settings *ss = &snap->settings;
    am_settings st = am_settings_default();
    if (ss->present) {
        if (ss->alloc_conf) { /* the string first: the dict's keys are the current values */
            am_settings_parse(&st, ss->alloc_conf, NULL, 0);
            snprintf(st.alloc_conf, sizeof st.alloc_conf, "%s", ss->alloc_conf);
            st.known |= AM_SET_CONF;
        }
        if (ss->has_max_split_size) {
            st.max_split_size = ss->max_split_size < 0 ? UINT64_MAX : (uint64_t)ss->max_split_size;
            st.known |= AM_SET_MAX_SPLIT;
        }
        if (ss->has_garbage_collection_threshold) {
            st.garbage_collection_threshold = ss->garbage_collection_threshold;
            st.known |= AM_SET_GC_THRESHOLD;
        }
        if (ss->expandable_segments >= 0) {
            st.expandable_segments = ss->expandable_segments;
            st.known |= AM_SET_EXPANDABLE;
        }
        if (ss->release_lock_on_cudamalloc >= 0) {
            st.release_lock_on_cudamalloc = ss->release_lock_on_cudamalloc;
            st.known |= AM_SET_RELEASE_LOCK;
        }
        if (ss->pinned_use_cuda_host_register >= 0) {
            st.pinned_use_cuda_host_register = ss->pinned_use_cuda_host_register;
            st.known |= AM_SET_PINNED_REGISTER;
        }
        if (ss->pinned_num_register_threads >= 0) {
            st.pinned_num_register_threads = (uint64_t)ss->pinned_num_register_threads;
            st.known |= AM_SET_PINNED_THREADS;
        }
        if (ss->graph_capture_record_stream_reuse >= 0) {
            st.graph_capture_record_stream_reuse = ss->graph_capture_record_stream_reuse;
            st.known |= AM_SET_GRAPH_REUSE;
        }
        if (ss->roundup_count)
            roundup_of(ss, &st);
    }
    f->settings_source = ss->present ? "snapshot" : "none";
    if (!(st.known & AM_SET_EXPANDABLE) && sum->mapped) {
        st.expandable_segments = true;
        st.known |= AM_SET_EXPANDABLE;
        if (!ss->present)
            f->settings_source = "inferred";
    }
    f->settings = st;
    f->timestamps = sum->times;
    f->history = sum->entries;
}

/* ---- the import ---------------------------------------------------------------- */

struct snapshot_import {
    snapshot *snap;
    snapshot_pools *pools;
    const char *path, *name; /* the pickle's (the caller's string); name: the command line */
    /* the devices that hold something: those with a trace, those with segments; ascending */
    struct device_seed {
        int64_t device;
        seed_state seed; /* what it holds before its history */
    } * devices;
    size_t ndevices;
};

/* The segments by device, then in their order: (device, index) pairs. A trace numbers devices
 * in 32 bits: a segment's device outside that is not one (ignored, as a negative one always
 * was). NULL when out of memory. */
static uint64_t (*segments_by_device(const snapshot *snap, size_t *n))[2] {
    uint64_t(*pairs)[2] = malloc((snap->segment_count + 1) * sizeof *pairs);
    uint64_t(*spare)[2] = malloc((snap->segment_count + 1) * sizeof *spare);
    *n = 0;
    for (size_t i = 0; pairs && spare && i < snap->segment_count; i++) {
        int64_t d = snap->segments[i].device;
        if (d >= 0 && d <= (int64_t)UINT32_MAX) {
            pairs[*n][0] = (uint64_t)d;
            pairs[(*n)++][1] = i;
        }
    }
    if (pairs && spare)
        gmt_radix_sort(pairs, spare, *n, 0, 0);
    free(spare);
    if (!spare) {
        free(pairs);
        return NULL;
    }
    return pairs;
}

/* The devices of the trace, each once, ascending: every index of device_traces merged with the
 * devices of the segments (by_dev, sorted). Bounded by what the pickle holds, however large
 * the numbers. */
static int list_devices(snapshot_import *imp, const uint64_t (*by_dev)[2], size_t nby) {
    const snapshot *snap = imp->snap;
    imp->devices = calloc(snap->device_count + nby + 1, sizeof *imp->devices);
    if (!imp->devices)
        return -1;
    size_t j = 0;
    for (int64_t d = 0; (size_t)d < snap->device_count || j < nby;) {
        int traced = (size_t)d < snap->device_count;
        int64_t next = j < nby ? (int64_t)by_dev[j][0] : INT64_MAX;
        int64_t device = traced && d <= next ? d : next;
        imp->devices[imp->ndevices++].device = device;
        if (traced && device == d)
            d++;
        while (j < nby && (int64_t)by_dev[j][0] == device)
            j++;
    }
    return 0;
}

void snapshot_import_close(snapshot_import *imp) {
    if (!imp)
        return;
    for (size_t i = 0; i < imp->ndevices; i++) {
        free(imp->devices[i].seed.blocks);
        free(imp->devices[i].seed.ranges);
        addr_map_free(&imp->devices[i].seed.live_blocks);
    }
    free(imp->devices);
    snapshot_pools_free(imp->pools);
    snapshot_free(imp->snap);
    free(imp);
}

snapshot_import *snapshot_import_open(const char *pickle_path, snapshot_facts *facts, char *err,
                                      size_t errlen) {
    snapshot *snap = snapshot_load(pickle_path, err, errlen);
    if (!snap)
        return NULL;
    snapshot_import *imp = calloc(1, sizeof *imp);
    if (!imp) {
        snapshot_free(snap);
        snprintf(err, errlen, "out of memory importing %s", pickle_path);
        return NULL;
    }
    imp->snap = snap;
    imp->path = pickle_path;
    imp->name = strrchr(pickle_path, '/') ? strrchr(pickle_path, '/') + 1 : pickle_path;
    snapshot_facts own_facts;
    if (!facts)
        facts = &own_facts;
    entry_summary sum = summarize_entries(snap);
    facts_of(snap, &sum, facts);
    /* with expandable segments on, should_split cuts any remainder of 512 bytes or more, in
     * plain segments (a private pool's) too: no seed block is wider than its rounded request */
    int splits_any_remainder = facts->settings.expandable_segments || sum.mapped;
    imp->pools = snapshot_pools_build(snap);
    /* each device's seed reads its own segments: a run of by_dev */
    size_t nby = 0, at = 0;
    uint64_t(*by_dev)[2] = segments_by_device(snap, &nby);
    int rc = imp->pools && by_dev && list_devices(imp, by_dev, nby) == 0 ? 0 : -1;
    for (size_t i = 0; i < imp->ndevices && rc == 0; i++) {
        int64_t d = imp->devices[i].device;
        seed_state *s = &imp->devices[i].seed;
        const snapshot_device *history = d < (int64_t)snap->device_count ? &snap->devices[d] : NULL;
        size_t first = at;
        while (at < nby && (int64_t)by_dev[at][0] == d)
            at++;
        rc = build_seed(snap, by_dev + first, at - first, history, s);
        if (rc == 0)
            rc = resolve_pools(snap, history, s);
        if (rc == 0)
            rc = splits_any_remainder ? 0 : widen_unsplit_blocks(snap, history, s);
    }
    free(by_dev);
    if (rc != 0) {
        snprintf(err, errlen, "out of memory importing %s", pickle_path);
        snapshot_import_close(imp);
        return NULL;
    }
    return imp;
}

int snapshot_import_write(snapshot_import *imp, trace_writer *w, char *err, size_t errlen) {
    const snapshot *snap = imp->snap;
    importer im = {.snap = snap, .w = w, .pools = imp->pools};
    im.stack_ids = calloc(snap->stack_count + 1, sizeof *im.stack_ids);
    im.frame_ids = calloc(snap->frame_count + 1, sizeof *im.frame_ids);
    int rc = im.stack_ids && im.frame_ids ? 0 : -1;
    trace_process p = {.rank = -1,
                       .cmdline = {imp->name, (uint32_t)strlen(imp->name)},
                       .clock_source = {"time_us", 7},
                       .producer = {"pytorch-snapshot", 16}};
    if (rc == 0)
        rc = trace_writer_process(w, &p);
    im.ts = first_time_ns(snap);
    /* Every device from 0 to the last one that holds something is named (the database lists
     * them), among those an analysis follows (GMT_MAX_DEVICES); past those, only the devices
     * that hold something (whose events the replay then reports as ignored). */
    size_t next = 0;
    for (int64_t d = 0; rc == 0 && next < imp->ndevices; d++) {
        int holds = imp->devices[next].device == d;
        if (!holds && (d >= GMT_MAX_DEVICES || imp->devices[next].device >= GMT_MAX_DEVICES)) {
            d = imp->devices[next].device - 1; /* on to the next that holds something */
            continue;
        }
        char name[32];
        snprintf(name, sizeof name, "cuda:%lld", (long long)d);
        trace_device dev = {.device = (uint32_t)d, .name = {name, (uint32_t)strlen(name)}};
        rc = trace_writer_device(w, &dev);
        if (rc == 0 && holds)
            rc = write_seed(&im, (uint32_t)d, &imp->devices[next++].seed);
    }
    if (rc == 0) {
        trace_marker seed_end = {.ts_ns = im.ts, .kind = TRACE_MARK_SEED_END};
        rc = trace_writer_marker(w, &seed_end);
    }
    if (rc == 0)
        rc = write_history(&im);
    if (rc != 0 && trace_writer_error(w)[0])
        snprintf(err, errlen, "%s", trace_writer_error(w));
    else if (rc != 0)
        snprintf(err, errlen, "out of memory importing %s", imp->path);
    free(im.stack_ids);
    free(im.frame_ids);
    return rc;
}

int snapshot_import_source(void *imp, trace_record_sink sink, void *sink_ctx, char *err,
                           size_t errlen) {
    trace_writer *w = trace_writer_open_sink(sink, sink_ctx, err, errlen);
    if (!w)
        return -1;
    int rc = snapshot_import_write(imp, w, err, errlen);
    char cerr[256];
    if (trace_writer_close(w, NULL, cerr, sizeof cerr) != 0 && rc == 0) {
        snprintf(err, errlen, "%s", cerr);
        rc = -1;
    }
    return rc;
}

int snapshot_import_file_facts(const char *pickle_path, const char *trace_path,
                               snapshot_facts *facts, char *err, size_t errlen) {
    snapshot_import *imp = snapshot_import_open(pickle_path, facts, err, errlen);
    if (!imp)
        return -1;
    trace_writer_options wopt = {.zstd_level = 1}; /* a temporary file: speed first */
    trace_writer *w = trace_writer_open(trace_path, &wopt, err, errlen);
    int rc = w ? snapshot_import_write(imp, w, err, errlen) : -1;
    char cerr[256];
    if (w && trace_writer_close(w, NULL, cerr, sizeof cerr) != 0 && rc == 0) {
        snprintf(err, errlen, "%s", cerr);
        rc = -1;
    }
    snapshot_import_close(imp);
    return rc;
}

int snapshot_import_file(const char *pickle_path, const char *trace_path, char *err,
                         size_t errlen) {
    return snapshot_import_file_facts(pickle_path, trace_path, NULL, err, errlen);
}
