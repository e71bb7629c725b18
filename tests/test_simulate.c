/* test_simulate.c — the request stream under other allocator settings
 * (analyzer/query/simulate.h), with answers derived by hand from PyTorch's
 * rules (c10/cuda/CUDACachingAllocator.cpp):
 *   - packing: 6 MiB blocks go three to a 20 MiB segment by default and end to
 *     end in one expandable segment; with two of every three freed, a 30 MiB
 *     request OOMs by default on 220 MiB and fits with expandable segments —
 *     the packing left room, the freed 12 MiB holes are no whole page;
 *   - max_split_size_mb keeps a cached oversize block from being split;
 *   - roundup_power2_divisions changes allocated as PyTorch's rounding does;
 *   - a burst of segment frees no allocation follows is empty_cache(): the
 *     simulation replays it and reproduces the recorded reserved bytes; one
 *     right before a retried allocation on the recorded full device is PyTorch's
 *     own release-and-retry, which the model makes itself;
 *   - the picture's columns are event numbers, OOMs marked in theirs;
 *   - the search (simulate_search.h): the run's own and expandable segments side
 *     by side, each one's smallest device memory, and the verdict. */
#include "check.h"
#include "simulate.h"
#include "simulate_search.h"
#include "trace_build.h"

#include "alloc_settings.h"

#include <string.h>

static sim_result simulate_with(const char *spec, uint64_t memory, sim_options opt) {
    am_settings s = am_settings_default();
    char err[256];
    CHECK(am_settings_parse(&s, spec, err, sizeof err) == 0);
    am_config cfg = am_settings_config(&s, am_config_default());
    cfg.device_capacity = memory;
    sim_result r;
    opt.seed_as_recorded = spec[0] == 0;
    CHECK(simulate_run(db, 0, &cfg, &opt, &r, err, sizeof err) == 0);
    return r;
}

static sim_result simulate(const char *spec, uint64_t memory) {
    return simulate_with(spec, memory, (sim_options){0});
}

static void range(trace_marker_kind kind, const char *name) {
    now_ns += 1000;
    trace_marker m = {.ts_ns = now_ns,
                      .tid = 7,
                      .kind = (uint8_t)kind,
                      .name_id = name ? trace_writer_string(w, name, strlen(name)) : 0};
    CHECK(trace_writer_marker(w, &m) == 0);
}

static void torch(trace_op op, trace_level level, uint64_t addr, uint64_t size, uint64_t req) {
    ev(op, level, TRACE_SOURCE_TORCH, addr, size, req, 0);
}

/* simulate_search.h on the packing run (test_packing's database): by default the run's own and
 * expandable segments switched; the default needs a segment of its own for the 30 MiB block (230
 * MiB), expandable segments fit it in the 200 MiB they map. A policy needs steps, this run has
 * none. */
static void test_search(void) {
    char err[256];
    sim_config given;
    CHECK(sim_config_parse("pools:lifetime,expandable_segments:True", &given, err, sizeof err) ==
          0);
    CHECK(given.opt.lifetime_pools && !given.opt.empty_cache_per_step);
    CHECK(given.settings.expandable_segments);
    CHECK_STR_EQ(given.spec, "pools:lifetime,expandable_segments:True");
    CHECK(sim_config_parse("per_process_memory_fraction:0", &(sim_config){0}, err, sizeof err) ==
          -1);
    CHECK_STR_EQ(err, "per_process_memory_fraction:0 leaves the allocator nothing");

    sim_search s;
    sim_search_args args = {.input = "packing", .configs = &given, .nconfigs = 1};
    CHECK(sim_search_begin(db, &args, &s, err, sizeof err) == -1);
    CHECK_STR_EQ(err, "--config 'pools:lifetime,expandable_segments:True': empty_cache:step and "
                      "pools:lifetime need steps, and packing has none");
    sim_search_free(&s);

    args = (sim_search_args){.input = "packing", .picture = 1};
    CHECK(sim_search_begin(db, &args, &s, err, sizeof err) == 0);
    CHECK_EQ_U64(s.nrows, 2);
    CHECK_EQ_U64(s.device_memory, 0);
    CHECK_STR_EQ(s.memory_source, "none known: unlimited");
    CHECK_STR_EQ(s.rows[0].config.spec, "expandable_segments:False");
    CHECK_STR_EQ(s.rows[1].config.spec, "expandable_segments:True");
    for (size_t i = 0; i < s.nrows; i++)
        CHECK(sim_search_row(&s, i, err, sizeof err) == 0);
    sim_search_end(&s);
    const sim_row *own = &s.rows[0], *es = &s.rows[1];
    CHECK(own->own && !es->own && own->ran && es->ran);
    CHECK(own->reproduction == SIM_REPRODUCED);
    CHECK(own->recorded_oom == NULL && own->gc == SIM_GC_NONE);
    CHECK(own->min_memory_exact && es->min_memory_exact);
    CHECK_EQ_U64(own->min_memory, 230 * MiB);
    CHECK_EQ_U64(es->min_memory, 200 * MiB);
    CHECK_EQ_U64(own->min_memory_gap, own->min_memory - own->min_memory_low);
    CHECK(own->min_memory_gap <= SIM_SEARCH_STEP);
    CHECK_STR_EQ(s.verdict, "expandable_segments:True needs the least device memory: 200 MiB, "
                            "30.0 MiB less than the run's own");
    CHECK_EQ_U64(s.picture.nconfigs, 2);
    CHECK_EQ_U64((uint64_t)s.picture.peak_reserved[0], 230 * MiB);
    sim_search_free(&s);
}

