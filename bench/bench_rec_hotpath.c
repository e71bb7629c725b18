/* bench_rec_hotpath.c — what one recorded event costs the program's thread:
 * the CUPTI callback (rec_cupti_handle for the entry and the exit of a
 * cuMemAlloc_v2, as CUPTI calls it) -> stack capture (libunwind) -> intern
 * (the lock-free trie) -> enqueue (the thread's ring), measured per call
 * with the writer thread running. The driver calls the handler makes itself
 * go to a fake table that answers at once (a real driver adds its own cost:
 * see bench/README.md). `--direct` measures rec_stack_here + rec_emit_event
 * without the handler.
 *
 * Stacks: a recursion that picks one of two call sites per level from the
 * bits of a counter, so `--stacks N` distinct call chains of the same depth
 * (~32 frames with the defaults) are visited round-robin, as a training
 * loop revisits its allocation sites. Prints the median and p99 per event
 * with stacks and without, for each thread count asked for.
 *
 *   bench_rec_hotpath [--stacks 16384] [--events 200000] [--threads 1,2] [--direct]
 */
#include "rec_core.h"
#include "rec_cupti.h"
#include "rec_cupti_driver.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned levels = 14; /* 2^levels distinct stacks */
static uint32_t events_per_thread = 200000;
static int with_stacks;
static int direct; /* 1: skip the CUPTI handler */

/* The fake driver: device 0, an 80 GiB GPU, every pointer on device 0. */
static CUresult fake_ctx_device(CUdevice *d) {
    *d = 0;
    return CUDA_SUCCESS;
}
static CUresult fake_mem_info(size_t *f, size_t *t) {
    *f = 40ull << 30;
    *t = 80ull << 30;
    return CUDA_SUCCESS;
}
static CUresult fake_name(char *name, int len, CUdevice d) {
    (void)d;
    snprintf(name, (size_t)len, "bench GPU");
    return CUDA_SUCCESS;
}
static CUresult fake_total(size_t *bytes, CUdevice d) {
    (void)d;
    *bytes = 80ull << 30;
    return CUDA_SUCCESS;
}
static CUresult fake_pointer(void *data, CUpointer_attribute attr, CUdeviceptr p) {
    (void)p;
    if (attr != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
        return CUDA_ERROR_INVALID_VALUE;
    *(int *)data = 0;
    return CUDA_SUCCESS;
}
static const rec_cupti_driver fake_driver = {.ctx_get_device = fake_ctx_device,
                                             .mem_get_info = fake_mem_info,
                                             .device_get_name = fake_name,
                                             .device_total_mem = fake_total,
                                             .pointer_get_attribute = fake_pointer};

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The measured work: what a capture source does for one allocation. */
__attribute__((noinline)) static uint64_t record_one(uint64_t addr) {
    uint64_t t0 = now_ns();
    if (direct) {
        trace_event ev = {.addr = addr, .size = 4096, .requested = 4096, .op = TRACE_OP_ALLOC};
        ev.stack_id = with_stacks ? rec_stack_here(1) : 0;
        rec_emit_event(&ev);
    } else {
        CUdeviceptr out = 0;
        cuMemAlloc_v2_params params = {&out, 4096};
        rec_cupti_call call = {.cbid = CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
                               .site = CUPTI_API_ENTER,
                               .params = &params,
                               .context = (CUcontext)0x1000,
                               .correlation_id = (uint32_t)addr};
        rec_cupti_handle(&call);
        out = addr; /* what the driver returns */
        call.site = CUPTI_API_EXIT;
        call.result = CUDA_SUCCESS;
        rec_cupti_handle(&call);
    }
    return now_ns() - t0;
}

static uint64_t descend(unsigned level, uint32_t bits, uint64_t addr);

/* Two call sites per level; the empty asm keeps them from becoming jumps. */
__attribute__((noinline)) static uint64_t via_left(unsigned level, uint32_t bits, uint64_t addr) {
    uint64_t r = descend(level, bits, addr);
    __asm__ volatile("" ::: "memory");
    return r;
}
__attribute__((noinline)) static uint64_t via_right(unsigned level, uint32_t bits, uint64_t addr) {
    uint64_t r = descend(level, bits, addr);
    __asm__ volatile("" ::: "memory");
    return r;
}

__attribute__((noinline)) static uint64_t descend(unsigned level, uint32_t bits, uint64_t addr) {
    if (level == 0)
        return record_one(addr);
    uint64_t r =
        (bits & 1) ? via_left(level - 1, bits >> 1, addr) : via_right(level - 1, bits >> 1, addr);
    __asm__ volatile("" ::: "memory");
    return r;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct run {
    uint64_t *ns;
    uint32_t thread;
} run;

static void *thread_main(void *arg) {
    run *r = arg;
    uint32_t n_stacks = 1u << levels;
    /* Two passes, the first unmeasured: the thread's ring pages and
     * libunwind's per-thread cache are warm in a long-running program. */
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < events_per_thread; i++)
            r->ns[i] = descend(levels, i % n_stacks, ((uint64_t)r->thread << 40) + i);
    return NULL;
}

static void measure(unsigned threads, int stacks, const char *dir) {
    with_stacks = stacks;
    rec_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.path, sizeof c.path, "%s/hotpath-%u-%d.zst", dir, threads, stacks);
    c.stack_depth = stacks ? 64 : 0;
    c.buffer_records = events_per_thread + 1024; /* one pass: the second reuses its pages */
    c.quiet = 1;
    char err[300];
    if (!direct)
        rec_cupti_set_driver_for_test(&fake_driver);
    if (rec_session_start(&c, err, sizeof err) != 0) {
        fprintf(stderr, "bench_rec_hotpath: %s\n", err);
        exit(2);
    }
    run runs[64];
    pthread_t tids[64];
    uint64_t *all = malloc(sizeof(uint64_t) * events_per_thread * threads);
    /* Warm-up pass on this thread: every stack interned once, ring mapped. */
    runs[0] = (run){all, 0};
    thread_main(&runs[0]);
    for (unsigned t = 0; t < threads; t++) {
        runs[t] = (run){all + (size_t)t * events_per_thread, t + 1};
        pthread_create(&tids[t], NULL, thread_main, &runs[t]);
    }
    for (unsigned t = 0; t < threads; t++)
        pthread_join(tids[t], NULL);
    rec_stats st;
    rec_get_stats(&st);
    rec_session_stop();
    size_t n = (size_t)events_per_thread * threads;
    qsort(all, n, sizeof *all, by_value);
    uint64_t reads[1001];
    for (int i = 0; i < 1001; i++) {
        uint64_t t0 = now_ns();
        reads[i] = now_ns() - t0;
    }
    qsort(reads, 1001, sizeof *reads, by_value);
    uint64_t timer_cost = reads[500]; /* the clock read inside each measurement */
    uint64_t med = all[n / 2] > timer_cost ? all[n / 2] - timer_cost : 0;
    uint64_t p99 = all[n * 99 / 100] > timer_cost ? all[n * 99 / 100] - timer_cost : 0;
    printf("%u thread(s), %s: median %llu ns, p99 %llu ns per event (%u distinct stacks, "
           "%llu stack nodes, %llu dropped)\n",
           threads, stacks ? "with stacks" : "no stacks", (unsigned long long)med,
           (unsigned long long)p99, 1u << levels, (unsigned long long)st.stacks,
           (unsigned long long)st.dropped);
    free(all);
}

