/* replay_state.h — the replay's state, shared by replay.c (records, rows,
 * the end), replay_memory.c (what memory events do to segments and blocks)
 * and replay_frames.c (frames and stacks, inline chains expanded). Internal
 * to the analyzer: nothing outside these three includes it.
 *
 * Ownership: replay_trace and replay_records (replay.c) create one `replay`, run both passes
 * and free everything it holds. */
#ifndef GMT_REPLAY_STATE_H
#define GMT_REPLAY_STATE_H

#include "replay.h"
#include "replay_strings.h"

#include "addr_map.h"
#include "alloc_model.h"
#include "series_levels.h"
#include "site_levels.h"
#include "site_stats.h"
#include "steps.h"
#include "trace_format.h"

#include <stdint.h>

#define BUCKETS 4096
#define WARNINGS_PER_CODE 100

enum space { SPACE_SEGMENT, SPACE_BLOCK, SPACE_PHYS, SPACE_VA, SPACE_COUNT };

typedef struct live_entry {
    int64_t event_id, alloc_ts, stack_id, driver_stack_id, segment_id;
    uint64_t addr, size, requested, stream, pool;
    uint32_t tid, device, next_free;
    uint8_t space, kind, sources, in_model, whole_block, mapped, ended;
    uint8_t pending; /* a block whose free was requested, not completed */
} live_entry;

/* One open bucket of a level of timeline_levels (replay_levels.c). */
typedef struct level_acc {
    int64_t index, first_id, last_id, events;
    int64_t min_a, max_a, min_r, max_r, end_a, end_r;
    int64_t max_a_id; /* the first event at max_a */
    int64_t ooms;
} level_acc;
#define REPLAY_LEVELS_MAX 20

typedef struct bucket_acc {
    int64_t index, first_id, last_id, events;
    int64_t min_alloc, max_alloc, min_res, max_res, max_req, min_free;
    int64_t end_alloc, end_res; /* after the last event so far */
} bucket_acc;

/* The free part of the model's segments at one moment (free_splits). */
typedef struct split_now {
    int64_t reserved, allocated, releasable;
} split_now;

typedef struct device_state {
    int present;
    am_model *model;
    uint64_t orphan_allocated, orphan_requested; /* device blocks outside every segment */
    uint64_t phys_bytes, mapped_bytes;
    uint64_t whole_blocks; /* live segments counted as one block (see end_whole_block) */
    int uses_phys;         /* the trace has cuMemCreate on this device */
    uint8_t over_reserved, over_allocated; /* an invariant is broken now (warned once) */
    uint64_t fast_events; /* ordinary events that may pass before the totals are looked at */
    int64_t peak_alloc, peak_alloc_id, peak_res, peak_res_id, peak_req, peak_req_id;
    int64_t peak_segments; /* the most live segments after any state row */
    split_now peak_split;  /* the free split when allocated peaked (free_splits) */
    int64_t last_event_id; /* of the device's rows: the seed row's, then its events' */
    int64_t last_row_ts;   /* that row's ts_ns */
    int64_t allocs, frees, ooms, alloc_failed; /* recorded (event_id >= 1) */
    int64_t cache_allocs, cache_misses; /* PyTorch's block allocations; those after new memory */
    int new_memory;                     /* PyTorch's last event here made new driver memory */
    char *name;
    int64_t total_bytes;
    bucket_acc bucket;
    level_acc levels[REPLAY_LEVELS_MAX]; /* the open bucket of each level (replay_levels.c) */
    int64_t level_key;                   /* the running max of its rows' place on that axis */
    struct heat_rows *heat;              /* the heatmap's rows of this device (heat_rows.h) */
} device_state;

