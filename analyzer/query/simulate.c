/* simulate.c — a device's request stream through the caching allocator model
 * (see simulate.h). One pass over the device's PyTorch events; memory is the
 * live blocks (a map from the recorded alloc's event id to the model's
 * address), never the stream. */
#include "simulate.h"

#include "addr_map.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_grow.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct live_block {
    uint64_t addr;      /* where the model put it */
    int completed;      /* the model completed its free itself (a cache release) */
    uint32_t next_free; /* free list of slots, 1-based; 0: none */
} live_block;

typedef struct sim {
    am_model *model;
    sim_result *r;
    const sim_options *opt;
    int64_t span;  /* the columns' span: event numbers 0 (the start) to the device's last */
    addr_map live; /* (0, alloc event id) -> slot + 1 in blocks */
    live_block *blocks;
    size_t blocks_len, blocks_cap;
    uint32_t free_slot; /* 1-based head of the slots' free list */
    int64_t event_id;   /* the request being replayed */
    int oom_noted;
    uint64_t failed_size; /* the last failed driver allocation's bytes, for the OOM after it */
} sim;

/* The model's effects: driver allocations counted, OOMs noted, frees the model completed on
 * its own (a cache release completes pending frees) remembered so the recorded completion is
 * not applied twice. */
static void on_effect(void *ctx, const am_effect *e) {
    sim *s = ctx;
    switch (e->kind) {
    case AM_EFFECT_SEGMENT_ALLOC:
    case AM_EFFECT_SEGMENT_MAP:
        s->r->driver_allocations++;
        break;
    case AM_EFFECT_ALLOC_FAILED:
        s->failed_size = e->size;
        break;
    case AM_EFFECT_OOM:
        if (!s->oom_noted++ && !s->r->ooms) {
            uint64_t asked = s->failed_size ? s->failed_size : e->size;
            s->r->first_oom = (sim_oom){s->event_id, e->requested, e->device_free, asked,
                                        asked > e->device_free ? asked - e->device_free : 0};
        }
        break;
    case AM_EFFECT_FREE_COMPLETED: {
        uint32_t *slot = addr_map_get(&s->live, 0, e->tag);
        if (slot)
            s->blocks[*slot - 1].completed = 1;
        break;
    }
    default:
        break;
    }
}

/* The picture's column of the current event: its number (the seed's at 0) on the span. */
static size_t column_of(const sim *s) {
    int64_t at = s->event_id > 0 ? s->event_id : 0;
    size_t col = (size_t)((double)at * (double)s->opt->ncolumns / (double)s->span);
    return col < s->opt->ncolumns ? col : s->opt->ncolumns - 1;
}

/* An OOM of the model at the current event, for the picture. */
static void note_oom(sim *s) {
    if (s->opt->oom_columns && s->span > 0)
        s->opt->oom_columns[column_of(s)] = 1;
}

static void note_state(sim *s) {
    am_stats_info st = am_stats(s->model);
    if (s->opt->reserved_max && s->span > 0) {
        size_t col = column_of(s);
        if ((int64_t)st.reserved_bytes > s->opt->reserved_max[col])
            s->opt->reserved_max[col] = (int64_t)st.reserved_bytes;
    }
    if (st.reserved_bytes > s->r->peak_reserved) {
        s->r->peak_reserved = st.reserved_bytes;
        s->r->peak_reserved_event = s->event_id;
        s->r->releasable_at_peak = st.releasable_bytes;
        s->r->trapped_at_peak = st.reserved_bytes - st.allocated_bytes - st.releasable_bytes;
    }
    if (st.allocated_bytes > s->r->peak_allocated) {
        s->r->peak_allocated = st.allocated_bytes;
        s->r->peak_allocated_event = s->event_id;
    }
}

/* A seed block where the recording had it (size: as the allocator accounted it). */
static am_error place_recorded(sim *s, uint64_t addr, uint64_t size, uint64_t requested,
                               uint64_t stream, am_block_info *placed) {
    am_error e = am_block_place(s->model, addr, size, requested, stream, (uint64_t)s->event_id);
    if (e == AM_OK)
        *placed = (am_block_info){.addr = addr, .size = size};
    return e;
}

