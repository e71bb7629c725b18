/* test_window_levels.c — an event window's peak and sites from the replay's levels
 * (query/window_levels.h) against brute force over the same database: the peak from the
 * device's event_rows rows in the window, the sites from SQL over the `allocations` view (kind
 * 'device', alloc_id in the window, grouped by stack).
 *
 * Inputs: a hand-built two-device trace that does what the levels must survive, each many
 * times over ~200 k events (so every level of site_levels is used): plain cudaMalloc segments
 * (whole blocks) freed and live at the end; CUPTI's and PyTorch's reports of one segment, the
 * second at once or ~20 k events later (the segment counted as a block, then taken back after
 * its chunk was written: a correction row); a block landing in a plain segment long after it
 * was made (taken back too); OOMs; both event stores (the cache's chunks and `import -o`'s
 * plain table). A synthetic training run of two devices, and the real snapshots of
 * ../shared/data/pytorch when present. Windows: random ones of every width, ones cut exactly on
 * chunk edges, one event wide, empty, before the first event and past the last, the whole run.
 * A wide window reads its ends' events only (events_read bounded); a database without the
 * levels (an older memanalyze's) answers the same from every event of the window, or says it
 * has no peaks.
 *
 * argv: SOURCE_DIR */
#include "check.h"
#include "db_open.h"
#include "event_store.h"
#include "input.h"
#include "trace_build.h"
#include "training_sim.h"
#include "window_levels.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_random(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static int64_t below(int64_t n) { return n > 0 ? (int64_t)(next_random() % (uint64_t)n) : 0; }

static int windows_checked, wide_windows, chunks_used;

/* ---- brute force ------------------------------------------------------------------------ */

/* A database's rows, read once: every event (device, allocated bytes, an OOM or not) and every
 * block of the `allocations` view of kind 'device', both by id. */
typedef struct rows {
    size_t nev, nal;
    int64_t *ev_id, *ev_dev, *ev_alloc, *ev_oom;
    int64_t *al_id, *al_dev, *al_stack, *al_size;
} rows;

static rows the_rows;