int main(int argc, char **argv) {
    unsigned thread_counts[8] = {1, 2}, n_counts = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--stacks") && i + 1 < argc) {
            unsigned long s = strtoul(argv[++i], NULL, 10);
            for (levels = 0; (1ul << levels) < s && levels < 20; levels++) {
            }
        } else if (!strcmp(argv[i], "--direct")) {
            direct = 1;
        } else if (!strcmp(argv[i], "--events") && i + 1 < argc) {
            events_per_thread = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            n_counts = 0;
            for (char *p = argv[++i]; *p && n_counts < 8;) {
                thread_counts[n_counts++] = (unsigned)strtoul(p, &p, 10);
                if (*p == ',')
                    p++;
            }
        } else {
            fprintf(stderr, "usage: bench_rec_hotpath [--stacks N] [--events N] [--threads 1,2] "
                            "[--direct]\n");
            return 2;
        }
    }
    char dir[] = "/tmp/gmt-hotpath-XXXXXX";
    if (!mkdtemp(dir))
        return 2;
    printf("%s; stack depth: %u recursion levels x 2 frames + the bench's own frames\n",
           direct ? "rec_stack_here + rec_emit_event" : "CUPTI handler, cuMemAlloc_v2 entry + exit",
           levels);
    for (unsigned i = 0; i < n_counts; i++) {
        measure(thread_counts[i], 1, dir);
        measure(thread_counts[i], 0, dir);
    }
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
