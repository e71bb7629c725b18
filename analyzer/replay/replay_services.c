/* replay_services.c — what every part of the replay calls: the first error,
 * warnings, strings, and the table of live allocations (see replay_state.h).
 *
 * The replay's files call down into this one and never into each other's
 * drivers: replay.c reads records and calls replay_memory.c, replay_frames.c
 * and replay_rows.c, and all four use these services. */
#include "replay_state.h"

#include "gmt_assert.h"
#include "gmt_grow.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int replay_fail(replay *rp, const char *fmt, ...) {
    if (!rp->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rp->err, rp->errlen, fmt, ap);
        va_end(ap);
        rp->failed = 1;
    }
    return -1;
}

int replay_db_ok(replay *rp, int rc) {
    if (rc != 0)
        return replay_fail(rp, "%s", db_writer_error(rp->db));
    return 0;
}

void replay_warn(replay *rp, int64_t event_id, db_warning kind, const char *fmt, ...) {
    rp->warnings_total++;
    if (rp->warn_counts[kind]++ >= WARNINGS_PER_CODE)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    replay_db_ok(rp, db_writer_warning(rp->db, event_id, db_warning_name(kind), msg));
}

const char *replay_string(const replay *rp, uint32_t id) {
    return id ? replay_strings_get(rp->strings, id) : NULL;
}

uint64_t replay_space_key(uint32_t device, enum space space) {
    return (uint64_t)device * SPACE_COUNT + space;
}

live_entry *live_get(replay *rp, uint32_t device, enum space space, uint64_t addr) {
    uint32_t *v = addr_map_get(&rp->live, replay_space_key(device, space), addr);
    return v ? &rp->entries[*v] : NULL;
}

live_entry *live_new(replay *rp, uint32_t device, enum space space, uint64_t addr) {
    uint32_t index;
    if (rp->free_entry) {
        index = rp->free_entry - 1;
        rp->free_entry = rp->entries[index].next_free;
    } else {
        if (gmt_grow((void **)&rp->entries, &rp->entries_cap, rp->entries_len,
                     sizeof *rp->entries) != 0) {
            replay_fail(rp, "out of memory");
            return NULL;
        }
        index = (uint32_t)rp->entries_len++;
    }
    if (addr_map_put(&rp->live, replay_space_key(device, space), addr, index) != 0) {
        replay_fail(rp, "out of memory");
        return NULL;
    }
    live_entry *e = &rp->entries[index];
    memset(e, 0, sizeof *e);
    e->device = device;
    e->space = (uint8_t)space;
    e->addr = addr;
    return e;
}

void live_drop(replay *rp, live_entry *e) {
    addr_map_remove(&rp->live, replay_space_key(e->device, (enum space)e->space), e->addr);
    uint32_t index = (uint32_t)(e - rp->entries);
    e->next_free = rp->free_entry;
    rp->free_entry = index + 1;
}

uint32_t live_tag(const replay *rp, const live_entry *e) { return (uint32_t)(e - rp->entries) + 1; }

/* ---- invariants --------------------------------------------------------- */

void replay_check_invariants(replay *rp, uint32_t device, int64_t event_id) {
    device_state *d = &rp->dev[device];
    am_stats_info st = am_stats(d->model);
    uint64_t allocated = st.allocated_bytes + d->orphan_allocated;
    uint64_t requested = st.requested_bytes + d->orphan_requested;
    uint64_t reserved = st.reserved_bytes; /* VMM: physical memory, as the rows count it */
    if (d->uses_phys)
        reserved = reserved - d->mapped_bytes + d->phys_bytes;
    int over = allocated > reserved;
    if (over && !d->over_reserved)
        replay_warn(rp, event_id, DB_WARNING_ALLOCATED_ABOVE_RESERVED,
                    "device %u: %llu bytes allocated, %llu reserved", device,
                    (unsigned long long)allocated, (unsigned long long)reserved);
    d->over_reserved = (uint8_t)over;
    over = requested > allocated;
    if (over && !d->over_allocated)
        replay_warn(rp, event_id, DB_WARNING_REQUESTED_ABOVE_ALLOCATED,
                    "device %u: %llu bytes requested, %llu allocated", device,
                    (unsigned long long)requested, (unsigned long long)allocated);
    d->over_allocated = (uint8_t)over;
}

void replay_check_layouts(replay *rp, const char *when) {
    /* the model refuses what would break its layout (a refusal is a warning of its own):
     * a failed self-check is a bug in the model, whatever the trace */
    for (uint32_t i = 0; i < GMT_MAX_DEVICES; i++)
        if (rp->dev[i].model && GMT_NEVER(am_validate(rp->dev[i].model) != AM_OK))
            replay_warn(rp, DB_NULL, DB_WARNING_LAYOUT_INVALID,
                        "device %u: the replay's layout failed its self-check %s", i, when);
}
