/* cuda_sample.c — small CUDA programs with a known sequence of memory calls,
 * one scenario per run, for the recorder's GPU end-to-end test.
 *
 *   cuda_sample SCENARIO    malloc | async | managed | pinned | vmm | fail | nvtx
 *
 * Each scenario prints, on stdout, the events the trace must hold, in order,
 * with the addresses and sizes the CUDA calls returned:
 *
 *   event OP KIND ADDR SIZE     (ADDR "-" when the event has none)
 *   marker KIND NAME            (NVTX: push/pop with the range's name)
 *
 * which tests/gpu/check_cuda_trace.py compares with the trace memrec wrote.
 * Exit status: 0 done, 1 a CUDA call failed unexpectedly, 2 usage, 77 no
 * CUDA device (with the reason on stderr), so the test skips cleanly.
 *
 * Plain C, no kernels, so no nvcc. The driver-API calls (created pools, VMM)
 * are reached through cudaGetDriverEntryPointByVersion instead of linking
 * libcuda: a program linked with libcuda cannot even start where no driver
 * is installed, and this one must say "no device" and exit 77 there. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1024ull * 1024)
#define EXIT_NO_DEVICE 77
#define DRIVER_ABI 12000 /* the driver entry points as of CUDA 12.0 */

/* ---- errors ------------------------------------------------------------- */

static void die(const char *what, const char *why) {
    fprintf(stderr, "cuda_sample: %s failed: %s\n", what, why);
    exit(1);
}

static void check_rt(cudaError_t e, const char *what) {
    if (e != cudaSuccess)
        die(what, cudaGetErrorString(e));
}

static void check_drv(CUresult r, const char *what) {
    if (r != CUDA_SUCCESS) {
        char why[32];
        snprintf(why, sizeof why, "CUresult %d", (int)r);
        die(what, why);
    }
}

#define RT(call) check_rt((call), #call)
#define DRV(call) check_drv((call), #call)

/* ---- what the trace must hold ------------------------------------------- */

#define NO_ADDR UINT64_MAX

static void expect_event(const char *op, const char *kind, uint64_t addr, uint64_t size) {
    if (addr == NO_ADDR)
        printf("event %s %s - %" PRIu64 "\n", op, kind, size);
    else
        printf("event %s %s 0x%" PRIx64 " %" PRIu64 "\n", op, kind, addr, size);
}

static uint64_t addr_of(const void *p) { return (uint64_t)(uintptr_t)p; }

/* ---- driver entry points -------------------------------------------------- */

static struct {
    PFN_cuMemPoolCreate_v11020 pool_create;
    PFN_cuMemAllocFromPoolAsync_v11020 alloc_from_pool;
    PFN_cuMemFreeAsync_v11020 free_async;
    PFN_cuMemPoolTrimTo_v11020 pool_trim;
    PFN_cuMemPoolDestroy_v11020 pool_destroy;
    PFN_cuMemGetAllocationGranularity_v10020 granularity;
    PFN_cuMemAddressReserve_v10020 address_reserve;
    PFN_cuMemAddressFree_v10020 address_free;
    PFN_cuMemCreate_v10020 create;
    PFN_cuMemRelease_v10020 release;
    PFN_cuMemMap_v10020 map;
    PFN_cuMemUnmap_v10020 unmap;
    PFN_cuMemSetAccess_v10020 set_access;
} drv;

static void resolve(const char *symbol, void *fn, size_t fn_size) {
    void *p = NULL;
    enum cudaDriverEntryPointQueryResult status;
#if CUDART_VERSION >= 12050
    cudaError_t e =
        cudaGetDriverEntryPointByVersion(symbol, &p, DRIVER_ABI, cudaEnableDefault, &status);
#else /* CUDA 12.0-12.4 have no ByVersion: the entry points as of the runtime's own version,
       * which for every symbol here is still its only (10.2/11.2) ABI */
    cudaError_t e = cudaGetDriverEntryPoint(symbol, &p, cudaEnableDefault, &status);
#endif
    if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || !p)
        die(symbol, "the driver has no such entry point");
    memcpy(fn, &p, fn_size); /* object -> function pointer, as POSIX allows */
}