/* A recorded default-settings run: 30 blocks of 6 MiB, three per 20 MiB segment; two of
 * every three freed; then a 30 MiB block in a segment of its own. */
static void test_packing(void) {
    begin();
    const uint64_t base = 0x7f0000000000ULL;
    for (int i = 0; i < 30; i++) {
        uint64_t seg = base + (uint64_t)(i / 3) * 20 * MiB;
        if (i % 3 == 0)
            torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, seg, 20 * MiB, 0);
        torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, seg + (uint64_t)(i % 3) * 6 * MiB, 6 * MiB, 0);
    }
    for (int i = 0; i < 30; i++)
        if (i % 3 != 0)
            torch(TRACE_OP_FREE, TRACE_LEVEL_BLOCK,
                  base + (uint64_t)(i / 3) * 20 * MiB + (uint64_t)(i % 3) * 6 * MiB, 6 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, base + 200 * MiB, 30 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, base + 200 * MiB, 30 * MiB, 0);
    replay_it(db_path, DB_READ_ONLY);
    CHECK_EQ_U64(simulate_requests(db, 0), 31);

    sim_result own = simulate("", 0); /* unlimited: the recording, request for request */
    CHECK(own.compared);
    CHECK_EQ_U64(own.differing, 0);
    CHECK_EQ_U64(own.peak_reserved, 230 * MiB);
    CHECK_EQ_U64(own.driver_allocations, 11);
    CHECK_EQ_U64(own.ooms, 0);
    CHECK_EQ_U64(own.peak_reserved, own.recorded_peak_reserved);

    sim_result tight = simulate("", 220 * MiB);
    CHECK_EQ_U64(tight.ooms, 1);
    CHECK_EQ_U64(tight.first_oom.requested, 30 * MiB);
    CHECK_EQ_U64(tight.first_oom.free, 20 * MiB);
    CHECK_EQ_U64(tight.peak_reserved, 200 * MiB);
    /* ten segments each holding one live block: 12 MiB free in each, none releasable */
    CHECK_EQ_U64(tight.trapped_end, 140 * MiB);
    CHECK_EQ_U64(tight.releasable_end, 0);

    /* the picture's columns span the event numbers 0..last: the OOM (the last request) is
     * marked in the last column, and only there */
    int64_t cols[10];
    uint8_t ooms[10] = {0};
    for (size_t i = 0; i < 10; i++)
        cols[i] = -1;
    sim_result drawn = simulate_with(
        "", 220 * MiB, (sim_options){.ncolumns = 10, .reserved_max = cols, .oom_columns = ooms});
    CHECK_EQ_U64(drawn.ooms, 1);
    CHECK_EQ_U64((uint64_t)drawn.first_oom.event_id, (uint64_t)simulate_last_event(db, 0));
    CHECK(ooms[9] == 1);
    for (size_t i = 0; i < 9; i++)
        CHECK(ooms[i] == 0);
    CHECK_EQ_U64((uint64_t)cols[9], 200 * MiB);
    /* the 30 MiB segment could not be had with 20 MiB free: 10 MiB short of it */
    CHECK_EQ_U64(drawn.first_oom.asked, 30 * MiB);
    CHECK_EQ_U64(drawn.first_oom.shortfall, 10 * MiB);

    sim_result es = simulate("expandable_segments:True", 220 * MiB);
    CHECK_EQ_U64(es.ooms, 0);
    /* 180 MiB packed (nine pages), the tail's free 12 MiB plus one more page holds 30 MiB */
    CHECK_EQ_U64(es.peak_reserved, 200 * MiB);
    CHECK_EQ_U64(es.driver_allocations, 10);       /* a map per page */
    CHECK_EQ_U64(es.peak_allocated, 30 * 6 * MiB); /* before the frees */
    test_search();
}