static int alloc_block(sim *s, uint64_t requested, uint64_t stream, const uint64_t *recorded) {
    am_block_info placed;
    s->oom_noted = 0;
    s->failed_size = 0;
    am_error e = recorded ? place_recorded(s, recorded[0], recorded[1], requested, stream, &placed)
                          : am_malloc(s->model, requested ? requested : 1, stream,
                                      (uint64_t)s->event_id, on_effect, s, &placed);
    if (recorded && e != AM_OK && e != AM_ERR_NOMEM) /* a seed that does not fit: allocated */
        e = am_malloc(s->model, requested ? requested : 1, stream, (uint64_t)s->event_id, on_effect,
                      s, &placed);
    if (e == AM_ERR_OOM) {
        s->r->ooms++;
        note_oom(s);
        return 0; /* the program would have failed here; its frees are skipped */
    }
    if (e != AM_OK)
        return e == AM_ERR_NOMEM ? -1 : 0;
    uint32_t slot = s->free_slot;
    if (slot) {
        s->free_slot = s->blocks[slot - 1].next_free;
    } else {
        if (gmt_grow((void **)&s->blocks, &s->blocks_cap, s->blocks_len, sizeof *s->blocks) != 0)
            return -1;
        slot = (uint32_t)++s->blocks_len;
    }
    s->blocks[slot - 1] = (live_block){placed.addr, 0, 0};
    return addr_map_put(&s->live, 0, (uint64_t)s->event_id, slot);
}

/* A free_requested (completing = 0) or a completed free (1) of the block allocated at
 * `alloc_id`; nothing when the model never placed it (an OOM, or allocated before the
 * recording without a seed row). */
static void free_block(sim *s, int64_t alloc_id, int completing) {
    uint32_t *found = addr_map_get(&s->live, 0, (uint64_t)alloc_id);
    if (!found)
        return;
    uint32_t slot = *found;
    live_block *b = &s->blocks[slot - 1];
    if (!completing) {
        if (!b->completed)
            am_free_request(s->model, b->addr);
        return;
    }
    if (!b->completed)
        am_free(s->model, b->addr);
    addr_map_remove(&s->live, 0, (uint64_t)alloc_id);
    b->next_free = s->free_slot;
    s->free_slot = slot;
}

/* The recording's expandable segments: per stream and pool, the range PyTorch reserved starts
 * (as far as the recording shows) at the lowest page ever mapped in it — seeded or mapped later:
 * a ring buffer that began mid-run shows pages mapped below every seeded one, and PyTorch never
 * moves a reservation — and the model's maps go on there (am_expandable_adopt). Pages are 2 MiB in
 * the small pool, so a map of at most that size is the small pool's (as am_segment_map reads it).
 * 0, or -1 when out of memory. */
static int adopt_recorded_ranges(sqlite3 *db, int device, am_model *model) {
    sqlite3_stmt *st =
        db_statement(db, "SELECT coalesce(stream, 0), min(addr), size <= ?2 FROM event_rows WHERE"
                         " device = ?1 AND level = {level:segment} AND op ="
                         " {op:map} AND source = {source:torch} AND kind = {kind:device}"
                         " GROUP BY 1, 3");
    if (!st)
        return 0; /* nothing read: the maps are placed without a range, as before */
    sqlite3_bind_int(st, 1, device);
    sqlite3_bind_int64(st, 2, (int64_t)AM_PAGE_SMALL);
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
        if (am_expandable_adopt(model, (uint64_t)sqlite3_column_int64(st, 1),
                                (uint64_t)sqlite3_column_int64(st, 0),
                                sqlite3_column_int(st, 2) != 0) == AM_ERR_NOMEM)
            rc = -1;
    sqlite3_finalize(st);
    return rc;
}

int64_t simulate_events(sqlite3 *db, int device) {
    return db_query_i64(db,
                        "SELECT count(*) FROM event_rows WHERE device = ?1 AND source = "
                        "{source:torch} AND kind = {kind:device}",
                        device, 0, 0);
}

int64_t simulate_last_event(sqlite3 *db, int device) {
    return db_query_i64(db,
                        "SELECT max(event_id) FROM event_rows WHERE device = ?1 AND source = "
                        "{source:torch} AND kind = {kind:device}",
                        device, 0, 0);
}

