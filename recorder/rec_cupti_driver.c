/* rec_cupti_driver.c — the CUPTI handler's own driver calls and the small
 * per-session state around them (see rec_cupti_driver.h).
 *
 * Shaped for the callback path: no locks and no allocation. Per-device state
 * is two fixed atomic arrays; known pools live in a fixed open-addressing
 * table claimed with compare-and-swap (a process has a handful of pools;
 * when the table is full a pool is simply "unknown"). The context -> device
 * answer is cached per thread and invalidated by a generation number that
 * every reset bumps. VMM handles and mappings live in two more such tables
 * (vmm_slot), whose dead slots are claimed again. */
#include "rec_cupti_driver.h"

#include "rec_core.h"
#include "rec_cupti_calls.h"

#include "gmt_hash.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define TRACKED_DEVICES 64 /* devices with a device record and driver samples */
#define POOL_BITS 8
#define POOL_SLOTS (1 << POOL_BITS)
#define NOTHING_WRITTEN UINT64_MAX
#define DEFAULT_SAMPLE_INTERVAL_NS 100000000ull /* 100 ms */

static rec_cupti_driver loaded_table;
static rec_cupti_driver test_table;
static _Atomic(const rec_cupti_driver *) table; /* NULL: no driver */

static atomic_uint generation = 1;
static _Atomic uint64_t sample_interval_ns = DEFAULT_SAMPLE_INTERVAL_NS;
static atomic_uchar device_seen[TRACKED_DEVICES];
static _Atomic uint64_t last_sample_ns[TRACKED_DEVICES]; /* 0: never sampled */

typedef struct pool_slot {
    _Atomic uint64_t handle; /* 0: empty */
    atomic_int known;        /* device and kind are set */
    atomic_uint device;
    atomic_uchar kind;
    _Atomic uint64_t last_reserved, last_used; /* NOTHING_WRITTEN: none yet */
} pool_slot;
static pool_slot pools[POOL_SLOTS];

/* A VMM handle (key: the handle; a = references | mappings << 32; b = device
 * | kind << 32 | foreign << 40) or a mapping (key: its address; a = the
 * handle; b = its size). A key, once written, stays until a reset, so a probe
 * sequence never breaks: a slot dies (state DEAD) and is claimed again by
 * the next insert that passes it. Lookups and inserts probe at most
 * VMM_PROBES slots: beyond that a handle or mapping is untracked. */
#define HANDLE_SLOTS 16384 /* powers of two */
#define MAP_SLOTS 32768
#define VMM_PROBES 64
enum { SLOT_DEAD = 0, SLOT_CLAIMED, SLOT_LIVE };
typedef struct vmm_slot {
    _Atomic uint64_t key; /* 0: never used */
    atomic_uint state;
    _Atomic uint64_t a, b;
} vmm_slot;
static vmm_slot handles[HANDLE_SLOTS];
static vmm_slot maps[MAP_SLOTS];

static _Thread_local struct {
    unsigned generation;
    CUcontext ctx;
    uint32_t device;
} context_cache;

static const rec_cupti_driver *drv(void) {
    return atomic_load_explicit(&table, memory_order_acquire);
}

/* ---- table ------------------------------------------------------------- */

#define RESOLVE(field, symbol)                                                                     \
    do {                                                                                           \
        void *sym_ = dlsym(lib, symbol);                                                           \
        memcpy(&t.field, &sym_, sizeof sym_); /* object -> function pointer, as POSIX allows */    \
    } while (0)

int rec_cupti_driver_load(char *err, size_t errlen) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(err, errlen, "no CUDA driver (libcuda.so.1: %s)", why ? why : "not found");
        return -1;
    }
    rec_cupti_driver t;
    memset(&t, 0, sizeof t);
    RESOLVE(ctx_get_device, "cuCtxGetDevice");
    RESOLVE(mem_get_info, "cuMemGetInfo_v2");
    RESOLVE(device_get_name, "cuDeviceGetName");
    RESOLVE(device_total_mem, "cuDeviceTotalMem_v2");
    RESOLVE(device_get_mem_pool, "cuDeviceGetMemPool");
    RESOLVE(mem_pool_get_attribute, "cuMemPoolGetAttribute");
    RESOLVE(stream_get_device, "cuStreamGetDevice");
    RESOLVE(pointer_get_attribute, "cuPointerGetAttribute");
    RESOLVE(mem_get_allocation_properties, "cuMemGetAllocationPropertiesFromHandle");
    RESOLVE(driver_get_version, "cuDriverGetVersion");
    if (!t.ctx_get_device) {
        snprintf(err, errlen, "libcuda.so.1 has no cuCtxGetDevice: not a CUDA driver");
        return -1; /* the handle stays open: a driver is never unloaded under the program */
    }
    loaded_table = t;
    rec_cupti_driver_reset();
    atomic_store_explicit(&table, &loaded_table, memory_order_release);
    return 0;
}

