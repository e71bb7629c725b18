/* test_rec_cupti.c — the CUPTI callback handler without a GPU: every handled
 * driver cbid is fed through rec_cupti_callback as CUPTI would (a
 * CUpti_CallbackData around the real *_params struct of generated_cuda_meta.h,
 * entry then exit, success and failure) with a fake driver table, and the
 * trace read back must hold exactly the expected events, counters and device
 * records. Also: nesting is recorded once, an entry without its exit and an
 * exit without its entry record nothing, an exit under another correlation
 * id closes its call (the thread is recorded on), the stack starts at the program's
 * caller, the analyzer replays the result without a warning, calls that are
 * counted rather than recorded (graph memory, other processes' memory,
 * multicast binds) are in the END record's counts exactly, and attaching
 * without a driver returns -1 with one warning. */
#include "check.h"
#include "db_writer.h"
#include "rec_core.h"
#include "rec_cupti.h"
#include "rec_cupti_calls.h"
#include "rec_cupti_driver.h"
#include "rec_readback.h"
#include "replay.h"
#include "trace_format.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MiB (1024ull * 1024)
#define GiB (1024 * MiB)
#define CBID(name) CUPTI_DRIVER_TRACE_CBID_##name
#define GARBAGE 0xdeadbeefull /* what an output holds before the driver writes it */

/* ---- the fake driver ------------------------------------------------------ */

enum { DEV0_BASE = 0x1, DEV1_BASE = 0x2, VMM_BASE = 0x3 }; /* addr >> 32 */
#define FAKE_CTX ((CUcontext)0x4000)
#define POOL_DEV0 ((CUmemoryPool)0x7000)
#define POOL_DEV1 ((CUmemoryPool)0x7010)
#define POOL_MADE ((CUmemoryPool)0x9000)
#define STREAM_DEV1 ((CUstream)0x5100) /* the only stream the fake knows the device of */
enum { HANDLE_DEV0 = 0xab0, HANDLE_HOST = 0xc00 }; /* cuMemCreate handles */
enum { HANDLE_PEER = 0xd10 }; /* imported from the peer rank: its memory lives on device 1 */

static uint64_t fake_free = 70 * GiB;
static cuuint64_t pool_bytes[2][2]; /* [POOL_DEV0, POOL_MADE][reserved, used] */

static void set_pool(CUmemoryPool pool, uint64_t reserved, uint64_t used) {
    pool_bytes[pool == POOL_MADE][0] = reserved;
    pool_bytes[pool == POOL_MADE][1] = used;
}

static CUresult fake_ctx_get_device(CUdevice *d) {
    *d = 0;
    return CUDA_SUCCESS;
}
static CUresult fake_mem_get_info(size_t *f, size_t *t) {
    *f = fake_free;
    *t = 80 * GiB;
    return CUDA_SUCCESS;
}
static CUresult fake_device_get_name(char *name, int len, CUdevice d) {
    snprintf(name, (size_t)len, "Fake GPU %d", d);
    return CUDA_SUCCESS;
}
static CUresult fake_device_total_mem(size_t *bytes, CUdevice d) {
    *bytes = (80 + (size_t)d) * GiB;
    return CUDA_SUCCESS;
}
static CUresult fake_device_get_mem_pool(CUmemoryPool *pool, CUdevice d) {
    *pool = d == 0 ? POOL_DEV0 : POOL_DEV1;
    return CUDA_SUCCESS;
}
static CUresult fake_pool_attribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
    if (pool != POOL_DEV0 && pool != POOL_MADE)
        return CUDA_ERROR_INVALID_VALUE;
    *(cuuint64_t *)value =
        pool_bytes[pool == POOL_MADE][attr != CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT];
    return CUDA_SUCCESS;
}
static CUresult fake_stream_get_device(CUstream s, CUdevice *d) {
    if (s != STREAM_DEV1)
        return CUDA_ERROR_INVALID_HANDLE;
    *d = 1;
    return CUDA_SUCCESS;
}
static CUresult fake_pointer_attribute(void *data, CUpointer_attribute attr, CUdeviceptr p) {
    uint64_t hi = (uint64_t)p >> 32;
    if (hi < DEV0_BASE || hi > VMM_BASE)
        return CUDA_ERROR_INVALID_VALUE; /* host memory: the fake does not know */
    if (attr == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
        *(int *)data = hi == DEV1_BASE ? 1 : 0;
        return CUDA_SUCCESS;
    }
    if (attr == CU_POINTER_ATTRIBUTE_IS_MANAGED) { /* 0x1002xxxxx: cuMemAllocManaged's */
        *(unsigned int *)data = ((uint64_t)p & 0xfff00000ull) == 0x00200000ull && hi == DEV0_BASE;
        return CUDA_SUCCESS;
    }
    if (attr == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE) {
        int async = ((uint64_t)p & 0x80000000ull) != 0; /* upper half: pool memory */
        *(CUmemoryPool *)data = !async ? NULL : hi == DEV1_BASE ? POOL_MADE : POOL_DEV0;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}
static CUresult fake_allocation_properties(CUmemAllocationProp *prop,
                                           CUmemGenericAllocationHandle h) {
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = h == HANDLE_HOST ? REC_MEM_LOCATION_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = h == HANDLE_PEER ? 1 : 0;
    return h == HANDLE_DEV0 || h == HANDLE_HOST || h == HANDLE_PEER || (h >> 8) == 0xe
               ? CUDA_SUCCESS
               : CUDA_ERROR_INVALID_VALUE;
}

static const rec_cupti_driver fake_driver = {
    .ctx_get_device = fake_ctx_get_device,
    .mem_get_info = fake_mem_get_info,
    .device_get_name = fake_device_get_name,
    .device_total_mem = fake_device_total_mem,
    .device_get_mem_pool = fake_device_get_mem_pool,
    .mem_pool_get_attribute = fake_pool_attribute,
    .stream_get_device = fake_stream_get_device,
    .pointer_get_attribute = fake_pointer_attribute,
    .mem_get_allocation_properties = fake_allocation_properties,
};

/* ---- feeding callbacks ---------------------------------------------------- */

static uint32_t next_correlation = 1;

static __attribute__((noinline)) void feed(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
                                           const void *params, CUresult result,
                                           uint32_t correlation) {
    uint64_t data = 0;
    CUpti_CallbackData cd = {site,     "cuFake", params, &result,    NULL,
                             FAKE_CTX, 1,        &data,  correlation};
    rec_cupti_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cd);
    __asm__ __volatile__("" ::: "memory"); /* keep this frame: the stack test looks for it */
}

/* Entry, then (what the driver does) the outputs, then exit. */
typedef void (*driver_effect)(void *params);
static __attribute__((noinline)) void call(CUpti_CallbackId cbid, void *params,
                                           driver_effect effect, CUresult result) {
    uint32_t corr = next_correlation++;
    feed(cbid, CUPTI_API_ENTER, params, CUDA_SUCCESS, corr);
    if (effect && result == CUDA_SUCCESS)
        effect(params);
    feed(cbid, CUPTI_API_EXIT, params, result, corr);
    __asm__ __volatile__("" ::: "memory"); /* a frame of its own in every build */
}

/* Output values the fake driver "returns", set before each call. */
static uint64_t out_addr;
static size_t out_pitch;
static void put_dptr(void *p) { **(CUdeviceptr **)p = (CUdeviceptr)out_addr; }
static void put_host(void *p) { **(void ***)p = (void *)(uintptr_t)out_addr; }
static void put_pitch(void *p) {
    cuMemAllocPitch_v2_params *pp = p;
    *pp->dptr = (CUdeviceptr)out_addr;
    *pp->pPitch = out_pitch;
}
static void put_pool(void *p) { *((cuMemPoolCreate_params *)p)->pool = (CUmemoryPool)out_addr; }
static void put_handle(void *p) {
    *((cuMemCreate_params *)p)->handle = (CUmemGenericAllocationHandle)out_addr;
}

/* ---- sessions ------------------------------------------------------------- */

