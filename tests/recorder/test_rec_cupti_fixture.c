/* test_rec_cupti_fixture.c — the raw CUPTI callback log (MEMREC_CALLBACK_LOG)
 * and its replay through rec_cupti_handle, without a GPU.
 *
 * Parts:
 *  - the log's text for known calls fed through rec_cupti_callback with the
 *    real *_params structs (known answers, line by line), and of the field
 *    types that write what a member points to (graph nodes, multicast);
 *  - the layouts against the handler's cbids: every handled cbid has one
 *    and every layout is of a handled cbid (the two lists cannot drift
 *    apart), and for each layout a call formatted, parsed back and decoded
 *    reads exactly as the original does (the members the log leaves out
 *    hold a pattern in the original, so a scalar member the handler reads
 *    but the log leaves out cannot pass; a pointer left out points to
 *    pattern bytes, which the known lines and round trips back up);
 *  - round trips: every handled cbid fed live with the log on, then the
 *    log replayed; both traces must hold the same events and END counts,
 *    so a layout that names the wrong member or offset cannot pass;
 *  - every .log file of tests/fixtures/cupti replayed into a trace: event count =
 *    the events its outermost calls must produce, END counts = the calls
 *    they must count, every release meets a live acquisition of the same
 *    address, the analyzer replays it with no warning; the hand-written
 *    fixture also against its exact events.
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

/* One entry of the END record's counted calls. */
typedef struct want_count {
    const char *name;
    CUpti_CallbackId cbid;
    uint64_t calls, bytes;
} want_count;

static void describe_count(char *out, size_t len, const char *name, uint32_t cbid, uint64_t calls,
                           uint64_t bytes) {
    snprintf(out, len, "%s cbid %u: %llu calls, %llu bytes", name, (unsigned)cbid,
             (unsigned long long)calls, (unsigned long long)bytes);
}

/* The END record counts exactly w[0 .. n), in any order. */
static void check_counts(const char *tag, const readback *rb, const want_count *w, size_t n) {
    CHECK(rb->has_end);
    if (rb->end.n_calls != n)
        fprintf(stderr, "%s: %u counted calls in the END record, %zu expected\n", tag,
                rb->end.n_calls, n);
    CHECK_EQ_U64(rb->end.n_calls, n);
    for (size_t i = 0; i < n; i++) {
        const trace_call_count *got = NULL;
        for (uint32_t j = 0; j < rb->end.n_calls; j++)
            if (rb->end.calls[j].call_id == w[i].cbid)
                got = &rb->end.calls[j];
        char g[300] = "none", e[300];
        if (got)
            describe_count(g, sizeof g, got->name.ptr, got->call_id, got->calls, got->bytes);
        describe_count(e, sizeof e, w[i].name, w[i].cbid, w[i].calls, w[i].bytes);
        CHECK_STR_EQ(g, e);
    }
}

