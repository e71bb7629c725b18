/* test_rec_cupti_fixture.c — the raw CUPTI callback log (MEMREC_CALLBACK_LOG)
 * and its replay through rec_cupti_handle, without a GPU.
 *
 * Three parts:
 *  - the log's text for known calls fed through rec_cupti_callback with the
 *    real *_params structs (known answers, line by line);
 *  - a round trip: every handled cbid fed live with the log on, then the
 *    log replayed; both traces must hold the same events, so a layout that
 *    names the wrong member or offset cannot pass;
 *  - every .log file of tests/fixtures/cupti replayed into a trace: event count =
 *    the events its outermost calls must produce, every release meets a
 *    live acquisition of the same address, the analyzer replays it with no
 *    warning; the hand-written fixture also against its exact events.
 *
 * The parser, the per-tid replay and the fake driver that answers from what
 * the log allocated are in cupti_log_replay.h. */
#include "check.h"
#include "cupti_log_replay.h"
#include "db_writer.h"
#include "rec_core.h"
#include "rec_cupti.h"
#include "rec_cupti_calls.h"
#include "rec_cupti_log.h"
#include "rec_readback.h"
#include "replay.h"
#include "trace_format.h"

#include <dirent.h>
#include <sqlite3.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MiB (1024ull * 1024)
#define GiB (1024 * MiB)
#define CBID(name) CUPTI_DRIVER_TRACE_CBID_##name
#define GARBAGE REPLAY_GARBAGE

/* ---- sessions ---------------------------------------------------------------- */

/* Records into rb_dir/FILE, the log replay's fake driver answering. */
static void start_session(const char *file) {
    rec_config c;
    CHECK(rb_session_start(&c, file, 16) == 0);
    replay_driver_install();
}

/* ---- invariants ------------------------------------------------------------- */