typedef struct replay {
    db_writer *db;
    const replay_options *opt;
    char *err;
    size_t errlen;
    int failed;
    replay_summary own_summary; /* `sum` when the caller asks for none */

    device_state dev[GMT_MAX_DEVICES];
    live_entry *entries;
    size_t entries_len, entries_cap;
    uint32_t free_entry; /* head of the free list, 1-based; 0 = none */
    addr_map live;
    addr_map torch_segments; /* first pass: (device, addr) PyTorch reports as a segment */

    replay_strings *strings; /* the trace's strings by id (replay_strings.h) */
    /* frames, symbols, stacks and modules (replay_frames.c): kept until the end, since a
     * SYMBOL record may come after the stacks that use its frame. Each kind in the order its
     * ids first came, found by id through a hash: an id is any 32-bit number a record names,
     * so memory follows the records read, never the largest id */
    struct frame_info {
        trace_frame frame;                 /* frame.frame_id: its id, also without a FRAME */
        uint32_t chain_first, chain_count; /* its inline chain in `chains`; 0: none */
        int64_t inline_first;              /* db id of its innermost inlined row; 0: none */
        uint8_t known;                     /* its FRAME record was read */
    } * frames;
    size_t frames_len, frames_cap;
    addr_map frame_index;       /* frame id -> index in `frames` */
    trace_symbol_entry *chains; /* every SYMBOL record's entries, back to back */
    size_t chains_len, chains_cap;
    trace_stack *stacks; /* the STACK records, in file order */
    size_t stacks_len, stacks_cap;
    struct module_info {
        uint32_t module_id;
        char *path;
    } * modules;
    size_t modules_len, modules_cap;
    addr_map module_index; /* module id -> index in `modules` */

    /* time and ids */
    uint64_t t0; /* the trace clock's origin: the first event after the seed (replay_ts) */
    int64_t bucket_ns;
    int level_shift, level_count, level_event_axis; /* timeline_levels (replay_levels.c) */
    uint64_t seed_events_total, seed_seen;
    int in_seed;
    int64_t next_seed_id, last_event_id;
    int64_t last_ts;
    int seed_rows_written;
    uint64_t marker_count;

    am_settings settings;        /* the allocator's settings the models follow */
    const char *settings_source; /* meta allocator_settings_source */
    am_config config;            /* the models' configuration, from `settings` */
    int torch_maps;              /* first pass: PyTorch mapped memory (expandable segments) */
    /* pieces of mapped rows cut by an unmap that still need a row of their own (see
     * replay_memory.c's split_rows): each takes the id of a later event that makes no row */
    struct pending_piece {
        uint32_t device;
        uint64_t addr, size, stream;
        int64_t stack_id;
    } * pieces;
    size_t pieces_len, pieces_cap;
    int row_made; /* the event being replayed made a segments row */

    step_tracker *steps;
    site_stats *sites;
    int64_t process_rank;     /* the trace's PROCESS record's rank (RANK); -1: none or unknown */
    site_levels *site_levels; /* the blocks per stack per chunk of event ids */
    series_levels *series;    /* the series at each level bucket's max; NULL: too few levels */
    struct open_marker {
        uint64_t key; /* tid of a push, range id of a start */
        int64_t marker_id;
        uint32_t name_id;
        int is_push;
    } * open_markers; /* ranges not yet closed, to pair pops/ends with them */
    size_t open_len, open_cap;
    uint64_t warn_counts[DB_WARNING_COUNT]; /* raised so far, by kind */
    /* the allocator configuration a live trace recorded (a "PYTORCH_CUDA_ALLOC_CONF=..." mark of
     * the domain "memrec.allocator", found by the first pass); "" when none */
    char trace_conf[AM_SETTINGS_CONF_MAX];
    uint64_t warnings_total;
    int saw_end; /* the trace's end record was read (else meta clean_shutdown = 0) */
    replay_summary *sum;
    /* called as each step ends, after its steps row (replay_live.c keeps the step ends) */
    void (*step_end_hook)(void *ctx, const step_interval *step);
    void *hook_ctx;
} replay;

/* ---- the driver (replay.c), also run record by record by replay_live.c ---- */

struct scan_result;

/* A replay writing to db (its first error into err); NULL: out of memory (err says so). */
replay *replay_state_new(db_writer *db, const replay_options *opt, replay_summary *summary,
                         char *err, size_t errlen);
/* Between the passes: what the first found (sr) sets up the second. 0 or -1. */
int replay_state_start(replay *rp, const struct scan_result *sr);
/* One record of the second pass. 0 or -1. */
int replay_state_record(replay *rp, const trace_record *rec);
void replay_state_free(replay *rp);

