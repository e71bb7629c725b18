/* test_view_stacks_levels.c — the stacked timeline of wide windows from the replay's stored
 * vectors (series_levels' whole ones, series_deltas' chain; query/view_stacks.h) against the
 * pass over the events (view_stacks_by_pass) on the same windows, by site, category, stream and
 * size class:
 *   - every bucket's sum is the timeline's value there (its max, or the state carried into an
 *     empty bucket), and the pass's sum;
 *   - where the answer says it is exact (inexact_bytes 0), the same series, labels' keys,
 *     max_bytes and values as the pass, to the byte; else each named value within
 *     inexact_bytes of the pass's, and by site of the blocks' own (every block live after the
 *     bucket's event, from the allocations view: also where the pass names other sites);
 *   - a window whose buckets are whole chain buckets but finer than series_levels' reads the
 *     chain (from_levels 2), from the whole vector before it;
 *   - a window finer than the stored buckets, or a database without series_levels or without
 *     series_deltas (an older memanalyze's), is answered by the pass or the whole vectors, the
 *     same as view_stacks_by_pass.
 * Inputs: a hand-built trace of 160 sites, ~90 of them live at once (more than the 64 a vector
 * names: some answers inexact, bounded), a synthetic training run of two devices, and
 * the real snapshots of ../shared/data/pytorch when present. All built as memanalyze builds
 * them (categories added by category_store_file).
 *
 * argv: SOURCE_DIR */
#include "category_store.h"
#include "check.h"
#include "db_open.h"
#include "event_store.h"
#include "input.h"
#include "trace_build.h"
#include "training_sim.h"
#include "view_stacks.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static int64_t below(int64_t n) { return n > 0 ? (int64_t)(next_random() % (uint64_t)n) : 0; }

static int answers, from_levels, from_chain, exact, inexact, by_pass_only, carried_from_levels;

static int64_t meta(sqlite3 *d, const char *key) {
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    if (sqlite3_prepare_v2(d, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

/* The blocks of one device of one database, for a site's live bytes at a moment where the pass
 * names other series (the brute force: every block live after the event, by its stack). */
typedef struct block_life {
    int64_t alloc, free, size, stack;
} block_life;
static block_life *blocks;
static size_t nblocks;
static sqlite3 *blocks_db;
static int blocks_device = -1, truth_checks, unnamed_by_pass;
static int64_t first_block_alloc;

static void load_blocks(sqlite3 *d, int device) {
    if (blocks_db == d && blocks_device == device)
        return;
    free(blocks);
    blocks = NULL, nblocks = 0, blocks_db = d, blocks_device = device;
    first_block_alloc = INT64_MAX;
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(d,
                             "SELECT alloc_id, coalesce(free_event_id, 9223372036854775807), "
                             "size, coalesce(alloc_stack_id, 0) FROM allocations WHERE device = "
                             "?1 AND kind = 'device'",
                             -1, &st, NULL) == SQLITE_OK);
    sqlite3_bind_int(st, 1, device);
    size_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (nblocks == cap) {
            cap = cap ? 2 * cap : 4096;
            blocks = realloc(blocks, cap * sizeof *blocks);
            CHECK(blocks != NULL);
        }
        block_life *x = &blocks[nblocks++];
        *x = (block_life){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                          sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)};
        if (x->alloc < first_block_alloc)
            first_block_alloc = x->alloc;
    }
    sqlite3_finalize(st);
}

/* A site's live block bytes after `event`; -1 before the device's first block (a segment then
 * counts as one block in the replay's accounting, which the blocks do not show). */
static int64_t site_bytes_at(sqlite3 *d, int device, int64_t key, int64_t event) {
    load_blocks(d, device);
    if (event < first_block_alloc)
        return -1;
    int64_t sum = 0;
    for (size_t i = 0; i < nblocks; i++)
        if (blocks[i].stack == key && blocks[i].alloc <= event && blocks[i].free > event)
            sum += blocks[i].size;
    return sum;
}

static int64_t row_sum(const view_stacks_result *r, size_t b) {
    int64_t s = 0;
    for (size_t k = 0; k < r->series_count; k++)
        s += r->values[b * r->series_count + k];
    return s;
}

