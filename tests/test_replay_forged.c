/* test_replay_forged.c — the replay of traces nobody honest would write: ids and sizes at the
 * edges of their fields, forged byte by byte where the writer would not make them.
 *
 *  - memory follows the input, not the largest id in it: a trace of a few dozen bytes naming
 *    frame 2^26 (or frame, module, string and stack ids near 2^32) replays in a child process
 *    whose peak resident set stays far below what an array indexed by those ids would take;
 *  - one record out of range does not reject the input: a segment or a block of 2^63 bytes
 *    (and sizes, addresses and totals past what memory can have) is left out with a
 *    event_out_of_range warning, the other events are analyzed and the replay succeeds;
 *    numbers at the limits of their fields in every other kind of record (times, handles,
 *    counters, step numbers, counted calls) replay too, with no signed overflow (this test
 *    also runs in the ASan/UBSan build). */
#include "check.h"
#include "trace_build.h"

#include "event_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <zstd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#endif

#define TOP_BIT (1ULL << 63)

/* ---- traces forged byte by byte ------------------------------------------------------------ */

typedef struct raw {
    uint8_t b[4096];
    size_t n;
} raw;

static void put_u8(raw *r, uint8_t v) {
    if (r->n < sizeof r->b)
        r->b[r->n++] = v;
}

