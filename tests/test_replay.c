/* test_replay.c — the replay's rows against hand-built traces with known
 * answers, and a synthetic training trace against an independent replay.
 *
 * Each case writes a small trace with the codec, replays it into a fresh
 * database and checks the rows with SQL: totals after each event, the
 * seeded start, segment/block joining, VMM accounting, warnings, steps. */
#include "check.h"
#include "trace_build.h"
#include "training_sim.h"
#include "when.h"

static void ev_kind(trace_op op, trace_mem_kind kind, uint64_t addr, uint64_t size) {
    write_event((trace_event){.addr = addr,
                              .size = size,
                              .requested = size,
                              .op = (uint8_t)op,
                              .level = TRACE_LEVEL_SEGMENT,
                              .kind = (uint8_t)kind});
}

static void marker(trace_marker_kind kind, const char *name, uint32_t tid) {
    now_ns += 1000;
    trace_marker m = {.ts_ns = now_ns,
                      .tid = tid,
                      .kind = (uint8_t)kind,
                      .name_id = name ? trace_writer_string(w, name, strlen(name)) : 0};
    CHECK(trace_writer_marker(w, &m) == 0);
}

/* The totals after event N, as "allocated/reserved" in MiB for readable checks. */
static long long alloc_after(int n) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT allocated_bytes / 1048576 FROM timeline WHERE event_id = %d",
             n);
    return q(sql);
}

static long long reserved_after(int n) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT reserved_bytes / 1048576 FROM timeline WHERE event_id = %d",
             n);
    return q(sql);
}

/* A plain CUDA program: segments only, each one block. */
static void test_segments_only(void) {
    begin();
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 4 * MiB);
    cupti_segment(TRACE_OP_ALLOC, 0x20000000, 6 * MiB);
    cupti_segment(TRACE_OP_FREE, 0x10000000, 0);
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(alloc_after(1), 4);
    CHECK_EQ_U64(reserved_after(1), 4);
    CHECK_EQ_U64(alloc_after(2), 10);
    CHECK_EQ_U64(alloc_after(3), 6);
    CHECK_EQ_U64(reserved_after(3), 6);
    CHECK_EQ_U64(q("SELECT size FROM events WHERE event_id = 3"), 4 * MiB); /* its alloc's */
    CHECK_EQ_U64(q("SELECT alloc_event_id FROM events WHERE event_id = 3"), 1);
    CHECK_EQ_U64(q("SELECT count(*) FROM segments WHERE whole_block = 1"), 2);
    CHECK_EQ_U64(q("SELECT count(*) FROM allocations"), 2);
    CHECK_EQ_U64(q("SELECT free_event_id FROM allocations WHERE alloc_id = 1"), 3);
    CHECK_EQ_U64(q("SELECT count(*) FROM allocations WHERE free_ts_ns IS NULL"), 1);
    CHECK_EQ_U64(q("SELECT peak_allocated_bytes / 1048576 FROM devices"), 10);
    CHECK_EQ_U64(q("SELECT count(*) FROM warnings"), 0);
}

/* CUPTI's cuMemAlloc and PyTorch's segment_alloc of the same memory are one
 * segment; PyTorch's requested sizes are placed with the split rule. */
