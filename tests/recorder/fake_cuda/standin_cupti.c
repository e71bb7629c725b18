/* standin_cupti.c — stand-in CUPTI libraries for the recorder's tests, one
 * source built as several libcupti.so.N (tests/recorder/fake_cuda.cmake):
 *
 *   STANDIN_API_VERSION   what cuptiGetVersion returns; 0: no cuptiGetVersion
 *   STANDIN_V2            1: also cuptiSubscribe_v2 (CUPTI 13)
 *   STANDIN_RESULT        what subscribing returns (CUPTI_ERROR_UNKNOWN: as a
 *                         real CUPTI that does not suit the driver)
 *   STANDIN_MINIMAL       1: no cuptiGetResultString either
 *   STANDIN_NO_SUBSCRIBE  1: not a CUPTI at all (no cuptiSubscribe)
 *
 * A subscription hands the callback to the fake driver (fake_libcuda.c's
 * fakecuda_set_callback, found in the process), as the real CUPTI hooks the
 * real driver. standin_cupti_subscribed() says which call subscribed, for
 * the test program to print. */
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

#if !STANDIN_NO_SUBSCRIBE
static CUptiResult subscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                             void *userdata, const char *how) {
    if (STANDIN_RESULT != CUPTI_SUCCESS)
        return STANDIN_RESULT;
    void *set = dlsym(RTLD_DEFAULT, "fakecuda_set_callback");
    void (*set_callback)(CUpti_CallbackFunc, void *);
    memcpy(&set_callback, &set, sizeof set);
    if (set_callback)
        set_callback(callback, userdata);
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
    void *set = dlsym(RTLD_DEFAULT, "fakecuda_set_callback");
    void (*set_callback)(CUpti_CallbackFunc, void *);
    memcpy(&set_callback, &set, sizeof set);
    if (set_callback)
        set_callback(NULL, NULL);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    (void)enable, (void)subscriber, (void)domain, (void)cbid;
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
