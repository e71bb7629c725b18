/* rec_inject.c — how libmemrec.so comes alive in somebody else's process.
 *
 * The launcher does not preload the library: it is loaded only into
 * processes that use CUDA or its tools, by whoever comes first:
 *  - the CUDA driver (CUDA_INJECTION64_PATH) calls InitializeInjection()
 *    from cuInit: we arm the session and subscribe to CUPTI;
 *  - NVTX (NVTX_INJECTION64_PATH) at the program's first NVTX call
 *    (rec_nvtx.c), so markers before CUDA starts are seen;
 *  - memrec.h's wrappers and its Python snippet, at the program's first
 *    call, and memrec's Python hook when PyTorch starts CUDA.
 * Its constructor arms the session from the MEMREC_* environment; nothing
 * is written until the first record, so a process that records nothing
 * leaves no file. Without MEMREC_OUTPUT and CUDA_INJECTION64_PATH (the
 * library loaded through ctypes just for memrec.h) it stays silent and
 * inert. In a CPython process, arming also asks the interpreter to attach
 * the Python frame hook (rec_python.h) as soon as its main thread runs
 * Python code again.
 *
 * Not preloading is what keeps the program as it was: a preloaded library
 * puts its dependencies (libunwind's _Unwind_* with them, which then took
 * over every C++ throw) into the global scope of every process, compilers
 * and nvidia-smi included. What the preload gave is kept another way:
 * early markers come through NVTX's own injection, and a process that ends
 * with os._exit (multiprocessing workers) has memrec's Python hook call
 * memrec_before_exit first (sitecustomize.py). A C program that calls
 * _exit(2) itself skips the END record (its frames up to the last half
 * second are on disk). */
#include "gmt_env.h"
#include "rec_core.h"
#include "rec_cupti.h"
#include "rec_python.h"

#include <pthread.h>
#include <stdlib.h>

#define MEMREC_EXPORT __attribute__((visibility("default")))

static pthread_mutex_t inject_lock = PTHREAD_MUTEX_INITIALIZER;

/* Made anew in a forked child (rec_core.h). */
__attribute__((constructor)) static void register_inject_lock(void) {
    rec_reset_after_fork(&inject_lock);
}

static int armed, cupti_attached;
static rec_config config;

/* Arms the session from the environment once. Returns 1 when armed. */
static int arm_from_env(void) {
    pthread_mutex_lock(&inject_lock);
    if (!armed) {
        static int warned;
        char err[300] = "";
        if (rec_config_from_env(&config, err, sizeof err) != 0 ||
            rec_session_start(&config, err, sizeof err) != 0) {
            rec_warn_once(&warned, "%s; the program runs unrecorded", err);
        } else {
            armed = 1;
            rec_python_attach_soon();
        }
    }
    pthread_mutex_unlock(&inject_lock);
    return armed;
}

__attribute__((constructor)) static void memrec_loaded(void) {
    const char *out = getenv(GMT_ENV_MEMREC_OUTPUT);
    if (out && *out)
        arm_from_env();
}

/* Called by the CUDA driver (cuInit) when CUDA_INJECTION64_PATH names us.
 *
 * What the real driver does with the answer (R535, seen without a GPU,
 * issue 26): it opens the library RTLD_LOCAL inside the first cuInit,
 * before it probes any device; on 0 it dlcloses the library at once and
 * loads it again at the next cuInit; on nonzero it keeps it. Arming has
 * left things that point into this library by then (a pending call queued
 * in the interpreter, the writer thread, atexit and fork handlers), so it
 * must never be unmapped: it is linked -z nodelete (recorder/CMakeLists.txt),
 * which makes the driver's dlclose a no-op, and once armed it answers 1
 * whether CUPTI subscribed or not (the warning said why; trying again at
 * every cuInit would fail the same way), so the driver keeps it and calls
 * it no more. 0 only when nothing was armed (a bad MEMREC_* setting). */
MEMREC_EXPORT int InitializeInjection(void);
MEMREC_EXPORT int InitializeInjection(void) {
    if (!arm_from_env())
        return 0;
    pthread_mutex_lock(&inject_lock);
    if (!cupti_attached && !config.no_cupti) {
        if (rec_cupti_attach() == 0) {
            cupti_attached = 1;
            rec_manifest_note(REC_MANIFEST_NOTE, rec_cupti_in_use()); /* the launcher says it */
        } else {
            rec_manifest_note(REC_MANIFEST_WARNED, "CUPTI"); /* the warning said why */
        }
    }
    pthread_mutex_unlock(&inject_lock);
    return 1;
}

/* _exit() skips atexit, so a process ending that way would leave its trace
 * without its last frames and its END record. memrec's Python hook calls
 * this from os._exit (Python's multiprocessing workers end with it); a
 * program may call it before its own _exit. Stops this process's own
 * session; nothing in a process that does not record. */
MEMREC_EXPORT void memrec_before_exit(void);
MEMREC_EXPORT void memrec_before_exit(void) { rec_session_stop_before_exit(); }