int rec_cupti_driver_version(void) {
    const rec_cupti_driver *d = drv();
    int version = 0;
    if (!d || !d->driver_get_version || d->driver_get_version(&version) != CUDA_SUCCESS ||
        version < 0)
        return 0;
    return version;
}

void rec_cupti_set_driver_for_test(const rec_cupti_driver *fake) {
    if (fake)
        test_table = *fake;
    rec_cupti_driver_reset();
    atomic_store_explicit(&table, fake ? &test_table : NULL, memory_order_release);
}

void rec_cupti_driver_reset(void) {
    atomic_fetch_add(&generation, 1);
    for (int i = 0; i < TRACKED_DEVICES; i++) {
        atomic_store(&device_seen[i], 0);
        atomic_store(&last_sample_ns[i], 0);
    }
    for (int i = 0; i < POOL_SLOTS; i++) {
        atomic_store(&pools[i].known, 0);
        atomic_store(&pools[i].last_reserved, NOTHING_WRITTEN);
        atomic_store(&pools[i].last_used, NOTHING_WRITTEN);
        atomic_store(&pools[i].handle, 0);
    }
    for (int i = 0; i < HANDLE_SLOTS; i++) {
        atomic_store(&handles[i].state, SLOT_DEAD);
        atomic_store(&handles[i].key, 0);
    }
    for (int i = 0; i < MAP_SLOTS; i++) {
        atomic_store(&maps[i].state, SLOT_DEAD);
        atomic_store(&maps[i].key, 0);
    }
}

unsigned rec_cupti_generation(void) {
    return atomic_load_explicit(&generation, memory_order_relaxed);
}

void rec_cupti_set_sample_interval_for_test(uint64_t ns) { atomic_store(&sample_interval_ns, ns); }

/* ---- lookups ----------------------------------------------------------- */

uint32_t rec_cupti_context_device(CUcontext ctx) {
    unsigned gen = atomic_load_explicit(&generation, memory_order_relaxed);
    if (ctx && context_cache.generation == gen && context_cache.ctx == ctx)
        return context_cache.device;
    const rec_cupti_driver *d = drv();
    CUdevice dev = 0;
    if (!d || !d->ctx_get_device || d->ctx_get_device(&dev) != CUDA_SUCCESS || dev < 0)
        return 0;
    if (ctx) {
        context_cache.generation = gen;
        context_cache.ctx = ctx;
        context_cache.device = (uint32_t)dev;
    }
    return (uint32_t)dev;
}

int rec_cupti_pointer_device(uint64_t ptr, uint32_t *device) {
    const rec_cupti_driver *d = drv();
    int ordinal = -1;
    if (!ptr || !d || !d->pointer_get_attribute ||
        d->pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)ptr) !=
            CUDA_SUCCESS ||
        ordinal < 0)
        return -1;
    *device = (uint32_t)ordinal;
    return 0;
}

int rec_cupti_pointer_is_managed(uint64_t ptr) {
    const rec_cupti_driver *d = drv();
    unsigned int managed = 0;
    if (!ptr || !d || !d->pointer_get_attribute ||
        d->pointer_get_attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)ptr) !=
            CUDA_SUCCESS)
        return 0;
    return managed != 0;
}

uint64_t rec_cupti_pointer_pool(uint64_t ptr) {
    const rec_cupti_driver *d = drv();
    CUmemoryPool pool = NULL;
    if (!ptr || !d || !d->pointer_get_attribute ||
        d->pointer_get_attribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, (CUdeviceptr)ptr) !=
            CUDA_SUCCESS)
        return 0;
    return (uint64_t)(uintptr_t)pool;
}