#define RESOLVE(field, symbol) resolve(symbol, &drv.field, sizeof drv.field)

static void load_driver_entry_points(void) {
    RESOLVE(pool_create, "cuMemPoolCreate");
    RESOLVE(alloc_from_pool, "cuMemAllocFromPoolAsync");
    RESOLVE(free_async, "cuMemFreeAsync");
    RESOLVE(pool_trim, "cuMemPoolTrimTo");
    RESOLVE(pool_destroy, "cuMemPoolDestroy");
    RESOLVE(granularity, "cuMemGetAllocationGranularity");
    RESOLVE(address_reserve, "cuMemAddressReserve");
    RESOLVE(address_free, "cuMemAddressFree");
    RESOLVE(create, "cuMemCreate");
    RESOLVE(release, "cuMemRelease");
    RESOLVE(map, "cuMemMap");
    RESOLVE(unmap, "cuMemUnmap");
    RESOLVE(set_access, "cuMemSetAccess");
}

/* ---- scenarios ---------------------------------------------------------------- */

static void scenario_malloc(void) {
    void *a, *b, *pitched;
    size_t pitch;
    RT(cudaMalloc(&a, 1 * MiB));
    expect_event("alloc", "device", addr_of(a), 1 * MiB);
    RT(cudaMalloc(&b, 3 * MiB + 123));
    expect_event("alloc", "device", addr_of(b), 3 * MiB + 123);
    RT(cudaMallocPitch(&pitched, &pitch, 1000, 10));
    expect_event("alloc", "device", addr_of(pitched), (uint64_t)pitch * 10);
    RT(cudaFree(a));
    expect_event("free", "device", addr_of(a), 1 * MiB);
    RT(cudaFree(pitched));
    expect_event("free", "device", addr_of(pitched), (uint64_t)pitch * 10);
    RT(cudaFree(b));
    expect_event("free", "device", addr_of(b), 3 * MiB + 123);
}

/* The device's default pool through the runtime, then a pool of our own
 * through the driver; each trimmed to nothing. */
static void scenario_async(void) {
    cudaStream_t stream;
    RT(cudaStreamCreate(&stream));
    void *a;
    RT(cudaMallocAsync(&a, 1 * MiB, stream));
    expect_event("alloc", "device", addr_of(a), 1 * MiB);
    RT(cudaFreeAsync(a, stream));
    expect_event("free", "device", addr_of(a), 1 * MiB);
    RT(cudaStreamSynchronize(stream));
    cudaMemPool_t default_pool;
    RT(cudaDeviceGetDefaultMemPool(&default_pool, 0));
    RT(cudaMemPoolTrimTo(default_pool, 0));
    expect_event("pool_trim", "device", NO_ADDR, 0);

    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool pool;
    DRV(drv.pool_create(&pool, &props));
    CUdeviceptr d;
    DRV(drv.alloc_from_pool(&d, 2 * MiB, pool, (CUstream)stream));
    expect_event("alloc", "device", d, 2 * MiB);
    DRV(drv.free_async(d, (CUstream)stream));
    expect_event("free", "device", d, 2 * MiB);
    RT(cudaStreamSynchronize(stream));
    DRV(drv.pool_trim(pool, 0));
    expect_event("pool_trim", "device", NO_ADDR, 0);
    DRV(drv.pool_destroy(pool));
    RT(cudaStreamDestroy(stream));
}

static void scenario_managed(void) {
    void *m;
    RT(cudaMallocManaged(&m, 1 * MiB, cudaMemAttachGlobal));
    expect_event("alloc", "managed", addr_of(m), 1 * MiB);
    RT(cudaFree(m));
    expect_event("free", "managed", addr_of(m), 1 * MiB);
}

