/* test_alloc_model.c — the caching-allocator model (model/alloc_model.h): known answers for
 * PyTorch's rules and for apply mode, a fuzz of mostly invalid apply-mode operations (a failure
 * changes nothing, a success keeps every invariant), and a randomized differential test:
 * decide mode vs. the same history replayed in apply mode vs. a best-fit oracle that only
 * walks the public layout.
 *
 * `test_alloc_model -v` also runs throughput loops of decide-mode malloc/free and prints the
 * rates: informative only, never a pass/fail criterion. AM_TEST_VERBOSE=1 prints how often
 * the randomized tests reached their rarer paths. */
#include "alloc_model.h"
#include "check.h"

#include <time.h>

#define MiB (1ULL << 20)
#define VA AM_DEFAULT_VA_BASE

/* ---- effect recording ---- */

typedef struct effect_log {
    am_effect items[4096];
    int count;
} effect_log;

static void record_effect(void *ctx, const am_effect *effect) {
    effect_log *log = ctx;
    if (log->count < (int)(sizeof log->items / sizeof log->items[0]))
        log->items[log->count] = *effect;
    log->count++;
}

static am_model *new_model_with(uint64_t capacity, uint64_t max_split, bool expandable) {
    am_config config = am_config_default();
    config.device_capacity = capacity;
    config.max_split_size = max_split;
    config.expandable_segments = expandable;
    am_model *model = am_model_new(&config);
    if (!model) {
        fprintf(stderr, "am_model_new failed\n");
        exit(1);
    }
    return model;
}

static am_model *new_model(uint64_t capacity, uint64_t max_split) {
    return new_model_with(capacity, max_split, false);
}

/* malloc that must succeed; returns the block's address. */
static uint64_t must_malloc(am_model *model, uint64_t size, uint64_t stream, effect_log *log) {
    am_block_info info = {0};
    am_error err = am_malloc(model, size, stream, size, log ? record_effect : NULL, log, &info);
    CHECK_EQ_U64(err, AM_OK);
    return info.addr;
}

typedef struct random_state {
    uint64_t x;
} random_state;

static uint64_t next_random(random_state *r) {
    r->x ^= r->x << 13;
    r->x ^= r->x >> 7;
    r->x ^= r->x << 17;
    return r->x;
}

/* ---- walking the layout ---- */

/* Checks, by walking only the public layout, everything a consumer relies on: blocks tile
 * their segments exactly, segments do not overlap and come in address order, no two inactive
 * blocks touch, and the O(1) stats equal the sums over the walk. */
static int walk_is_consistent(const am_model *model) {
    am_stats_info stats = am_stats(model);
    uint64_t reserved = 0, allocated = 0, requested = 0, segments = 0, live = 0, pending = 0;
    uint64_t inactive = 0, largest = 0, previous_end = 0;
    int ok = 1;
    for (const am_segment *s = am_first_segment(model); s; s = am_next_segment(s)) {
        am_segment_info seg;
        am_segment_get(s, &seg);
        if (segments > 0 && seg.addr < previous_end)
            ok = 0;
        previous_end = seg.addr + seg.size;
        segments++;
        reserved += seg.size;
        uint64_t expected = seg.addr;
        bool previous_inactive = false;
        for (const am_block *b = am_segment_first_block(model, s); b; b = am_next_block(b)) {
            am_block_info block;
            am_block_get(b, &block);
            if (block.addr != expected || block.size == 0)
                ok = 0;
            expected = block.addr + block.size;
            bool is_inactive = block.state == AM_BLOCK_INACTIVE;
            if (is_inactive && previous_inactive)
                ok = 0;
            previous_inactive = is_inactive;
            if (is_inactive) {
                inactive++;
                largest = block.size > largest ? block.size : largest;
            } else {
                live++;
                allocated += block.size;
                requested += block.requested;
                pending += block.state == AM_BLOCK_PENDING_FREE;
            }
        }
        if (expected != seg.addr + seg.size)
            ok = 0;
    }
    ok = ok && reserved == stats.reserved_bytes && allocated == stats.allocated_bytes &&
         requested == stats.requested_bytes && segments == stats.segment_count &&
         live == stats.allocated_block_count && pending == stats.pending_block_count &&
         inactive == stats.inactive_block_count && largest == stats.largest_inactive_bytes;
    return ok && am_validate(model) == AM_OK;
}

/* A hash of the whole layout and stats, to prove that a failed operation changed nothing. */
static uint64_t layout_hash(const am_model *model) {
    uint64_t hash = 1469598103934665603ULL;
#define MIX(v) (hash = (hash ^ (uint64_t)(v)) * 1099511628211ULL)
    for (const am_segment *s = am_first_segment(model); s; s = am_next_segment(s)) {
        am_segment_info seg;
        am_segment_get(s, &seg);
        MIX(seg.addr), MIX(seg.size), MIX(seg.stream), MIX(seg.tag), MIX(seg.is_small),
            MIX(seg.is_expandable);
        for (const am_block *b = am_segment_first_block(model, s); b; b = am_next_block(b)) {
            am_block_info block;
            am_block_get(b, &block);
            MIX(block.addr), MIX(block.size), MIX(block.requested), MIX(block.stream),
                MIX(block.tag), MIX(block.state);
        }
    }
    am_stats_info stats = am_stats(model);
    MIX(stats.reserved_bytes), MIX(stats.allocated_bytes), MIX(stats.requested_bytes);
    MIX(stats.pending_block_count), MIX(stats.largest_inactive_bytes);
#undef MIX
    return hash;
}

static int layouts_equal(const am_model *a, const am_model *b) {
    const am_segment *sa = am_first_segment(a), *sb = am_first_segment(b);
    for (; sa && sb; sa = am_next_segment(sa), sb = am_next_segment(sb)) {
        am_segment_info ia, ib;
        am_segment_get(sa, &ia);
        am_segment_get(sb, &ib);
        if (ia.addr != ib.addr || ia.size != ib.size || ia.stream != ib.stream ||
            ia.tag != ib.tag || ia.is_small != ib.is_small || ia.is_expandable != ib.is_expandable)
            return 0;
        const am_block *ba = am_segment_first_block(a, sa), *bb = am_segment_first_block(b, sb);
        for (; ba && bb; ba = am_next_block(ba), bb = am_next_block(bb)) {
            am_block_info xa, xb;
            am_block_get(ba, &xa);
            am_block_get(bb, &xb);
            if (xa.addr != xb.addr || xa.size != xb.size || xa.requested != xb.requested ||
                xa.stream != xb.stream || xa.tag != xb.tag || xa.state != xb.state)
                return 0;
        }
        if (ba || bb)
            return 0;
    }
    return !sa && !sb && layout_hash(a) == layout_hash(b);
}

/* Block sizes of the segment containing addr, in order, 0-terminated; states in `states`. */
static int segment_blocks(const am_model *model, uint64_t addr, uint64_t *sizes, int *states,
                          int max) {
    int n = 0;
    for (const am_segment *s = am_first_segment(model); s; s = am_next_segment(s)) {
        am_segment_info seg;
        am_segment_get(s, &seg);
        if (addr < seg.addr || addr >= seg.addr + seg.size)
            continue;
        for (const am_block *b = am_segment_first_block(model, s); b && n < max;
             b = am_next_block(b), n++) {
            am_block_info block;
            am_block_get(b, &block);
            sizes[n] = block.size;
            states[n] = (int)block.state;
        }
    }
    return n;
}

static void expect_stats(const am_model *model, uint64_t reserved, uint64_t allocated,
                         uint64_t requested, uint64_t segments, uint64_t blocks, uint64_t largest) {
    am_stats_info stats = am_stats(model);
    CHECK_EQ_U64(stats.reserved_bytes, reserved);
    CHECK_EQ_U64(stats.allocated_bytes, allocated);
    CHECK_EQ_U64(stats.requested_bytes, requested);
    CHECK_EQ_U64(stats.segment_count, segments);
    CHECK_EQ_U64(stats.allocated_block_count, blocks);
    CHECK_EQ_U64(stats.largest_inactive_bytes, largest);
    CHECK(walk_is_consistent(model));
}

static void expect_effect(const effect_log *log, int index, am_effect_kind kind, uint64_t addr,
                          uint64_t size) {
    CHECK(index < log->count);
    if (index >= log->count)
        return;
    CHECK_EQ_U64(log->items[index].kind, kind);
    CHECK_EQ_U64(log->items[index].addr, addr);
    CHECK_EQ_U64(log->items[index].size, size);
}

/* ---- known answers: rules ---- */

static void test_rounding_and_pools(void) {
    static const struct {
        uint64_t requested, rounded, small, segment;
    } table[] = {
        {0, 512, 1, 2 * MiB},
        {1, 512, 1, 2 * MiB},
        {511, 512, 1, 2 * MiB},
        {512, 512, 1, 2 * MiB},
        {513, 1024, 1, 2 * MiB},
        {1000, 1024, 1, 2 * MiB},
        {MiB - 1, MiB, 1, 2 * MiB},
        {MiB, MiB, 1, 2 * MiB},
        {MiB + 1, MiB + 512, 0, 20 * MiB},
        {5 * MiB, 5 * MiB, 0, 20 * MiB},
        {10 * MiB - 1024, 10 * MiB - 1024, 0, 20 * MiB},
        {10 * MiB - 1, 10 * MiB, 0, 10 * MiB},
        {12 * MiB, 12 * MiB, 0, 12 * MiB},
        {12 * MiB + 1, 12 * MiB + 512, 0, 14 * MiB},
        {1000 * MiB + 3, 1000 * MiB + 512, 0, 1002 * MiB},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        uint64_t rounded = am_round_size(table[i].requested);
        CHECK_EQ_U64(rounded, table[i].rounded);
        CHECK_EQ_U64(am_is_small(rounded), table[i].small);
        CHECK_EQ_U64(am_allocation_size(rounded), table[i].segment);
    }
    CHECK_STR_EQ(am_strerror(AM_ERR_NOT_FREE), "range is not inside one inactive block");
    CHECK_STR_EQ(am_strerror((am_error)999), "unknown error");
    am_config bad = am_config_default();
    bad.max_split_size = 19 * MiB; /* PyTorch requires max_split_size_mb >= 20 */
    CHECK(am_model_new(&bad) == NULL);
    am_model *model = new_model(0, UINT64_MAX);
    CHECK_EQ_U64(am_malloc(model, 0, 0, 0, NULL, NULL, NULL), AM_ERR_INVALID_ARG);
    CHECK_EQ_U64(am_malloc(model, AM_MAX_REQUEST + 1, 0, 0, NULL, NULL, NULL), AM_ERR_INVALID_ARG);
    am_model_free(model);
}

