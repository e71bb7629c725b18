/* rec_cupti.c — the CUPTI subscription and the callback handler: from
 * driver-API entry/exit callbacks to memory events (see rec_cupti.h).
 *
 * Shape: the callback unpacks CUpti_CallbackData into a rec_cupti_call and
 * hands it to rec_cupti_handle, so live callbacks and replayed fixtures take
 * the same path. Each thread has one "open call" slot: the entry of the
 * outermost handled call fills it (time, and for releases the stack, device
 * and pool while the memory still exists), its exit (matched by correlation
 * id) reads the result and records. A handled call arriving while the slot
 * is open is nested and recorded by nobody: the outer one stands for it.
 * Callbacks of one thread nest strictly, so the slot counts the nested
 * entries whose exits are still to come: an exit that matches neither the
 * open call nor a nested one is the open call's own exit reported with
 * another correlation id, and closes the slot (a slot left open would take
 * every later call of the thread for a nested one: silence for good).
 * Allocations are stamped at their exit (the memory exists from then),
 * releases at their entry (the program gave it up then), so a block freed
 * on one thread and handed out again on another never looks overlapping.
 *
 * VMM physical memory lives while a reference or a mapping of its handle
 * does (rec_cupti_driver.h counts both): a cuMemRelease of a handle still
 * mapped or retained records nothing, and the phys_release is written by
 * whichever release or unmap ends it. Handles imported from a peer and
 * multicast objects are not this process's memory: their maps and unmaps
 * are not recorded (NCCL imports every peer's buffers) but counted.
 *
 * Counted, not recorded (rec_cupti_calls.c says why, call by call): memory
 * of other processes mapped here, CUDA graph memory nodes, multicast binds.
 * Each successful such call adds to its count slot (rec_core.h), which the
 * END record carries. Graph memory and imported pool pointers are also
 * remembered by address (counted_mem below), so that a cuMemFree of one is
 * counted with them instead of recorded as the free of memory never
 * allocated.
 *
 * The handler's own driver calls go through rec_cupti_driver.h; nothing
 * here allocates or locks, and every failure means "not recorded".
 *
 * The raw callback log (MEMREC_CALLBACK_LOG, rec_cupti_log.c) sits in the
 * callback, before the handler, so a replayed fixture is never logged
 * again. */
#include "rec_cupti.h"

#include "rec_core.h"
#include "rec_cupti_calls.h"
#include "rec_cupti_driver.h"
#include "rec_cupti_lib.h"
#include "rec_cupti_log.h"

#include "gmt_env.h"
#include "gmt_hash.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Frames of the recorder on top of a stack captured in at_entry/at_exit:
 * that function, rec_cupti_handle and rec_cupti_callback. The three are
 * kept out of line and out of tail position (KEEP_FRAME) so the count holds
 * in optimized builds. */
#define RECORDER_FRAMES 3
#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")

/* The outermost handled call in progress on this thread. */
typedef struct open_call {
    unsigned generation; /* rec_cupti_generation() when opened; 0 = none */
    uint32_t correlation_id;
    CUpti_CallbackId cbid;
    uint32_t nested; /* handled entries inside it whose exits have not come yet */
    uint64_t entry_ts;
    int holds_writer;     /* rec_call_open was called: rec_call_closed at the exit */
    uint32_t entry_stack; /* releases: captured at entry */
    uint32_t device;      /* releases: the device of what is released */
    uint8_t kind;
    uint64_t pool; /* async frees and trims: the pool */
} open_call;

static _Thread_local open_call thread_call;

static CUpti_SubscriberHandle subscriber;
static atomic_int attached;
static int warned_no_driver, warned_other_client, warned_enable;

/* ---- counted memory -------------------------------------------------------
 * The addresses of graph memory and imported pool pointers, with their bytes.
 * A fixed open-addressing table claimed with compare-and-swap, like
 * rec_cupti_driver.c's: a slot's address, once written, stays (so a probe
 * sequence never breaks) and a slot is live only in the generation that
 * made it (a new session's state forgets them all). An entry dies when a
 * recorded allocation returns its address, or, for an imported pointer
 * (`once`), at its free; graph memory outlives its frees (its graph
 * allocates it again at each launch). When COUNTED_PROBES slots are all
 * live an address is not remembered: its frees are recorded as before. */
