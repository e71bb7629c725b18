/* rec_api.h — the table of memory regions the program reports itself, kept
 * in rec_api.c beside memrec.h's exported functions: the NVTX memory
 * extension (nvtxMemRegionsRegister, rec_nvtx_mem.c) and memrec.h's
 * memrec_region_alloc. Both become block-level events inside the segment
 * CUPTI recorded, so both need the same two things: the device a pointer
 * lives on (the analyzer places a block in that device's segments) and a
 * table addr -> (size, device, kind, heap) so a free, given only a pointer or
 * a handle, is written with the device and bytes of its alloc.
 *
 * The table holds only regions whose alloc went into the trace: a free of a
 * region that was registered while nothing recorded writes nothing, so the
 * trace never ends memory it never began. */
#ifndef GMT_REC_API_H
#define GMT_REC_API_H

#include "trace_format.h"

#include <stdint.h>

/* Regions are grouped by heap so a whole heap can be dropped at once
 * (nvtxMemHeapUnregister / Reset). Real NVTX heaps use their handle's
 * address as the key; these two are the keys of the regions outside one. */
#define REC_REGION_HEAP_MEMREC 0u      /* memrec.h regions */
#define REC_REGION_HEAP_NVTX_GLOBAL 1u /* NVTX's process-wide heap (handle NULL) */

/* Where a pointer lives. */
typedef struct rec_region_place {
    uint32_t device;
    uint8_t kind; /* trace_mem_kind */
} rec_region_place;

/* Tells where `addr` lives; returns 0, or -1 when it cannot. The default
 * asks the CUDA driver (cuPointerGetAttributes, found in the already loaded
 * libcuda; the recorder never loads it itself). */
typedef int (*rec_region_resolver)(uint64_t addr, rec_region_place *out);

/* Replaces the resolver (tests); NULL restores the driver's. */
void rec_regions_set_resolver(rec_region_resolver resolver);

/* Where `addr` lives, by the resolver; device 0 and device memory when it
 * cannot tell (warned once). */
rec_region_place rec_regions_place_of(uint64_t addr);

/* Records the alloc of [addr, addr+size) and remembers it. A region already
 * known at addr is replaced (the analyzer reports the double alloc). No-op
 * when not recording, for addr 0 or size 0. `stack_id` is a recorder stack
 * id captured by the caller (its own frames left out). */
void rec_region_alloc(trace_source source, uint64_t heap, uint64_t addr, uint64_t size,
                      rec_region_place place, uint32_t stack_id);

/* Records the free of the region at addr and forgets it; nothing when the
 * region is unknown (its alloc was not recorded). Returns 1 when a region
 * was found, else 0. */
int rec_region_free(trace_source source, uint64_t addr, uint32_t stack_id);

/* The region at addr now has `size` bytes: a free and an alloc at the same
 * address. An unknown region is recorded as a new alloc, placed by
 * `place_if_new`. */
void rec_region_resize(trace_source source, uint64_t heap, uint64_t addr, uint64_t size,
                       rec_region_place place_if_new, uint32_t stack_id);

/* Frees every region of `heap`; returns how many. */
unsigned rec_region_free_heap(trace_source source, uint64_t heap, uint32_t stack_id);

/* 1 when some region is remembered: lets the no-op path skip the lock. */
int rec_regions_any(void);

#endif