uint32_t rec_cupti_stream_device(CUstream stream, uint32_t fallback) {
    const rec_cupti_driver *d = drv();
    CUdevice dev = -1;
    if (!d || !d->stream_get_device || d->stream_get_device(stream, &dev) != CUDA_SUCCESS ||
        dev < 0)
        return fallback;
    return (uint32_t)dev;
}

CUmemoryPool rec_cupti_device_pool(uint32_t device) {
    const rec_cupti_driver *d = drv();
    CUmemoryPool pool = NULL;
    if (!d || !d->device_get_mem_pool ||
        d->device_get_mem_pool(&pool, (CUdevice)device) != CUDA_SUCCESS)
        return NULL;
    return pool;
}

int rec_cupti_handle_location(CUmemGenericAllocationHandle handle, uint32_t *device,
                              uint8_t *kind) {
    const rec_cupti_driver *d = drv();
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    if (!d || !d->mem_get_allocation_properties ||
        d->mem_get_allocation_properties(&prop, handle) != CUDA_SUCCESS)
        return -1;
    *kind = rec_call_location_kind(prop.type, prop.location.type);
    if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop.location.id < 0)
        return -1; /* host memory: the caller's context decides the device */
    *device = (uint32_t)prop.location.id;
    return 0;
}

/* ---- device records and driver samples ----------------------------------- */

void rec_cupti_device_seen(uint32_t device) {
    if (device >= TRACKED_DEVICES ||
        atomic_load_explicit(&device_seen[device], memory_order_relaxed))
        return;
    if (atomic_exchange(&device_seen[device], 1))
        return;
    const rec_cupti_driver *d = drv();
    char name[256] = "";
    size_t total = 0;
    if (!d || !d->device_get_name ||
        d->device_get_name(name, (int)sizeof name, (CUdevice)device) != CUDA_SUCCESS)
        name[0] = '\0';
    name[sizeof name - 1] = '\0';
    if (!d || !d->device_total_mem || d->device_total_mem(&total, (CUdevice)device) != CUDA_SUCCESS)
        total = 0;
    rec_emit_device(device, total, name);
}

static void emit_counter(trace_counter_kind kind, uint32_t device, uint64_t key, uint64_t value,
                         uint64_t ts) {
    trace_counter c = {
        .ts_ns = ts, .key = key, .value = value, .device = device, .kind = (uint8_t)kind};
    rec_emit_counter(&c);
}

void rec_cupti_sample_driver(uint32_t device, uint64_t ts, int force) {
    const rec_cupti_driver *d = drv();
    if (!d || !d->mem_get_info)
        return;
    if (!ts)
        ts = rec_clock_ns();
    if (device < TRACKED_DEVICES) {
        uint64_t last = atomic_load_explicit(&last_sample_ns[device], memory_order_relaxed);
        uint64_t interval = atomic_load_explicit(&sample_interval_ns, memory_order_relaxed);
        int due = last == 0 || (ts > last && ts - last >= interval);
        if (!force && !due)
            return;
        /* One thread wins the sample; the others see it as not due. */
        if (!force && !atomic_compare_exchange_strong(&last_sample_ns[device], &last, ts))
            return;
        if (force)
            atomic_store(&last_sample_ns[device], ts);
    } else if (!force) {
        return;
    }
    size_t free_bytes = 0, total_bytes = 0;
    if (d->mem_get_info(&free_bytes, &total_bytes) != CUDA_SUCCESS)
        return;
    emit_counter(TRACE_COUNTER_DRIVER_FREE, device, 0, free_bytes, ts);
    emit_counter(TRACE_COUNTER_DRIVER_TOTAL, device, 0, total_bytes, ts);
}

/* ---- pools ------------------------------------------------------------- */

/* The slot of `pool`, claimed when `insert`; NULL when absent or full. */
static pool_slot *pool_find(CUmemoryPool pool, int insert) {
    uint64_t key = (uint64_t)(uintptr_t)pool;
    if (!key)
        return NULL;
    uint64_t h = gmt_hash_fib(key >> 4, POOL_BITS);
    for (unsigned probe = 0; probe < POOL_SLOTS; probe++) {
        pool_slot *s = &pools[(h + probe) & (POOL_SLOTS - 1)];
        uint64_t cur = atomic_load_explicit(&s->handle, memory_order_acquire);
        if (cur == key)
            return s;
        if (cur != 0)
            continue;
        if (!insert)
            return NULL;
        uint64_t expected = 0;
        if (atomic_compare_exchange_strong(&s->handle, &expected, key) || expected == key)
            return s;
    }
    return NULL;
}