#define COUNTED_BITS 10
#define COUNTED_SLOTS (1u << COUNTED_BITS)
#define COUNTED_PROBES 32
enum { COUNTED_DEAD = 0, COUNTED_CLAIMED, COUNTED_LIVE };
typedef struct counted_slot {
    _Atomic uint64_t addr; /* 0: never used */
    _Atomic uint64_t tag;  /* generation << 2 | state */
    _Atomic uint64_t bytes;
    atomic_uchar once; /* ends at its first free */
} counted_slot;
static counted_slot counted_mem[COUNTED_SLOTS];

static uint64_t counted_tag(unsigned state) {
    return (uint64_t)rec_cupti_generation() << 2 | state;
}

static counted_slot *counted_find(uint64_t addr) {
    if (!addr)
        return NULL;
    uint64_t h = gmt_hash_fib(addr >> 4, COUNTED_BITS), live = counted_tag(COUNTED_LIVE);
    for (unsigned probe = 0; probe < COUNTED_PROBES; probe++) {
        counted_slot *s = &counted_mem[(h + probe) & (COUNTED_SLOTS - 1)];
        uint64_t a = atomic_load_explicit(&s->addr, memory_order_acquire);
        if (a == 0)
            return NULL; /* the end of every probe sequence through here */
        if (a == addr && atomic_load_explicit(&s->tag, memory_order_acquire) == live)
            return s;
    }
    return NULL;
}

static void counted_forget(counted_slot *s) {
    atomic_store_explicit(&s->tag, counted_tag(COUNTED_DEAD), memory_order_release);
}

static void counted_remember(uint64_t addr, uint64_t bytes, int once) {
    counted_slot *old = counted_find(addr);
    if (old)
        counted_forget(old); /* an address the driver gave out again */
    if (!addr)
        return;
    uint64_t h = gmt_hash_fib(addr >> 4, COUNTED_BITS), claimed = counted_tag(COUNTED_CLAIMED),
             live = counted_tag(COUNTED_LIVE);
    for (unsigned probe = 0; probe < COUNTED_PROBES; probe++) {
        counted_slot *s = &counted_mem[(h + probe) & (COUNTED_SLOTS - 1)];
        uint64_t t = atomic_load_explicit(&s->tag, memory_order_acquire);
        if (t == claimed || t == live)
            continue;
        if (!atomic_compare_exchange_strong(&s->tag, &t, claimed))
            continue;
        atomic_store_explicit(&s->bytes, bytes, memory_order_relaxed);
        atomic_store_explicit(&s->once, (unsigned char)(once != 0), memory_order_relaxed);
        atomic_store_explicit(&s->addr, addr, memory_order_release);
        atomic_store_explicit(&s->tag, live, memory_order_release);
        return;
    }
}

/* Adds a successful call of `cbid` to its count (nothing for a cbid never counted). */
static void count_call(CUpti_CallbackId cbid, uint64_t bytes) {
    const char *name;
    int slot = rec_call_count_slot(cbid, &name);
    if (slot >= 0)
        rec_count_call((unsigned)slot, cbid, name, bytes);
}

/* A counted call: its count, and the memory it makes known or names. */
static void record_counted(const rec_call_info *ci) {
    uint64_t bytes = ci->size;
    counted_slot *s;
    switch (ci->count_mem) {
    case REC_COUNT_NOT_MEMORY:
        return;
    case REC_COUNT_NEW_GRAPH:
    case REC_COUNT_NEW_IMPORT:
        counted_remember(ci->addr, ci->size, ci->count_mem == REC_COUNT_NEW_IMPORT);
        break;
    case REC_COUNT_OF_ADDR:
        if (!bytes && (s = counted_find(ci->addr)))
            bytes = atomic_load_explicit(&s->bytes, memory_order_relaxed);
        break;
    default:
        break;
    }
    count_call(ci->cbid, bytes);
}

/* A free of counted memory is counted with it, not recorded: returns 1 for one. */
static int free_of_counted(const rec_call_info *ci) {
    counted_slot *s = counted_find(ci->addr);
    if (!s)
        return 0;
    count_call(ci->cbid, atomic_load_explicit(&s->bytes, memory_order_relaxed));
    if (atomic_load_explicit(&s->once, memory_order_relaxed))
        counted_forget(s);
    return 1;
}

/* ---- recording ------------------------------------------------------------ */