static void test_first_allocations(void) {
    am_model *model = new_model(0, UINT64_MAX);
    effect_log log = {0};
    am_block_info info;
    CHECK_EQ_U64(am_malloc(model, 1000, 0, 7, record_effect, &log, &info), AM_OK);
    CHECK_EQ_U64(log.count, 1);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_ALLOC, VA, 2 * MiB);
    CHECK(log.items[0].is_small);
    CHECK_EQ_U64(log.items[0].tag, 7);
    CHECK_EQ_U64(info.addr, VA);
    CHECK_EQ_U64(info.size, 1024);
    CHECK_EQ_U64(info.requested, 1000);
    CHECK_EQ_U64(info.tag, 7);
    CHECK_EQ_U64(am_block_lookup(model, VA + 1000, &info), AM_OK);
    CHECK_EQ_U64(info.segment_addr, VA);
    CHECK_EQ_U64(info.addr, VA);
    CHECK_EQ_U64(info.state, AM_BLOCK_ALLOCATED);
    expect_stats(model, 2 * MiB, 1024, 1000, 1, 1, 2 * MiB - 1024);
    CHECK_EQ_U64(must_malloc(model, 1000, 0, NULL), VA + 1024);
    am_model_free(model);

    model = new_model(0, UINT64_MAX); /* 5 MiB: a 20 MiB segment, split */
    log.count = 0;
    CHECK_EQ_U64(must_malloc(model, 5 * MiB, 0, &log), VA);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_ALLOC, VA, 20 * MiB);
    CHECK(!log.items[0].is_small);
    uint64_t sizes[8];
    int states[8];
    CHECK_EQ_U64(segment_blocks(model, VA, sizes, states, 8), 2);
    CHECK_EQ_U64(sizes[0], 5 * MiB);
    CHECK_EQ_U64(sizes[1], 15 * MiB);
    CHECK_EQ_U64(states[1], AM_BLOCK_INACTIVE);
    expect_stats(model, 20 * MiB, 5 * MiB, 5 * MiB, 1, 1, 15 * MiB);
    am_model_free(model);

    model = new_model(0, UINT64_MAX); /* 12 MiB: a 12 MiB segment, no split */
    log.count = 0;
    CHECK_EQ_U64(must_malloc(model, 12 * MiB, 0, &log), VA);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_ALLOC, VA, 12 * MiB);
    CHECK_EQ_U64(segment_blocks(model, VA, sizes, states, 8), 1);
    expect_stats(model, 12 * MiB, 12 * MiB, 12 * MiB, 1, 1, 0);
    am_model_free(model);
}

