/* categories.c — a category per block, in one sweep of a device's events (see categories.h). */
#include "categories.h"

#include "addr_map.h"
#include "block_sweep.h"
#include "db_query.h"
#include "event_scan.h"
#include "gmt_grow.h"
#include "gmt_search.h"
#include "gmt_slots.h"
#include "phase_timeline.h"
#include "stack_names.h"
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct categorizer {
    sqlite3 *db;
    stack_phases *phases;
    struct named { /* the blocks the program named, by alloc_id (ascending) */
        int64_t alloc_id;
        int category; /* -1: a name alone */
    } * named;
    size_t nnamed, cap_named;
    const category_rules *rules;
    stack_names *stacks; /* frames for the rules, read only for stacks left as other */
    addr_map rule_memo;  /* stack_id -> 1 + (category, or BLOCK_CATEGORY_COUNT for none) */
};

/* A live block: what its category needs once it ends. */
typedef struct live_block {
    int64_t alloc_id, size, stack_id;
    int64_t iteration;     /* the iteration it was made in (-1: setup) */
    uint8_t made_in;       /* step_phase it was made in */
    uint8_t stack_decides; /* its own stack said forward, backward or optimizer */
    uint8_t named;         /* 1 + the category its name gives; 0: none given */
    uint8_t has_name;      /* it has a name (tensor_names), with a category or not */
} live_block;

void categorizer_free(categorizer *c) {
    if (!c)
        return;
    stack_phases_free(c->phases);
    free(c->named);
    addr_map_free(&c->rule_memo);
    stack_names_free(c->stacks);
    free(c);
}

categorizer *categorizer_new(sqlite3 *db, const category_rules *rules, char *err, size_t errlen) {
    categorizer *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->db = db;
    c->rules = rules;
    return c;
}

int categorizer_has_rules(const categorizer *c) { return c && category_rules_count(c->rules) > 0; }

int categories_no_history(sqlite3 *db, int64_t device) {
    sqlite3_stmt *st = db_statement(db, "SELECT coalesce(allocs, 0) + coalesce(frees, 0) FROM "
                                        "devices WHERE device = ?1");
    int64_t events = 2; /* no row, or a failure: not "one moment" */
    if (st) {
        sqlite3_bind_int64(st, 1, device);
        if (sqlite3_step(st) == SQLITE_ROW)
            events = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return events <= 1;
}

/* What every sweep shares, read by the first: a report that finds its sums in the database
 * never pays for it. 0, or -1 with err set. */
static int load_shared(categorizer *c, char *err, size_t errlen) {
    if (c->phases)
        return 0;
    c->phases = stack_phases_load(c->db);
    c->stacks = c->rules ? stack_names_new(c->db) : NULL;
    /* in alloc order: a sweep meets them with a cursor, never a lookup; a database of an
     * older memanalyze has no names at all */
    int names = db_has_table(c->db, "tensor_names");
    sqlite3_stmt *st = c->phases && names
                           ? db_statement(c->db, "SELECT alloc_id, category FROM tensor_names "
                                                 "ORDER BY alloc_id")
                           : NULL;
    int ok = c->phases && (st || !names) && (!c->rules || c->stacks), failed = 0;
    while (ok && db_next_row(st, &failed)) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        int category = name ? gmt_category_from_name(name, strlen(name)) : -1;
        if (gmt_grow((void **)&c->named, &c->cap_named, c->nnamed, sizeof *c->named) != 0)
            ok = 0;
        else
            c->named[c->nnamed++] = (struct named){sqlite3_column_int64(st, 0), category};
    }
    ok = ok && !failed;
    sqlite3_finalize(st);
    if (!ok) {
        snprintf(err, errlen, "reading the stacks and the tensor names: %s", sqlite3_errmsg(c->db));
        stack_phases_free(c->phases);
        stack_names_free(c->stacks);
        c->phases = NULL;
        c->stacks = NULL;
        c->nnamed = 0;
        return -1;
    }
    return 0;
}

/* How a block ended, for rule 2 of categories.h. */
typedef struct block_end {
    int64_t free_id;    /* the free's event id; INT64_MAX: never */
    int64_t free_stack; /* the free's own stack (0: none) */
    int unwound;        /* freed by an OOM's unwinding (categories.h) */
} block_end;