/* Each test's trace is rb_dir/trace.zst, read back before the next one starts. */
static void start_session(char *path, size_t pathlen) {
    rec_config c;
    CHECK(rb_session_start(&c, "trace.zst", 32) == 0);
    rb_path(path, pathlen, "trace.zst");
    rec_cupti_set_driver_for_test(&fake_driver);
    rec_cupti_set_sample_interval_for_test(UINT64_MAX); /* first sample per device, failures */
}

/* ---- the whole vocabulary ------------------------------------------------- */

typedef struct want {
    uint8_t op, kind;
    uint32_t device;
    uint64_t addr, size, requested, stream, pool;
} want;

static void call_every_cbid(void) {
    CUdeviceptr d = GARBAGE;
    void *h = (void *)GARBAGE;
    out_addr = 0x100000000;
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 1000}, put_dptr, CUDA_SUCCESS);
    size_t pitch = GARBAGE;
    out_addr = 0x100100000, out_pitch = 1024;
    call(CBID(cuMemAllocPitch_v2), &(cuMemAllocPitch_v2_params){&d, &pitch, 1000, 10, 4}, put_pitch,
         CUDA_SUCCESS);
    d = GARBAGE;
    fake_free = 69 * GiB;
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 80 * GiB}, put_dptr,
         CUDA_ERROR_OUT_OF_MEMORY);
    out_addr = 0x100200000;
    call(CBID(cuMemAllocManaged), &(cuMemAllocManaged_params){&d, 4096, CU_MEM_ATTACH_GLOBAL},
         put_dptr, CUDA_SUCCESS);
    out_addr = 0x7f0000001000;
    call(CBID(cuMemHostAlloc), &(cuMemHostAlloc_params){&h, 8192, 0}, put_host, CUDA_SUCCESS);
    out_addr = 0x7f0000100000;
    call(CBID(cuMemAllocHost_v2), &(cuMemAllocHost_v2_params){&h, 100}, put_host, CUDA_SUCCESS);
    call(CBID(cuMemFreeHost), &(cuMemFreeHost_params){(void *)0x7f0000001000}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){0x100000000}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){0}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){0x100100000}, NULL, CUDA_ERROR_INVALID_VALUE);

    /* async: the stream's device's pool (the fake knows no device for 0x5000: the context's) */
    out_addr = 0x180000000;
    set_pool(POOL_DEV0, 32 * MiB, 1 * MiB);
    call(CBID(cuMemAllocAsync), &(cuMemAllocAsync_params){&d, 1 * MiB, (CUstream)0x5000}, put_dptr,
         CUDA_SUCCESS);
    out_addr = 0x180100000;
    set_pool(POOL_DEV0, 32 * MiB, 3 * MiB);
    call(CBID(cuMemAllocAsync_ptsz), &(cuMemAllocAsync_ptsz_params){&d, 2 * MiB, NULL}, put_dptr,
         CUDA_SUCCESS);
    CUmemoryPool made = (CUmemoryPool)GARBAGE;
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {CU_MEM_LOCATION_TYPE_DEVICE, 1}};
    out_addr = (uint64_t)(uintptr_t)POOL_MADE;
    call(CBID(cuMemPoolCreate), &(cuMemPoolCreate_params){&made, &props}, put_pool, CUDA_SUCCESS);
    out_addr = 0x280000000;
    set_pool(POOL_MADE, 64 * MiB, 4 * MiB);
    call(CBID(cuMemAllocFromPoolAsync),
         &(cuMemAllocFromPoolAsync_params){&d, 4 * MiB, POOL_MADE, STREAM_DEV1}, put_dptr,
         CUDA_SUCCESS);
    call(CBID(cuMemAllocFromPoolAsync_ptsz),
         &(cuMemAllocFromPoolAsync_ptsz_params){&d, 1 * GiB, POOL_MADE, NULL}, put_dptr,
         CUDA_ERROR_OUT_OF_MEMORY);
    set_pool(POOL_DEV0, 32 * MiB, 2 * MiB);
    call(CBID(cuMemFreeAsync), &(cuMemFreeAsync_params){0x180000000, (CUstream)0x5000}, NULL,
         CUDA_SUCCESS);
    set_pool(POOL_MADE, 64 * MiB, 0);
    call(CBID(cuMemFreeAsync_ptsz), &(cuMemFreeAsync_ptsz_params){0x280000000, NULL}, NULL,
         CUDA_SUCCESS);
    set_pool(POOL_MADE, 1 * MiB, 0);
    call(CBID(cuMemPoolTrimTo), &(cuMemPoolTrimTo_params){POOL_MADE, 1 * MiB}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemPoolDestroy), &(cuMemPoolDestroy_params){POOL_MADE}, NULL, CUDA_SUCCESS);

    /* virtual memory management, as PyTorch's expandable segments use it */
    out_addr = 0x300000000;
    call(CBID(cuMemAddressReserve), &(cuMemAddressReserve_params){&d, 64 * MiB, 0, 0, 0}, put_dptr,
         CUDA_SUCCESS);
    CUmemGenericAllocationHandle handle = GARBAGE;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    out_addr = HANDLE_DEV0;
    call(CBID(cuMemCreate), &(cuMemCreate_params){&handle, 2 * MiB, &prop, 0}, put_handle,
         CUDA_SUCCESS);
    fake_free = 1 * GiB;
    call(CBID(cuMemCreate), &(cuMemCreate_params){&handle, 2 * GiB, &prop, 0}, put_handle,
         CUDA_ERROR_OUT_OF_MEMORY);
    call(CBID(cuMemMap), &(cuMemMap_params){0x300000000, 2 * MiB, 0, HANDLE_DEV0, 0}, NULL,
         CUDA_SUCCESS);
    call(CBID(cuMemMap), &(cuMemMap_params){0x300200000, 2 * MiB, 0, HANDLE_DEV0, 0}, NULL,
         CUDA_ERROR_INVALID_VALUE);
    call(CBID(cuMemUnmap), &(cuMemUnmap_params){0x300000000, 2 * MiB}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemRelease), &(cuMemRelease_params){HANDLE_DEV0}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemAddressFree), &(cuMemAddressFree_params){0x300000000, 64 * MiB}, NULL,
         CUDA_SUCCESS);
    CUmemAllocationProp host_prop = prop;
    host_prop.location.type = REC_MEM_LOCATION_HOST;
    out_addr = HANDLE_HOST;
    call(CBID(cuMemCreate), &(cuMemCreate_params){&handle, 2 * MiB, &host_prop, 0}, put_handle,
         CUDA_SUCCESS);
}

static const want every_cbid_events[] = {
    {TRACE_OP_ALLOC, TRACE_KIND_DEVICE, 0, 0x100000000, 1000, 1000, 0, 0},
    {TRACE_OP_ALLOC, TRACE_KIND_DEVICE, 0, 0x100100000, 10240, 10000, 0, 0}, /* pitch x height */
    {TRACE_OP_ALLOC_FAILED, TRACE_KIND_DEVICE, 0, 0, 80 * GiB, 80 * GiB, 0, 0},
    {TRACE_OP_ALLOC, TRACE_KIND_MANAGED, 0, 0x100200000, 4096, 4096, 0, 0},
    {TRACE_OP_ALLOC, TRACE_KIND_PINNED_HOST, 0, 0x7f0000001000, 8192, 8192, 0, 0},
    {TRACE_OP_ALLOC, TRACE_KIND_PINNED_HOST, 0, 0x7f0000100000, 100, 100, 0, 0},
    {TRACE_OP_FREE, TRACE_KIND_PINNED_HOST, 0, 0x7f0000001000, 0, 0, 0, 0},
    {TRACE_OP_FREE, TRACE_KIND_DEVICE, 0, 0x100000000, 0, 0, 0, 0},
    {TRACE_OP_ALLOC, TRACE_KIND_DEVICE, 0, 0x180000000, 1 * MiB, 1 * MiB, 0x5000, 0x7000},
    {TRACE_OP_ALLOC, TRACE_KIND_DEVICE, 0, 0x180100000, 2 * MiB, 2 * MiB, 2, 0x7000},
    {TRACE_OP_ALLOC, TRACE_KIND_DEVICE, 1, 0x280000000, 4 * MiB, 4 * MiB, 0x5100, 0x9000},
    {TRACE_OP_ALLOC_FAILED, TRACE_KIND_DEVICE, 1, 0, 1 * GiB, 1 * GiB, 2, 0x9000},
    {TRACE_OP_FREE, TRACE_KIND_DEVICE, 0, 0x180000000, 0, 0, 0x5000, 0x7000},
    {TRACE_OP_FREE, TRACE_KIND_DEVICE, 1, 0x280000000, 0, 0, 2, 0x9000},
    {TRACE_OP_POOL_TRIM, TRACE_KIND_DEVICE, 1, 0, 1 * MiB, 1 * MiB, 0, 0x9000},
    {TRACE_OP_VA_RESERVE, TRACE_KIND_DEVICE, 0, 0x300000000, 64 * MiB, 64 * MiB, 0, 0},
    {TRACE_OP_PHYS_CREATE, TRACE_KIND_DEVICE, 0, HANDLE_DEV0, 2 * MiB, 2 * MiB, 0, 0},
    {TRACE_OP_ALLOC_FAILED, TRACE_KIND_DEVICE, 0, 0, 2 * GiB, 2 * GiB, 0, 0},
    {TRACE_OP_MAP, TRACE_KIND_DEVICE, 0, 0x300000000, 2 * MiB, 2 * MiB, 0, 0},
    {TRACE_OP_UNMAP, TRACE_KIND_DEVICE, 0, 0x300000000, 2 * MiB, 2 * MiB, 0, 0},
    {TRACE_OP_PHYS_RELEASE, TRACE_KIND_DEVICE, 0, HANDLE_DEV0, 0, 0, 0, 0},
    {TRACE_OP_VA_FREE, TRACE_KIND_DEVICE, 0, 0x300000000, 64 * MiB, 64 * MiB, 0, 0},
    {TRACE_OP_PHYS_CREATE, TRACE_KIND_PINNED_HOST, 0, HANDLE_HOST, 2 * MiB, 2 * MiB, 0, 0},
};

