/* prefault.c — faulting an array's pages in ahead of its owner (see prefault.h).
 *
 * The helper polls: it populates up to `lead` bytes past the owner's mark in steps of a huge
 * page, then sleeps a little until the owner has moved on. The owner publishes its mark with a
 * relaxed store; a stale mark only makes the helper a step late. Populating is idempotent, so
 * a page the owner faulted first costs the helper nothing. */
#include "prefault.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PREFAULT_STEP ((size_t)2 << 20) /* a huge page at a time */
#define PREFAULT_MIN ((size_t)2 << 20)  /* smaller regions: not worth a thread */
#define PREFAULT_NAP_NS 50000           /* the wait for the owner to move on */

struct prefault {
    pthread_t thread;
    char *base; /* page-aligned */
    size_t len, lead, page;
    _Atomic size_t filled; /* the owner's mark, from base */
    atomic_int stop;
};

static void *run(void *arg) {
    prefault *pf = arg;
#ifdef MADV_POPULATE_WRITE
    size_t done = 0;
    while (!atomic_load_explicit(&pf->stop, memory_order_relaxed)) {
        /* whole pages: madvise wants an aligned start, and `done` is the next one */
        size_t want = atomic_load_explicit(&pf->filled, memory_order_relaxed) + pf->lead;
        want &= ~(pf->page - 1);
        if (want > pf->len)
            want = pf->len;
        if (done >= want) {
            if (want == pf->len)
                break; /* all of it is there */
            struct timespec nap = {0, PREFAULT_NAP_NS};
            nanosleep(&nap, NULL);
            continue;
        }
        size_t n = want - done < PREFAULT_STEP ? want - done : PREFAULT_STEP;
        if (madvise(pf->base + done, n, MADV_POPULATE_WRITE) != 0)
            break; /* an older kernel, or no memory: the owner's faults will say */
        done += n;
    }
#endif
    return NULL;
}

prefault *prefault_start(void *base, size_t len, size_t lead) {
#ifdef MADV_POPULATE_WRITE
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || !base)
        return NULL;
    uintptr_t first = ((uintptr_t)base + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t end = ((uintptr_t)base + len) & ~((uintptr_t)page - 1);
    if (end <= first || end - first < PREFAULT_MIN)
        return NULL;
    prefault *pf = calloc(1, sizeof *pf);
    if (!pf)
        return NULL;
    pf->base = (char *)first;
    pf->len = (size_t)(end - first);
    pf->lead = lead;
    pf->page = (size_t)page;
    atomic_init(&pf->filled, 0);
    atomic_init(&pf->stop, 0);
    if (pthread_create(&pf->thread, NULL, run, pf) != 0) {
        free(pf);
        return NULL;
    }
    return pf;
#else
    (void)base;
    (void)len;
    (void)lead;
    return NULL;
#endif
}

void prefault_progress(prefault *pf, size_t filled) {
    if (pf)
        atomic_store_explicit(&pf->filled, filled, memory_order_relaxed);
}

void prefault_stop(prefault *pf) {
    if (!pf)
        return;
    atomic_store_explicit(&pf->stop, 1, memory_order_relaxed);
    pthread_join(pf->thread, NULL);
    free(pf);
}