static void test_best_fit(void) {
    am_model *model = new_model(0, UINT64_MAX);
    uint64_t a = must_malloc(model, 2 * MiB, 0, NULL);
    uint64_t b = must_malloc(model, 3 * MiB, 0, NULL);
    uint64_t c = must_malloc(model, 2 * MiB, 0, NULL);
    uint64_t d = must_malloc(model, 4 * MiB, 0, NULL);
    uint64_t e = must_malloc(model, 2 * MiB, 0, NULL);
    uint64_t f = must_malloc(model, 2 * MiB, 0, NULL);
    CHECK_EQ_U64(b, a + 2 * MiB);
    CHECK_EQ_U64(c, b + 3 * MiB);
    CHECK_EQ_U64(d, c + 2 * MiB);
    CHECK_EQ_U64(e, d + 4 * MiB);
    CHECK_EQ_U64(f, e + 2 * MiB);
    CHECK_EQ_U64(am_free(model, b), AM_OK);
    CHECK_EQ_U64(am_free(model, d), AM_OK);
    /* free: b 3 MiB, d 4 MiB, the tail 5 MiB; 3.5 MiB fits d best, 0.5 MiB left: no split */
    am_block_info info;
    CHECK_EQ_U64(am_malloc(model, 3 * MiB + MiB / 2, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.addr, d);
    CHECK_EQ_U64(info.size, 4 * MiB);
    CHECK_EQ_U64(am_malloc(model, 2 * MiB + MiB / 2, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.addr, b);
    CHECK_EQ_U64(info.size, 3 * MiB);
    CHECK_EQ_U64(am_malloc(model, 2 * MiB + MiB / 2, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.addr, f + 2 * MiB); /* the tail, split: 2.5 MiB left */
    CHECK_EQ_U64(info.size, 2 * MiB + MiB / 2);
    /* equal sizes: the lower address wins */
    CHECK_EQ_U64(am_free(model, e), AM_OK);
    CHECK_EQ_U64(am_free(model, a), AM_OK);
    CHECK_EQ_U64(am_malloc(model, MiB + MiB / 2, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.addr, a);
    CHECK_EQ_U64(info.size, 2 * MiB);
    CHECK(walk_is_consistent(model));
    am_model_free(model);
}

static void test_merge_and_streams(void) {
    am_model *model = new_model(0, UINT64_MAX);
    uint64_t a = must_malloc(model, 2 * MiB, 0, NULL);
    uint64_t b = must_malloc(model, 2 * MiB, 0, NULL);
    uint64_t c = must_malloc(model, 2 * MiB, 0, NULL);
    uint64_t sizes[8];
    int states[8];
    CHECK_EQ_U64(am_free(model, a), AM_OK);
    CHECK_EQ_U64(am_free(model, c), AM_OK); /* merges with the free tail */
    CHECK_EQ_U64(segment_blocks(model, a, sizes, states, 8), 3);
    CHECK_EQ_U64(sizes[2], 16 * MiB);
    CHECK_EQ_U64(am_free(model, b), AM_OK); /* three neighbours become one block */
    CHECK_EQ_U64(segment_blocks(model, a, sizes, states, 8), 1);
    CHECK_EQ_U64(sizes[0], 20 * MiB);
    expect_stats(model, 20 * MiB, 0, 0, 1, 0, 20 * MiB);
    CHECK_EQ_U64(am_free(model, b), AM_ERR_UNKNOWN_BLOCK);
    am_model_free(model);

    model = new_model(0, UINT64_MAX); /* a free block of stream 1 is not for stream 2 */
    effect_log log = {0};
    uint64_t s1 = must_malloc(model, 2 * MiB, 1, NULL);
    CHECK_EQ_U64(am_free(model, s1), AM_OK);
    uint64_t s2 = must_malloc(model, 2 * MiB, 2, &log);
    CHECK_EQ_U64(log.count, 1);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_ALLOC, VA + 20 * MiB, 20 * MiB);
    CHECK_EQ_U64(log.items[0].stream, 2);
    CHECK_EQ_U64(s2, VA + 20 * MiB);
    CHECK_EQ_U64(must_malloc(model, 2 * MiB, 1, &log), s1);
    CHECK_EQ_U64(log.count, 1);
    am_model_free(model);
}

static void test_split_thresholds(void) {
    am_model *model = new_model(0, UINT64_MAX);
    am_block_info info;
    CHECK_EQ_U64(am_malloc(model, 19 * MiB, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.size, 20 * MiB); /* exactly 1 MiB left: not split */
    expect_stats(model, 20 * MiB, 20 * MiB, 19 * MiB, 1, 1, 0);
    CHECK_EQ_U64(am_malloc(model, 19 * MiB - 512, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.size, 19 * MiB - 512); /* 1 MiB + 512 left: split */
    expect_stats(model, 40 * MiB, 39 * MiB - 512, 38 * MiB - 512, 2, 2, MiB + 512);
    am_model_free(model);

    model = new_model(0, UINT64_MAX); /* small pool: a remainder of 512 is split */
    uint64_t a = must_malloc(model, MiB, 0, NULL);
    CHECK_EQ_U64(am_malloc(model, MiB - 1024, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.addr, a + MiB);
    CHECK_EQ_U64(info.size, MiB - 1024);
    CHECK_EQ_U64(am_malloc(model, 512, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.size, 512);
    expect_stats(model, 2 * MiB, 2 * MiB - 512, 2 * MiB - 512, 1, 3, 512);
    CHECK_EQ_U64(am_malloc(model, 1, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.addr, a + 2 * MiB - 512);
    expect_stats(model, 2 * MiB, 2 * MiB, 2 * MiB - 511, 1, 4, 0);
    am_model_free(model);

    /* max_split_size 32 MiB: oversized blocks only serve requests within 20 MiB of them */
    model = new_model(0, 32 * MiB);
    effect_log log = {0};
    uint64_t big = must_malloc(model, 40 * MiB, 0, NULL);
    CHECK_EQ_U64(am_free(model, big), AM_OK);
    uint64_t small_request = must_malloc(model, 5 * MiB, 0, &log);
    CHECK_EQ_U64(log.count, 1); /* not from the 40 MiB block */
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_ALLOC, VA + 40 * MiB, 20 * MiB);
    CHECK_EQ_U64(small_request, VA + 40 * MiB);
    uint64_t huge = must_malloc(model, 60 * MiB, 0, NULL);
    CHECK_EQ_U64(am_free(model, huge), AM_OK);
    CHECK_EQ_U64(am_malloc(model, 36 * MiB, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.addr, big); /* 40 < 36 + 20: reused whole, not split */
    CHECK_EQ_U64(info.size, 40 * MiB);
    log.count = 0;
    CHECK_EQ_U64(am_malloc(model, 34 * MiB, 0, 0, record_effect, &log, &info), AM_OK);
    CHECK_EQ_U64(log.count, 1); /* 60 >= 34 + 20: the 60 MiB block is refused */
    CHECK_EQ_U64(info.size, 34 * MiB);
    CHECK_EQ_U64(am_malloc(model, 41 * MiB, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.addr, huge);
    CHECK_EQ_U64(info.size, 60 * MiB);
    CHECK(walk_is_consistent(model));
    am_model_free(model);
}

/* ---- known answers: device capacity, cache release, OOM, pending frees ---- */

static void test_capacity(void) {
    am_model *model = new_model(21 * MiB, UINT64_MAX);
    effect_log log = {0};
    uint64_t small = must_malloc(model, 1000, 0, NULL);
    CHECK_EQ_U64(am_free(model, small), AM_OK); /* a cached 2 MiB segment */
    CHECK_EQ_U64(must_malloc(model, 5 * MiB, 0, &log), VA);
    CHECK_EQ_U64(log.count, 3);
    expect_effect(&log, 0, AM_EFFECT_ALLOC_FAILED, 0, 20 * MiB);
    expect_effect(&log, 1, AM_EFFECT_SEGMENT_FREE, VA, 2 * MiB);
    expect_effect(&log, 2, AM_EFFECT_SEGMENT_ALLOC, VA, 20 * MiB);
    expect_stats(model, 20 * MiB, 5 * MiB, 5 * MiB, 1, 1, 15 * MiB);

    /* nothing cached to release: ALLOC_FAILED twice, then OOM; nothing changes */
    uint64_t before = layout_hash(model);
    log.count = 0;
    am_block_info info = {.addr = 12345};
    CHECK_EQ_U64(am_malloc(model, 1000, 3, 0, record_effect, &log, &info), AM_ERR_OOM);
    CHECK_EQ_U64(log.count, 3);
    expect_effect(&log, 0, AM_EFFECT_ALLOC_FAILED, 0, 2 * MiB);
    expect_effect(&log, 1, AM_EFFECT_ALLOC_FAILED, 0, 2 * MiB);
    expect_effect(&log, 2, AM_EFFECT_OOM, 0, 1024);
    CHECK_EQ_U64(log.items[2].requested, 1000);
    CHECK_EQ_U64(log.items[2].stream, 3);
    CHECK_EQ_U64(log.items[2].device_free, MiB);
    CHECK_EQ_U64(info.addr, 12345);
    CHECK_EQ_U64(layout_hash(model), before);
    CHECK(walk_is_consistent(model));
    am_model_free(model);

    /* the retry first completes pending frees (PyTorch synchronizes its events) */
    model = new_model(21 * MiB, UINT64_MAX);
    uint64_t a = must_malloc(model, 5 * MiB, 0, NULL);
    uint64_t b = must_malloc(model, 6 * MiB, 0, NULL);
    CHECK_EQ_U64(am_free_request(model, b), AM_OK);
    CHECK_EQ_U64(am_free(model, a), AM_OK);
    log.count = 0;
    CHECK_EQ_U64(must_malloc(model, 16 * MiB, 0, &log), VA);
    CHECK_EQ_U64(log.count, 4);
    expect_effect(&log, 0, AM_EFFECT_ALLOC_FAILED, 0, 16 * MiB);
    expect_effect(&log, 1, AM_EFFECT_FREE_COMPLETED, b, 6 * MiB);
    expect_effect(&log, 2, AM_EFFECT_SEGMENT_FREE, VA, 20 * MiB);
    expect_effect(&log, 3, AM_EFFECT_SEGMENT_ALLOC, VA, 16 * MiB);
    expect_stats(model, 16 * MiB, 16 * MiB, 16 * MiB, 1, 1, 0);
    am_model_free(model);

    /* with max_split_size, one oversized cached block is released first, not the whole cache */
    model = new_model(100 * MiB, 32 * MiB);
    uint64_t cached_small = must_malloc(model, 1000, 0, NULL);
    uint64_t oversized = must_malloc(model, 60 * MiB, 0, NULL);
    CHECK_EQ_U64(am_free(model, cached_small), AM_OK);
    CHECK_EQ_U64(am_free(model, oversized), AM_OK);
    must_malloc(model, 5 * MiB, 0, NULL); /* a 20 MiB segment: reserved 82 MiB */
    log.count = 0;
    uint64_t thirty = must_malloc(model, 30 * MiB, 0, &log);
    CHECK_EQ_U64(log.count, 3);
    expect_effect(&log, 0, AM_EFFECT_ALLOC_FAILED, 0, 30 * MiB);
    expect_effect(&log, 1, AM_EFFECT_SEGMENT_FREE, oversized, 60 * MiB);
    expect_effect(&log, 2, AM_EFFECT_SEGMENT_ALLOC, thirty, 30 * MiB);
    CHECK_EQ_U64(thirty, oversized); /* first fit reuses the released range */
    expect_stats(model, 52 * MiB, 35 * MiB, 35 * MiB, 3, 2, 15 * MiB);
    am_model_free(model);
}

static void test_empty_cache(void) {
    am_model *model = new_model(0, UINT64_MAX);
    uint64_t l2 = must_malloc(model, 12 * MiB, 0, NULL); /* VA: 12 MiB */
    uint64_t l1 = must_malloc(model, 5 * MiB, 0, NULL);  /* VA + 12: 20 MiB */
    uint64_t l3 = must_malloc(model, 16 * MiB, 0, NULL); /* VA + 32: 16 MiB, stays live */
    uint64_t l4 = must_malloc(model, 5 * MiB, 1, NULL);  /* VA + 48: 20 MiB, stream 1 */
    uint64_t s1 = must_malloc(model, 1000, 0, NULL);     /* VA + 68: 2 MiB */
    CHECK_EQ_U64(l1, VA + 12 * MiB);
    CHECK_EQ_U64(l3, VA + 32 * MiB);
    CHECK_EQ_U64(l4, VA + 48 * MiB);
    CHECK_EQ_U64(s1, VA + 68 * MiB);
    uint64_t pending = must_malloc(model, 1000, 0, NULL);
    CHECK_EQ_U64(am_free(model, l1), AM_OK);
    CHECK_EQ_U64(am_free(model, l2), AM_OK);
    CHECK_EQ_U64(am_free(model, l4), AM_OK);
    CHECK_EQ_U64(am_free(model, s1), AM_OK);
    CHECK_EQ_U64(am_free_request(model, pending), AM_OK);
    effect_log log = {0};
    CHECK_EQ_U64(am_empty_cache(model, record_effect, &log), AM_OK);
    CHECK_EQ_U64(log.count, 5); /* large pool by (stream, size, address), then small */
    expect_effect(&log, 0, AM_EFFECT_FREE_COMPLETED, pending, 1024);
    expect_effect(&log, 1, AM_EFFECT_SEGMENT_FREE, l2, 12 * MiB);
    expect_effect(&log, 2, AM_EFFECT_SEGMENT_FREE, l1, 20 * MiB);
    expect_effect(&log, 3, AM_EFFECT_SEGMENT_FREE, l4, 20 * MiB);
    expect_effect(&log, 4, AM_EFFECT_SEGMENT_FREE, s1, 2 * MiB);
    CHECK_EQ_U64(log.items[3].stream, 1);
    expect_stats(model, 16 * MiB, 16 * MiB, 16 * MiB, 1, 1, 0);
    /* the released ranges are reused first-fit from va_base */
    CHECK_EQ_U64(must_malloc(model, 5 * MiB, 5, NULL), VA);             /* 32 MiB gap */
    CHECK_EQ_U64(must_malloc(model, 12 * MiB, 6, NULL), VA + 20 * MiB); /* 12 MiB gap */
    CHECK_EQ_U64(must_malloc(model, 10 * MiB, 7, NULL), VA + 48 * MiB); /* after the last */
    am_model_free(model);
}

static void test_pending_free(void) {
    am_model *model = new_model(0, UINT64_MAX);
    uint64_t a = must_malloc(model, 1000, 0, NULL);
    uint64_t b = must_malloc(model, 1000, 0, NULL);
    CHECK_EQ_U64(am_free_request(model, b), AM_OK);
    CHECK_EQ_U64(am_free_request(model, b), AM_ERR_ALREADY_PENDING);
    CHECK_EQ_U64(am_stats(model).pending_block_count, 1);
    expect_stats(model, 2 * MiB, 2048, 2000, 1, 2, 2 * MiB - 2048);
    CHECK_EQ_U64(am_free(model, a), AM_OK); /* not merged with the pending b */
    am_block_info info;
    CHECK_EQ_U64(am_block_lookup(model, b + 10, &info), AM_OK);
    CHECK_EQ_U64(info.addr, b);
    CHECK_EQ_U64(info.state, AM_BLOCK_PENDING_FREE);
    CHECK_EQ_U64(am_block_lookup(model, a, &info), AM_OK);
    CHECK_EQ_U64(info.state, AM_BLOCK_INACTIVE);
    CHECK_EQ_U64(info.size, 1024);
    CHECK_EQ_U64(am_stats(model).inactive_block_count, 2);
    expect_stats(model, 2 * MiB, 1024, 1000, 1, 1, 2 * MiB - 2048);
    CHECK_EQ_U64(am_free_request(model, a), AM_ERR_UNKNOWN_BLOCK);
    CHECK_EQ_U64(am_free(model, b), AM_OK); /* completed: all merges into one */
    expect_stats(model, 2 * MiB, 0, 0, 1, 0, 2 * MiB);
    CHECK_EQ_U64(am_stats(model).inactive_block_count, 1);
    CHECK_EQ_U64(am_stats(model).pending_block_count, 0);
    am_model_free(model);
}

static void test_stats_script(void) {
    am_model *model = new_model(0, UINT64_MAX);
    uint64_t a = must_malloc(model, 1000, 0, NULL);
    expect_stats(model, 2 * MiB, 1024, 1000, 1, 1, 2 * MiB - 1024);
    uint64_t b = must_malloc(model, 3 * MiB, 0, NULL);
    expect_stats(model, 22 * MiB, 1024 + 3 * MiB, 1000 + 3 * MiB, 2, 2, 17 * MiB);
    uint64_t c = must_malloc(model, 600, 0, NULL);
    expect_stats(model, 22 * MiB, 2048 + 3 * MiB, 1600 + 3 * MiB, 2, 3, 17 * MiB);
    CHECK_EQ_U64(am_free_request(model, b), AM_OK);
    expect_stats(model, 22 * MiB, 2048 + 3 * MiB, 1600 + 3 * MiB, 2, 3, 17 * MiB);
    CHECK_EQ_U64(am_free(model, b), AM_OK);
    expect_stats(model, 22 * MiB, 2048, 1600, 2, 2, 20 * MiB);
    CHECK_EQ_U64(am_empty_cache(model, NULL, NULL), AM_OK);
    expect_stats(model, 2 * MiB, 2048, 1600, 1, 2, 2 * MiB - 2048);
    CHECK_EQ_U64(am_free(model, a), AM_OK);
    expect_stats(model, 2 * MiB, 1024, 600, 1, 1, 2 * MiB - 2048);
    CHECK_EQ_U64(am_free(model, c), AM_OK);
    expect_stats(model, 2 * MiB, 0, 0, 1, 0, 2 * MiB);
    CHECK_EQ_U64(am_stats(model).inactive_block_count, 1);
    am_model_free(model);
}

/* ---- apply mode ---- */

#define EXPECT_UNCHANGED(model, call, error)                                                       \
    do {                                                                                           \
        uint64_t hash_before_ = layout_hash(model);                                                \
        CHECK_EQ_U64((call), (error));                                                             \
        CHECK_EQ_U64(layout_hash(model), hash_before_);                                            \
    } while (0)

static void test_apply_mode(void) {
    const uint64_t base = 0x10000000;
    am_model *model = new_model(0, UINT64_MAX);
    CHECK_EQ_U64(am_segment_insert(model, base, 20 * MiB, 0, 1), AM_OK);
    EXPECT_UNCHANGED(model, am_segment_insert(model, base + 10 * MiB, 20 * MiB, 0, 2),
                     AM_ERR_SEGMENT_OVERLAP);
    EXPECT_UNCHANGED(model, am_segment_insert(model, base - 2 * MiB, 4 * MiB, 0, 2),
                     AM_ERR_SEGMENT_OVERLAP);
    EXPECT_UNCHANGED(model, am_segment_insert(model, base + 5 * MiB, 512, 0, 2),
                     AM_ERR_SEGMENT_OVERLAP);
    EXPECT_UNCHANGED(model, am_segment_insert(model, base, 0, 0, 2), AM_ERR_INVALID_ARG);
    EXPECT_UNCHANGED(model, am_segment_insert(model, UINT64_MAX - 10, 20, 0, 2),
                     AM_ERR_INVALID_ARG);
    CHECK_EQ_U64(am_segment_insert(model, base + 20 * MiB, 2 * MiB, 3, 2), AM_OK); /* adjacent */
    am_segment_info seg;
    CHECK_EQ_U64(am_segment_lookup(model, base + 21 * MiB, &seg), AM_OK);
    CHECK(seg.is_small && !seg.is_expandable && seg.stream == 3 && seg.tag == 2);
    CHECK_EQ_U64(am_segment_lookup(model, base, &seg), AM_OK);
    CHECK(!seg.is_small);

    CHECK_EQ_U64(am_block_place(model, base + 4 * MiB, 2 * MiB, 1500000, 0, 10), AM_OK);
    uint64_t sizes[8];
    int states[8];
    CHECK_EQ_U64(segment_blocks(model, base, sizes, states, 8), 3);
    CHECK_EQ_U64(sizes[0], 4 * MiB);
    CHECK_EQ_U64(sizes[1], 2 * MiB);
    CHECK_EQ_U64(sizes[2], 14 * MiB);
    CHECK_EQ_U64(states[1], AM_BLOCK_ALLOCATED);
    expect_stats(model, 22 * MiB, 2 * MiB, 1500000, 2, 1, 14 * MiB);
    am_block_info info;
    CHECK_EQ_U64(am_block_lookup(model, base + 5 * MiB, &info), AM_OK);
    CHECK(info.addr == base + 4 * MiB && info.tag == 10 && info.segment_addr == base);

    EXPECT_UNCHANGED(model, am_block_place(model, base + 5 * MiB, 512, 1, 0, 0), AM_ERR_NOT_FREE);
    EXPECT_UNCHANGED(model, am_block_place(model, base + 3 * MiB, 2 * MiB, 1, 0, 0),
                     AM_ERR_NOT_FREE);
    EXPECT_UNCHANGED(model, am_block_place(model, base + 19 * MiB, 2 * MiB, 1, 0, 0),
                     AM_ERR_NOT_FREE); /* would cross into the next segment */
    EXPECT_UNCHANGED(model, am_block_place(model, base + 100 * MiB, 512, 1, 0, 0),
                     AM_ERR_NO_SEGMENT);
    EXPECT_UNCHANGED(model, am_block_place(model, base - 512, 512, 1, 0, 0), AM_ERR_NO_SEGMENT);
    EXPECT_UNCHANGED(model, am_block_place(model, base, 0, 1, 0, 0), AM_ERR_INVALID_ARG);
    EXPECT_UNCHANGED(model, am_block_release(model, base + 4 * MiB + 512), AM_ERR_UNKNOWN_BLOCK);
    EXPECT_UNCHANGED(model, am_block_release(model, base), AM_ERR_UNKNOWN_BLOCK);
    EXPECT_UNCHANGED(model, am_block_release(model, base + 100 * MiB), AM_ERR_UNKNOWN_BLOCK);
    EXPECT_UNCHANGED(model, am_block_mark_pending(model, base), AM_ERR_UNKNOWN_BLOCK);
    EXPECT_UNCHANGED(model, am_segment_remove(model, base), AM_ERR_SEGMENT_IN_USE);
    EXPECT_UNCHANGED(model, am_segment_remove(model, base + MiB), AM_ERR_UNKNOWN_SEGMENT);
    EXPECT_UNCHANGED(model, am_segment_remove(model, base + 100 * MiB), AM_ERR_UNKNOWN_SEGMENT);
    EXPECT_UNCHANGED(model, am_block_lookup(model, base + 100 * MiB, &info), AM_ERR_NO_SEGMENT);

    /* blocks at the exact start and end of a segment: no empty pieces */
    CHECK_EQ_U64(am_block_place(model, base, 4 * MiB, 4 * MiB, 0, 11), AM_OK);
    CHECK_EQ_U64(am_block_place(model, base + 18 * MiB, 2 * MiB, 2 * MiB, 0, 12), AM_OK);
    CHECK_EQ_U64(segment_blocks(model, base, sizes, states, 8), 4);
    CHECK_EQ_U64(sizes[2], 12 * MiB);
    expect_stats(model, 22 * MiB, 8 * MiB, 1500000 + 6 * MiB, 2, 3, 12 * MiB);

    CHECK_EQ_U64(am_block_mark_pending(model, base + 4 * MiB), AM_OK);
    EXPECT_UNCHANGED(model, am_block_mark_pending(model, base + 4 * MiB), AM_ERR_ALREADY_PENDING);
    CHECK_EQ_U64(am_block_release(model, base), AM_OK);
    CHECK_EQ_U64(segment_blocks(model, base, sizes, states, 8), 4); /* pending: no merge */
    CHECK_EQ_U64(am_block_release(model, base + 4 * MiB), AM_OK);
    CHECK_EQ_U64(segment_blocks(model, base, sizes, states, 8), 2);
    CHECK_EQ_U64(sizes[0], 18 * MiB);
    CHECK_EQ_U64(am_block_release(model, base + 18 * MiB), AM_OK);
    CHECK_EQ_U64(am_segment_remove(model, base), AM_OK);
    CHECK_EQ_U64(am_segment_remove(model, base + 20 * MiB), AM_OK);
    expect_stats(model, 0, 0, 0, 0, 0, 0);
    CHECK(am_first_segment(model) == NULL);
    am_model_free(model);
}

static void test_expandable(void) {
    const uint64_t x = 0x7e0000000000ULL;
    am_model *model = new_model(0, UINT64_MAX);
    uint64_t sizes[8];
    int states[8];
    CHECK_EQ_U64(am_segment_map(model, x, 20 * MiB, 0, 1), AM_OK);
    CHECK_EQ_U64(am_segment_map(model, x + 20 * MiB, 20 * MiB, 0, 2), AM_OK);
    am_segment_info seg;
    CHECK_EQ_U64(am_segment_lookup(model, x, &seg), AM_OK);
    CHECK(seg.is_expandable && !seg.is_small && seg.size == 40 * MiB && seg.tag == 1);
    expect_stats(model, 40 * MiB, 0, 0, 1, 0, 40 * MiB);
    CHECK_EQ_U64(am_block_place(model, x, 30 * MiB, 30 * MiB, 0, 5), AM_OK);
    CHECK_EQ_U64(am_segment_map(model, x + 40 * MiB, 20 * MiB, 0, 3), AM_OK); /* merges tail */
    CHECK_EQ_U64(segment_blocks(model, x, sizes, states, 8), 2);
    CHECK_EQ_U64(sizes[1], 30 * MiB);
    CHECK_EQ_U64(am_block_place(model, x + 30 * MiB, 30 * MiB, 30 * MiB, 0, 6), AM_OK);
    CHECK_EQ_U64(am_segment_map(model, x + 60 * MiB, 20 * MiB, 0, 4), AM_OK); /* appended */
    CHECK_EQ_U64(segment_blocks(model, x, sizes, states, 8), 3);
    expect_stats(model, 80 * MiB, 60 * MiB, 60 * MiB, 1, 2, 20 * MiB);
    CHECK_EQ_U64(am_segment_map(model, x + 80 * MiB, 2 * MiB, 1, 7), AM_OK); /* other stream */
    CHECK_EQ_U64(am_segment_lookup(model, x + 80 * MiB, &seg), AM_OK);
    CHECK(seg.addr == x + 80 * MiB && seg.is_small && seg.is_expandable);
    CHECK_EQ_U64(am_segment_unmap(model, x + 80 * MiB, 2 * MiB), AM_OK); /* whole segment */
    EXPECT_UNCHANGED(model, am_segment_map(model, x + 70 * MiB, 20 * MiB, 0, 0),
                     AM_ERR_SEGMENT_OVERLAP);
    CHECK_EQ_U64(am_segment_unmap(model, x + 60 * MiB, 20 * MiB), AM_OK); /* tail */
    expect_stats(model, 60 * MiB, 60 * MiB, 60 * MiB, 1, 2, 0);
    EXPECT_UNCHANGED(model, am_segment_unmap(model, x + 50 * MiB, 10 * MiB), AM_ERR_NOT_FREE);
    EXPECT_UNCHANGED(model, am_segment_unmap(model, x + 60 * MiB, 2 * MiB), AM_ERR_NO_SEGMENT);
    CHECK_EQ_U64(am_block_release(model, x + 30 * MiB), AM_OK);
    EXPECT_UNCHANGED(model, am_segment_unmap(model, x + 40 * MiB, 30 * MiB), AM_ERR_NOT_FREE);
    CHECK_EQ_U64(am_segment_unmap(model, x + 40 * MiB, 10 * MiB), AM_OK); /* a hole */
    expect_stats(model, 50 * MiB, 30 * MiB, 30 * MiB, 2, 1, 10 * MiB);
    CHECK_EQ_U64(am_segment_lookup(model, x + 55 * MiB, &seg), AM_OK);
    CHECK(seg.addr == x + 50 * MiB && seg.size == 10 * MiB && seg.is_expandable && seg.tag == 1);
    CHECK_EQ_U64(segment_blocks(model, x, sizes, states, 8), 2);
    CHECK_EQ_U64(sizes[1], 10 * MiB);
    CHECK_EQ_U64(am_segment_map(model, x + 40 * MiB, 10 * MiB, 0, 8), AM_OK); /* joins */
    expect_stats(model, 60 * MiB, 30 * MiB, 30 * MiB, 1, 1, 30 * MiB);
    CHECK_EQ_U64(segment_blocks(model, x, sizes, states, 8), 2);
    CHECK_EQ_U64(am_block_release(model, x), AM_OK);
    CHECK_EQ_U64(am_segment_unmap(model, x, 20 * MiB), AM_OK); /* front */
    CHECK_EQ_U64(am_segment_lookup(model, x + 20 * MiB, &seg), AM_OK);
    CHECK(seg.addr == x + 20 * MiB && seg.size == 40 * MiB);
    expect_stats(model, 40 * MiB, 0, 0, 1, 0, 40 * MiB);
    CHECK_EQ_U64(am_segment_map(model, x, 20 * MiB, 0, 9), AM_OK); /* grows downwards */
    CHECK_EQ_U64(am_segment_lookup(model, x, &seg), AM_OK);
    CHECK(seg.addr == x && seg.size == 60 * MiB);
    expect_stats(model, 60 * MiB, 0, 0, 1, 0, 60 * MiB);

    CHECK_EQ_U64(am_segment_insert(model, 0x1000000, 20 * MiB, 0, 0), AM_OK);
    EXPECT_UNCHANGED(model, am_segment_unmap(model, 0x1000000, 2 * MiB), AM_ERR_NOT_EXPANDABLE);
    CHECK_EQ_U64(am_segment_map(model, 0x1000000 + 20 * MiB, 2 * MiB, 0, 0), AM_OK);
    CHECK_EQ_U64(am_stats(model).segment_count, 3); /* a plain segment is never extended */
    CHECK_EQ_U64(am_segment_unmap(model, x, 60 * MiB), AM_OK);
    expect_stats(model, 22 * MiB, 0, 0, 2, 0, 20 * MiB);
    am_model_free(model);
}

/* ---- known answers: a recorded start state's expandable range (am_expandable_adopt) ---- */

static void test_expandable_adopt(void) {
    const uint64_t x = 0x7a0000000000ULL; /* where a recording shows the stream's pages */
    am_model *model = new_model_with(0, UINT64_MAX, true);
    CHECK_EQ_U64(am_expandable_adopt(model, x, 0, false), AM_OK);
    CHECK_EQ_U64(am_segment_map_in_pool(model, x, 20 * MiB, 0, 1, false), AM_OK);
    CHECK_EQ_U64(am_block_place(model, x, 20 * MiB, 20 * MiB, 0, 2), AM_OK);
    /* the next large request maps the page after the recorded one, in the same range */
    CHECK_EQ_U64(must_malloc(model, 6 * MiB, 0, NULL), x + 20 * MiB);
    am_segment_info seg;
    CHECK_EQ_U64(am_segment_lookup(model, x, &seg), AM_OK);
    CHECK(seg.is_expandable && seg.size == 40 * MiB);
    /* another stream gets a range of its own; a second range over this one is refused */
    CHECK(must_malloc(model, 6 * MiB, 1, NULL) != x + 26 * MiB);
    CHECK_EQ_U64(am_expandable_adopt(model, x + 2 * MiB, 1, false), AM_ERR_SEGMENT_OVERLAP);
    CHECK_EQ_U64(am_expandable_adopt(model, x + 30 * MiB, 1, false), AM_ERR_SEGMENT_OVERLAP);
    CHECK_EQ_U64(am_expandable_adopt(model, x, 1, false), AM_ERR_SEGMENT_OVERLAP);
    CHECK_EQ_U64(am_validate(model), AM_OK);
    am_model_free(model);

    /* Unknown device size (ranges of 1 1/8 of "unlimited"): two streams' recorded ranges, the
     * upper adopted first as simulate does, 1 GiB apart. Each ends where the next begins, so
     * the lower stream's next page is its own, not a fresh range far away (es-two-devices). */
    model = new_model_with(0, UINT64_MAX, true);
    CHECK_EQ_U64(am_expandable_adopt(model, x + 1024 * MiB, 0, false), AM_OK);
    CHECK_EQ_U64(am_expandable_adopt(model, x, 5, false), AM_OK);
    CHECK_EQ_U64(am_segment_map_in_pool(model, x + 1024 * MiB, 20 * MiB, 0, 1, false), AM_OK);
    CHECK_EQ_U64(am_segment_map_in_pool(model, x, 20 * MiB, 5, 2, false), AM_OK);
    CHECK_EQ_U64(am_block_place(model, x, 20 * MiB, 20 * MiB, 5, 3), AM_OK);
    CHECK_EQ_U64(must_malloc(model, 6 * MiB, 5, NULL), x + 20 * MiB);
    CHECK_EQ_U64(must_malloc(model, 30 * MiB, 0, NULL), x + 1024 * MiB);
    /* the lower range ends at 1 GiB: 14 MiB free in its page and 984 MiB unmapped above it
     * hold 990 MiB; what is left of it then (8 MiB) cannot hold 40 MiB: a range elsewhere */
    CHECK_EQ_U64(must_malloc(model, 990 * MiB, 5, NULL), x + 26 * MiB);
    CHECK(must_malloc(model, 40 * MiB, 5, NULL) >= x + 1024 * MiB);
    CHECK_EQ_U64(am_validate(model), AM_OK);
    am_model_free(model);
}

/* ---- known answers: garbage_collection_threshold (garbage_collect_cached_blocks) ---- */

/* Three cached segments of 20, 22 and 24 MiB, freed after one, two and three large-pool
 * searches; then a 26 MiB request no free block serves. With a 100 MiB limit and threshold
 * 0.5, reserved (66 MiB) is 16 MiB past 50: the ages are 3, 2 and 1 searches, the average 2,
 * so the 20 and 22 MiB segments go (42 MiB, all at once though 16 would do) and the youngest
 * stays: 24 + 26 = 50 MiB reserved. Without the limit, or without the threshold, nothing is
 * collected: 92 MiB. */
static uint64_t gc_script_with(uint64_t capacity, double threshold, effect_log *log, int graph_at) {
    am_config config = am_config_default();
    config.device_capacity = capacity;
    config.garbage_collection_threshold = threshold;
    am_model *model = am_model_new(&config);
    CHECK(model != NULL);
    for (uint64_t mib = 20; mib <= 24; mib += 2) {
        CHECK_EQ_U64(am_free(model, must_malloc(model, mib * MiB, 0, NULL)), AM_OK);
        /* a CUDA graph's requests search its own pool: they age no default-pool block */
        for (int k = 0; graph_at == (int)(mib - 20) / 2 && k < 10; k++)
            must_malloc(model, 1536 * 1024, AM_STREAM_PRIVATE_POOL | 1, NULL);
    }
    must_malloc(model, 26 * MiB, 0, log);
    uint64_t reserved = am_stats(model).reserved_bytes;
    CHECK_EQ_U64(am_validate(model), AM_OK);
    am_model_free(model);
    return reserved;
}

static uint64_t gc_script(uint64_t capacity, double threshold, effect_log *log) {
    return gc_script_with(capacity, threshold, log, -1);
}

static void test_garbage_collection(void) {
    static effect_log log;
    log.count = 0;
    CHECK_EQ_U64(gc_script(100 * MiB, 0.5, &log), 50 * MiB);
    CHECK_EQ_U64(log.count, 3);
    CHECK(log.items[0].kind == AM_EFFECT_SEGMENT_FREE && log.items[0].size == 20 * MiB);
    CHECK(log.items[1].kind == AM_EFFECT_SEGMENT_FREE && log.items[1].size == 22 * MiB);
    CHECK(log.items[2].kind == AM_EFFECT_SEGMENT_ALLOC && log.items[2].size == 26 * MiB);
    CHECK_EQ_U64(gc_script(100 * MiB, 0, NULL), 92 * MiB);   /* no threshold */
    CHECK_EQ_U64(gc_script(0, 0.5, NULL), 92 * MiB);         /* no limit: PyTorch's set_fraction */
    CHECK_EQ_U64(gc_script(100 * MiB, 0.7, NULL), 92 * MiB); /* 66 MiB is under 70 */
    /* past 0.2 (20 MiB): 46 to reclaim; the first round's 42 is short, so a second round with
     * the age left (1) takes the 24 MiB segment too */
    CHECK_EQ_U64(gc_script(100 * MiB, 0.2, NULL), 26 * MiB);
    /* a graph's 20 MiB segment beside them (kept: a private pool's cache is never collected),
     * its ten searches before the 22 MiB block or after the 24 MiB one: the same answer */
    CHECK_EQ_U64(gc_script_with(100 * MiB, 0.7, NULL, 0), gc_script_with(100 * MiB, 0.7, NULL, 2));
    CHECK_EQ_U64(gc_script_with(100 * MiB, 0.7, NULL, 2), 70 * MiB);
}

/* ---- known answers: large_segment_size_mb (get_allocation_size) ---- */

static void test_large_segment_size(void) {
    am_config config = am_config_default();
    config.large_segment_size = 32 * MiB;
    am_model *model = am_model_new(&config);
    CHECK(model != NULL);
    am_segment_info seg;
    /* a 1..10 MiB request gets a segment of that size, a larger one its own size */
    CHECK_EQ_U64(am_segment_lookup(model, must_malloc(model, 5 * MiB, 0, NULL), &seg), AM_OK);
    CHECK_EQ_U64(seg.size, 32 * MiB);
    CHECK_EQ_U64(am_segment_lookup(model, must_malloc(model, 30 * MiB, 0, NULL), &seg), AM_OK);
    CHECK_EQ_U64(seg.size, 30 * MiB); /* 27 MiB left in the first one: a segment of its own */
    CHECK_EQ_U64(am_segment_lookup(model, must_malloc(model, 1000, 0, NULL), &seg), AM_OK);
    CHECK_EQ_U64(seg.size, 2 * MiB);
    am_model_free(model);
    config.large_segment_size = 10 * MiB; /* PyTorch wants more than 10 */
    CHECK(am_model_new(&config) == NULL);
}

/* ---- known answers: a private pool (AM_STREAM_PRIVATE_POOL) ---- */

static void test_private_pool(void) {
    const uint64_t graph = AM_STREAM_PRIVATE_POOL | 7; /* a CUDA graph's pool, stream 0 */
    am_model *model = new_model_with(0, UINT64_MAX, true);
    /* expandable segments are on, yet the private pool gets a plain 20 MiB segment */
    uint64_t g = must_malloc(model, 6 * MiB, graph, NULL);
    am_segment_info seg;
    CHECK_EQ_U64(am_segment_lookup(model, g, &seg), AM_OK);
    CHECK(!seg.is_expandable && seg.size == 20 * MiB);
    CHECK_EQ_U64(am_free(model, g), AM_OK);
    /* its free block serves no default-pool request: that one maps a page of its own */
    uint64_t d = must_malloc(model, 6 * MiB, 0, NULL);
    CHECK(d < g || d >= g + 20 * MiB);
    CHECK_EQ_U64(am_free(model, d), AM_OK);
    CHECK_EQ_U64(must_malloc(model, 10 * MiB, graph, NULL), g); /* its own request does */
    CHECK_EQ_U64(am_free(model, g), AM_OK);
    /* empty_cache() gives back the default pool's page, not the graph's cached segment */
    CHECK_EQ_U64(am_empty_cache(model, NULL, NULL), AM_OK);
    expect_stats(model, 20 * MiB, 0, 0, 1, 0, 20 * MiB);
    CHECK_EQ_U64(am_validate(model), AM_OK);
    am_model_free(model);
}

/* ---- known answers: what empty_cache() would give back (am_stats' releasable_bytes) ---- */

static void test_releasable(void) {
    const uint64_t x = 0x7e0000000000ULL;
    am_model *model = new_model(0, UINT64_MAX);
    /* a plain segment: all of it while it holds nothing, none of it once it holds a block */
    CHECK_EQ_U64(am_segment_insert(model, 0x1000000, 20 * MiB, 0, 0), AM_OK);
    CHECK_EQ_U64(am_stats(model).releasable_bytes, 20 * MiB);
    CHECK_EQ_U64(am_block_place(model, 0x1000000 + 4 * MiB, 1 * MiB, 1 * MiB, 0, 1), AM_OK);
    CHECK_EQ_U64(am_stats(model).releasable_bytes, 0); /* 19 MiB trapped */
    /* an expandable segment of three 20 MiB pages: the pages wholly inside free blocks */
    CHECK_EQ_U64(am_segment_map(model, x, 60 * MiB, 0, 2), AM_OK);
    CHECK_EQ_U64(am_stats(model).releasable_bytes, 60 * MiB);
    CHECK_EQ_U64(am_block_place(model, x, 25 * MiB, 25 * MiB, 0, 3), AM_OK);
    CHECK_EQ_U64(am_stats(model).releasable_bytes, 20 * MiB); /* free [25, 60): page [40, 60) */
    CHECK_EQ_U64(am_block_place(model, x + 45 * MiB, 5 * MiB, 5 * MiB, 0, 4), AM_OK);
    CHECK_EQ_U64(am_stats(model).releasable_bytes, 0); /* free [25, 45) and [50, 60): no page */
    CHECK_EQ_U64(am_block_release(model, x), AM_OK);
    CHECK_EQ_U64(am_stats(model).releasable_bytes, 40 * MiB);  /* free [0, 45): two pages */
    CHECK_EQ_U64(am_segment_unmap(model, x, 40 * MiB), AM_OK); /* the front: [40, 60) left */
    CHECK_EQ_U64(am_stats(model).releasable_bytes, 0);         /* free [40, 45), [50, 60) */
    CHECK_EQ_U64(am_segment_map(model, x + 20 * MiB, 20 * MiB, 0, 5), AM_OK); /* grows down */
    CHECK_EQ_U64(am_stats(model).releasable_bytes, 20 * MiB); /* free [20, 45): page [20, 40) */
    CHECK_EQ_U64(am_block_release(model, x + 45 * MiB), AM_OK);
    CHECK_EQ_U64(am_stats(model).releasable_bytes, 40 * MiB); /* all free: the whole segment */
    CHECK_EQ_U64(am_block_release(model, 0x1000000 + 4 * MiB), AM_OK);
    CHECK_EQ_U64(am_stats(model).releasable_bytes, 60 * MiB);
    CHECK_EQ_U64(am_validate(model), AM_OK);
    am_model_free(model);
}

/* ---- known answers: expandable segments in decide mode (PyTorch's ExpandableSegment) ---- */

static am_model *new_expandable_model(uint64_t capacity) {
    return new_model_with(capacity, UINT64_MAX, true);
}

#define ES (VA + AM_EXPANDABLE_VA_OFFSET) /* the first reserved range */

static void test_expandable_rules(void) {
    /* should_split with expandable segments: any remainder of 512 bytes is cut, in both pools */
    am_config plain = am_config_default(), expandable = am_config_default();
    expandable.expandable_segments = true;
    CHECK(!am_should_split(&plain, false, 20 * MiB, 19 * MiB));
    CHECK(am_should_split(&expandable, false, 20 * MiB, 19 * MiB));
    CHECK(am_should_split(&expandable, false, 20 * MiB, 20 * MiB - 512));
    CHECK(!am_should_split(&expandable, false, 20 * MiB, 20 * MiB - 511));
    CHECK(am_should_split(&plain, true, 2 * MiB, 2 * MiB - 512));
    CHECK(!am_should_split(&plain, false, 40 * MiB, 39 * MiB)); /* exactly 1 MiB: kept */
    CHECK(am_should_split(&plain, false, 40 * MiB, 39 * MiB - 512));
    plain.max_split_size = 32 * MiB; /* at or above max_split_size: never split */
    CHECK(!am_should_split(&plain, false, 80 * MiB, 32 * MiB));
    CHECK(am_should_split(&plain, false, 80 * MiB, 32 * MiB - 512));
    CHECK_EQ_U64(am_expandable_page(true), 2 * MiB);
    CHECK_EQ_U64(am_expandable_page(false), 20 * MiB);

    /* roundup_power2_next_division, and round_size with roundup_power2_divisions */
    CHECK_EQ_U64(am_roundup_power2_next_division(1200, 4), 1280); /* PyTorch's own example */
    CHECK_EQ_U64(am_roundup_power2_next_division(1024, 4), 1024);
    CHECK_EQ_U64(am_roundup_power2_next_division(1280, 4), 1280);
    am_config roundup = am_config_default();
    roundup.roundup_power2_divisions[10] = 4; /* [1 GiB, 2 GiB) in quarters */
    roundup.roundup_power2_divisions[0] = 2;  /* below 2 MiB in halves */
    CHECK_EQ_U64(am_config_round_size(&roundup, 1200 * MiB + 1), 1280 * MiB);
    CHECK_EQ_U64(am_config_round_size(&roundup, 1024 * MiB), 1024 * MiB);
    CHECK_EQ_U64(am_config_round_size(&roundup, 2000 * MiB), 2048 * MiB);
    CHECK_EQ_U64(am_config_round_size(&roundup, 600 * 1024 + 1), 768 * 1024);
    CHECK_EQ_U64(am_config_round_size(&roundup, 1000), 1024); /* not above 512 x 2 */
    CHECK_EQ_U64(am_config_round_size(&roundup, 3 * MiB + 1), 3 * MiB + 512); /* no divisions */
    CHECK_EQ_U64(am_config_round_size(&roundup, 100), 512);

    /* a model with roundup divisions places history entries at the rounded size */
    am_model *model = am_model_new(&roundup);
    CHECK_EQ_U64(am_segment_insert(model, VA, 2048 * MiB, 0, 0), AM_OK);
    am_block_info info;
    CHECK_EQ_U64(am_block_place_requested(model, VA, 1200 * MiB + 1, 0, 1, &info), AM_OK);
    CHECK_EQ_U64(info.size, 1280 * MiB);
    am_model_free(model);

    /* apply mode: the split rule follows the configuration */
    model = new_expandable_model(0);
    CHECK_EQ_U64(am_segment_map(model, VA, 20 * MiB, 0, 1), AM_OK);
    CHECK_EQ_U64(am_block_place_requested(model, VA, 19 * MiB, 0, 2, &info), AM_OK);
    CHECK_EQ_U64(info.size, 19 * MiB); /* 1 MiB left: cut, as PyTorch does with expandable on */
    am_model_free(model);
    model = new_model(0, UINT64_MAX);
    CHECK_EQ_U64(am_segment_map(model, VA, 20 * MiB, 0, 1), AM_OK);
    CHECK_EQ_U64(am_block_place_requested(model, VA, 19 * MiB, 0, 2, &info), AM_OK);
    CHECK_EQ_U64(info.size, 20 * MiB); /* expandable off (toggled later): the large-pool rule */
    am_model_free(model);

    /* segments of another pool are never joined, even when adjacent */
    model = new_model(0, UINT64_MAX);
    CHECK_EQ_U64(am_segment_map(model, VA, 20 * MiB, 0, 1), AM_OK);
    CHECK_EQ_U64(am_segment_map(model, VA + 20 * MiB, 2 * MiB, 0, 2), AM_OK);
    CHECK_EQ_U64(am_stats(model).segment_count, 2);
    CHECK_EQ_U64(am_segment_map_in_pool(model, VA + 22 * MiB, 4 * MiB, 0, 3, true), AM_OK);
    CHECK_EQ_U64(am_stats(model).segment_count, 2); /* joins the small one */
    am_model_free(model);
}

static void test_expandable_decide(void) {
    /* capacity 200 MiB: ranges of 1 1/8 of it, 12 pages of 20 MiB = 240 MiB */
    am_model *model = new_expandable_model(200 * MiB);
    effect_log log = {0};
    am_block_info info;
    uint64_t a = must_malloc(model, 30 * MiB, 0, &log); /* two pages mapped, the rest split */
    CHECK_EQ_U64(a, ES);
    CHECK_EQ_U64(log.count, 1);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_MAP, ES, 40 * MiB);
    CHECK(!log.items[0].is_small);
    expect_stats(model, 40 * MiB, 30 * MiB, 30 * MiB, 1, 1, 10 * MiB);
    uint64_t b = must_malloc(model, 5 * MiB, 0, NULL); /* from the free 10 MiB */
    CHECK_EQ_U64(b, ES + 30 * MiB);
    log.count = 0;
    /* 5 MiB free at the end + 7 MiB more: one page mapped right after, merged */
    uint64_t c = must_malloc(model, 12 * MiB, 0, &log);
    CHECK_EQ_U64(c, ES + 35 * MiB);
    CHECK_EQ_U64(log.count, 1);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_MAP, ES + 40 * MiB, 20 * MiB);
    expect_stats(model, 60 * MiB, 47 * MiB, 47 * MiB, 1, 3, 13 * MiB);
    CHECK_EQ_U64(am_free(model, a), AM_OK);
    /* free: 30 MiB at ES (cannot grow) and 13 MiB at the end (can grow by 180 MiB): the best
     * fit by size is the 13 MiB block, but PyTorch prefers the one that can grow least */
    CHECK_EQ_U64(am_malloc(model, 10 * MiB, 0, 0, NULL, NULL, &info), AM_OK);
    CHECK_EQ_U64(info.addr, ES);
    CHECK_EQ_U64(info.size, 10 * MiB);
    uint64_t d = info.addr;
    CHECK_EQ_U64(am_free(model, c), AM_OK);
    log.count = 0;
    /* empty_cache: [ES+10, ES+30) holds no whole page; [ES+35, ES+60) holds [ES+40, ES+60) */
    CHECK_EQ_U64(am_empty_cache(model, record_effect, &log), AM_OK);
    CHECK_EQ_U64(log.count, 1);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_UNMAP, ES + 40 * MiB, 20 * MiB);
    expect_stats(model, 40 * MiB, 15 * MiB, 15 * MiB, 1, 2, 20 * MiB);
    CHECK_EQ_U64(am_free(model, b), AM_OK);
    CHECK_EQ_U64(am_free(model, d), AM_OK);
    log.count = 0;
    CHECK_EQ_U64(am_empty_cache(model, record_effect, &log), AM_OK);
    CHECK_EQ_U64(log.count, 1);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_UNMAP, ES, 40 * MiB);
    expect_stats(model, 0, 0, 0, 0, 0, 0);
    log.count = 0;
    CHECK_EQ_U64(must_malloc(model, 1000, 0, &log), ES); /* the range was given back */
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_MAP, ES, 2 * MiB);
    CHECK(log.items[0].is_small);
    expect_stats(model, 2 * MiB, 1024, 1000, 1, 1, 2 * MiB - 1024);
    log.count = 0;
    /* the large pool gets a range of its own above the small one (113 pages of 2 MiB) */
    CHECK_EQ_U64(must_malloc(model, 3 * MiB, 0, &log), ES + 226 * MiB);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_MAP, ES + 226 * MiB, 20 * MiB);
    log.count = 0;
    CHECK_EQ_U64(must_malloc(model, 3 * MiB, 1, &log), ES + 466 * MiB); /* and each stream */
    am_model_free(model);

    /* the lowest address with enough free and unmapped space, holes first */
    model = new_expandable_model(0);
    uint64_t x = must_malloc(model, 40 * MiB, 0, NULL);
    uint64_t y = must_malloc(model, 40 * MiB, 0, NULL);
    uint64_t z = must_malloc(model, 40 * MiB, 0, NULL);
    CHECK(x == ES && y == ES + 40 * MiB && z == ES + 80 * MiB);
    CHECK_EQ_U64(am_free(model, x), AM_OK);
    log.count = 0;
    CHECK_EQ_U64(am_empty_cache(model, record_effect, &log), AM_OK);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_UNMAP, ES, 40 * MiB); /* a hole at the start */
    CHECK_EQ_U64(am_free(model, z), AM_OK);
    log.count = 0;
    /* 60 MiB: the hole (40 MiB, then y) is too small; the free 40 MiB at ES+80 and one more
     * page after it hold it */
    CHECK_EQ_U64(am_malloc(model, 60 * MiB, 0, 0, record_effect, &log, &info), AM_OK);
    CHECK_EQ_U64(info.addr, ES + 80 * MiB);
    CHECK_EQ_U64(info.size, 60 * MiB);
    CHECK_EQ_U64(log.count, 1);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_MAP, ES + 120 * MiB, 20 * MiB);
    CHECK_EQ_U64(am_free(model, y), AM_OK);
    log.count = 0;
    /* now the hole and the free y after it hold 60 MiB: the hole is mapped and joins */
    CHECK_EQ_U64(am_malloc(model, 60 * MiB, 0, 0, record_effect, &log, &info), AM_OK);
    CHECK_EQ_U64(info.addr, ES);
    CHECK_EQ_U64(info.size, 60 * MiB);
    CHECK_EQ_U64(log.count, 1);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_MAP, ES, 40 * MiB);
    am_segment_info seg;
    CHECK_EQ_U64(am_segment_lookup(model, ES, &seg), AM_OK);
    CHECK(seg.addr == ES && seg.size == 140 * MiB && seg.is_expandable);
    expect_stats(model, 140 * MiB, 120 * MiB, 120 * MiB, 1, 2, 20 * MiB);
    am_model_free(model);

    /* out of memory: a map fails as a whole; the retry unmaps free pages first */
    model = new_expandable_model(50 * MiB);
    a = must_malloc(model, 30 * MiB, 0, NULL);
    log.count = 0;
    CHECK_EQ_U64(am_malloc(model, 30 * MiB, 0, 0, record_effect, &log, &info), AM_ERR_OOM);
    CHECK_EQ_U64(log.count, 3);
    expect_effect(&log, 0, AM_EFFECT_ALLOC_FAILED, 0, 20 * MiB);
    expect_effect(&log, 1, AM_EFFECT_ALLOC_FAILED, 0, 20 * MiB);
    CHECK_EQ_U64(log.items[2].kind, AM_EFFECT_OOM);
    CHECK_EQ_U64(log.items[2].device_free, 10 * MiB);
    CHECK_EQ_U64(am_free(model, a), AM_OK);
    log.count = 0;
    CHECK_EQ_U64(am_malloc(model, 45 * MiB, 0, 0, record_effect, &log, &info), AM_ERR_OOM);
    CHECK_EQ_U64(log.count, 4);
    expect_effect(&log, 0, AM_EFFECT_ALLOC_FAILED, 0, 20 * MiB);
    expect_effect(&log, 1, AM_EFFECT_SEGMENT_UNMAP, ES, 40 * MiB);
    expect_effect(&log, 2, AM_EFFECT_ALLOC_FAILED, 0, 60 * MiB);
    CHECK_EQ_U64(log.items[3].kind, AM_EFFECT_OOM);
    expect_stats(model, 0, 0, 0, 0, 0, 0);
    CHECK_EQ_U64(must_malloc(model, 40 * MiB, 0, NULL), ES); /* two pages fit */
    am_model_free(model);

    /* expandable segments turned off: their free blocks are not used */
    model = new_model(0, UINT64_MAX);
    CHECK_EQ_U64(am_segment_map(model, 0x1000000000ULL, 40 * MiB, 0, 1), AM_OK);
    log.count = 0;
    CHECK_EQ_U64(must_malloc(model, 5 * MiB, 0, &log), VA);
    expect_effect(&log, 0, AM_EFFECT_SEGMENT_ALLOC, VA, 20 * MiB);
    am_model_free(model);
}

