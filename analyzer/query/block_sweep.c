/* block_sweep.c — see block_sweep.h. One forward pass over the device's events through
 * event_scan (the store's chunks decoded directly); a free learns its allocation's stack and
 * stream from the allocations still live in the pass, kept by event id. Every allocation comes
 * before its free in the pass (it starts at the first row, seed rows included), so no lookup
 * of the event table is needed: through SQL the join cost a point lookup per free. */
#include "block_sweep.h"

#include "addr_map.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_slots.h"
#include "trace_format.h"

#include <stdlib.h>

enum { ID, OP, SIZE, STACK, STREAM, REQUESTED, ALLOC, LEVEL, KIND, DEVICE, NCOL };
static const int sweep_columns[NCOL] = {EVENT_COL_event_id,       EVENT_COL_op,
                                        EVENT_COL_size,           EVENT_COL_stack_id,
                                        EVENT_COL_stream,         EVENT_COL_requested_size,
                                        EVENT_COL_alloc_event_id, EVENT_COL_level,
                                        EVENT_COL_kind,           EVENT_COL_device};

typedef struct live_alloc {
    int64_t stack_id, stream, requested;
} live_alloc;

struct block_sweep {
    event_scan *scan;
    int device;
    addr_map whole;   /* segment ids of whole-block segments (a plain cudaMalloc) */
    addr_map live;    /* allocation event id -> slot + 1 in allocs */
    gmt_slots allocs; /* live_alloc records */
    const int64_t *v[NCOL];
    long n, at;
};

int block_sweep_whole_segments(sqlite3 *db, addr_map *out) {
    sqlite3_stmt *st = db_statement(db, "SELECT segment_id FROM segments WHERE whole_block = 1");
    int ok = st != NULL, failed = 0;
    while (ok && db_next_row(st, &failed))
        ok = addr_map_put(out, 0, (uint64_t)sqlite3_column_int64(st, 0), 1) == 0;
    sqlite3_finalize(st);
    return ok && !failed ? 0 : -1;
}

block_sweep *block_sweep_open(sqlite3 *db, int device, int64_t to) {
    block_sweep *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->device = device;
    s->allocs = (gmt_slots)GMT_SLOTS_INIT(live_alloc);
    char err[256];
    if (block_sweep_whole_segments(db, &s->whole) == 0)
        s->scan = event_scan_open(db, event_scan_mask(sweep_columns, NCOL), INT64_MIN, to, err,
                                  sizeof err);
    if (!s->scan) {
        block_sweep_close(s);
        return NULL;
    }
    return s;
}

/* Memory handed to the program: an allocator block, or a segment nobody sub-allocates. */
static int is_block(const block_sweep *s, long r) {
    return s->v[LEVEL][r] == TRACE_LEVEL_BLOCK ||
           addr_map_get((addr_map *)&s->whole, 0, (uint64_t)s->v[ID][r]) != NULL;
}

static int keep_alloc(block_sweep *s, int64_t id, int64_t stack_id, int64_t stream,
                      int64_t requested) {
    int64_t slot = gmt_slot_take(&s->allocs);
    if (slot < 0)
        return -1;
    *(live_alloc *)gmt_slot_at(&s->allocs, (uint32_t)slot) =
        (live_alloc){stack_id, stream, requested};
    return addr_map_put(&s->live, 0, (uint64_t)id, (uint32_t)slot + 1);
}

int block_sweep_next(block_sweep *s, block_change *c) {
    for (;;) {
        if (s->at == s->n) {
            const int64_t *col[EVENT_STORE_NCOLS];
            s->n = event_scan_next(s->scan, col);
            s->at = 0;
            if (s->n <= 0)
                return 0; /* the end, or an error (block_sweep.h: 0 either way) */
            event_scan_pick(col, sweep_columns, NCOL, s->v);
        }
        long r = s->at++;
        const int64_t *const *v = s->v;
        int64_t op = v[OP][r];
        if (v[DEVICE][r] != s->device || v[KIND][r] != TRACE_KIND_DEVICE)
            continue;
        int64_t size = event_value_or(v[SIZE][r], 0);
        if (op == TRACE_OP_ALLOC || op == TRACE_OP_MAP) {
            int64_t requested = event_value_or(v[REQUESTED][r], size);
            if (!is_block(s, r))
                continue;
            int64_t stack_id = event_value_or(v[STACK][r], 0),
                    stream = event_value_or(v[STREAM][r], 0);
            if (keep_alloc(s, v[ID][r], stack_id, stream, requested) != 0)
                return 0; /* out of memory */
            *c = (block_change){v[ID][r], 1, size, requested, stack_id, stream, v[ID][r]};
            return 1;
        }
        if ((op != TRACE_OP_FREE && op != TRACE_OP_UNMAP) || v[ALLOC][r] == EVENT_STORE_NULL)
            continue;
        uint32_t *at = addr_map_get(&s->live, 0, (uint64_t)v[ALLOC][r]);
        if (!at)
            continue; /* its allocation was not a block */
        uint32_t slot = *at - 1;
        addr_map_remove(&s->live, 0, (uint64_t)v[ALLOC][r]);
        live_alloc a = *(live_alloc *)gmt_slot_at(&s->allocs, slot);
        gmt_slot_give(&s->allocs, slot);
        *c = (block_change){v[ID][r], 0, size, a.requested, a.stack_id, a.stream, v[ALLOC][r]};
        return 1;
    }
}

void block_sweep_close(block_sweep *s) {
    if (!s)
        return;
    event_scan_close(s->scan);
    addr_map_free(&s->whole);
    addr_map_free(&s->live);
    gmt_slots_free(&s->allocs);
    free(s);
}