/* What the replay expects of the END record (rr->counts) as want_counts. */
static size_t expected_counts(const replay_result *rr, want_count *out) {
    size_t n = 0;
    for (size_t i = 0; i < REC_COUNT_SLOTS; i++)
        if (rr->counts[i].calls)
            out[n++] = (want_count){rr->counts[i].name, rr->counts[i].cbid, rr->counts[i].calls,
                                    rr->counts[i].bytes};
    return n;
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
    static readback rb; /* the END record's counts: those the log's calls must make */
    want_count counts[REC_COUNT_SLOTS];
    CHECK(rb_read(trace, &rb) == 0);
    check_counts(log, &rb, counts, expected_counts(&rr, counts));
    rb_free(&rb);
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

/* The field types that write what a member points to, and the int one: known lines. */
static void put_alloc_node(void *p, uint64_t out) {
    ((cuGraphAddMemAllocNode_params *)p)->nodeParams->dptr = (CUdeviceptr)out;
}
#if CUDA_VERSION >= 12020
static void put_node_alloc(void *p, uint64_t out) { /* cuGraphAddNode and _v2: the same here */
    cuGraphAddNode_params *gp = p;
    gp->nodeParams->alloc.dptr = (CUdeviceptr)out;
}
#endif
#if CUDA_VERSION >= 12030
static void put_node_v2_alloc(void *p, uint64_t out) {
    ((cuGraphAddNode_v2_params *)p)->nodeParams->alloc.dptr = (CUdeviceptr)out;
}
#endif

static void check_line(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site, const void *params,
                       CUresult result, const char *want) {
    rec_cupti_call c = {cbid, site, params, result, (CUcontext)0x4000, 9};
    char line[512];
    int n = rec_cupti_log_format(&c, 7, line, sizeof line);
    CHECK_EQ_U64(n, strlen(want));
    CHECK_STR_EQ(n > 0 ? line : "", want);
}

static void test_log_text_pointed(void) {
    CUDA_MEM_ALLOC_NODE_PARAMS node = {.bytesize = 8 * MiB, .dptr = GARBAGE};
    cuGraphAddMemAllocNode_params an = {NULL, (CUgraph)0x6600, NULL, 0, &node};
    check_line(CBID(cuGraphAddMemAllocNode), CUPTI_API_ENTER, &an, CUDA_SUCCESS,
               "enter cuGraphAddMemAllocNode cbid=638 tid=7 corr=9 ctx=0x4000 hGraph=0x6600 "
               "nodeParams=8388608,-\n");
    node.dptr = 0x1a0000000;
    check_line(CBID(cuGraphAddMemAllocNode), CUPTI_API_EXIT, &an, CUDA_SUCCESS,
               "exit cuGraphAddMemAllocNode cbid=638 tid=7 corr=9 ctx=0x4000 result=0 "
               "hGraph=0x6600 nodeParams=8388608,0x1a0000000\n");
    check_line(CBID(cuGraphAddMemAllocNode), CUPTI_API_EXIT, &an, CUDA_ERROR_OUT_OF_MEMORY,
               "exit cuGraphAddMemAllocNode cbid=638 tid=7 corr=9 ctx=0x4000 result=2 "
               "hGraph=0x6600 nodeParams=8388608,-\n");
    an.nodeParams = NULL;
    check_line(CBID(cuGraphAddMemAllocNode), CUPTI_API_EXIT, &an, CUDA_SUCCESS,
               "exit cuGraphAddMemAllocNode cbid=638 tid=7 corr=9 ctx=0x4000 result=0 "
               "hGraph=0x6600 nodeParams=null\n");
    check_line(CBID(cuDeviceGraphMemTrim), CUPTI_API_ENTER, &(cuDeviceGraphMemTrim_params){-1},
               CUDA_SUCCESS,
               "enter cuDeviceGraphMemTrim cbid=640 tid=7 corr=9 ctx=0x4000 device=-1\n");
    check_line(CBID(cuMemHostRegister_v2), CUPTI_API_EXIT,
               &(cuMemHostRegister_v2_params){(void *)0x7f0000200000, 1 * MiB, 2}, CUDA_SUCCESS,
               "exit cuMemHostRegister_v2 cbid=379 tid=7 corr=9 ctx=0x4000 result=0 "
               "p=0x7f0000200000 bytesize=1048576 Flags=2\n");
#if CUDA_VERSION >= 12010
    CUmulticastObjectProp mc = {.numDevices = 8, .size = 2 * MiB};
    CUmemGenericAllocationHandle mc_handle = 0xf00;
    check_line(CBID(cuMulticastCreate), CUPTI_API_EXIT,
               &(cuMulticastCreate_params){&mc_handle, &mc}, CUDA_SUCCESS,
               "exit cuMulticastCreate cbid=706 tid=7 corr=9 ctx=0x4000 result=0 mcHandle=0xf00 "
               "prop=2097152\n");
    check_line(CBID(cuMulticastCreate), CUPTI_API_ENTER, &(cuMulticastCreate_params){NULL, NULL},
               CUDA_SUCCESS,
               "enter cuMulticastCreate cbid=706 tid=7 corr=9 ctx=0x4000 mcHandle=null "
               "prop=null\n");
    check_line(CBID(cuMulticastUnbind), CUPTI_API_ENTER,
               &(cuMulticastUnbind_params){0xf00, 3, 2 * MiB, 4 * MiB}, CUDA_SUCCESS,
               "enter cuMulticastUnbind cbid=710 tid=7 corr=9 ctx=0x4000 mcHandle=0xf00 dev=3 "
               "mcOffset=2097152 size=4194304\n");
#endif
#if CUDA_VERSION >= 12030
    CUgraphNodeParams gn = {.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC};
    gn.alloc.bytesize = 2 * MiB;
    gn.alloc.dptr = 0x1a1000000;
    cuGraphAddNode_v2_params v2 = {NULL, (CUgraph)0x6600, NULL, NULL, 0, &gn};
    check_line(CBID(cuGraphAddNode_v2), CUPTI_API_EXIT, &v2, CUDA_SUCCESS,
               "exit cuGraphAddNode_v2 cbid=723 tid=7 corr=9 ctx=0x4000 result=0 hGraph=0x6600 "
               "nodeParams=10,2097152,0x1a1000000\n");
    check_line(CBID(cuGraphAddNode_v2), CUPTI_API_ENTER, &v2, CUDA_SUCCESS,
               "enter cuGraphAddNode_v2 cbid=723 tid=7 corr=9 ctx=0x4000 hGraph=0x6600 "
               "nodeParams=10,2097152,-\n");
    gn = (CUgraphNodeParams){.type = CU_GRAPH_NODE_TYPE_MEM_FREE};
    gn.free.dptr = 0x1a1000000;
    check_line(CBID(cuGraphAddNode_v2), CUPTI_API_EXIT, &v2, CUDA_SUCCESS,
               "exit cuGraphAddNode_v2 cbid=723 tid=7 corr=9 ctx=0x4000 result=0 hGraph=0x6600 "
               "nodeParams=11,0x1a1000000\n");
    gn = (CUgraphNodeParams){.type = CU_GRAPH_NODE_TYPE_KERNEL};
    check_line(CBID(cuGraphAddNode_v2), CUPTI_API_EXIT, &v2, CUDA_SUCCESS,
               "exit cuGraphAddNode_v2 cbid=723 tid=7 corr=9 ctx=0x4000 result=0 hGraph=0x6600 "
               "nodeParams=0\n");
#endif

    /* Lines the parser must refuse: the words of a pointed-to struct malformed. */
    const char *const bad[] = {
        "exit cuGraphAddMemAllocNode cbid=638 tid=7 corr=9 ctx=0x0 result=0 hGraph=0x0 "
        "nodeParams=8388608",
        "exit cuGraphAddMemAllocNode cbid=638 tid=7 corr=9 ctx=0x0 result=0 hGraph=0x0 "
        "nodeParams=8388608,0x10,0x20",
        "exit cuGraphAddMemAllocNode cbid=638 tid=7 corr=9 ctx=0x0 result=0 hGraph=0x0 "
        "nodeParams=,0x10",
        "enter cuDeviceGraphMemTrim cbid=640 tid=7 corr=9 ctx=0x0 device=0x1",
        "enter cuDeviceGraphMemTrim cbid=640 tid=7 corr=9 ctx=0x0 device=4294967296",
#if CUDA_VERSION >= 12010
        "exit cuMulticastCreate cbid=706 tid=7 corr=9 ctx=0x0 result=0 mcHandle=0xf00 prop=1,2",
#endif
#if CUDA_VERSION >= 12030
        "exit cuGraphAddNode_v2 cbid=723 tid=7 corr=9 ctx=0x0 result=0 hGraph=0x0 "
        "nodeParams=10,2097152",
        "exit cuGraphAddNode_v2 cbid=723 tid=7 corr=9 ctx=0x0 result=0 hGraph=0x0 "
        "nodeParams=11",
        "exit cuGraphAddNode_v2 cbid=723 tid=7 corr=9 ctx=0x0 result=0 hGraph=0x0 "
        "nodeParams=0,0x10",
#endif
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "%s", bad[i]);
        parsed_call pc;
        const char *why = NULL;
        if (parse_line(line, &pc, &why) == 0)
            fprintf(stderr, "parsed, should not: %s\n", bad[i]);
        else
            CHECK_STR_EQ(why, "a params field is missing or malformed");
    }
}

