/* rec_cupti_log.c — the raw callback log (rec_cupti_log.h): the params
 * layouts of the handled cbids, the line format, and the file.
 *
 * Its layouts name each params member the handler reads; one write(2) per
 * line on an O_APPEND descriptor keeps lines of several threads whole
 * without a lock, and the descriptor is never closed under a live program.
 * A debugging and fixture path: it formats text, and costs the callback one
 * load and a branch while off. */
#include "rec_cupti_log.h"

#include "gmt_env.h"
#include "rec_core.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

atomic_int rec_cupti_log_fd = -1;
static int log_checked; /* MEMREC_CALLBACK_LOG was looked at (first attach) */
static int warned_log;

_Static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8 && sizeof(CUdeviceptr) == 8,
               "the log reads 8-byte params fields");

#define FIELD(cb, member, type)                                                                    \
    { #member, offsetof(cb##_params, member), REC_FIELD_##type }
#define END_FIELDS                                                                                 \
    { NULL, 0, REC_FIELD_SIZE }
#define LAYOUT(cb, ...)                                                                            \
    {                                                                                              \
        CUPTI_DRIVER_TRACE_CBID_##cb, #cb, sizeof(cb##_params), (const rec_cupti_field[]) {        \
            __VA_ARGS__, END_FIELDS                                                                \
        }                                                                                          \
    }
#define ALLOC_ASYNC(cb)                                                                            \
    LAYOUT(cb, FIELD(cb, dptr, OUT), FIELD(cb, bytesize, SIZE), FIELD(cb, hStream, HEX))
#define FROM_POOL(cb)                                                                              \
    LAYOUT(cb, FIELD(cb, dptr, OUT), FIELD(cb, bytesize, SIZE), FIELD(cb, pool, HEX),              \
           FIELD(cb, hStream, HEX))
#define FREE_ASYNC(cb) LAYOUT(cb, FIELD(cb, dptr, HEX), FIELD(cb, hStream, HEX))

