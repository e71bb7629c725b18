/* rec_api.c — libmemrec.so's side of memrec.h (the exported functions the
 * header's wrappers and Python's ctypes find at run time), and the table of
 * regions the program reports itself, which memrec.h regions and the NVTX
 * memory extension (rec_nvtx_mem.c) share (see rec_api.h).
 *
 * The exported functions are thin translations into rec_emit_marker or the
 * region table, and return at once when nothing records: the program's
 * calls must cost nothing outside a recording. A stack is captured in the
 * exported function itself, leaving that frame out, so the innermost frame
 * is the program's call site.
 *
 * The table: one open-addressing hash keyed by address (linear probing,
 * backward-shift deletion, so no tombstones pile up in a long run), grown
 * by doubling under one mutex. Registering a region is a sub-allocator's
 * alloc, not a per-kernel event, so one uncontended lock is the price; the
 * event is emitted under the same lock so the alloc and the free of one
 * address are never reordered between threads. Nothing is allocated per
 * event: only the table grows. The driver lookup runs outside the lock. */
#define MEMREC_IMPLEMENTATION
#include "memrec.h"

#include "rec_api.h"
#include "rec_core.h"

#include "gmt_hash.h"

#include <cuda.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_MIN_CAPACITY 1024u
#define TABLE_MAX_CAPACITY (1u << 26) /* 64 M regions: beyond that, not recorded */
#define DRIVER_LOOKUP_TRIES 64        /* libcuda may load after the first region */

typedef struct region {
    uint64_t addr; /* 0 = empty slot */
    uint64_t size;
    uint64_t heap;
    uint32_t device;
    uint8_t kind;
} region;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

/* Made anew in a forked child (rec_core.h). */
__attribute__((constructor)) static void register_table_lock(void) {
    rec_reset_after_fork(&table_lock);
}

static region *table;          /* capacity slots, a power of two */
static uint32_t capacity;      /* guarded by table_lock */
static atomic_uint live_count; /* written under table_lock, read anywhere */
static uint64_t table_serial;  /* the session the table's regions belong to */
static int warned_table_full, warned_no_device;

/* Under table_lock: regions recorded in an earlier session are not this
 * trace's, so a free of one must write nothing. */
static void forget_earlier_sessions(void) {
    uint64_t serial = rec_session_serial();
    if (serial == table_serial)
        return;
    table_serial = serial;
    free(table);
    table = NULL;
    capacity = 0;
    atomic_store(&live_count, 0);
}

/* ---- where a pointer lives ---------------------------------------------- */

typedef CUresult (*pointer_attributes_fn)(unsigned, CUpointer_attribute *, void **, CUdeviceptr);

static _Atomic(rec_region_resolver) test_resolver;
static _Atomic(pointer_attributes_fn) driver_fn;
static atomic_int driver_tries;

static pointer_attributes_fn find_driver(void) {
    pointer_attributes_fn fn = atomic_load_explicit(&driver_fn, memory_order_acquire);
    if (fn || atomic_fetch_add(&driver_tries, 1) >= DRIVER_LOOKUP_TRIES)
        return fn;
    void *sym = dlsym(RTLD_DEFAULT, "cuPointerGetAttributes");
    if (!sym) { /* libcuda loaded RTLD_LOCAL (by libcudart): find it without loading it */
        void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (lib) {
            sym = dlsym(lib, "cuPointerGetAttributes");
            dlclose(lib); /* only drops the reference NOLOAD took */
        }
    }
    union {
        void *object;
        pointer_attributes_fn function;
    } cast = {.object = sym};
    if (cast.function)
        atomic_store_explicit(&driver_fn, cast.function, memory_order_release);
    return cast.function;
}

static int driver_resolve(uint64_t addr, rec_region_place *out) {
    pointer_attributes_fn fn = find_driver();
    if (!fn)
        return -1;
    /* Zeroed words: the driver writes a bool for IS_MANAGED. */
    unsigned int memory_type = 0, is_managed = 0;
    int ordinal = -1;
    CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[3] = {&memory_type, &ordinal, &is_managed};
    if (fn(3, attrs, data, (CUdeviceptr)addr) != CUDA_SUCCESS || ordinal < 0)
        return -1;
    out->device = (uint32_t)ordinal;
    out->kind = is_managed                          ? TRACE_KIND_MANAGED
                : memory_type == CU_MEMORYTYPE_HOST ? TRACE_KIND_PINNED_HOST
                                                    : TRACE_KIND_DEVICE;
    return 0;
}