static void emit(uint8_t op, const rec_call_info *ci, uint32_t device, uint64_t pool,
                 uint32_t stack, uint64_t ts) {
    rec_cupti_device_seen(device);
    trace_event ev = {
        .ts_ns = ts,
        .addr = op == TRACE_OP_ALLOC_FAILED || op == TRACE_OP_POOL_TRIM ? 0 : ci->addr,
        .size = ci->size,
        .requested = ci->requested,
        .stream = ci->stream,
        .pool = pool,
        .stack_id = stack,
        .device = device,
        .op = op,
        .level = TRACE_LEVEL_SEGMENT,
        .kind = ci->kind,
        .source = TRACE_SOURCE_CUPTI,
    };
    rec_emit_event(&ev);
}

/* The pool an async allocation comes from, and its device and kind. */
static CUmemoryPool alloc_pool(const rec_call_info *ci, uint32_t stream_device, uint32_t *device,
                               uint8_t *kind) {
    CUmemoryPool pool = ci->pool ? ci->pool : rec_cupti_device_pool(stream_device);
    *device = stream_device;
    *kind = ci->kind;
    if (pool && rec_cupti_pool_info(pool, device, kind) != 0 && !ci->pool)
        rec_cupti_pool_register(pool, stream_device, TRACE_KIND_DEVICE); /* a device's own pool */
    return pool;
}

/* A successful allocation (cuMemAlloc & co., cuMemCreate, address reserve,
 * map) or its failure. */
static void record_alloc_like(rec_call_info *ci, CUresult result, uint32_t ctx_device,
                              uint32_t stack) {
    uint64_t ts = rec_clock_ns();
    uint32_t device = ctx_device;
    CUmemoryPool pool = NULL;
    if (ci->async)
        pool =
            alloc_pool(ci, rec_cupti_stream_device(ci->stream_arg, ctx_device), &device, &ci->kind);
    if (ci->cls == REC_CALL_PHYS_CREATE && ci->alloc_prop) {
        ci->kind = rec_call_location_kind(ci->alloc_prop->type, ci->alloc_prop->location.type);
        if (ci->alloc_prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
            ci->alloc_prop->location.id >= 0)
            device = (uint32_t)ci->alloc_prop->location.id;
    }
    if (result != CUDA_SUCCESS) {
        if (ci->cls != REC_CALL_ALLOC && ci->cls != REC_CALL_PHYS_CREATE)
            return; /* a failed reserve or map is no memory asked for */
        const char *name;
        int slot;
        if (result != CUDA_ERROR_OUT_OF_MEMORY &&
            (slot = rec_call_refused_slot(ci->cbid, &name)) >= 0) {
            rec_count_call((unsigned)slot, ci->cbid, name, ci->requested);
            return; /* refused, not short of memory (rec_cupti_calls.c) */
        }
        ci->size = ci->requested;
        rec_cupti_sample_driver(ctx_device, ts, 1);
        emit(TRACE_OP_ALLOC_FAILED, ci, device, (uint64_t)(uintptr_t)pool, stack, ts);
        if (pool)
            rec_cupti_sample_pool(pool, device, ts);
        return;
    }
    uint8_t op = TRACE_OP_ALLOC;
    if (ci->cls == REC_CALL_PHYS_CREATE)
        op = TRACE_OP_PHYS_CREATE;
    else if (ci->cls == REC_CALL_VA_RESERVE)
        op = TRACE_OP_VA_RESERVE;
    else if (ci->cls == REC_CALL_MAP) {
        op = TRACE_OP_MAP;
        if (rec_cupti_vmm_mapped(ci->addr, ci->size, (uint64_t)ci->handle) == REC_VMM_FOREIGN) {
            count_call(ci->cbid, ci->size); /* a peer's memory (or a multicast object's) */
            return;
        }
        uint32_t handle_device;
        if (rec_cupti_handle_location(ci->handle, &handle_device, &ci->kind) == 0)
            device = handle_device;
    }
    /* The pointer's own device, as the free will see it. */
    if (ci->cls == REC_CALL_ALLOC || ci->cls == REC_CALL_MAP || ci->cls == REC_CALL_HOST_REGISTER)
        rec_cupti_pointer_device(ci->addr, &device);
    counted_slot *reused;
    if ((ci->cls == REC_CALL_ALLOC || ci->cls == REC_CALL_MAP) && (reused = counted_find(ci->addr)))
        counted_forget(reused); /* graph memory's address, given out again: this is memory now */
    if (op == TRACE_OP_PHYS_CREATE)
        rec_cupti_vmm_created(ci->addr, device, ci->kind, 0);
    emit(op, ci, device, (uint64_t)(uintptr_t)pool, stack, ts);
    if (pool)
        rec_cupti_sample_pool(pool, device, ts);
}

