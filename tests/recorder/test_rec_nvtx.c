/* test_rec_nvtx.c — the NVTX injection through NVTX's own loader: this
 * program includes the real NVTX headers (their implementation is compiled
 * in here, as in any NVTX-annotated program) and calls the NVTX API; the
 * recorder's handlers must turn every call into exactly the expected trace
 * markers and block events.
 *
 * Two modes, one process each (NVTX initialises once per process):
 *   test_rec_nvtx              the headers' static-injection hook points at
 *                              the InitializeInjectionNvtx2 linked into this
 *                              program; a session records; the trace is read
 *                              back and checked record by record.
 *   test_rec_nvtx dlopen LIB   NVTX_INJECTION64_PATH names the built
 *                              libmemrec.so: the loader must find both entry
 *                              points there (the exports) and the library's
 *                              handlers must answer (depths, ids, handles). */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include "check.h"
#include "rec_api.h"
#include "rec_core.h"
#include "rec_nvtx.h"
#include "rec_readback.h"
#include "trace_format.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <wchar.h>

#define HEAP1 0x7f0000000000ull /* the resolver puts [HEAP1, +1 GiB) on device 2 */
#define HEAP2 (HEAP1 + (1ull << 20))
#define LONELY 0x10000ull /* outside: the resolver fails, device 0 */

/* ---- expectations -------------------------------------------------------- */

/* Threads' buffers are drained in turn: another thread's markers are
 * checked apart from this thread's sequence, which expect_marker walks. */
static size_t next_marker, markers_expected;

/* This thread's next marker is exactly this (domain "" = the default domain,
 * name "" = none). */
static void expect_marker(const readback *rb, unsigned kind, const char *domain, const char *name,
                          uint64_t range_id, int64_t value) {
    while (next_marker < rb->n_markers && rb->markers[next_marker].tid != rec_thread_id())
        next_marker++;
    size_t i = next_marker++;
    markers_expected++;
    if (i >= rb->n_markers) {
        fprintf(stderr, "marker %zu (%s) missing\n", i, name);
        check_failures++;
        return;
    }
    const trace_marker *m = &rb->markers[i];
    if (m->kind != kind || strcmp(rb->marker_domains[i], domain) ||
        strcmp(rb->marker_names[i], name) || m->range_id != range_id || m->value != value ||
        m->tid != rec_thread_id()) {
        fprintf(stderr,
                "marker %zu: got kind %u domain \"%s\" name \"%s\" range %" PRIu64 " value %" PRId64
                " tid %u; want %u \"%s\" \"%s\" %" PRIu64 " %" PRId64 "\n",
                i, m->kind, rb->marker_domains[i], rb->marker_names[i], m->range_id, m->value,
                m->tid, kind, domain, name, range_id, value);
        check_failures++;
    }
}

static size_t next_event;

static void expect_event(const readback *rb, unsigned op, uint64_t addr, uint64_t size,
                         uint32_t device) {
    size_t i = next_event++;
    if (i >= rb->n_events) {
        fprintf(stderr, "event %zu (%s 0x%" PRIx64 ") missing\n", i, trace_op_name(op), addr);
        check_failures++;
        return;
    }
    const trace_event *e = &rb->events[i];
    if (e->op != op || e->addr != addr || e->size != size || e->requested != size ||
        e->device != device || e->level != TRACE_LEVEL_BLOCK || e->kind != TRACE_KIND_DEVICE ||
        e->source != TRACE_SOURCE_NVTX || e->stack_id == 0 || e->tid != rec_thread_id()) {
        fprintf(stderr,
                "event %zu: got %s 0x%" PRIx64 " +%" PRIu64 " (req %" PRIu64 ") dev %u level %u "
                "kind %u source %u stack %u; want %s 0x%" PRIx64 " +%" PRIu64 " dev %u\n",
                i, trace_op_name(e->op), e->addr, e->size, e->requested, e->device, e->level,
                e->kind, e->source, e->stack_id, trace_op_name(op), addr, size, device);
        check_failures++;
    }
}

/* ---- the resolver: a fake driver ------------------------------------------ */