static int by_op_addr(const void *a, const void *b) {
    const trace_event *x = a, *y = b;
    if (x->op != y->op)
        return x->op < y->op ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The acquisition a release ends (TRACE_OP_COUNT: not a release). */
static uint8_t acquisition_of(uint8_t op) {
    switch (op) {
    case TRACE_OP_FREE:
        return TRACE_OP_ALLOC;
    case TRACE_OP_UNMAP:
        return TRACE_OP_MAP;
    case TRACE_OP_PHYS_RELEASE:
        return TRACE_OP_PHYS_CREATE;
    case TRACE_OP_VA_FREE:
        return TRACE_OP_VA_RESERVE;
    default:
        return TRACE_OP_COUNT;
    }
}

/* Every release meets a live acquisition of the same address and kind; no
 * acquisition lands on a live one. */
static void check_pairing(const char *name, const event_list *got) {
    event_list live = {0};
    for (size_t i = 0; i < got->n; i++) {
        const trace_event *e = &got->ev[i];
        uint8_t acquired_by = acquisition_of(e->op);
        int is_acquire = e->op == TRACE_OP_ALLOC || e->op == TRACE_OP_MAP ||
                         e->op == TRACE_OP_PHYS_CREATE || e->op == TRACE_OP_VA_RESERVE;
        size_t j = 0;
        uint8_t want = is_acquire ? e->op : acquired_by;
        while (j < live.n && !(live.ev[j].op == want && live.ev[j].addr == e->addr))
            j++;
        if (is_acquire) {
            if (j < live.n)
                fprintf(stderr, "%s: event %zu: %s of live 0x%llx\n", name, i, trace_op_name(e->op),
                        (unsigned long long)e->addr);
            CHECK(j == live.n);
            list_push(&live, e);
        } else if (acquired_by != TRACE_OP_COUNT) {
            if (j == live.n || live.ev[j].kind != e->kind)
                fprintf(stderr, "%s: event %zu: %s of 0x%llx, not live as %s of its kind\n", name,
                        i, trace_op_name(e->op), (unsigned long long)e->addr,
                        trace_op_name(acquired_by));
            CHECK(j < live.n && live.ev[j].kind == e->kind);
            if (j < live.n)
                live.ev[j] = live.ev[--live.n];
        }
    }
    free(live.ev);
}

static int64_t query_i64(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    int64_t v = -999;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

/* The analyzer replays the trace without a warning. */
static void check_analyzer(const char *name, const char *trace) {
    char err[512], db_path[300];
    rb_path(db_path, sizeof db_path, "replay.db");
    unlink(db_path);
    db_writer *dw = db_writer_open(db_path, DB_EVENTS_TABLE, err, sizeof err);
    CHECK(dw != NULL);
    if (!dw)
        return;
    replay_summary sum;
    int rc = replay_trace(trace, dw, NULL, &sum, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "%s: replay: %s\n", name, err);
    CHECK(rc == 0);
    CHECK(db_writer_finish(dw, err, sizeof err) == 0);
    sqlite3 *db;
    CHECK(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    int64_t warnings = query_i64(db, "SELECT count(*) FROM warnings");
    if (warnings != 0)
        fprintf(stderr, "%s: the analyzer warned %lld time(s)\n", name, (long long)warnings);
    CHECK_EQ_U64(warnings, 0);
    sqlite3_close(db);
    unlink(db_path);
}

/* Replays one fixture and checks the invariants; returns its events (the
 * caller frees them) for known-answer checks. */
static event_list check_fixture(const char *log) {
    char trace[300];
    rb_path(trace, sizeof trace, "fixture.zst");
    replay_result rr;
    event_list got = {0};
    start_session("fixture.zst");
    CHECK(replay_log(log, &rr) == 0);
    CHECK(rec_session_stop() == 0);
    CHECK(rr.lines > 0);
    CHECK(rb_read_events(trace, &got) == 0);
    if (got.n != rr.expected.n)
        fprintf(stderr, "%s: %zu events, the log's calls make %zu\n", log, got.n, rr.expected.n);
    CHECK_EQ_U64(got.n, rr.expected.n);
    if (got.n == rr.expected.n) {
        trace_event *sorted = malloc((got.n + 1) * sizeof *sorted);
        memcpy(sorted, got.ev, got.n * sizeof *sorted);
        qsort(sorted, got.n, sizeof *sorted, by_op_addr);
        qsort(rr.expected.ev, got.n, sizeof *sorted, by_op_addr);
        for (size_t i = 0; i < got.n; i++) {
            CHECK_EQ_U64(sorted[i].op, rr.expected.ev[i].op);
            CHECK_EQ_U64(sorted[i].addr, rr.expected.ev[i].addr);
        }
        free(sorted);
    }
    for (size_t i = 0; i < got.n; i++)
        CHECK(got.ev[i].level == TRACE_LEVEL_SEGMENT && got.ev[i].source == TRACE_SOURCE_CUPTI);
    check_pairing(log, &got);
    check_analyzer(log, trace);
    free(rr.expected.ev);
    unlink(trace);
    return got;
}

/* ---- the log's text ------------------------------------------------------------ */

static uint32_t next_correlation = 1;

static void feed(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site, const void *params,
                 CUresult result, uint32_t correlation) {
    uint64_t data = 0;
    CUpti_CallbackData cd = {site, "cuFake", params, &result, NULL, NULL, 1, &data, correlation};
    cd.context = (CUcontext)0x4000;
    rec_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cd);
}

/* Entry, the driver's outputs, the driver observing its own work, exit. */
typedef void (*driver_effect)(void *params, uint64_t out);
static void call(CUpti_CallbackId cbid, void *params, driver_effect effect, uint64_t out,
                 CUresult result) {
    uint32_t corr = next_correlation++;
    feed(cbid, CUPTI_API_ENTER, params, CUDA_SUCCESS, corr);
    if (effect && result == CUDA_SUCCESS)
        effect(params, out);
    rec_cupti_call observed = {cbid, CUPTI_API_EXIT, params, result, NULL, corr};
    fake_driver_observe(&observed);
    feed(cbid, CUPTI_API_EXIT, params, result, corr);
}

static void put_first(void *p, uint64_t out) { **(uint64_t **)p = out; } /* output is member 1 */
static void put_pitch(void *p, uint64_t out) {
    cuMemAllocPitch_v2_params *pp = p;
    *pp->dptr = out;
    *pp->pPitch = 1024;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void test_log_text(void) {
    char log[300], trace[300];
    rb_path(log, sizeof log, "text.log");
    rb_path(trace, sizeof trace, "text.zst");
    unlink(log);
    start_session("text.zst");
    CHECK(rec_cupti_log_open(log) == 0);
    next_correlation = 1;
    CUdeviceptr d = GARBAGE;
    size_t pitch = GARBAGE;
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 1000}, put_first, 0x100000000,
         CUDA_SUCCESS);
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 1ull << 50}, NULL, 0,
         CUDA_ERROR_OUT_OF_MEMORY);
    call(CBID(cuMemAllocPitch_v2), &(cuMemAllocPitch_v2_params){&d, &pitch, 1000, 10, 4}, put_pitch,
         0x100100000, CUDA_SUCCESS);
    CUmemGenericAllocationHandle handle = GARBAGE;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    call(CBID(cuMemCreate), &(cuMemCreate_params){&handle, 2 * MiB, &prop, 0}, put_first, 0xab0,
         CUDA_SUCCESS);
    call(CBID(cuMemMap), &(cuMemMap_params){0x300000000, 2 * MiB, 0, 0xab0, 0}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMemFreeAsync_ptsz), &(cuMemFreeAsync_ptsz_params){0x100000000, NULL}, NULL, 0,
         CUDA_SUCCESS);
    CHECK(rec_cupti_log_open(NULL) == 0);
    /* Not logged: the log is off again. */
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){0x100100000}, NULL, 0, CUDA_SUCCESS);
    CHECK(rec_session_stop() == 0);
    unsigned tid = (unsigned)syscall(SYS_gettid);
    char want[4096];
    snprintf(want, sizeof want,
             "# memrec CUPTI callback log v1 pid=%ld\n"
             "enter cuMemAlloc_v2 cbid=243 tid=%u corr=1 ctx=0x4000 dptr=- bytesize=1000\n"
             "exit cuMemAlloc_v2 cbid=243 tid=%u corr=1 ctx=0x4000 result=0 dptr=0x100000000 "
             "bytesize=1000\n"
             "enter cuMemAlloc_v2 cbid=243 tid=%u corr=2 ctx=0x4000 dptr=- "
             "bytesize=1125899906842624\n"
             "exit cuMemAlloc_v2 cbid=243 tid=%u corr=2 ctx=0x4000 result=2 dptr=- "
             "bytesize=1125899906842624\n"
             "enter cuMemAllocPitch_v2 cbid=244 tid=%u corr=3 ctx=0x4000 dptr=- pPitch=- "
             "WidthInBytes=1000 Height=10 ElementSizeBytes=4\n"
             "exit cuMemAllocPitch_v2 cbid=244 tid=%u corr=3 ctx=0x4000 result=0 "
             "dptr=0x100100000 pPitch=0x400 WidthInBytes=1000 Height=10 ElementSizeBytes=4\n"
             "enter cuMemCreate cbid=549 tid=%u corr=4 ctx=0x4000 handle=- size=2097152 "
             "prop=1,1,0 flags=0x0\n"
             "exit cuMemCreate cbid=549 tid=%u corr=4 ctx=0x4000 result=0 handle=0xab0 "
             "size=2097152 prop=1,1,0 flags=0x0\n"
             "enter cuMemMap cbid=551 tid=%u corr=5 ctx=0x4000 ptr=0x300000000 size=2097152 "
             "offset=0 handle=0xab0 flags=0x0\n"
             "exit cuMemMap cbid=551 tid=%u corr=5 ctx=0x4000 result=0 ptr=0x300000000 "
             "size=2097152 offset=0 handle=0xab0 flags=0x0\n"
             "enter cuMemFreeAsync_ptsz cbid=%u tid=%u corr=6 ctx=0x4000 dptr=0x100000000 "
             "hStream=0x0\n"
             "exit cuMemFreeAsync_ptsz cbid=%u tid=%u corr=6 ctx=0x4000 result=0 "
             "dptr=0x100000000 hStream=0x0\n",
             (long)getpid(), tid, tid, tid, tid, tid, tid, tid, tid, tid, tid,
             (unsigned)CBID(cuMemFreeAsync_ptsz), tid, (unsigned)CBID(cuMemFreeAsync_ptsz), tid);
    CHECK_STR_EQ(slurp(log), want);

    /* A line too long for the buffer, an unhandled cbid: no line. */
    char small[40];
    rec_cupti_call c = {CBID(cuMemFree_v2), CUPTI_API_ENTER, &(cuMemFree_v2_params){1}, 0, NULL, 1};
    CHECK(rec_cupti_log_format(&c, 1, small, sizeof small) == -1);
    c.cbid = CBID(cuMemGetInfo_v2);
    CHECK(rec_cupti_log_format(&c, 1, want, sizeof want) == -1);
    CHECK(rec_cupti_log_open("/nonexistent-dir/x.log") == -1);
    unlink(log);
    unlink(trace);
}