/* Counters in order: kind, device, key, value. */
static const trace_counter every_cbid_counters[] = {
    {.kind = TRACE_COUNTER_DRIVER_FREE, .device = 0, .value = 70 * GiB}, /* first sample */
    {.kind = TRACE_COUNTER_DRIVER_TOTAL, .device = 0, .value = 80 * GiB},
    {.kind = TRACE_COUNTER_DRIVER_FREE, .device = 0, .value = 69 * GiB}, /* the failure */
    {.kind = TRACE_COUNTER_DRIVER_TOTAL, .device = 0, .value = 80 * GiB},
    {.kind = TRACE_COUNTER_POOL_RESERVED, .device = 0, .key = 0x7000, .value = 32 * MiB},
    {.kind = TRACE_COUNTER_POOL_USED, .device = 0, .key = 0x7000, .value = 1 * MiB},
    {.kind = TRACE_COUNTER_POOL_USED, .device = 0, .key = 0x7000, .value = 3 * MiB},
    {.kind = TRACE_COUNTER_POOL_RESERVED, .device = 1, .key = 0x9000, .value = 0}, /* created */
    {.kind = TRACE_COUNTER_POOL_USED, .device = 1, .key = 0x9000, .value = 0},
    {.kind = TRACE_COUNTER_POOL_RESERVED, .device = 1, .key = 0x9000, .value = 64 * MiB},
    {.kind = TRACE_COUNTER_POOL_USED, .device = 1, .key = 0x9000, .value = 4 * MiB},
    {.kind = TRACE_COUNTER_DRIVER_FREE, .device = 0, .value = 69 * GiB}, /* failed from pool */
    {.kind = TRACE_COUNTER_DRIVER_TOTAL, .device = 0, .value = 80 * GiB},
    {.kind = TRACE_COUNTER_POOL_USED, .device = 0, .key = 0x7000, .value = 2 * MiB},
    {.kind = TRACE_COUNTER_POOL_USED, .device = 1, .key = 0x9000, .value = 0},
    {.kind = TRACE_COUNTER_POOL_RESERVED, .device = 1, .key = 0x9000, .value = 1 * MiB},
    {.kind = TRACE_COUNTER_DRIVER_FREE, .device = 0, .value = 1 * GiB}, /* cuMemCreate failed */
    {.kind = TRACE_COUNTER_DRIVER_TOTAL, .device = 0, .value = 80 * GiB},
};

static void check_event(const trace_event *e, const want *w, uint32_t tid) {
    char got[256], expected[256];
    trace_event x = {.op = w->op,
                     .kind = w->kind,
                     .device = w->device,
                     .addr = w->addr,
                     .size = w->size,
                     .requested = w->requested,
                     .stream = w->stream,
                     .pool = w->pool};
    rb_describe(got, sizeof got, e);
    rb_describe(expected, sizeof expected, &x);
    CHECK_STR_EQ(got, expected);
    CHECK(e->level == TRACE_LEVEL_SEGMENT && e->source == TRACE_SOURCE_CUPTI);
    CHECK(e->tid == tid && e->stack_id != 0);
}

/* The trace's events are exactly `w[0 .. n)`, all made on this thread. */
static void check_events(const readback *rb, const want *w, size_t n) {
    CHECK_EQ_U64(rb->n_events, n);
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    for (size_t i = 0; i < n && i < rb->n_events; i++)
        check_event(&rb->events[i], &w[i], tid);
}

static void describe_counter(char *out, size_t len, const trace_counter *c) {
    snprintf(out, len, "%s dev %u key 0x%llx value %llu", trace_counter_kind_name(c->kind),
             c->device, (unsigned long long)c->key, (unsigned long long)c->value);
}

/* Replays the trace with the analyzer into rb_dir/DB_NAME; each query's
 * first column must equal its expected value. */
