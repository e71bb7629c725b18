/* test_layout_index.c — the layouts' checkpoints (layout_index.h) change what a layout costs,
 * never what it says: every moment of a damaged hand-built trace and of a two-device synthetic
 * run, built from checkpoints taken at nearly every row and at a sparse spacing, equals the
 * layout from the pass over every row (layout.h), field by field; one at a time and many in
 * one call. And the file: built once, reused, built again when stale or damaged, never left
 * half-written. */
#include "category_store.h"
#include "check.h"
#include "input.h"
#include "layout.h"
#include "layout_index.h"
#include "trace_build.h"
#include "training_sim.h"
#include "view_stacks.h"
#include "view_window.h"

#include <sys/stat.h>

static int blocks_equal(const layout_block *x, const layout_block *y, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (x[k].addr != y[k].addr || x[k].size != y[k].size || x[k].requested != y[k].requested ||
            x[k].stream != y[k].stream || x[k].alloc_event_id != y[k].alloc_event_id ||
            x[k].stack_id != y[k].stack_id || x[k].state != y[k].state)
            return 0;
    return 1;
}

static int layouts_equal(const layout *a, const layout *b) {
    if (!a || !b || a->device != b->device || a->event_id != b->event_id ||
        a->segment_count != b->segment_count || a->block_count != b->block_count ||
        a->outside_count != b->outside_count || a->lifetime_count != b->lifetime_count ||
        a->reserved_bytes != b->reserved_bytes || a->allocated_bytes != b->allocated_bytes ||
        a->pending_bytes != b->pending_bytes || a->requested_bytes != b->requested_bytes ||
        a->largest_free_bytes != b->largest_free_bytes ||
        a->releasable_bytes != b->releasable_bytes || a->trapped_bytes != b->trapped_bytes ||
        a->free_bytes != b->free_bytes || a->outside_bytes != b->outside_bytes ||
        a->live_blocks != b->live_blocks || a->conflicts != b->conflicts)
        return 0;
    for (size_t i = 0; i < a->segment_count; i++) {
        const layout_segment *x = &a->segments[i], *y = &b->segments[i];
        if (x->addr != y->addr || x->size != y->size || x->stream != y->stream ||
            x->segment_id != y->segment_id || x->stack_id != y->stack_id ||
            x->mapped != y->mapped || x->whole_block != y->whole_block || x->pool != y->pool ||
            x->small_pool != y->small_pool || x->first_block != y->first_block ||
            x->block_count != y->block_count || x->allocated_bytes != y->allocated_bytes ||
            x->pending_bytes != y->pending_bytes || x->releasable_bytes != y->releasable_bytes ||
            x->live_blocks != y->live_blocks || x->gaps != y->gaps)
            return 0;
    }
    for (size_t i = 0; i < a->lifetime_count; i++)
        if (a->lifetimes[i].segment_id != b->lifetimes[i].segment_id)
            return 0;
    return blocks_equal(a->blocks, b->blocks, a->block_count) &&
           blocks_equal(a->outside, b->outside, a->outside_count);
}

/* Every `every`-th event id of `device` from the first - 1 (seed rows' ids are below 0) to the
 * last + 2: with ix (its checkpoints) and without, one at a time (every `stride`-th) and all in
 * one call in a shuffled order. The number of moments that differ. */
static int compare_some(int device, const layout_index *ix, int64_t stride, int64_t every) {
    char err[256];
    int64_t first = q("SELECT min(event_id) FROM event_rows") - 1,
            last = q("SELECT max(event_id) FROM event_rows") + 2;
    size_t n = (size_t)((last - first) / every) + 1;
    int64_t *ids = malloc(n * sizeof *ids);
    layout **plain = calloc(n, sizeof *plain), **fast = calloc(n, sizeof *fast);
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < n; i++)
        ids[i] = first + (int64_t)i * every;
    for (size_t i = n - 1; i > 0; i--) { /* any order */
        size_t k = (size_t)(check_random(&seed) % (i + 1));
        int64_t t = ids[i];
        ids[i] = ids[k];
        ids[k] = t;
    }
    CHECK(layout_index_use(db, NULL) == 0);
    CHECK(layout_build_many(db, device, ids, n, plain, err, sizeof err) == 0);
    CHECK(layout_index_use(db, ix) == 0 && layout_index_for(db) == ix);
    CHECK(layout_build_many(db, device, ids, n, fast, err, sizeof err) == 0);
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!layouts_equal(plain[i], fast[i]) && bad++ < 3)
            fprintf(stderr, "device %d event %lld: the layouts differ\n", device,
                    (long long)ids[i]);
    for (size_t i = 0; i < n; i++) {
        if (ids[i] % stride == 0) {
            layout *one = NULL;
            CHECK(layout_build(db, device, ids[i], &one, err, sizeof err) == 0);
            if (!layouts_equal(one, plain[i]) && bad++ < 3)
                fprintf(stderr, "device %d event %lld: layout_build differs\n", device,
                        (long long)ids[i]);
            layout_free(one);
        }
        layout_free(plain[i]);
        layout_free(fast[i]);
    }
    CHECK(layout_index_use(db, NULL) == 0 && layout_index_for(db) == NULL);
    free(ids);
    free(plain);
    free(fast);
    return bad;
}