static const rec_cupti_layout layouts[] = {
    LAYOUT(cuMemAlloc_v2, FIELD(cuMemAlloc_v2, dptr, OUT), FIELD(cuMemAlloc_v2, bytesize, SIZE)),
    LAYOUT(cuMemAllocPitch_v2, FIELD(cuMemAllocPitch_v2, dptr, OUT),
           FIELD(cuMemAllocPitch_v2, pPitch, OUT), FIELD(cuMemAllocPitch_v2, WidthInBytes, SIZE),
           FIELD(cuMemAllocPitch_v2, Height, SIZE),
           FIELD(cuMemAllocPitch_v2, ElementSizeBytes, UINT)),
    LAYOUT(cuMemFree_v2, FIELD(cuMemFree_v2, dptr, HEX)),
    LAYOUT(cuMemAllocManaged, FIELD(cuMemAllocManaged, dptr, OUT),
           FIELD(cuMemAllocManaged, bytesize, SIZE), FIELD(cuMemAllocManaged, flags, UINT)),
    LAYOUT(cuMemHostAlloc, FIELD(cuMemHostAlloc, pp, OUT), FIELD(cuMemHostAlloc, bytesize, SIZE),
           FIELD(cuMemHostAlloc, Flags, UINT)),
    LAYOUT(cuMemAllocHost_v2, FIELD(cuMemAllocHost_v2, pp, OUT),
           FIELD(cuMemAllocHost_v2, bytesize, SIZE)),
    LAYOUT(cuMemFreeHost, FIELD(cuMemFreeHost, p, HEX)),
    ALLOC_ASYNC(cuMemAllocAsync),
    ALLOC_ASYNC(cuMemAllocAsync_ptsz),
    FROM_POOL(cuMemAllocFromPoolAsync),
    FROM_POOL(cuMemAllocFromPoolAsync_ptsz),
    FREE_ASYNC(cuMemFreeAsync),
    FREE_ASYNC(cuMemFreeAsync_ptsz),
    LAYOUT(cuMemPoolCreate, FIELD(cuMemPoolCreate, pool, OUT),
           FIELD(cuMemPoolCreate, poolProps, POOL_PROPS)),
    LAYOUT(cuMemPoolDestroy, FIELD(cuMemPoolDestroy, pool, HEX)),
    LAYOUT(cuMemPoolTrimTo, FIELD(cuMemPoolTrimTo, pool, HEX),
           FIELD(cuMemPoolTrimTo, minBytesToKeep, SIZE)),
    LAYOUT(cuMemAddressReserve, FIELD(cuMemAddressReserve, ptr, OUT),
           FIELD(cuMemAddressReserve, size, SIZE), FIELD(cuMemAddressReserve, alignment, SIZE),
           FIELD(cuMemAddressReserve, addr, HEX), FIELD(cuMemAddressReserve, flags, HEX)),
    LAYOUT(cuMemAddressFree, FIELD(cuMemAddressFree, ptr, HEX),
           FIELD(cuMemAddressFree, size, SIZE)),
    LAYOUT(cuMemCreate, FIELD(cuMemCreate, handle, OUT), FIELD(cuMemCreate, size, SIZE),
           FIELD(cuMemCreate, prop, ALLOC_PROP), FIELD(cuMemCreate, flags, HEX)),
    LAYOUT(cuMemRelease, FIELD(cuMemRelease, handle, HEX)),
    LAYOUT(cuMemMap, FIELD(cuMemMap, ptr, HEX), FIELD(cuMemMap, size, SIZE),
           FIELD(cuMemMap, offset, SIZE), FIELD(cuMemMap, handle, HEX),
           FIELD(cuMemMap, flags, HEX)),
    LAYOUT(cuMemUnmap, FIELD(cuMemUnmap, ptr, HEX), FIELD(cuMemUnmap, size, SIZE)),
    LAYOUT(cuMemRetainAllocationHandle, FIELD(cuMemRetainAllocationHandle, handle, OUT),
           FIELD(cuMemRetainAllocationHandle, addr, HEX)),
    LAYOUT(cuMemImportFromShareableHandle, FIELD(cuMemImportFromShareableHandle, handle, OUT),
           FIELD(cuMemImportFromShareableHandle, osHandle, HEX),
           FIELD(cuMemImportFromShareableHandle, shHandleType, UINT)),
    /* Host registration (recorded) and the calls counted in the END record: written here
     * by their own names, never through a helper macro, since cuda.h #defines some plain
     * names to their _v2 (cuMemHostRegister, cuIpcOpenMemHandle, cuGraphAddNode). */
    LAYOUT(cuMemHostRegister, FIELD(cuMemHostRegister, p, HEX),
           FIELD(cuMemHostRegister, bytesize, SIZE), FIELD(cuMemHostRegister, Flags, UINT)),
    LAYOUT(cuMemHostRegister_v2, FIELD(cuMemHostRegister_v2, p, HEX),
           FIELD(cuMemHostRegister_v2, bytesize, SIZE), FIELD(cuMemHostRegister_v2, Flags, UINT)),
    LAYOUT(cuMemHostUnregister, FIELD(cuMemHostUnregister, p, HEX)),
    LAYOUT(cuIpcOpenMemHandle, FIELD(cuIpcOpenMemHandle, pdptr, OUT),
           FIELD(cuIpcOpenMemHandle, Flags, UINT)),
    LAYOUT(cuIpcOpenMemHandle_v2, FIELD(cuIpcOpenMemHandle_v2, pdptr, OUT),
           FIELD(cuIpcOpenMemHandle_v2, Flags, UINT)),
    LAYOUT(cuIpcCloseMemHandle, FIELD(cuIpcCloseMemHandle, dptr, HEX)),
    LAYOUT(cuMemPoolImportPointer, FIELD(cuMemPoolImportPointer, ptr_out, OUT),
           FIELD(cuMemPoolImportPointer, pool, HEX)),
    LAYOUT(cuGraphAddMemAllocNode, FIELD(cuGraphAddMemAllocNode, hGraph, HEX),
           FIELD(cuGraphAddMemAllocNode, nodeParams, MEM_ALLOC_NODE)),
    LAYOUT(cuGraphAddMemFreeNode, FIELD(cuGraphAddMemFreeNode, hGraph, HEX),
           FIELD(cuGraphAddMemFreeNode, dptr, HEX)),
    LAYOUT(cuDeviceGraphMemTrim, FIELD(cuDeviceGraphMemTrim, device, INT)),
#if CUDA_VERSION >= 12010
    LAYOUT(cuMulticastCreate, FIELD(cuMulticastCreate, mcHandle, OUT),
           FIELD(cuMulticastCreate, prop, MULTICAST_PROP)),
    LAYOUT(cuMulticastBindMem, FIELD(cuMulticastBindMem, mcHandle, HEX),
           FIELD(cuMulticastBindMem, mcOffset, SIZE), FIELD(cuMulticastBindMem, memHandle, HEX),
           FIELD(cuMulticastBindMem, memOffset, SIZE), FIELD(cuMulticastBindMem, size, SIZE),
           FIELD(cuMulticastBindMem, flags, HEX)),
    LAYOUT(cuMulticastBindAddr, FIELD(cuMulticastBindAddr, mcHandle, HEX),
           FIELD(cuMulticastBindAddr, mcOffset, SIZE), FIELD(cuMulticastBindAddr, memptr, HEX),
           FIELD(cuMulticastBindAddr, size, SIZE), FIELD(cuMulticastBindAddr, flags, HEX)),
    LAYOUT(cuMulticastUnbind, FIELD(cuMulticastUnbind, mcHandle, HEX),
           FIELD(cuMulticastUnbind, dev, INT), FIELD(cuMulticastUnbind, mcOffset, SIZE),
           FIELD(cuMulticastUnbind, size, SIZE)),
#endif
#if CUDA_VERSION >= 12020
    LAYOUT(cuGraphAddNode, FIELD(cuGraphAddNode, hGraph, HEX),
           FIELD(cuGraphAddNode, nodeParams, GRAPH_NODE)),
#endif
#if CUDA_VERSION >= 12030
    LAYOUT(cuGraphAddNode_v2, FIELD(cuGraphAddNode_v2, hGraph, HEX),
           FIELD(cuGraphAddNode_v2, nodeParams, GRAPH_NODE)),
#endif
};
#define N_LAYOUTS (sizeof layouts / sizeof layouts[0])