/* What a release needs while the memory still exists: its device, pool and
 * kind. Fills the open call. */
static void note_release(open_call *oc, const rec_call_info *ci, uint32_t ctx_device) {
    oc->device = ctx_device;
    oc->kind = ci->kind;
    switch (ci->cls) {
    case REC_CALL_FREE:
    case REC_CALL_UNMAP:
        rec_cupti_pointer_device(ci->addr, &oc->device);
        if (ci->async)
            oc->pool = rec_cupti_pointer_pool(ci->addr);
        else if (ci->cls == REC_CALL_FREE && ci->kind == TRACE_KIND_DEVICE &&
                 rec_cupti_pointer_is_managed(ci->addr))
            oc->kind = TRACE_KIND_MANAGED; /* cuMemFree frees managed memory too */
        break;
    case REC_CALL_PHYS_RELEASE:
        rec_cupti_handle_location((CUmemGenericAllocationHandle)ci->addr, &oc->device, &oc->kind);
        break;
    case REC_CALL_POOL_TRIM:
        oc->pool = (uint64_t)(uintptr_t)ci->pool;
        rec_cupti_pool_info(ci->pool, &oc->device, &oc->kind);
        break;
    default:
        break;
    }
}

/* The physical memory an unmap released with its handles' last mapping
 * (released before, while still mapped): a phys_release each, with the
 * unmap's time and stack. */
static void record_unmap(const open_call *oc, rec_call_info *ci) {
    rec_vmm_gone gone[8];
    size_t n_gone = 0;
    if (rec_cupti_vmm_unmapped(ci->addr, ci->size, gone, sizeof gone / sizeof gone[0], &n_gone) !=
        REC_VMM_FOREIGN)
        emit(TRACE_OP_UNMAP, ci, oc->device, 0, oc->entry_stack, oc->entry_ts);
    else
        count_call(ci->cbid, ci->size);
    for (size_t i = 0; i < n_gone; i++) {
        rec_call_info release = {
            .cls = REC_CALL_PHYS_RELEASE, .kind = gone[i].kind, .addr = gone[i].handle};
        emit(TRACE_OP_PHYS_RELEASE, &release, gone[i].device, 0, oc->entry_stack, oc->entry_ts);
    }
}

static void record_release(const open_call *oc, rec_call_info *ci) {
    uint8_t op;
    uint32_t device = oc->device;
    switch (ci->cls) {
    case REC_CALL_FREE:
        if (!ci->addr)
            return; /* cuMemFree(0) frees nothing */
        if (ci->kind == TRACE_KIND_DEVICE && free_of_counted(ci))
            return; /* graph memory or an imported pointer: counted */
        op = TRACE_OP_FREE;
        break;
    case REC_CALL_UNMAP:
        ci->kind = oc->kind;
        record_unmap(oc, ci);
        return;
    case REC_CALL_VA_FREE:
        op = TRACE_OP_VA_FREE;
        break;
    case REC_CALL_PHYS_RELEASE: {
        uint8_t kind = oc->kind;
        switch (rec_cupti_vmm_released(ci->addr, &device, &kind)) {
        case REC_VMM_HELD: /* still mapped or retained: released with the last of them */
        case REC_VMM_FOREIGN:
            return;
        case REC_VMM_GONE:
            ci->kind = kind;
            emit(TRACE_OP_PHYS_RELEASE, ci, device, 0, oc->entry_stack, oc->entry_ts);
            return;
        case REC_VMM_UNKNOWN:
            break;
        }
        op = TRACE_OP_PHYS_RELEASE;
        break;
    }
    case REC_CALL_POOL_TRIM:
        op = TRACE_OP_POOL_TRIM;
        break;
    default:
        return;
    }
    if (ci->cls != REC_CALL_VA_FREE)
        ci->kind = oc->kind; /* what the entry learned (a managed cuMemFree, a host handle) */
    emit(op, ci, device, oc->pool, oc->entry_stack, oc->entry_ts);
    if (oc->pool)
        rec_cupti_sample_pool((CUmemoryPool)(uintptr_t)oc->pool, oc->device, 0);
}