static void test_cupti_torch_join(void) {
    begin();
    uint64_t seg = 0x7f0000000000ULL;
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, seg, 20 * MiB, 0, 11);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, seg, 20 * MiB, 0, 22);
    /* 5 MiB + 1: rounded to 5 MiB + 512, split (the rest is > 1 MiB) */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, seg, 5 * MiB + 1, 5 * MiB + 1, 22);
    /* the rest, 15 MiB - 512, asked as 14.5 MiB: the remainder is < 1 MiB, not split */
    uint64_t b2 = seg + 5 * MiB + 512;
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, b2, 14 * MiB + MiB / 2,
       14 * MiB + MiB / 2, 22);
    ev(TRACE_OP_FREE_REQUESTED, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, b2, 0, 0, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, b2, 0, 0, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, seg, 0, 0, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, seg, 0, 0, 0);
    cupti_segment(TRACE_OP_FREE, seg, 0);
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(reserved_after(1), 20);
    CHECK_EQ_U64(reserved_after(2), 20); /* not 40 */
    CHECK_EQ_U64(alloc_after(2), 0);     /* PyTorch sub-allocates it: no whole block */
    CHECK_EQ_U64(q("SELECT size FROM events WHERE event_id = 3"), 5 * MiB + 512);
    CHECK_EQ_U64(q("SELECT size FROM events WHERE event_id = 4"), 15 * MiB - 512);
    CHECK_EQ_U64(q("SELECT requested_bytes FROM timeline WHERE event_id = 4"),
                 5 * MiB + 1 + 14 * MiB + MiB / 2);
    CHECK_EQ_U64(q("SELECT allocated_bytes FROM timeline WHERE event_id = 5"), 20 * MiB);
    CHECK_EQ_U64(q("SELECT allocated_bytes FROM timeline WHERE event_id = 6"), 5 * MiB + 512);
    CHECK_EQ_U64(q("SELECT largest_free_bytes FROM timeline WHERE event_id = 6"), 15 * MiB - 512);
    CHECK_EQ_U64(reserved_after(8), 0);
    CHECK_EQ_U64(reserved_after(9), 0);
    CHECK_EQ_U64(q("SELECT count(*) FROM segments"), 1);
    CHECK_EQ_U64(q("SELECT stack_id FROM segments"), 22);
    CHECK_EQ_U64(q("SELECT driver_stack_id FROM segments"), 11);
    CHECK_EQ_U64(q("SELECT whole_block FROM segments"), 0);
    CHECK_EQ_U64(q("SELECT free_event_id FROM segments"), 8);
    CHECK_EQ_U64(q("SELECT count(*) FROM allocations"), 2); /* the two blocks only */
    CHECK(q("SELECT free_requested_ts_ns FROM allocations WHERE alloc_id = 4") > 0);
    CHECK_EQ_U64(q("SELECT count(*) FROM warnings"), 0);
}

/* A seeded start (a snapshot's history begins with memory already live). */
static void test_seed(void) {
    begin();
    uint64_t seg = 0x7f0000000000ULL;
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, seg, 64 * MiB, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, seg, 60 * MiB, 0, 0);
    marker(TRACE_MARK_SEED_END, NULL, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, seg, 0, 0, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, seg, 0, 0, 0);
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(q("SELECT min(event_id) FROM event_rows"), (uint64_t)-2);
    CHECK_EQ_U64(q("SELECT op FROM event_rows WHERE event_id = 0"), 12); /* seed */
    CHECK_EQ_U64(alloc_after(0), 60);
    CHECK_EQ_U64(reserved_after(0), 64);
    CHECK_EQ_U64(alloc_after(1), 0);
    CHECK_EQ_U64(reserved_after(2), 0);
    CHECK_EQ_U64(q("SELECT peak_allocated_event_id FROM devices"), 0); /* the seed row */
    CHECK_EQ_U64(q("SELECT peak_allocated_bytes / 1048576 FROM devices"), 60);
    CHECK_EQ_U64(q("SELECT alloc_event_id FROM events WHERE event_id = 1"), (uint64_t)-1);
    CHECK_EQ_U64(q("SELECT ts_ns FROM events WHERE event_id = 1"), 0); /* t0 after the seed */
    CHECK_EQ_U64(q("SELECT count(*) FROM timeline"), 3);               /* seed row + 2 */
}