const rec_cupti_layout *rec_cupti_layout_of(CUpti_CallbackId cbid) {
    for (size_t i = 0; i < N_LAYOUTS; i++)
        if (layouts[i].cbid == cbid)
            return &layouts[i];
    return NULL;
}

const rec_cupti_layout *rec_cupti_layout_named(const char *name) {
    for (size_t i = 0; name && i < N_LAYOUTS; i++)
        if (strcmp(layouts[i].name, name) == 0)
            return &layouts[i];
    return NULL;
}

size_t rec_cupti_layouts(const rec_cupti_layout **out) {
    *out = layouts;
    return N_LAYOUTS;
}

/* Appends to a line being built; *at goes past the end when it overflows. */
static __attribute__((format(printf, 4, 5))) void append(char *out, size_t len, size_t *at,
                                                         const char *fmt, ...) {
    if (*at >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *at, len - *at, fmt, ap);
    va_end(ap);
    *at = n < 0 ? len : *at + (size_t)n;
}

static void append_location(char *out, size_t len, size_t *at, unsigned type,
                            const CUmemLocation *loc) {
    append(out, len, at, "%u,%u,%d", type, (unsigned)loc->type, loc->id);
}

/* An output the driver writes (an 8-byte value at `p`): its value once a
 * successful call wrote it, "-" before (what it holds then is not the
 * driver's). */
static void append_output(char *out, size_t len, size_t *at, const rec_cupti_call *call,
                          const void *p) {
    uint64_t v;
    if (call->site == CUPTI_API_EXIT && call->result == CUDA_SUCCESS) {
        memcpy(&v, p, sizeof v);
        append(out, len, at, "0x%" PRIx64, v);
    } else
        append(out, len, at, "-");
}

#if CUDA_VERSION >= 12020
/* Generic graph node parameters: the type, and for memory nodes what the
 * handler reads of them. */