/* ---- apply mode under random, mostly invalid, operations ---- */

/* Random operations at random 512-aligned addresses of a 64 MiB window: most do not fit the
 * layout. Every failure must leave the layout exactly as it was, every success must keep all
 * invariants, and the expandable segments are joined and split over and over. */
static void test_apply_fuzz(void) {
    const uint64_t base = 0x100000000ULL;
    int successes[8] = {0}, splits = 0, joins = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        am_model *model = new_model(0, UINT64_MAX);
        random_state r = {seed * 0x2545f4914f6cdd1dULL};
        uint64_t unmapped_addr = 0, unmapped_size = 0;
        for (int op = 0; op < 2500; op++) {
            uint64_t kind = next_random(&r) % 8;
            uint64_t addr = base + (next_random(&r) % (64 * 2048)) * 512;
            uint64_t size = (1 + next_random(&r) % (kind < 4 ? 8192 : 64)) * 512;
            uint64_t stream = next_random(&r) % 2, before = layout_hash(model);
            uint64_t segments_before = am_stats(model).segment_count;
            am_error err = AM_OK;
            am_segment_info seg;
            am_block_info hit;
            if (kind == 3 && next_random(&r) % 2 && am_segment_lookup(model, addr, &seg) == AM_OK)
                addr = seg.addr; /* aim at a real segment */
            if (kind == 1 && next_random(&r) % 2 && am_block_lookup(model, addr, &hit) == AM_OK &&
                hit.state == AM_BLOCK_INACTIVE) {
                addr = hit.addr + (hit.size > size ? next_random(&r) % 2 * (hit.size - size) : 0);
                size = size < hit.size ? size : hit.size; /* aim inside a free block */
            }
            switch (kind) {
            case 0:
                if (unmapped_size && next_random(&r) % 2) { /* fill the last hole again */
                    addr = unmapped_addr;
                    size = unmapped_size;
                } else {
                    addr &= ~(2 * MiB - 1);
                    size = 2 * MiB;
                }
                err = am_segment_map(model, addr, size, stream, 1);
                break;
            case 1:
                err = am_segment_unmap(model, addr, size);
                break;
            case 2:
                err = am_segment_insert(model, addr, size, stream, 2);
                break;
            case 3:
                err = am_segment_remove(model, addr);
                break;
            case 4:
            case 5:
                err = am_block_place(model, addr, size, size - 7, stream, op);
                break;
            case 6:
                err = am_block_release(model, addr);
                break;
            default:
                err = am_block_mark_pending(model, addr);
                break;
            }
            uint64_t segments = am_stats(model).segment_count;
            if (err == AM_OK && kind == 1) {
                unmapped_addr = addr;
                unmapped_size = size;
            }
            if (err == AM_OK)
                successes[kind]++;
            else
                CHECK_EQ_U64(layout_hash(model), before);
            splits += err == AM_OK && kind == 1 && segments > segments_before;
            joins += err == AM_OK && kind == 0 && segments < segments_before;
            if (!walk_is_consistent(model)) {
                CHECK(!"apply fuzz broke an invariant");
                break;
            }
            if (kind >= 4 && next_random(&r) % 2) { /* aim at real blocks too */
                am_block_info info;
                if (am_block_lookup(model, addr, &info) == AM_OK) {
                    if (info.state == AM_BLOCK_INACTIVE)
                        err = am_block_place(model, info.addr, info.size / 2 + 1, 1, 0, 0);
                    else
                        err = am_block_release(model, info.addr);
                    CHECK_EQ_U64(err, AM_OK);
                    successes[kind]++;
                }
            }
        }
        am_model_free(model);
    }
    for (int kind = 0; kind < 8; kind++)
        CHECK(successes[kind] > 20); /* every kind of operation also succeeded often */
    CHECK(splits > 0 && joins > 0);  /* holes punched into and filled in expandable segments */
    if (getenv("AM_TEST_VERBOSE"))
        for (int kind = 0; kind < 8; kind++)
            printf("apply fuzz: kind %d succeeded %d times (%d splits, %d joins)\n", kind,
                   successes[kind], splits, joins);
}

