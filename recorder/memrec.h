/* memrec.h — what a program can tell the gpumemtrace recorder itself: step
 * boundaries, marks, and the regions a custom sub-allocator hands out.
 *
 * Header-only on purpose: a program includes it and needs nothing at link
 * time. Each wrapper finds the real function in libmemrec.so the first time
 * it runs (dlsym on the process's global symbols, then on an already loaded
 * libmemrec.so, then in the libmemrec.so that memrec injects, which
 * CUDA_INJECTION64_PATH names: memrec preloads nothing, so before CUDA
 * starts the library is not loaded yet and the first call loads it); when
 * the program is not running under memrec the wrappers find nothing and
 * each call is one load and one branch. Under memrec but outside a
 * recording window the real functions return at once too.
 *
 * C and C++:
 *     #include "memrec.h"
 *     memrec_step_begin(step);            // each becomes a marker
 *     ...train...
 *     memrec_step_end(step);
 *     memrec_mark("checkpoint saved");
 *     void *p = my_pool_alloc(bytes);     // a block inside a segment
 *     memrec_region_alloc(p, bytes, MEMREC_DEVICE_AUTO);
 *     memrec_region_free(p);
 * Link with -ldl on glibc older than 2.34 (dlsym moved into libc there).
 *
 * Python (ctypes), the same functions under the same names:
 *     import ctypes, os
 *     memrec = None  # only under memrec: the library it injects (loaded once)
 *     path = os.environ.get("CUDA_INJECTION64_PATH", "")
 *     if os.environ.get("MEMREC_OUTPUT") and os.path.basename(path).startswith("libmemrec"):
 *         memrec = ctypes.CDLL(path)
 *         memrec.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
 *         memrec.memrec_region_free.argtypes = [ctypes.c_void_p]
 *         memrec.memrec_step_begin.argtypes = [ctypes.c_int64]
 *         memrec.memrec_step_end.argtypes = [ctypes.c_int64]
 *         memrec.memrec_mark.argtypes = [ctypes.c_char_p]
 *
 * and then, for example:
 *     if memrec: memrec.memrec_step_begin(3)
 *     if memrec: memrec.memrec_region_alloc(tensor.data_ptr(), nbytes, -1)
 *
 * What each call records (trace markers of domain "memrec", block-level
 * memory events of source "memrec", each with the caller's native stack):
 *   memrec_step_begin(n) / memrec_step_end(n)  STEP_BEGIN / STEP_END, value n,
 *                                             named "step n": step n of the analysis
 *   memrec_mark(name)                         MARK named `name` (a name with "step"
 *                                             and a number also starts a step)
 *   memrec_region_alloc(ptr, size, device)    block alloc of [ptr, ptr+size) on
 *                                             `device`; MEMREC_DEVICE_AUTO asks the
 *                                             driver where ptr lives
 *   memrec_region_free(ptr)                   block free of the region at ptr
 *                                             (nothing if its alloc was not recorded)
 *   memrec_enabled()                          1 while a recording runs, else 0
 * A region must lie inside memory the recorder saw allocated (cudaMalloc, a
 * pool, a VMM map): the analyzer places it in that segment. Names longer
 * than 255 bytes are cut. Every function is thread-safe and never fails
 * loudly: what cannot be recorded is not recorded. */
#ifndef MEMREC_H
#define MEMREC_H

#include <stddef.h>
#include <stdint.h>

#define MEMREC_DEVICE_AUTO (-1)