/* ---- the layouts against the handler's cbids --------------------------------- */

/* Bytes of the params member a field is. */
static size_t field_width(rec_cupti_field_type t) {
    return t == REC_FIELD_UINT || t == REC_FIELD_INT ? 4 : 8;
}

/* Every handled cbid has a layout of its own, and nothing else has one; each
 * layout's fields lie inside its params struct, in struct order. */
static void test_layouts_cover_cbids(void) {
    const CUpti_CallbackId *ids;
    const rec_cupti_layout *layouts;
    size_t n_ids = rec_call_cbids(&ids), n_layouts = rec_cupti_layouts(&layouts);
    CHECK_EQ_U64(n_layouts, n_ids);
    for (size_t i = 0; i < n_ids; i++) {
        const rec_cupti_layout *l = rec_cupti_layout_of(ids[i]);
        if (!l) {
            fprintf(stderr, "handled cbid %u has no callback log layout\n", (unsigned)ids[i]);
            CHECK(l != NULL);
            continue;
        }
        CHECK_EQ_U64(l->cbid, ids[i]);
        CHECK(rec_cupti_layout_named(l->name) == l);
        const char *counted_name;
        if (rec_call_count_slot(ids[i], &counted_name) >= 0)
            CHECK_STR_EQ(l->name, counted_name); /* the END record's name for it */
    }
    for (size_t i = 0; i < n_layouts; i++) {
        const rec_cupti_layout *l = &layouts[i];
        if (rec_call_class_of(l->cbid) == REC_CALL_NONE)
            fprintf(stderr, "layout %s: not a handled cbid\n", l->name);
        CHECK(rec_call_class_of(l->cbid) != REC_CALL_NONE);
        CHECK(rec_cupti_layout_of(l->cbid) == l); /* one layout per cbid */
        CHECK(l->params_size <= MAX_PARAMS);
        CHECK(l->fields[0].name != NULL);
        size_t end = 0;
        for (const rec_cupti_field *f = l->fields; f->name; f++) {
            if (f->offset < end || f->offset + field_width(f->type) > l->params_size)
                fprintf(stderr, "layout %s: %s out of order or outside the struct\n", l->name,
                        f->name);
            CHECK(f->offset >= end && f->offset + field_width(f->type) <= l->params_size);
            end = f->offset + field_width(f->type);
        }
    }
}