/* Kinds that do not count, VMM accounting, pool trims and failures. */
static void test_kinds_and_vmm(void) {
    begin();
    ev_kind(TRACE_OP_ALLOC, TRACE_KIND_MANAGED, 0x1000000, 8 * MiB);
    ev_kind(TRACE_OP_ALLOC, TRACE_KIND_PINNED_HOST, 0x2000000, 8 * MiB);
    cupti_segment(TRACE_OP_PHYS_CREATE, 0xabc, 2 * MiB);
    cupti_segment(TRACE_OP_VA_RESERVE, 0x40000000, 64 * MiB);
    cupti_segment(TRACE_OP_MAP, 0x40000000, 2 * MiB);
    cupti_segment(TRACE_OP_ALLOC_FAILED, 0, 80000 * MiB);
    cupti_segment(TRACE_OP_UNMAP, 0x40000000, 2 * MiB);
    cupti_segment(TRACE_OP_PHYS_RELEASE, 0xabc, 0);
    cupti_segment(TRACE_OP_VA_FREE, 0x40000000, 0);
    ev_kind(TRACE_OP_FREE, TRACE_KIND_MANAGED, 0x1000000, 0);
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(reserved_after(2), 0);
    CHECK_EQ_U64(reserved_after(3), 2);
    CHECK_EQ_U64(reserved_after(4), 2); /* an address range is no memory */
    CHECK_EQ_U64(reserved_after(5), 2); /* mapping it is not more memory */
    CHECK_EQ_U64(q("SELECT segments FROM timeline WHERE event_id = 5"), 1);
    CHECK_EQ_U64(q("SELECT addr IS NULL FROM events WHERE event_id = 6"), 1);
    CHECK_EQ_U64(reserved_after(7), 2);
    CHECK_EQ_U64(reserved_after(8), 0);
    CHECK_EQ_U64(q("SELECT alloc_event_id FROM events WHERE event_id = 8"), 3);
    CHECK_EQ_U64(q("SELECT alloc_event_id FROM events WHERE event_id = 9"), 4);
    CHECK_EQ_U64(q("SELECT alloc_event_id FROM events WHERE event_id = 10"), 1);
    CHECK_EQ_U64(q("SELECT mapped FROM segments WHERE addr = 1073741824"), 1);
    CHECK_EQ_U64(q("SELECT count(*) FROM segments WHERE kind = 'managed'"), 1);
    CHECK_EQ_U64(q("SELECT count(*) FROM warnings"), 0);
}

/* What the allocator could not have produced: warnings with event ids. */
static void test_anomalies(void) {
    begin();
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x10000000, 2 * MiB, 0, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, 0x10000000, 512, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x10100000, 2 * MiB, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x90000000, 1 * MiB, 0, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x55550000, 0, 0, 0);
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(q("SELECT event_id FROM warnings WHERE code = 'free_unknown' ORDER BY event_id"),
                 2);
    CHECK_EQ_U64(q("SELECT event_id FROM warnings WHERE code = 'segment_overlap'"), 3);
    CHECK_EQ_U64(q("SELECT event_id FROM warnings WHERE code = 'block_outside_segment'"), 4);
    CHECK_EQ_U64(q("SELECT count(*) FROM warnings WHERE code = 'free_unknown'"), 2);
    CHECK_EQ_U64(reserved_after(3), 2);
    CHECK_EQ_U64(alloc_after(4), 1); /* the orphan block still counts */
}

/* Steps from ranges on several threads; step:N is the state before its end. */
static void test_steps(void) {
    begin();
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 2 * MiB);
    marker(TRACE_MARK_RANGE_PUSH, "ProfilerStep#7", 1);
    marker(TRACE_MARK_RANGE_PUSH, "forward", 1);
    cupti_segment(TRACE_OP_ALLOC, 0x20000000, 2 * MiB);
    marker(TRACE_MARK_RANGE_POP, NULL, 1);
    marker(TRACE_MARK_RANGE_PUSH, "backward", 2); /* another thread: pops stay apart */
    marker(TRACE_MARK_RANGE_POP, NULL, 1);        /* closes ProfilerStep#7 */
    cupti_segment(TRACE_OP_ALLOC, 0x30000000, 2 * MiB);
    marker(TRACE_MARK_RANGE_POP, NULL, 2);
    marker(TRACE_MARK_MARK, "step 8", 1);
    cupti_segment(TRACE_OP_ALLOC, 0x40000000, 2 * MiB);
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(q("SELECT count(*) FROM steps"), 2);
    CHECK_EQ_U64(q("SELECT begin_event_id FROM steps WHERE step = 7"), 1);
    CHECK_EQ_U64(q("SELECT end_event_id FROM steps WHERE step = 7"), 2);
    CHECK_EQ_U64(q("SELECT end_ts_ns IS NULL FROM steps WHERE step = 8"), 1); /* still open */
    CHECK_EQ_U64(q("SELECT end_event_id FROM steps WHERE step = 8"), 4);
    CHECK_EQ_U64(q("SELECT count(*) FROM markers"), 7);
    CHECK_EQ_U64(q("SELECT count(*) FROM ranges WHERE end_ts_ns IS NOT NULL"), 3);
    CHECK_EQ_U64(q("SELECT begin_marker_id FROM markers WHERE marker_id = 5"), 1);
    CHECK_EQ_U64(q("SELECT name = 'backward' FROM markers WHERE marker_id = 6"), 1);
    CHECK_EQ_U64(q("SELECT alloc_step FROM allocations WHERE alloc_id = 2"), 7);
    CHECK_EQ_U64(q("SELECT alloc_step IS NULL FROM allocations WHERE alloc_id = 3"), 1);
}