static int resolver_calls;

static int fake_resolver(uint64_t addr, rec_region_place *out) {
    resolver_calls++;
    if (addr < HEAP1 || addr >= HEAP1 + (1ull << 30))
        return -1;
    out->device = 2;
    out->kind = TRACE_KIND_DEVICE;
    return 0;
}

/* ---- NVTX calls ----------------------------------------------------------- */

static nvtxEventAttributes_t ascii_attr(const char *text) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = text;
    return a;
}

static void *other_thread_push(void *unused) {
    (void)unused;
    /* Depths are per thread: main holds one range open meanwhile. */
    intptr_t ok = nvtxRangePushA("other thread") == 0 && nvtxRangePop() == 0;
    return (void *)ok;
}

static nvtxMemHeapHandle_t register_heap(uint64_t base, size_t size) {
    nvtxMemVirtualRangeDesc_t range = {size, (const void *)(uintptr_t)base};
    nvtxMemHeapDesc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.extCompatID = NVTX_EXT_COMPATID_MEM;
    desc.structSize = sizeof desc;
    desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    desc.typeSpecificDescSize = sizeof range;
    desc.typeSpecificDesc = &range;
    return nvtxMemHeapRegister(NULL, &desc);
}

static void register_regions(nvtxMemHeapHandle_t heap, const nvtxMemVirtualRangeDesc_t *ranges,
                             size_t count, nvtxMemRegionHandle_t *handles) {
    nvtxMemRegionsRegisterBatch_t batch;
    memset(&batch, 0, sizeof batch);
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof batch;
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.heap = heap;
    batch.regionCount = count;
    batch.regionDescElementSize = sizeof *ranges;
    batch.regionDescElements = ranges;
    batch.regionHandleElementsOut = handles;
    nvtxMemRegionsRegister(NULL, &batch);
}

static void unregister_region(uint32_t ref_type, nvtxMemRegionRef_t ref) {
    nvtxMemRegionsUnregisterBatch_t batch;
    memset(&batch, 0, sizeof batch);
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof batch;
    batch.refType = ref_type;
    batch.refCount = 1;
    batch.refElementSize = sizeof ref;
    batch.refElements = &ref;
    nvtxMemRegionsUnregister(NULL, &batch);
}

static void resize_region(uint64_t addr, size_t size) {
    nvtxMemVirtualRangeDesc_t range = {size, (const void *)(uintptr_t)addr};
    nvtxMemRegionsResizeBatch_t batch;
    memset(&batch, 0, sizeof batch);
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof batch;
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.regionDescCount = 1;
    batch.regionDescElementSize = sizeof range;
    batch.regionDescElements = &range;
    nvtxMemRegionsResize(NULL, &batch);
}

/* ---- mode 1: recorded through the static-injection hook ------------------- */