#ifdef __cplusplus
extern "C" {
#endif

#ifdef MEMREC_IMPLEMENTATION
/* libmemrec.so's side: the exported definitions (recorder/rec_api.c). */
#define MEMREC_EXPORT __attribute__((visibility("default")))
MEMREC_EXPORT void memrec_step_begin(int64_t step);
MEMREC_EXPORT void memrec_step_end(int64_t step);
MEMREC_EXPORT void memrec_mark(const char *name);
MEMREC_EXPORT void memrec_region_alloc(const void *ptr, size_t size, int device);
MEMREC_EXPORT void memrec_region_free(const void *ptr);
MEMREC_EXPORT int memrec_enabled(void);
#else

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#ifndef RTLD_DEFAULT /* glibc < 2.34 defines it only with _GNU_SOURCE */
#define RTLD_DEFAULT ((void *)0)
#endif

/* The functions found in libmemrec.so, once per translation unit. */
typedef struct memrec_functions_ {
    void (*step_begin)(int64_t);
    void (*step_end)(int64_t);
    void (*mark)(const char *);
    void (*region_alloc)(const void *, size_t, int);
    void (*region_free)(const void *);
    int (*enabled)(void);
} memrec_functions_;

static memrec_functions_ memrec_fns_;
static int memrec_state_; /* 0 not looked yet, 1 looked (pointers final) */

/* The libmemrec.so memrec injects (its file name starts with "libmemrec"),
 * loaded; NULL when CUDA_INJECTION64_PATH names none (not under memrec, or
 * another tool's library, which is never loaded here). */
static inline void *memrec_injected_(void) {
    const char *path = getenv("CUDA_INJECTION64_PATH");
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path;
    if (!base || strncmp(base, "libmemrec", 9) != 0)
        return NULL;
    void *lib = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    return lib ? lib : dlopen(path, RTLD_NOW | RTLD_LOCAL); /* kept: never closed */
}

static inline void *memrec_lookup_(const char *name) {
    void *sym = dlsym(RTLD_DEFAULT, name);
    if (!sym) { /* loaded, but not into the global namespace */
        void *lib = dlopen("libmemrec.so", RTLD_LAZY | RTLD_NOLOAD);
        if (lib) {
            sym = dlsym(lib, name);
            dlclose(lib); /* drops only the reference RTLD_NOLOAD took */
        }
    }
    if (!sym) { /* under memrec before CUDA started: not loaded yet */
        void *lib = memrec_injected_();
        if (lib)
            sym = dlsym(lib, name);
    }
    return sym;
}

/* Object and function pointers are converted through a union: ISO C has no
 * cast between them, POSIX guarantees the representation. */
#define MEMREC_FIND_(field, name)                                                                  \
    do {                                                                                           \
        union {                                                                                    \
            void *object;                                                                          \
            __typeof__(found.field) function;                                                      \
        } memrec_cast_;                                                                            \
        memrec_cast_.object = memrec_lookup_(name);                                                \
        found.field = memrec_cast_.function;                                                       \
    } while (0)

static inline const memrec_functions_ *memrec_functions_get_(void) {
    if (__atomic_load_n(&memrec_state_, __ATOMIC_ACQUIRE))
        return &memrec_fns_;
    memrec_functions_ found;
    MEMREC_FIND_(step_begin, "memrec_step_begin");
    MEMREC_FIND_(step_end, "memrec_step_end");
    MEMREC_FIND_(mark, "memrec_mark");
    MEMREC_FIND_(region_alloc, "memrec_region_alloc");
    MEMREC_FIND_(region_free, "memrec_region_free");
    MEMREC_FIND_(enabled, "memrec_enabled");
    /* Racing threads find the same pointers; the first store wins harmlessly. */
    __atomic_store(&memrec_fns_.step_begin, &found.step_begin, __ATOMIC_RELAXED);
    __atomic_store(&memrec_fns_.step_end, &found.step_end, __ATOMIC_RELAXED);
    __atomic_store(&memrec_fns_.mark, &found.mark, __ATOMIC_RELAXED);
    __atomic_store(&memrec_fns_.region_alloc, &found.region_alloc, __ATOMIC_RELAXED);
    __atomic_store(&memrec_fns_.region_free, &found.region_free, __ATOMIC_RELAXED);
    __atomic_store(&memrec_fns_.enabled, &found.enabled, __ATOMIC_RELAXED);
    __atomic_store_n(&memrec_state_, 1, __ATOMIC_RELEASE);
    return &memrec_fns_;
}
#undef MEMREC_FIND_

static inline void memrec_step_begin(int64_t step) {
    const memrec_functions_ *f = memrec_functions_get_();
    if (f->step_begin)
        f->step_begin(step);
}

static inline void memrec_step_end(int64_t step) {
    const memrec_functions_ *f = memrec_functions_get_();
    if (f->step_end)
        f->step_end(step);
}

static inline void memrec_mark(const char *name) {
    const memrec_functions_ *f = memrec_functions_get_();
    if (f->mark)
        f->mark(name);
}

static inline void memrec_region_alloc(const void *ptr, size_t size, int device) {
    const memrec_functions_ *f = memrec_functions_get_();
    if (f->region_alloc)
        f->region_alloc(ptr, size, device);
}

static inline void memrec_region_free(const void *ptr) {
    const memrec_functions_ *f = memrec_functions_get_();
    if (f->region_free)
        f->region_free(ptr);
}

static inline int memrec_enabled(void) {
    const memrec_functions_ *f = memrec_functions_get_();
    return f->enabled ? f->enabled() : 0;
}

#endif /* MEMREC_IMPLEMENTATION */

#ifdef __cplusplus
}
#endif
#endif