int64_t simulate_requests(sqlite3 *db, int device) {
    return db_query_i64(db,
                        "SELECT count(*) FROM event_rows WHERE device = ?1 AND source = "
                        "{source:torch} AND level = {level:block} AND op = {op:alloc} AND "
                        "kind = {kind:device}",
                        device, 0, -1);
}

/* A pool of its own for the blocks that outlive their step: PyTorch keeps pools apart by
 * stream (a block is reused only on its stream), so a stream id no program uses is one. */
#define LONG_LIVED_STREAM_BIT (1ULL << 62)

/* The model's stream key of a request on `stream` in PyTorch pool `pool` (0: the default one):
 * a private pool's blocks serve only its own requests, per stream as everywhere, so each
 * (pool, stream) is a key of its own, marked AM_STREAM_PRIVATE_POOL. Stream handles are
 * addresses (below 2^48) or small numbers; the mix keeps keys of different pools apart. */
static uint64_t pool_stream(uint64_t stream, uint64_t pool) {
    if (!pool)
        return stream;
    uint64_t mixed = (stream ^ (pool * 0x9E3779B97F4A7C15ULL)) & ~(LONG_LIVED_STREAM_BIT << 1);
    return (mixed & ~LONG_LIVED_STREAM_BIT) | AM_STREAM_PRIVATE_POOL;
}

/* The step ends in event order, read alongside the events (a second cursor). */
typedef struct step_cursor {
    sqlite3_stmt *st;
    int64_t next; /* the next step end at or after the current event; INT64_MAX: none */
} step_cursor;

static void step_cursor_advance(step_cursor *c, int64_t event_id) {
    while (c->st && c->next < event_id)
        c->next = sqlite3_step(c->st) == SQLITE_ROW ? sqlite3_column_int64(c->st, 0) : INT64_MAX;
}

/* One of the device's PyTorch device-memory events, as the simulation reads it. */
typedef struct sim_row {
    int64_t event_id, op, level, requested, stream, alloc_id, reserved, size, addr, pool;
    int64_t freed; /* with lifetime pools: the event that frees this alloc (INT64_MAX: none) */
} sim_row;

/* Where the rows come from: event_scan (a chunk of columns at a time: through SQL, SQLite's
 * per-value calls were 65 % of a simulation), or, for lifetime pools, which need each alloc's
 * free (a lookup on the alloc_event_id index), one SQL statement. */
typedef struct sim_reader {
    sqlite3_stmt *st;
    event_scan *scan;
    const int64_t *col[EVENT_STORE_NCOLS];
    long n, at;
    int device;
} sim_reader;