/* How a decoded call reads, everything the handler uses (the structs its
 * pointers point to by their contents). */
static void describe_info(char *out, size_t len, const rec_call_info *c) {
    char prop[64] = "null", props[64] = "null";
    if (c->alloc_prop)
        snprintf(prop, sizeof prop, "%u,%u,%d", (unsigned)c->alloc_prop->type,
                 (unsigned)c->alloc_prop->location.type, c->alloc_prop->location.id);
    if (c->pool_props)
        snprintf(props, sizeof props, "%u,%u,%d", (unsigned)c->pool_props->allocType,
                 (unsigned)c->pool_props->location.type, c->pool_props->location.id);
    snprintf(out, len,
             "cls %d cbid %u count_mem %u kind %u async %u has_result %u addr 0x%llx size %llu "
             "req %llu stream 0x%llx stream_arg %p pool %p handle 0x%llx prop %s pool_props %s",
             (int)c->cls, (unsigned)c->cbid, c->count_mem, c->kind, c->async, c->has_result,
             (unsigned long long)c->addr, (unsigned long long)c->size,
             (unsigned long long)c->requested, (unsigned long long)c->stream, (void *)c->stream_arg,
             (void *)c->pool, (unsigned long long)c->handle, prop, props);
}

/* The variants of a generated call: every pointer set (graph nodes as
 * memory allocation nodes), every pointer NULL, graph nodes as free nodes,
 * as kernel nodes. */
enum { VARIANT_SET, VARIANT_NULL, VARIANT_FREE_NODE, VARIANT_KERNEL_NODE, VARIANTS };
#define PATTERN 0xa5 /* the bytes of the pointed-to structs the log leaves out */
static unsigned char pattern_arena[4096]; /* PATTERN throughout */

/* A call of layout `l` with known values in the members the log writes, the
 * structs it points to in `pc`. The params members it leaves out hold the
 * address of a PATTERN arena: read as a value it differs from the parsed
 * call's 0, followed as a pointer it reads PATTERN bytes, not NULL. */
static void generate_params(parsed_call *pc, const rec_cupti_layout *l, int variant) {
    memset(pc, PATTERN, sizeof *pc);
    memset(pattern_arena, PATTERN, sizeof pattern_arena);
    uint64_t arena = (uint64_t)(uintptr_t)pattern_arena;
    for (size_t at = 0; at + sizeof arena <= sizeof pc->params.bytes; at += sizeof arena)
        memcpy(pc->params.bytes + at, &arena, sizeof arena);
    unsigned k = 0;
    for (const rec_cupti_field *f = l->fields; f->name; f++, k++) {
        unsigned char *at = pc->params.bytes + f->offset;
        uint64_t v = 0x10000 * (k + 1) + 0x30;
        unsigned u = 5 + k;
        int i = 2 + (int)k;
        void *p = NULL;
        switch (f->type) {
        case REC_FIELD_SIZE:
        case REC_FIELD_HEX:
            memcpy(at, &v, sizeof v);
            continue;
        case REC_FIELD_UINT:
            memcpy(at, &u, sizeof u);
            continue;
        case REC_FIELD_INT:
            memcpy(at, &i, sizeof i);
            continue;
        case REC_FIELD_OUT:
            pc->outputs[k % MAX_OUTPUTS] = 0x200000000ull * (k + 1);
            p = &pc->outputs[k % MAX_OUTPUTS];
            break;
        case REC_FIELD_ALLOC_PROP:
            pc->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
            pc->prop.location = (CUmemLocation){CU_MEM_LOCATION_TYPE_DEVICE, 1};
            p = &pc->prop;
            break;
        case REC_FIELD_POOL_PROPS:
            pc->pool_props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
            pc->pool_props.location = (CUmemLocation){REC_MEM_LOCATION_HOST, 0};
            p = &pc->pool_props;
            break;
        case REC_FIELD_MEM_ALLOC_NODE:
            pc->alloc_node.bytesize = 3 * MiB;
            pc->alloc_node.dptr = 0x1a0000000;
            p = &pc->alloc_node;
            break;
        case REC_FIELD_MULTICAST_PROP:
#if CUDA_VERSION >= 12010
            pc->mc_prop.size = 6 * MiB;
            p = &pc->mc_prop;
#endif
            break;
        case REC_FIELD_GRAPH_NODE:
#if CUDA_VERSION >= 12020
            pc->node.type = variant == VARIANT_FREE_NODE     ? CU_GRAPH_NODE_TYPE_MEM_FREE
                            : variant == VARIANT_KERNEL_NODE ? CU_GRAPH_NODE_TYPE_KERNEL
                                                             : CU_GRAPH_NODE_TYPE_MEM_ALLOC;
            if (pc->node.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
                pc->node.alloc.bytesize = 5 * MiB;
                pc->node.alloc.dptr = 0x1a1000000;
            } else if (pc->node.type == CU_GRAPH_NODE_TYPE_MEM_FREE)
                pc->node.free.dptr = 0x1a2000000;
            p = &pc->node;
#endif
            break;
        }
        if (variant == VARIANT_NULL)
            p = NULL;
        memcpy(at, &p, sizeof p);
    }
}

