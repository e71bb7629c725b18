/* test_replay_expandable.c — the replay of PyTorch's expandable segments and of the allocator's
 * settings, against hand-built traces with known answers: maps of several pages cut by unmaps
 * (what a live recording of PyTorch's history gives; snapshot imports map page by page), the
 * split rule of expandable segments, settings handed in by the caller, and the invariant
 * warnings. */
#include "check.h"
#include "trace_build.h"

static void torch(trace_op op, trace_level level, uint64_t addr, uint64_t size) {
    ev(op, level, TRACE_SOURCE_TORCH, addr, size, size, 0);
}

static int64_t q_text_is(const char *sql, const char *want) {
    sqlite3_stmt *st;
    int64_t same = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        same = strcmp((const char *)sqlite3_column_text(st, 0), want) == 0;
    if (!same && sqlite3_column_text(st, 0))
        fprintf(stderr, "%s: '%s', want '%s'\n", sql, sqlite3_column_text(st, 0), want);
    sqlite3_finalize(st);
    return same;
}

/* A live recording's history: one map of three pages; unmaps that cut its rows. */
static void test_multi_page_maps(void) {
    const uint64_t x = 0x7a0000000000ULL;
    begin();
    torch(TRACE_OP_MAP, TRACE_LEVEL_SEGMENT, x, 60 * MiB); /* 1 */
    /* 19 MiB: expandable segments split whenever 512 bytes remain */
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, x, 19 * MiB);              /* 2 */
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, x + 45 * MiB, 5 * MiB);    /* 3 */
    torch(TRACE_OP_UNMAP, TRACE_LEVEL_SEGMENT, x + 20 * MiB, 20 * MiB); /* 4: the middle page */
    torch(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, x, 0);                      /* 5 */
    torch(TRACE_OP_UNMAP, TRACE_LEVEL_SEGMENT, x, 20 * MiB);            /* 6 */
    torch(TRACE_OP_MAP, TRACE_LEVEL_SEGMENT, x + 20 * MiB, 20 * MiB);   /* 7: rejoins */
    replay_with(db_path, DB_READ_ONLY, NULL);
    CHECK_EQ_U64(q("SELECT size FROM event_rows WHERE event_id = 2"), 19 * MiB);
    CHECK_EQ_U64(q("SELECT reserved_bytes / 1048576 FROM timeline WHERE event_id = 4"), 40);
    CHECK_EQ_U64(q("SELECT segments FROM timeline WHERE event_id = 4"), 2);
    /* the map's row ends at the unmap; what is left before it is a row made by the unmap,
     * what is left after it waits for the next event that makes no row (the free) */
    CHECK_EQ_U64(q("SELECT free_event_id FROM segments WHERE segment_id = 1"), 4);
    CHECK_EQ_U64(q("SELECT size / 1048576 FROM segments WHERE segment_id = 4"), 20);
    CHECK_EQ_U64(q("SELECT addr - 0x7a0000000000 FROM segments WHERE segment_id = 4"), 0);
    CHECK_EQ_U64(q("SELECT free_event_id FROM segments WHERE segment_id = 4"), 6);
    CHECK_EQ_U64(q("SELECT (addr - 0x7a0000000000) / 1048576 FROM segments WHERE segment_id = 5"),
                 40);
    CHECK_EQ_U64(q("SELECT free_event_id IS NULL FROM segments WHERE segment_id = 5"), 1);
    CHECK_EQ_U64(q("SELECT size FROM event_rows WHERE event_id = 4"), 20 * MiB);
    CHECK_EQ_U64(q("SELECT segment_id FROM event_rows WHERE event_id = 4"), 1);
    /* the rows live at the end tile the mapped memory: [x+20, x+60) */
    CHECK_EQ_U64(q("SELECT sum(size) / 1048576 FROM segments WHERE free_event_id IS NULL"), 40);
    CHECK_EQ_U64(q("SELECT reserved_bytes / 1048576 FROM timeline WHERE event_id = 7"), 40);
    CHECK_EQ_U64(q("SELECT segments FROM timeline WHERE event_id = 7"), 1);
    CHECK_EQ_U64(q("SELECT allocated_bytes / 1048576 FROM timeline WHERE event_id = 7"), 5);
    /* a block in a map of several pages names no segment: that row may be cut under it */
    CHECK_EQ_U64(q("SELECT segment_id IS NULL FROM allocations WHERE alloc_id = 3"), 1);
    CHECK_EQ_U64(q("SELECT count(*) FROM warnings"), 0);
    CHECK(q_text_is("SELECT value FROM meta WHERE key = 'allocator_settings_source'", "inferred"));
    CHECK(q_text_is("SELECT value FROM meta WHERE key = 'allocator_settings'",
                    "{\"expandable_segments\": true}"));
    CHECK_EQ_U64(q("SELECT value FROM meta WHERE key = 'timestamps'"), 1);
    CHECK_EQ_U64(q("SELECT value FROM meta WHERE key = 'history'"), 1);
}

