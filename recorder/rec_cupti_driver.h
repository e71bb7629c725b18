/* rec_cupti_driver.h — the driver calls the CUPTI handler makes itself
 * (which device, which pool, how much is free), and the per-session state
 * they feed: devices seen, the rate limit of driver samples, known pools.
 *
 * The driver is reached only through a function-pointer table resolved with
 * dlsym from libcuda.so.1 at attach time, so the recorder never links
 * libcuda, a missing entry point degrades to "unknown" instead of a crash,
 * and tests replace the table with fakes. Every helper checks its pointer. */
#ifndef GMT_REC_CUPTI_DRIVER_H
#define GMT_REC_CUPTI_DRIVER_H

#include <cuda.h>

#include <stddef.h>
#include <stdint.h>

typedef struct rec_cupti_driver {
    CUresult (*ctx_get_device)(CUdevice *device);
    CUresult (*mem_get_info)(size_t *free_bytes, size_t *total_bytes);
    CUresult (*device_get_name)(char *name, int len, CUdevice device);
    CUresult (*device_total_mem)(size_t *bytes, CUdevice device);
    CUresult (*device_get_mem_pool)(CUmemoryPool *pool, CUdevice device);
    CUresult (*mem_pool_get_attribute)(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
    CUresult (*stream_get_device)(CUstream stream, CUdevice *device);
    CUresult (*pointer_get_attribute)(void *data, CUpointer_attribute attr, CUdeviceptr ptr);
    CUresult (*mem_get_allocation_properties)(CUmemAllocationProp *prop,
                                              CUmemGenericAllocationHandle handle);
    CUresult (*driver_get_version)(int *version);
} rec_cupti_driver;

/* Resolves the table from libcuda.so.1 (already loaded in a CUDA process;
 * never dlclosed). Returns 0, or -1 with err filled when there is no driver. */
int rec_cupti_driver_load(char *err, size_t errlen);

/* cuDriverGetVersion (12040 for 12.4); 0 when unknown or no driver. */
int rec_cupti_driver_version(void);

/* Replaces the table (NULL: no driver at all) and starts a fresh session
 * state, as rec_cupti_driver_reset does. For tests. */
void rec_cupti_set_driver_for_test(const rec_cupti_driver *fake);

/* Forgets devices seen, sample times and pools, and bumps the generation:
 * a new session (or a detach). */
void rec_cupti_driver_reset(void);

/* Changes at every reset; per-thread state of an older generation is stale
 * (an entry whose exit never came must not block the thread forever). */
unsigned rec_cupti_generation(void);

/* Minimum time between two periodic driver free/total samples of a device
 * (default 100 ms). UINT64_MAX: only the first one and failures. */
void rec_cupti_set_sample_interval_for_test(uint64_t ns);

/* ---- lookups (each falls back to an answer that is never a crash) ------ */

/* The device of context `ctx` as current on this thread (cached per
 * thread); 0 when there is no context or no driver. */
uint32_t rec_cupti_context_device(CUcontext ctx);

/* The device a pointer belongs to. Returns 0 and fills *device, -1 when the
 * driver cannot tell. */
int rec_cupti_pointer_device(uint64_t ptr, uint32_t *device);

/* 1 when a pointer is managed memory (cuMemAllocManaged), else 0. */
int rec_cupti_pointer_is_managed(uint64_t ptr);

/* The async pool a pointer came from; 0 when none or unknown. */
uint64_t rec_cupti_pointer_pool(uint64_t ptr);

/* The device of a stream; `fallback` when the driver cannot tell. */
uint32_t rec_cupti_stream_device(CUstream stream, uint32_t fallback);

/* The device's current async pool (cuDeviceGetMemPool); NULL when unknown. */
CUmemoryPool rec_cupti_device_pool(uint32_t device);

/* Where a cuMemCreate handle's memory lives. Returns 0 and fills both, -1
 * when the driver cannot tell. */
int rec_cupti_handle_location(CUmemGenericAllocationHandle handle, uint32_t *device, uint8_t *kind);

/* ---- records ------------------------------------------------------------ */

/* Writes the device record the first time `device` is seen this session. */
void rec_cupti_device_seen(uint32_t device);

/* Samples cuMemGetInfo (the current context's device) as DRIVER_FREE and
 * DRIVER_TOTAL counters at `ts`: always when `force`, otherwise at most
 * once per interval per device. */
void rec_cupti_sample_driver(uint32_t device, uint64_t ts, int force);

/* Remembers a pool's device and memory kind (pool create, default pools). */
void rec_cupti_pool_register(CUmemoryPool pool, uint32_t device, uint8_t kind);

/* The device and memory kind of a registered pool. Returns 0, -1 when
 * unknown. */
int rec_cupti_pool_info(CUmemoryPool pool, uint32_t *device, uint8_t *kind);

/* Samples a pool's reserved and used bytes as POOL_RESERVED / POOL_USED
 * counters keyed by the pool handle; a value equal to the last one written
 * for that pool is not written again. */
void rec_cupti_sample_pool(CUmemoryPool pool, uint32_t device, uint64_t ts);

/* ---- VMM handles and mappings ------------------------------------------
 *
 * Physical memory behind a handle is gone when its last reference and its
 * last mapping are: cuMemRelease of a handle still mapped only drops a
 * reference, cuMemRetainAllocationHandle adds one, and the unmap of the last
 * mapping frees what was released before. Handles this process did not
 * create (imported from a peer, multicast objects) are foreign: no memory
 * of this process, their maps and unmaps are not recorded. A handle the
 * tables do not know (created before the session, or the table full) is
 * "unknown": every release of it is taken at its word, as before. */

typedef enum rec_vmm_verdict {
    REC_VMM_UNKNOWN = 0, /* not tracked: record the call as it is */
    REC_VMM_HELD,        /* still referenced or mapped: nothing to record */
    REC_VMM_GONE,        /* the last reference or mapping: the memory is released now */
    REC_VMM_FOREIGN,     /* not this process's memory: nothing to record */
} rec_vmm_verdict;

/* A handle of cuMemCreate (foreign = 0) or of an import or multicast create
 * (foreign = 1): one reference, no mapping. */
void rec_cupti_vmm_created(uint64_t handle, uint32_t device, uint8_t kind, int foreign);

/* cuMemRetainAllocationHandle: one more reference. */
void rec_cupti_vmm_retained(uint64_t handle);

/* cuMemRelease: one reference less. GONE fills *device and *kind. */
rec_vmm_verdict rec_cupti_vmm_released(uint64_t handle, uint32_t *device, uint8_t *kind);

/* cuMemMap of [addr, addr+size) to `handle`: FOREIGN when the handle is. */
rec_vmm_verdict rec_cupti_vmm_mapped(uint64_t addr, uint64_t size, uint64_t handle);

/* A handle whose memory an unmap released. */
typedef struct rec_vmm_gone {
    uint64_t handle;
    uint32_t device;
    uint8_t kind;
} rec_vmm_gone;

/* cuMemUnmap of [addr, addr+size) (one or more whole mappings): FOREIGN when
 * the first mapping there is foreign; the handles whose last mapping and
 * reference this was go to gone[0 .. *n_gone). */
rec_vmm_verdict rec_cupti_vmm_unmapped(uint64_t addr, uint64_t size, rec_vmm_gone *gone,
                                       size_t max_gone, size_t *n_gone);

#endif