/* For every layout, at its entry, a successful exit and a failed one: the
 * line parses back into params that format to the same line and decode to
 * the same call as the original's. */
static void test_layouts_read_back(void) {
    const rec_cupti_layout *layouts;
    size_t n_layouts = rec_cupti_layouts(&layouts), lines = 0;
    static const struct {
        CUpti_ApiCallbackSite site;
        CUresult result;
    } sites[] = {{CUPTI_API_ENTER, CUDA_SUCCESS},
                 {CUPTI_API_EXIT, CUDA_SUCCESS},
                 {CUPTI_API_EXIT, CUDA_ERROR_OUT_OF_MEMORY}};
    for (size_t i = 0; i < n_layouts; i++)
        for (int variant = 0; variant < VARIANTS; variant++)
            for (size_t s = 0; s < sizeof sites / sizeof sites[0]; s++) {
                const rec_cupti_layout *l = &layouts[i];
                static parsed_call orig, back;
                generate_params(&orig, l, variant);
                orig.call = (rec_cupti_call){.cbid = l->cbid,
                                             .site = sites[s].site,
                                             .params = orig.params.bytes,
                                             .result = sites[s].result,
                                             .context = (CUcontext)0x4010,
                                             .correlation_id = 77};
                char line[512], again[512], parsed_text[512];
                int n = rec_cupti_log_format(&orig.call, 31, line, sizeof line);
                CHECK(n > 0);
                if (n <= 0)
                    continue;
                lines++;
                snprintf(parsed_text, sizeof parsed_text, "%s", line);
                const char *why = "";
                if (parse_line(parsed_text, &back, &why) != 0) {
                    fprintf(stderr, "%s: %s", why, line);
                    CHECK(0);
                    continue;
                }
                CHECK_EQ_U64(back.tid, 31);
                CHECK_EQ_U64(back.call.cbid, l->cbid);
                CHECK_EQ_U64(back.call.site, sites[s].site);
                CHECK_EQ_U64(back.call.result, sites[s].result);
                CHECK_EQ_U64(back.call.correlation_id, 77);
                CHECK(back.call.context == (CUcontext)0x4010);
                CHECK(rec_cupti_log_format(&back.call, 31, again, sizeof again) == n);
                CHECK_STR_EQ(again, line);
                int rd = sites[s].site == CUPTI_API_EXIT && sites[s].result == CUDA_SUCCESS;
                rec_call_info a, b;
                CHECK(rec_call_decode(l->cbid, orig.params.bytes, rd, &a) == 0);
                CHECK(rec_call_decode(l->cbid, back.params.bytes, rd, &b) == 0);
                char da[512], db[512];
                describe_info(da, sizeof da, &a);
                describe_info(db, sizeof db, &b);
                if (strcmp(da, db) != 0)
                    fprintf(stderr, "%s", line);
                CHECK_STR_EQ(db, da);
            }
    CHECK_EQ_U64(lines, n_layouts * VARIANTS * 3);
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

/* Graph memory, another process's memory, registered host memory and multicast objects:
 * every cbid the handler counts in the END record instead of recording (and the host
 * registrations it records), successes and failures, the v1 entry points, frees of counted
 * memory until a recorded allocation takes the address. */
enum { IPC = 0x190000000, IMPORTED = 0x1b0000000, GRAPH = 0x1a0000000, VA = 0x300000000 };
enum { PEER_HANDLE = 0xd10, MC_HANDLE = 0xf00 };
static void feed_counted_cbids(void) {
    call(CBID(cuMemHostRegister_v2),
         &(cuMemHostRegister_v2_params){(void *)0x7f0000200000, 1 * MiB, 0}, NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMemHostRegister), &(cuMemHostRegister_params){(void *)0x7f0000400000, 8192, 2},
         NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMemHostRegister_v2),
         &(cuMemHostRegister_v2_params){(void *)0x7f0000200000, 1 * MiB, 0}, NULL, 0,
         CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    call(CBID(cuMemHostUnregister), &(cuMemHostUnregister_params){(void *)0x7f0000200000}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMemHostUnregister), &(cuMemHostUnregister_params){(void *)0x7f0000400000}, NULL, 0,
         CUDA_SUCCESS);
    /* a peer's buffer through CUDA IPC: opened twice (v2, v1), a failed open, closed twice */
    CUdeviceptr d = GARBAGE;
    CUipcMemHandle ipc = {{0}};
    call(CBID(cuIpcOpenMemHandle_v2), &(cuIpcOpenMemHandle_v2_params){&d, ipc, 1}, put_first, IPC,
         CUDA_SUCCESS);
    call(CBID(cuIpcOpenMemHandle), &(cuIpcOpenMemHandle_params){&d, ipc, 1}, put_first, IPC,
         CUDA_SUCCESS);
    call(CBID(cuIpcOpenMemHandle_v2), &(cuIpcOpenMemHandle_v2_params){&d, ipc, 1}, put_first, IPC,
         CUDA_ERROR_INVALID_VALUE);
    call(CBID(cuIpcCloseMemHandle), &(cuIpcCloseMemHandle_params){IPC}, NULL, 0, CUDA_SUCCESS);
    call(CBID(cuIpcCloseMemHandle), &(cuIpcCloseMemHandle_params){IPC}, NULL, 0, CUDA_SUCCESS);
    /* a pointer from another process's pool, freed once: counted */
    CUmemPoolPtrExportData share = {{0}};
    call(CBID(cuMemPoolImportPointer),
         &(cuMemPoolImportPointer_params){&d, (CUmemoryPool)0x7700, &share}, put_first, IMPORTED,
         CUDA_SUCCESS);
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){IMPORTED}, NULL, 0, CUDA_SUCCESS);
    /* graph memory: an alloc node (8 MiB), a failed one, its free node, two frees outside the
     * graph, a trim; then the address is an ordinary allocation's */
    CUDA_MEM_ALLOC_NODE_PARAMS node = {.poolProps = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                                     .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}},
                                       .bytesize = 8 * MiB,
                                       .dptr = GARBAGE};
    CUgraphNode gnode = NULL;
    CUgraph graph = (CUgraph)0x6600;
    call(CBID(cuGraphAddMemAllocNode),
         &(cuGraphAddMemAllocNode_params){&gnode, graph, NULL, 0, &node}, put_alloc_node, GRAPH,
         CUDA_SUCCESS);
    CUDA_MEM_ALLOC_NODE_PARAMS huge = node;
    huge.bytesize = 1024 * GiB;
    call(CBID(cuGraphAddMemAllocNode),
         &(cuGraphAddMemAllocNode_params){&gnode, graph, NULL, 0, &huge}, put_alloc_node, GRAPH,
         CUDA_ERROR_OUT_OF_MEMORY);
    call(CBID(cuGraphAddMemFreeNode),
         &(cuGraphAddMemFreeNode_params){&gnode, graph, &gnode, 1, GRAPH}, NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMemFreeAsync), &(cuMemFreeAsync_params){GRAPH, (CUstream)0x5000}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMemFreeAsync), &(cuMemFreeAsync_params){GRAPH, (CUstream)0x5000}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuDeviceGraphMemTrim), &(cuDeviceGraphMemTrim_params){0}, NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 4096}, put_first, GRAPH, CUDA_SUCCESS);
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){GRAPH}, NULL, 0, CUDA_SUCCESS);
#if CUDA_VERSION >= 12020
    /* memory nodes added the generic way; other node types are no memory call */
    CUgraphNodeParams generic = {.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC};
    generic.alloc.poolProps = node.poolProps;
    generic.alloc.bytesize = 2 * MiB;
    call(CBID(cuGraphAddNode), &(cuGraphAddNode_params){&gnode, graph, NULL, 0, &generic},
         put_node_alloc, GRAPH + 16 * MiB, CUDA_SUCCESS);
    CUgraphNodeParams gfree = {.type = CU_GRAPH_NODE_TYPE_MEM_FREE};
    gfree.free.dptr = GRAPH + 16 * MiB;
    call(CBID(cuGraphAddNode), &(cuGraphAddNode_params){&gnode, graph, NULL, 0, &gfree}, NULL, 0,
         CUDA_SUCCESS);