static void load_rows(sqlite3 *d) {
    rows *r = &the_rows;
    memset(r, 0, sizeof *r);
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    CHECK(sqlite3_prepare_v2(d,
                             "SELECT event_id, device, allocated_bytes, op = 'oom' FROM events "
                             "ORDER BY event_id",
                             -1, &st, NULL) == SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (r->nev == cap) {
            cap = cap ? cap * 2 : 4096;
            r->ev_id = realloc(r->ev_id, cap * sizeof(int64_t));
            r->ev_dev = realloc(r->ev_dev, cap * sizeof(int64_t));
            r->ev_alloc = realloc(r->ev_alloc, cap * sizeof(int64_t));
            r->ev_oom = realloc(r->ev_oom, cap * sizeof(int64_t));
        }
        r->ev_id[r->nev] = sqlite3_column_int64(st, 0);
        r->ev_dev[r->nev] = sqlite3_column_int64(st, 1);
        r->ev_alloc[r->nev] = sqlite3_column_int64(st, 2);
        r->ev_oom[r->nev++] = sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
    cap = 0;
    CHECK(sqlite3_prepare_v2(d,
                             "SELECT alloc_id, device, coalesce(alloc_stack_id, 0), size FROM "
                             "allocations WHERE kind = 'device' ORDER BY alloc_id",
                             -1, &st, NULL) == SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (r->nal == cap) {
            cap = cap ? cap * 2 : 4096;
            r->al_id = realloc(r->al_id, cap * sizeof(int64_t));
            r->al_dev = realloc(r->al_dev, cap * sizeof(int64_t));
            r->al_stack = realloc(r->al_stack, cap * sizeof(int64_t));
            r->al_size = realloc(r->al_size, cap * sizeof(int64_t));
        }
        r->al_id[r->nal] = sqlite3_column_int64(st, 0);
        r->al_dev[r->nal] = sqlite3_column_int64(st, 1);
        r->al_stack[r->nal] = sqlite3_column_int64(st, 2);
        r->al_size[r->nal++] = sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
}

static void free_rows(void) {
    rows *r = &the_rows;
    free(r->ev_id), free(r->ev_dev), free(r->ev_alloc), free(r->ev_oom);
    free(r->al_id), free(r->al_dev), free(r->al_stack), free(r->al_size);
    memset(r, 0, sizeof *r);
}

static void brute_peak(int device, int64_t from, int64_t to, window_peak *p) {
    const rows *r = &the_rows;
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < r->nev; i++) {
        if (r->ev_dev[i] != device || r->ev_id[i] <= from || r->ev_id[i] > to)
            continue;
        if (!p->events || r->ev_alloc[i] > p->max_allocated)
            p->max_allocated = r->ev_alloc[i], p->max_event_id = r->ev_id[i];
        p->events++;
        p->ooms += r->ev_oom[i];
    }
}

static int by_stack(const void *a, const void *b) {
    const window_site *x = a, *y = b;
    return (x->stack_id > y->stack_id) - (x->stack_id < y->stack_id);
}

/* The sites from the allocations view, by stack id. */
static size_t brute_sites(int device, int64_t from, int64_t to, window_site **out) {
    const rows *r = &the_rows;
    size_t n = 0, cap = 0;
    *out = NULL;
    for (size_t i = 0; i < r->nal; i++) {
        if (r->al_dev[i] != device || r->al_id[i] <= from || r->al_id[i] > to)
            continue;
        size_t k = 0;
        while (k < n && (*out)[k].stack_id != r->al_stack[i])
            k++;
        if (k == n) {
            if (n == cap)
                *out = realloc(*out, (cap = cap ? cap * 2 : 64) * sizeof **out);
            (*out)[n++] = (window_site){r->al_stack[i], 0, 0};
        }
        (*out)[k].blocks++;
        (*out)[k].bytes += r->al_size[i];
    }
    if (n)
        qsort(*out, n, sizeof **out, by_stack);
    return n;
}

/* ---- one window --------------------------------------------------------------------------- */

static void check_window(sqlite3 *d, int device, int64_t last, int64_t from, int64_t to,
                         int expect_levels, const char *what) {
    char err[256] = "";
    window_peak p, want;
    int rc = window_levels_peak(d, device, from, to, &p, err, sizeof err);
    if (rc != (expect_levels ? 0 : 1))
        fprintf(stderr, "%s: peak rc %d (%s)\n", what, rc, err);
    CHECK(rc == (expect_levels ? 0 : 1));
    brute_peak(device, from, to, &want);
    if (rc == 0) {
        int same = p.events == want.events && p.ooms == want.ooms &&
                   (!p.events ||
                    (p.max_allocated == want.max_allocated && p.max_event_id == want.max_event_id));
        if (!same)
            fprintf(stderr,
                    "%s: device %d (%lld, %lld]: peak %lld at %lld, %lld events, %lld OOMs; "
                    "the rows say %lld at %lld, %lld, %lld\n",
                    what, device, (long long)from, (long long)to, (long long)p.max_allocated,
                    (long long)p.max_event_id, (long long)p.events, (long long)p.ooms,
                    (long long)want.max_allocated, (long long)want.max_event_id,
                    (long long)want.events, (long long)want.ooms);
        CHECK(same);
    }

    window_sites s;
    CHECK(window_levels_sites(d, device, from, to, &s, err, sizeof err) == 0);
    window_site *ws = NULL;
    size_t nw = brute_sites(device, from, to, &ws), n = 0;
    for (size_t i = 0; i < s.n; i++) /* those counted and taken back are no sites */
        if (s.sites[i].blocks != 0 || s.sites[i].bytes != 0)
            s.sites[n++] = s.sites[i];
    if (n)
        qsort(s.sites, n, sizeof *s.sites, by_stack);
    int same = n == nw && (n == 0 || memcmp(s.sites, ws, n * sizeof *ws) == 0);
    int64_t blocks = 0, bytes = 0;
    for (size_t i = 0; i < nw; i++)
        blocks += ws[i].blocks, bytes += ws[i].bytes;
    same = same && s.blocks == blocks && s.bytes == bytes;
    if (!same) {
        fprintf(stderr,
                "%s: device %d (%lld, %lld]: %zu sites, %lld blocks; the view says %zu, %lld\n",
                what, device, (long long)from, (long long)to, n, (long long)s.blocks, nw,
                (long long)blocks);
        for (size_t i = 0; i < n || i < nw; i++)
            fprintf(stderr, "  levels %lld %lld %lld | view %lld %lld %lld\n",
                    i < n ? (long long)s.sites[i].stack_id : -1,
                    i < n ? (long long)s.sites[i].blocks : -1,
                    i < n ? (long long)s.sites[i].bytes : -1,
                    i < nw ? (long long)ws[i].stack_id : -1, i < nw ? (long long)ws[i].blocks : -1,
                    i < nw ? (long long)ws[i].bytes : -1);
    }
    CHECK(same);
    /* a wide window reads its ends (< one finest chunk each, decoded in the store's chunks of
     * rows), not itself */
    if (expect_levels && (to < last ? to : last) - from > 8 * 16384) {
        wide_windows++;
        chunks_used += s.level_rows > 0;
        CHECK(s.events_read <= 2 * (16384 + 2 * EVENT_STORE_CHUNK_ROWS));
        CHECK(p.events_read <= 8 * EVENT_STORE_CHUNK_ROWS);
    }
    window_sites_free(&s);
    free(ws);
    windows_checked++;
}

static int64_t max_event(sqlite3 *d) {
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(d, "SELECT max(event_id) FROM events", -1, &st, NULL) == SQLITE_OK);
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return v;
}