/* max_split_size_mb: a cached 100 MiB block serves a 30 MiB request by default (split), not
 * with max_split_size_mb:64 (an oversize block is never split): a new segment. */
static void test_max_split(void) {
    begin();
    const uint64_t base = 0x7f0000000000ULL;
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, base, 100 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, base, 100 * MiB, 0);
    torch(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, base, 100 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, base, 30 * MiB, 0);
    replay_it(db_path, DB_READ_ONLY);
    sim_result def = simulate("", 0);
    CHECK_EQ_U64(def.differing, 0);
    CHECK_EQ_U64(def.peak_reserved, 100 * MiB);
    CHECK_EQ_U64(def.driver_allocations, 1);
    sim_result split = simulate("max_split_size_mb:64", 0);
    CHECK_EQ_U64(split.peak_reserved, 130 * MiB);
    CHECK_EQ_U64(split.driver_allocations, 2);
    CHECK_EQ_U64(split.peak_allocated, 100 * MiB);
}

/* roundup_power2_divisions:4 rounds a request up to the next quarter of its power of two:
 * 5 MiB + 1 byte becomes 6 MiB (4 MiB..8 MiB in steps of 1 MiB); plainly, 5 MiB + 512. */
static void test_roundup(void) {
    begin();
    const uint64_t base = 0x7f0000000000ULL;
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, base, 20 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, base, 5 * MiB + 512, 5 * MiB + 1);
    replay_it(db_path, DB_READ_ONLY);
    CHECK_EQ_U64(simulate("", 0).peak_allocated, 5 * MiB + 512);
    CHECK_EQ_U64(simulate("roundup_power2_divisions:4", 0).peak_allocated, 6 * MiB);
}

/* empty_cache(): a burst of segment frees with no allocation after it is replayed as one, so
 * the simulation's reserved bytes follow the recording's. */
static void test_empty_cache(void) {
    begin();
    const uint64_t base = 0x7f0000000000ULL;
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, base, 40 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, base, 40 * MiB, 0);
    torch(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, base, 40 * MiB, 0);
    torch(TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, base, 40 * MiB, 0); /* empty_cache() */
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, base, 40 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, base, 40 * MiB, 0);
    torch(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, base, 40 * MiB, 0);
    torch(TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, base, 40 * MiB, 0); /* and at the very end */
    replay_it(db_path, DB_READ_ONLY);
    sim_result r = simulate("", 0);
    CHECK_EQ_U64(r.empty_caches, 2);
    CHECK_EQ_U64(r.driver_allocations, 2);
    CHECK_EQ_U64(r.differing, 0);
    CHECK_EQ_U64(r.reserved_end, 0);
    sim_result es = simulate("expandable_segments:True", 0);
    CHECK_EQ_U64(es.empty_caches, 2);
    CHECK_EQ_U64(es.reserved_end, 0); /* the pages were unmapped */
    CHECK_EQ_U64(es.peak_reserved, 40 * MiB);
}

/* PyTorch's own release-and-retry on a full 100 MiB device: a cached 60 MiB segment freed right
 * before the 70 MiB one the retried request gets (60 + 70 MiB do not fit) is the allocator's,
 * not empty_cache(); the model, on the same device, releases it itself. Whether it was a retry
 * is a fact of the recording (its device), whatever device the model is given: on an unlimited
 * one the cache stays, and the run departs from the recording there, by the 60 MiB kept. Not
 * knowing the recorded device, the release reads as empty_cache(), as before. */