/* Settings handed in by the caller win over the inference and shape the blocks. */
static void test_given_settings(void) {
    const uint64_t x = 0x7a0000000000ULL;
    begin();
    torch(TRACE_OP_MAP, TRACE_LEVEL_SEGMENT, x, 20 * MiB);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, x, 19 * MiB);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, 0x10000000, 2048 * MiB);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, 0x10000000, 1200 * MiB + 1);
    char err[256];
    am_settings s = am_settings_default();
    CHECK(am_settings_parse(&s, "expandable_segments:False,roundup_power2_divisions:[1024:4]", err,
                            sizeof err) == 0);
    replay_options opt = {
        .settings = &s, .settings_source = "snapshot", .timestamps = 0, .history = 1};
    replay_with(db_path, DB_READ_ONLY, &opt);
    CHECK_EQ_U64(q("SELECT size FROM event_rows WHERE event_id = 2"), 20 * MiB);   /* not split */
    CHECK_EQ_U64(q("SELECT size FROM event_rows WHERE event_id = 4"), 1280 * MiB); /* quarters */
    CHECK(q_text_is("SELECT value FROM meta WHERE key = 'allocator_settings_source'", "snapshot"));
    CHECK_EQ_U64(q("SELECT value FROM meta WHERE key = 'timestamps'"), 0);
    CHECK_EQ_U64(q("SELECT count(*) FROM warnings"), 0);
}

/* A live trace carries the allocator's configuration as the recorder's mark
 * "PYTORCH_CUDA_ALLOC_CONF=..." (domain memrec.allocator): the replay follows it. */
static void test_recorded_conf(void) {
    begin();
    const char *text = "PYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions:[1024:4]";
    trace_marker m = {.ts_ns = now_ns,
                      .kind = TRACE_MARK_MARK,
                      .domain_id = trace_writer_string(w, "memrec.allocator", 16),
                      .name_id = trace_writer_string(w, text, strlen(text))};
    CHECK(trace_writer_marker(w, &m) == 0);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, 0x10000000, 2048 * MiB);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, 0x10000000, 1200 * MiB + 1);
    replay_it(db_path, DB_READ_ONLY);
    CHECK_EQ_U64(q("SELECT size FROM event_rows WHERE event_id = 2"), 1280 * MiB); /* quarters */
    CHECK(q_text_is("SELECT value FROM meta WHERE key = 'allocator_settings_source'", "trace"));
    CHECK_EQ_U64(q("SELECT count(*) FROM meta WHERE key = 'allocator_settings' AND value LIKE "
                   "'%roundup_power2_divisions%'"),
                 1);
}

/* Settings reported with expandable segments off, then PyTorch's maps (the program turned them
 * on at run time): the maps win. */
static void test_maps_over_reported(void) {
    begin();
    const char *text = TRACE_TORCH_SETTINGS_PREFIX "expandable_segments:False";
    trace_marker m = {
        .ts_ns = now_ns,
        .kind = TRACE_MARK_MARK,
        .domain_id = trace_writer_string(w, TRACE_ALLOCATOR_DOMAIN, strlen(TRACE_ALLOCATOR_DOMAIN)),
        .name_id = trace_writer_string(w, text, strlen(text))};
    CHECK(trace_writer_marker(w, &m) == 0);
    torch(TRACE_OP_MAP, TRACE_LEVEL_SEGMENT, 0x10000000, 20 * MiB);
    torch(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, 0x10000000, 6 * MiB);
    replay_it(db_path, DB_READ_ONLY);
    CHECK(q_text_is("SELECT value FROM meta WHERE key = 'allocator_settings_source'", "trace"));
    CHECK_EQ_U64(q("SELECT count(*) FROM meta WHERE key = 'allocator_settings' AND value LIKE "
                   "'%\"expandable_segments\": true%'"),
                 1);
}

/* Broken invariants are warnings, raised when they start. */
static void test_invariants(void) {
    begin();
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x90000000, 4 * MiB, 0, 0); /* 1 */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x91000000, 4 * MiB, 0, 0); /* 2 */
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 64 * MiB);                                   /* 3 */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x92000000, 1 * MiB, 0, 0); /* 4 */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x10000000, MiB, 2 * MiB, 0);
    replay_it(db_path, DB_READ_ONLY);
    CHECK_EQ_U64(q("SELECT count(*) FROM warnings WHERE code = 'allocated_above_reserved'"), 1);
    CHECK_EQ_U64(q("SELECT event_id FROM warnings WHERE code = 'allocated_above_reserved'"), 1);
    CHECK_EQ_U64(q("SELECT event_id FROM warnings WHERE code = 'requested_above_allocated'"), 5);
    CHECK_EQ_U64(q("SELECT count(*) FROM warnings WHERE code = 'block_outside_segment'"), 3);
    CHECK_EQ_U64(q("SELECT value FROM meta WHERE key = 'warnings_total'"), 5);
    CHECK_EQ_U64(q("SELECT count(*) FROM warnings WHERE code = 'layout_invalid'"), 0);
}

int main(void) {
    if (tmpdir_make("replay-es") != 0)
        return 1;
    test_multi_page_maps();
    test_given_settings();
    test_recorded_conf();
    test_maps_over_reported();
    test_invariants();
    return tmpdir_finish("test_replay_expandable");
}