/* Windows of every kind on every device of d. */
static void check_windows(sqlite3 *d, int expect_levels, int random_windows, const char *what) {
    int64_t last = max_event(d);
    load_rows(d);
    int devs[8], nd = 0;
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(d, "SELECT device FROM devices ORDER BY device", -1, &st, NULL) ==
          SQLITE_OK);
    while (nd < 8 && sqlite3_step(st) == SQLITE_ROW)
        devs[nd++] = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    static const int64_t widths[] = {0, 1, 2, 100, 16383, 16384, 16385, 50000, 131072, 400000};
    for (int i = 0; i < nd; i++) {
        int dev = devs[i];
        check_window(d, dev, last, -5, last + 5, expect_levels, what); /* the whole run */
        check_window(d, dev, last, 0, last, expect_levels, what);
        check_window(d, dev, last, last, last, expect_levels, what);            /* empty */
        check_window(d, dev, last, last + 10, last + 100, expect_levels, what); /* past the end */
        check_window(d, dev, last, -100, -50, expect_levels, what); /* before the start */
        for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
            int64_t from = below(last + 2) - 1;
            check_window(d, dev, last, from, from + widths[k], expect_levels, what);
        }
        for (int k = 0; k < random_windows; k++) { /* on chunk edges, and anywhere */
            int64_t a = below(last / 16384 + 1) * 16384 - 1, b = a + (below(24) + 1) * 16384;
            check_window(d, dev, last, a, b, expect_levels, what);
            int64_t from = below(last + 20) - 10, to = from + below(last - from + 10);
            check_window(d, dev, last, from, to, expect_levels, what);
        }
    }
    free_rows();
}

/* ---- the inputs ----------------------------------------------------------------------------- */

static uint32_t stacks[24];

static void make_stacks(void) {
    for (int i = 0; i < 24; i++) {
        char fn[32];
        snprintf(fn, sizeof fn, "site_%d", i);
        trace_frame f = {.kind = TRACE_FRAME_PYTHON,
                         .function_id = trace_writer_string(w, fn, strlen(fn)),
                         .file_id = trace_writer_string(w, "train.py", 8),
                         .line = (uint32_t)(10 + i)};
        uint32_t frame = trace_writer_frame(w, &f);
        stacks[i] = trace_writer_stack(w, 0, frame);
    }
}

static void dev_event(uint32_t device, trace_op op, trace_level level, trace_source source,
                      uint64_t addr, uint64_t size, uint32_t stack) {
    write_event((trace_event){.addr = addr,
                              .size = size,
                              .requested = size,
                              .stack_id = stack,
                              .tid = 7,
                              .device = device,
                              .op = (uint8_t)op,
                              .level = (uint8_t)level,
                              .source = (uint8_t)source});
}

#define SLOTS 256
#define SLOT_BYTES (4 * MiB)
#define BLOCKS_PER_SLOT 16

/* One device's segments: a slot is empty, a plain cudaMalloc (a whole block), or PyTorch's
 * segment (reported by both, the second report maybe waiting) with blocks inside. */
typedef struct slot {
    int state;          /* 0 empty, 1 plain, 2 torch's */
    int64_t report_at;  /* PyTorch's report of the segment still to come at this event count */
    int64_t counted_at; /* > 0: counted as a whole block since this event id */
    uint64_t blocks;    /* bit i: block i (of SLOT_BYTES / BLOCKS_PER_SLOT) is live */
} slot;

