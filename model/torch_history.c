/* torch_history.c — PyTorch's history entries as trace events: the table and
 * the one conversion (torch_history.h). Pure functions: the recorder calls
 * them once per entry of a drain, so nothing here allocates or locks. */
#include "torch_history.h"

#include "alloc_model.h"

#include <string.h>

const gmt_torch_rule gmt_torch_rules[GMT_TORCH_ACTION_COUNT] = {
    [GMT_TORCH_ALLOC] = {"alloc", 1, TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, 1},
    [GMT_TORCH_FREE_REQUESTED] = {"free_requested", 1, TRACE_OP_FREE_REQUESTED, TRACE_LEVEL_BLOCK,
                                  1},
    [GMT_TORCH_FREE_COMPLETED] = {"free_completed", 1, TRACE_OP_FREE, TRACE_LEVEL_BLOCK, 1},
    [GMT_TORCH_SEGMENT_ALLOC] = {"segment_alloc", 1, TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, 0},
    [GMT_TORCH_SEGMENT_FREE] = {"segment_free", 1, TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, 0},
    [GMT_TORCH_SEGMENT_MAP] = {"segment_map", 1, TRACE_OP_MAP, TRACE_LEVEL_SEGMENT, 0},
    [GMT_TORCH_SEGMENT_UNMAP] = {"segment_unmap", 1, TRACE_OP_UNMAP, TRACE_LEVEL_SEGMENT, 0},
    [GMT_TORCH_OOM] = {"oom", 1, TRACE_OP_OOM, TRACE_LEVEL_BLOCK, 1},
    [GMT_TORCH_SNAPSHOT] = {"snapshot", 0, 0, 0, 0},
};

int gmt_torch_action_named(const char *name) {
    for (int a = 0; name && a < GMT_TORCH_ACTION_COUNT; a++)
        if (strcmp(gmt_torch_rules[a].name, name) == 0)
            return a;
    return -1;
}

const char *gmt_torch_action_name(unsigned action) {
    return action < GMT_TORCH_ACTION_COUNT ? gmt_torch_rules[action].name : NULL;
}

uint64_t gmt_torch_block_size(uint64_t size) { return am_round_size(size ? size : 1); }

int gmt_torch_event(const gmt_torch_entry *e, trace_event *ev) {
    if (e->action >= GMT_TORCH_ACTION_COUNT || !gmt_torch_rules[e->action].emits)
        return 0;
    const gmt_torch_rule *r = &gmt_torch_rules[e->action];
    uint64_t requested = r->rounded && e->size == 0 ? 1 : e->size; /* a zero request counts as 1 */
    *ev = (trace_event){
        .ts_ns = e->ts_ns,
        .addr = e->action == GMT_TORCH_OOM ? 0 : e->addr,
        .size = r->rounded ? gmt_torch_block_size(e->size) : e->size,
        .requested = requested,
        .stream = e->stream,
        .pool = e->pool,
        .stack_id = e->stack_id,
        .device = e->device,
        .op = r->op,
        .level = r->level,
        .kind = TRACE_KIND_DEVICE,
        .source = TRACE_SOURCE_TORCH,
    };
    return 1;
}

int gmt_torch_counter(const gmt_torch_entry *e, trace_counter *c) {
    if (e->action != GMT_TORCH_OOM)
        return 0;
    *c = (trace_counter){.ts_ns = e->ts_ns,
                         .device = e->device,
                         .kind = TRACE_COUNTER_DRIVER_FREE,
                         .value = e->device_free};
    return 1;
}

uint64_t gmt_torch_map_page(uint64_t size) { return am_expandable_page(size % AM_PAGE_LARGE != 0); }