void rec_cupti_pool_register(CUmemoryPool pool, uint32_t device, uint8_t kind) {
    pool_slot *s = pool_find(pool, 1);
    if (!s)
        return;
    atomic_store(&s->device, device);
    atomic_store(&s->kind, kind);
    atomic_store(&s->last_reserved, NOTHING_WRITTEN); /* a new pool may reuse a handle */
    atomic_store(&s->last_used, NOTHING_WRITTEN);
    atomic_store_explicit(&s->known, 1, memory_order_release);
}

int rec_cupti_pool_info(CUmemoryPool pool, uint32_t *device, uint8_t *kind) {
    pool_slot *s = pool_find(pool, 0);
    if (!s || !atomic_load_explicit(&s->known, memory_order_acquire))
        return -1;
    *device = atomic_load(&s->device);
    *kind = atomic_load(&s->kind);
    return 0;
}

void rec_cupti_sample_pool(CUmemoryPool pool, uint32_t device, uint64_t ts) {
    const rec_cupti_driver *d = drv();
    if (!pool || !d || !d->mem_pool_get_attribute)
        return;
    cuuint64_t reserved = 0, used = 0;
    if (d->mem_pool_get_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) !=
            CUDA_SUCCESS ||
        d->mem_pool_get_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != CUDA_SUCCESS)
        return;
    uint64_t key = (uint64_t)(uintptr_t)pool;
    pool_slot *s = pool_find(pool, 1);
    /* Whoever changes the remembered value writes the sample. */
    if (!s || atomic_exchange(&s->last_reserved, reserved) != reserved)
        emit_counter(TRACE_COUNTER_POOL_RESERVED, device, key, reserved, ts);
    if (!s || atomic_exchange(&s->last_used, used) != used)
        emit_counter(TRACE_COUNTER_POOL_USED, device, key, used, ts);
}

/* ---- VMM handles and mappings -------------------------------------------- */

#define REFS(counts) ((uint32_t)(counts))
#define MAPPINGS(counts) ((uint32_t)((counts) >> 32))
#define ONE_MAPPING (1ull << 32)

/* The home slot of `key` in a table of n (a power of two) slots. */
static uint64_t vmm_hash(uint64_t key, unsigned n) {
    return gmt_hash_fib(key >> 4, (unsigned)__builtin_ctz(n));
}