static void record_pool_create(const rec_call_info *ci, uint32_t ctx_device) {
    if (!ci->pool)
        return;
    uint32_t device = ctx_device;
    uint8_t kind = TRACE_KIND_DEVICE;
    if (ci->pool_props) {
        kind = rec_call_location_kind(ci->pool_props->allocType, ci->pool_props->location.type);
        if (ci->pool_props->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
            ci->pool_props->location.id >= 0)
            device = (uint32_t)ci->pool_props->location.id;
    }
    rec_cupti_pool_register(ci->pool, device, kind);
    rec_cupti_device_seen(device);
    rec_cupti_sample_pool(ci->pool, device, 0);
}

/* ---- entry and exit -------------------------------------------------------- */

static int releases_memory(rec_call_class cls) {
    return cls == REC_CALL_FREE || cls == REC_CALL_VA_FREE || cls == REC_CALL_PHYS_RELEASE ||
           cls == REC_CALL_UNMAP || cls == REC_CALL_POOL_TRIM;
}

/* Ends the hold a release stamped at its entry put on the writer. */
static void release_writer(open_call *oc) {
    if (oc->holds_writer) {
        oc->holds_writer = 0;
        rec_call_closed();
    }
}

static NOINLINE void at_entry(const rec_cupti_call *call, rec_call_class cls) {
    open_call *oc = &thread_call;
    unsigned generation = rec_cupti_generation();
    if (oc->generation == generation) {
        oc->nested++; /* nested in a handled call: the outer call is what the program did */
        return;
    }
    release_writer(oc); /* a call whose exit never came (a session change) */
    memset(oc, 0, sizeof *oc);
    oc->generation = generation;
    oc->correlation_id = call->correlation_id;
    oc->cbid = call->cbid;
    oc->entry_ts = rec_clock_ns();
    rec_call_info ci;
    if (releases_memory(cls) && rec_call_decode(call->cbid, call->params, 0, &ci) == 0) {
        oc->entry_stack = rec_stack_here(RECORDER_FRAMES);
        note_release(oc, &ci, rec_cupti_context_device(call->context));
        rec_call_open(oc->entry_ts); /* its event is stamped now, written at the exit */
        oc->holds_writer = 1;
    }
    KEEP_FRAME();
}

static NOINLINE void at_exit(const rec_cupti_call *call, rec_call_class cls) {
    open_call *oc = &thread_call;
    if (oc->generation != rec_cupti_generation())
        return; /* an exit whose entry we did not see */
    if (oc->correlation_id != call->correlation_id || oc->cbid != call->cbid) {
        if (oc->nested) {
            oc->nested--; /* a nested call's exit */
            return;
        }
        if (oc->cbid != call->cbid) { /* not even the same call: close it, unrecorded */
            oc->generation = 0;
            release_writer(oc);
            return;
        }
        /* The open call's own exit under another correlation id: recorded. */
    }
    oc->generation = 0;
    int ok = call->result == CUDA_SUCCESS;
    rec_call_info ci;
    if (rec_call_decode(call->cbid, call->params, ok, &ci) != 0) {
        release_writer(oc);
        return;
    }
    uint32_t ctx_device = rec_cupti_context_device(call->context);
    switch (cls) {
    case REC_CALL_ALLOC:
    case REC_CALL_PHYS_CREATE:
    case REC_CALL_VA_RESERVE:
    case REC_CALL_MAP:
        if (ok || cls == REC_CALL_ALLOC || cls == REC_CALL_PHYS_CREATE)
            record_alloc_like(&ci, call->result, ctx_device, rec_stack_here(RECORDER_FRAMES));
        break;
    case REC_CALL_POOL_CREATE:
        if (ok)
            record_pool_create(&ci, ctx_device);
        break;
    case REC_CALL_POOL_DESTROY:
        break; /* no memory moves now: it goes with the pool's last free */
    case REC_CALL_PHYS_RETAIN:
        if (ok)
            rec_cupti_vmm_retained(ci.addr);
        break;
    case REC_CALL_PHYS_IMPORT:
        if (ok) {
            rec_cupti_vmm_created(ci.addr, ctx_device, TRACE_KIND_DEVICE, 1);
            count_call(ci.cbid, ci.size);
        }
        break;
    case REC_CALL_HOST_REGISTER: /* a failed registration pinned nothing: no alloc_failed */
        if (ok)
            record_alloc_like(&ci, call->result, ctx_device, rec_stack_here(RECORDER_FRAMES));
        break;
    case REC_CALL_COUNT:
        if (ok)
            record_counted(&ci);
        break;
    default:
        if (ok)
            record_release(oc, &ci);
        break;
    }
    release_writer(oc); /* after the event is in the ring */
    rec_cupti_sample_driver(ctx_device, 0, 0);
    KEEP_FRAME();
}