static void check_replay_queries(const char *trace, const char *db_name, const char *const *queries,
                                 const int64_t *expected, size_t n) {
    char err[512], db_path[300];
    rb_path(db_path, sizeof db_path, db_name);
    db_writer *dw = db_writer_open(db_path, DB_EVENTS_TABLE, err, sizeof err);
    CHECK(dw != NULL);
    if (!dw)
        return;
    replay_summary sum;
    int rc = replay_trace(trace, dw, NULL, &sum, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "replay: %s\n", err);
    CHECK(rc == 0);
    CHECK(db_writer_finish(dw, err, sizeof err) == 0);
    sqlite3 *db;
    CHECK(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *st;
        int64_t v = -999;
        if (sqlite3_prepare_v2(db, queries[i], -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
        if (v != expected[i])
            fprintf(stderr, "%s: %lld\n", queries[i], (long long)v);
        CHECK_EQ_U64(v, expected[i]);
    }
    sqlite3_close(db);
}

/* Replays the trace with the analyzer: the events pair up without warnings. */
static void check_replay(const char *trace) {
    const char *const queries[] = {
        "SELECT count(*) FROM warnings",
        "SELECT count(*) FROM events WHERE op = 'alloc_failed'",
        /* live at the end: the pitched segment, managed, one pinned, one async */
        "SELECT count(*) FROM segments WHERE free_ts_ns IS NULL",
        "SELECT reserved_bytes FROM timeline ORDER BY event_id DESC LIMIT 1",
        "SELECT count(*) FROM devices",
    };
    const int64_t expected[] = {0, 3, 4, 10240 + 2 * MiB, 2};
    check_replay_queries(trace, "every.db", queries, expected, sizeof expected / sizeof *expected);
}

static void test_every_cbid(void) {
    char path[300];
    start_session(path, sizeof path);
    call_every_cbid();
    CHECK(rec_session_stop() == 0);
    readback rb;
    CHECK(rb_read(path, &rb) == 0);
    size_t n_want = sizeof every_cbid_events / sizeof every_cbid_events[0];
    check_events(&rb, every_cbid_events, n_want);
    size_t n_counters = sizeof every_cbid_counters / sizeof every_cbid_counters[0];
    CHECK_EQ_U64(rb.n_counters, n_counters);
    for (size_t i = 0; i < n_counters && i < rb.n_counters; i++) {
        char got[200], expected[200];
        describe_counter(got, sizeof got, &rb.counters[i]);
        describe_counter(expected, sizeof expected, &every_cbid_counters[i]);
        CHECK_STR_EQ(got, expected);
    }
    /* Each failure has its driver_free sample at the same timestamp. */
    if (rb.n_events == n_want && rb.n_counters == n_counters) {
        CHECK_EQ_U64(rb.counters[2].ts_ns, rb.events[2].ts_ns);
        CHECK_EQ_U64(rb.counters[11].ts_ns, rb.events[11].ts_ns);
        CHECK_EQ_U64(rb.counters[16].ts_ns, rb.events[17].ts_ns);
    }
    CHECK_EQ_U64(rb.n_devices, 2);
    for (uint32_t i = 0; i < 2; i++) { /* the fake names them and gives device i (80 + i) GiB */
        char name[32];
        snprintf(name, sizeof name, "Fake GPU %u", i);
        CHECK(rb.devices[i].device == i && rb.devices[i].total_bytes == (80 + i) * GiB);
        CHECK_STR_EQ(rb.device_names[i], name);
    }
    CHECK_EQ_U64(rb.end.n_calls, 0); /* nothing here is counted instead of recorded */
    rb_free(&rb);
    check_replay(path);
}

/* ---- calls counted, not recorded ------------------------------------------ */

/* One entry of the END record's counted calls. */
typedef struct want_count {
    const char *name;
    CUpti_CallbackId cbid;
    uint64_t calls, bytes;
} want_count;

/* The END record counts exactly w[0 .. n) (in any order: the recorder's table orders them). */
static void check_counts(const readback *rb, const want_count *w, size_t n) {
    CHECK(rb->has_end);
    CHECK_EQ_U64(rb->end.n_calls, n);
    for (size_t i = 0; i < n; i++) {
        const trace_call_count *got = NULL;
        for (uint32_t j = 0; j < rb->end.n_calls; j++)
            if (!strcmp(rb->end.calls[j].name.ptr, w[i].name))
                got = &rb->end.calls[j];
        if (!got) {
            fprintf(stderr, "END record: no count of %s\n", w[i].name);
            CHECK(got != NULL);
            continue;
        }
        char g[200], e[200];
        snprintf(g, sizeof g, "%s cbid %u: %llu calls, %llu bytes", got->name.ptr, got->call_id,
                 (unsigned long long)got->calls, (unsigned long long)got->bytes);
        snprintf(e, sizeof e, "%s cbid %u: %llu calls, %llu bytes", w[i].name, (unsigned)w[i].cbid,
                 (unsigned long long)w[i].calls, (unsigned long long)w[i].bytes);
        CHECK_STR_EQ(g, e);
    }
}

static void put_ipc(void *p) {
    *((cuIpcOpenMemHandle_v2_params *)p)->pdptr = (CUdeviceptr)out_addr;
}
static void put_imported_ptr(void *p) {
    *((cuMemPoolImportPointer_params *)p)->ptr_out = (CUdeviceptr)out_addr;
}
static void put_alloc_node(void *p) {
    ((cuGraphAddMemAllocNode_params *)p)->nodeParams->dptr = (CUdeviceptr)out_addr;
}
#if CUDA_VERSION >= 12030
static void put_generic_alloc_node(void *p) {
    ((cuGraphAddNode_v2_params *)p)->nodeParams->alloc.dptr = (CUdeviceptr)out_addr;
}
#endif

/* Every call that is counted rather than recorded, fed as CUPTI would: registered host
 * memory is recorded (a pinned_host segment, like cuMemHostAlloc's), the rest is in the END
 * record's counts and nowhere else; a free of counted memory is counted too (not a free of
 * memory never allocated), until a recorded allocation takes the address over. */
static void test_counted_calls(void) {
    enum { IPC = 0x190000000, IMPORTED = 0x1b0000000, GRAPH = 0x1a0000000 };
    rec_count_call(0, 1, "counted while no session records", 1); /* nothing */
    char path[300];
    start_session(path, sizeof path);
    /* cudaHostRegister (v2 and the old entry point); a failed one pinned nothing */
    call(CBID(cuMemHostRegister_v2),
         &(cuMemHostRegister_v2_params){(void *)0x7f0000200000, 1 * MiB, 0}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemHostRegister), &(cuMemHostRegister_params){(void *)0x7f0000400000, 8192, 0},
         NULL, CUDA_SUCCESS);
    call(CBID(cuMemHostRegister_v2),
         &(cuMemHostRegister_v2_params){(void *)0x7f0000200000, 1 * MiB, 0}, NULL,
         CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    call(CBID(cuMemHostUnregister), &(cuMemHostUnregister_params){(void *)0x7f0000200000}, NULL,
         CUDA_SUCCESS);
    /* a peer's buffer through CUDA IPC: opened twice (v2, v1), closed twice */
    CUdeviceptr d = GARBAGE;
    CUipcMemHandle ipc = {{0}};
    out_addr = IPC;
    call(CBID(cuIpcOpenMemHandle_v2), &(cuIpcOpenMemHandle_v2_params){&d, ipc, 1}, put_ipc,
         CUDA_SUCCESS);
    call(CBID(cuIpcOpenMemHandle), &(cuIpcOpenMemHandle_params){&d, ipc, 1}, put_ipc, CUDA_SUCCESS);
    call(CBID(cuIpcOpenMemHandle_v2), &(cuIpcOpenMemHandle_v2_params){&d, ipc, 1}, put_ipc,
         CUDA_ERROR_INVALID_VALUE); /* failed: not counted */
    call(CBID(cuIpcCloseMemHandle), &(cuIpcCloseMemHandle_params){IPC}, NULL, CUDA_SUCCESS);
    call(CBID(cuIpcCloseMemHandle), &(cuIpcCloseMemHandle_params){IPC}, NULL, CUDA_SUCCESS);
    /* a pointer from another process's pool, freed: counted, then the address is free */
    CUmemPoolPtrExportData share = {{0}};
    out_addr = IMPORTED;
    call(CBID(cuMemPoolImportPointer),
         &(cuMemPoolImportPointer_params){&d, (CUmemoryPool)0x7700, &share}, put_imported_ptr,
         CUDA_SUCCESS);
    call(CBID(cuMemFreeAsync), &(cuMemFreeAsync_params){IMPORTED, (CUstream)0x5000}, NULL,
         CUDA_SUCCESS);
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){IMPORTED}, NULL, CUDA_SUCCESS); /* now */
    /* graph memory: an alloc node (8 MiB), its free node, a failed node, two frees outside the
     * graph (after two launches), a trim; then the address is an ordinary allocation's */
    CUDA_MEM_ALLOC_NODE_PARAMS node = {.poolProps = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                                     .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}},
                                       .bytesize = 8 * MiB,
                                       .dptr = GARBAGE};
    CUgraphNode gnode = NULL;
    CUgraph graph = (CUgraph)0x6600;
    out_addr = GRAPH;
    call(CBID(cuGraphAddMemAllocNode),
         &(cuGraphAddMemAllocNode_params){&gnode, graph, NULL, 0, &node}, put_alloc_node,
         CUDA_SUCCESS);
    CUDA_MEM_ALLOC_NODE_PARAMS huge = node;
    huge.bytesize = 1024 * GiB;
    call(CBID(cuGraphAddMemAllocNode),
         &(cuGraphAddMemAllocNode_params){&gnode, graph, NULL, 0, &huge}, put_alloc_node,
         CUDA_ERROR_OUT_OF_MEMORY);
    call(CBID(cuGraphAddMemFreeNode),
         &(cuGraphAddMemFreeNode_params){&gnode, graph, &gnode, 1, GRAPH}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemFreeAsync), &(cuMemFreeAsync_params){GRAPH, (CUstream)0x5000}, NULL,
         CUDA_SUCCESS);
    call(CBID(cuMemFreeAsync), &(cuMemFreeAsync_params){GRAPH, (CUstream)0x5000}, NULL,
         CUDA_SUCCESS);
    call(CBID(cuDeviceGraphMemTrim), &(cuDeviceGraphMemTrim_params){0}, NULL, CUDA_SUCCESS);
    out_addr = GRAPH;
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 4096}, put_dptr, CUDA_SUCCESS);
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){GRAPH}, NULL, CUDA_SUCCESS);
#if CUDA_VERSION >= 12030
    /* memory nodes added the generic way; other node types are no memory call */
    CUgraphNodeParams generic = {.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC};
    generic.alloc.poolProps = node.poolProps;
    generic.alloc.bytesize = 2 * MiB;
    out_addr = GRAPH + 16 * MiB;
    call(CBID(cuGraphAddNode_v2),
         &(cuGraphAddNode_v2_params){&gnode, graph, NULL, NULL, 0, &generic},
         put_generic_alloc_node, CUDA_SUCCESS);
    CUgraphNodeParams kernel = {.type = CU_GRAPH_NODE_TYPE_KERNEL};
    call(CBID(cuGraphAddNode_v2),
         &(cuGraphAddNode_v2_params){&gnode, graph, NULL, NULL, 0, &kernel}, NULL, CUDA_SUCCESS);
    CUgraphNodeParams gfree = {.type = CU_GRAPH_NODE_TYPE_MEM_FREE};
    gfree.free.dptr = GRAPH + 16 * MiB;
    call(CBID(cuGraphAddNode), &(cuGraphAddNode_params){&gnode, graph, NULL, 0, &gfree}, NULL,
         CUDA_SUCCESS);
