/* rec_cupti_calls.c — the handled driver cbids and how to read their
 * *_params structs (generated_cuda_meta.h) into one rec_call_info.
 *
 * One switch per question (class, decode) so that adding a cbid is one line
 * in the list and one case here. Nothing here calls the driver or records:
 * the same decoding serves live callbacks and replayed fixtures. */
#include "rec_cupti_calls.h"

#include "trace_format.h"

#include <string.h>

#define CBID(name) CUPTI_DRIVER_TRACE_CBID_##name

static const CUpti_CallbackId handled_cbids[] = {
    CBID(cuMemAlloc_v2),
    CBID(cuMemAllocPitch_v2),
    CBID(cuMemFree_v2),
    CBID(cuMemAllocManaged),
    CBID(cuMemHostAlloc),
    CBID(cuMemAllocHost_v2),
    CBID(cuMemFreeHost),
    CBID(cuMemAllocAsync),
    CBID(cuMemAllocAsync_ptsz),
    CBID(cuMemAllocFromPoolAsync),
    CBID(cuMemAllocFromPoolAsync_ptsz),
    CBID(cuMemFreeAsync),
    CBID(cuMemFreeAsync_ptsz),
    CBID(cuMemPoolCreate),
    CBID(cuMemPoolDestroy),
    CBID(cuMemPoolTrimTo),
    CBID(cuMemAddressReserve),
    CBID(cuMemAddressFree),
    CBID(cuMemCreate),
    CBID(cuMemRelease),
    CBID(cuMemMap),
    CBID(cuMemUnmap),
    CBID(cuMemRetainAllocationHandle),
    CBID(cuMemImportFromShareableHandle),
#if CUDA_VERSION >= 12010 /* multicast objects came with CUDA 12.1 */
    CBID(cuMulticastCreate),
#endif
};

size_t rec_call_cbids(const CUpti_CallbackId **out) {
    *out = handled_cbids;
    return sizeof handled_cbids / sizeof handled_cbids[0];
}

uint8_t rec_call_location_kind(CUmemAllocationType type, CUmemLocationType location) {
    if (type == REC_MEM_ALLOCATION_MANAGED)
        return TRACE_KIND_MANAGED;
    if (location == REC_MEM_LOCATION_HOST || location == REC_MEM_LOCATION_HOST_NUMA ||
        location == REC_MEM_LOCATION_HOST_NUMA_CURRENT)
        return TRACE_KIND_PINNED_HOST;
    return TRACE_KIND_DEVICE;
}

rec_call_class rec_call_class_of(CUpti_CallbackId cbid) {
    switch (cbid) {
    case CBID(cuMemAlloc_v2):
    case CBID(cuMemAllocPitch_v2):
    case CBID(cuMemAllocManaged):
    case CBID(cuMemHostAlloc):
    case CBID(cuMemAllocHost_v2):
    case CBID(cuMemAllocAsync):
    case CBID(cuMemAllocAsync_ptsz):
    case CBID(cuMemAllocFromPoolAsync):
    case CBID(cuMemAllocFromPoolAsync_ptsz):
        return REC_CALL_ALLOC;
    case CBID(cuMemFree_v2):
    case CBID(cuMemFreeHost):
    case CBID(cuMemFreeAsync):
    case CBID(cuMemFreeAsync_ptsz):
        return REC_CALL_FREE;
    case CBID(cuMemPoolCreate):
        return REC_CALL_POOL_CREATE;
    case CBID(cuMemPoolDestroy):
        return REC_CALL_POOL_DESTROY;
    case CBID(cuMemPoolTrimTo):
        return REC_CALL_POOL_TRIM;
    case CBID(cuMemAddressReserve):
        return REC_CALL_VA_RESERVE;
    case CBID(cuMemAddressFree):
        return REC_CALL_VA_FREE;
    case CBID(cuMemCreate):
        return REC_CALL_PHYS_CREATE;
    case CBID(cuMemRelease):
        return REC_CALL_PHYS_RELEASE;
    case CBID(cuMemMap):
        return REC_CALL_MAP;
    case CBID(cuMemUnmap):
        return REC_CALL_UNMAP;
    case CBID(cuMemRetainAllocationHandle):
        return REC_CALL_PHYS_RETAIN;
    case CBID(cuMemImportFromShareableHandle):
#if CUDA_VERSION >= 12010
    case CBID(cuMulticastCreate):
#endif
        return REC_CALL_PHYS_IMPORT;
    default:
        return REC_CALL_NONE;
    }
}