/* Rule 2 of categories.h for a block that ended as `end` says. */
static gmt_category by_lifetime(categorizer *c, const phase_timeline *t, phase_cursor *cur,
                                const live_block *b, const block_end *end) {
    int64_t free_id = end->free_id;
    int freed = free_id != INT64_MAX;
    int64_t freed_in = INT64_MAX;
    step_phase free_phase = STEP_PHASE_COUNT;
    if (freed)
        free_phase = phase_timeline_at(t, cur, free_id, &freed_in);
    if (b->alloc_id <= 0 && !b->stack_decides) {
        /* made before the recording began, by code we cannot see: what freed it says what it
         * was. A zero_grad frees last step's gradients; backward frees what a forward saved;
         * an optimizer step frees the state it replaces; a forward's unwinding after an OOM
         * frees what that forward made; what stays is the model's. */
        if (!freed)
            return BLOCK_CATEGORY_PARAMETER;
        unsigned bits = end->free_stack ? stack_phases_bits(c->phases, end->free_stack) : 0;
        if ((bits & PHASE_FLAG_ZERO_GRAD) && !(bits & PHASE_FLAG_BACKWARD))
            return BLOCK_CATEGORY_GRADIENT;
        return free_phase == STEP_PHASE_BACKWARD                  ? BLOCK_CATEGORY_ACTIVATION
               : free_phase == STEP_PHASE_OPTIMIZER               ? BLOCK_CATEGORY_OPTIMIZER_STATE
               : free_phase == STEP_PHASE_FORWARD && end->unwound ? BLOCK_CATEGORY_ACTIVATION
                                                                  : BLOCK_CATEGORY_OTHER;
    }
    /* A free an OOM's unwinding made is no end of the block's use: judged as if the run had
     * gone on, like a block live when a recording stops inside the iteration that made it
     * (its end was not seen, so it ended later in that iteration) when the OOM came in that
     * iteration or the next; one kept longer stays what a block never freed is. */
    int cut_short = !freed && b->iteration == phase_timeline_open_iteration(t);
    if (end->unwound) {
        cut_short = freed_in <= b->iteration + 1;
        freed = 0;
    }
    int same_iteration = freed && freed_in == b->iteration;
    int same_phase = same_iteration && free_phase == (step_phase)b->made_in;
    switch ((step_phase)b->made_in) {
    case STEP_PHASE_SETUP:
        return same_phase ? BLOCK_CATEGORY_TEMPORARY
               : !freed   ? BLOCK_CATEGORY_PARAMETER
                          : BLOCK_CATEGORY_OTHER;
    case STEP_PHASE_PRELUDE:
        if (same_phase)
            return BLOCK_CATEGORY_TEMPORARY;
        return (freed && freed_in <= b->iteration + 1) || (end->unwound && cut_short)
                   ? BLOCK_CATEGORY_INPUT
                   : BLOCK_CATEGORY_OTHER;
    case STEP_PHASE_FORWARD:
        if (same_phase)
            return BLOCK_CATEGORY_TEMPORARY;
        return cut_short || (freed && freed_in <= b->iteration + 1) ? BLOCK_CATEGORY_ACTIVATION
                                                                    : BLOCK_CATEGORY_OTHER;
    case STEP_PHASE_BACKWARD:
        if (same_phase)
            return BLOCK_CATEGORY_TEMPORARY;
        return b->stack_decides ? BLOCK_CATEGORY_GRADIENT : BLOCK_CATEGORY_OTHER;
    case STEP_PHASE_OPTIMIZER:
        if (same_iteration)
            return BLOCK_CATEGORY_TEMPORARY;
        return b->stack_decides ? BLOCK_CATEGORY_OPTIMIZER_STATE : BLOCK_CATEGORY_OTHER;
    default:
        return BLOCK_CATEGORY_OTHER;
    }
}

static gmt_category by_rules(categorizer *c, int64_t stack_id) {
    uint32_t *memo = addr_map_get(&c->rule_memo, 0, (uint64_t)stack_id);
    if (memo)
        return (gmt_category)(*memo - 1);
    int match = category_rules_match(c->rules, stack_names_get(c->stacks, stack_id));
    gmt_category result = match >= 0 ? (gmt_category)match : BLOCK_CATEGORY_COUNT;
    addr_map_put(&c->rule_memo, 0, (uint64_t)stack_id, (uint32_t)result + 1); /* memo only */
    return result;
}