#endif
#if CUDA_VERSION >= 12030
    generic.alloc.bytesize = 4 * MiB;
    call(CBID(cuGraphAddNode_v2),
         &(cuGraphAddNode_v2_params){&gnode, graph, NULL, NULL, 0, &generic}, put_node_v2_alloc,
         GRAPH + 32 * MiB, CUDA_SUCCESS);
    CUgraphNodeParams kernel = {.type = CU_GRAPH_NODE_TYPE_KERNEL};
    call(CBID(cuGraphAddNode_v2),
         &(cuGraphAddNode_v2_params){&gnode, graph, NULL, NULL, 0, &kernel}, NULL, 0, CUDA_SUCCESS);
    gfree.free.dptr = GRAPH + 32 * MiB;
    call(CBID(cuGraphAddNode_v2), &(cuGraphAddNode_v2_params){&gnode, graph, NULL, NULL, 0, &gfree},
         NULL, 0, CUDA_SUCCESS);
#endif
    /* a peer's VMM handle mapped into reserved address space, unmapped, released */
    call(CBID(cuMemAddressReserve), &(cuMemAddressReserve_params){&d, 64 * MiB, 0, 0, 0}, put_first,
         VA, CUDA_SUCCESS);
    CUmemGenericAllocationHandle handle = GARBAGE;
    call(CBID(cuMemImportFromShareableHandle),
         &(cuMemImportFromShareableHandle_params){&handle, (void *)0x33,
                                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR},
         put_first, PEER_HANDLE, CUDA_SUCCESS);
    call(CBID(cuMemMap), &(cuMemMap_params){VA, 2 * MiB, 0, PEER_HANDLE, 0}, NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMemRelease), &(cuMemRelease_params){PEER_HANDLE}, NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMemUnmap), &(cuMemUnmap_params){VA, 2 * MiB}, NULL, 0, CUDA_SUCCESS);