static int compare_all(int device, const layout_index *ix, int64_t stride) {
    return compare_some(device, ix, stride, 1);
}

static layout_index *written(const char *name, int64_t min_rows, int64_t ratio) {
    char path[400], err[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    CHECK(layout_index_write(db, path, min_rows, ratio, err, sizeof err) == 0);
    int built = -1;
    layout_index *ix = layout_index_open(db, path, &built, err, sizeof err);
    CHECK(ix != NULL && built == 0); /* the one just written is this database's */
    return ix;
}

/* The replay's answers to damage (test_layout.c's test_anomalies) from checkpoints too. */
static void test_anomalies(void) {
    begin();
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x10000000, 2 * MiB, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x10000000, MiB / 2, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x10000000, MiB, 0, 0); /* again */
    ev(TRACE_OP_FREE_REQUESTED, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x10000000, 0, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x20000000, 2 * MiB, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x20000000, MiB, 0, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x20000000, 0, 0, 0);   /* in use */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x90000000, MiB, 0, 0); /* outside */
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x12345, 0, 0, 0);       /* unknown */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x10100000, MiB / 4, 0, 0);
    cupti_segment(TRACE_OP_ALLOC, 0x30000000, 4 * MiB); /* a plain cudaMalloc: its own block */
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x10000000, 0, 0, 0);
    cupti_segment(TRACE_OP_FREE, 0x30000000, 0);
    replay_it(db_path, DB_READ_ONLY);
    layout_index *ix = written("anomalies.live", 1, 0);
    int64_t checkpoints, blocks;
    layout_index_stats(ix, 0, &checkpoints, &blocks);
    CHECK(checkpoints >= 8 && blocks > 0); /* nearly every row */
    CHECK(compare_all(0, ix, 1) == 0);
    layout_index_close(ix);
}