/* ---- round trip: live callbacks and their replayed log agree ----------------- */

static void feed_every_cbid(void) {
    CUdeviceptr d = GARBAGE;
    void *h = (void *)GARBAGE;
    size_t pitch = GARBAGE;
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 1000}, put_first, 0x100000000,
         CUDA_SUCCESS);
    call(CBID(cuMemAllocPitch_v2), &(cuMemAllocPitch_v2_params){&d, &pitch, 1000, 10, 4}, put_pitch,
         0x100100000, CUDA_SUCCESS);
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 80 * GiB}, NULL, 0,
         CUDA_ERROR_OUT_OF_MEMORY);
    call(CBID(cuMemAllocManaged), &(cuMemAllocManaged_params){&d, 4096, CU_MEM_ATTACH_GLOBAL},
         put_first, 0x100200000, CUDA_SUCCESS);
    call(CBID(cuMemHostAlloc), &(cuMemHostAlloc_params){&h, 8192, 0}, put_first, 0x7f0000001000,
         CUDA_SUCCESS);
    call(CBID(cuMemAllocHost_v2), &(cuMemAllocHost_v2_params){&h, 100}, put_first, 0x7f0000100000,
         CUDA_SUCCESS);
    call(CBID(cuMemFreeHost), &(cuMemFreeHost_params){(void *)0x7f0000001000}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){0x100000000}, NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){0}, NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMemAllocAsync), &(cuMemAllocAsync_params){&d, 1 * MiB, (CUstream)0x5000}, put_first,
         0x180000000, CUDA_SUCCESS);
    call(CBID(cuMemAllocAsync_ptsz), &(cuMemAllocAsync_ptsz_params){&d, 2 * MiB, NULL}, put_first,
         0x180100000, CUDA_SUCCESS);
    CUmemoryPool made = (CUmemoryPool)GARBAGE;
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {CU_MEM_LOCATION_TYPE_DEVICE, 1}};
    call(CBID(cuMemPoolCreate), &(cuMemPoolCreate_params){&made, &props}, put_first, 0x9000,
         CUDA_SUCCESS);
    call(CBID(cuMemAllocFromPoolAsync),
         &(cuMemAllocFromPoolAsync_params){&d, 4 * MiB, (CUmemoryPool)0x9000, (CUstream)0x5100},
         put_first, 0x280000000, CUDA_SUCCESS);
    call(CBID(cuMemAllocFromPoolAsync_ptsz),
         &(cuMemAllocFromPoolAsync_ptsz_params){&d, 1 * GiB, (CUmemoryPool)0x9000, NULL}, NULL, 0,
         CUDA_ERROR_OUT_OF_MEMORY);
    call(CBID(cuMemFreeAsync), &(cuMemFreeAsync_params){0x180000000, (CUstream)0x5000}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMemFreeAsync_ptsz), &(cuMemFreeAsync_ptsz_params){0x280000000, NULL}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMemPoolTrimTo), &(cuMemPoolTrimTo_params){(CUmemoryPool)0x9000, 1 * MiB}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMemPoolDestroy), &(cuMemPoolDestroy_params){(CUmemoryPool)0x9000}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMemAddressReserve), &(cuMemAddressReserve_params){&d, 64 * MiB, 0, 0, 0}, put_first,
         0x300000000, CUDA_SUCCESS);
    CUmemGenericAllocationHandle handle = GARBAGE;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    call(CBID(cuMemCreate), &(cuMemCreate_params){&handle, 2 * MiB, &prop, 0}, put_first, 0xab0,
         CUDA_SUCCESS);
    call(CBID(cuMemCreate), &(cuMemCreate_params){&handle, 2 * GiB, &prop, 0}, NULL, 0,
         CUDA_ERROR_OUT_OF_MEMORY);
    call(CBID(cuMemMap), &(cuMemMap_params){0x300000000, 2 * MiB, 0, 0xab0, 0}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMemUnmap), &(cuMemUnmap_params){0x300000000, 2 * MiB}, NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMemRelease), &(cuMemRelease_params){0xab0}, NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMemAddressFree), &(cuMemAddressFree_params){0x300000000, 64 * MiB}, NULL, 0,
         CUDA_SUCCESS);
    CUmemAllocationProp host_prop = prop;
    host_prop.location.type = REC_MEM_LOCATION_HOST;
    call(CBID(cuMemCreate), &(cuMemCreate_params){&handle, 2 * MiB, &host_prop, 0}, put_first,
         0xc00, CUDA_SUCCESS);
    call(CBID(cuMemRelease), &(cuMemRelease_params){0xc00}, NULL, 0, CUDA_SUCCESS);
}