static void scenario_pinned(void) {
    void *h, *h2;
    RT(cudaHostAlloc(&h, 64 * 1024, cudaHostAllocDefault));
    expect_event("alloc", "pinned_host", addr_of(h), 64 * 1024);
    RT(cudaMallocHost(&h2, 4096));
    expect_event("alloc", "pinned_host", addr_of(h2), 4096);
    RT(cudaFreeHost(h));
    expect_event("free", "pinned_host", addr_of(h), 64 * 1024);
    RT(cudaFreeHost(h2));
    expect_event("free", "pinned_host", addr_of(h2), 4096);
}

/* Reserve, create, map, set access, unmap, release, free: what PyTorch's
 * expandable segments do. */
static void scenario_vmm(void) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran;
    DRV(drv.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va;
    DRV(drv.address_reserve(&va, 4 * gran, 0, 0, 0));
    expect_event("va_reserve", "device", va, 4 * gran);
    CUmemGenericAllocationHandle handle;
    DRV(drv.create(&handle, gran, &prop, 0));
    expect_event("phys_create", "device", handle, gran);
    DRV(drv.map(va, gran, 0, handle, 0));
    expect_event("map", "device", va, gran);
    CUmemAccessDesc access = {.location = prop.location,
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    DRV(drv.set_access(va, gran, &access, 1));
    DRV(drv.unmap(va, gran));
    expect_event("unmap", "device", va, gran);
    DRV(drv.release(handle));
    expect_event("phys_release", "device", handle, gran);
    DRV(drv.address_free(va, 4 * gran));
    expect_event("va_free", "device", va, 4 * gran);
}

static void scenario_fail(void) {
    const uint64_t one_pib = 1ull << 50;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, one_pib);
    if (e == cudaSuccess)
        die("cudaMalloc(1 PiB)", "it succeeded");
    (void)cudaGetLastError(); /* an allocation failure is not sticky: clear it */
    expect_event("alloc_failed", "device", NO_ADDR, one_pib);
}

static void scenario_nvtx(void) {
    for (int step = 0; step < 3; step++) {
        char name[32];
        snprintf(name, sizeof name, "step %d", step);
        nvtxRangePushA(name);
        printf("marker push %s\n", name);
        void *p;
        uint64_t size = (uint64_t)(step + 1) * MiB;
        RT(cudaMalloc(&p, size));
        expect_event("alloc", "device", addr_of(p), size);
        RT(cudaFree(p));
        expect_event("free", "device", addr_of(p), size);
        nvtxRangePop();
        printf("marker pop %s\n", name);
    }
}

static const struct {
    const char *name;
    void (*run)(void);
} scenarios[] = {
    {"malloc", scenario_malloc}, {"async", scenario_async}, {"managed", scenario_managed},
    {"pinned", scenario_pinned}, {"vmm", scenario_vmm},     {"fail", scenario_fail},
    {"nvtx", scenario_nvtx},
};
#define N_SCENARIOS (sizeof scenarios / sizeof scenarios[0])

int main(int argc, char **argv) {
    size_t which = N_SCENARIOS;
    for (size_t i = 0; argc == 2 && i < N_SCENARIOS; i++)
        if (strcmp(argv[1], scenarios[i].name) == 0)
            which = i;
    if (which == N_SCENARIOS) {
        fprintf(stderr, "usage: cuda_sample malloc|async|managed|pinned|vmm|fail|nvtx\n");
        return 2;
    }
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        fprintf(stderr, "cuda_sample: no CUDA device (%s)\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports none");
        return EXIT_NO_DEVICE;
    }
    RT(cudaSetDevice(0));
    RT(cudaFree(NULL)); /* creates the primary context: the driver calls below use it */
    struct cudaDeviceProp prop;
    RT(cudaGetDeviceProperties(&prop, 0));
    printf("device 0 %s\n", prop.name);
    load_driver_entry_points();
    scenarios[which].run();
    RT(cudaDeviceSynchronize());
    return 0;
}