NOINLINE void rec_cupti_handle(const rec_cupti_call *call) {
    if (!call)
        return;
    rec_call_class cls = rec_call_class_of(call->cbid);
    if (cls == REC_CALL_NONE)
        return;
    if (call->site == CUPTI_API_ENTER)
        at_entry(call, cls);
    else if (call->site == CUPTI_API_EXIT)
        at_exit(call, cls);
    KEEP_FRAME();
}

void CUPTIAPI rec_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *cbdata) {
    (void)userdata;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API || !cbdata)
        return;
    const CUpti_CallbackData *cd = cbdata;
    /* Exits are always handled so an open call closes even when the
     * session stopped in between (the emits are then no-ops). */
    if (cd->callbackSite == CUPTI_API_ENTER && !rec_enabled())
        return;
    rec_cupti_call call = {
        .cbid = cbid,
        .site = cd->callbackSite,
        .params = cd->functionParams,
        .result = CUDA_SUCCESS,
        .context = cd->context,
        .correlation_id = cd->correlationId,
    };
    if (cd->callbackSite == CUPTI_API_EXIT)
        call.result = cd->functionReturnValue ? *(const CUresult *)cd->functionReturnValue
                                              : CUDA_ERROR_UNKNOWN;
    rec_cupti_log_call(&call);
    rec_cupti_handle(&call);
    KEEP_FRAME();
}

/* ---- subscription ---------------------------------------------------------- */

static rec_cupti_lib cupti; /* chosen at the first attach, kept for the process */
static char cupti_line[700];
static int warned_cupti;

static const char *cupti_error(CUptiResult r) {
    const char *s = NULL;
    if (!cupti.get_result_string || cupti.get_result_string(r, &s) != CUPTI_SUCCESS || !s)
        s = "unknown CUPTI error";
    return s;
}

/* Enables (or disables) the handled cbids; returns how many CUPTI refused.
 * *newer (may be NULL): how many of those lie above every cbid it took. The
 * recorder's table follows the headers it was built with (CUDA 13), and an
 * older CUPTI (11.8 or 12.x for an R535 driver) does not know their newest
 * calls: CUPTI's cbid list only grows (the values never change), so a
 * refused cbid above the highest one taken is one this CUPTI cannot report,
 * not a refusal worth a warning on every run. */
static int enable_cbids(int enable, int *newer) {
    const CUpti_CallbackId *ids;
    size_t n = rec_call_cbids(&ids), ok = 0;
    CUpti_CallbackId highest_taken = 0;
    for (size_t i = 0; i < n; i++) {
        int taken = cupti.enable_callback((uint32_t)enable, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                          ids[i]) == CUPTI_SUCCESS;
        ok += (size_t)taken;
        if (taken && ids[i] > highest_taken)
            highest_taken = ids[i];
    }
    if (newer) {
        *newer = 0;
        for (size_t i = 0; i < n && ok; i++)
            *newer += ids[i] > highest_taken; /* refused: nothing above the highest was taken */
    }
    return (int)(n - ok);
}

/* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39 in every CUPTI since 10). */
#define MULTIPLE_SUBSCRIBERS ((CUptiResult)39)

static CUptiResult subscribe(char *old_name, size_t old_size) {
    if (!cupti.subscribe_v2)
        return cupti.subscribe(&subscriber, rec_cupti_callback, NULL);
    rec_cupti_subscriber_params params = {
        .struct_size = sizeof params,
        .name = "memrec",
        .old_name = old_name,
        .old_name_size = old_size,
    };
    return cupti.subscribe_v2(&subscriber, rec_cupti_callback, NULL, &params);
}

/* Why a subscription failed, and what would fix it: a CUPTI newer than the
 * driver (CUPTI 13 on an R570 driver, say), no GPU visible. Silent when the
 * launcher already said there is no GPU (MEMREC_NO_DEVICE): a CUPTI cannot
 * subscribe without one (R535 without a GPU: CUPTI 11.8 answers
 * NOT_INITIALIZED, CUPTI 13 UNKNOWN), and one warning is enough. */