static void test_round_trip(void) {
    char log[300], live_trace[300], replayed_trace[300];
    rb_path(log, sizeof log, "every.log");
    rb_path(live_trace, sizeof live_trace, "live.zst");
    rb_path(replayed_trace, sizeof replayed_trace, "replayed.zst");
    unlink(log);
    start_session("live.zst");
    CHECK(rec_cupti_log_open(log) == 0);
    feed_every_cbid();
    CHECK(rec_cupti_log_open(NULL) == 0);
    CHECK(rec_session_stop() == 0);
    replay_result rr;
    start_session("replayed.zst");
    CHECK(replay_log(log, &rr) == 0);
    CHECK(rec_session_stop() == 0);
    CHECK_EQ_U64(rr.lines, 2 * 27);
    CHECK_EQ_U64(rr.threads, 1);
    event_list live = {0}, replayed = {0};
    CHECK(rb_read_events(live_trace, &live) == 0);
    CHECK(rb_read_events(replayed_trace, &replayed) == 0);
    CHECK_EQ_U64(live.n, 24);
    CHECK_EQ_U64(replayed.n, live.n);
    CHECK_EQ_U64(rr.expected.n, live.n);
    for (size_t i = 0; i < live.n && i < replayed.n; i++) {
        char a[256], b[256];
        rb_describe(a, sizeof a, &live.ev[i]);
        rb_describe(b, sizeof b, &replayed.ev[i]);
        CHECK_STR_EQ(b, a);
    }
    check_pairing("round trip", &replayed);
    free(live.ev);
    free(replayed.ev);
    free(rr.expected.ev);
    unlink(log);
    unlink(live_trace);
    unlink(replayed_trace);
}