/* Reads an output device pointer when it may be read. */
static uint64_t out_dptr(const CUdeviceptr *p, int read_outputs) {
    return read_outputs && p ? (uint64_t)*p : 0;
}

static uint64_t out_host_ptr(void *const *p, int read_outputs) {
    return read_outputs && p ? (uint64_t)(uintptr_t)*p : 0;
}

/* The stream as recorded: the _ptsz entry points read a NULL stream as the
 * calling thread's default stream, which is its own stream. */
static void set_stream(rec_call_info *c, CUstream s, int per_thread) {
    c->stream_arg = s;
    c->stream =
        s ? (uint64_t)(uintptr_t)s : (per_thread ? (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD : 0);
    if (per_thread && !s)
        c->stream_arg = CU_STREAM_PER_THREAD;
}

static void set_sizes(rec_call_info *c, uint64_t size) { c->size = c->requested = size; }

/* Allocations: output pointer, size, kind, stream, pool. */
static int decode_alloc(CUpti_CallbackId cbid, const void *params, int rd, rec_call_info *c) {
    c->kind = TRACE_KIND_DEVICE;
    switch (cbid) {
    case CBID(cuMemAlloc_v2): {
        const cuMemAlloc_v2_params *p = params;
        c->addr = out_dptr(p->dptr, rd);
        set_sizes(c, p->bytesize);
        return 0;
    }
    case CBID(cuMemAllocPitch_v2): {
        const cuMemAllocPitch_v2_params *p = params;
        c->addr = out_dptr(p->dptr, rd);
        c->requested = (uint64_t)p->WidthInBytes * p->Height;
        /* The driver picks the pitch: only a successful call tells it. */
        c->size = rd && p->pPitch ? (uint64_t)*p->pPitch * p->Height : c->requested;
        return 0;
    }
    case CBID(cuMemAllocManaged): {
        const cuMemAllocManaged_params *p = params;
        c->kind = TRACE_KIND_MANAGED;
        c->addr = out_dptr(p->dptr, rd);
        set_sizes(c, p->bytesize);
        return 0;
    }
    case CBID(cuMemHostAlloc): {
        const cuMemHostAlloc_params *p = params;
        c->kind = TRACE_KIND_PINNED_HOST;
        c->addr = out_host_ptr(p->pp, rd);
        set_sizes(c, p->bytesize);
        return 0;
    }
    case CBID(cuMemAllocHost_v2): {
        const cuMemAllocHost_v2_params *p = params;
        c->kind = TRACE_KIND_PINNED_HOST;
        c->addr = out_host_ptr(p->pp, rd);
        set_sizes(c, p->bytesize);
        return 0;
    }
    case CBID(cuMemAllocAsync):
    case CBID(cuMemAllocAsync_ptsz): {
        /* Both params structs are { dptr, bytesize, hStream }. */
        const cuMemAllocAsync_params *p = params;
        c->async = 1;
        c->addr = out_dptr(p->dptr, rd);
        set_sizes(c, p->bytesize);
        set_stream(c, p->hStream, cbid == CBID(cuMemAllocAsync_ptsz));
        return 0;
    }
    case CBID(cuMemAllocFromPoolAsync):
    case CBID(cuMemAllocFromPoolAsync_ptsz): {
        const cuMemAllocFromPoolAsync_params *p = params;
        c->async = 1;
        c->addr = out_dptr(p->dptr, rd);
        set_sizes(c, p->bytesize);
        c->pool = p->pool;
        set_stream(c, p->hStream, cbid == CBID(cuMemAllocFromPoolAsync_ptsz));
        return 0;
    }
    default:
        return -1;
    }
}

static int decode_free(CUpti_CallbackId cbid, const void *params, rec_call_info *c) {
    c->kind = TRACE_KIND_DEVICE;
    switch (cbid) {
    case CBID(cuMemFree_v2):
        c->addr = (uint64_t)((const cuMemFree_v2_params *)params)->dptr;
        return 0;
    case CBID(cuMemFreeHost):
        c->kind = TRACE_KIND_PINNED_HOST;
        c->addr = (uint64_t)(uintptr_t)((const cuMemFreeHost_params *)params)->p;
        return 0;
    case CBID(cuMemFreeAsync):
    case CBID(cuMemFreeAsync_ptsz): {
        const cuMemFreeAsync_params *p = params; /* same layout as _ptsz */
        c->async = 1;
        c->addr = (uint64_t)p->dptr;
        set_stream(c, p->hStream, cbid == CBID(cuMemFreeAsync_ptsz));
        return 0;
    }
    default:
        return -1;
    }
}

/* Pools and virtual memory management. */
static int decode_pool_vmm(CUpti_CallbackId cbid, const void *params, int rd, rec_call_info *c) {
    c->kind = TRACE_KIND_DEVICE;
    switch (cbid) {
    case CBID(cuMemPoolCreate): {
        const cuMemPoolCreate_params *p = params;
        c->pool_props = p->poolProps;
        c->pool = rd && p->pool ? *p->pool : NULL;
        return 0;
    }
    case CBID(cuMemPoolDestroy):
        c->pool = ((const cuMemPoolDestroy_params *)params)->pool;
        return 0;
    case CBID(cuMemPoolTrimTo): {
        const cuMemPoolTrimTo_params *p = params;
        c->pool = p->pool;
        set_sizes(c, p->minBytesToKeep);
        return 0;
    }
    case CBID(cuMemAddressReserve): {
        const cuMemAddressReserve_params *p = params;
        c->addr = out_dptr(p->ptr, rd);
        set_sizes(c, p->size);
        return 0;
    }
    case CBID(cuMemAddressFree): {
        const cuMemAddressFree_params *p = params;
        c->addr = (uint64_t)p->ptr;
        set_sizes(c, p->size);
        return 0;
    }
    case CBID(cuMemCreate): {
        const cuMemCreate_params *p = params;
        c->addr = rd && p->handle ? (uint64_t)*p->handle : 0;
        set_sizes(c, p->size);
        c->alloc_prop = p->prop;
        return 0;
    }
    case CBID(cuMemRelease):
        c->addr = (uint64_t)((const cuMemRelease_params *)params)->handle;
        return 0;
    case CBID(cuMemMap): {
        const cuMemMap_params *p = params;
        c->addr = (uint64_t)p->ptr;
        set_sizes(c, p->size);
        c->handle = p->handle;
        return 0;
    }
    case CBID(cuMemUnmap): {
        const cuMemUnmap_params *p = params;
        c->addr = (uint64_t)p->ptr;
        set_sizes(c, p->size);
        return 0;
    }
    case CBID(cuMemRetainAllocationHandle): {
        const cuMemRetainAllocationHandle_params *p = params;
        c->addr = rd && p->handle ? (uint64_t)*p->handle : 0;
        return 0;
    }
    case CBID(cuMemImportFromShareableHandle): {
        const cuMemImportFromShareableHandle_params *p = params;
        c->addr = rd && p->handle ? (uint64_t)*p->handle : 0;
        return 0;
    }
#if CUDA_VERSION >= 12010
    case CBID(cuMulticastCreate): {
        const cuMulticastCreate_params *p = params;
        c->addr = rd && p->mcHandle ? (uint64_t)*p->mcHandle : 0;
        set_sizes(c, p->prop ? p->prop->size : 0);
        return 0;
    }
#endif
    default:
        return -1;
    }
}

int rec_call_decode(CUpti_CallbackId cbid, const void *params, int read_outputs,
                    rec_call_info *out) {
    memset(out, 0, sizeof *out);
    out->cls = rec_call_class_of(cbid);
    if (out->cls == REC_CALL_NONE || !params)
        return -1;
    int rc;
    if (out->cls == REC_CALL_ALLOC)
        rc = decode_alloc(cbid, params, read_outputs, out);
    else if (out->cls == REC_CALL_FREE)
        rc = decode_free(cbid, params, out);
    else
        rc = decode_pool_vmm(cbid, params, read_outputs, out);
    out->has_result = (uint8_t)(read_outputs != 0);
    return rc;
}
