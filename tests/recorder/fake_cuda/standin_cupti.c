/* standin_cupti.c — stand-in CUPTI libraries for the recorder's tests, one
 * source built as several libcupti.so.N (tests/recorder/fake_cuda.cmake):
 *
 *   STANDIN_API_VERSION   what cuptiGetVersion returns; 0: no cuptiGetVersion
 *   STANDIN_V2            1: also cuptiSubscribe_v2 (CUPTI 13)
 *   STANDIN_RESULT        what subscribing returns (CUPTI_ERROR_UNKNOWN: as a
 *                         real CUPTI that does not suit the driver)
 *   STANDIN_MINIMAL       1: no cuptiGetResultString either
 *   STANDIN_NO_SUBSCRIBE  1: not a CUPTI at all (no cuptiSubscribe)
 *   STANDIN_MAX_CBID      refuses to enable driver cbids above it, as an older
 *                         CUPTI does with calls newer than it
 *   STANDIN_REFUSE_CBID   refuses to enable that one driver cbid
 *
 * A subscription hands the callback to the fake driver (fake_libcuda.c's
 * fakecuda_set_callback, looked up in the libcuda.so.1 the process has
 * loaded, RTLD_LOCAL or not, as the real CUPTI, which links libcuda.so.1,
 * hooks the real driver). Where the fake driver has no device, subscribing
 * fails with CUPTI_ERROR_UNKNOWN: what CUPTI 13 returned on NVIDIA's R535
 * driver without a GPU (CUPTI 11.8: CUPTI_ERROR_NOT_INITIALIZED), seen with
 * Debian's libcuda1 535 (issue 26). standin_cupti_subscribed() says which
 * call subscribed, for the test program to print. */
#include <cupti.h>

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

#ifndef STANDIN_API_VERSION
#define STANDIN_API_VERSION 0
#endif
#ifndef STANDIN_RESULT
#define STANDIN_RESULT CUPTI_SUCCESS
#endif

static const char *subscribed_with = "nothing";

EXPORT const char *standin_cupti_subscribed(void);
EXPORT const char *standin_cupti_subscribed(void) { return subscribed_with; }

/* A symbol of the driver the process loaded, or NULL. */
static void *driver_symbol(const char *name) {
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *sym = driver ? dlsym(driver, name) : NULL;
    if (driver)
        dlclose(driver); /* drops the reference NOLOAD took; the driver stays */
    return sym;
}

static void set_driver_callback(CUpti_CallbackFunc callback, void *userdata) {
    void *set = driver_symbol("fakecuda_set_callback");
    void (*set_callback)(CUpti_CallbackFunc, void *);
    memcpy(&set_callback, &set, sizeof set);
    if (set_callback)
        set_callback(callback, userdata);
}

#if !STANDIN_NO_SUBSCRIBE
static CUptiResult subscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                             void *userdata, const char *how) {
    if (STANDIN_RESULT != CUPTI_SUCCESS)
        return STANDIN_RESULT;
    void *probe = driver_symbol("fakecuda_has_device");
    int (*has_device)(void);
    memcpy(&has_device, &probe, sizeof probe);
    if (has_device && !has_device())
        return CUPTI_ERROR_UNKNOWN;
    set_driver_callback(callback, userdata);
    *subscriber = (CUpti_SubscriberHandle)0x5b5;
    subscribed_with = how;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                  void *userdata) {
    return subscribe(subscriber, callback, userdata, "cuptiSubscribe");
}

#if STANDIN_V2
/* CUPTI 13's signature (its headers declare it; older ones do not); the
 * params are not looked at. */
#ifdef CUpti_SubscriberParams_STRUCT_SIZE
typedef CUpti_SubscriberParams standin_params;
#else
typedef void standin_params;
EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
                                     CUpti_CallbackFunc callback, void *userdata,
                                     standin_params *params);
#endif
EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
                                     CUpti_CallbackFunc callback, void *userdata,
                                     standin_params *params) {
    (void)params;
    return subscribe(subscriber, callback, userdata, "cuptiSubscribe_v2");
}
#endif
#endif

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
    (void)subscriber;
    set_driver_callback(NULL, NULL);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    (void)enable, (void)subscriber, (void)domain, (void)cbid;
#ifdef STANDIN_MAX_CBID
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid > STANDIN_MAX_CBID)
        return CUPTI_ERROR_INVALID_PARAMETER;
#endif
#ifdef STANDIN_REFUSE_CBID
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == STANDIN_REFUSE_CBID)
        return CUPTI_ERROR_INVALID_PARAMETER;
#endif
    return CUPTI_SUCCESS;
}

#if !STANDIN_MINIMAL
EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str) {
    *str = result == CUPTI_ERROR_UNKNOWN ? "CUPTI_ERROR_UNKNOWN" : "a CUPTI error";
    return CUPTI_SUCCESS;
}
#endif

#if STANDIN_API_VERSION
EXPORT CUptiResult cuptiGetVersion(uint32_t *version) {
    *version = STANDIN_API_VERSION;
    return CUPTI_SUCCESS;
}
#endif