static slot slots[2][SLOTS];
static int64_t written_events;  /* = the event id of the last one written (no seed) */
static int64_t taken_back_late; /* segments taken back in a later chunk than their own */

/* The segment stops being one whole block (the replay takes it back). */
static void taken_back(slot *s) {
    if (s->counted_at && s->counted_at / 16384 < (written_events + 1) / 16384)
        taken_back_late++;
    s->counted_at = 0;
}

static void emit(uint32_t device, trace_op op, trace_level level, trace_source source,
                 uint64_t addr, uint64_t size, uint32_t stack) {
    dev_event(device, op, level, source, addr, size, stack);
    written_events++;
}

static uint64_t slot_addr(uint32_t device, int i) {
    return 0x7f0000000000ull + device * 0x1000000000ull + (uint64_t)i * SLOT_BYTES;
}

static void step(uint32_t device) {
    slot *s = &slots[device][below(SLOTS)];
    int i = (int)(s - slots[device]);
    uint64_t addr = slot_addr(device, i), piece = SLOT_BYTES / BLOCKS_PER_SLOT;
    uint32_t stack = stacks[below(24)];
    if (s->state == 2 && s->report_at && written_events >= s->report_at) {
        taken_back(s);
        emit(device, TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, addr, SLOT_BYTES,
             stack); /* PyTorch's late report: the segment was no block after all */
        s->report_at = 0;
        return;
    }
    int64_t r = below(100);
    if (s->state == 0) {
        if (r < 50)
            return;
        emit(device, TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, addr, SLOT_BYTES,
             r < 70 ? stack : 0);
        s->counted_at = written_events;
        if (r < 80) {
            s->state = 1; /* plain */
        } else {
            s->state = 2;
            if (r < 88) {
                taken_back(s);
                emit(device, TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, addr,
                     SLOT_BYTES, stack);
            } else
                s->report_at = written_events + 15000 + below(15000);
        }
        return;
    }
    if (s->state == 1) {
        if (r < 5) { /* freed */
            emit(device, TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, addr, 0, 0);
            s->state = 0;
        } else if (r < 7) { /* a block lands in it: sub-allocated after all */
            taken_back(s);
            emit(device, TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, addr, piece, stack);
            s->state = 2;
            s->blocks = 1;
        }
        return;
    }
    if (r < 15 && !s->blocks && !s->report_at) { /* an empty segment goes back */
        emit(device, TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, addr, 0, 0);
        emit(device, TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, addr, 0, 0);
        s->state = 0;
        return;
    }
    if (r < 4 && below(40) == 0) {
        emit(device, TRACE_OP_OOM, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, 0, 1ull << 34, stack);
        return;
    }
    int b = (int)below(BLOCKS_PER_SLOT);
    if (!(s->blocks & (1ull << b)))
        taken_back(s); /* a block lands in a segment still counted as one */
    if (s->blocks & (1ull << b)) {
        emit(device, TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, addr + b * piece, 0, 0);
        s->blocks &= ~(1ull << b);
    } else {
        emit(device, TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, addr + b * piece, piece,
             stack);
        s->blocks |= 1ull << b;
    }
}

static void replay_into(const char *path, db_writer_events events) {
    char err[512];
    db_writer *dw = db_writer_open(path, events, err, sizeof err);
    CHECK(dw != NULL);
    replay_summary sum;
    int rc = replay_trace(trace_path, dw, NULL, &sum, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "replay: %s\n", err);
    CHECK(rc == 0 && db_writer_finish(dw, err, sizeof err) == 0);
}

static sqlite3 *open_ro(const char *path) {
    sqlite3 *d = NULL;
    char err[256];
    if (db_open_readonly(path, &d, err, sizeof err) != 0)
        fprintf(stderr, "%s: %s\n", path, err);
    CHECK(d != NULL);
    return d;
}