#if CUDA_VERSION >= 12010
    /* NVLS: a multicast object mapped, this process's memory bound to it and unbound */
    CUmulticastObjectProp mc = {.numDevices = 2, .size = 2 * MiB};
    call(CBID(cuMulticastCreate), &(cuMulticastCreate_params){&handle, &mc}, put_first, MC_HANDLE,
         CUDA_SUCCESS);
    call(CBID(cuMemMap), &(cuMemMap_params){VA + 2 * MiB, 2 * MiB, 0, MC_HANDLE, 0}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMulticastBindMem), &(cuMulticastBindMem_params){MC_HANDLE, 0, 0xab0, 0, 2 * MiB, 0},
         NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMulticastBindAddr),
         &(cuMulticastBindAddr_params){MC_HANDLE, 2 * MiB, VA + 8 * MiB, 4 * MiB, 0}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMulticastUnbind), &(cuMulticastUnbind_params){MC_HANDLE, 0, 0, 6 * MiB}, NULL, 0,
         CUDA_SUCCESS);
    call(CBID(cuMemUnmap), &(cuMemUnmap_params){VA + 2 * MiB, 2 * MiB}, NULL, 0, CUDA_SUCCESS);
    call(CBID(cuMemRelease), &(cuMemRelease_params){MC_HANDLE}, NULL, 0, CUDA_SUCCESS);
#endif
    call(CBID(cuMemAddressFree), &(cuMemAddressFree_params){VA, 64 * MiB}, NULL, 0, CUDA_SUCCESS);
}

/* Feeds live with the log on, replays the log: the same events and END counts, those the
 * replay expects by the handler's rules, and `want_events` events, `counts` exactly. */