#endif
#if CUDA_VERSION >= 12010
    /* NVLS: this process's memory bound to a multicast object, and unbound */
    call(CBID(cuMulticastBindMem),
         &(cuMulticastBindMem_params){0xf00, 0, HANDLE_DEV0, 0, 2 * MiB, 0}, NULL, CUDA_SUCCESS);
    call(CBID(cuMulticastBindAddr),
         &(cuMulticastBindAddr_params){0xf00, 2 * MiB, 0x300000000, 4 * MiB, 0}, NULL,
         CUDA_SUCCESS);
    call(CBID(cuMulticastUnbind), &(cuMulticastUnbind_params){0xf00, 0, 0, 6 * MiB}, NULL,
         CUDA_SUCCESS);
#endif
    CHECK(rec_session_stop() == 0);

    static const want events[] = {
        {TRACE_OP_ALLOC, TRACE_KIND_PINNED_HOST, 0, 0x7f0000200000, 1 * MiB, 1 * MiB, 0, 0},
        {TRACE_OP_ALLOC, TRACE_KIND_PINNED_HOST, 0, 0x7f0000400000, 8192, 8192, 0, 0},
        {TRACE_OP_FREE, TRACE_KIND_PINNED_HOST, 0, 0x7f0000200000, 0, 0, 0, 0},
        {TRACE_OP_FREE, TRACE_KIND_DEVICE, 0, IMPORTED, 0, 0, 0, 0}, /* the import is over */
        {TRACE_OP_ALLOC, TRACE_KIND_DEVICE, 0, GRAPH, 4096, 4096, 0, 0},
        {TRACE_OP_FREE, TRACE_KIND_DEVICE, 0, GRAPH, 0, 0, 0, 0},
    };
    static const want_count counts[] = {
        {"cuIpcOpenMemHandle", CBID(cuIpcOpenMemHandle), 1, 0},
        {"cuIpcOpenMemHandle_v2", CBID(cuIpcOpenMemHandle_v2), 1, 0},
        {"cuIpcCloseMemHandle", CBID(cuIpcCloseMemHandle), 2, 0},
        {"cuMemPoolImportPointer", CBID(cuMemPoolImportPointer), 1, 0},
        {"cuMemFreeAsync", CBID(cuMemFreeAsync), 3, 16 * MiB}, /* imported, graph twice */
        {"cuGraphAddMemAllocNode", CBID(cuGraphAddMemAllocNode), 1, 8 * MiB},
        {"cuGraphAddMemFreeNode", CBID(cuGraphAddMemFreeNode), 1, 8 * MiB},
        {"cuDeviceGraphMemTrim", CBID(cuDeviceGraphMemTrim), 1, 0},
#if CUDA_VERSION >= 12010
        {"cuMulticastBindMem", CBID(cuMulticastBindMem), 1, 2 * MiB},
        {"cuMulticastBindAddr", CBID(cuMulticastBindAddr), 1, 4 * MiB},
        {"cuMulticastUnbind", CBID(cuMulticastUnbind), 1, 6 * MiB},
#endif
#if CUDA_VERSION >= 12030
        {"cuGraphAddNode", CBID(cuGraphAddNode), 1, 2 * MiB},
        {"cuGraphAddNode_v2", CBID(cuGraphAddNode_v2), 1, 2 * MiB},
#endif
    };
    readback rb;
    CHECK(rb_read(path, &rb) == 0);
    check_events(&rb, events, sizeof events / sizeof events[0]);
    check_counts(&rb, counts, sizeof counts / sizeof counts[0]);
    rb_free(&rb);

    /* the replay: the one free of unknown memory is the stray one above (no free of counted
     * memory is), host memory is no device memory, the counts are kept */
    const char *const queries[] = {
        "SELECT count(*) FROM warnings",
        "SELECT count(*) FROM warnings WHERE code = 'free_unknown' AND message LIKE '%1b0000000%'",
        "SELECT max(reserved_bytes) FROM timeline",
        "SELECT count(*) FROM segments WHERE kind = 'pinned_host' AND free_ts_ns IS NULL",
        "SELECT count(*) FROM unrecorded_calls",
        "SELECT calls * 1000 + bytes / 1048576 FROM unrecorded_calls WHERE name = 'cuMemFreeAsync'",
        "SELECT call_id FROM unrecorded_calls WHERE name = 'cuMemFreeAsync'",
        "SELECT bytes FROM unrecorded_calls WHERE name = 'cuGraphAddMemAllocNode'",
    };
    const int64_t expected[] = {
        1,      1, 4096, 1, (int64_t)(sizeof counts / sizeof counts[0]), 3016, CBID(cuMemFreeAsync),
        8 * MiB};
    check_replay_queries(path, "counted.db", queries, expected, sizeof expected / sizeof *expected);
}

/* ---- NCCL's cuMem buffers ------------------------------------------------- */

static void put_retained(void *p) {
    *((cuMemRetainAllocationHandle_params *)p)->handle = (CUmemGenericAllocationHandle)out_addr;
}
static void put_imported(void *p) {
    *((cuMemImportFromShareableHandle_params *)p)->handle = (CUmemGenericAllocationHandle)out_addr;
}
static void put_multicast(void *p) {
    *((cuMulticastCreate_params *)p)->mcHandle = (CUmemGenericAllocationHandle)out_addr;
}

static void reserve(uint64_t addr, uint64_t size) {
    CUdeviceptr d = GARBAGE;
    out_addr = addr;
    call(CBID(cuMemAddressReserve), &(cuMemAddressReserve_params){&d, size, 0, 0, 0}, put_dptr,
         CUDA_SUCCESS);
}

static void map(uint64_t addr, uint64_t size, CUmemGenericAllocationHandle h) {
    call(CBID(cuMemMap), &(cuMemMap_params){addr, size, 0, h, 0}, NULL, CUDA_SUCCESS);
}

/* ncclCuMemFree: the handle back from the address, released twice (the
 * retain's reference and the allocation's), the range unmapped in between. */
static void nccl_cumem_free(uint64_t addr, uint64_t size, CUmemGenericAllocationHandle h) {
    CUmemGenericAllocationHandle got = GARBAGE;
    out_addr = h;
    call(CBID(cuMemRetainAllocationHandle),
         &(cuMemRetainAllocationHandle_params){&got, (void *)(uintptr_t)addr}, put_retained,
         CUDA_SUCCESS);
    call(CBID(cuMemRelease), &(cuMemRelease_params){h}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemUnmap), &(cuMemUnmap_params){addr, size}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemRelease), &(cuMemRelease_params){h}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemAddressFree), &(cuMemAddressFree_params){addr, size}, NULL, CUDA_SUCCESS);
}

/* Rank 0 of a two-GPU job as NCCL >= 2.19 runs it: its own buffer
 * (ncclCuMemAlloc: create, reserve, map), rank 1's buffer imported and
 * mapped, an NVLS multicast object mapped, a buffer released right after
 * its map (the memory stays until the unmap), then everything freed. The
 * trace must charge device 0 with what rank 0 created, nothing else, and
 * never mention device 1. */