static void test_recorded(void) {
    InitializeInjectionNvtx2_fnptr = InitializeInjectionNvtx2;
    InitializeInjectionNvtxExtension_fnptr = InitializeInjectionNvtxExtension;
    rec_regions_set_resolver(fake_resolver);

    /* Attached before any session: depths count, nothing is recorded. */
    CHECK(nvtxRangePushA("before the session") == 0);
    CHECK(nvtxRangePop() == 0);

    rb_tmpdir("test_rec_nvtx");
    rec_config c;
    CHECK(rb_session_start(&c, "nvtx.zst", 16) == 0);

    /* core: push/pop (torch.cuda.nvtx.range_push is nvtxRangePushA) */
    CHECK(nvtxRangePushA("step 3") == 0);
    CHECK(nvtxRangePushW(L"gr\u00fc\u00df \u20ac\U0001F600") == 1);
    pthread_t t;
    void *other_ok = NULL;
    CHECK(pthread_create(&t, NULL, other_thread_push, NULL) == 0 &&
          pthread_join(t, &other_ok) == 0);
    CHECK(other_ok != NULL);
    CHECK(nvtxRangePop() == 1);
    CHECK(nvtxRangePop() == 0);
    CHECK(nvtxRangePop() < 0); /* nothing open */
    nvtxMarkA("checkpoint");
    nvtxMarkW(L"wide mark");
    /* start/end, Ex with a payload */
    nvtxEventAttributes_t epoch = ascii_attr("epoch 1");
    epoch.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    epoch.payload.llValue = -42;
    nvtxRangeId_t id1 = nvtxRangeStartEx(&epoch);
    nvtxRangeId_t id2 = nvtxRangeStartA("load");
    nvtxRangeId_t idw = nvtxRangeStartW(L"wide range");
    CHECK(id1 != 0 && id2 != 0 && idw != 0 && id1 != id2 && id2 != idw && id1 != idw);
    nvtxRangeEnd(id1);
    nvtxRangeEnd(id2);
    nvtxRangeEnd(idw);
    nvtxEventAttributes_t ex_mark = ascii_attr("ex mark");
    ex_mark.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
    ex_mark.payload.uiValue = 7;
    nvtxMarkEx(&ex_mark);
    nvtxEventAttributes_t pushed_ex = ascii_attr("pushed ex");
    CHECK(nvtxRangePushEx(&pushed_ex) == 0);
    CHECK(nvtxRangePop() == 0);

    /* domains and registered strings */
    nvtxDomainHandle_t lib = nvtxDomainCreateA("my.lib");
    CHECK(lib != NULL && nvtxDomainCreateA("my.lib") == lib);
    nvtxDomainHandle_t wide = nvtxDomainCreateW(L"wide.domain");
    CHECK(wide != NULL && wide != lib);
    nvtxStringHandle_t step5 = nvtxDomainRegisterStringA(lib, "registered step 5");
    CHECK(step5 != NULL && nvtxDomainRegisterStringA(lib, "registered step 5") == step5);
    nvtxEventAttributes_t reg = ascii_attr(NULL);
    reg.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    reg.message.registered = step5;
    CHECK(nvtxDomainRangePushEx(lib, &reg) == 0);
    CHECK(nvtxRangePushA("default domain depth is its own") == 0);
    CHECK(nvtxRangePop() == 0);
    nvtxEventAttributes_t uni = ascii_attr(NULL);
    uni.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    uni.message.unicode = L"dmark";
    nvtxDomainMarkEx(lib, &uni);
    CHECK(nvtxDomainRangePop(lib) == 0);
    nvtxEventAttributes_t dstart = ascii_attr("dstart");
    nvtxRangeId_t id3 = nvtxDomainRangeStartEx(lib, &dstart);
    CHECK(id3 != 0 && id3 != id1 && id3 != id2);
    nvtxDomainRangeEnd(lib, id3);
    reg.message.registered = nvtxDomainRegisterStringW(lib, L"wide registered");
    nvtxDomainMarkEx(lib, &reg);
    nvtxEventAttributes_t in_wide = ascii_attr("in wide domain");
    nvtxDomainMarkEx(wide, &in_wide);
    nvtxMarkEx(NULL); /* no attributes: a nameless mark, no crash */

    /* memory extension */
    int calls_before = resolver_calls;
    nvtxMemHeapHandle_t heap1 = register_heap(HEAP1, 1 << 20);
    CHECK(heap1 != NULL && heap1 != NVTX_MEM_HEAP_HANDLE_NO_TOOL);
    nvtxMemVirtualRangeDesc_t two[2] = {{4096, (const void *)(uintptr_t)HEAP1},
                                        {8192, (const void *)(uintptr_t)(HEAP1 + 0x10000)}};
    nvtxMemRegionHandle_t handles[2] = {NULL, NULL};
    register_regions(heap1, two, 2, handles);
    CHECK(handles[0] != NULL && handles[1] != NULL && handles[0] != handles[1]);
    CHECK_EQ_U64(resolver_calls - calls_before, 1); /* once per heap, not per region */
    unregister_region(NVTX_MEM_REGION_REF_TYPE_HANDLE, (nvtxMemRegionRef_t){.handle = handles[0]});
    resize_region(HEAP1 + 0x10000, 16384);
    nvtxMemVirtualRangeDesc_t lonely = {256, (const void *)(uintptr_t)LONELY};
    register_regions(NULL, &lonely, 1, NULL); /* the process-wide heap */
    unregister_region(NVTX_MEM_REGION_REF_TYPE_POINTER,
                      (nvtxMemRegionRef_t){.pointer = (const void *)(uintptr_t)LONELY});
    unregister_region(NVTX_MEM_REGION_REF_TYPE_POINTER, /* unknown: nothing */
                      (nvtxMemRegionRef_t){.pointer = (const void *)(uintptr_t)0x999000});
    nvtxMemHeapHandle_t heap2 = register_heap(HEAP2, 1 << 20);
    nvtxMemVirtualRangeDesc_t in2[2] = {{100, (const void *)(uintptr_t)HEAP2},
                                        {200, (const void *)(uintptr_t)(HEAP2 + 0x100)}};
    register_regions(heap2, in2, 2, NULL);
    nvtxMemHeapUnregister(NULL, heap2); /* frees both */
    nvtxMemHeapReset(NULL, heap1);      /* frees the resized one */
    nvtxMemHeapUnregister(NULL, heap1);

    CHECK(rec_session_stop() == 0);
    nvtxMarkA("after the session"); /* not recorded */

    readback rb;
    CHECK(rb_read(c.path, &rb) == 0);
    const unsigned PUSH = TRACE_MARK_RANGE_PUSH, POP = TRACE_MARK_RANGE_POP,
                   START = TRACE_MARK_RANGE_START, END = TRACE_MARK_RANGE_END,
                   MARK = TRACE_MARK_MARK;
    expect_marker(&rb, PUSH, "", "step 3", 0, 0);
    expect_marker(&rb, PUSH, "", "gr\xc3\xbc\xc3\x9f \xe2\x82\xac\xf0\x9f\x98\x80", 0, 0);
    expect_marker(&rb, POP, "", "", 0, 0);
    expect_marker(&rb, POP, "", "", 0, 0);
    expect_marker(&rb, POP, "", "", 0, 0); /* the unmatched pop is still written */
    expect_marker(&rb, MARK, "", "checkpoint", 0, 0);
    expect_marker(&rb, MARK, "", "wide mark", 0, 0);
    expect_marker(&rb, START, "", "epoch 1", id1, -42);
    expect_marker(&rb, START, "", "load", id2, 0);
    expect_marker(&rb, START, "", "wide range", idw, 0);
    expect_marker(&rb, END, "", "", id1, 0);
    expect_marker(&rb, END, "", "", id2, 0);
    expect_marker(&rb, END, "", "", idw, 0);
    expect_marker(&rb, MARK, "", "ex mark", 0, 7);
    expect_marker(&rb, PUSH, "", "pushed ex", 0, 0);
    expect_marker(&rb, POP, "", "", 0, 0);
    expect_marker(&rb, PUSH, "my.lib", "registered step 5", 0, 0);
    expect_marker(&rb, PUSH, "", "default domain depth is its own", 0, 0);
    expect_marker(&rb, POP, "", "", 0, 0);
    expect_marker(&rb, MARK, "my.lib", "dmark", 0, 0);
    expect_marker(&rb, POP, "my.lib", "", 0, 0);
    expect_marker(&rb, START, "my.lib", "dstart", id3, 0);
    expect_marker(&rb, END, "my.lib", "", id3, 0);
    expect_marker(&rb, MARK, "my.lib", "wide registered", 0, 0);
    expect_marker(&rb, MARK, "wide.domain", "in wide domain", 0, 0);
    expect_marker(&rb, MARK, "", "", 0, 0);
    size_t own = 0, others[4], n_others = 0;
    for (size_t i = 0; i < rb.n_markers; i++) {
        if (rb.markers[i].tid == rec_thread_id())
            own++;
        else if (n_others < 4)
            others[n_others++] = i;
    }
    CHECK_EQ_U64(own, markers_expected);
    /* The other thread's pair, under its own tid. */
    CHECK_EQ_U64(n_others, 2);
    CHECK(n_others == 2 && rb.markers[others[0]].kind == PUSH &&
          rb.markers[others[1]].kind == POP &&
          !strcmp(rb.marker_names[others[0]], "other thread") &&
          rb.markers[others[0]].tid == rb.markers[others[1]].tid);

    expect_event(&rb, TRACE_OP_ALLOC, HEAP1, 4096, 2);
    expect_event(&rb, TRACE_OP_ALLOC, HEAP1 + 0x10000, 8192, 2);
    expect_event(&rb, TRACE_OP_FREE, HEAP1, 4096, 2);
    expect_event(&rb, TRACE_OP_FREE, HEAP1 + 0x10000, 8192, 2);
    expect_event(&rb, TRACE_OP_ALLOC, HEAP1 + 0x10000, 16384, 2);
    expect_event(&rb, TRACE_OP_ALLOC, LONELY, 256, 0);
    expect_event(&rb, TRACE_OP_FREE, LONELY, 256, 0);
    expect_event(&rb, TRACE_OP_ALLOC, HEAP2, 100, 2);
    expect_event(&rb, TRACE_OP_ALLOC, HEAP2 + 0x100, 200, 2);
    /* A heap's regions are freed in table order: either order is right. */
    int heap2_second_first = next_event < rb.n_events && rb.events[next_event].addr != HEAP2;
    expect_event(&rb, TRACE_OP_FREE, heap2_second_first ? HEAP2 + 0x100 : HEAP2,
                 heap2_second_first ? 200 : 100, 2);
    expect_event(&rb, TRACE_OP_FREE, heap2_second_first ? HEAP2 : HEAP2 + 0x100,
                 heap2_second_first ? 100 : 200, 2);
    expect_event(&rb, TRACE_OP_FREE, HEAP1 + 0x10000, 16384, 2);
    CHECK_EQ_U64(rb.n_events, next_event);
    CHECK(!rec_regions_any()); /* every region was freed */
    rb_free(&rb);
}