/* ---- randomized differential test ---- */

typedef struct live_block {
    uint64_t addr;
    bool pending;
} live_block;

static uint64_t random_size(random_state *r) {
    uint64_t pick = next_random(r) % 100;
    if (pick < 55)
        return 1 + next_random(r) % (pick < 30 ? 8192 : MiB);
    if (pick < 95)
        return MiB + 1 + next_random(r) % (24 * MiB);
    return 24 * MiB + next_random(r) % (80 * MiB);
}

/* The decision PyTorch would make, from the public walk only: the best-fit block address (0
 * when none), its size after the split rule, and the first-fit address of a new segment. */
static void oracle(const am_model *model, uint64_t requested, uint64_t stream, uint64_t max_split,
                   uint64_t *fit_addr, uint64_t *fit_size, uint64_t *new_segment_addr) {
    uint64_t size = am_round_size(requested), best_size = 0, best_addr = 0;
    uint64_t segment_size = am_allocation_size(size), cursor = VA, first_fit = 0;
    bool small = am_is_small(size), found_gap = false;
    for (const am_segment *s = am_first_segment(model); s; s = am_next_segment(s)) {
        am_segment_info seg;
        am_segment_get(s, &seg);
        if (!found_gap && seg.addr >= cursor && seg.addr - cursor >= segment_size) {
            first_fit = cursor;
            found_gap = true;
        }
        cursor = (seg.addr + seg.size + AM_ROUND_LARGE - 1) / AM_ROUND_LARGE * AM_ROUND_LARGE;
        if (seg.is_small != small || seg.stream != stream)
            continue;
        for (const am_block *b = am_segment_first_block(model, s); b; b = am_next_block(b)) {
            am_block_info block;
            am_block_get(b, &block);
            if (block.state != AM_BLOCK_INACTIVE || block.size < size)
                continue;
            if (!best_size || block.size < best_size ||
                (block.size == best_size && block.addr < best_addr)) {
                best_size = block.size;
                best_addr = block.addr;
            }
        }
    }
    *new_segment_addr = found_gap ? first_fit : cursor;
    if (best_size && ((size < max_split && best_size >= max_split) ||
                      (size >= max_split && best_size >= size + AM_LARGE_BUFFER)))
        best_size = 0;
    *fit_addr = best_size ? best_addr : 0;
    uint64_t remaining = best_size - size;
    bool split = small ? remaining >= AM_MIN_BLOCK_SIZE : size < max_split && remaining > MiB;
    *fit_size = best_size && split ? size : best_size;
}