static void test_nccl_cumem(void) {
    enum { OWN = 0xe00, EARLY = 0xe40, MC = 0xf00 };
    const uint64_t a_own = 0x340000000, a_peer = 0x350000000, a_mc = 0x360000000,
                   a_early = 0x370000000;
    char path[300];
    start_session(path, sizeof path);
    CUmemGenericAllocationHandle h = GARBAGE;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    out_addr = OWN;
    call(CBID(cuMemCreate), &(cuMemCreate_params){&h, 4 * MiB, &prop, 0}, put_handle, CUDA_SUCCESS);
    reserve(a_own, 4 * MiB);
    map(a_own, 4 * MiB, OWN);
    /* the peer's buffer, exported by rank 1 */
    out_addr = HANDLE_PEER;
    call(CBID(cuMemImportFromShareableHandle),
         &(cuMemImportFromShareableHandle_params){&h, (void *)(uintptr_t)42,
                                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR},
         put_imported, CUDA_SUCCESS);
    reserve(a_peer, 4 * MiB);
    map(a_peer, 4 * MiB, HANDLE_PEER);
    /* NVLS: a multicast object bound to memory created elsewhere */
    CUmulticastObjectProp mc_prop = {.numDevices = 2, .size = 2 * MiB};
    out_addr = MC;
    call(CBID(cuMulticastCreate), &(cuMulticastCreate_params){&h, &mc_prop}, put_multicast,
         CUDA_SUCCESS);
    reserve(a_mc, 2 * MiB);
    map(a_mc, 2 * MiB, MC);
    /* released at once, as the CUDA samples do: alive until its unmap */
    out_addr = EARLY;
    call(CBID(cuMemCreate), &(cuMemCreate_params){&h, 2 * MiB, &prop, 0}, put_handle, CUDA_SUCCESS);
    reserve(a_early, 2 * MiB);
    map(a_early, 2 * MiB, EARLY);
    call(CBID(cuMemRelease), &(cuMemRelease_params){EARLY}, NULL, CUDA_SUCCESS);

    nccl_cumem_free(a_own, 4 * MiB, OWN);
    nccl_cumem_free(a_peer, 4 * MiB, HANDLE_PEER);
    call(CBID(cuMemUnmap), &(cuMemUnmap_params){a_mc, 2 * MiB}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemRelease), &(cuMemRelease_params){MC}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemAddressFree), &(cuMemAddressFree_params){a_mc, 2 * MiB}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemUnmap), &(cuMemUnmap_params){a_early, 2 * MiB}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemAddressFree), &(cuMemAddressFree_params){a_early, 2 * MiB}, NULL, CUDA_SUCCESS);
    CHECK(rec_session_stop() == 0);

    static const want events[] = {
        {TRACE_OP_PHYS_CREATE, TRACE_KIND_DEVICE, 0, OWN, 4 * MiB, 4 * MiB, 0, 0},
        {TRACE_OP_VA_RESERVE, TRACE_KIND_DEVICE, 0, 0x340000000, 4 * MiB, 4 * MiB, 0, 0},
        {TRACE_OP_MAP, TRACE_KIND_DEVICE, 0, 0x340000000, 4 * MiB, 4 * MiB, 0, 0},
        {TRACE_OP_VA_RESERVE, TRACE_KIND_DEVICE, 0, 0x350000000, 4 * MiB, 4 * MiB, 0, 0},
        {TRACE_OP_VA_RESERVE, TRACE_KIND_DEVICE, 0, 0x360000000, 2 * MiB, 2 * MiB, 0, 0},
        {TRACE_OP_PHYS_CREATE, TRACE_KIND_DEVICE, 0, EARLY, 2 * MiB, 2 * MiB, 0, 0},
        {TRACE_OP_VA_RESERVE, TRACE_KIND_DEVICE, 0, 0x370000000, 2 * MiB, 2 * MiB, 0, 0},
        {TRACE_OP_MAP, TRACE_KIND_DEVICE, 0, 0x370000000, 2 * MiB, 2 * MiB, 0, 0},
        {TRACE_OP_UNMAP, TRACE_KIND_DEVICE, 0, 0x340000000, 4 * MiB, 4 * MiB, 0, 0},
        {TRACE_OP_PHYS_RELEASE, TRACE_KIND_DEVICE, 0, OWN, 0, 0, 0, 0}, /* the second release */
        {TRACE_OP_VA_FREE, TRACE_KIND_DEVICE, 0, 0x340000000, 4 * MiB, 4 * MiB, 0, 0},
        {TRACE_OP_VA_FREE, TRACE_KIND_DEVICE, 0, 0x350000000, 4 * MiB, 4 * MiB, 0, 0},
        {TRACE_OP_VA_FREE, TRACE_KIND_DEVICE, 0, 0x360000000, 2 * MiB, 2 * MiB, 0, 0},
        {TRACE_OP_UNMAP, TRACE_KIND_DEVICE, 0, 0x370000000, 2 * MiB, 2 * MiB, 0, 0},
        {TRACE_OP_PHYS_RELEASE, TRACE_KIND_DEVICE, 0, EARLY, 0, 0, 0, 0}, /* with its unmap */
        {TRACE_OP_VA_FREE, TRACE_KIND_DEVICE, 0, 0x370000000, 2 * MiB, 2 * MiB, 0, 0},
    };
    readback rb;
    CHECK(rb_read(path, &rb) == 0);
    size_t n_want = sizeof events / sizeof events[0];
    check_events(&rb, events, n_want);
    CHECK_EQ_U64(rb.n_devices, 1);
    /* what was left out is counted: the import, the multicast object, their maps and unmaps
     * (their releases move no memory: neither recorded nor counted) */
    static const want_count counts[] = {
        {"cuMemImportFromShareableHandle", CBID(cuMemImportFromShareableHandle), 1, 0},
        {"cuMemMap", CBID(cuMemMap), 2, 6 * MiB},
        {"cuMemUnmap", CBID(cuMemUnmap), 2, 6 * MiB},
        {"cuMulticastCreate", CBID(cuMulticastCreate), 1, 2 * MiB},
    };
    check_counts(&rb, counts, sizeof counts / sizeof counts[0]);
    if (rb.n_events == n_want) /* the deferred release is the unmap's moment */
        CHECK_EQ_U64(rb.events[14].ts_ns, rb.events[13].ts_ns);
    rb_free(&rb);

    const char *const queries[] = {
        "SELECT count(*) FROM warnings",
        "SELECT max(reserved_bytes) FROM timeline WHERE device = 0", /* what rank 0 created */
        "SELECT reserved_bytes FROM timeline WHERE device = 0 ORDER BY event_id DESC LIMIT 1",
        "SELECT count(*) FROM events WHERE device <> 0", /* no phantom peer memory */
        "SELECT count(*) FROM segments WHERE device <> 0",
        "SELECT reserved_bytes FROM timeline WHERE device = 0 AND event_id = 9", /* both live */
    };
    const int64_t expected[] = {0, 6 * MiB, 0, 0, 0, 6 * MiB};
    check_replay_queries(path, "nccl.db", queries, expected, sizeof expected / sizeof *expected);
}

/* Expandable segments as PyTorch grows one: a 2 MiB handle per page, mapped at page-aligned
 * addresses of one reservation, each released right after its map (alive until its unmap),
 * then unmapped page by page. Every mapping is tracked however many there are: the tables'
 * slots come from the top bits of the hash (aligned addresses share their low bits: with the
 * low bits the first 64 mappings were all the table held, and a later page's release was
 * recorded at once instead of with its unmap). */
