/* replay_names.c — tensor names bound to blocks (TRACE_FORMAT.md, "Tensor names").
 *
 * A mark of the domain memrec.tensor says that the storage at an address is a named tensor.
 * The name binds to what is live at that address when the mark is replayed: a block, or a
 * segment that is one block (a plain cudaMalloc). CUDA's unified addressing gives every
 * device its own addresses, so the devices are searched in turn. The row goes to
 * tensor_names, keyed by the block's alloc event; nothing else of the replay changes, and
 * the mark makes no markers row (a run names thousands of tensors per step). */
#include "replay_state.h"

#include "gmt_vocab.h"

#include <stdlib.h>
#include <string.h>

/* The live block (or whole-block segment) at addr on any device, or NULL. */
static const live_entry *block_at(replay *rp, uint64_t addr) {
    for (uint32_t d = 0; d < GMT_MAX_DEVICES; d++) {
        if (!rp->dev[d].present)
            continue;
        const live_entry *e = live_get(rp, d, SPACE_BLOCK, addr);
        if (e)
            return e;
        e = live_get(rp, d, SPACE_SEGMENT, addr);
        if (e && e->whole_block)
            return e;
    }
    return NULL;
}

int replay_on_tensor_name(replay *rp, const trace_marker *m) {
    const char *text = replay_string(rp, m->name_id);
    const live_entry *e = text && text[0] ? block_at(rp, (uint64_t)m->value) : NULL;
    if (!e)
        return 0; /* nothing live there (the block ended, or its alloc was never seen) */
    /* "<category> <name>[ <count>]", or a name alone */
    const char *space = strchr(text, ' ');
    int category = space ? gmt_category_from_name(text, (size_t)(space - text)) : -1;
    const char *name = category >= 0 ? space + 1 : text;
    int64_t tensors = 1;
    char buf[1024];
    if (category >= 0) {
        const char *last = strrchr(name, ' ');
        char *end = NULL;
        long long n = last ? strtoll(last + 1, &end, 10) : 0;
        /* a count past what any storage holds is part of the name, not a count */
        if (last && end && *end == '\0' && end != last + 1 && n > 1 && n < (1LL << 32) &&
            (size_t)(last - name) < sizeof buf) {
            memcpy(buf, name, (size_t)(last - name));
            buf[last - name] = '\0';
            name = buf;
            tensors = n;
        }
    }
    if (!name[0])
        return 0;
    return replay_db_ok(rp,
                        db_writer_tensor_name(rp->db, e->event_id, name,
                                              category >= 0 ? gmt_category_name(category) : NULL,
                                              tensors, replay_ts(rp, m->ts_ns)));
}
