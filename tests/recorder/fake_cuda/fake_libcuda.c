/* fake_libcuda.c — a stand-in libcuda.so.1 for the recorder's tests without
 * a GPU (built twice, as a 12.4 and a 13.0 driver: FAKE_DRIVER_VERSION).
 *
 * It does what the real driver does to memrec, and no more. What NVIDIA's
 * R535 driver (libcuda.so.535.x from Debian's non-free libcuda1, CUDA 12.2)
 * was seen doing with CUDA_INJECTION64_PATH on a machine without a GPU
 * (issue 26; tests/recorder/real_driver/ runs the real one where it can be
 * had), the fake does too:
 *  - inside cuInit, before it probes any device, it dlopens the library
 *    RTLD_NOW | RTLD_LOCAL and calls InitializeInjection;
 *  - when InitializeInjection returns 0 it dlcloses the library at once
 *    and does the same again at the next cuInit; once it returned nonzero
 *    the library is kept and never called again;
 *  - with no device (none here, or CUDA_VISIBLE_DEVICES="" or
 *    FAKECUDA_NO_DEVICE=1 in the fake) cuInit then returns
 *    CUDA_ERROR_NO_DEVICE, every time, and the calls that need an
 *    initialized driver return CUDA_ERROR_NOT_INITIALIZED.
 * cuMemAlloc_v2 and
 * cuMemFree_v2 run the callback a CUPTI registered with
 * fakecuda_set_callback (the stand-in CUPTI does, as the real one hooks the
 * real driver), entry then exit, with the real *_params structs; the few
 * queries the recorder makes answer for one "Fake GPU" of 16 GiB. */
#include <cupti.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_DRIVER_VERSION
#define FAKE_DRIVER_VERSION 13000
#endif

#define EXPORT __attribute__((visibility("default")))
#define GiB (1024ull * 1024 * 1024)

static CUpti_CallbackFunc callback;
static void *callback_data;
static uint32_t correlation;
static uint64_t next_address = 0x7f0000000000ull;
static int initialized, injected;

EXPORT void fakecuda_set_callback(CUpti_CallbackFunc fn, void *userdata);
EXPORT void fakecuda_set_callback(CUpti_CallbackFunc fn, void *userdata) {
    callback = fn;
    callback_data = userdata;
}

static void fire(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site, const char *name,
                 const void *params, CUresult result, uint32_t corr) {
    if (!callback)
        return;
    uint64_t correlation_data = 0;
    CUpti_CallbackData cd = {.callbackSite = site,
                             .functionName = name,
                             .functionParams = params,
                             .functionReturnValue = &result,
                             .context = (CUcontext)0x1000,
                             .contextUid = 1,
                             .correlationData = &correlation_data,
                             .correlationId = corr};
    callback(callback_data, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &cd);
}

/* The injection, as the real driver does it (see the top of this file). */
static void inject(void) {
    const char *injection = getenv("CUDA_INJECTION64_PATH");
    if (injected || !injection || !*injection)
        return;
    void *lib = dlopen(injection, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    void *entry = dlsym(lib, "InitializeInjection");
    int (*initialize)(void);
    memcpy(&initialize, &entry, sizeof entry);
    if (initialize && initialize())
        injected = 1;
    else
        dlclose(lib); /* and loaded again at the next cuInit */
}

static int no_device(void) {
    const char *visible = getenv("CUDA_VISIBLE_DEVICES"), *none = getenv("FAKECUDA_NO_DEVICE");
    return (visible && !*visible) || (none && !strcmp(none, "1"));
}

/* For the stand-in CUPTI: whether this driver has a device (its
 * subscription fails without one, as the real CUPTI's does). */
EXPORT int fakecuda_has_device(void);
EXPORT int fakecuda_has_device(void) { return !no_device(); }

EXPORT CUresult cuInit(unsigned int flags) {
    (void)flags;
    if (initialized)
        return CUDA_SUCCESS;
    inject();
    if (no_device())
        return CUDA_ERROR_NO_DEVICE;
    initialized = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *version) {
    *version = FAKE_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    *count = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    *device = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice device) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    snprintf(name, (size_t)len, "Fake GPU %d", device);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    (void)device;
    *bytes = 16 * GiB;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    *free_bytes = 15 * GiB;
    *total_bytes = 16 * GiB;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    (void)data, (void)attribute, (void)ptr;
    return CUDA_ERROR_INVALID_VALUE; /* the recorder falls back to the context's device */
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    cuMemAlloc_v2_params params = {dptr, bytesize};
    uint32_t corr = ++correlation;
    fire(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_ENTER, "cuMemAlloc_v2", &params,
         CUDA_SUCCESS, corr);
    *dptr = (CUdeviceptr)next_address;
    next_address += (bytesize + 0xfffff) & ~(uint64_t)0xfffff;
    fire(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_API_EXIT, "cuMemAlloc_v2", &params,
         CUDA_SUCCESS, corr);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
    if (!initialized)
        return CUDA_ERROR_NOT_INITIALIZED;
    cuMemFree_v2_params params = {dptr};
    uint32_t corr = ++correlation;
    fire(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_API_ENTER, "cuMemFree_v2", &params,
         CUDA_SUCCESS, corr);
    fire(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_API_EXIT, "cuMemFree_v2", &params,
         CUDA_SUCCESS, corr);
    return CUDA_SUCCESS;
}