static void test_hand_built(void) {
    begin();
    make_stacks();
    for (uint32_t d = 0; d < 2; d++) {
        trace_device td = {.device = d, .total_bytes = 80ull << 30};
        CHECK(trace_writer_device(w, &td) == 0);
    }
    cupti_segment(TRACE_OP_ALLOC, 0x600000000000ull, 64 * MiB); /* device 0's, live at the end */
    written_events++;
    while (written_events < 200000)
        step(below(4) == 0 ? 1 : 0);
    char store[400], plain[400];
    snprintf(store, sizeof store, "%s/store.db", tmpdir);
    snprintf(plain, sizeof plain, "%s/plain.db", tmpdir);
    replay_it(store, DB_READ_ONLY); /* closes the trace; `db` holds the database open */
    replay_into(plain, DB_EVENTS_TABLE);
    /* what the trace was made to hold: corrections of chunks already written among them */
    int64_t whole = q("SELECT count(*) FROM segments WHERE whole_block = 1"),
            levels = q("SELECT value FROM meta WHERE key = 'site_levels'"),
            ooms = q("SELECT count(*) FROM events WHERE op = 'oom'");
    fprintf(stderr,
            "hand-built: %lld whole-block segments, %lld taken back after their chunk, "
            "%lld levels, %lld OOMs\n",
            (long long)whole, (long long)taken_back_late, (long long)levels, (long long)ooms);
    CHECK(whole > 50 && levels >= 3 && ooms > 50 && taken_back_late > 20);
    sqlite3 *d = db;
    check_windows(d, 1, 40, "hand-built (store)");
    d = open_ro(plain);
    check_windows(d, 1, 10, "hand-built (plain table)");
    db_close(d);

    /* an older memanalyze's database: no site levels, no peaks in timeline_levels */
    CHECK(sqlite3_open(plain, &d) == SQLITE_OK);
    CHECK(sqlite3_exec(d,
                       "DELETE FROM meta WHERE key IN ('site_level_events', 'site_levels'); "
                       "DROP TABLE site_levels; ALTER TABLE timeline_levels DROP COLUMN ooms",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(d);
    d = open_ro(plain);
    check_windows(d, 0, 5, "hand-built (an older database)");
    db_close(d);
}

static void test_synthetic(void) {
    char err[256];
    w = trace_writer_open(trace_path, NULL, err, sizeof err);
    CHECK(w != NULL);
    sim_config cfg = sim_config_default();
    cfg.devices = 2;
    cfg.layers = 2;
    cfg.hidden = 256;
    cfg.max_events = 150000;
    cfg.leak_bytes = MiB;
    sim_result res;
    CHECK(sim_run(&cfg, w, &res, err, sizeof err) == 0);
    CHECK(trace_writer_close(w, NULL, err, sizeof err) == 0);
    char path[400];
    snprintf(path, sizeof path, "%s/synth.db", tmpdir);
    replay_into(path, DB_EVENTS_STORE);
    sqlite3 *d = open_ro(path);
    check_windows(d, 1, 10, "synthetic");
    db_close(d);
}

static void test_snapshots(const char *source_dir) {
    static const char *const names[] = {"train-step-m512", "lm-ctx512-forward",
                                        "pt21-no-timestamps", "segments-only"};
    int found = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char input[1024], path[400], err[512];
        snprintf(input, sizeof input, "%s/../shared/data/pytorch/%s.pickle", source_dir, names[i]);
        if (access(input, R_OK) != 0)
            continue;
        found++;
        snprintf(path, sizeof path, "%s/snap%zu.db", tmpdir, i);
        input_kind kind;
        input_options opt;
        memset(&opt, 0, sizeof opt);
        opt.quiet = 1;
        CHECK(input_detect(input, &kind, err, sizeof err) == 0 &&
              input_build_database(input, kind, path, &opt, err, sizeof err) == 0);
        sqlite3 *d = open_ro(path);
        check_windows(d, 1, 10, names[i]);
        db_close(d);
    }
    if (!found)
        fprintf(stderr,
                "no ../shared/data/pytorch snapshots here: hand-built and synthetic only\n");
}

int main(int argc, char **argv) {
    if (tmpdir_make("window-levels") != 0)
        return 1;
    db_configure_process();
    CHECK(event_store_register() == SQLITE_OK);
    test_hand_built();
    test_synthetic();
    test_snapshots(argc > 1 ? argv[1] : ".");
    fprintf(stderr, "%d windows, %d wide ones (%d from chunks)\n", windows_checked, wide_windows,
            chunks_used);
    /* the hand-built and synthetic inputs alone make 380 windows (a clone without ../shared) */
    CHECK(windows_checked >= 380 && wide_windows > 40 && chunks_used == wide_windows);
    return tmpdir_finish("test_window_levels");
}
