/* rec_cupti.h — the CUPTI side of the recorder: subscription and the
 * callback handler that turns driver-API memory calls into trace events.
 *
 * The handler is public so tests can feed it CUpti_CallbackData with the
 * real *_params structs, exactly as CUPTI would, without a driver; and so a
 * raw callback stream saved on a GPU machine (cbid, site, params, result)
 * can be replayed through rec_cupti_handle, which is everything the
 * callback does after unpacking CUpti_CallbackData.
 *
 * What is recorded (all segment level, source cupti): cuMemAlloc, pitched
 * (pitch x height), managed, pinned host, async and pool allocations and
 * their frees; pool trims; cuMemAddressReserve/Free, cuMemCreate/Release,
 * cuMemMap/Unmap as va_reserve/va_free, phys_create/phys_release (addr =
 * the generic allocation handle), map/unmap; a failed allocation as
 * alloc_failed with a driver_free counter at the same timestamp; pool
 * reserved/used counters after pool operations; the device record when a
 * device is first seen and driver free/total samples at most every 100 ms. */
#ifndef GMT_REC_CUPTI_H
#define GMT_REC_CUPTI_H

#include <cupti.h>

#include <stdint.h>

/* Resolves the driver entry points it needs from libcuda.so.1, loads a
 * CUPTI that suits the driver (rec_cupti_lib.h), subscribes (named "memrec"
 * through cuptiSubscribe_v2 where CUPTI has it) and enables the handled
 * driver-API cbids one by one. Returns 0 (also when already attached), or
 * -1 after one warning (no driver, no usable CUPTI, another CUPTI client
 * holds the subscription, CUPTI fails): the program then runs unrecorded. */
int rec_cupti_attach(void);

/* While attached: which CUPTI and driver, in one line ("CUPTI PATH (API
 * version V, how it was found, which subscribe), CUDA driver X.Y"), for the
 * launcher to print; NULL when not attached. */
const char *rec_cupti_in_use(void);

/* The CUPTI callback (CUpti_CallbackFunc). Handles CUPTI_CB_DOMAIN_DRIVER_API
 * only; anything else is ignored. */
void CUPTIAPI rec_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *cbdata);

/* One driver-API callback, unpacked: what a fixture stores. */
typedef struct rec_cupti_call {
    CUpti_CallbackId cbid;      /* CUPTI_DRIVER_TRACE_CBID_* */
    CUpti_ApiCallbackSite site; /* CUPTI_API_ENTER or CUPTI_API_EXIT */
    const void *params;         /* the cbid's *_params struct */
    CUresult result;            /* the call's result (exit only) */
    CUcontext context;          /* context current on the thread, may be NULL */
    uint32_t correlation_id;    /* pairs an entry with its exit */
} rec_cupti_call;

/* Handles one callback on the calling thread. Only the outermost handled
 * call of a thread is recorded (a handled call made inside another one is
 * skipped), an exit without its entry is ignored, and nothing is recorded
 * before the exit. */
void rec_cupti_handle(const rec_cupti_call *call);

/* The raw callback log (MEMREC_CALLBACK_LOG), which the callback writes
 * before handing a call to rec_cupti_handle: rec_cupti_log.h. */

#endif
