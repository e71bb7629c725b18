/* real_cuda_prog.c — the C program of the real-driver tier
 * (test_real_driver.sh): a CUDA program that, like the CUDA runtime, loads
 * libcuda.so.1 with dlopen (nothing links it, so LD_LIBRARY_PATH picks the
 * driver: Debian's R535 from fetch.sh, never an installed one). It calls
 * cuInit(0) N times and cuDriverGetVersion, prints each result on stdout,
 * then does some work of its own after the driver is done (where the crash
 * of issue 26 came: the driver had dlclosed the injection library while a
 * thread of it still ran) and exits with the status asked for, so the test
 * can compare stdout and exit status with and without memrec.
 *
 *   real_cuda_prog [INITS [EXIT]]   defaults: 2 cuInit calls, exit 0 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_version_fn)(int *);

int main(int argc, char **argv) {
    int inits = argc > 1 ? atoi(argv[1]) : 2, status = argc > 2 ? atoi(argv[2]) : 0;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda) {
        printf("libcuda.so.1: not found\n");
        return 3;
    }
    cu_init_fn cu_init;
    cu_version_fn cu_version;
    void *a = dlsym(cuda, "cuInit"), *b = dlsym(cuda, "cuDriverGetVersion");
    memcpy(&cu_init, &a, sizeof a);
    memcpy(&cu_version, &b, sizeof b);
    if (!cu_init || !cu_version) {
        printf("libcuda.so.1: no cuInit\n");
        return 3;
    }
    for (int i = 0; i < inits; i++)
        printf("cuInit: %d\n", cu_init(0));
    int version = 0, rc = cu_version(&version);
    printf("cuDriverGetVersion: %d %d\n", rc, version);
    fflush(stdout);
    /* The program's own work, a while after the driver is done: 0.3 s of
     * allocations and sleeps, so a thread left running in an unloaded
     * library would have had time to crash the process. */
    unsigned long sum = 0;
    for (int round = 0; round < 30; round++) {
        size_t n = 4096 + (size_t)round * 512;
        unsigned char *p = malloc(n);
        if (!p)
            return 4;
        memset(p, round, n);
        for (size_t i = 0; i < n; i += 64)
            sum += p[i];
        free(p);
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    printf("work: %lu\n", sum);
    return status;
}