static int launcher_said_no_device(void) {
    const char *no_device = getenv(GMT_ENV_MEMREC_NO_DEVICE);
    return no_device && !strcmp(no_device, "1");
}

static void subscribe_failed(CUptiResult r, int driver_version) {
    if (launcher_said_no_device())
        return;
    int cupti_major = rec_cupti_version_major(cupti.version);
    int driver_major = driver_version / 1000;
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    char hint[300] = "";
    if (visible && !*visible)
        snprintf(hint, sizeof hint, "; CUDA_VISIBLE_DEVICES is empty, so no GPU is visible");
    else if (cupti_major && driver_major && cupti_major > driver_major)
        snprintf(hint, sizeof hint,
                 "; this CUPTI is for CUDA %d, the driver is %d.%d: put libcupti.so.%d on "
                 "LD_LIBRARY_PATH or name it in " GMT_ENV_MEMREC_CUPTI,
                 cupti_major, driver_major, driver_version % 1000 / 10, driver_major);
    else if (driver_major && cupti_major && cupti_major < driver_major)
        snprintf(hint, sizeof hint,
                 "; is a GPU visible to the process? else name a CUPTI for CUDA %d "
                 "in " GMT_ENV_MEMREC_CUPTI,
                 driver_major);
    else
        snprintf(hint, sizeof hint, "; is a GPU visible to the process?");
    rec_warn_once(&warned_cupti,
                  "CUPTI subscription failed (%s: %s; %s)%s: CUDA allocations are not "
                  "recorded, the program runs on",
                  cupti.subscribe_v2 ? "cuptiSubscribe_v2" : "cuptiSubscribe", cupti_error(r),
                  cupti.path, hint);
}

int rec_cupti_attach(void) {
    if (atomic_load(&attached))
        return 0;
    char err[1024];
    if (rec_cupti_driver_load(err, sizeof err) != 0) {
        rec_warn_once(&warned_no_driver, "%s: the program runs unrecorded", err);
        return -1;
    }
    int driver_version = rec_cupti_driver_version();
    if (!cupti.handle) {
        rec_cupti_search search;
        rec_cupti_search_default(&search, driver_version);
        search.forced = getenv(GMT_ENV_MEMREC_CUPTI);
        if (rec_cupti_lib_load(&search, &cupti, err, sizeof err) != 0) {
            if (!launcher_said_no_device()) /* no GPU: the launcher's line says all */
                rec_warn_once(&warned_cupti,
                              "no usable CUPTI (%s): CUDA allocations are not recorded, the "
                              "program runs on",
                              err);
            return -1;
        }
    }
    char old_name[2 * REC_CUPTI_OLD_NAME_MIN] = "";
    CUptiResult r = subscribe(old_name, sizeof old_name);
    if (r == MULTIPLE_SUBSCRIBERS) {
        old_name[sizeof old_name - 1] = '\0';
        rec_warn_once(&warned_other_client,
                      "another CUPTI client is subscribed (%s); CUPTI allows one per process, so "
                      "CUDA allocations are not recorded (memrec --no-cupti records NVTX and "
                      "memrec.h only)",
                      old_name[0] ? old_name : "a profiler or debugger");
        return -1;
    }
    if (r != CUPTI_SUCCESS) {
        subscribe_failed(r, driver_version);
        return -1;
    }
    const CUpti_CallbackId *ids;
    size_t n = rec_call_cbids(&ids);
    int newer = 0, failed = enable_cbids(1, &newer);
    if ((size_t)failed == n) {
        cupti.unsubscribe(subscriber);
        rec_warn_once(&warned_enable,
                      "CUPTI refused every memory callback: the program runs unrecorded");
        return -1;
    }
    if (failed > newer)
        rec_warn_once(&warned_enable,
                      "CUPTI refused %d of %zu memory callbacks: those calls are not recorded",
                      failed - newer, n);
    rec_cupti_lib_describe(&cupti, driver_version, cupti_line, sizeof cupti_line);
    rec_cupti_log_from_env();
    atomic_store(&attached, 1);
    return 0;
}

const char *rec_cupti_in_use(void) { return atomic_load(&attached) ? cupti_line : NULL; }
