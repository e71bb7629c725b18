/* rec_nvtx_mem.c — the NVTX memory extension (nvToolsExtMem.h): heaps and
 * regions a sub-allocator announces become block-level events from source
 * NVTX, inside the segment CUPTI recorded for the heap's memory.
 *
 * A heap is typically one cudaMalloc'ed range (already a segment in the
 * trace), so registering it writes nothing; it only fixes the device of its
 * regions, asked from the driver once per heap rather than once per region.
 * Regions are alloc on register, free on unregister (by pointer or by the
 * handle we gave out, which is the region's address), free + alloc on
 * resize, and all of a heap's regions are freed when the heap is
 * unregistered or reset. The bookkeeping is rec_api.c's table.
 *
 * Heaps live in a fixed array; a handle is a pointer into it, checked
 * before use, so a stale or foreign handle is ignored rather than followed.
 * Permissions and naming calls are left as NVTX no-ops. */
#include "rec_api.h"
#include "rec_nvtx.h"

#include "rec_core.h"

/* CUDA 13's NVTX headers have the memory extension; CUDA 12's (12.4 at
 * least, Debian's) do not: built against those, the library serves no such
 * extension (a program using it needs the newer headers itself) and still
 * builds (tests/recorder/real_driver/test_real_driver_build.sh). */
#if __has_include(<nvtx3/nvToolsExtMem.h>)
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExtMem.h>

#include <pthread.h>
#include <string.h>

#define MAX_HEAPS 1024

typedef struct heap_entry {
    int used;
    int placed; /* place is known */
    uint64_t base, size;
    rec_region_place place;
} heap_entry;

static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;

/* Made anew in a forked child (rec_core.h). */
__attribute__((constructor)) static void register_heaps_lock(void) {
    rec_reset_after_fork(&heaps_lock);
}

static heap_entry heaps[MAX_HEAPS];
/* Given out when every slot is used: a valid handle whose regions are placed
 * one by one, like the process-wide heap's. */
static heap_entry overflow_heap;
static int warned_heaps_full;

/* Our heap for a handle; NULL for the process-wide heap, anything that is
 * not one of ours, and a free slot. */
static heap_entry *heap_of(nvtxMemHeapHandle_t handle) {
    uintptr_t p = (uintptr_t)handle, first = (uintptr_t)&heaps[0];
    if (p < first || p >= (uintptr_t)&heaps[MAX_HEAPS] || (p - first) % sizeof(heap_entry))
        return NULL;
    heap_entry *h = (heap_entry *)handle;
    return h->used ? h : NULL;
}

/* The table key of a handle's regions. */
static uint64_t heap_key(nvtxMemHeapHandle_t handle) {
    return handle ? (uint64_t)(uintptr_t)handle : REC_REGION_HEAP_NVTX_GLOBAL;
}

/* Where a heap's regions live: the heap's place when its range is known
 * (resolved once), otherwise each region's own. */
static int heap_place(nvtxMemHeapHandle_t handle, rec_region_place *out) {
    int known = 0;
    uint64_t base = 0;
    pthread_mutex_lock(&heaps_lock);
    heap_entry *h = heap_of(handle);
    if (h && h->placed) {
        *out = h->place;
        known = 1;
    } else if (h) {
        base = h->base;
    }
    pthread_mutex_unlock(&heaps_lock);
    if (known || base == 0)
        return known;
    rec_region_place place = rec_regions_place_of(base);
    pthread_mutex_lock(&heaps_lock);
    if (heap_of(handle) == h && h->base == base) {
        h->place = place;
        h->placed = 1;
    }
    pthread_mutex_unlock(&heaps_lock);
    *out = place;
    return 1;
}

static nvtxMemHeapHandle_t heap_register(nvtxDomainHandle_t domain, const nvtxMemHeapDesc_t *desc) {
    (void)domain;
    uint64_t base = 0, size = 0;
    if (desc && desc->type == NVTX_MEM_TYPE_VIRTUAL_ADDRESS && desc->typeSpecificDesc &&
        desc->typeSpecificDescSize >= sizeof(nvtxMemVirtualRangeDesc_t)) {
        const nvtxMemVirtualRangeDesc_t *range = desc->typeSpecificDesc;
        base = (uint64_t)(uintptr_t)range->ptr;
        size = range->size;
    }
    heap_entry *h = NULL;
    pthread_mutex_lock(&heaps_lock);
    for (int i = 0; i < MAX_HEAPS && !h; i++)
        if (!heaps[i].used)
            h = &heaps[i];
    if (h)
        *h = (heap_entry){.used = 1, .base = base, .size = size};
    pthread_mutex_unlock(&heaps_lock);
    if (!h) {
        rec_warn_once(&warned_heaps_full,
                      "more than %d NVTX memory heaps: regions of later "
                      "ones are placed one by one",
                      MAX_HEAPS);
        return (nvtxMemHeapHandle_t)&overflow_heap;
    }
    /* Resolve the device now, while the memory certainly exists. */
    if (base && rec_enabled()) {
        rec_region_place ignored;
        heap_place((nvtxMemHeapHandle_t)h, &ignored);
    }
    return (nvtxMemHeapHandle_t)h;
}

static void heap_reset(nvtxDomainHandle_t domain, nvtxMemHeapHandle_t heap) {
    (void)domain;
    uint32_t stack = rec_regions_any() ? rec_stack_here(1) : 0;
    rec_region_free_heap(TRACE_SOURCE_NVTX, heap_key(heap), stack);
}

