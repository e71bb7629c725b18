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
 * Sizes: PyTorch's history records requested sizes. Seed blocks from the
 * final state carry their real (allocator) size; the others carry the
 * rounded request, and the replay applies the allocator's split rule. What
 * each history entry becomes is model/torch_history.h's rule, the one the
 * recorder applies to live history. */
#include "snapshot_import.h"

#include "addr_map.h"
#include "gmt_grow.h"
#include "snapshot.h"
#include "torch_history.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the state while walking backwards ---------------------------------- */

typedef struct seed_block {
    uint64_t addr, size, requested, stream;
    uint32_t stack;
    int pending, live;
} seed_block;

typedef struct seed_range {
    uint64_t addr, size, stream;
    uint32_t stack;
    int expandable, live;
} seed_range;

typedef struct seed_state {
    seed_block *blocks;
    size_t nblocks, cap_blocks;
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

static int add_block(seed_state *s, const seed_block *b) {
    if (addr_map_put(&s->live_blocks, 0, b->addr, (uint32_t)s->nblocks) != 0 ||
        gmt_grow((void **)&s->blocks, &s->cap_blocks, s->nblocks, sizeof *s->blocks) != 0)
        return -1;
    s->blocks[s->nblocks++] = *b;
    return 0;
}

static void drop_block(seed_state *s, seed_block *b) {
    b->live = 0;
    addr_map_remove(&s->live_blocks, 0, b->addr);
}

/* Segments are few next to blocks (hundreds to thousands): a linear search
 * over them is cheaper than keeping an ordered index of ranges. */
static seed_range *find_range(seed_state *s, uint64_t addr) {
    for (size_t i = s->nranges; i-- > 0;)
        if (s->ranges[i].live && s->ranges[i].addr <= addr &&
            addr < s->ranges[i].addr + s->ranges[i].size)
            return &s->ranges[i];
    return NULL;
}

/* Removes [addr, addr+size) from the live ranges (a map undone). */
static int cut_range(seed_state *s, uint64_t addr, uint64_t size) {
    seed_range *r = find_range(s, addr);
    if (!r)
        return 0;
    uint64_t end = addr + size, r_end = r->addr + r->size;
    if (end > r_end)
        end = r_end;
    seed_range tail = *r;
    r->size = addr - r->addr;
    if (r->size == 0)
        r->live = 0;
    if (end < r_end) {
        tail.addr = end;
        tail.size = r_end - end;
        return add_range(s, &tail);
    }
    return 0;
}

static int build_seed(const snapshot *snap, int64_t device, const snapshot_device *dev,
                      seed_state *s) {
    for (size_t i = 0; i < snap->segment_count; i++) {
        const snapshot_segment *seg = &snap->segments[i];
        if (seg->device != device)
            continue;
        seed_range r = {seg->address, seg->total_size,         seg->stream,
                        seg->stack,   seg->is_expandable == 1, 1};
        if (add_range(s, &r) != 0)
            return -1;
        for (size_t k = 0; k < seg->block_count; k++) {
            const snapshot_block *b = &seg->blocks[k];
            if (b->state == SNAPSHOT_BLOCK_INACTIVE || b->state == SNAPSHOT_BLOCK_OTHER)
                continue;
            seed_block sb = {b->address,
                             b->size,
                             b->requested_size,
                             seg->stream,
                             b->stack,
                             b->state == SNAPSHOT_BLOCK_ACTIVE_PENDING_FREE,
                             1};
            if (add_block(s, &sb) != 0)
                return -1;
        }
    }
    for (size_t i = dev ? dev->entry_count : 0; i-- > 0;) {
        const snapshot_entry *e = &dev->entries[i];
        seed_block *b;
        seed_range r = {e->addr, e->size, e->stream, e->stack, 0, 1};
        switch (e->action) {
        case GMT_TORCH_ALLOC:
            if ((b = find_block(s, e->addr)))
                drop_block(s, b);
            break;
        case GMT_TORCH_FREE_REQUESTED:
            if ((b = find_block(s, e->addr)))
                b->pending = 0;
            break;
        case GMT_TORCH_FREE_COMPLETED: {
            seed_block nb = {
                e->addr, gmt_torch_block_size(e->size), e->size, e->stream, e->stack, 1, 1};
            if ((b = find_block(s, e->addr))) /* inconsistent history: keep the newer */
                drop_block(s, b);
            if (add_block(s, &nb) != 0)
                return -1;
            break;
        }
        case GMT_TORCH_SEGMENT_ALLOC:
            for (size_t k = s->nranges; k-- > 0;)
                if (s->ranges[k].live && s->ranges[k].addr == e->addr) {
                    s->ranges[k].live = 0;
                    break;
                }
            break;
        case GMT_TORCH_SEGMENT_FREE:
            if (add_range(s, &r) != 0)
                return -1;
            break;
        case GMT_TORCH_SEGMENT_MAP:
            if (cut_range(s, e->addr, e->size) != 0)
                return -1;
            break;
        case GMT_TORCH_SEGMENT_UNMAP:
            r.expandable = 1;
            if (add_range(s, &r) != 0)
                return -1;
            break;
        default:
            break;
        }
    }
    return 0;
}

/* ---- writing ---------------------------------------------------------------- */

typedef struct importer {
    const snapshot *snap;
    trace_writer *w;
    uint32_t *stack_ids; /* snapshot stack -> trace stack (0 = not yet) */
    uint32_t *frame_ids; /* snapshot frame -> trace frame */
    uint64_t ts;         /* the time of the record being written */
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

static int event(importer *im, uint32_t device, trace_op op, trace_level level, uint64_t addr,
                 uint64_t size, uint64_t requested, uint64_t stream, uint32_t stack) {
    trace_event ev = {.ts_ns = im->ts,
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

static int write_seed(importer *im, uint32_t device, const seed_state *s) {
    int rc = 0;
    for (size_t i = 0; i < s->nranges && rc == 0; i++) {
        const seed_range *r = &s->ranges[i];
        if (r->live && r->size)
            rc = event(im, device, r->expandable ? TRACE_OP_MAP : TRACE_OP_ALLOC,
                       TRACE_LEVEL_SEGMENT, r->addr, r->size, r->size, r->stream, r->stack);
    }
    for (size_t i = 0; i < s->nblocks && rc == 0; i++) {
        const seed_block *b = &s->blocks[i];
        if (!b->live)
            continue;
        rc = event(im, device, TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, b->addr, b->size,
                   b->requested ? b->requested : b->size, b->stream, b->stack);
        if (rc == 0 && b->pending)
            rc = event(im, device, TRACE_OP_FREE_REQUESTED, TRACE_LEVEL_BLOCK, b->addr, b->size,
                       b->requested, b->stream, 0);
    }
    return rc;
}

/* One history entry, by model/torch_history.h's rules (the recorder's too). */
static int write_entry(importer *im, uint32_t device, const snapshot_entry *e) {
    gmt_torch_entry h = {.action = e->action,
                         .addr = e->addr,
                         .size = e->size,
                         .stream = e->stream,
                         .device_free = e->device_free,
                         .ts_ns = im->ts,
                         .device = device};
    trace_event ev;
    trace_counter c;
    if (!gmt_torch_event(&h, &ev))
        return 0; /* snapshot markers and unknown actions carry no memory */
    if (gmt_torch_counter(&h, &c) && trace_writer_counter(im->w, &c) != 0)
        return -1;
    ev.stack_id = stack_id(im, e->stack); /* after the counter: stack records follow it */
    return trace_writer_event(im->w, &ev);
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
            int64_t t = (e->flags & SNAPSHOT_HAS_TIME) ? e->time_us : (int64_t)(last_ts / 1000);
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
        if (e->flags & SNAPSHOT_HAS_TIME)
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
        if (snap->devices[d].entry_count && (snap->devices[d].entries[0].flags & SNAPSHOT_HAS_TIME))
            if ((uint64_t)snap->devices[d].entries[0].time_us * 1000 < t)
                t = (uint64_t)snap->devices[d].entries[0].time_us * 1000;
    return t == UINT64_MAX ? 0 : t;
}

int snapshot_import_file(const char *pickle_path, const char *trace_path, char *err,
                         size_t errlen) {
    snapshot *snap = snapshot_load(pickle_path, err, errlen);
    if (!snap)
        return -1;
    trace_writer_options wopt = {.zstd_level = 1}; /* a temporary file: speed first */
    trace_writer *w = trace_writer_open(trace_path, &wopt, err, errlen);
    if (!w) {
        snapshot_free(snap);
        return -1;
    }
    importer im = {.snap = snap, .w = w};
    im.stack_ids = calloc(snap->stack_count + 1, sizeof *im.stack_ids);
    im.frame_ids = calloc(snap->frame_count + 1, sizeof *im.frame_ids);
    int rc = im.stack_ids && im.frame_ids ? 0 : -1;

    /* Devices: those with a trace, and those that only have segments. */
    int64_t ndev = (int64_t)snap->device_count;
    for (size_t i = 0; i < snap->segment_count; i++)
        if (snap->segments[i].device + 1 > ndev)
            ndev = snap->segments[i].device + 1;
    const char *base = strrchr(pickle_path, '/') ? strrchr(pickle_path, '/') + 1 : pickle_path;
    trace_process p = {.rank = -1,
                       .cmdline = {base, (uint32_t)strlen(base)},
                       .clock_source = {"time_us", 7},
                       .producer = {"pytorch-snapshot", 16}};
    if (rc == 0)
        rc = trace_writer_process(w, &p);
    im.ts = first_time_ns(snap);
    for (int64_t d = 0; d < ndev && rc == 0; d++) {
        char name[32];
        snprintf(name, sizeof name, "cuda:%lld", (long long)d);
        trace_device dev = {.device = (uint32_t)d, .name = {name, (uint32_t)strlen(name)}};
        rc = trace_writer_device(w, &dev);
        seed_state s = {0};
        if (rc == 0)
            rc =
                build_seed(snap, d, d < (int64_t)snap->device_count ? &snap->devices[d] : NULL, &s);
        if (rc == 0)
            rc = write_seed(&im, (uint32_t)d, &s);
        free(s.blocks);
        free(s.ranges);
        addr_map_free(&s.live_blocks);
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
        snprintf(err, errlen, "out of memory importing %s", pickle_path);
    char cerr[256];
    if (trace_writer_close(w, NULL, cerr, sizeof cerr) != 0 && rc == 0) {
        snprintf(err, errlen, "%s", cerr);
        rc = -1;
    }
    free(im.stack_ids);
    free(im.frame_ids);
    snapshot_free(snap);
    return rc;
}
