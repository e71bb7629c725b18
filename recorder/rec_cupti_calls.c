/* rec_cupti_calls.c — the handled driver cbids and how to read their
 * *_params structs (generated_cuda_meta.h) into one rec_call_info.
 *
 * One switch per question (class, decode) so that adding a cbid is one line
 * in the list and one case here. Nothing here calls the driver or records:
 * the same decoding serves live callbacks and replayed fixtures. */
#include "rec_cupti_calls.h"

#include "rec_core.h"
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
    CBID(cuMemHostRegister),
    CBID(cuMemHostRegister_v2),
    CBID(cuMemHostUnregister),
    CBID(cuIpcOpenMemHandle),
    CBID(cuIpcOpenMemHandle_v2),
    CBID(cuIpcCloseMemHandle),
    CBID(cuMemPoolImportPointer),
    CBID(cuGraphAddMemAllocNode),
    CBID(cuGraphAddMemFreeNode),
    CBID(cuDeviceGraphMemTrim),
#if CUDA_VERSION >= 12010 /* multicast objects came with CUDA 12.1 */
    CBID(cuMulticastCreate),
    CBID(cuMulticastBindMem),
    CBID(cuMulticastBindAddr),
    CBID(cuMulticastUnbind),
#endif
#if CUDA_VERSION >= 12020 /* graph nodes from generic parameters: 12.2, _v2 12.3 */
    CBID(cuGraphAddNode),
#endif
#if CUDA_VERSION >= 12030
    CBID(cuGraphAddNode_v2),
#endif
};

/* The calls counted in the END record instead of being recorded as memory
 * (TRACE_FORMAT.md, "Calls counted, not recorded"), and why; a call's index
 * is its count slot. Every count is of successful calls. COUNTED pastes the
 * name itself: cuda.h #defines some plain names to their _v2 (cuGraphAddNode,
 * cuIpcOpenMemHandle), which must not be expanded into the other cbid. */