static void forget_block(live_block *live, int *count, uint64_t addr) {
    for (int i = 0; i < *count; i++) {
        if (live[i].addr == addr) {
            live[i] = live[--*count];
            return;
        }
    }
    CHECK(!"forgotten block was not live");
}

/* Replays decide-mode effects on the apply-mode twin. */
static void apply_effects(am_model *twin, const effect_log *log, live_block *live, int *count) {
    CHECK(log->count <= (int)(sizeof log->items / sizeof log->items[0]));
    for (int i = 0; i < log->count; i++) {
        const am_effect *e = &log->items[i];
        switch (e->kind) {
        case AM_EFFECT_SEGMENT_ALLOC:
            CHECK_EQ_U64(am_segment_insert(twin, e->addr, e->size, e->stream, e->tag), AM_OK);
            break;
        case AM_EFFECT_SEGMENT_FREE:
            CHECK_EQ_U64(am_segment_remove(twin, e->addr), AM_OK);
            break;
        case AM_EFFECT_FREE_COMPLETED:
            CHECK_EQ_U64(am_block_release(twin, e->addr), AM_OK);
            forget_block(live, count, e->addr);
            break;
        case AM_EFFECT_SEGMENT_MAP:
            CHECK_EQ_U64(
                am_segment_map_in_pool(twin, e->addr, e->size, e->stream, e->tag, e->is_small),
                AM_OK);
            break;
        case AM_EFFECT_SEGMENT_UNMAP:
            CHECK_EQ_U64(am_segment_unmap(twin, e->addr, e->size), AM_OK);
            break;
        case AM_EFFECT_ALLOC_FAILED:
        case AM_EFFECT_OOM:
            break;
        }
    }
}

