/* probe_injection.c — a CUDA injection library that only says what the
 * driver does with it, for test_real_driver.sh: what NVIDIA's driver does
 * with CUDA_INJECTION64_PATH is what libmemrec.so (recorder/rec_inject.c)
 * and the fake driver (tests/recorder/fake_cuda/fake_libcuda.c) are built
 * around, so the tier checks it on the real one. Built twice: as is, and
 * linked -z nodelete as libmemrec.so is.
 *
 * On stderr: "probe: loaded" (constructor), "probe: InitializeInjection
 * (local)" or "(global)" (whether the driver opened it RTLD_LOCAL: its own
 * marker symbol is or is not in the global scope), "probe: unloaded"
 * (destructor: dlclose or exit). InitializeInjection returns
 * PROBE_RETURN (default 0). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int probe_injection_marker;
int probe_injection_marker;

__attribute__((constructor)) static void loaded(void) { fprintf(stderr, "probe: loaded\n"); }

__attribute__((destructor)) static void unloaded(void) { fprintf(stderr, "probe: unloaded\n"); }

EXPORT int InitializeInjection(void);
EXPORT int InitializeInjection(void) {
    const char *ret = getenv("PROBE_RETURN");
    void *global = dlopen(NULL, RTLD_NOW); /* its handle searches the global scope only */
    fprintf(stderr, "probe: InitializeInjection (%s)\n",
            global && dlsym(global, "probe_injection_marker") ? "global" : "local");
    return ret ? atoi(ret) : 0;
}