static gmt_category category_of(categorizer *c, const phase_timeline *t, phase_cursor *cur,
                                const live_block *b, const block_end *end, int no_history) {
    if (b->named)
        return (gmt_category)(b->named - 1);
    gmt_category g = no_history ? BLOCK_CATEGORY_UNKNOWN : by_lifetime(c, t, cur, b, end);
    if ((g == BLOCK_CATEGORY_OTHER || g == BLOCK_CATEGORY_UNKNOWN) && c->rules && b->stack_id) {
        gmt_category r = by_rules(c, b->stack_id);
        if (r != BLOCK_CATEGORY_COUNT)
            g = r;
    }
    return g;
}

/* One device's part of a sweep: its phase timeline and its live blocks. */
typedef struct sweep {
    int64_t device;
    phase_timeline *timeline;
    phase_cursor cursor; /* the rows come in event order */
    int feed;            /* the timeline grows with the rows (a run with steps) */
    gmt_slots blocks;    /* live_block records */
    addr_map live;       /* alloc_id -> 1 + index into blocks */
    addr_map whole; /* segment ids of the whole-block segments (ids are unique across devices) */
    int no_history; /* one moment, no phases: every block unknown (categories_no_history) */
    int unwinding;  /* an OOM was met and no allocation since: frees are its unwinding */
} sweep;

static int sweep_open(categorizer *c, int64_t device, sweep *w, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    w->device = device;
    w->blocks = (gmt_slots)GMT_SLOTS_INIT(live_block);
    if (!(w->timeline = phase_timeline_build(c->db, device, c->phases)) ||
        block_sweep_whole_segments(c->db, &w->whole) != 0) {
        snprintf(err, errlen, "reading the phases of device %lld: %s", (long long)device,
                 sqlite3_errmsg(c->db));
        return -1;
    }
    w->feed = phase_timeline_incremental(w->timeline);
    w->no_history = categories_no_history(c->db, device);
    w->cursor = (phase_cursor)PHASE_CURSOR_INIT;
    return 0;
}

static void sweep_close(sweep *w) {
    phase_timeline_free(w->timeline);
    gmt_slots_free(&w->blocks);
    addr_map_free(&w->live);
    addr_map_free(&w->whole);
}

static int ended(categorizer *c, sweep *w, size_t i, const block_end *end, category_visit visit,
                 void *ctx) {
    live_block *b = gmt_slot_at(&w->blocks, (uint32_t)i);
    classified_block out = {
        w->device,  b->alloc_id, end->free_id,
        b->size,    b->stack_id, category_of(c, w->timeline, &w->cursor, b, end, w->no_history),
        b->has_name};
    addr_map_remove(&w->live, 0, (uint64_t)b->alloc_id);
    gmt_slot_give(&w->blocks, (uint32_t)i);
    return visit(ctx, &out);
}

/* What the sweep reads of an event (a NULL size, stack or alloc_event_id as 0). */
typedef struct sweep_event {
    int64_t id, op, level, ts, size, stack, alloc, kind;
} sweep_event;