#define COUNTED(name)                                                                              \
    { CUPTI_DRIVER_TRACE_CBID_##name, #name }
static const struct counted_call {
    CUpti_CallbackId cbid;
    const char *name;
} counted_calls[] = {
    /* Memory of another process mapped here (CUDA IPC, an imported pool's pointer, an imported
     * VMM handle): its bytes are the other process's, on whatever device it lives, so a segment
     * of it would be summed into this process's reserved memory, or need a memory kind of its
     * own (gmt_vocab.h) that every consumer of events would have to leave out of its sums. The
     * driver's free/total samples already show it where it lives. The IPC and import calls
     * name no size: 0 bytes. */
    COUNTED(cuIpcOpenMemHandle),
    COUNTED(cuIpcOpenMemHandle_v2),
    COUNTED(cuIpcCloseMemHandle),
    COUNTED(cuMemPoolImportPointer),
    COUNTED(cuMemImportFromShareableHandle),
    /* cuMemMap/cuMemUnmap of an imported or multicast handle (bytes: the range): the maps of
     * what this process did not create (rec_cupti.c). Their cuMemRelease is neither recorded
     * nor counted: the handle was counted at its import, and the release moves no memory. */
    COUNTED(cuMemMap),
    COUNTED(cuMemUnmap),
    /* A cuMemFree/cuMemFreeAsync of counted memory (graph memory freed outside its graph, an
     * imported pointer): recorded, it would be the free of memory never allocated. */
    COUNTED(cuMemFree_v2),
    COUNTED(cuMemFreeAsync),
    COUNTED(cuMemFreeAsync_ptsz),
    /* CUDA graph memory nodes: a node's memory is allocated when the graph runs, by no call
     * the driver reports, and lives while the graph's allocation does (until its free node
     * runs, or the program frees it, or cuDeviceGraphMemTrim gives the pool back): recorded
     * at the node's creation it would be live memory that is not there, or missing when it
     * is. So counted: alloc nodes with their bytes, free nodes with the bytes of the alloc
     * node they free (when seen), trims (no bytes). */
    COUNTED(cuGraphAddMemAllocNode),
    COUNTED(cuGraphAddMemFreeNode),
    COUNTED(cuDeviceGraphMemTrim),
#if CUDA_VERSION >= 12010
    /* Multicast objects (NVLS): the object itself (bytes: its size) is no memory of this
     * process; binding memory to it (bytes: the bound range) binds memory that is already
     * recorded (its cuMemCreate), so a bind adds nothing and an unbind frees nothing. */
    COUNTED(cuMulticastCreate),
    COUNTED(cuMulticastBindMem),
    COUNTED(cuMulticastBindAddr),
    COUNTED(cuMulticastUnbind),
#endif
#if CUDA_VERSION >= 12020 /* graph memory nodes added the generic way: as the calls above */
    COUNTED(cuGraphAddNode),
#endif
#if CUDA_VERSION >= 12030
    COUNTED(cuGraphAddNode_v2),
#endif
};
#undef COUNTED

/* Allocation calls that failed with an error other than out of memory: refused, not short
 * of memory (an unsupported handle type, flags, a size of 0), so no alloc_failed event,
 * which says a device could not give memory (the analyzer's OOM story); counted, with the
 * bytes they asked for, under "<call> refused". Seen: PyTorch 2.11's expandable segments
 * begin with a cuMemCreate that fails with CUDA_ERROR_NOT_PERMITTED, then one that succeeds
 * (tests/fixtures/cupti/nvidia_h200_torch_expandable.log). */
#define REFUSED(name)                                                                              \
    { CUPTI_DRIVER_TRACE_CBID_##name, #name " refused" }
static const struct counted_call refused_calls[] = {
    REFUSED(cuMemAlloc_v2),
    REFUSED(cuMemAllocPitch_v2),
    REFUSED(cuMemAllocManaged),
    REFUSED(cuMemHostAlloc),
    REFUSED(cuMemAllocHost_v2),
    REFUSED(cuMemAllocAsync),
    REFUSED(cuMemAllocAsync_ptsz),
    REFUSED(cuMemAllocFromPoolAsync),
    REFUSED(cuMemAllocFromPoolAsync_ptsz),
    REFUSED(cuMemCreate),
};
#undef REFUSED
#define N_COUNTED (sizeof counted_calls / sizeof counted_calls[0])
#define N_REFUSED (sizeof refused_calls / sizeof refused_calls[0])
_Static_assert(N_COUNTED + N_REFUSED <= REC_COUNT_SLOTS,
               "each counted call and each refusal has a count slot (rec_core.h)");

static int slot_in(const struct counted_call *table, size_t n, size_t first, CUpti_CallbackId cbid,
                   const char **name) {
    for (size_t i = 0; i < n; i++)
        if (table[i].cbid == cbid) {
            *name = table[i].name;
            return (int)(first + i);
        }
    return -1;
}

int rec_call_count_slot(CUpti_CallbackId cbid, const char **name) {
    return slot_in(counted_calls, N_COUNTED, 0, cbid, name);
}

int rec_call_refused_slot(CUpti_CallbackId cbid, const char **name) {
    return slot_in(refused_calls, N_REFUSED, N_COUNTED, cbid, name);
}

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
    /* Pinned host memory the program registered: recorded as cuMemHostAlloc's is (a
     * pinned_host segment of that address and size, never summed into device memory). */
    case CBID(cuMemHostRegister):
    case CBID(cuMemHostRegister_v2):
        return REC_CALL_HOST_REGISTER;
    case CBID(cuMemHostUnregister):
        return REC_CALL_FREE;
    case CBID(cuIpcOpenMemHandle):
    case CBID(cuIpcOpenMemHandle_v2):
    case CBID(cuIpcCloseMemHandle):
    case CBID(cuMemPoolImportPointer):
    case CBID(cuGraphAddMemAllocNode):
    case CBID(cuGraphAddMemFreeNode):
    case CBID(cuDeviceGraphMemTrim):
#if CUDA_VERSION >= 12010
    case CBID(cuMulticastBindMem):
    case CBID(cuMulticastBindAddr):
    case CBID(cuMulticastUnbind):
#endif
#if CUDA_VERSION >= 12020
    case CBID(cuGraphAddNode):
#endif
#if CUDA_VERSION >= 12030
    case CBID(cuGraphAddNode_v2):
#endif
        return REC_CALL_COUNT;
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
    case CBID(cuMemHostRegister):
    case CBID(cuMemHostRegister_v2): {
        const cuMemHostRegister_v2_params *p = params; /* the same { p, bytesize, Flags } */
        c->kind = TRACE_KIND_PINNED_HOST;
        c->addr = (uint64_t)(uintptr_t)p->p;
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
    case CBID(cuMemHostUnregister):
        c->kind = TRACE_KIND_PINNED_HOST;
        c->addr = (uint64_t)(uintptr_t)((const cuMemHostUnregister_params *)params)->p;
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

/* A graph memory node: an alloc node's memory (its address once the call
 * made it) or the memory a free node frees. */
static void graph_alloc_node(rec_call_info *c, const CUDA_MEM_ALLOC_NODE_PARAMS *p, int rd) {
    c->count_mem = REC_COUNT_NEW_GRAPH;
    c->addr = rd && p ? (uint64_t)p->dptr : 0;
    set_sizes(c, p ? p->bytesize : 0);
}

static void graph_free_node(rec_call_info *c, CUdeviceptr dptr) {
    c->count_mem = REC_COUNT_OF_ADDR;
    c->addr = (uint64_t)dptr;
}

#if CUDA_VERSION >= 12020
/* cuGraphAddNode's parameters: only memory nodes are memory calls. */
static void graph_node(rec_call_info *c, const CUgraphNodeParams *p, int rd) {
    if (p && p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        c->count_mem = REC_COUNT_NEW_GRAPH;
        c->addr = rd ? (uint64_t)p->alloc.dptr : 0;
        set_sizes(c, p->alloc.bytesize);
    } else if (p && p->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
        graph_free_node(c, p->free.dptr);
    } else {
        c->count_mem = REC_COUNT_NOT_MEMORY;
    }
}
#endif

/* Counted calls (the reasons are at counted_calls). */
static int decode_counted(CUpti_CallbackId cbid, const void *params, int rd, rec_call_info *c) {
    c->kind = TRACE_KIND_DEVICE;
    c->count_mem = REC_COUNT_CALL;
    switch (cbid) {
    case CBID(cuIpcOpenMemHandle):
    case CBID(cuIpcOpenMemHandle_v2): { /* the same { pdptr, handle, Flags } */
        const cuIpcOpenMemHandle_v2_params *p = params;
        c->addr = out_dptr(p->pdptr, rd);
        return 0;
    }
    case CBID(cuIpcCloseMemHandle):
        c->addr = (uint64_t)((const cuIpcCloseMemHandle_params *)params)->dptr;
        return 0;
    case CBID(cuMemPoolImportPointer): {
        const cuMemPoolImportPointer_params *p = params;
        c->count_mem = REC_COUNT_NEW_IMPORT;
        c->addr = out_dptr(p->ptr_out, rd);
        c->pool = p->pool;
        return 0;
    }
    case CBID(cuGraphAddMemAllocNode):
        graph_alloc_node(c, ((const cuGraphAddMemAllocNode_params *)params)->nodeParams, rd);
        return 0;
    case CBID(cuGraphAddMemFreeNode):
        graph_free_node(c, ((const cuGraphAddMemFreeNode_params *)params)->dptr);
        return 0;
    case CBID(cuDeviceGraphMemTrim):
        return 0;
#if CUDA_VERSION >= 12010
    case CBID(cuMulticastBindMem): {
        const cuMulticastBindMem_params *p = params;
        c->handle = p->memHandle;
        set_sizes(c, p->size);
        return 0;
    }
    case CBID(cuMulticastBindAddr): {
        const cuMulticastBindAddr_params *p = params;
        c->addr = (uint64_t)p->memptr;
        set_sizes(c, p->size);
        return 0;
    }
    case CBID(cuMulticastUnbind):
        set_sizes(c, ((const cuMulticastUnbind_params *)params)->size);
        return 0;
#endif
#if CUDA_VERSION >= 12020
    case CBID(cuGraphAddNode):
        graph_node(c, ((const cuGraphAddNode_params *)params)->nodeParams, rd);
        return 0;
#endif
#if CUDA_VERSION >= 12030
    case CBID(cuGraphAddNode_v2):
        graph_node(c, ((const cuGraphAddNode_v2_params *)params)->nodeParams, rd);
        return 0;
#endif
    default:
        return -1;
    }
}

int rec_call_decode(CUpti_CallbackId cbid, const void *params, int read_outputs,
                    rec_call_info *out) {
    memset(out, 0, sizeof *out);
    out->cls = rec_call_class_of(cbid);
    out->cbid = cbid;
    if (out->cls == REC_CALL_NONE || !params)
        return -1;
    int rc;
    if (out->cls == REC_CALL_ALLOC || out->cls == REC_CALL_HOST_REGISTER)
        rc = decode_alloc(cbid, params, read_outputs, out);
    else if (out->cls == REC_CALL_FREE)
        rc = decode_free(cbid, params, out);
    else if (out->cls == REC_CALL_COUNT)
        rc = decode_counted(cbid, params, read_outputs, out);
    else
        rc = decode_pool_vmm(cbid, params, read_outputs, out);
    out->has_result = (uint8_t)(read_outputs != 0);
    return rc;
}
