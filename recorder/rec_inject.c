/* rec_inject.c — how libmemrec.so comes alive in somebody else's process.
 *
 * Two doors, one session:
 *  - LD_PRELOAD (set by the memrec launcher): the constructor arms a session
 *    from the MEMREC_* environment, so NVTX markers and memrec.h calls made
 *    before CUDA starts are recorded. Nothing is written until the first
 *    record: a process that never records anything leaves no file.
 *  - CUDA_INJECTION64_PATH: the driver calls InitializeInjection() from
 *    cuInit; we arm the session if the constructor did not (the variable
 *    was set by hand) and subscribe to CUPTI.
 * Without MEMREC_OUTPUT or CUDA_INJECTION64_PATH (e.g. the library loaded
 * through ctypes just for memrec.h) the library stays silent and inert. */
#include "gmt_env.h"
#include "rec_core.h"
#include "rec_cupti.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

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
            rec_session_start(&config, err, sizeof err) != 0)
            rec_warn_once(&warned, "%s; the program runs unrecorded", err);
        else
            armed = 1;
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
 * Returns 1 on success as the driver expects. */
MEMREC_EXPORT int InitializeInjection(void);
MEMREC_EXPORT int InitializeInjection(void) {
    if (!arm_from_env())
        return 0;
    pthread_mutex_lock(&inject_lock);
    int ok = cupti_attached || config.no_cupti;
    if (!ok) {
        if (rec_cupti_attach() == 0) {
            ok = cupti_attached = 1;
            rec_manifest_note(REC_MANIFEST_NOTE, rec_cupti_in_use()); /* the launcher says it */
        } else {
            rec_manifest_note(REC_MANIFEST_WARNED, "CUPTI"); /* the warning said why */
        }
    }
    pthread_mutex_unlock(&inject_lock);
    return ok;
}

/* _exit() skips atexit, so a process ending that way (Python's
 * multiprocessing workers end with os._exit) would leave its trace without
 * its last frames and its END record. Only in the library injected into
 * programs: it stops this process's own session first, then exits. */
typedef void (*exit_fn)(int);

__attribute__((noreturn)) static void stop_and_exit(const char *name, int status) {
    rec_session_stop_before_exit();
    exit_fn real = (exit_fn)dlsym(RTLD_NEXT, name);
    if (real)
        real(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

MEMREC_EXPORT void _exit(int status) { stop_and_exit("_exit", status); }
MEMREC_EXPORT void _Exit(int status) { stop_and_exit("_Exit", status); }