/* Two devices, side streams (pending frees), fragmentation, a leak: every moment of each. */
static void test_synthetic(void) {
    char err[256];
    w = trace_writer_open(trace_path, NULL, err, sizeof err);
    sim_config cfg = sim_config_default();
    cfg.steps = 3;
    cfg.devices = 2;
    cfg.streams = 2;
    cfg.fragment = 1;
    cfg.leak_bytes = 3 * MiB;
    sim_result res;
    CHECK(sim_run(&cfg, w, &res, err, sizeof err) == 0);
    replay_it(db_path, DB_READ_ONLY);
    CHECK(q("SELECT max(event_id) FROM event_rows") > 2000);
    layout_index *dense = written("dense.live", 1, 0), *sparse = written("sparse.live", 200, 1);
    int64_t c_dense, c_sparse, blocks;
    layout_index_stats(dense, 1, &c_dense, &blocks);
    layout_index_stats(sparse, 1, &c_sparse, &blocks);
    fprintf(stderr, "checkpoints of device 1: %lld dense, %lld sparse\n", (long long)c_dense,
            (long long)c_sparse);
    CHECK(c_dense > 1000 && c_sparse > 5 && c_sparse < c_dense / 10);
    for (int device = 0; device < 2; device++) {
        CHECK(compare_all(device, dense, 97) == 0);
        CHECK(compare_all(device, sparse, 31) == 0);
    }
    /* the window's categories at its peak and end: from the two layouts with the index, from
     * the sweep without; the same bytes */
    sqlite3_close(db);
    CHECK(category_blocks_add(db_path, NULL, err, sizeof err) == 0);
    CHECK(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(category_blocks_stored(db) && layout_blocks_are_sweeps(db));
    int64_t last = q("SELECT max(event_id) FROM event_rows");
    for (int device = 0; device < 2; device++)
        for (int64_t from = 0; from < last; from += last / 9 + 1) {
            int64_t to = from + (last - from) / 3 + 1;
            view_window plain, fast;
            CHECK(layout_index_use(db, NULL) == 0);
            CHECK(view_window_read(db, device, from, to, &plain, err, sizeof err) == 0);
            CHECK(layout_index_use(db, sparse) == 0);
            CHECK(view_window_read(db, device, from, to, &fast, err, sizeof err) == 0);
            CHECK(plain.have_categories && fast.have_categories);
            CHECK(!memcmp(plain.categories_at_peak, fast.categories_at_peak,
                          sizeof plain.categories_at_peak));
            CHECK(!memcmp(plain.categories_at_end, fast.categories_at_end,
                          sizeof plain.categories_at_end));
            int64_t sum = 0;
            for (int k = 0; k < BLOCK_CATEGORY_COUNT; k++)
                sum += fast.categories_at_end[k];
            layout_totals t;
            CHECK(layout_timeline_at(db, device, to, &t) == 0 && sum == t.allocated_bytes);
        }
    /* the stacked timeline from a checkpoint's state: every bucket's series the same */
    int64_t t_lo = q("SELECT min(ts_ns) FROM event_rows"),
            t_hi = q("SELECT max(ts_ns) FROM event_rows");
    int seeded = 0, windows = 0;
    for (int device = 0; device < 2; device++)
        for (int by = STACK_BY_SITE; by <= STACK_BY_SIZE; by++)
            for (int k = 0; k < 8; k++) {
                int64_t span = t_hi - t_lo, lo = t_lo + span * k / 8,
                        hi = lo + span / (k % 3 + 2) + 1;
                view_stacks_result plain, fast;
                /* the pass (wide windows would come from series_levels, no pass at all) */
                CHECK(layout_index_use(db, NULL) == 0);
                CHECK(view_stacks_by_pass(db, device, lo, hi, 200, (view_stack_by)by, 6, 0, &plain,
                                          err, sizeof err) == 0);
                CHECK(layout_index_use(db, dense) == 0);
                CHECK(view_stacks_by_pass(db, device, lo, hi, 200, (view_stack_by)by, 6, 0, &fast,
                                          err, sizeof err) == 0);
                seeded += fast.seeded_at > 0;
                windows++;
                CHECK(plain.seeded_at == 0 && !plain.refused && !fast.refused);
                int same = plain.series_count == fast.series_count &&
                           plain.timeline.n == fast.timeline.n && plain.others == fast.others;
                for (size_t i = 0; same && i < plain.series_count; i++)
                    same = plain.series[i].key == fast.series[i].key &&
                           plain.series[i].max_bytes == fast.series[i].max_bytes;
                for (size_t i = 0; same && i < plain.timeline.n * plain.series_count; i++)
                    same = plain.values[i] == fast.values[i];
                for (size_t i = 0; same && i < plain.timeline.n; i++)
                    same = plain.at_event[i] == fast.at_event[i];
                if (!same)
                    fprintf(stderr, "stacks by %d of device %d in [%lld, %lld) differ\n", by,
                            device, (long long)lo, (long long)hi);
                CHECK(same);
                CHECK(fast.rows_read <= plain.rows_read);
                view_stacks_free(&plain);
                view_stacks_free(&fast);
            }
    CHECK(seeded > windows / 2); /* most windows begin after a checkpoint */
    CHECK(layout_index_use(db, NULL) == 0);
    layout_index_stats(sparse, 7, &c_sparse, &blocks); /* a device the run lacks */
    CHECK(c_sparse == 0 && blocks == 0);
    layout_index_close(dense);
    layout_index_close(sparse);
}

/* Built when missing, reused, built again when damaged or made for another database. */
static void test_file(void) {
    char path[400], err[256] = "";
    snprintf(path, sizeof path, "%s/t.live", tmpdir);
    int built = -1;
    layout_index *ix = layout_index_open(db, path, &built, err, sizeof err);
    CHECK(ix && built == 1);
    layout_index_close(ix);
    ix = layout_index_open(db, path, &built, err, sizeof err);
    CHECK(ix && built == 0);
    layout_index_close(ix);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size > 2048);
    CHECK(truncate(path, st.st_size / 2) == 0); /* damaged: built again */
    ix = layout_index_open(db, path, &built, err, sizeof err);
    CHECK(ix && built == 1);
    layout_index_close(ix);
    FILE *f = fopen(path, "r+b"); /* another database's: its identity differs */
    CHECK(f && fseek(f, 8, SEEK_SET) == 0 && fputs("another", f) >= 0 && fclose(f) == 0);
    ix = layout_index_open(db, path, &built, err, sizeof err);
    CHECK(ix && built == 1);
    layout_index_close(ix);
    snprintf(path, sizeof path, "%s/no-such-folder/t.live", tmpdir);
    CHECK(layout_index_open(db, path, &built, err, sizeof err) == NULL);
    CHECK(err[0] && !strchr(err, '\n'));
    snprintf(path, sizeof path, "%s/no-such-folder", tmpdir);
    CHECK(stat(path, &st) != 0); /* nothing left */
    /* the thread's table: full at LAYOUT_INDEX_MAX_USES connections */
    sqlite3 *dbs[LAYOUT_INDEX_MAX_USES + 1];
    for (int i = 0; i <= LAYOUT_INDEX_MAX_USES; i++) {
        CHECK(sqlite3_open(":memory:", &dbs[i]) == SQLITE_OK);
        CHECK(layout_index_use(dbs[i], (const layout_index *)dbs[i]) ==
              (i < LAYOUT_INDEX_MAX_USES ? 0 : -1));
    }
    CHECK(layout_index_for(dbs[3]) == (const layout_index *)dbs[3]);
    for (int i = 0; i <= LAYOUT_INDEX_MAX_USES; i++) {
        CHECK(layout_index_use(dbs[i], NULL) == 0);
        sqlite3_close(dbs[i]);
    }
}