static int sim_reader_open(sim_reader *r, sqlite3 *db, int device, int lifetime_pools, char *err,
                           size_t errlen) {
    memset(r, 0, sizeof *r);
    r->device = device;
    if (!lifetime_pools) {
        static const int cols[] = {EVENT_COL_event_id,
                                   EVENT_COL_op,
                                   EVENT_COL_level,
                                   EVENT_COL_requested_size,
                                   EVENT_COL_size,
                                   EVENT_COL_stream,
                                   EVENT_COL_alloc_event_id,
                                   EVENT_COL_reserved_bytes,
                                   EVENT_COL_addr,
                                   EVENT_COL_pool,
                                   EVENT_COL_device,
                                   EVENT_COL_source,
                                   EVENT_COL_kind};
        uint32_t mask = event_scan_mask(cols, sizeof cols / sizeof cols[0]);
        r->scan = event_scan_open(db, mask, INT64_MIN, INT64_MAX, err, errlen);
        return r->scan ? 0 : -1;
    }
    r->st = db_statement(
        db, "SELECT e.event_id, e.op, e.level, coalesce(e.requested_size, e.size, 0),"
            " coalesce(e.stream, 0), e.alloc_event_id, e.reserved_bytes, e.size, e.addr,"
            " CASE WHEN e.op = {op:alloc} AND e.level = {level:block} THEN (SELECT"
            " f.event_id FROM event_rows f WHERE f.alloc_event_id = e.event_id AND f.op ="
            " {op:free}) END, coalesce(e.pool, 0) FROM event_rows e WHERE e.device = ?1 AND"
            " e.source = {source:torch} AND e.kind = {kind:device} ORDER BY e.event_id");
    if (!r->st) {
        snprintf(err, errlen, "reading the events: %s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int(r->st, 1, device);
    return 0;
}

static void sim_reader_close(sim_reader *r) {
    sqlite3_finalize(r->st);
    event_scan_close(r->scan);
}

/* The next row: 1; 0 at the end; -1 on an error (in err). */
static int sim_reader_next(sim_reader *r, sim_row *row, char *err, size_t errlen) {
    if (r->st) {
        int rc = sqlite3_step(r->st);
        if (rc != SQLITE_ROW) {
            if (rc != SQLITE_DONE)
                snprintf(err, errlen, "reading the events: %s",
                         sqlite3_errmsg(sqlite3_db_handle(r->st)));
            return rc == SQLITE_DONE ? 0 : -1;
        }
        sqlite3_stmt *st = r->st;
        *row = (sim_row){sqlite3_column_int64(st, 0),    sqlite3_column_int64(st, 1),
                         sqlite3_column_int64(st, 2),    sqlite3_column_int64(st, 3),
                         sqlite3_column_int64(st, 4),    sqlite3_column_int64(st, 5),
                         sqlite3_column_int64(st, 6),    sqlite3_column_int64(st, 7),
                         sqlite3_column_int64(st, 8),    sqlite3_column_int64(st, 10),
                         db_column_i64(st, 9, INT64_MAX)};
        return 1;
    }
    for (;;) {
        if (r->at == r->n) {
            r->n = event_scan_next(r->scan, r->col);
            r->at = 0;
            if (r->n <= 0) {
                if (r->n < 0)
                    snprintf(err, errlen, "%s", event_scan_error(r->scan));
                return r->n < 0 ? -1 : 0;
            }
        }
        long i = r->at++;
        const int64_t *const *c = r->col;
        if (c[EVENT_COL_device][i] != r->device || c[EVENT_COL_source][i] != TRACE_SOURCE_TORCH ||
            c[EVENT_COL_kind][i] != TRACE_KIND_DEVICE)
            continue;
        /* a NULL reads as 0, as sqlite3_column_int64 reads it on the SQL path */
        int64_t requested =
            event_value_or(c[EVENT_COL_requested_size][i], event_value_or(c[EVENT_COL_size][i], 0));
        *row = (sim_row){c[EVENT_COL_event_id][i],
                         c[EVENT_COL_op][i],
                         event_value_or(c[EVENT_COL_level][i], 0),
                         requested,
                         event_value_or(c[EVENT_COL_stream][i], 0),
                         event_value_or(c[EVENT_COL_alloc_event_id][i], 0),
                         event_value_or(c[EVENT_COL_reserved_bytes][i], 0),
                         event_value_or(c[EVENT_COL_size][i], 0),
                         event_value_or(c[EVENT_COL_addr][i], 0),
                         event_value_or(c[EVENT_COL_pool][i], 0),
                         INT64_MAX};
        return 1;
    }
}

/* A burst of PyTorch segment frees (or unmaps), as the recording shows it. */
typedef enum burst_state {
    BURST_NONE,
    BURST_FREED, /* segments freed, nothing allocated since */
    BURST_GREW,  /* ... then segments allocated or pages mapped: the release made room */
} burst_state;

/* The burst ends at the next request (`retried`: a block alloc) or at the end. PyTorch's
 * malloc, when no cached block fits and cudaMalloc fails on a full device, frees cached
 * segments (release_available_cached_blocks, release_cached_blocks) and allocates again: the
 * frees, then the segment, then the block. Such a release the model makes itself, on its own
 * full device; it is no empty_cache() call. The recorded device was full when what it held
 * before the release and what it allocated after it do not fit in its memory
 * (opt->recorded_capacity). Any other burst is the program's empty_cache(), replayed. (A
 * release right before an OOM entry is the retry that failed too: the caller ends it there.) */
static void end_burst(sim *s, burst_state burst, int retried, int64_t reserved_before,
                      uint64_t grown) {
    uint64_t limit = s->opt->recorded_capacity;
    int retry = burst == BURST_GREW && retried && limit &&
                (uint64_t)(reserved_before > 0 ? reserved_before : 0) + grown > limit;
    if (!retry && am_empty_cache(s->model, on_effect, s) == AM_OK)
        s->r->empty_caches++;
}

/* The reserved bytes after a recorded event against the model's: the first difference, how
 * many differ, the largest. */
static void compare_reserved(sim_result *out, int64_t event_id, int op, uint64_t simulated,
                             uint64_t recorded) {
    out->compared_events++;
    if (simulated == recorded)
        return;
    int64_t d = (int64_t)(simulated - recorded);
    if (!out->differing++) {
        out->first_difference = event_id;
        out->first_difference_op = op;
        out->first_recorded_reserved = recorded;
        out->first_simulated_reserved = simulated;
    }
    if ((d < 0 ? -d : d) >
        (out->largest_difference < 0 ? -out->largest_difference : out->largest_difference)) {
        out->largest_difference = d;
        out->largest_difference_event = event_id;
    }
}

int simulate_run(sqlite3 *db, int device, const am_config *cfg, const sim_options *opt,
                 sim_result *out, char *err, size_t errlen) {
    static const sim_options none;
    if (!opt)
        opt = &none;
    int seed_as_recorded = opt->seed_as_recorded;
    memset(out, 0, sizeof *out);
    sim s = {.r = out, .opt = opt};
    if (opt->reserved_max && opt->ncolumns)
        s.span = simulate_last_event(db, device) + 1;
    s.model = am_model_new(cfg);
    if (!s.model) {
        snprintf(err, errlen, "the allocator model refused the configuration or is out of memory");
        return -1;
    }
    /* The recorded reserved bytes can be compared only when PyTorch made every segment. */
    out->compared = db_query_i64(db,
                                 "SELECT count(*) FROM event_rows WHERE device = ?1 AND level = "
                                 "{level:segment} AND source IS NOT {source:torch}",
                                 device, 0, 1) == 0;
    sim_reader rd;
    if (sim_reader_open(&rd, db, device, opt->lifetime_pools, err, errlen) != 0) {
        am_model_free(s.model);
        return -1;
    }
    step_cursor steps = {NULL, INT64_MIN};
    if (opt->empty_cache_per_step || opt->lifetime_pools)
        steps.st = db_statement(db, "SELECT end_event_id FROM steps ORDER BY end_event_id");
    int rc = 0, read = 0;
    burst_state burst = BURST_NONE;
    uint64_t grown = 0; /* the segments allocated or pages mapped since the burst's frees */
    sim_row row;
    if (seed_as_recorded)
        rc = adopt_recorded_ranges(db, device, s.model);
    int64_t reserved_before_burst = 0, recorded_reserved = 0;
    for (; rc == 0 && (read = sim_reader_next(&rd, &row, err, errlen)) == 1;) {
        s.event_id = row.event_id;
        if (steps.st) { /* the steps that ended before this event */
            int64_t ended = steps.next;
            step_cursor_advance(&steps, s.event_id);
            if (opt->empty_cache_per_step && ended != INT64_MIN && ended < s.event_id &&
                am_empty_cache(s.model, on_effect, &s) == AM_OK)
                out->empty_caches++;
        }
        int op = (int)row.op, level = (int)row.level;
        uint64_t requested = (uint64_t)row.requested;
        uint64_t stream = pool_stream((uint64_t)row.stream, (uint64_t)row.pool);
        int64_t alloc_id = row.alloc_id;
        int64_t reserved = row.reserved;
        uint64_t recorded[2] = {(uint64_t)row.addr, (uint64_t)row.size}; /* addr, size */
        int seed = s.event_id <= 0;
        if (seed && seed_as_recorded && level == TRACE_LEVEL_SEGMENT &&
            (op == TRACE_OP_ALLOC || op == TRACE_OP_MAP)) {
            /* the start state as recorded: a segment where it was */
            am_error e = op == TRACE_OP_MAP
                             ? am_segment_map_in_pool(s.model, recorded[0], recorded[1], stream, 0,
                                                      recorded[1] <= AM_PAGE_SMALL)
                             : am_segment_insert(s.model, recorded[0], recorded[1], stream, 0);
            if (e == AM_ERR_NOMEM)
                rc = -1;
            recorded_reserved = reserved;
            continue;
        }
        if (level == TRACE_LEVEL_SEGMENT) {
            if ((op == TRACE_OP_FREE || op == TRACE_OP_UNMAP) && burst != BURST_GREW) {
                if (burst == BURST_NONE)
                    reserved_before_burst = recorded_reserved, grown = 0;
                burst = BURST_FREED;
            } else if ((op == TRACE_OP_ALLOC || op == TRACE_OP_MAP) && burst != BURST_NONE) {
                grown += (uint64_t)row.size; /* the allocation the release made room for */
                burst = BURST_GREW;
            } else if (burst == BURST_GREW) { /* a release after the growth: a new burst */
                end_burst(&s, burst, 0, reserved_before_burst, grown);
                reserved_before_burst = recorded_reserved, grown = 0;
                burst = BURST_FREED;
            }
            recorded_reserved = reserved;
            continue;
        }
        if (op == TRACE_OP_OOM && s.event_id > 0) {
            /* the recorded run could not place this request (PyTorch records no alloc for
             * it): tried again here; when it fits, the program never held it, so it is
             * given back at once */
            am_block_info placed;
            s.oom_noted = 0;
            s.failed_size = 0;
            out->recorded_ooms++;
            burst = BURST_NONE; /* the frees before it: the release of the retry that failed */
            am_error e = am_malloc(s.model, requested ? requested : 1, stream, (uint64_t)s.event_id,
                                   on_effect, &s, &placed);
            if (e == AM_OK)
                am_free(s.model, placed.addr);
            else if (e == AM_ERR_OOM)
                out->ooms++, out->recorded_ooms_kept++, note_oom(&s);
            note_state(&s);
            continue;
        }
        if (level != TRACE_LEVEL_BLOCK)
            continue;
        if (burst != BURST_NONE) {
            end_burst(&s, burst, op == TRACE_OP_ALLOC, reserved_before_burst, grown);
            burst = BURST_NONE;
        }
        recorded_reserved = reserved;
        if (op == TRACE_OP_ALLOC) {
            out->requests++;
            out->seed_blocks += seed;
            if (opt->lifetime_pools) { /* a step ends between its alloc and its free */
                int64_t freed = row.freed;
                if (steps.next != INT64_MAX && steps.next < freed)
                    stream |= LONG_LIVED_STREAM_BIT;
            }
            rc = alloc_block(&s, requested, stream, seed && seed_as_recorded ? recorded : NULL);
        } else if (op == TRACE_OP_FREE_REQUESTED) {
            free_block(&s, alloc_id, 0);
        } else if (op == TRACE_OP_FREE) {
            free_block(&s, alloc_id, 1);
        } else {
            continue;
        }
        note_state(&s);
        if (out->compared && s.event_id > 0)
            compare_reserved(out, s.event_id, op, am_stats(s.model).reserved_bytes,
                             (uint64_t)reserved);
    }
    out->recorded_peak_reserved = (uint64_t)db_query_i64(
        db, "SELECT peak_reserved_bytes FROM devices WHERE device = ?1", device, 0, 0);
    /* a step that ends after the last request: its empty_cache() too */
    if (rc == 0 && opt->empty_cache_per_step && steps.st && steps.next != INT64_MAX &&
        steps.next != INT64_MIN && am_empty_cache(s.model, on_effect, &s) == AM_OK)
        out->empty_caches++;
    if (rc == 0 && burst != BURST_NONE) /* a release at the very end */
        end_burst(&s, burst, 0, reserved_before_burst, grown);
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    else if (read < 0)
        rc = -1; /* the reader's message is in err */
    am_stats_info end = am_stats(s.model);
    out->reserved_end = end.reserved_bytes;
    out->releasable_end = end.releasable_bytes;
    out->trapped_end = end.reserved_bytes - end.allocated_bytes - end.releasable_bytes;
    sim_reader_close(&rd);
    sqlite3_finalize(steps.st);
    addr_map_free(&s.live);
    free(s.blocks);
    am_model_free(s.model);
    return rc;
}