static void put_var(raw *r, uint64_t v) {
    do {
        put_u8(r, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
        v >>= 7;
    } while (v);
}

/* A FRAME record: a native frame at `ip` of `module`. */
static void put_frame(raw *r, uint64_t frame_id, uint64_t module, uint64_t ip) {
    put_u8(r, 0x06);
    put_var(r, frame_id);
    put_u8(r, 0); /* native */
    put_var(r, module);
    put_var(r, ip);
    put_var(r, 0); /* function */
    put_var(r, 0); /* file */
    put_var(r, 0); /* line */
}

static void put_bytes(raw *r, const char *text) {
    size_t len = strlen(text);
    put_var(r, len);
    for (size_t i = 0; i < len; i++)
        put_u8(r, (uint8_t)text[i]);
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* The time column of the trace being forged (a ts per timestamped record, in order), and the
 * delta state of its frame. */
static raw column;
static uint64_t forged_ts, forged_addr;

static void forge_begin(raw *r) {
    memset(r, 0, sizeof *r);
    memset(&column, 0, sizeof column);
    forged_ts = forged_addr = 0;
}

static void put_ts(uint64_t ts) {
    put_var(&column, zigzag((int64_t)(ts - forged_ts)));
    forged_ts = ts;
}

/* A memory event of device 0, thread 7, stream 0, device memory, from `source`, 1 us after
 * the record before; requested = size. */
static void put_event(raw *r, trace_op op, trace_level level, trace_source source, uint64_t addr,
                      uint64_t size, uint32_t stack) {
    put_u8(r, (uint8_t)(0x80 | 0x40 | (level == TRACE_LEVEL_BLOCK ? 0x10 : 0) | op));
    put_var(r, 0); /* device */
    put_var(r, 7); /* tid */
    put_var(r, 0); /* stream */
    put_var(r, 0); /* pool */
    put_u8(r, TRACE_KIND_DEVICE);
    put_u8(r, (uint8_t)source);
    put_ts(forged_ts + 1000);
    put_var(r, zigzag((int64_t)(addr - forged_addr)));
    forged_addr = addr;
    put_var(r, size);
    put_var(r, stack);
}

static void put_marker(raw *r, trace_marker_kind kind, uint32_t tid, uint64_t range_id,
                       uint32_t name_id) {
    put_u8(r, 0x09);
    put_u8(r, (uint8_t)kind);
    put_ts(forged_ts + 1000);
    put_var(r, tid);
    put_var(r, range_id);
    put_var(r, 0); /* value */
    put_var(r, 0); /* domain */
    put_var(r, name_id);
}

/* A one-frame trace at trace_path: the header, chunk 0 (no events before it) with the time
 * column, then `records`. */
static void forge(const raw *records) {
    raw c = {0};
    memcpy(c.b, "GPUMEMTR", 8);
    c.n = 8;
    put_var(&c, TRACE_FORMAT_VERSION);
    put_var(&c, 0); /* flags */
    put_u8(&c, 0x01);
    put_var(&c, 0); /* sequence */
    put_var(&c, 0); /* events before */
    put_var(&c, column.n);
    CHECK(c.n + column.n + records->n <= sizeof c.b);
    memcpy(c.b + c.n, column.b, column.n);
    c.n += column.n;
    memcpy(c.b + c.n, records->b, records->n);
    c.n += records->n;
    uint8_t z[8192];
    size_t n = ZSTD_compress(z, sizeof z, c.b, c.n, 1);
    CHECK(!ZSTD_isError(n));
    FILE *f = fopen(trace_path, "wb");
    CHECK(f && fwrite(z, 1, n, f) == n);
    if (f)
        fclose(f);
}

/* Replays trace_path into db_path in a child process (with an address-space limit, outside
 * the sanitizers, so a replay that would take gigabytes fails fast instead) and opens the
 * database as `db`. The child's peak resident set in KiB, or -1 when the replay failed. */
static long replay_in_child(void) {
    fflush(NULL);
    unlink(db_path);
    pid_t pid = fork();
    if (pid == 0) {
#ifndef UNDER_ASAN
        struct rlimit limit = {2048ULL << 20, 2048ULL << 20};
        setrlimit(RLIMIT_AS, &limit);
#endif
        char err[512];
        db_writer *dw = db_writer_open(db_path, DB_EVENTS_STORE, err, sizeof err);
        int rc = dw ? replay_trace(trace_path, dw, NULL, NULL, err, sizeof err) : -1;
        if (dw && rc == 0)
            rc = db_writer_finish(dw, err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "replay in the child: %s\n", err);
        _exit(rc == 0 ? 0 : 3);
    }
    CHECK(pid > 0);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    CHECK(wait4(pid, &status, 0, &ru) == pid);
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    CHECK(ok);
    if (db)
        sqlite3_close(db);
    db = NULL;
    if (!ok)
        return -1;
    CHECK(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    return ru.ru_maxrss;
}

/* What a replay of a tiny trace may take: the program, SQLite's cache, the replay's fixed
 * buffers. An array indexed by the ids below would take gigabytes. */
#define PEAK_LIMIT_KB (200L * 1024)

/* 38 bytes that name frame 2^26: a table of frames by id took 2.1 GB for 2^24. */
static void test_frame_id_2_26(void) {
    raw r;
    forge_begin(&r);
    put_frame(&r, 1ULL << 26, 0, 0x401000);
    forge(&r);
    long peak = replay_in_child();
    fprintf(stderr, "frame 2^26: peak %ld KiB\n", peak);
    CHECK(peak > 0 && peak < PEAK_LIMIT_KB);
    if (peak > 0)
        CHECK_EQ_U64(q("SELECT ip FROM frames WHERE frame_id = 67108864"), 0x401000);
}

/* One string of id 2^32 - 1 costs what one of id 1 does: a table of the index's pages by
 * number took 24 MiB for it. */
static void test_string_id_top(void) {
    long peak[2];
    for (int top = 0; top < 2; top++) {
        raw r;
        forge_begin(&r);
        put_u8(&r, 0x05);
        put_var(&r, top ? UINT32_MAX : 1);
        put_bytes(&r, "step 1");
        put_marker(&r, TRACE_MARK_MARK, 7, 0, top ? UINT32_MAX : 1);
        forge(&r);
        peak[top] = replay_in_child();
        CHECK(peak[top] > 0);
        if (peak[top] > 0)
            CHECK_EQ_U64(q("SELECT count(*) FROM markers WHERE name = 'step 1'"), 1);
    }
    fprintf(stderr, "string 1: peak %ld KiB, string 2^32 - 1: %ld KiB\n", peak[0], peak[1]);
    CHECK(peak[1] - peak[0] < 8 * 1024);
}

/* Every kind of id at the top of its range: a string, a frame with its symbol, a module, stack
 * nodes, a thread, a marker's range, an event's stack. */
static void test_ids_at_the_top(void) {
    const uint32_t top = UINT32_MAX;
    raw r;
    forge_begin(&r);
    put_u8(&r, 0x05); /* string */
    put_var(&r, top);
    put_bytes(&r, "step 1");
    put_u8(&r, 0x05);
    put_var(&r, top - 1);
    put_bytes(&r, "train");
    put_u8(&r, 0x04); /* module */
    put_var(&r, top);
    put_var(&r, 0x400000);
    put_var(&r, 0x10000);
    put_bytes(&r, "/usr/bin/app");
    put_bytes(&r, "");
    put_frame(&r, top, top, 0x401000);
    put_frame(&r, top - 1, top, 0x402000);
    put_u8(&r, 0x07); /* symbol of frame top: one entry */
    put_var(&r, top);
    put_var(&r, 1);
    put_var(&r, top - 1);
    put_var(&r, 0);
    put_var(&r, 12);
    put_u8(&r, 0x08); /* stack top - 1: frame top - 1 */
    put_var(&r, top - 1);
    put_var(&r, 0);
    put_var(&r, top - 1);
    put_u8(&r, 0x08); /* stack top: frame top, called from top - 1 */
    put_var(&r, top);
    put_var(&r, top - 1);
    put_var(&r, top);
    put_u8(&r, 0x0B); /* thread */
    put_var(&r, top);
    put_var(&r, top - 1);
    put_marker(&r, TRACE_MARK_RANGE_START, top, UINT64_MAX, top);
    put_event(&r, TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 0x7f0000000000, 2 * MiB,
              top);
    put_marker(&r, TRACE_MARK_RANGE_END, top, UINT64_MAX, 0);
    forge(&r);
    long peak = replay_in_child();
    fprintf(stderr, "ids at 2^32 - 1: peak %ld KiB\n", peak);
    CHECK(peak > 0 && peak < PEAK_LIMIT_KB);
    if (peak <= 0)
        return;
    CHECK_EQ_U64(q("SELECT count(*) FROM frames WHERE frame_id >= 4294967294"), 2);
    CHECK_EQ_U64(q("SELECT count(*) FROM frames WHERE frame_id = 4294967295 AND name = 'train' "
                   "AND line = 12 AND module = '/usr/bin/app'"),
                 1);
    CHECK_EQ_U64(q("SELECT count(*) FROM stack_frames WHERE stack_id = 4294967295"), 2);
    CHECK_EQ_U64(q("SELECT count(*) FROM steps WHERE step = 1"), 1);
    CHECK_EQ_U64(q("SELECT stack_id FROM event_rows WHERE event_id = 1"), 4294967295);
    CHECK_EQ_U64(q("SELECT reserved_bytes FROM timeline WHERE event_id = 1"), 2 * MiB);
}

/* The allocated bytes after event n. */
static int64_t alloc_after(int n) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT allocated_bytes FROM timeline WHERE event_id = %d", n);
    return q(sql);
}

/* The rows of warnings of one code. */
static int64_t warnings_of(const char *code) {
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM warnings WHERE code = '%s'", code);
    return q(sql);
}

/* A segment of 2^63 bytes between ordinary ones: its row and a warning; the others are
 * analyzed. It took every command down with "insert: constraint failed". */
static void test_huge_segment(void) {
    begin();
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 4 * MiB);
    cupti_segment(TRACE_OP_ALLOC, 0x20000000, TOP_BIT);
    cupti_segment(TRACE_OP_ALLOC, 0x30000000, 6 * MiB);
    cupti_segment(TRACE_OP_FREE, 0x10000000, 0);
    cupti_segment(TRACE_OP_FREE, 0x20000000, 0); /* of nothing live */
    replay_it(db_path, DB_READ_ONLY);
    CHECK_EQ_U64(q("SELECT count(*) FROM event_rows WHERE event_id > 0"), 4); /* no row */
    CHECK_EQ_U64(warnings_of("event_out_of_range"), 1);
    CHECK_EQ_U64(
        q("SELECT count(*) FROM warnings WHERE code = 'event_out_of_range' AND message "
          "LIKE 'segment alloc at 0x20000000 of 9223372036854775808 bytes%after event 1:%'"),
        1);
    CHECK_EQ_U64(warnings_of("free_unknown"), 1);
    CHECK_EQ_U64(q("SELECT reserved_bytes FROM timeline WHERE event_id = 2"), 10 * MiB);
    CHECK_EQ_U64(q("SELECT reserved_bytes FROM timeline WHERE event_id = 4"), 6 * MiB);
    CHECK_EQ_U64(q("SELECT peak_reserved_bytes FROM devices"), 10 * MiB);
    CHECK_EQ_U64(q("SELECT count(*) FROM segments"), 2);
    CHECK_EQ_U64(q("SELECT count(*) FROM allocations"), 2);
    CHECK_EQ_U64(q("SELECT count(*) FROM segments WHERE size < 0 OR size IS NULL"), 0);
    CHECK_EQ_U64(q("SELECT value FROM meta WHERE key = 'recorded_events'"), 4);
}

/* Events left out of the seed (one by its size, which the first pass sees too, one by the
 * totals, which only the second does) and a second seed end: the seed rows still end at
 * event_id 0, every id once, and the recording's events follow from 1. */
static void test_seed_left_out(void) {
    begin();
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 1ULL << 60);
    cupti_segment(TRACE_OP_ALLOC, 0x20000000, TOP_BIT);
    cupti_segment(TRACE_OP_ALLOC, 0x30000000, 2 * MiB);
    trace_marker end = {.ts_ns = now_ns, .kind = TRACE_MARK_SEED_END};
    CHECK(trace_writer_marker(w, &end) == 0);
    cupti_segment(TRACE_OP_FREE, 0x10000000, 0);
    CHECK(trace_writer_marker(w, &end) == 0); /* not a seed end any more */
    cupti_segment(TRACE_OP_ALLOC, 0x30000000, 2 * MiB);
    replay_it(db_path, DB_READ_ONLY);
    CHECK_EQ_U64(warnings_of("event_out_of_range"), 2);
    CHECK_EQ_U64(q("SELECT max(event_id) FROM event_rows WHERE op = 12"), 0);
    CHECK_EQ_U64(q("SELECT count(*) FROM event_rows WHERE event_id <= 0"), 2);
    CHECK_EQ_U64(q("SELECT count(*) FROM event_rows WHERE event_id > 0"), 2);
    CHECK_EQ_U64(q("SELECT reserved_bytes FROM timeline WHERE event_id = 0"), 1ULL << 60);
    CHECK_EQ_U64(q("SELECT reserved_bytes FROM timeline WHERE event_id = 2"), 2 * MiB);
    CHECK_EQ_U64(q("SELECT count(*) FROM segments"), 2);
}