/* The live slot of `key`; NULL when none. */
static vmm_slot *vmm_find(vmm_slot *t, unsigned n, uint64_t key) {
    if (!key)
        return NULL;
    uint64_t h = vmm_hash(key, n);
    for (unsigned probe = 0; probe < VMM_PROBES; probe++) {
        vmm_slot *s = &t[(h + probe) & (n - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        unsigned st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (k == key && st == SLOT_LIVE)
            return s;
        if (k == 0 && st == SLOT_DEAD)
            return NULL; /* the end of every probe sequence through here */
    }
    return NULL;
}

/* A dead slot claimed for `key`, its fields to be set before vmm_publish;
 * NULL when VMM_PROBES slots are all live. A live slot of the same key (a
 * handle value the driver reused after a release we did not see) dies. */
static vmm_slot *vmm_claim(vmm_slot *t, unsigned n, uint64_t key) {
    if (!key)
        return NULL;
    vmm_slot *old = vmm_find(t, n, key);
    if (old)
        atomic_store_explicit(&old->state, SLOT_DEAD, memory_order_release);
    uint64_t h = vmm_hash(key, n);
    for (unsigned probe = 0; probe < VMM_PROBES; probe++) {
        vmm_slot *s = &t[(h + probe) & (n - 1)];
        unsigned dead = SLOT_DEAD;
        if (atomic_compare_exchange_strong(&s->state, &dead, SLOT_CLAIMED)) {
            atomic_store_explicit(&s->key, key, memory_order_release);
            return s;
        }
    }
    return NULL;
}

static void vmm_publish(vmm_slot *s, uint64_t a, uint64_t b) {
    atomic_store_explicit(&s->a, a, memory_order_relaxed);
    atomic_store_explicit(&s->b, b, memory_order_relaxed);
    atomic_store_explicit(&s->state, SLOT_LIVE, memory_order_release);
}

void rec_cupti_vmm_created(uint64_t handle, uint32_t device, uint8_t kind, int foreign) {
    vmm_slot *s = vmm_claim(handles, HANDLE_SLOTS, handle);
    if (s)
        vmm_publish(s, 1, (uint64_t)device | (uint64_t)kind << 32 | (uint64_t)(foreign != 0) << 40);
}

void rec_cupti_vmm_retained(uint64_t handle) {
    vmm_slot *s = vmm_find(handles, HANDLE_SLOTS, handle);
    if (s)
        atomic_fetch_add(&s->a, 1);
}

/* The verdict on a handle whose counts just became `counts`; fills the
 * handle's device and kind. */
static rec_vmm_verdict vmm_after(vmm_slot *s, uint64_t counts, uint32_t *device, uint8_t *kind) {
    uint64_t b = atomic_load_explicit(&s->b, memory_order_relaxed);
    if (counts != 0)
        return REC_VMM_HELD;
    atomic_store_explicit(&s->state, SLOT_DEAD, memory_order_release);
    if (b >> 40)
        return REC_VMM_FOREIGN;
    *device = (uint32_t)b;
    *kind = (uint8_t)(b >> 32);
    return REC_VMM_GONE;
}

rec_vmm_verdict rec_cupti_vmm_released(uint64_t handle, uint32_t *device, uint8_t *kind) {
    vmm_slot *s = vmm_find(handles, HANDLE_SLOTS, handle);
    if (!s)
        return REC_VMM_UNKNOWN;
    uint64_t old = atomic_fetch_sub(&s->a, 1);
    if (REFS(old) == 0) { /* more releases than references: not ours to judge */
        atomic_fetch_add(&s->a, 1);
        return REC_VMM_UNKNOWN;
    }
    return vmm_after(s, old - 1, device, kind);
}

rec_vmm_verdict rec_cupti_vmm_mapped(uint64_t addr, uint64_t size, uint64_t handle) {
    vmm_slot *h = vmm_find(handles, HANDLE_SLOTS, handle);
    vmm_slot *m = vmm_claim(maps, MAP_SLOTS, addr);
    if (m)
        vmm_publish(m, handle, size);
    if (!h)
        return REC_VMM_UNKNOWN;
    if (m)
        atomic_fetch_add(&h->a, ONE_MAPPING);
    return atomic_load_explicit(&h->b, memory_order_relaxed) >> 40 ? REC_VMM_FOREIGN : REC_VMM_HELD;
}

rec_vmm_verdict rec_cupti_vmm_unmapped(uint64_t addr, uint64_t size, rec_vmm_gone *gone,
                                       size_t max_gone, size_t *n_gone) {
    rec_vmm_verdict first = REC_VMM_UNKNOWN;
    *n_gone = 0;
    uint64_t end = addr + size;
    for (uint64_t at = addr; at < end;) {
        vmm_slot *m = vmm_find(maps, MAP_SLOTS, at);
        if (!m)
            break;
        uint64_t handle = atomic_load_explicit(&m->a, memory_order_relaxed);
        uint64_t len = atomic_load_explicit(&m->b, memory_order_relaxed);
        atomic_store_explicit(&m->state, SLOT_DEAD, memory_order_release);
        vmm_slot *h = vmm_find(handles, HANDLE_SLOTS, handle);
        rec_vmm_verdict v = REC_VMM_UNKNOWN;
        rec_vmm_gone g = {.handle = handle};
        if (h) {
            uint64_t old = atomic_fetch_sub(&h->a, ONE_MAPPING);
            if (MAPPINGS(old) == 0) /* mapped before the handle was known */
                atomic_fetch_add(&h->a, ONE_MAPPING);
            else
                v = vmm_after(h, old - ONE_MAPPING, &g.device, &g.kind);
            if (v != REC_VMM_GONE && atomic_load_explicit(&h->b, memory_order_relaxed) >> 40)
                v = REC_VMM_FOREIGN;
        }
        if (at == addr)
            first = v;
        if (v == REC_VMM_GONE && *n_gone < max_gone)
            gone[(*n_gone)++] = g;
        if (!len)
            break;
        at += len;
    }
    return first;
}