/* ---- the fixtures ------------------------------------------------------------- */

/* handwritten_malloc_free.log, event by event (trace order: allocations are
 * stamped at their exit, releases at their entry). */
static const trace_event handwritten_events[] = {
    {.op = TRACE_OP_ALLOC, .kind = TRACE_KIND_DEVICE, .addr = 0x7f2a40000000, .size = 1 * MiB},
    {.op = TRACE_OP_ALLOC_FAILED, .kind = TRACE_KIND_DEVICE, .addr = 0, .size = 1ull << 50},
    {.op = TRACE_OP_ALLOC, .kind = TRACE_KIND_PINNED_HOST, .addr = 0x7f2a60000000, .size = 4096},
    /* the second thread's allocation ends inside the async one: it comes first */
    {.op = TRACE_OP_ALLOC, .kind = TRACE_KIND_DEVICE, .addr = 0x7f2a40600000, .size = 512},
    {.op = TRACE_OP_ALLOC,
     .kind = TRACE_KIND_DEVICE,
     .addr = 0x7f2a40200000,
     .size = 2 * MiB,
     .stream = 0x5555a1b0,
     .pool = 0x7000},
    {.op = TRACE_OP_FREE,
     .kind = TRACE_KIND_DEVICE,
     .addr = 0x7f2a40200000,
     .stream = 0x5555a1b0,
     .pool = 0x7000},
    {.op = TRACE_OP_FREE, .kind = TRACE_KIND_DEVICE, .addr = 0x7f2a40600000},
    {.op = TRACE_OP_FREE, .kind = TRACE_KIND_PINNED_HOST, .addr = 0x7f2a60000000},
    {.op = TRACE_OP_FREE, .kind = TRACE_KIND_DEVICE, .addr = 0x7f2a40000000},
    {.op = TRACE_OP_VA_RESERVE,
     .kind = TRACE_KIND_DEVICE,
     .addr = 0x7f2b00000000,
     .size = 64 * MiB},
    {.op = TRACE_OP_PHYS_CREATE, .kind = TRACE_KIND_DEVICE, .addr = 0x10, .size = 2 * MiB},
    {.op = TRACE_OP_MAP, .kind = TRACE_KIND_DEVICE, .addr = 0x7f2b00000000, .size = 2 * MiB},
    {.op = TRACE_OP_UNMAP, .kind = TRACE_KIND_DEVICE, .addr = 0x7f2b00000000, .size = 2 * MiB},
    {.op = TRACE_OP_PHYS_RELEASE, .kind = TRACE_KIND_DEVICE, .addr = 0x10},
    {.op = TRACE_OP_VA_FREE, .kind = TRACE_KIND_DEVICE, .addr = 0x7f2b00000000, .size = 64 * MiB},
};