/* A damaged trace may name strings it never defined: a mark whose domain or name is such an
 * id, in the tensor names' domain or not, is a mark without one (it must not crash the
 * replay: these were NULL dereferences). */
static void test_undefined_strings(void) {
    begin();
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 2 * MiB);
    uint32_t tensor_domain =
        trace_writer_string(w, TRACE_TENSOR_DOMAIN, strlen(TRACE_TENSOR_DOMAIN));
    trace_marker m = {
        .ts_ns = now_ns += 1000, .kind = TRACE_MARK_MARK, .domain_id = 4000, .name_id = 4001};
    CHECK(trace_writer_marker(w, &m) == 0); /* neither defined */
    m = (trace_marker){.ts_ns = now_ns += 1000,
                       .kind = TRACE_MARK_MARK,
                       .domain_id = tensor_domain,
                       .name_id = 4002,
                       .value = 0x10000000};
    CHECK(trace_writer_marker(w, &m) == 0); /* a tensor name that is not there */
    m = (trace_marker){
        .ts_ns = now_ns += 1000, .kind = TRACE_MARK_RANGE_PUSH, .tid = 1, .name_id = 4003};
    CHECK(trace_writer_marker(w, &m) == 0);
    marker(TRACE_MARK_RANGE_POP, NULL, 1);
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(q("SELECT count(*) FROM tensor_names"), 0);
    CHECK_EQ_U64(q("SELECT count(*) FROM markers"), 3); /* the mark, the push, the pop */
    CHECK_EQ_U64(q("SELECT count(*) FROM markers WHERE name IS NOT NULL"), 0);
    CHECK_EQ_U64(q("SELECT count(*) FROM steps"), 0);
    CHECK_EQ_U64(q("SELECT allocated_bytes / 1048576 FROM timeline WHERE event_id = 1"), 2);
}

/* A step in pieces is one step: [its earliest begin, its latest end), the name of its first
 * piece, open when a piece is; steps named without a number are numbered in order of begin. */
static void test_step_pieces(void) {
    begin();
    marker(TRACE_MARK_RANGE_PUSH, "step 3", 1);
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 2 * MiB); /* 1 */
    marker(TRACE_MARK_RANGE_PUSH, "Step 3 (rank 1)", 2);
    cupti_segment(TRACE_OP_ALLOC, 0x20000000, 2 * MiB); /* 2 */
    marker(TRACE_MARK_RANGE_POP, NULL, 1);              /* the first piece ends at 2 */
    cupti_segment(TRACE_OP_ALLOC, 0x30000000, 2 * MiB); /* 3 */
    marker(TRACE_MARK_RANGE_POP, NULL, 2);              /* the second ends at 3 */
    marker(TRACE_MARK_RANGE_PUSH, "Step", 1);           /* no number: the first such, 0 */
    cupti_segment(TRACE_OP_ALLOC, 0x40000000, 2 * MiB); /* 4 */
    marker(TRACE_MARK_RANGE_POP, NULL, 1);
    marker(TRACE_MARK_RANGE_PUSH, "step", 1);           /* the second, 1 */
    cupti_segment(TRACE_OP_ALLOC, 0x50000000, 2 * MiB); /* 5 */
    marker(TRACE_MARK_RANGE_POP, NULL, 1);
    marker(TRACE_MARK_RANGE_PUSH, "step 3", 3);         /* step 3 again, never closed */
    cupti_segment(TRACE_OP_ALLOC, 0x60000000, 2 * MiB); /* 6 */
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(q("SELECT count(*) FROM steps"), 3);
    CHECK_EQ_U64(q("SELECT begin_event_id FROM steps WHERE step = 3"), 0);
    CHECK_EQ_U64(q("SELECT name = 'step 3' FROM steps WHERE step = 3"), 1);
    CHECK_EQ_U64(q("SELECT end_ts_ns IS NULL FROM steps WHERE step = 3"), 1); /* a piece is open */
    CHECK_EQ_U64(q("SELECT end_event_id FROM steps WHERE step = 3"), 6);
    CHECK_EQ_U64(q("SELECT begin_event_id FROM steps WHERE step = 0"), 3);
    CHECK_EQ_U64(q("SELECT end_event_id FROM steps WHERE step = 0"), 4);
    CHECK_EQ_U64(q("SELECT begin_event_id FROM steps WHERE step = 1"), 4);
    CHECK_EQ_U64(q("SELECT end_event_id FROM steps WHERE step = 1"), 5);
    /* closed pieces only: the later end wins */
    begin();
    marker(TRACE_MARK_RANGE_PUSH, "step 9", 1);
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 2 * MiB); /* 1 */
    marker(TRACE_MARK_RANGE_PUSH, "step 9", 2);
    cupti_segment(TRACE_OP_ALLOC, 0x20000000, 2 * MiB); /* 2 */
    marker(TRACE_MARK_RANGE_POP, NULL, 2);              /* the later piece ends first, at 2 */
    cupti_segment(TRACE_OP_ALLOC, 0x30000000, 2 * MiB); /* 3 */
    marker(TRACE_MARK_RANGE_POP, NULL, 1);              /* the first ends last, at 3 */
    cupti_segment(TRACE_OP_ALLOC, 0x40000000, 2 * MiB); /* 4 */
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(q("SELECT count(*) FROM steps"), 1);
    CHECK_EQ_U64(q("SELECT begin_event_id FROM steps WHERE step = 9"), 0);
    CHECK_EQ_U64(q("SELECT end_event_id FROM steps WHERE step = 9"), 3);
    CHECK_EQ_U64(q("SELECT end_ts_ns IS NOT NULL FROM steps WHERE step = 9"), 1);
}