#define LIVE_MAX 8192

/* A block decide mode handed out: placed in the apply-mode twin and remembered (or, with no
 * room left to remember it, freed in both). */
static void keep_block(am_model *model, am_model *twin, const am_block_info *info,
                       uint64_t requested, uint64_t stream, uint64_t tag, live_block *live,
                       int *count) {
    CHECK_EQ_U64(am_block_place(twin, info->addr, info->size, requested, stream, tag), AM_OK);
    if (*count < LIVE_MAX)
        live[(*count)++] = (live_block){info->addr, false};
    else
        CHECK_EQ_U64(am_free(model, info->addr), am_free(twin, info->addr));
}

/* A random live block freed in both models. */
static void free_random(am_model *model, am_model *twin, random_state *r, live_block *live,
                        int *count) {
    int i = (int)(next_random(r) % (uint64_t)*count);
    CHECK_EQ_U64(am_free(model, live[i].addr), AM_OK);
    CHECK_EQ_U64(am_block_release(twin, live[i].addr), AM_OK);
    live[i] = live[--*count];
}

/* A random live block's free requested in both models (a second request is refused). */
static void free_request_random(am_model *model, am_model *twin, random_state *r, live_block *live,
                                int count) {
    int i = (int)(next_random(r) % (uint64_t)count);
    am_error expected = live[i].pending ? AM_ERR_ALREADY_PENDING : AM_OK;
    CHECK_EQ_U64(am_free_request(model, live[i].addr), expected);
    CHECK_EQ_U64(am_block_mark_pending(twin, live[i].addr), expected);
    live[i].pending = true;
}

/* How often the rarer paths ran over all seeds: each must have run at least once. */
static int retried_allocs, completed_by_sync, single_release_retries;