static void heap_unregister(nvtxDomainHandle_t domain, nvtxMemHeapHandle_t heap) {
    (void)domain;
    if (!heap)
        return; /* the process-wide heap cannot be unregistered */
    uint32_t stack = rec_regions_any() ? rec_stack_here(1) : 0;
    rec_region_free_heap(TRACE_SOURCE_NVTX, heap_key(heap), stack);
    pthread_mutex_lock(&heaps_lock);
    heap_entry *h = heap_of(heap);
    if (h)
        memset(h, 0, sizeof *h);
    pthread_mutex_unlock(&heaps_lock);
}

/* The i-th element of an NVTX batch array with a caller-given stride; a
 * stride smaller than the element is taken as the element's size. */
static const void *batch_element(const void *elements, size_t stride, size_t min, size_t i) {
    return (const char *)elements + i * (stride >= min ? stride : min);
}

static void regions_register(nvtxDomainHandle_t domain, const nvtxMemRegionsRegisterBatch_t *desc) {
    (void)domain;
    if (!desc || desc->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS || !desc->regionDescElements)
        return;
    int recording = rec_enabled();
    uint32_t stack = recording ? rec_stack_here(1) : 0;
    rec_region_place heap_wide;
    int have_heap_place = recording && heap_place(desc->heap, &heap_wide);
    for (size_t i = 0; i < desc->regionCount; i++) {
        const nvtxMemVirtualRangeDesc_t *range =
            batch_element(desc->regionDescElements, desc->regionDescElementSize,
                          sizeof(nvtxMemVirtualRangeDesc_t), i);
        uint64_t addr = (uint64_t)(uintptr_t)range->ptr;
        if (desc->regionHandleElementsOut)
            desc->regionHandleElementsOut[i] = (nvtxMemRegionHandle_t)(uintptr_t)addr;
        if (!recording)
            continue;
        rec_region_place place = have_heap_place ? heap_wide : rec_regions_place_of(addr);
        rec_region_alloc(TRACE_SOURCE_NVTX, heap_key(desc->heap), addr, range->size, place, stack);
    }
}

static void regions_resize(nvtxDomainHandle_t domain, const nvtxMemRegionsResizeBatch_t *desc) {
    (void)domain;
    if (!desc || desc->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS || !desc->regionDescElements ||
        !rec_enabled())
        return;
    uint32_t stack = rec_stack_here(1);
    for (size_t i = 0; i < desc->regionDescCount; i++) {
        const nvtxMemVirtualRangeDesc_t *range =
            batch_element(desc->regionDescElements, desc->regionDescElementSize,
                          sizeof(nvtxMemVirtualRangeDesc_t), i);
        uint64_t addr = (uint64_t)(uintptr_t)range->ptr;
        /* A region we never saw: its heap is unknown, so it is placed alone. */
        rec_region_resize(TRACE_SOURCE_NVTX, REC_REGION_HEAP_NVTX_GLOBAL, addr, range->size,
                          rec_regions_place_of(addr), stack);
    }
}

static void regions_unregister(nvtxDomainHandle_t domain,
                               const nvtxMemRegionsUnregisterBatch_t *desc) {
    (void)domain;
    if (!desc || !desc->refElements || !rec_regions_any())
        return;
    if (desc->refType != NVTX_MEM_REGION_REF_TYPE_POINTER &&
        desc->refType != NVTX_MEM_REGION_REF_TYPE_HANDLE)
        return;
    uint32_t stack = rec_stack_here(1);
    for (size_t i = 0; i < desc->refCount; i++) {
        const nvtxMemRegionRef_t *ref =
            batch_element(desc->refElements, desc->refElementSize, sizeof(nvtxMemRegionRef_t), i);
        /* Our region handles are the regions' addresses. */
        uint64_t addr = desc->refType == NVTX_MEM_REGION_REF_TYPE_POINTER
                            ? (uint64_t)(uintptr_t)ref->pointer
                            : (uint64_t)(uintptr_t)ref->handle;
        rec_region_free(TRACE_SOURCE_NVTX, addr, stack);
    }
}

int InitializeInjectionNvtxExtension(struct nvtxExtModuleInfo_t *module_info) {
    if (!module_info)
        return 0;
    if (module_info->moduleId != NVTX_EXT_MODULEID_MEM ||
        module_info->compatId != NVTX_EXT_COMPATID_MEM)
        return 1; /* attached, but this extension stays a no-op */
    const struct {
        size_t cbid;
        intptr_t handler;
    } fills[] = {
        {NVTX3EXT_CBID_nvtxMemHeapRegister, (intptr_t)heap_register},
        {NVTX3EXT_CBID_nvtxMemHeapUnregister, (intptr_t)heap_unregister},
        {NVTX3EXT_CBID_nvtxMemHeapReset, (intptr_t)heap_reset},
        {NVTX3EXT_CBID_nvtxMemRegionsRegister, (intptr_t)regions_register},
        {NVTX3EXT_CBID_nvtxMemRegionsResize, (intptr_t)regions_resize},
        {NVTX3EXT_CBID_nvtxMemRegionsUnregister, (intptr_t)regions_unregister},
    };
    for (size_t s = 0; s < module_info->segmentsCount && module_info->segments; s++) {
        nvtxExtModuleSegment_t *segment = &module_info->segments[s];
        if (segment->segmentId != 1 || !segment->functionSlots)
            continue;
        for (size_t i = 0; i < sizeof fills / sizeof fills[0]; i++)
            if (fills[i].cbid < segment->slotCount)
                segment->functionSlots[fills[i].cbid] = fills[i].handler;
    }
    return 1;
}

#else /* no nvToolsExtMem.h */

int InitializeInjectionNvtxExtension(struct nvtxExtModuleInfo_t *module_info) {
    (void)module_info;
    return 0; /* this build cannot serve the memory extension */
}

#endif