/* Pieces that end at the same time: the step ends with the later event. */
static void test_step_pieces_tie(void) {
    begin();
    marker(TRACE_MARK_RANGE_PUSH, "step 5", 1);
    marker(TRACE_MARK_RANGE_PUSH, "step 5", 2);
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 2 * MiB); /* 1 */
    uint64_t at = now_ns + 1000;
    trace_marker pop = {.ts_ns = at, .tid = 2, .kind = TRACE_MARK_RANGE_POP};
    CHECK(trace_writer_marker(w, &pop) == 0);
    cupti_segment(TRACE_OP_ALLOC, 0x20000000, 2 * MiB); /* 2 */
    pop.tid = 1;                                        /* the same time, after event 2 */
    CHECK(trace_writer_marker(w, &pop) == 0);
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(q("SELECT count(*) FROM steps"), 1);
    CHECK_EQ_U64(q("SELECT end_event_id FROM steps WHERE step = 5"), 2);
}

/* A step_end closes a step a push opened; the pop that follows on that thread must not close
 * the next step, which may have taken over the same place in the tracker. */
static void test_step_end_then_pop(void) {
    begin();
    marker(TRACE_MARK_RANGE_PUSH, "step 1", 1);
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 2 * MiB); /* 1 */
    now_ns += 1000;
    trace_marker end = {.ts_ns = now_ns, .tid = 1, .kind = TRACE_MARK_STEP_END, .value = 1};
    CHECK(trace_writer_marker(w, &end) == 0);
    marker(TRACE_MARK_RANGE_PUSH, "step 2", 2);
    cupti_segment(TRACE_OP_ALLOC, 0x20000000, 2 * MiB); /* 2 */
    marker(TRACE_MARK_RANGE_POP, NULL, 1);              /* step 1's push: nothing to end */
    cupti_segment(TRACE_OP_ALLOC, 0x30000000, 2 * MiB); /* 3 */
    marker(TRACE_MARK_RANGE_POP, NULL, 2);              /* step 2 ends here, at 3 */
    cupti_segment(TRACE_OP_ALLOC, 0x40000000, 2 * MiB); /* 4 */
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(q("SELECT count(*) FROM steps"), 2);
    CHECK_EQ_U64(q("SELECT end_event_id FROM steps WHERE step = 1"), 1);
    CHECK_EQ_U64(q("SELECT begin_event_id FROM steps WHERE step = 2"), 1);
    CHECK_EQ_U64(q("SELECT end_event_id FROM steps WHERE step = 2"), 3);
}

/* The heatmap rows the replay keeps: one 4 MiB segment (the whole squeezed
 * address space: 400 rows of 4 MiB / 400), a 1 MiB block at its start. */