static void run_differential(uint64_t seed, int operations, uint64_t capacity, uint64_t max_split) {
    am_model *model = new_model(capacity, max_split);
    am_model *twin = new_model(0, UINT64_MAX);
    random_state r = {seed * 0x9e3779b97f4a7c15ULL + 1};
    static live_block live[LIVE_MAX];
    static effect_log log;
    int count = 0, ooms = 0, reuses = 0, failures_before = check_failures;
    for (int op = 0; op < operations && check_failures == failures_before; op++) {
        uint64_t pick = next_random(&r) % 100;
        log.count = 0;
        if (pick < 55 || count == 0) {
            uint64_t requested = random_size(&r), stream = next_random(&r) % 3;
            uint64_t fit_addr, fit_size, segment_addr;
            oracle(model, requested, stream, max_split, &fit_addr, &fit_size, &segment_addr);
            am_block_info info;
            uint64_t reserved_before = am_stats(model).reserved_bytes;
            am_error err =
                am_malloc(model, requested, stream, (uint64_t)op + 1, record_effect, &log, &info);
            apply_effects(twin, &log, live, &count);
            if (log.count > 0 && log.items[0].kind == AM_EFFECT_ALLOC_FAILED) {
                CHECK(!fit_addr); /* the driver is asked only when no cached block fits */
                CHECK(capacity && reserved_before + log.items[0].size > capacity);
                retried_allocs += err == AM_OK;
                single_release_retries += err == AM_OK && log.count == 3 &&
                                          log.items[1].kind == AM_EFFECT_SEGMENT_FREE &&
                                          max_split != UINT64_MAX;
            }
            for (int e = 0; e < log.count; e++)
                completed_by_sync += log.items[e].kind == AM_EFFECT_FREE_COMPLETED;
            if (err == AM_ERR_OOM) {
                ooms++;
                CHECK(log.count >= 3 && log.items[log.count - 1].kind == AM_EFFECT_OOM);
            } else {
                CHECK_EQ_U64(err, AM_OK);
                if (fit_addr) {
                    reuses++;
                    CHECK_EQ_U64(log.count, 0);
                    CHECK_EQ_U64(info.addr, fit_addr);
                    CHECK_EQ_U64(info.size, fit_size);
                } else if (log.count == 1) {
                    CHECK_EQ_U64(log.items[0].kind, AM_EFFECT_SEGMENT_ALLOC);
                    CHECK_EQ_U64(log.items[0].addr, segment_addr);
                    CHECK_EQ_U64(info.addr, segment_addr);
                }
                keep_block(model, twin, &info, requested, stream, (uint64_t)op + 1, live, &count);
            }
        } else if (pick < 85) {
            free_random(model, twin, &r, live, &count);
        } else if (pick < 98) {
            free_request_random(model, twin, &r, live, count);
        } else {
            CHECK_EQ_U64(am_empty_cache(model, record_effect, &log), AM_OK);
            apply_effects(twin, &log, live, &count);
        }
        CHECK(walk_is_consistent(model));
        CHECK(walk_is_consistent(twin));
        CHECK(layouts_equal(model, twin));
    }
    if (getenv("AM_TEST_VERBOSE"))
        printf("seed %" PRIu64 ": %d reuses, %d OOMs, %d live\n", seed, reuses, ooms, count);
    CHECK(reuses > operations / 10);
    CHECK(capacity == 0 || ooms > 0);
    am_model_free(model);
    am_model_free(twin);
}

/* No free block of an expandable segment holds a whole page after the cache was released. */
static int no_whole_free_page(const am_model *model) {
    for (const am_segment *s = am_first_segment(model); s; s = am_next_segment(s)) {
        am_segment_info seg;
        am_segment_get(s, &seg);
        if (!seg.is_expandable)
            continue;
        uint64_t page = am_expandable_page(seg.is_small);
        for (const am_block *b = am_segment_first_block(model, s); b; b = am_next_block(b)) {
            am_block_info block;
            am_block_get(b, &block);
            uint64_t first = (block.addr - seg.addr + page - 1) / page * page;
            uint64_t last = (block.addr + block.size - seg.addr) / page * page;
            if (block.state == AM_BLOCK_INACTIVE && first < last)
                return 0;
        }
    }
    return 1;
}

/* Decide mode with expandable segments against its own effects replayed in apply mode: the
 * same layout after every operation, maps of whole pages, the device never over-committed,
 * blocks cut whenever 512 bytes remain, and no whole free page left by a cache release. */
static void run_differential_expandable(uint64_t seed, int operations, uint64_t capacity) {
    am_model *model = new_expandable_model(capacity);
    am_model *twin = new_expandable_model(0);
    random_state r = {seed * 0x9e3779b97f4a7c15ULL + 7};
    static live_block live[LIVE_MAX];
    static effect_log log;
    int count = 0, maps = 0, unmaps = 0, ooms = 0, failures_before = check_failures;
    for (int op = 0; op < operations && check_failures == failures_before; op++) {
        uint64_t pick = next_random(&r) % 100;
        log.count = 0;
        if (pick < 55 || count == 0) {
            uint64_t requested = random_size(&r), stream = next_random(&r) % 2;
            am_block_info info;
            am_error err =
                am_malloc(model, requested, stream, (uint64_t)op + 1, record_effect, &log, &info);
            apply_effects(twin, &log, live, &count);
            for (int e = 0; e < log.count; e++) {
                const am_effect *x = &log.items[e];
                if (x->kind == AM_EFFECT_SEGMENT_MAP) {
                    maps++;
                    CHECK_EQ_U64(x->size % am_expandable_page(x->is_small), 0);
                }
                unmaps += x->kind == AM_EFFECT_SEGMENT_UNMAP;
                CHECK(x->kind != AM_EFFECT_SEGMENT_ALLOC && x->kind != AM_EFFECT_SEGMENT_FREE);
            }
            if (err == AM_ERR_OOM) {
                ooms++;
                CHECK(no_whole_free_page(model)); /* the retry released the cache */
            } else {
                CHECK_EQ_U64(err, AM_OK);
                uint64_t rounded = am_round_size(requested);
                CHECK(info.size == rounded || info.size - rounded < AM_MIN_BLOCK_SIZE);
                keep_block(model, twin, &info, requested, stream, (uint64_t)op + 1, live, &count);
            }
        } else if (pick < 85) {
            free_random(model, twin, &r, live, &count);
        } else if (pick < 95) {
            free_request_random(model, twin, &r, live, count);
        } else {
            CHECK_EQ_U64(am_empty_cache(model, record_effect, &log), AM_OK);
            apply_effects(twin, &log, live, &count);
            for (int e = 0; e < log.count; e++)
                unmaps += log.items[e].kind == AM_EFFECT_SEGMENT_UNMAP;
            CHECK(no_whole_free_page(model));
        }
        CHECK(capacity == 0 || am_stats(model).reserved_bytes <= capacity);
        CHECK(walk_is_consistent(model));
        CHECK(layouts_equal(model, twin));
    }
    if (getenv("AM_TEST_VERBOSE"))
        printf("expandable seed %" PRIu64 ": %d maps, %d unmaps, %d OOMs, %d live\n", seed, maps,
               unmaps, ooms, count);
    CHECK(maps > 0 && unmaps > 0);
    CHECK(capacity == 0 || ooms > 0);
    am_model_free(model);
    am_model_free(twin);
}

static void test_differential(void) {
    for (uint64_t seed = 1; seed <= 6; seed++) {
        uint64_t capacity = seed % 3 == 0 ? 0 : (seed % 3 == 1 ? 300 * MiB : 900 * MiB);
        uint64_t max_split = seed % 2 ? UINT64_MAX : 48 * MiB;
        run_differential(seed, 2500, capacity, max_split);
    }
    for (uint64_t seed = 1; seed <= 3; seed++)
        run_differential_expandable(seed, 2500, seed == 3 ? 0 : 400 * MiB * seed);
    if (getenv("AM_TEST_VERBOSE"))
        printf(
            "retried allocations %d, retries after one segment release %d, completed by sync %d\n",
            retried_allocs, single_release_retries, completed_by_sync);
    CHECK(retried_allocs > 0 && single_release_retries > 0 && completed_by_sync > 0);
}

/* ---- throughput (verbose only) ---- */

static double seconds_now(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC); /* C11; precise enough for a rough rate */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void print_rate(const char *name, long operations, double elapsed, const am_model *model) {
    am_stats_info stats = am_stats(model);
    printf("bench %s: %ld ops (malloc or free, each followed by am_stats) in %.3f s = %.2f M "
           "ops/s; %" PRIu64 " segments, %" PRIu64 " live, %" PRIu64 " inactive blocks\n",
           name, operations, elapsed, (double)operations / elapsed / 1e6, stats.segment_count,
           stats.allocated_block_count, stats.inactive_block_count);
}

/* Random sizes up to 4 MiB on two streams, `live_count` blocks live: every op pair frees a
 * random block and allocates a new one. A harsh case: sizes never repeat, so most requests
 * split a block and most frees merge. */
static void bench_random(int live_count, long operations) {
    am_model *model = new_model(0, UINT64_MAX);
    uint64_t *slots = calloc((size_t)live_count, sizeof *slots);
    random_state r = {42};
    uint64_t checksum = 0;
    for (int i = 0; i < live_count; i++) {
        uint64_t size = random_size(&r) % (4 * MiB) + 1;
        slots[i] = must_malloc(model, size, next_random(&r) % 2, NULL);
    }
    double start = seconds_now();
    for (long op = 0; op < operations; op += 2) {
        int i = (int)(next_random(&r) % (uint64_t)live_count);
        am_free(model, slots[i]);
        checksum += am_stats(model).largest_inactive_bytes;
        uint64_t size = random_size(&r) % (4 * MiB) + 1;
        am_block_info info;
        am_malloc(model, size, next_random(&r) % 2, 0, NULL, NULL, &info);
        checksum += am_stats(model).largest_inactive_bytes;
        slots[i] = info.addr;
    }
    char name[64];
    snprintf(name, sizeof name, "random, %d live (checksum %" PRIu64 ")", live_count,
             checksum % 97);
    print_rate(name, operations, seconds_now() - start, model);
    CHECK(walk_is_consistent(model));
    free(slots);
    am_model_free(model);
}

/* A training loop: `tensors` activations of fixed sizes allocated in order each step (with a
 * short-lived temporary every fourth) and freed in reverse, over half as many weights that
 * stay. Sizes repeat from step to step, as they do in real runs. */
static void bench_steps(int tensors, long operations) {
    am_model *model = new_model(0, UINT64_MAX);
    uint64_t *sizes = calloc((size_t)tensors, sizeof *sizes);
    uint64_t *addrs = calloc((size_t)tensors, sizeof *addrs);
    random_state r = {7};
    for (int i = 0; i < tensors; i++)
        sizes[i] = random_size(&r);
    for (int i = 0; i < tensors / 2; i++)
        must_malloc(model, sizes[(i * 7) % tensors], 0, NULL);
    long done = 0;
    uint64_t checksum = 0;
    double start = seconds_now();
    while (done < operations) {
        am_block_info info;
        for (int i = 0; i < tensors; i++, done++) {
            am_malloc(model, sizes[i], 0, 0, NULL, NULL, &info);
            checksum += am_stats(model).largest_inactive_bytes;
            addrs[i] = info.addr;
            if (i % 4 == 0) {
                am_malloc(model, sizes[(i * 13) % tensors] / 3 + 1, 0, 0, NULL, NULL, &info);
                am_free(model, info.addr);
                checksum += am_stats(model).largest_inactive_bytes;
                done += 2;
            }
        }
        for (int i = tensors - 1; i >= 0; i--, done++) {
            am_free(model, addrs[i]);
            checksum += am_stats(model).largest_inactive_bytes;
        }
    }
    char name[64];
    snprintf(name, sizeof name, "steps, %d tensors (checksum %" PRIu64 ")", tensors, checksum % 97);
    print_rate(name, done, seconds_now() - start, model);
    CHECK(walk_is_consistent(model));
    free(sizes);
    free(addrs);
    am_model_free(model);
}

int main(int argc, char **argv) {
    test_rounding_and_pools();
    test_first_allocations();
    test_best_fit();
    test_merge_and_streams();
    test_split_thresholds();
    test_capacity();
    test_empty_cache();
    test_pending_free();
    test_stats_script();
    test_apply_mode();
    test_expandable();
    test_releasable();
    test_expandable_adopt();
    test_garbage_collection();
    test_private_pool();
    test_large_segment_size();
    test_expandable_rules();
    test_expandable_decide();
    test_apply_fuzz();
    test_differential();
    if (argc > 1 && strcmp(argv[1], "-v") == 0) {
        bench_random(1000, 10000000);
        bench_random(20000, 10000000);
        bench_random(200000, 4000000);
        bench_steps(200, 20000000);
        bench_steps(2000, 10000000);
        bench_steps(20000, 10000000);
    }
    return check_finish("test_alloc_model");
}