/* One window, one `by`: the stored answer against the pass's. */
static void check_one(sqlite3 *d, int device, int64_t lo, int64_t hi, size_t n, view_stack_by by,
                      int expect_levels, const char *what) {
    view_stacks_result a, p;
    char err[512];
    int ra = view_stacks(d, device, lo, hi, n, by, 12, 0, &a, err, sizeof err);
    if (ra != 0)
        fprintf(stderr, "%s: %s\n", what, err);
    int rp = view_stacks_by_pass(d, device, lo, hi, n, by, 12, 0, &p, err, sizeof err);
    CHECK(ra == 0 && rp == 0);
    if (ra || rp)
        return;
    answers++;
    const view_timeline_result *t = &a.timeline;
    CHECK(t->n == p.timeline.n && !p.from_levels && !p.refused && !a.refused);
    if (expect_levels >= 0 && a.from_levels != expect_levels) {
        fprintf(stderr, "%s: device %d [%lld, %lld) n %zu by %s: from_levels %d, not %d\n", what,
                device, (long long)lo, (long long)hi, n, view_stack_by_name(by), a.from_levels,
                expect_levels);
        CHECK(0);
    }
    from_levels += a.from_levels > 0;
    from_chain += a.from_levels == 2;
    for (size_t b = t->first_known; a.from_levels && b < t->n; b++)
        carried_from_levels += !t->buckets[b].events;
    by_pass_only += !a.from_levels;
    exact += a.from_levels && !a.inexact_bytes;
    inexact += a.inexact_bytes > 0;
    int bad = 0;
    for (size_t b = 0; b < t->n && !bad; b++) {
        int64_t line = b < t->first_known ? 0 : t->buckets[b].max_allocated;
        if (row_sum(&a, b) != line || row_sum(&p, b) != line) {
            fprintf(stderr, "%s: bucket %zu by %s: sums %lld (levels %d), pass %lld, line %lld\n",
                    what, b, view_stack_by_name(by), (long long)row_sum(&a, b), a.from_levels,
                    (long long)row_sum(&p, b), (long long)line);
            bad = 1;
        }
        if (b >= t->first_known && a.at_event[b] != p.at_event[b]) {
            fprintf(stderr, "%s: bucket %zu shows event %lld, the pass %lld\n", what, b,
                    (long long)a.at_event[b], (long long)p.at_event[b]);
            bad = 1;
        }
    }
    if (!a.inexact_bytes) {
        bad |= a.series_count != p.series_count;
        for (size_t k = 0; !bad && k < a.series_count; k++)
            bad |= a.series[k].key != p.series[k].key ||
                   a.series[k].max_bytes != p.series[k].max_bytes ||
                   (a.series[k].key != -1 && strcmp(a.series[k].label, p.series[k].label) != 0);
        for (size_t i = 0; !bad && i < t->n * a.series_count; i++)
            bad |= a.values[i] != p.values[i];
    } else { /* each named series of the stored answer: within the bound of the pass's, and a
                site of the blocks' (one the pass does not name too) */
        for (size_t k = 0; k < a.series_count && !bad; k++) {
            if (a.series[k].key == -1)
                continue;
            size_t j = 0;
            while (j < p.series_count && p.series[j].key != a.series[k].key)
                j++;
            for (size_t b = 0; b < t->n && !bad; b++) {
                int64_t them = j < p.series_count ? p.values[b * p.series_count + j] : -1;
                if (by == STACK_BY_SITE && b >= t->first_known) { /* the blocks say too */
                    int64_t truth = site_bytes_at(d, device, a.series[k].key, a.at_event[b]);
                    if (truth >= 0 && them >= 0 && truth != them) {
                        fprintf(stderr, "%s: bucket %zu site %lld: the pass %lld, blocks %lld\n",
                                what, b, (long long)a.series[k].key, (long long)them,
                                (long long)truth);
                        bad = 1;
                    }
                    truth_checks += truth >= 0;
                    unnamed_by_pass += truth >= 0 && them < 0;
                    them = truth >= 0 ? truth : them;
                }
                int64_t mine = a.values[b * a.series_count + k];
                if (them >= 0 && (mine > them || them - mine > a.inexact_bytes))
                    bad = 1;
            }
        }
    }
    if (bad) {
        fprintf(stderr, "%s: device %d [%lld, %lld) n %zu by %s: the answers differ\n", what,
                device, (long long)lo, (long long)hi, n, view_stack_by_name(by));
        CHECK(0);
    }
    view_stacks_free(&a);
    view_stacks_free(&p);
}

/* Random wide windows (of whole stored buckets: series_levels', the chain's), a few finer ones,
 * the whole run. `stored`: 0 none, 1 whole vectors only, 2 both. */