static void test_heatmap_rows(void) {
    begin();
    uint64_t seg = 0x7f0000000000ULL;
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, seg, 4 * MiB, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, seg, 1 * MiB, 0, 0);
    replay_it(db_path, DB_READ_WRITE);
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT fractions FROM heatmap_rows ORDER BY bucket DESC LIMIT 1",
                             -1, &st, NULL) == SQLITE_OK);
    if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 400 * 4) {
        float f[400];
        memcpy(f, sqlite3_column_blob(st, 0), sizeof f);
        int ok = 1;
        for (int r = 0; r < 400; r++)
            ok &= r < 100 ? f[r] > 0.999f : f[r] < 0.001f && f[r] > -0.5f;
        CHECK(ok);
    } else {
        CHECK(!"no heatmap row of 400 floats");
    }
    sqlite3_finalize(st);
}

/* A synthetic training run: totals match the simulation's own model. */
static void test_synthetic_run(void) {
    char err[256];
    w = trace_writer_open(trace_path, NULL, err, sizeof err);
    sim_config cfg = sim_config_default();
    cfg.steps = 12;
    cfg.leak_bytes = 1000000;
    cfg.fragment = 1;
    sim_result res;
    CHECK(sim_run(&cfg, w, &res, err, sizeof err) == 0);
    replay_it(db_path, DB_READ_WRITE);
    CHECK_EQ_U64(q("SELECT count(*) FROM warnings"), 0);
    CHECK_EQ_U64(q("SELECT max(event_id) FROM event_rows"), res.events);
    CHECK_EQ_U64(q("SELECT count(*) FROM steps"), 12);
    CHECK_EQ_U64(q("SELECT min(step) FROM steps"), 0);
    CHECK_EQ_U64(q("SELECT max(step) FROM steps"), 11);
    /* the leak: 12 blocks of 1,000,000 requested bytes never freed */
    CHECK_EQ_U64(q("SELECT count(*) FROM allocations WHERE requested_size = 1000000 "
                   "AND free_ts_ns IS NULL"),
                 12);
    /* every block alloc's size is at least its rounded request */
    CHECK_EQ_U64(q("SELECT count(*) FROM events WHERE op = 'alloc' AND level = 'block' "
                   "AND size < ((requested_size + 511) / 512) * 512"),
                 0);
    /* requested at the end = what the simulation keeps live (see test_synth.c) */
    uint64_t h = cfg.hidden, per_layer = (3 + 1 + 4 + 4) * h * h * 2 + 2 * h * 2;
    CHECK_EQ_U64(q("SELECT requested_bytes FROM timeline ORDER BY event_id DESC LIMIT 1"),
                 cfg.layers * per_layer * 6 + 12 * cfg.leak_bytes);
    /* fragmentation stays within [0, 1) and reserved never below allocated */
    CHECK_EQ_U64(q("SELECT count(*) FROM timeline WHERE reserved_bytes < allocated_bytes"), 0);
    CHECK(q("SELECT count(*) FROM timeline_buckets") > 100);
    /* time:X through the buckets (no index on ts_ns) = the last event at or before X */
    long long span = q("SELECT max(ts_ns) FROM event_rows");
    for (int i = 0; i <= 40; i++) {
        long long t = span * i / 40 + (i % 3) * 777;
        char spec[64], sql[200], werr[200];
        snprintf(spec, sizeof spec, "time:%lldns", t);
        snprintf(sql, sizeof sql,
                 "SELECT coalesce(max(event_id), 0) FROM event_rows WHERE event_id > 0 AND "
                 "ts_ns <= %lld",
                 t);
        int64_t got = -1;
        if (t > span) { /* past the last event: out of range, as event: past it is */
            CHECK(when_resolve(db, spec, 0, &got, werr, sizeof werr) == -1);
            CHECK(strstr(werr, "the trace spans time:0 .. ") != NULL);
            continue;
        }
        CHECK(when_resolve(db, spec, 0, &got, werr, sizeof werr) == 0);
        CHECK_EQ_U64(got, q(sql));
    }
    CHECK_EQ_U64(q("SELECT sum(events) FROM timeline_buckets"), q("SELECT count(*) FROM timeline"));
}

int main(void) {
    if (tmpdir_make("replay") != 0)
        return 1;
    test_segments_only();
    test_heatmap_rows();
    test_cupti_torch_join();
    test_seed();
    test_kinds_and_vmm();
    test_anomalies();
    test_steps();
    test_undefined_strings();
    test_step_pieces();
    test_step_end_then_pop();
    test_step_pieces_tie();
    test_synthetic_run();
    return tmpdir_finish("test_replay");
}