void rec_regions_set_resolver(rec_region_resolver resolver) {
    atomic_store(&test_resolver, resolver);
}

rec_region_place rec_regions_place_of(uint64_t addr) {
    rec_region_place place = {0, TRACE_KIND_DEVICE};
    rec_region_resolver resolver = atomic_load(&test_resolver);
    int rc = resolver ? resolver(addr, &place) : driver_resolve(addr, &place);
    if (rc != 0) {
        place.device = 0;
        place.kind = TRACE_KIND_DEVICE;
        rec_warn_once(&warned_no_device,
                      "cannot tell the device of an annotated region (cuPointerGetAttributes); "
                      "such regions are recorded on device 0");
    }
    return place;
}

/* ---- the table (all under table_lock) ----------------------------------- */

static uint32_t slot_of(uint64_t addr, uint32_t cap) {
    return (uint32_t)(gmt_hash_fib(addr, 64) >> 32) & (cap - 1);
}

static region *find_slot(uint64_t addr) {
    if (!table)
        return NULL;
    for (uint32_t i = slot_of(addr, capacity);; i = (i + 1) & (capacity - 1)) {
        if (table[i].addr == addr)
            return &table[i];
        if (table[i].addr == 0)
            return NULL;
    }
}

static void put(region *slots, uint32_t cap, const region *r) {
    uint32_t i = slot_of(r->addr, cap);
    while (slots[i].addr != 0 && slots[i].addr != r->addr)
        i = (i + 1) & (cap - 1);
    slots[i] = *r;
}

/* Makes room for one more region; returns 0, -1 when the table cannot grow. */
static int reserve_one(void) {
    uint32_t live = atomic_load_explicit(&live_count, memory_order_relaxed);
    if (table && (uint64_t)(live + 1) * 10 <= (uint64_t)capacity * 7)
        return 0;
    uint32_t cap = table ? capacity * 2 : TABLE_MIN_CAPACITY;
    if (cap > TABLE_MAX_CAPACITY)
        return -1;
    region *grown = calloc(cap, sizeof *grown);
    if (!grown)
        return -1;
    for (uint32_t i = 0; table && i < capacity; i++)
        if (table[i].addr)
            put(grown, cap, &table[i]);
    free(table);
    table = grown;
    capacity = cap;
    return 0;
}

/* Backward-shift deletion: later members of the probe run move up into the
 * hole so every remaining key stays reachable from its home slot. */
static void remove_slot(region *hole) {
    uint32_t i = (uint32_t)(hole - table);
    for (uint32_t j = (i + 1) & (capacity - 1); table[j].addr; j = (j + 1) & (capacity - 1)) {
        uint32_t home = slot_of(table[j].addr, capacity);
        /* j may move to i when its home is not cyclically within (i, j] */
        int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            table[i] = table[j];
            i = j;
        }
    }
    table[i].addr = 0;
    atomic_fetch_sub_explicit(&live_count, 1, memory_order_relaxed);
}

static void emit(trace_source source, uint8_t op, const region *r, uint32_t stack_id) {
    trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.ts_ns = rec_clock_ns(); /* taken under the lock: alloc/free order is the table's */
    ev.addr = r->addr;
    ev.size = r->size;
    ev.requested = r->size;
    ev.stack_id = stack_id;
    ev.device = r->device;
    ev.op = op;
    ev.level = TRACE_LEVEL_BLOCK;
    ev.kind = r->kind;
    ev.source = (uint8_t)source;
    rec_emit_event(&ev);
}

/* ---- the operations ----------------------------------------------------- */

void rec_region_alloc(trace_source source, uint64_t heap, uint64_t addr, uint64_t size,
                      rec_region_place place, uint32_t stack_id) {
    if (!rec_enabled() || addr == 0 || size == 0)
        return;
    region r = {addr, size, heap, place.device, place.kind};
    pthread_mutex_lock(&table_lock);
    forget_earlier_sessions();
    region *known = find_slot(addr);
    if (known) {
        *known = r;
    } else if (reserve_one() == 0) {
        put(table, capacity, &r);
        atomic_fetch_add_explicit(&live_count, 1, memory_order_relaxed);
    } else {
        pthread_mutex_unlock(&table_lock);
        rec_warn_once(&warned_table_full,
                      "too many annotated regions (or out of memory): later ones are not "
                      "recorded");
        return;
    }
    emit(source, TRACE_OP_ALLOC, &r, stack_id);
    pthread_mutex_unlock(&table_lock);
}

