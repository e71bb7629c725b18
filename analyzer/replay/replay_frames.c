/* replay_frames.c — the trace's frames, symbols and stacks as `frames` and
 * `stacks` rows, with every native inline chain expanded into frames of its
 * own.
 *
 * A native frame's SYMBOL record is the inline chain at its ip: the inlined
 * callees innermost first, the function that really holds the ip last. If
 * only the innermost entry named the frame, a call made from an inlined
 * helper (memrec.h's memrec_region_alloc, a std:: wrapper) would be reported
 * at the helper and its real caller lost. So each entry is a frame:
 *
 *   - frames: the trace's frame id names the function that holds the ip
 *     (inlined 0); each inlined entry gets a row of its own with a
 *     replay-made id, inlined 1 and inlined_into = the row of the next outer
 *     entry (same module and ip);
 *   - stacks: a trace node whose frame has a chain of k entries becomes k
 *     nodes. The trace's node id keeps the innermost entry, so the stack ids
 *     events carry (the trace's) still mean "the stack of the call"; k - 1
 *     replay-made nodes carry the outer entries, the outermost of them
 *     pointing at the trace node's parent. event_rows does not change.
 *
 * Order: a SYMBOL record may come after the stacks that use its frame, and
 * after the END record (the symbolizer appends them). Nothing is written
 * until the whole trace is read: frames and stacks are small, kept in memory
 * and written by replay_write_frames at the end, frames in order of id.
 *
 * Memory follows the records, not the ids: frames and modules are kept in
 * the order their ids first came and found through a hash of the id, stacks
 * as their records. An id is whatever 32-bit number a record names, so a
 * table indexed by id would let 38 bytes naming frame 2^26 take gigabytes.
 *
 * Replay-made ids start at REPLAY_MADE_ID_BASE = 2^32, above every id a
 * trace can hold (its ids are 32-bit), so they never meet an id that a lost
 * record left dangling in an event. */
#include "replay_state.h"

#include "gmt_grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLAY_MADE_ID_BASE ((int64_t)1 << 32)

/* The frame of `id`, made (unknown, no chain) when no record named it before. NULL when out
 * of memory (through replay_fail). */
static struct frame_info *frame_slot(replay *rp, uint32_t id) {
    uint32_t *at = addr_map_get(&rp->frame_index, 0, id);
    if (at)
        return &rp->frames[*at];
    if (gmt_grow_uninit((void **)&rp->frames, &rp->frames_cap, rp->frames_len, sizeof *rp->frames,
                        0) != 0 ||
        addr_map_put(&rp->frame_index, 0, id, (uint32_t)rp->frames_len) != 0) {
        replay_fail(rp, "out of memory");
        return NULL;
    }
    struct frame_info *fi = &rp->frames[rp->frames_len++];
    memset(fi, 0, sizeof *fi);
    fi->frame.frame_id = id;
    return fi;
}

static const struct frame_info *frame_find(const replay *rp, uint32_t id) {
    const uint32_t *at = addr_map_get(&rp->frame_index, 0, id);
    return at ? &rp->frames[*at] : NULL;
}

int replay_on_frame(replay *rp, const trace_frame *f) {
    struct frame_info *fi = frame_slot(rp, f->frame_id);
    if (!fi)
        return -1;
    fi->frame = *f;
    fi->known = 1;
    return 0;
}

int replay_on_symbol(replay *rp, const trace_symbol *s) {
    uint32_t count = s->count < TRACE_SYMBOL_MAX_INLINE ? s->count : TRACE_SYMBOL_MAX_INLINE;
    if (count == 0 || s->frame_id == 0)
        return 0;
    struct frame_info *fi = frame_slot(rp, s->frame_id);
    if (!fi)
        return -1;
    /* A later symbol of the same frame replaces the earlier one; the
     * entries it leaves behind are a few bytes. */
    if (gmt_grow((void **)&rp->chains, &rp->chains_cap, rp->chains_len + count - 1,
                 sizeof *rp->chains) != 0)
        return replay_fail(rp, "out of memory");
    memcpy(rp->chains + rp->chains_len, s->entries, count * sizeof *s->entries);
    fi->chain_first = (uint32_t)rp->chains_len;
    fi->chain_count = count;
    rp->chains_len += count;
    return 0;
}

int replay_on_stack(replay *rp, const trace_stack *s) {
    if (gmt_grow((void **)&rp->stacks, &rp->stacks_cap, rp->stacks_len, sizeof *rp->stacks) != 0)
        return replay_fail(rp, "out of memory");
    rp->stacks[rp->stacks_len++] = *s;
    return 0;
}

int replay_on_module(replay *rp, const trace_module *m) {
    char hex[2 * 64 + 1] = "";
    for (uint32_t i = 0; i < m->build_id.len && i < 64; i++)
        snprintf(hex + 2 * i, 3, "%02x", (uint8_t)m->build_id.ptr[i]);
    char *path = strdup(m->path.ptr);
    if (!path)
        return replay_fail(rp, "out of memory");
    uint32_t *at = addr_map_get(&rp->module_index, 0, m->module_id);
    if (at) { /* a module record again: the later path */
        free(rp->modules[*at].path);
        rp->modules[*at].path = path;
    } else if (gmt_grow_uninit((void **)&rp->modules, &rp->modules_cap, rp->modules_len,
                               sizeof *rp->modules, 0) != 0 ||
               addr_map_put(&rp->module_index, 0, m->module_id, (uint32_t)rp->modules_len) != 0) {
        free(path);
        return replay_fail(rp, "out of memory");
    } else {
        rp->modules[rp->modules_len++] = (struct module_info){m->module_id, path};
    }
    return replay_db_ok(rp, db_writer_module(rp->db, m->module_id, m->path.ptr, hex[0] ? hex : NULL,
                                             (int64_t)m->base));
}