static void check_windows(sqlite3 *d, int stored, int count, const char *what) {
    blocks_db = NULL; /* one database per call: the blocks are read again */
    int64_t width = meta(d, "series_level_ns"), fine = meta(d, "series_delta_ns");
    CHECK(!stored || width > 0);
    CHECK(stored < 2 || fine * 8 == width);
    if (stored == 1) /* no chain stored: its windows, answered by the pass */
        fine = width / 8;
    int event_axis;
    int64_t end;
    char err[256];
    CHECK(view_timeline_axis(d, &event_axis, &end, err, sizeof err) == 0);
    for (int device = 0; device < 2; device++) {
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(d, "SELECT count(*) FROM devices WHERE device = ?1", -1, &st, NULL);
        sqlite3_bind_int(st, 1, device);
        int present = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
        sqlite3_finalize(st);
        if (!present)
            continue;
        for (int i = 0; i < count; i++) {
            view_stack_by by = (view_stack_by)(i % STACK_BY_COUNT);
            size_t n = (size_t)(2 + below(40));
            int64_t lo, hi;
            /* i % 5: 0, 1, 3 wide, 2 of chain buckets, 4 finer */
            int wide = stored && i % 5 != 4 && i % 5 != 2;
            int chain = stored && i % 5 == 2;
            int expect = 0;
            if (i < STACK_BY_COUNT) { /* the whole run, each by */
                lo = 0, hi = end, n = 200;
                expect = -1; /* the whole run of a short input may be finer than stored buckets */
            } else if (wide || chain) { /* a bucket of the answer: one to three stored ones */
                int64_t unit = wide ? width : fine;
                int64_t most = end / unit / 3;
                n = (size_t)(2 + below(most > 40 ? 38 : most > 3 ? most - 2 : 1));
                int64_t span = unit * (int64_t)n * (1 + below(3)); /* buckets of 1, 2 or 4 units */
                lo = below(end > span ? end - span : 1), hi = lo + span;
                if (i % 7 == 3) /* past the end: empty buckets carry the last vector */
                    lo = end - span / 2 > 0 ? end - span / 2 : 0, hi = lo + span;
                expect = wide ? 1 : stored == 2 ? 2 : 0;
            } else { /* finer: the pass */
                n = (size_t)(50 + below(100));
                int64_t span = (fine > 0 ? fine : 1 << 20) * (int64_t)n / 16 + 1;
                lo = below(end), hi = lo + span;
            }
            check_one(d, device, lo, hi, n, by, expect, what);
        }
    }
}

static sqlite3 *build(const char *input, const char *name) {
    char path[400], err[512];
    snprintf(path, sizeof path, "%s/%s.db", tmpdir, name);
    input_kind kind;
    static const category_blocks pages = CATEGORY_BLOCKS_PAGES;
    input_options opt = {.quiet = 1, .finish = category_store_file, .finish_ctx = (void *)&pages};
    int rc = input_detect(input, &kind, err, sizeof err) == 0 &&
                     input_build_database(input, kind, path, &opt, err, sizeof err) == 0
                 ? 0
                 : -1;
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", input, err);
    CHECK(rc == 0);
    sqlite3 *d = NULL;
    CHECK(db_open_readonly(path, &d, err, sizeof err) == 0);
    return d;
}

/* 160 sites, ~120 blocks live at once in one PyTorch segment (so ~90 sites: more than a
 * vector names), sizes 512 B .. 128 MiB. */
static void test_many_sites(void) {
    begin();
    trace_device td = {.device = 0, .total_bytes = 80ull << 30};
    CHECK(trace_writer_device(w, &td) == 0);
    uint32_t stacks[160];
    for (int i = 0; i < 160; i++) {
        char fn[32];
        snprintf(fn, sizeof fn, "layer_%d", i);
        trace_frame f = {.kind = TRACE_FRAME_PYTHON,
                         .function_id = trace_writer_string(w, fn, strlen(fn)),
                         .file_id = trace_writer_string(w, "model.py", 8),
                         .line = (uint32_t)(100 + i)};
        stacks[i] = trace_writer_stack(w, 0, trace_writer_frame(w, &f));
    }
    const uint64_t base = 0x7f0000000000ull, slot = 256 * MiB;
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, base, 240 * slot, 0, stacks[0]);
    uint64_t live[240] = {0};
    for (int e = 0; e < 120000; e++) {
        int i = (int)below(240);
        if (live[i]) {
            ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, base + i * slot, live[i], 0,
               0);
            live[i] = 0;
        } else {
            uint64_t size = 512ull << below(19);                      /* 512 B .. 128 MiB */
            int site = (int)(below(4) ? below(40) : 40 + below(120)); /* a few hot ones */
            ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, base + i * slot, size, 0,
               stacks[site]);
            live[i] = size;
        }
    }
    char err[256];
    CHECK(trace_writer_close(w, NULL, err, sizeof err) == 0);
    sqlite3 *d = build(trace_path, "many");
    int before = inexact;
    check_windows(d, 2, 60, "many sites");
    fprintf(stderr, "many sites: %d answers inexact (bounded)\n", inexact - before);
    CHECK(inexact > before); /* more live sites than a vector names: the bound was needed */
    db_close(d);
}