static void test_retry(void) {
    begin();
    const uint64_t a = 0x7f0000000000ULL, b = a + 60 * MiB;
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, a, 60 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, a, 60 * MiB, 0);
    torch(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, a, 60 * MiB, 0);
    torch(TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, a, 60 * MiB, 0); /* the retry's release */
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, b, 70 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, b, 70 * MiB, 0);
    replay_it(db_path, DB_READ_ONLY);
    sim_result full = simulate_with("", 100 * MiB, (sim_options){.recorded_capacity = 100 * MiB});
    CHECK_EQ_U64(full.empty_caches, 0);
    CHECK_EQ_U64(full.differing, 0);
    CHECK_EQ_U64(full.reserved_end, 70 * MiB);
    sim_result more = simulate_with("", 0, (sim_options){.recorded_capacity = 100 * MiB});
    CHECK_EQ_U64(more.empty_caches, 0);
    CHECK_EQ_U64(more.reserved_end, 130 * MiB);
    CHECK_EQ_U64(more.differing, 1);
    CHECK_EQ_U64(more.first_simulated_reserved, 130 * MiB);
    CHECK_EQ_U64(more.first_recorded_reserved, 70 * MiB);
    CHECK_EQ_U64((uint64_t)more.largest_difference, 60 * MiB);
    CHECK_EQ_U64(more.first_difference_op, TRACE_OP_ALLOC);
    sim_result unknown = simulate_with("", 0, (sim_options){0});
    CHECK_EQ_U64(unknown.empty_caches, 1);
    CHECK_EQ_U64(unknown.differing, 0);
}

/* The policies beyond PyTorch's settings, on two steps. Step 1 makes and frees a 40 MiB block,
 * then keeps a 20 MiB one, which the cache puts into the first one's segment; step 2 makes and
 * frees a 40 MiB block again. By default that needs a second 40 MiB segment (80 MiB). Pools by
 * lifetime keep the kept block apart (its own 20 MiB segment) and the short-lived 40 MiB fits
 * again: 60 MiB. empty_cache() after each step cannot give back a segment that holds the kept
 * block: the peak stays 80 MiB, but the end falls to 40 MiB. */
static void test_policies(void) {
    begin();
    const uint64_t a = 0x7f0000000000ULL, b = a + 40 * MiB;
    range(TRACE_MARK_RANGE_PUSH, "step 1");
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, a, 40 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, a, 40 * MiB, 0);
    torch(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, a, 40 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, a, 20 * MiB, 0);
    range(TRACE_MARK_RANGE_POP, NULL);
    range(TRACE_MARK_RANGE_PUSH, "step 2");
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, b, 40 * MiB, 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, b, 40 * MiB, 0);
    torch(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, b, 40 * MiB, 0);
    range(TRACE_MARK_RANGE_POP, NULL);
    replay_it(db_path, DB_READ_ONLY);
    sim_result own = simulate("", 0);
    CHECK_EQ_U64(own.differing, 0);
    CHECK_EQ_U64(own.peak_reserved, 80 * MiB);
    sim_result pools = simulate_with("", 0, (sim_options){.lifetime_pools = 1});
    CHECK_EQ_U64(pools.peak_reserved, 60 * MiB);
    CHECK_EQ_U64(pools.reserved_end, 60 * MiB);
    sim_result emptied = simulate_with("", 0, (sim_options){.empty_cache_per_step = 1});
    CHECK_EQ_U64(emptied.empty_caches, 2);
    CHECK_EQ_U64(emptied.peak_reserved, 80 * MiB);
    CHECK_EQ_U64(emptied.reserved_end, 40 * MiB);
    CHECK_EQ_U64(emptied.driver_allocations, 2);
}

/* A plain CUDA program's trace: no PyTorch blocks, nothing to simulate. */
static void test_no_allocator(void) {
    begin();
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 2 * MiB);
    replay_it(db_path, DB_READ_ONLY);
    CHECK_EQ_U64(simulate_requests(db, 0), 0);
    CHECK_EQ_U64(q("SELECT count(*) FROM segments"), 1);
}

int main(void) {
    if (tmpdir_make("simulate") != 0)
        return 1;
    test_packing();
    test_max_split();
    test_roundup();
    test_empty_cache();
    test_retry();
    test_policies();
    test_no_allocator();
    return tmpdir_finish("test_simulate");
}