static void check_handwritten(const event_list *got) {
    size_t n = sizeof handwritten_events / sizeof handwritten_events[0];
    CHECK_EQ_U64(got->n, n);
    for (size_t i = 0; i < n && i < got->n; i++) {
        trace_event g = got->ev[i], w = handwritten_events[i];
        g.requested = g.ts_ns = g.stack_id = g.tid = 0; /* not part of the known answer */
        g.level = g.source = 0;
        char a[256], b[256];
        rb_describe(a, sizeof a, &g);
        rb_describe(b, sizeof b, &w);
        CHECK_STR_EQ(a, b);
    }
}

static int is_log(const struct dirent *d) {
    size_t n = strlen(d->d_name);
    return n > 4 && strcmp(d->d_name + n - 4, ".log") == 0;
}

static void test_fixtures(const char *source_dir) {
    char fixtures[4096];
    snprintf(fixtures, sizeof fixtures, "%s/tests/fixtures/cupti", source_dir);
    struct dirent **names;
    int n = scandir(fixtures, &names, is_log, alphasort);
    CHECK(n >= 1); /* the hand-written one at least */
    int saw_handwritten = 0;
    for (int i = 0; i < n; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", fixtures, names[i]->d_name);
        event_list got = check_fixture(path);
        if (strcmp(names[i]->d_name, "handwritten_malloc_free.log") == 0) {
            saw_handwritten = 1;
            check_handwritten(&got);
        }
        printf("fixture %s: %zu events\n", names[i]->d_name, got.n);
        free(got.ev);
        free(names[i]);
    }
    if (n > 0)
        free(names);
    CHECK(saw_handwritten);
}

int main(int argc, char **argv) {
    if (argc < 2)
        CHECK_SKIP("usage: test_rec_cupti_fixture SOURCE_DIR");
    rb_tmpdir("test_rec_cupti_fixture");
    test_log_text();
    test_round_trip();
    test_fixtures(argv[1]);
    rec_cupti_set_driver_for_test(NULL);
    return rb_finish("test_rec_cupti_fixture");
}
