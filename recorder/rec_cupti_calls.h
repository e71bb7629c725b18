/* rec_cupti_calls.h — what each handled CUDA driver call means for memory,
 * read from the *_params struct CUPTI hands the callback.
 *
 * Kept apart from the handler so that "which cbids, which fields" is one
 * table-like switch with no side effects: the handler (rec_cupti.c) decides
 * what to record, this module only reads arguments and results. */
#ifndef GMT_REC_CUPTI_CALLS_H
#define GMT_REC_CUPTI_CALLS_H

#include <cupti.h>

#include <stddef.h>
#include <stdint.h>

/* The shapes of memory call the handler knows. */
typedef enum rec_call_class {
    REC_CALL_NONE = 0,    /* not a handled cbid */
    REC_CALL_ALLOC,       /* returns memory through an output pointer */
    REC_CALL_FREE,        /* gives memory back by address */
    REC_CALL_POOL_CREATE, /* cuMemPoolCreate */
    REC_CALL_POOL_DESTROY,
    REC_CALL_POOL_TRIM,
    REC_CALL_VA_RESERVE, /* cuMemAddressReserve: address space only */
    REC_CALL_VA_FREE,
    REC_CALL_PHYS_CREATE, /* cuMemCreate: physical memory behind a handle */
    REC_CALL_PHYS_RELEASE,
    REC_CALL_MAP, /* cuMemMap / cuMemUnmap: a VA range backed by a handle */
    REC_CALL_UNMAP,
    REC_CALL_PHYS_RETAIN,   /* cuMemRetainAllocationHandle: one more reference to a handle */
    REC_CALL_PHYS_IMPORT,   /* a handle to memory this process did not create: a peer's
                               (cuMemImportFromShareableHandle) or a multicast object */
    REC_CALL_HOST_REGISTER, /* cuMemHostRegister: pinned host memory at the caller's address */
    REC_CALL_COUNT,         /* counted in the END record, never recorded: see count_mem */
} rec_call_class;

/* What a REC_CALL_COUNT call says about memory (the reasons are at the cbids,
 * rec_cupti_calls.c): all are counted with their bytes unless NOT_MEMORY. */
typedef enum rec_count_mem {
    REC_COUNT_NOT_MEMORY = 0, /* no memory call after all (cuGraphAddNode of a kernel node) */
    REC_COUNT_CALL,           /* counted with the bytes it names (size), nothing remembered */
    REC_COUNT_NEW_GRAPH,      /* graph memory at addr: remembered while its graph may allocate
                                 it (a cuMemFree of it is counted, not recorded) */
    REC_COUNT_NEW_IMPORT,     /* a pointer imported from another process's pool at addr:
                                 remembered until its free, which is counted */
    REC_COUNT_OF_ADDR,        /* names the counted memory at addr; bytes = what it was
                                 remembered with when the call names none */
} rec_count_mem;

/* One decoded call. Fields a class does not use stay zero. */
typedef struct rec_call_info {
    rec_call_class cls;
    CUpti_CallbackId cbid;
    uint8_t count_mem;   /* REC_CALL_COUNT: rec_count_mem */
    uint8_t kind;        /* trace_mem_kind */
    uint8_t async;       /* stream-ordered pool call (alloc/free async) */
    uint8_t has_result;  /* the output (addr/handle/pool) was read (exit, success) */
    uint64_t addr;       /* device/host address, or VMM handle for PHYS_* */
    uint64_t size;       /* accounted bytes (pitch x height for pitched) */
    uint64_t requested;  /* bytes asked for */
    uint64_t stream;     /* raw CUstream; per-thread default as CU_STREAM_PER_THREAD */
    CUstream stream_arg; /* the stream argument itself (for device lookups) */
    CUmemoryPool pool;   /* explicit pool argument or created pool; NULL = none */
    CUmemGenericAllocationHandle handle;   /* MAP: the handle mapped */
    const CUmemAllocationProp *alloc_prop; /* PHYS_CREATE: where the memory lives */
    const CUmemPoolProps *pool_props;      /* POOL_CREATE */
} rec_call_info;

/* The class of a driver cbid (REC_CALL_NONE for cbids we do not handle). */
rec_call_class rec_call_class_of(CUpti_CallbackId cbid);

/* Reads `params` (the cbid's *_params struct). Output pointers are followed
 * only when `read_outputs` is set (the exit of a successful call): before
 * that they hold whatever the caller left there. Returns 0, -1 for an
 * unhandled cbid or a NULL params pointer. */
int rec_call_decode(CUpti_CallbackId cbid, const void *params, int read_outputs,
                    rec_call_info *out);

/* The trace_mem_kind of memory of allocation type `type` at `location`
 * (cuMemCreate properties, pool properties): host locations are pinned
 * host memory, a managed type is managed, the rest device memory. */
uint8_t rec_call_location_kind(CUmemAllocationType type, CUmemLocationType location);

/* The recorder keeps to the CUDA 12.0 API so it builds against any CUDA 12
 * toolkit (and runs on any driver its CUPTI suits). Values newer than 12.0
 * it must still recognise are spelled here by number (they never change);
 * where the headers have them, the build checks the numbers. */
#define REC_MEM_LOCATION_HOST ((CUmemLocationType)0x2)              /* CUDA 12.2 */
#define REC_MEM_LOCATION_HOST_NUMA ((CUmemLocationType)0x3)         /* CUDA 12.2 */
#define REC_MEM_LOCATION_HOST_NUMA_CURRENT ((CUmemLocationType)0x4) /* CUDA 12.2 */
#define REC_MEM_ALLOCATION_MANAGED ((CUmemAllocationType)0x2)       /* CUDA 13.0 */
#if CUDA_VERSION >= 12020
_Static_assert(REC_MEM_LOCATION_HOST == CU_MEM_LOCATION_TYPE_HOST &&
                   REC_MEM_LOCATION_HOST_NUMA == CU_MEM_LOCATION_TYPE_HOST_NUMA &&
                   REC_MEM_LOCATION_HOST_NUMA_CURRENT == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT,
               "CUmemLocationType values");
#endif
#if CUDA_VERSION >= 13000
_Static_assert(REC_MEM_ALLOCATION_MANAGED == CU_MEM_ALLOCATION_TYPE_MANAGED,
               "CUmemAllocationType values");
#endif

/* The handled driver cbids, for enabling them one by one. */
size_t rec_call_cbids(const CUpti_CallbackId **out);

/* The count slot (rec_core.h's rec_count_call) of a cbid the handler may
 * count rather than record, with its name ("cuGraphAddMemAllocNode"); -1
 * for a cbid it never counts. */
int rec_call_count_slot(CUpti_CallbackId cbid, const char **name);

/* The count slot of an allocation call (REC_CALL_ALLOC, cuMemCreate) that failed with an
 * error other than CUDA_ERROR_OUT_OF_MEMORY, named "<call> refused"; -1 for any other cbid.
 * Such a failure is counted, not recorded as alloc_failed (which means out of memory). */
int rec_call_refused_slot(CUpti_CallbackId cbid, const char **name);

#endif