static void round_trip(const char *tag, void (*feed_calls)(void), size_t want_lines,
                       size_t want_events, const want_count *counts, size_t n_counts) {
    char log[300], live_trace[300], replayed_trace[300];
    rb_path(log, sizeof log, "every.log");
    rb_path(live_trace, sizeof live_trace, "live.zst");
    rb_path(replayed_trace, sizeof replayed_trace, "replayed.zst");
    unlink(log);
    start_session("live.zst");
    CHECK(rec_cupti_log_open(log) == 0);
    feed_calls();
    CHECK(rec_cupti_log_open(NULL) == 0);
    CHECK(rec_session_stop() == 0);
    replay_result rr;
    start_session("replayed.zst");
    CHECK(replay_log(log, &rr) == 0);
    CHECK(rec_session_stop() == 0);
    CHECK_EQ_U64(rr.lines, want_lines);
    CHECK_EQ_U64(rr.threads, 1);
    static readback live, replayed;
    CHECK(rb_read(live_trace, &live) == 0);
    CHECK(rb_read(replayed_trace, &replayed) == 0);
    if (live.n_events != want_events)
        fprintf(stderr, "%s: %zu events live, %zu expected\n", tag, live.n_events, want_events);
    CHECK_EQ_U64(live.n_events, want_events);
    CHECK_EQ_U64(replayed.n_events, live.n_events);
    CHECK_EQ_U64(rr.expected.n, live.n_events);
    for (size_t i = 0; i < live.n_events && i < replayed.n_events; i++) {
        char a[256], b[256];
        rb_describe(a, sizeof a, &live.events[i]);
        rb_describe(b, sizeof b, &replayed.events[i]);
        CHECK_STR_EQ(b, a);
        if (i < rr.expected.n) { /* the replay's expectation: in order here (one thread) */
            CHECK_EQ_U64(rr.expected.ev[i].op, live.events[i].op);
            CHECK_EQ_U64(rr.expected.ev[i].addr, live.events[i].addr);
        }
    }
    check_counts(tag, &live, counts, n_counts);
    check_counts(tag, &replayed, counts, n_counts);
    want_count from_model[REC_COUNT_SLOTS];
    size_t n_model = expected_counts(&rr, from_model);
    check_counts(tag, &live, from_model, n_model);
    event_list replayed_events = {replayed.events, replayed.n_events, replayed.cap_events};
    check_pairing(tag, &replayed_events);
    rb_free(&live);
    rb_free(&replayed);
    free(rr.expected.ev);
    unlink(log);
    unlink(live_trace);
    unlink(replayed_trace);
}

static void test_round_trip(void) {
    round_trip("every cbid", feed_every_cbid, 2 * 27, 24, NULL, 0);

    static const want_count counts[] = {
        {"cuIpcOpenMemHandle", CBID(cuIpcOpenMemHandle), 1, 0},
        {"cuIpcOpenMemHandle_v2", CBID(cuIpcOpenMemHandle_v2), 1, 0},
        {"cuIpcCloseMemHandle", CBID(cuIpcCloseMemHandle), 2, 0},
        {"cuMemPoolImportPointer", CBID(cuMemPoolImportPointer), 1, 0},
        {"cuMemImportFromShareableHandle", CBID(cuMemImportFromShareableHandle), 1, 0},
        {"cuMemFree_v2", CBID(cuMemFree_v2), 1, 0}, /* the imported pointer (no size) */
        {"cuMemFreeAsync", CBID(cuMemFreeAsync), 2, 16 * MiB},
        {"cuGraphAddMemAllocNode", CBID(cuGraphAddMemAllocNode), 1, 8 * MiB},
        {"cuGraphAddMemFreeNode", CBID(cuGraphAddMemFreeNode), 1, 8 * MiB},
        {"cuDeviceGraphMemTrim", CBID(cuDeviceGraphMemTrim), 1, 0},
#if CUDA_VERSION >= 12010
        {"cuMemMap", CBID(cuMemMap), 2, 4 * MiB}, /* the peer's handle, the multicast object */
        {"cuMemUnmap", CBID(cuMemUnmap), 2, 4 * MiB},
        {"cuMulticastCreate", CBID(cuMulticastCreate), 1, 2 * MiB},
        {"cuMulticastBindMem", CBID(cuMulticastBindMem), 1, 2 * MiB},
        {"cuMulticastBindAddr", CBID(cuMulticastBindAddr), 1, 4 * MiB},
        {"cuMulticastUnbind", CBID(cuMulticastUnbind), 1, 6 * MiB},
#else
        {"cuMemMap", CBID(cuMemMap), 1, 2 * MiB},
        {"cuMemUnmap", CBID(cuMemUnmap), 1, 2 * MiB},
#endif
#if CUDA_VERSION >= 12020
        {"cuGraphAddNode", CBID(cuGraphAddNode), 2, 4 * MiB}, /* alloc node, its free node */
#endif
#if CUDA_VERSION >= 12030
        {"cuGraphAddNode_v2", CBID(cuGraphAddNode_v2), 2, 8 * MiB}, /* the kernel node: none */
#endif
    };
    /* host registered twice, unregistered twice; an allocation at the graph memory's
     * address, freed; the address space reserved and freed */
    size_t lines = 2 * (5 + 5 + 2 + 8 + 6 + (CUDA_VERSION >= 12010 ? 7 : 0) +
                        (CUDA_VERSION >= 12020 ? 2 : 0) + (CUDA_VERSION >= 12030 ? 3 : 0));
    round_trip("counted cbids", feed_counted_cbids, lines, 4 + 2 + 2, counts,
               sizeof counts / sizeof counts[0]);
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
    test_log_text_pointed();
    test_layouts_cover_cbids();
    test_layouts_read_back();
    test_round_trip();
    test_fixtures(argv[1]);
    rec_cupti_set_driver_for_test(NULL);
    return rb_finish("test_rec_cupti_fixture");
}