static void append_graph_node(char *out, size_t len, size_t *at, const rec_cupti_call *call,
                              const CUgraphNodeParams *node) {
    append(out, len, at, "%u", (unsigned)node->type);
    if (node->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        append(out, len, at, ",%" PRIu64 ",", (uint64_t)node->alloc.bytesize);
        append_output(out, len, at, call, &node->alloc.dptr);
    } else if (node->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
        append(out, len, at, ",0x%" PRIx64, (uint64_t)node->free.dptr);
}
#endif

static void append_field(char *out, size_t len, size_t *at, const rec_cupti_field *f,
                         const rec_cupti_call *call) {
    const unsigned char *base = (const unsigned char *)call->params + f->offset;
    uint64_t v = 0;
    unsigned u = 0;
    int i = 0;
    const void *p;
    append(out, len, at, " %s=", f->name);
    switch (f->type) {
    case REC_FIELD_SIZE:
        memcpy(&v, base, sizeof v);
        append(out, len, at, "%" PRIu64, v);
        return;
    case REC_FIELD_HEX:
        memcpy(&v, base, sizeof v);
        append(out, len, at, "0x%" PRIx64, v);
        return;
    case REC_FIELD_UINT:
        memcpy(&u, base, sizeof u);
        append(out, len, at, "%u", u);
        return;
    case REC_FIELD_INT:
        memcpy(&i, base, sizeof i);
        append(out, len, at, "%d", i);
        return;
    default:
        break; /* the pointers */
    }
    memcpy(&p, base, sizeof p);
    if (!p) {
        append(out, len, at, "null");
        return;
    }
    switch (f->type) {
    case REC_FIELD_OUT:
        append_output(out, len, at, call, p);
        break;
    case REC_FIELD_MEM_ALLOC_NODE: {
        const CUDA_MEM_ALLOC_NODE_PARAMS *node = p;
        append(out, len, at, "%" PRIu64 ",", (uint64_t)node->bytesize);
        append_output(out, len, at, call, &node->dptr);
        break;
    }
    case REC_FIELD_MULTICAST_PROP:
#if CUDA_VERSION >= 12010
        append(out, len, at, "%" PRIu64, (uint64_t)((const CUmulticastObjectProp *)p)->size);
#endif
        break;
    case REC_FIELD_GRAPH_NODE:
#if CUDA_VERSION >= 12020
        append_graph_node(out, len, at, call, p);
#endif
        break;
    case REC_FIELD_ALLOC_PROP: {
        const CUmemAllocationProp *prop = p;
        append_location(out, len, at, (unsigned)prop->type, &prop->location);
        break;
    }
    case REC_FIELD_POOL_PROPS: {
        const CUmemPoolProps *props = p;
        append_location(out, len, at, (unsigned)props->allocType, &props->location);
        break;
    }
    case REC_FIELD_SIZE:
    case REC_FIELD_HEX:
    case REC_FIELD_UINT:
    case REC_FIELD_INT:
        break; /* written above */
    }
}

int rec_cupti_log_format(const rec_cupti_call *call, uint32_t tid, char *out, size_t len) {
    const rec_cupti_layout *l = call ? rec_cupti_layout_of(call->cbid) : NULL;
    if (!l || !call->params || len == 0)
        return -1;
    int is_exit = call->site == CUPTI_API_EXIT;
    size_t at = 0;
    append(out, len, &at, "%s %s cbid=%u tid=%u corr=%u ctx=0x%" PRIxPTR,
           is_exit ? "exit" : "enter", l->name, (unsigned)call->cbid, tid, call->correlation_id,
           (uintptr_t)call->context);
    if (is_exit)
        append(out, len, &at, " result=%d", (int)call->result);
    for (const rec_cupti_field *f = l->fields; f->name; f++)
        append_field(out, len, &at, f, call);
    append(out, len, &at, "\n");
    return at < len ? (int)at : -1;
}

int rec_cupti_log_open(const char *path) {
    int old = atomic_exchange(&rec_cupti_log_fd, -1);
    if (old >= 0)
        close(old);
    if (!path)
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    char header[96];
    int n =
        snprintf(header, sizeof header, "# memrec CUPTI callback log v1 pid=%ld\n", (long)getpid());
    if (write(fd, header, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    atomic_store(&rec_cupti_log_fd, fd);
    return 0;
}

/* Out of line: the callback's fast path stays one load and a branch. */
void rec_cupti_log_write(int fd, const rec_cupti_call *call) {
    char line[512];
    int n = rec_cupti_log_format(call, rec_thread_id(), line, sizeof line);
    if (n > 0 && write(fd, line, (size_t)n) != n)
        rec_warn_once(&warned_log,
                      "cannot write the callback log (" GMT_ENV_MEMREC_CALLBACK_LOG ")");
}

void rec_cupti_log_from_env(void) {
    const char *log_path = getenv(GMT_ENV_MEMREC_CALLBACK_LOG);
    if (!log_checked && log_path && *log_path && rec_cupti_log_open(log_path) != 0)
        rec_warn_once(&warned_log,
                      "cannot open the callback log %s (" GMT_ENV_MEMREC_CALLBACK_LOG ")",
                      log_path);
    log_checked = 1;
}