/* One row of the sweep for its device's part. 0, a visitor's return, or -1. */
static int sweep_row(categorizer *c, sweep *w, const sweep_event *e, size_t *next_name,
                     category_visit visit, void *ctx) {
    int64_t id = e->id, op = e->op, ts = e->ts, level = e->level;
    if (op == TRACE_OP_OOM) { /* what is freed from here to the next allocation is unwinding */
        w->unwinding = id > 0;
        return 0;
    }
    if (op == TRACE_OP_ALLOC || op == TRACE_OP_MAP)
        w->unwinding = 0; /* the program went on */
    if (w->feed && level == TRACE_LEVEL_BLOCK && op != TRACE_OP_MAP && op != TRACE_OP_UNMAP &&
        phase_timeline_feed(w->timeline, id, e->stack, ts) != 0)
        return -1;
    if (op == TRACE_OP_FREE_REQUESTED || e->kind != TRACE_KIND_DEVICE)
        return 0; /* the block lives on until its free; other memory is not summed */
    int begins = op == TRACE_OP_ALLOC || op == TRACE_OP_MAP;
    int64_t key = begins ? id : e->alloc;
    if (level == TRACE_LEVEL_SEGMENT && !addr_map_get(&w->whole, 0, (uint64_t)key))
        return 0;
    if (!begins) {
        uint32_t *at = key ? addr_map_get(&w->live, 0, (uint64_t)key) : NULL;
        block_end end = {id, e->stack, w->unwinding};
        return at ? ended(c, w, *at - 1, &end, visit, ctx) : 0;
    }
    int64_t slot = gmt_slot_take(&w->blocks);
    if (slot < 0)
        return -1;
    live_block *b = gmt_slot_at(&w->blocks, (uint32_t)slot);
    int64_t stack = e->stack;
    int decided = phase_timeline_decided(w->timeline, stack, ts);
    int64_t iteration;
    step_phase at_time = phase_timeline_at(w->timeline, &w->cursor, id, &iteration);
    while (*next_name < c->nnamed && c->named[*next_name].alloc_id < id)
        (*next_name)++;
    int named = *next_name < c->nnamed && c->named[*next_name].alloc_id == id;
    *b = (live_block){id,
                      e->size,
                      stack,
                      iteration,
                      (uint8_t)(decided >= 0 ? decided : (int)at_time),
                      (uint8_t)(decided >= 0),
                      (uint8_t)(named ? c->named[*next_name].category + 1 : 0),
                      (uint8_t)named};
    return addr_map_put(&w->live, 0, (uint64_t)id, (uint32_t)slot + 1) != 0 ? -1 : 0;
}

/* Sweeps the devices of ws[0..n) in one pass over the events (one device: only its rows). */
static int sweep_devices(categorizer *c, sweep *ws, size_t n, category_visit visit, void *ctx,
                         char *err, size_t errlen) {
    sweep *of[GMT_MAX_DEVICES] = {0};
    for (size_t i = 0; i < n; i++)
        if (ws[i].device >= 0 && ws[i].device < GMT_MAX_DEVICES)
            of[ws[i].device] = &ws[i];
    /* Every event once, in order, its columns decoded a chunk at a time (event_scan.h): through
     * SQL, SQLite's per-value calls cost more than the sweep itself. */
    enum { ID, OP, LEVEL, TS, SIZE, STACK, ALLOC, KIND, DEVICE, NCOL };
    static const int want[NCOL] = {EVENT_COL_event_id,       EVENT_COL_op,   EVENT_COL_level,
                                   EVENT_COL_ts_ns,          EVENT_COL_size, EVENT_COL_stack_id,
                                   EVENT_COL_alloc_event_id, EVENT_COL_kind, EVENT_COL_device};
    uint32_t mask = event_scan_mask(want, NCOL);
    event_scan *scan = event_scan_open(c->db, mask, INT64_MIN, INT64_MAX, err, errlen);
    int rc = scan ? 0 : -2;
    size_t next_name = 0; /* the first name not behind the events read (ids are global) */
    const int64_t *col[EVENT_STORE_NCOLS];
    long got = 0;
    while (rc == 0 && (got = event_scan_next(scan, col)) > 0) {
        const int64_t *v[NCOL];
        event_scan_pick(col, want, NCOL, v);
        for (long i = 0; rc == 0 && i < got; i++) {
            int64_t op = v[OP][i], device = v[DEVICE][i];
            if (op != TRACE_OP_ALLOC && op != TRACE_OP_MAP && op != TRACE_OP_FREE &&
                op != TRACE_OP_UNMAP && op != TRACE_OP_FREE_REQUESTED && op != TRACE_OP_OOM)
                continue;
            sweep *w = device >= 0 && device < GMT_MAX_DEVICES ? of[device] : NULL;
            if (!w)
                continue;
            sweep_event e = {v[ID][i],
                             op,
                             v[LEVEL][i],
                             v[TS][i],
                             event_value_or(v[SIZE][i], 0),
                             event_value_or(v[STACK][i], 0),
                             event_value_or(v[ALLOC][i], 0),
                             v[KIND][i]};
            rc = sweep_row(c, w, &e, &next_name, visit, ctx);
        }
        /* A fed timeline's runs behind the sweep are never asked again (the rest of the runs
         * are few: fed up to here); a scanned one keeps its future, too long to move. */
        for (size_t k = 0; k < n; k++)
            if (ws[k].feed && ws[k].cursor.runs > 1024)
                phase_timeline_forget(ws[k].timeline, &ws[k].cursor);
    }
    if (rc == 0 && got < 0)
        rc = -2;
    if (rc == -2) {
        if (scan)
            snprintf(err, errlen, "sweeping the blocks: %s", event_scan_error(scan));
        rc = -1;
    } else if (rc == -1) {
        snprintf(err, errlen, "sweeping the blocks: %s", sqlite3_errmsg(c->db));
    }
    event_scan_close(scan);
    /* still live at the end, in the order they were made */
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; rc == 0 && i < ws[k].blocks.len; i++) {
            const live_block *b = gmt_slot_at(&ws[k].blocks, (uint32_t)i);
            const uint32_t *at = addr_map_get(&ws[k].live, 0, (uint64_t)b->alloc_id);
            block_end end = {INT64_MAX, 0, 0};
            if (at && *at - 1 == i)
                rc = ended(c, &ws[k], i, &end, visit, ctx);
        }
    return rc;
}