/* ---- services every replay file uses (replay_services.c) ---- */

/* A time of the trace's clock as the rows keep it: ns since the origin (negative before it),
 * a forged one further away as +-REPLAY_TS_MAX: never DB_NULL (INT64_MIN), never the steps'
 * "still open" (INT64_MAX), never an overflow. */
#define REPLAY_TS_MAX (INT64_MAX - 1)
static inline int64_t replay_ts(const replay *rp, uint64_t ts_ns) {
    if (ts_ns >= rp->t0)
        return ts_ns - rp->t0 > REPLAY_TS_MAX ? REPLAY_TS_MAX : (int64_t)(ts_ns - rp->t0);
    return rp->t0 - ts_ns > REPLAY_TS_MAX ? -REPLAY_TS_MAX : -(int64_t)(rp->t0 - ts_ns);
}

/* A count or a number of bytes from the trace as a signed column: past 2^63 - 1 as 2^63 - 1
 * (so never DB_NULL). */
static inline int64_t replay_clamp(uint64_t v) { return v > INT64_MAX ? INT64_MAX : (int64_t)v; }

/* Records the first error (one line) and returns -1. */
int replay_fail(replay *rp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Turns a db_writer result into replay_fail's. */
int replay_db_ok(replay *rp, int rc);
/* A replay anomaly: counted, and written to `warnings` for the first
 * WARNINGS_PER_CODE of each code. */
void replay_warn(replay *rp, int64_t event_id, db_warning kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The text of string `id`; NULL for 0 and for an id the trace never defined (a damaged trace:
 * callers take it as no name). */
const char *replay_string(const replay *rp, uint32_t id);
uint64_t replay_space_key(uint32_t device, enum space space);

/* The live-allocation table: (device, space, addr) -> live_entry. */
live_entry *live_get(replay *rp, uint32_t device, enum space space, uint64_t addr);
live_entry *live_new(replay *rp, uint32_t device, enum space space, uint64_t addr);
void live_drop(replay *rp, live_entry *e);
uint32_t live_tag(const replay *rp, const live_entry *e);

/* The invariants after an event on `device` (allocated <= reserved, requested <=
 * allocated): a warning when one starts to fail. O(1). */
void replay_check_invariants(replay *rp, uint32_t device, int64_t event_id);
/* The model's self-check of every device (after the seed, at the end): a warning per device
 * whose layout is broken. O(n log n). */
void replay_check_layouts(replay *rp, const char *when);

/* A device's running totals as its rows carry them (allocated and requested with the blocks
 * outside every segment, reserved of physical memory when it has cuMemCreate). */
typedef struct replay_totals {
    int64_t allocated, requested, reserved, segments, largest_free;
} replay_totals;
replay_totals replay_device_totals(const device_state *d);
/* The free part of the device's segments now (free_splits). */
split_now replay_split_of(const device_state *d);

/* Fills a row's totals from its device, tracks peaks and buckets, writes it. */
int replay_write_row(replay *rp, db_event_row *row);

/* A free_splits row: the device's split now, as the state after `event_id`. */
int replay_write_split(replay *rp, uint32_t device, int64_t event_id);

/* free_splits rows for every device with rows, each keyed by the device's own last row: where
 * a step's end (step_ends.event_id) and the end of a window find them. */
int replay_write_splits(replay *rp);

/* At the end: each device's split at its peak allocated. */
int replay_write_peak_splits(replay *rp);

/* step_ends rows: each device's state now, for a step that ended at `end_event_id`. */
int replay_write_step_ends(replay *rp, int64_t end_event_id);
/* Ends the device's current time bucket; `next` is the index of the bucket
 * that follows (INT64_MAX at the end of the trace). */
int replay_flush_bucket(replay *rp, uint32_t device, int64_t next);

/* ---- replay_levels.c: timeline_levels ---- */
/* The levels for a trace of `events` events over `span` ns (the event axis: event ids). */
void replay_levels_setup(replay *rp, uint64_t span, uint64_t events, int event_axis);
/* A row of the device and its totals after it (oom: the row is an 'oom' event). 0 or -1. */
int replay_levels_note(replay *rp, uint32_t device, int64_t event_id, int64_t ts, int64_t allocated,
                       int64_t reserved, int oom);
/* The end: every level's open bucket written. 0 or -1. */
int replay_levels_flush(replay *rp, uint32_t device);
void replay_levels_meta(replay *rp);
/* Before applying an event at ts on device: closes the device's bucket
 * when the event starts a new one. 0 or -1. */
int replay_bucket_before(replay *rp, uint32_t device, int64_t ts);
/* One 'seed' row per device: the state when the recording began. */
int replay_write_seed_rows(replay *rp);

/* ---- replay_frames.c ---- */

/* The records that define frames and stacks: kept, nothing written yet.
 * 0, or -1 (out of memory, through replay_fail). */
int replay_on_frame(replay *rp, const trace_frame *f);
int replay_on_symbol(replay *rp, const trace_symbol *s);
int replay_on_stack(replay *rp, const trace_stack *s);
/* A MODULE record: its row, and its path kept for the native frames in it. 0 or -1. */
int replay_on_module(replay *rp, const trace_module *m);
/* At the end: the frames and stacks rows, inline chains expanded. 0 or -1. */
int replay_write_frames(replay *rp);
/* Frees what the four above keep. */
void replay_frames_free(replay *rp);

/* ---- replay_scan.c: the first pass ---- */

typedef struct scan_result {
    int have_t0;
    uint64_t first_ts, last_ts; /* the trace's clock */
    int any_ts;
    uint64_t first_any_ts;
    uint64_t seed_events;
    uint64_t events; /* memory events the second pass replays (timeline_levels' density) */
    int has_seed_end;
} scan_result;

typedef struct replay_scan {
    scan_result result;
    int in_seed_candidate;
    uint64_t events_before_marker;
    uint32_t conf_id[3]; /* see replay_scan_record */
    char conf[3][AM_SETTINGS_CONF_MAX];
    int conf_marked; /* the best kind of allocator mark seen so far */
} replay_scan;

void replay_scan_begin(replay_scan *ss);
/* What the second pass needs of one record: into ss, rp->dev[] (present, uses_phys, heat),
 * rp->torch_maps, rp->torch_segments and rp->trace_conf. 0, or -1 (out of memory). */
int replay_scan_record(replay *rp, replay_scan *ss, const trace_record *rec);
const scan_result *replay_scan_end(replay_scan *ss);

/* ---- replay_names.c ---- */

/* A mark of the domain TRACE_TENSOR_DOMAIN: its name binds to the block live at its address
 * (a tensor_names row); ignored when nothing is live there. 0 or -1. */
int replay_on_tensor_name(replay *rp, const trace_marker *m);

/* ---- replay_memory.c ---- */

/* The most bytes a memory event may give, and a device's totals (reserved, allocated,
 * requested, physical, mapped) may reach: 2^60, millions of times any device's memory, and far
 * enough below 2^63 that no sum of them overflows. An event past it is a warning
 * (event_out_of_range) that changes nothing. */
#define REPLAY_MAX_BYTES (1ULL << 60)
/* Why the numbers of a memory event alone cannot be memory (a size over REPLAY_MAX_BYTES, a
 * range past the end of the address space or touching 2^63), or NULL. Both passes ask. */
const char *replay_event_out_of_range(const trace_event *ev);
/* The test that clears nearly every event at once: an address below 2^62 and sizes below 2^40
 * pass replay_event_out_of_range, and a device's totals far enough from the bound take them
 * (device_state.fast_events counts how many). */
static inline int replay_event_ordinary(const trace_event *ev) {
    return ((ev->addr >> 62) | ((ev->size | ev->requested) >> 40)) == 0;
}

/* Applies one memory event and writes its row. 0 or -1. */
int replay_event(replay *rp, const trace_event *ev);
/* The segments row of a segment lifetime (free_* DB_NULL while live). */
int replay_write_segment_row(replay *rp, const live_entry *e, int64_t free_ts,
                             int64_t free_event_id, int64_t free_stack);

#endif