static void test_synthetic(void) {
    char err[256];
    w = trace_writer_open(trace_path, NULL, err, sizeof err);
    CHECK(w != NULL);
    sim_config cfg = sim_config_default();
    cfg.devices = 2;
    cfg.layers = 3;
    cfg.hidden = 256;
    cfg.max_events = 300000;
    cfg.leak_bytes = MiB;
    sim_result res;
    CHECK(sim_run(&cfg, w, &res, err, sizeof err) == 0);
    CHECK(trace_writer_close(w, NULL, err, sizeof err) == 0);
    char path[400];
    snprintf(path, sizeof path, "%s", trace_path);
    sqlite3 *d = build(path, "synth");
    check_windows(d, 2, 40, "synthetic");
    db_close(d);

    /* an older memanalyze's database: no series_deltas, the whole vectors or the pass answer */
    snprintf(path, sizeof path, "%s/synth.db", tmpdir);
    CHECK(sqlite3_open(path, &d) == SQLITE_OK);
    CHECK(sqlite3_exec(d,
                       "DELETE FROM meta WHERE key = 'series_delta_ns'; DROP TABLE series_deltas",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(d);
    CHECK(db_open_readonly(path, &d, err, sizeof err) == 0);
    check_windows(d, 1, 20, "synthetic (no series_deltas)");
    db_close(d);

    /* older still: no series_levels, the pass answers every window */
    CHECK(sqlite3_open(path, &d) == SQLITE_OK);
    CHECK(sqlite3_exec(d,
                       "DELETE FROM meta WHERE key LIKE 'series_level%'; DROP TABLE series_levels",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(d);
    CHECK(db_open_readonly(path, &d, err, sizeof err) == 0);
    check_windows(d, 0, 8, "synthetic (an older database)");
    db_close(d);
}

static void test_snapshots(const char *source_dir) {
    static const char *const names[] = {"train-step-m512", "lm-ctx512-forward",
                                        "pt21-no-timestamps"};
    int found = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char input[1024];
        snprintf(input, sizeof input, "%s/../shared/data/pytorch/%s.pickle", source_dir, names[i]);
        if (access(input, R_OK) != 0)
            continue;
        found++;
        sqlite3 *d = build(input, names[i]);
        check_windows(d, meta(d, "series_level_ns") > 0 ? 2 : 0, 20, names[i]);
        db_close(d);
    }
    if (!found)
        fprintf(stderr,
                "no ../shared/data/pytorch snapshots here: hand-built and synthetic only\n");
}

int main(int argc, char **argv) {
    if (tmpdir_make("stacks-levels") != 0)
        return 1;
    db_configure_process();
    CHECK(event_store_register() == SQLITE_OK);
    (void)q, (void)replay_it, (void)cupti_segment; /* trace_build.h's, not needed here */
    test_many_sites();
    test_synthetic();
    test_snapshots(argc > 1 ? argv[1] : ".");
    fprintf(stderr,
            "%d answers: %d from the levels (%d of them the chain; %d exact, %d bounded), %d by "
            "the pass\n",
            answers, from_levels, from_chain, exact, inexact, by_pass_only);
    /* the hand-built and synthetic inputs alone (a clone without ../shared) */
    CHECK(answers >= 170 && from_levels >= 100 && from_chain >= 30 && exact >= 60 &&
          by_pass_only >= 30);
    fprintf(stderr,
            "%d values of inexact answers checked against the blocks (%d of sites the pass does "
            "not name)\n",
            truth_checks, unnamed_by_pass);
    CHECK(truth_checks > 100); /* the many sites' inexact answers */
    free(blocks);
    fprintf(stderr, "%d empty buckets answered from the levels\n", carried_from_levels);
    CHECK(carried_from_levels > 20); /* the vectors after a bucket's last event */
    return tmpdir_finish("test_view_stacks_levels");
}