/* Real inputs: the shared PyTorch snapshots (../shared/data/pytorch), replayed as memanalyze
 * replays them. Their seed blocks have ids below 0 (a checkpoint's first record a negative
 * delta: once written as an unsigned shift, it read back wrong — synth's runs had no such
 * block). Moments of each device from checkpoints at nearly every row equal the pass from the
 * first row; up to ~3000 moments an input. */
static void test_snapshots(const char *src) {
    char dir[600], path[900], dbp[400], err[512];
    snprintf(dir, sizeof dir, "%s/../shared/data/pytorch", src);
    static const char *const names[] = {"pt21-no-timestamps.pickle", "lm-small-forward.pickle",
                                        "train-step-m512.pickle", "cache-mostly-free.pickle"};
    int tried = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        input_kind kind;
        if (access(path, R_OK) != 0 || input_detect(path, &kind, err, sizeof err) != 0)
            continue;
        snprintf(dbp, sizeof dbp, "%s/snapshot-%zu.db", tmpdir, i);
        CHECK(input_build_database(path, kind, dbp, NULL, err, sizeof err) == 0);
        sqlite3_close(db);
        db = NULL;
        CHECK(sqlite3_open_v2(dbp, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
        CHECK(q("SELECT min(event_id) FROM event_rows") <= 0); /* it has seed rows */
        layout_index *ix = written("snapshot.live", 1, 0);
        int64_t events = q("SELECT count(*) FROM event_rows"), every = events / 3000 + 1;
        int devices[16], n = 0;
        sqlite3_stmt *st;
        CHECK(sqlite3_prepare_v2(db, "SELECT DISTINCT device FROM segments", -1, &st, NULL) ==
              SQLITE_OK);
        while (n < 16 && sqlite3_step(st) == SQLITE_ROW)
            devices[n++] = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        for (int k = 0; k < n; k++) {
            int bad = compare_some(devices[k], ix, 7, every);
            if (bad)
                fprintf(stderr, "%s: device %d: %d moments differ\n", names[i], devices[k], bad);
            CHECK(bad == 0);
        }
        layout_index_close(ix);
        tried++;
    }
    if (!tried)
        fprintf(stderr, "test_layout_index: no shared snapshot in %s: the real inputs left out\n",
                dir);
}

int main(int argc, char **argv) {
    if (tmpdir_make("layout-index") != 0)
        return 1;
    test_snapshots(argc > 1 ? argv[1] : ".");
    test_anomalies();
    test_synthetic();
    test_file();
    return tmpdir_finish("test_layout_index");
}