/* A block of 2^63 bytes (and one whose request is) in an ordinary segment, between ordinary
 * blocks. */
static void test_huge_block(void) {
    uint64_t seg = 0x7f0000000000ULL;
    begin();
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, seg, 20 * MiB, 0, 1);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, seg, 2 * MiB, 2 * MiB, 1);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, seg + 2 * MiB, TOP_BIT, TOP_BIT, 2);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, seg + 4 * MiB, 512, UINT64_MAX, 2);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, seg + 6 * MiB, 4 * MiB, 4 * MiB, 3);
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, seg, 0, 0, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, seg + 2 * MiB, TOP_BIT, TOP_BIT, 0);
    replay_it(db_path, DB_READ_ONLY);
    CHECK_EQ_U64(warnings_of("event_out_of_range"), 2);
    CHECK_EQ_U64(warnings_of("free_unknown"), 1);
    CHECK_EQ_U64(q("SELECT count(*) FROM event_rows WHERE event_id > 0"), 5);
    CHECK_EQ_U64(alloc_after(3), 6 * MiB);
    CHECK_EQ_U64(alloc_after(5), 4 * MiB);
    CHECK_EQ_U64(q("SELECT count(*) FROM allocations"), 2);
    CHECK_EQ_U64(q("SELECT end_bytes FROM site_stats WHERE stack_id = 3"), 4 * MiB);
    CHECK_EQ_U64(q("SELECT count(*) FROM site_stats WHERE stack_id = 2"), 0);
    CHECK_EQ_U64(q("SELECT count(*) FROM largest_allocations"), 2);
    CHECK_EQ_U64(q("SELECT count(*) FROM event_rows WHERE size < 0 OR requested_size < 0"), 0);
}