int categorizer_sweep(categorizer *c, int64_t device, category_visit visit, void *ctx, char *err,
                      size_t errlen) {
    sweep w;
    if (load_shared(c, err, errlen) != 0)
        return -1;
    int rc = sweep_open(c, device, &w, err, errlen) == 0
                 ? sweep_devices(c, &w, 1, visit, ctx, err, errlen)
                 : -1;
    sweep_close(&w);
    return rc;
}

int categorizer_sweep_all(categorizer *c, category_visit visit, void *ctx, char *err,
                          size_t errlen) {
    if (load_shared(c, err, errlen) != 0)
        return -1;
    sqlite3_stmt *st = db_statement(c->db, "SELECT device FROM devices ORDER BY device");
    sweep *ws = calloc(GMT_MAX_DEVICES, sizeof *ws);
    size_t n = 0;
    int rc = st && ws ? 0 : -1, failed = 0;
    while (rc == 0 && db_next_row(st, &failed) && n < GMT_MAX_DEVICES)
        rc = sweep_open(c, sqlite3_column_int64(st, 0), &ws[n++], err, errlen);
    sqlite3_finalize(st);
    if (rc == 0 && failed)
        rc = -1;
    if (rc == -1 && !err[0])
        snprintf(err, errlen, "reading devices: %s", sqlite3_errmsg(c->db));
    if (rc == 0 && n)
        rc = sweep_devices(c, ws, n, visit, ctx, err, errlen);
    for (size_t i = 0; ws && i < n; i++)
        sweep_close(&ws[i]);
    free(ws);
    return rc;
}

typedef struct at_events {
    const int64_t *ids; /* sorted */
    size_t n;
    int64_t *delta; /* [category * (n + 1) + slot]: slot i holds what changes after ids[i - 1] */
} at_events;

/* The first slot whose moment includes event id: ids[slot] >= id (n: after the last). */
static size_t slot_of(const at_events *a, int64_t id) {
    return gmt_search_i64(a->ids, a->n, sizeof *a->ids, 0, id, 0);
}

static int count_at_events(void *ctx, const classified_block *b) {
    at_events *a = ctx;
    int64_t *row = a->delta + (size_t)b->category * (a->n + 1);
    row[slot_of(a, b->alloc_id)] += b->size;
    if (b->free_event_id != INT64_MAX)
        row[slot_of(a, b->free_event_id)] -= b->size;
    return 0;
}

int categories_live_at(categorizer *c, int64_t device, const int64_t *event_ids, size_t n,
                       int64_t *bytes, char *err, size_t errlen) {
    at_events a = {event_ids, n, calloc((size_t)BLOCK_CATEGORY_COUNT * (n + 1), sizeof(int64_t))};
    if (!a.delta) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = categorizer_sweep(c, device, count_at_events, &a, err, errlen);
    for (int k = 0; rc == 0 && k < BLOCK_CATEGORY_COUNT; k++) {
        const int64_t *row = a.delta + (size_t)k * (n + 1);
        int64_t live = 0;
        for (size_t i = 0; i < n; i++) {
            live += row[i];
            bytes[(size_t)k * n + i] = live;
        }
    }
    free(a.delta);
    return rc;
}

int categories_at_event(categorizer *c, int64_t device, int64_t event_id,
                        int64_t bytes[BLOCK_CATEGORY_COUNT], char *err, size_t errlen) {
    return categories_live_at(c, device, &event_id, 1, bytes, err, errlen);
}