/* ---- mode 2: the built libmemrec.so through NVTX_INJECTION64_PATH --------- */

static void test_dlopen(const char *library) {
    if (access(library, R_OK) != 0)
        CHECK_SKIP("%s not built", library);
    setenv("NVTX_INJECTION64_PATH", library, 1);
    /* Without an injection NVTX answers NVTX_NO_PUSH_POP_TRACKING (-2). */
    CHECK(nvtxRangePushA("outer") == 0);
    CHECK(nvtxRangePushA("inner") == 1);
    CHECK(nvtxRangePop() == 1);
    CHECK(nvtxRangePop() == 0);
    nvtxRangeId_t a = nvtxRangeStartA("a"), b = nvtxRangeStartA("b");
    CHECK(a != 0 && b != 0 && a != b);
    nvtxDomainHandle_t d = nvtxDomainCreateA("dlopen.domain");
    CHECK(d != NULL && nvtxDomainCreateA("dlopen.domain") == d);
    CHECK(nvtxDomainRegisterStringA(d, "s") != NULL);
    /* The memory extension found InitializeInjectionNvtxExtension there too. */
    nvtxMemHeapHandle_t heap = register_heap(HEAP1, 4096);
    CHECK(heap != NULL && heap != NVTX_MEM_HEAP_HANDLE_NO_TOOL);
    nvtxMemVirtualRangeDesc_t range = {64, (const void *)(uintptr_t)HEAP1};
    nvtxMemRegionHandle_t handle = NULL;
    register_regions(heap, &range, 1, &handle);
    CHECK(handle == (nvtxMemRegionHandle_t)(uintptr_t)HEAP1);
    nvtxMemHeapUnregister(NULL, heap);
    /* It was the library that answered, loaded by NVTX. */
    void *loaded = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
    CHECK(loaded != NULL);
    if (loaded)
        dlclose(loaded);
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[2], "dlopen")) {
        test_dlopen(argv[3]);
        return check_finish("test_rec_nvtx (dlopen)");
    }
    unsetenv("NVTX_INJECTION64_PATH");
    test_recorded();
    return rb_finish("test_rec_nvtx");
}