/* Sizes, addresses, handles, times and counts at the limits of their fields, each kind of
 * record: the replay succeeds, what can be memory is, the rest is a warning (and no signed
 * overflow anywhere: the sanitizer build runs this too). */
static void test_numbers_at_the_limits(void) {
    const uint64_t max = 1ULL << 60; /* the largest size an event may give */
    char err[256];
    begin();
    trace_process p = {.pid = UINT32_MAX,
                       .rank = INT32_MAX,
                       .wall_anchor_ns = UINT64_MAX,
                       .clock_anchor_ns = 1,
                       .host = {"h", 1}};
    CHECK(trace_writer_process(w, &p) == 0);
    trace_device dv = {.device = 0, .total_bytes = UINT64_MAX, .name = {"gpu", 3}};
    CHECK(trace_writer_device(w, &dv) == 0);
    /* a segment of the largest size, and one more that would take reserved past it */
    cupti_segment(TRACE_OP_ALLOC, 0x1000000000000ULL, max);
    cupti_segment(TRACE_OP_ALLOC, 0x2000000000000000ULL, 2 * MiB);
    /* a segment whose end is the last address, and one a byte longer */
    cupti_segment(TRACE_OP_FREE, 0x1000000000000ULL, 0);
    cupti_segment(TRACE_OP_ALLOC, UINT64_MAX - 2 * MiB, 2 * MiB);
    cupti_segment(TRACE_OP_ALLOC, UINT64_MAX - 4 * MiB + 1, 4 * MiB);
    /* blocks of PyTorch's inside it at the top */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x7f0000000000ULL, 20 * MiB, 0, 9);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, 0x7f0000000000ULL, 20 * MiB, 20 * MiB,
       9);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, 0x7f0000000000ULL, 512, max, 9);
    /* blocks outside every segment: counted on their own, up to the bound */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x100, max / 4, 0, 10);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, max, max / 4, 0, 10);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 3 * max, max / 2, 0, 10);
    /* VMM: handles are any number; physical memory up to the bound */
    ev(TRACE_OP_PHYS_CREATE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, UINT64_MAX, max / 2, 0, 0);
    ev(TRACE_OP_PHYS_CREATE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 1, max, 0, 0);
    ev(TRACE_OP_VA_RESERVE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, UINT64_MAX - 4095, 4096, 0, 0);
    ev(TRACE_OP_VA_RESERVE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 1ULL << 62, max, 0, 0);
    ev(TRACE_OP_MAP, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 1ULL << 62, max, 0, 0);
    ev(TRACE_OP_UNMAP, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 1ULL << 62, UINT64_MAX, 0, 0);
    ev(TRACE_OP_UNMAP, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 1ULL << 62, max, 0, 0);
    ev(TRACE_OP_PHYS_RELEASE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, UINT64_MAX, UINT64_MAX, 0,
       0);
    /* a request no allocator could serve (cudaMalloc(SIZE_MAX)): its row, no warning */
    ev(TRACE_OP_ALLOC_FAILED, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 0, UINT64_MAX, 0, 0);
    ev(TRACE_OP_OOM, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, 0, UINT64_MAX, 0, 0);
    ev(TRACE_OP_POOL_TRIM, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 0, UINT64_MAX, 0, 0);
    /* frees whose sizes are anything: their allocs' bytes count */
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x100, UINT64_MAX, UINT64_MAX, 0);
    ev(TRACE_OP_FREE_REQUESTED, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, 0x7f0000000000ULL,
       UINT64_MAX, 1, 0);
    /* counters, markers and steps with values at the ends of their fields */
    uint32_t step = trace_writer_string(w, "step 99999999999999999999999", 28);
    uint32_t step2 = trace_writer_string(w, "step 9223372036854775807", 24);
    trace_counter c = {.ts_ns = now_ns, .kind = TRACE_COUNTER_DRIVER_FREE, .value = UINT64_MAX};
    CHECK(trace_writer_counter(w, &c) == 0);
    c = (trace_counter){.ts_ns = UINT64_MAX,
                        .kind = TRACE_COUNTER_POOL_USED,
                        .key = UINT64_MAX,
                        .value = UINT64_MAX};
    CHECK(trace_writer_counter(w, &c) == 0);
    const trace_marker marks[] = {
        {.ts_ns = now_ns + 1, .kind = TRACE_MARK_RANGE_PUSH, .tid = 7, .name_id = step},
        {.ts_ns = now_ns + 2, .kind = TRACE_MARK_RANGE_POP, .tid = 7},
        {.ts_ns = now_ns + 3, .kind = TRACE_MARK_MARK, .name_id = step2},
        {.ts_ns = UINT64_MAX, .kind = TRACE_MARK_STEP_BEGIN, .value = INT64_MAX},
        {.ts_ns = 0, .kind = TRACE_MARK_STEP_END, .value = INT64_MAX},
        {.ts_ns = now_ns + 4, .kind = TRACE_MARK_STEP_BEGIN, .value = INT64_MIN},
        {.ts_ns = TOP_BIT, .kind = TRACE_MARK_STEP_END, .value = INT64_MIN},
        {.ts_ns = now_ns + 5, .kind = TRACE_MARK_RANGE_START, .range_id = UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        CHECK(trace_writer_marker(w, &marks[i]) == 0);
    /* events at the ends of time */
    trace_event late = {.ts_ns = UINT64_MAX,
                        .addr = 0x5000000000ULL,
                        .size = 2 * MiB,
                        .requested = 2 * MiB,
                        .op = TRACE_OP_ALLOC,
                        .level = TRACE_LEVEL_SEGMENT,
                        .tid = UINT32_MAX,
                        .stream = UINT64_MAX,
                        .pool = UINT64_MAX};
    CHECK(trace_writer_event(w, &late) == 0);
    late.ts_ns = TOP_BIT;
    late.addr += 4 * MiB;
    CHECK(trace_writer_event(w, &late) == 0);
    late.ts_ns = 0;
    late.addr += 4 * MiB;
    CHECK(trace_writer_event(w, &late) == 0);
    trace_call_count calls[] = {{.call_id = UINT32_MAX,
                                 .name = {"cuMemImportFromShareableHandle", 30},
                                 .calls = UINT64_MAX,
                                 .bytes = UINT64_MAX}};
    trace_end end = {.ts_ns = UINT64_MAX,
                     .events = UINT64_MAX,
                     .dropped = UINT64_MAX,
                     .flags = TRACE_END_CLEAN,
                     .n_calls = 1,
                     .calls = calls};
    CHECK(trace_writer_close(w, &end, err, sizeof err) == 0);
    CHECK(replay_in_child() > 0);
    if (!db)
        return;
    /* refused: the second segment (reserved), the one a byte too long (range), the PyTorch
     * block asking for 2^60 on top of 22 MiB (requested), the third orphan (allocated), the
     * second physical allocation (reserved), the reservation at the top (range), the map
     * (reserved) and the unmap of UINT64_MAX bytes (size) */
    CHECK_EQ_U64(warnings_of("event_out_of_range"), 8);
    CHECK_EQ_U64(q("SELECT count(*) FROM event_rows WHERE event_id > 0"), 27 - 8);
    CHECK_EQ_U64(q("SELECT max(reserved_bytes) FROM event_rows"), max);
    CHECK_EQ_U64(q("SELECT max(allocated_bytes) FROM event_rows"), max);
    CHECK_EQ_U64(q("SELECT max(requested_bytes) FROM event_rows"), max);
    CHECK_EQ_U64(q("SELECT count(*) FROM event_rows WHERE allocated_bytes < 0 OR "
                   "reserved_bytes < 0 OR requested_bytes < 0 OR size < 0"),
                 0);
    CHECK_EQ_U64(q("SELECT count(*) FROM segments WHERE addr = -2097153 AND size = 2097152"), 1);
    CHECK_EQ_U64(q("SELECT count(*) FROM event_rows WHERE op = 6 AND size IS NULL"), 1);
    CHECK_EQ_U64(q("SELECT count(*) FROM unrecorded_calls"), 1);
}

/* A number of the kind forged records carry: the edges of 32 and 64 bits, signed and not, the
 * bound and its neighbours, and ordinary ones. */
static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t edgy(void) {
    static const uint64_t edges[] = {0,
                                     1,
                                     512,
                                     2 * MiB,
                                     20 * MiB,
                                     (1ULL << 60) - 1,
                                     1ULL << 60,
                                     (1ULL << 60) + 1,
                                     (1ULL << 62),
                                     INT64_MAX,
                                     TOP_BIT,
                                     TOP_BIT + 1,
                                     UINT64_MAX - 2 * MiB,
                                     UINT64_MAX - 1,
                                     UINT64_MAX,
                                     UINT32_MAX,
                                     0x7f0000000000ULL};
    uint64_t r = check_random(&rng);
    if (r % 4 == 0) /* an ordinary address or size near the others */
        return 0x7f0000000000ULL + (check_random(&rng) % 64) * 2 * MiB;
    return edges[r % (sizeof edges / sizeof edges[0])] + (r % 3 == 0 ? check_random(&rng) % 3 : 0);
}

/* Traces of events and markers made of such numbers, in any order, each replayed: the replay
 * succeeds (no signed overflow in the sanitizer build), and no total is ever negative. */
static void test_random_extremes(void) {
    for (int t = 0; t < 20; t++) {
        begin();
        uint32_t names[2] = {trace_writer_string(w, "step 7", 6),
                             trace_writer_string(w, "step 99999999999999999999", 25)};
        for (int i = 0; i < 150; i++) {
            uint64_t r = check_random(&rng);
            if (r % 8 == 0) {
                trace_marker m = {.ts_ns = edgy(),
                                  .kind = (uint8_t)(r / 8 % TRACE_MARK_COUNT),
                                  .tid = (uint32_t)edgy(),
                                  .range_id = edgy(),
                                  .value = (int64_t)edgy(),
                                  .name_id = names[r / 64 % 2]};
                CHECK(trace_writer_marker(w, &m) == 0);
                continue;
            }
            if (r % 8 == 1) {
                trace_counter c = {.ts_ns = edgy(),
                                   .kind = (uint8_t)(r / 8 % TRACE_COUNTER_COUNT),
                                   .key = edgy(),
                                   .value = edgy()};
                CHECK(trace_writer_counter(w, &c) == 0);
                continue;
            }
            trace_event e = {
                .ts_ns = r % 5 ? now_ns += 1000 : edgy(),
                .addr = edgy(),
                .size = edgy(),
                .requested = r % 3 ? edgy() : 0,
                .stream = edgy(),
                .pool = r % 7 ? 0 : edgy(),
                .stack_id = (uint32_t)(r >> 40) % 4,
                .tid = 7,
                .device = (uint32_t)(r >> 20) % 2,
                .op = (uint8_t)((r >> 8) % TRACE_OP_COUNT),
                .level = (uint8_t)((r >> 12) % 2),
                .kind = (uint8_t)((r >> 16) % 8 == 0 ? TRACE_KIND_MANAGED : TRACE_KIND_DEVICE),
                .source = (uint8_t)((r >> 24) % TRACE_SOURCE_COUNT)};
            if (!e.requested)
                e.requested = e.size;
            CHECK(trace_writer_event(w, &e) == 0);
        }
        replay_it(db_path, DB_READ_ONLY);
        CHECK_EQ_U64(q("SELECT count(*) FROM event_rows WHERE allocated_bytes < 0 OR "
                       "reserved_bytes < 0 OR requested_bytes < 0 OR size < 0 OR "
                       "requested_size < 0"),
                     0);
        CHECK_EQ_U64(q("SELECT count(*) FROM site_stats WHERE peak_bytes < 0 OR end_bytes < 0 "
                       "OR never_freed_bytes < 0"),
                     0);
    }
}

int main(void) {
    if (tmpdir_make("forged") != 0 || event_store_register() != SQLITE_OK)
        return 1;
    test_frame_id_2_26();
    test_string_id_top();
    test_ids_at_the_top();
    test_huge_segment();
    test_seed_left_out();
    test_huge_block();
    test_numbers_at_the_limits();
    test_random_extremes();
    return tmpdir_finish("test_replay_forged");
}