static void test_many_mappings(void) {
    enum { PAGES = 300 };
    const uint64_t base = 0x400000000, handle0 = 0x10000;
    char path[300];
    start_session(path, sizeof path);
    CUmemGenericAllocationHandle h = GARBAGE;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    reserve(base, PAGES * 2 * MiB);
    for (uint64_t i = 0; i < PAGES; i++) {
        out_addr = handle0 + 16 * i;
        call(CBID(cuMemCreate), &(cuMemCreate_params){&h, 2 * MiB, &prop, 0}, put_handle,
             CUDA_SUCCESS);
        map(base + i * 2 * MiB, 2 * MiB, handle0 + 16 * i);
        call(CBID(cuMemRelease), &(cuMemRelease_params){handle0 + 16 * i}, NULL, CUDA_SUCCESS);
    }
    for (uint64_t i = 0; i < PAGES; i++)
        call(CBID(cuMemUnmap), &(cuMemUnmap_params){base + i * 2 * MiB, 2 * MiB}, NULL,
             CUDA_SUCCESS);
    CHECK(rec_session_stop() == 0);

    readback rb;
    CHECK(rb_read(path, &rb) == 0);
    size_t released_with_unmap = 0, released_early = 0;
    for (size_t i = 0; i < rb.n_events; i++) {
        if (rb.events[i].op != TRACE_OP_PHYS_RELEASE)
            continue;
        const trace_event *before = i ? &rb.events[i - 1] : NULL;
        if (before && before->op == TRACE_OP_UNMAP &&
            rb.events[i].addr == handle0 + 16 * ((before->addr - base) / (2 * MiB)))
            released_with_unmap++;
        else
            released_early++;
    }
    CHECK_EQ_U64(released_with_unmap, PAGES);
    CHECK_EQ_U64(released_early, 0);
    rb_free(&rb);
}

/* ---- nesting, unpaired callbacks, timestamps ------------------------------ */

static void *entry_without_exit(void *params) {
    feed(CBID(cuMemAlloc_v2), CUPTI_API_ENTER, params, CUDA_SUCCESS, 9000);
    return NULL;
}

static void test_pairing(void) {
    char path[300];
    start_session(path, sizeof path);
    /* cudaMallocAsync reaching the driver twice: only the outer call counts. */
    CUdeviceptr outer = GARBAGE, inner = GARBAGE;
    cuMemAllocAsync_params a = {&outer, 1 * MiB, (CUstream)0x5000};
    cuMemAllocFromPoolAsync_params b = {&inner, 1 * MiB, POOL_DEV0, (CUstream)0x5000};
    set_pool(POOL_DEV0, 0, 0);
    feed(CBID(cuMemAllocAsync), CUPTI_API_ENTER, &a, CUDA_SUCCESS, 100);
    feed(CBID(cuMemAllocFromPoolAsync), CUPTI_API_ENTER, &b, CUDA_SUCCESS, 101);
    inner = 0x180000000;
    feed(CBID(cuMemAllocFromPoolAsync), CUPTI_API_EXIT, &b, CUDA_SUCCESS, 101);
    outer = 0x180000000;
    feed(CBID(cuMemAllocAsync), CUPTI_API_EXIT, &a, CUDA_SUCCESS, 100);
    /* An entry whose exit never comes (another thread) and an exit without entry. */
    CUdeviceptr d = GARBAGE;
    cuMemAlloc_v2_params alloc = {&d, 4096};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, entry_without_exit, &alloc) == 0);
    pthread_join(t, NULL);
    cuMemFree_v2_params stray = {0x100000000};
    feed(CBID(cuMemFree_v2), CUPTI_API_EXIT, &stray, CUDA_SUCCESS, 555);
    /* Another domain, an unhandled cbid: ignored. */
    CUpti_CallbackData cd = {.functionParams = &stray};
    rec_cupti_callback(NULL, CUPTI_CB_DOMAIN_RUNTIME_API, CBID(cuMemFree_v2), &cd);
    feed(CBID(cuMemGetInfo_v2), CUPTI_API_ENTER, &stray, CUDA_SUCCESS, 556);
    feed(CBID(cuMemGetInfo_v2), CUPTI_API_EXIT, &stray, CUDA_SUCCESS, 556);
    /* Allocations are stamped at their exit, frees at their entry. */
    feed(CBID(cuMemAlloc_v2), CUPTI_API_ENTER, &alloc, CUDA_SUCCESS, 200);
    uint64_t alloc_mid = rec_clock_ns();
    d = 0x100000000;
    feed(CBID(cuMemAlloc_v2), CUPTI_API_EXIT, &alloc, CUDA_SUCCESS, 200);
    cuMemFree_v2_params free_p = {0x100000000};
    feed(CBID(cuMemFree_v2), CUPTI_API_ENTER, &free_p, CUDA_SUCCESS, 201);
    uint64_t free_mid = rec_clock_ns();
    feed(CBID(cuMemFree_v2), CUPTI_API_EXIT, &free_p, CUDA_SUCCESS, 201);
    /* An entry left open on this thread is forgotten by the next session's reset. */
    feed(CBID(cuMemAlloc_v2), CUPTI_API_ENTER, &alloc, CUDA_SUCCESS, 300);
    CHECK(rec_session_stop() == 0);
    readback rb;
    CHECK(rb_read(path, &rb) == 0);
    CHECK_EQ_U64(rb.n_events, 3);
    if (rb.n_events == 3) {
        CHECK_EQ_U64(rb.events[0].op, TRACE_OP_ALLOC);
        CHECK_EQ_U64(rb.events[0].pool, 0x7000); /* the outer call: the device's pool */
        CHECK_EQ_U64(rb.events[0].addr, 0x180000000);
        CHECK_EQ_U64(rb.events[1].op, TRACE_OP_ALLOC);
        CHECK(rb.events[1].ts_ns > alloc_mid);
        CHECK_EQ_U64(rb.events[2].op, TRACE_OP_FREE);
        CHECK(rb.events[2].ts_ns < free_mid);
    }
    rb_free(&rb);

    start_session(path, sizeof path);
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 8192}, put_dptr, CUDA_SUCCESS);
    CHECK(rec_session_stop() == 0);
    CHECK(rb_read(path, &rb) == 0);
    CHECK_EQ_U64(rb.n_events, 1);
    CHECK_EQ_U64(rb.events[0].size, 8192);
    rb_free(&rb);
}

/* An exit reported under another correlation id than its entry closes the
 * thread's open call: the thread's later calls are recorded again. */
static void test_correlation_mismatch(void) {
    char path[300];
    start_session(path, sizeof path);
    CUdeviceptr d = GARBAGE;
    cuMemAlloc_v2_params alloc = {&d, 4096};
    feed(CBID(cuMemAlloc_v2), CUPTI_API_ENTER, &alloc, CUDA_SUCCESS, 700);
    d = 0x100000000;
    feed(CBID(cuMemAlloc_v2), CUPTI_API_EXIT, &alloc, CUDA_SUCCESS, 701); /* its own exit */
    cuMemFree_v2_params free_p = {0x100000000};
    feed(CBID(cuMemFree_v2), CUPTI_API_ENTER, &free_p, CUDA_SUCCESS, 702);
    feed(CBID(cuMemAlloc_v2), CUPTI_API_EXIT, &alloc, CUDA_SUCCESS, 703); /* not even its cbid */
    out_addr = 0x100100000;
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 8192}, put_dptr, CUDA_SUCCESS);
    /* Nesting still holds: the inner call's exit does not close the outer one. */
    CUdeviceptr outer = GARBAGE, inner = GARBAGE;
    cuMemAllocAsync_params a = {&outer, 1 * MiB, (CUstream)0x5000};
    cuMemAllocFromPoolAsync_params b = {&inner, 1 * MiB, POOL_DEV0, (CUstream)0x5000};
    feed(CBID(cuMemAllocAsync), CUPTI_API_ENTER, &a, CUDA_SUCCESS, 710);
    feed(CBID(cuMemAllocFromPoolAsync), CUPTI_API_ENTER, &b, CUDA_SUCCESS, 711);
    inner = 0x180000000;
    feed(CBID(cuMemAllocFromPoolAsync), CUPTI_API_EXIT, &b, CUDA_SUCCESS, 711);
    outer = 0x180000000;
    feed(CBID(cuMemAllocAsync), CUPTI_API_EXIT, &a, CUDA_SUCCESS, 712); /* mismatched too */
    CHECK(rec_session_stop() == 0);
    readback rb;
    CHECK(rb_read(path, &rb) == 0);
    CHECK_EQ_U64(rb.n_events, 3);
    if (rb.n_events == 3) {
        CHECK(rb.events[0].op == TRACE_OP_ALLOC && rb.events[0].size == 4096);
        CHECK(rb.events[1].op == TRACE_OP_ALLOC && rb.events[1].size == 8192);
        CHECK(rb.events[2].op == TRACE_OP_ALLOC && rb.events[2].addr == 0x180000000 &&
              rb.events[2].pool == 0x7000);
    }
    rb_free(&rb);
}

