/* fake_cuda_prog.c — a "CUDA program" for the fake driver (fake_libcuda.c):
 * what test_memrec_cupti.sh and bench/run_unwind_overhead.sh run under
 * memrec. Its steps run in the order given:
 *
 *   load NAME     dlopen(NAME) first, as PyTorch loads its libcupti.so.12
 *   alloc         cuInit, cuMemAlloc 1 MiB, cuMemFree; prints "alloc ok"
 *   which         prints "BASENAME: SUBSCRIBE" for each stand-in CUPTI loaded
 *                 here (standin_cupti_subscribed), "no cupti" when none
 *   throw LIB N   cuInit, then N calls of LIB's gmt_throw_catch (a C++ library
 *                 built with g++ by the test: a throw caught inside it, the
 *                 shape of pybind11 under Python); prints "throws: N" and,
 *                 on stderr, the mean time of one in ns */
#include <cuda.h>

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int print_stand_in(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    int *found = data;
    const char *name = info->dlpi_name, *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (!base || strncmp(base, "libcupti.so", 11) != 0)
        return 0;
    void *lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    void *sym = lib ? dlsym(lib, "standin_cupti_subscribed") : NULL;
    const char *(*subscribed)(void);
    memcpy(&subscribed, &sym, sizeof sym);
    printf("%s: %s\n", base, subscribed ? subscribed() : "not a stand-in");
    (*found)++;
    return 0;
}

static int throw_loop(const char *path, long n) {
    if (cuInit(0) != CUDA_SUCCESS)
        return 1;
    void *lib = dlopen(path, RTLD_NOW);
    void *sym = lib ? dlsym(lib, "gmt_throw_catch") : NULL;
    int (*throw_catch)(int);
    memcpy(&throw_catch, &sym, sizeof sym);
    if (!throw_catch) {
        fprintf(stderr, "fake_cuda_prog: %s: %s\n", path, dlerror());
        return 1;
    }
    struct timespec a, b;
    long caught = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++)
        caught += throw_catch((int)i);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    printf("throws: %ld\n", caught);
    fprintf(stderr, "ns per throw: %.1f\n", n ? ns / (double)n : 0.0);
    return caught == n ? 0 : 1;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "load") && i + 1 < argc) {
            if (!dlopen(argv[++i], RTLD_NOW | RTLD_GLOBAL)) {
                fprintf(stderr, "fake_cuda_prog: %s\n", dlerror());
                return 1;
            }
        } else if (!strcmp(argv[i], "alloc")) {
            CUdeviceptr p = 0;
            if (cuInit(0) != CUDA_SUCCESS || cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS ||
                cuMemFree(p) != CUDA_SUCCESS)
                return 1;
            printf("alloc ok\n");
        } else if (!strcmp(argv[i], "which")) {
            int found = 0;
            dl_iterate_phdr(print_stand_in, &found);
            if (!found)
                printf("no cupti\n");
        } else if (!strcmp(argv[i], "throw") && i + 2 < argc) {
            if (throw_loop(argv[i + 1], atol(argv[i + 2])) != 0)
                return 1;
            i += 2;
        } else {
            fprintf(stderr, "usage: fake_cuda_prog [load NAME] [alloc] [which] [throw LIB N]\n");
            return 2;
        }
    }
    return 0;
}