static const char *module_path(const replay *rp, uint32_t id) {
    const uint32_t *at = addr_map_get(&rp->module_index, 0, id);
    return at ? rp->modules[*at].path : NULL;
}

/* One frames row; `into` DB_NULL for a frame that is not inlined. */
static int write_frame(replay *rp, int64_t frame_id, const trace_symbol_entry *name,
                       const char *module, int64_t ip, int64_t into) {
    return replay_db_ok(rp, db_writer_frame(rp->db, frame_id, replay_string(rp, name->function_id),
                                            replay_string(rp, name->file_id),
                                            name->line ? (int64_t)name->line : DB_NULL, module, ip,
                                            into));
}

/* The rows of one frame: the holder under the trace's id, then the inlined
 * entries under replay-made ids from *next_id, innermost first. */
static int write_frame_rows(replay *rp, struct frame_info *fi, int64_t *next_id) {
    const trace_frame *f = &fi->frame;
    uint32_t id = f->frame_id;
    /* A symbol whose frame record was lost still names a native frame. */
    int native = !fi->known || f->kind == TRACE_FRAME_NATIVE;
    uint32_t n = native ? fi->chain_count : 0;
    const trace_symbol_entry *chain = n ? rp->chains + fi->chain_first : NULL;
    const char *module = fi->known && native ? module_path(rp, f->module_id) : NULL;
    int64_t ip = fi->known && native ? (int64_t)f->ip : DB_NULL;
    trace_symbol_entry holder = {f->function_id, f->file_id, f->line};
    if (n && chain[n - 1].function_id)
        holder = chain[n - 1];
    if (write_frame(rp, id, &holder, module, ip, DB_NULL) != 0)
        return -1;
    fi->inline_first = n > 1 ? *next_id : 0;
    for (uint32_t i = 0; i + 1 < n; i++) {
        int64_t into = i + 2 < n ? *next_id + 1 : (int64_t)id;
        if (write_frame(rp, (*next_id)++, &chain[i], module, ip, into) != 0)
            return -1;
    }
    return 0;
}

/* The rows of one trace stack node: its inlined entries first (the trace's
 * id on the innermost), then the holder, whose parent is the trace's. */
static int write_stack_rows(replay *rp, const trace_stack *s, int64_t *next_id) {
    const struct frame_info *fi = frame_find(rp, s->frame_id);
    uint32_t inlined = fi && fi->inline_first ? fi->chain_count - 1 : 0;
    int64_t node = s->stack_id;
    for (uint32_t i = 0; i < inlined; i++) {
        int64_t outer = (*next_id)++;
        if (replay_db_ok(rp, db_writer_stack(rp->db, node, outer, fi->inline_first + i)) != 0)
            return -1;
        node = outer;
    }
    return replay_db_ok(rp, db_writer_stack(rp->db, node, s->parent_id ? s->parent_id : DB_NULL,
                                            s->frame_id ? s->frame_id : DB_NULL));
}

static int by_frame_id(const void *a, const void *b) {
    uint32_t x = ((const struct frame_info *)a)->frame.frame_id;
    uint32_t y = ((const struct frame_info *)b)->frame.frame_id;
    return x < y ? -1 : x > y;
}

int replay_write_frames(replay *rp) {
    /* in order of id, as a table by id would have them (the replay-made ids follow it), and
     * the index made again for the stacks' lookups */
    if (rp->frames_len > 1)
        qsort(rp->frames, rp->frames_len, sizeof *rp->frames, by_frame_id);
    addr_map_free(&rp->frame_index);
    for (size_t i = 0; i < rp->frames_len; i++)
        if (addr_map_put(&rp->frame_index, 0, rp->frames[i].frame.frame_id, (uint32_t)i) != 0)
            return replay_fail(rp, "out of memory");
    int64_t next_frame = REPLAY_MADE_ID_BASE, next_stack = REPLAY_MADE_ID_BASE;
    for (size_t i = 0; i < rp->frames_len; i++) {
        struct frame_info *fi = &rp->frames[i];
        if (fi->frame.frame_id && (fi->known || fi->chain_count) &&
            write_frame_rows(rp, fi, &next_frame) != 0)
            return -1;
    }
    for (size_t i = 0; i < rp->stacks_len; i++)
        if (write_stack_rows(rp, &rp->stacks[i], &next_stack) != 0)
            return -1;
    return 0;
}

void replay_frames_free(replay *rp) {
    for (size_t i = 0; i < rp->modules_len; i++)
        free(rp->modules[i].path);
    free(rp->modules);
    addr_map_free(&rp->module_index);
    free(rp->frames);
    addr_map_free(&rp->frame_index);
    free(rp->chains);
    free(rp->stacks);
}