/* ---- stacks --------------------------------------------------------------- */

/* The stack of an event starts at the function that made the driver call:
 * its parent is the same as that of a stack taken right there. */
static __attribute__((noinline)) void alloc_with_reference(void) {
    uint32_t reference = rec_stack_here(0);
    CUdeviceptr d = GARBAGE;
    out_addr = 0x100000000;
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 4096}, put_dptr, CUDA_SUCCESS);
    trace_event ev = {.addr = 0x55, .size = 1, .requested = 1, .stack_id = reference};
    ev.level = TRACE_LEVEL_BLOCK, ev.source = TRACE_SOURCE_MEMREC;
    rec_emit_event(&ev);
    __asm__ __volatile__("" ::: "memory");
}

static void test_stack_skip(void) {
    char path[300];
    start_session(path, sizeof path);
    alloc_with_reference();
    CHECK(rec_session_stop() == 0);
    readback rb;
    CHECK(rb_read(path, &rb) == 0);
    CHECK_EQ_U64(rb.n_events, 2);
    if (rb.n_events != 2) {
        rb_free(&rb);
        return;
    }
    uint32_t got = rb.events[0].stack_id, reference = rb.events[1].stack_id;
    int valid = got != 0 && reference != 0 && got < 256 && reference < 256;
    CHECK(valid);
    if (valid) {
        /* event: feed <- call <- alloc_with_reference <- test_stack_skip; reference:
         * alloc_with_reference <- test_stack_skip. The event's third ancestor is the
         * reference's parent. */
        uint32_t up = rb.stacks[rb.stacks[rb.stacks[got].parent_id].parent_id].parent_id;
        CHECK_EQ_U64(up, rb.stacks[reference].parent_id);
    }
    rb_free(&rb);
}

/* cuMemFree frees managed memory too: the free must say "managed" as its
 * alloc did, or the analyzer would subtract it from device memory. */
static void test_managed_free(void) {
    char path[300];
    start_session(path, sizeof path);
    CUdeviceptr d = GARBAGE;
    out_addr = 0x100200000;
    call(CBID(cuMemAllocManaged), &(cuMemAllocManaged_params){&d, 4096, CU_MEM_ATTACH_GLOBAL},
         put_dptr, CUDA_SUCCESS);
    out_addr = 0x100000000;
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 4096}, put_dptr, CUDA_SUCCESS);
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){0x100200000}, NULL, CUDA_SUCCESS);
    call(CBID(cuMemFree_v2), &(cuMemFree_v2_params){0x100000000}, NULL, CUDA_SUCCESS);
    CHECK(rec_session_stop() == 0);
    readback rb;
    CHECK(rb_read(path, &rb) == 0);
    CHECK_EQ_U64(rb.n_events, 4);
    if (rb.n_events == 4) {
        CHECK(rb.events[0].kind == TRACE_KIND_MANAGED && rb.events[2].kind == TRACE_KIND_MANAGED);
        CHECK(rb.events[2].op == TRACE_OP_FREE && rb.events[2].addr == 0x100200000);
        CHECK(rb.events[1].kind == TRACE_KIND_DEVICE && rb.events[3].kind == TRACE_KIND_DEVICE);
    }
    rb_free(&rb);
}

/* ---- attaching without a driver ------------------------------------------- */

static void test_attach_without_driver(void) {
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!driver)
        driver = dlopen("libcuda.so.1", RTLD_NOW);
    if (driver) {
        fprintf(stderr, "libcuda.so.1 exists here: the no-driver case is not checked\n");
        return;
    }
    char log[300];
    rb_path(log, sizeof log, "stderr.txt");
    int saved = dup(STDERR_FILENO), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && fd >= 0 && dup2(fd, STDERR_FILENO) >= 0);
    int first = rec_cupti_attach(), second = rec_cupti_attach();
    dup2(saved, STDERR_FILENO);
    close(fd);
    close(saved);
    CHECK(first == -1 && second == -1);
    char text[1024] = "";
    fd = open(log, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : 0;
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    int lines = 0;
    for (char *p = text; (p = strstr(p, "memrec: ")); p++)
        lines++;
    CHECK_EQ_U64(lines, 1);
    CHECK(strstr(text, "no CUDA driver") && strstr(text, "unrecorded"));
    unlink(log);
}

/* Allocation calls that fail with an error other than out of memory were refused, not short
 * of memory: no alloc_failed (which the analyzer reads as the device running out), but a count
 * "<call> refused" in the END record with the bytes asked for. As PyTorch 2.11's expandable
 * segments begin (nvidia_h200_torch_expandable.log): a cuMemCreate that fails with
 * CUDA_ERROR_NOT_PERMITTED, then the same that succeeds. Out of memory is still alloc_failed. */
static void test_refused_allocations(void) {
    char path[300];
    start_session(path, sizeof path);
    CUmemGenericAllocationHandle handle = GARBAGE;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    call(CBID(cuMemCreate), &(cuMemCreate_params){&handle, 2 * MiB, &prop, 0}, put_handle,
         CUDA_ERROR_NOT_PERMITTED);
    out_addr = HANDLE_DEV0;
    call(CBID(cuMemCreate), &(cuMemCreate_params){&handle, 2 * MiB, &prop, 0}, put_handle,
         CUDA_SUCCESS);
    CUdeviceptr d = GARBAGE;
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 0}, put_dptr, CUDA_ERROR_INVALID_VALUE);
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 3 * MiB}, put_dptr,
         CUDA_ERROR_NOT_SUPPORTED);
    fake_free = 1 * GiB;
    call(CBID(cuMemAlloc_v2), &(cuMemAlloc_v2_params){&d, 80 * GiB}, put_dptr,
         CUDA_ERROR_OUT_OF_MEMORY);
    CHECK(rec_session_stop() == 0);
    readback rb;
    CHECK(rb_read(path, &rb) == 0);
    static const want events[] = {
        {TRACE_OP_PHYS_CREATE, TRACE_KIND_DEVICE, 0, HANDLE_DEV0, 2 * MiB, 2 * MiB, 0, 0},
        {TRACE_OP_ALLOC_FAILED, TRACE_KIND_DEVICE, 0, 0, 80 * GiB, 80 * GiB, 0, 0},
    };
    check_events(&rb, events, sizeof events / sizeof events[0]);
    static const want_count counts[] = {
        {"cuMemCreate refused", CBID(cuMemCreate), 1, 2 * MiB},
        {"cuMemAlloc_v2 refused", CBID(cuMemAlloc_v2), 2, 3 * MiB},
    };
    check_counts(&rb, counts, sizeof counts / sizeof counts[0]);
    rb_free(&rb);
    const char *const queries[] = {"SELECT count(*) FROM warnings",
                                   "SELECT count(*) FROM events WHERE op = 'alloc_failed'"};
    const int64_t expected[] = {0, 1};
    check_replay_queries(path, "refused.db", queries, expected, 2);
    /* a refusal's slot is its own: no refusable call is also one counted instead of recorded
     * (the END record names each call_id once) */
    const CUpti_CallbackId *ids;
    size_t n = rec_call_cbids(&ids), refusable = 0;
    for (size_t i = 0; i < n; i++) {
        const char *a = NULL, *b = NULL;
        rec_call_class cls = rec_call_class_of(ids[i]);
        int allocates = cls == REC_CALL_ALLOC || cls == REC_CALL_PHYS_CREATE;
        CHECK((rec_call_refused_slot(ids[i], &a) >= 0) == allocates); /* each has a slot */
        if (!allocates)
            continue;
        refusable++;
        CHECK(rec_call_count_slot(ids[i], &b) < 0);
    }
    CHECK_EQ_U64(refusable, 10); /* the nine REC_CALL_ALLOC cbids and cuMemCreate */
}

int main(void) {
    rb_tmpdir("test_rec_cupti");
    test_attach_without_driver(); /* first: before a quiet session silences warnings */
    test_every_cbid();
    test_pairing();
    test_correlation_mismatch();
    test_stack_skip();
    test_managed_free();
    test_nccl_cumem();
    test_many_mappings();
    test_counted_calls();
    test_refused_allocations();
    rec_cupti_set_driver_for_test(NULL);
    return rb_finish("test_rec_cupti");
}