int rec_region_free(trace_source source, uint64_t addr, uint32_t stack_id) {
    if (!rec_regions_any() || !rec_enabled())
        return 0;
    pthread_mutex_lock(&table_lock);
    forget_earlier_sessions();
    region *known = find_slot(addr);
    if (known) {
        region r = *known;
        remove_slot(known);
        emit(source, TRACE_OP_FREE, &r, stack_id);
    }
    pthread_mutex_unlock(&table_lock);
    return known != NULL;
}

void rec_region_resize(trace_source source, uint64_t heap, uint64_t addr, uint64_t size,
                       rec_region_place place_if_new, uint32_t stack_id) {
    if (!rec_enabled() || addr == 0)
        return;
    pthread_mutex_lock(&table_lock);
    forget_earlier_sessions();
    region *known = find_slot(addr);
    if (known) {
        region old = *known;
        emit(source, TRACE_OP_FREE, &old, stack_id);
        if (size == 0) {
            remove_slot(known);
        } else {
            known->size = size;
            emit(source, TRACE_OP_ALLOC, known, stack_id);
        }
        pthread_mutex_unlock(&table_lock);
        return;
    }
    pthread_mutex_unlock(&table_lock);
    rec_region_alloc(source, heap, addr, size, place_if_new, stack_id);
}

unsigned rec_region_free_heap(trace_source source, uint64_t heap, uint32_t stack_id) {
    if (!rec_regions_any())
        return 0;
    unsigned freed = 0;
    pthread_mutex_lock(&table_lock);
    forget_earlier_sessions();
    /* After a removal slot i holds a region shifted up from later on: look
     * at it again. Regions shifted into slots already passed came from
     * slots already passed (the run wrapped), so none is missed. */
    for (uint32_t i = 0; table && i < capacity;) {
        if (table[i].addr && table[i].heap == heap) {
            region r = table[i];
            remove_slot(&table[i]);
            emit(source, TRACE_OP_FREE, &r, stack_id);
            freed++;
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&table_lock);
    return freed;
}

int rec_regions_any(void) { return atomic_load_explicit(&live_count, memory_order_relaxed) != 0; }

/* ---- memrec.h ------------------------------------------------------------ */

#define MEMREC_DOMAIN "memrec"

static void emit_step(trace_marker_kind kind, int64_t step) {
    char name[32];
    snprintf(name, sizeof name, "step %" PRId64, step);
    rec_emit_marker(kind, MEMREC_DOMAIN, name, 0, step);
}

void memrec_step_begin(int64_t step) {
    if (rec_enabled())
        emit_step(TRACE_MARK_STEP_BEGIN, step);
}

void memrec_step_end(int64_t step) {
    if (rec_enabled())
        emit_step(TRACE_MARK_STEP_END, step);
}

void memrec_mark(const char *name) {
    if (rec_enabled())
        rec_emit_marker(TRACE_MARK_MARK, MEMREC_DOMAIN, name, 0, 0);
}

void memrec_region_alloc(const void *ptr, size_t size, int device) {
    if (!rec_enabled() || !ptr || size == 0)
        return;
    uint32_t stack = rec_stack_here(1);
    uint64_t addr = (uint64_t)(uintptr_t)ptr;
    rec_region_place place;
    if (device >= 0) {
        place.device = (uint32_t)device;
        place.kind = TRACE_KIND_DEVICE;
    } else {
        place = rec_regions_place_of(addr);
    }
    rec_region_alloc(TRACE_SOURCE_MEMREC, REC_REGION_HEAP_MEMREC, addr, size, place, stack);
}

void memrec_region_free(const void *ptr) {
    if (!ptr || !rec_regions_any())
        return;
    uint32_t stack = rec_enabled() ? rec_stack_here(1) : 0;
    rec_region_free(TRACE_SOURCE_MEMREC, (uint64_t)(uintptr_t)ptr, stack);
}

int memrec_enabled(void) { return rec_enabled(); }
