/* cupti_log_replay.h — replaying a raw CUPTI callback log (MEMREC_CALLBACK_LOG,
 * format in tests/fixtures/cupti/README.md) through rec_cupti_handle, for
 * test_rec_cupti_fixture.c.
 *
 * What it holds: a fake driver that answers from what the replayed calls
 * allocated (which pool a pointer came from, where a cuMemCreate handle
 * lives), as a real one would; the line parser, which rebuilds the real
 * *_params struct from the layout table of rec_cupti.c; and the replay,
 * which runs each tid of the log on a worker thread of its own, line by line
 * in the log's order, because the handler keeps one open call per thread.
 * Header-only (static functions) like check.h: one test uses it. */
#ifndef GMT_TESTS_CUPTI_LOG_REPLAY_H
#define GMT_TESTS_CUPTI_LOG_REPLAY_H

#include "rec_core.h"
#include "rec_cupti.h"
#include "rec_cupti_calls.h"
#include "rec_cupti_driver.h"
#include "rec_cupti_log.h"
#include "rec_readback.h" /* event_list */
#include "trace_format.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLAY_GARBAGE 0xdeadbeefull /* what an output holds before the driver writes it */
#define DEFAULT_POOL ((CUmemoryPool)0x7000)
#define REPLAY_GiB (1024ull * 1024 * 1024)

/* ---- the fake driver: it knows what the replayed calls allocated --------- */

#define KNOWN_MAX 4096
static struct {
    uint64_t addr, pool; /* allocations seen: their pool (0 = none) */
} known_ptrs[KNOWN_MAX];
static struct {
    uint64_t handle;
    CUmemAllocationProp prop;
} known_handles[KNOWN_MAX];
static size_t n_known_ptrs, n_known_handles;

static CUresult fake_ctx_get_device(CUdevice *d) {
    *d = 0;
    return CUDA_SUCCESS;
}
static CUresult fake_mem_get_info(size_t *f, size_t *t) {
    *f = 70 * REPLAY_GiB;
    *t = 80 * REPLAY_GiB;
    return CUDA_SUCCESS;
}
static CUresult fake_device_get_name(char *name, int len, CUdevice d) {
    snprintf(name, (size_t)len, "Replay GPU %d", d);
    return CUDA_SUCCESS;
}
static CUresult fake_device_total_mem(size_t *bytes, CUdevice d) {
    (void)d;
    *bytes = 80 * REPLAY_GiB;
    return CUDA_SUCCESS;
}
static CUresult fake_device_get_mem_pool(CUmemoryPool *pool, CUdevice d) {
    (void)d;
    *pool = DEFAULT_POOL;
    return CUDA_SUCCESS;
}
static CUresult fake_pool_attribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
    (void)pool, (void)attr;
    *(cuuint64_t *)value = 0;
    return CUDA_SUCCESS;
}
static CUresult fake_stream_get_device(CUstream s, CUdevice *d) {
    (void)s, (void)d;
    return CUDA_ERROR_INVALID_HANDLE; /* the handler falls back to the context's device */
}
static CUresult fake_pointer_attribute(void *data, CUpointer_attribute attr, CUdeviceptr p) {
    for (size_t i = n_known_ptrs; i-- > 0;) {
        if (known_ptrs[i].addr != (uint64_t)p)
            continue;
        if (attr == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
            *(int *)data = 0;
        else if (attr == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
            *(CUmemoryPool *)data = (CUmemoryPool)(uintptr_t)known_ptrs[i].pool;
        else
            return CUDA_ERROR_INVALID_VALUE;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}
static CUresult fake_allocation_properties(CUmemAllocationProp *prop,
                                           CUmemGenericAllocationHandle h) {
    for (size_t i = n_known_handles; i-- > 0;)
        if (known_handles[i].handle == (uint64_t)h) {
            *prop = known_handles[i].prop;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_VALUE;
}

static const rec_cupti_driver replay_driver = {
    .ctx_get_device = fake_ctx_get_device,
    .mem_get_info = fake_mem_get_info,
    .device_get_name = fake_device_get_name,
    .device_total_mem = fake_device_total_mem,
    .device_get_mem_pool = fake_device_get_mem_pool,
    .mem_pool_get_attribute = fake_pool_attribute,
    .stream_get_device = fake_stream_get_device,
    .pointer_get_attribute = fake_pointer_attribute,
    .mem_get_allocation_properties = fake_allocation_properties,
};

/* What the driver learns from a successful call, before the exit callback. */
static void fake_driver_observe(const rec_cupti_call *call) {
    rec_call_info ci;
    if (call->site != CUPTI_API_EXIT || call->result != CUDA_SUCCESS ||
        rec_call_decode(call->cbid, call->params, 1, &ci) != 0)
        return;
    if (ci.cls == REC_CALL_ALLOC && n_known_ptrs < KNOWN_MAX) {
        uint64_t pool = ci.async ? (uint64_t)(uintptr_t)(ci.pool ? ci.pool : DEFAULT_POOL) : 0;
        known_ptrs[n_known_ptrs].addr = ci.addr;
        known_ptrs[n_known_ptrs++].pool = pool;
    } else if (ci.cls == REC_CALL_PHYS_CREATE && ci.alloc_prop && n_known_handles < KNOWN_MAX) {
        known_handles[n_known_handles].handle = ci.addr;
        known_handles[n_known_handles++].prop = *ci.alloc_prop;
    }
}

/* Installs the fake driver (and forgets what earlier replays allocated):
 * call right after rec_session_start. */
static void replay_driver_install(void) {
    rec_cupti_set_driver_for_test(&replay_driver);
    rec_cupti_set_sample_interval_for_test(UINT64_MAX);
    n_known_ptrs = n_known_handles = 0;
}

/* ---- parsing a log line ------------------------------------------------------ */

#define MAX_OUTPUTS 4
typedef struct parsed_call {
    rec_cupti_call call;
    uint32_t tid;
    union {
        unsigned char bytes[128];
        uint64_t align;
    } params;
    uint64_t outputs[MAX_OUTPUTS];
    CUmemAllocationProp prop;
    CUmemPoolProps pool_props;
} parsed_call;

/* The value after "key=" in the space-separated tokens, or NULL. */
static const char *value_of(char *const *tokens, int n, const char *key) {
    size_t k = strlen(key);
    for (int i = 2; i < n; i++)
        if (strncmp(tokens[i], key, k) == 0 && tokens[i][k] == '=')
            return tokens[i] + k + 1;
    return NULL;
}

static int parse_u64(const char *s, uint64_t *v) {
    char *end;
    if (!s || !*s)
        return -1;
    *v = strtoull(s, &end, 0);
    return *end ? -1 : 0;
}

/* "type,location type,location id" into the three fields. */
static int parse_location(const char *s, unsigned *type, CUmemLocation *loc) {
    unsigned loc_type;
    int id, used = 0;
    if (sscanf(s, "%u,%u,%d%n", type, &loc_type, &id, &used) != 3 || s[used])
        return -1;
    loc->type = (CUmemLocationType)loc_type;
    loc->id = id;
    return 0;
}

static int parse_field(parsed_call *pc, const rec_cupti_field *f, const char *v, int *n_out) {
    unsigned char *at = pc->params.bytes + f->offset;
    uint64_t u = 0;
    void *p = NULL;
    unsigned type;
    switch (f->type) {
    case REC_FIELD_SIZE:
    case REC_FIELD_HEX:
        if (parse_u64(v, &u) != 0)
            return -1;
        memcpy(at, &u, sizeof u);
        return 0;
    case REC_FIELD_UINT:
        if (parse_u64(v, &u) != 0 || u > UINT32_MAX)
            return -1;
        type = (unsigned)u;
        memcpy(at, &type, sizeof type);
        return 0;
    case REC_FIELD_OUT:
        if (*n_out == MAX_OUTPUTS)
            return -1;
        if (strcmp(v, "null") != 0) {
            uint64_t *slot = &pc->outputs[(*n_out)++];
            *slot = REPLAY_GARBAGE;
            if (strcmp(v, "-") != 0 && parse_u64(v, slot) != 0)
                return -1;
            p = slot;
        }
        memcpy(at, &p, sizeof p);
        return 0;
    case REC_FIELD_ALLOC_PROP:
    case REC_FIELD_POOL_PROPS:
        if (strcmp(v, "null") != 0) {
            if (f->type == REC_FIELD_ALLOC_PROP) {
                if (parse_location(v, &type, &pc->prop.location) != 0)
                    return -1;
                pc->prop.type = (CUmemAllocationType)type;
                p = &pc->prop;
            } else {
                if (parse_location(v, &type, &pc->pool_props.location) != 0)
                    return -1;
                pc->pool_props.allocType = (CUmemAllocationType)type;
                p = &pc->pool_props;
            }
        }
        memcpy(at, &p, sizeof p);
        return 0;
    }
    return -1;
}

/* Parses one log line (no '#', not empty). Returns 0, -1 with why filled. */
static int parse_line(char *line, parsed_call *pc, const char **why) {
    memset(pc, 0, sizeof *pc);
    char *tokens[16];
    int n = 0;
    for (char *save, *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save))
        if (n < 16)
            tokens[n++] = t;
    *why = "fewer than two words";
    if (n < 2)
        return -1;
    int is_exit = strcmp(tokens[0], "exit") == 0;
    *why = "the first word is neither enter nor exit";
    if (!is_exit && strcmp(tokens[0], "enter") != 0)
        return -1;
    const rec_cupti_layout *l = rec_cupti_layout_named(tokens[1]);
    *why = "not a handled driver function";
    if (!l)
        return -1;
    uint64_t cbid, tid, corr, ctx, result = 0;
    *why = "cbid, tid, corr or ctx missing or malformed";
    if (parse_u64(value_of(tokens, n, "cbid"), &cbid) ||
        parse_u64(value_of(tokens, n, "tid"), &tid) ||
        parse_u64(value_of(tokens, n, "corr"), &corr) ||
        parse_u64(value_of(tokens, n, "ctx"), &ctx))
        return -1;
    *why = "cbid does not match the function name";
    if (cbid != l->cbid)
        return -1;
    *why = "result missing on an exit";
    if (is_exit && parse_u64(value_of(tokens, n, "result"), &result) != 0)
        return -1;
    int expected = 6 + is_exit, n_out = 0;
    for (const rec_cupti_field *f = l->fields; f->name; f++, expected++) {
        const char *v = value_of(tokens, n, f->name);
        *why = "a params field is missing or malformed";
        if (!v || parse_field(pc, f, v, &n_out) != 0)
            return -1;
    }
    *why = "unknown words on the line";
    if (n != expected)
        return -1;
    pc->tid = (uint32_t)tid;
    pc->call = (rec_cupti_call){
        .cbid = l->cbid,
        .site = is_exit ? CUPTI_API_EXIT : CUPTI_API_ENTER,
        .params = pc->params.bytes,
        .result = (CUresult)result,
        .context = (CUcontext)(uintptr_t)ctx,
        .correlation_id = (uint32_t)corr,
    };
    return 0;
}

/* ---- replay: one worker thread per tid of the log ------------------------ */

#define MAX_THREADS 32
typedef struct worker {
    uint32_t tid;
    pthread_t thread;
    sem_t go, done;
    const rec_cupti_call *job; /* NULL: stop */
} worker;

static void *worker_main(void *arg) {
    worker *w = arg;
    for (;;) {
        sem_wait(&w->go);
        if (!w->job)
            return NULL;
        rec_cupti_handle(w->job);
        sem_post(&w->done);
    }
}

typedef struct replay_result {
    event_list expected; /* op and addr of what the outermost calls must record */
    size_t lines, threads;
} replay_result;

/* The event an outermost call's exit must produce, by the handler's rules. */
static void expect_event(const rec_cupti_call *call, replay_result *rr) {
    rec_call_info ci;
    int ok = call->result == CUDA_SUCCESS;
    if (rec_call_decode(call->cbid, call->params, ok, &ci) != 0)
        return;
    trace_event e = {.addr = ci.addr};
    switch (ci.cls) {
    case REC_CALL_ALLOC:
    case REC_CALL_PHYS_CREATE:
        e.op = !ok                        ? TRACE_OP_ALLOC_FAILED
               : ci.cls == REC_CALL_ALLOC ? TRACE_OP_ALLOC
                                          : TRACE_OP_PHYS_CREATE;
        break;
    case REC_CALL_VA_RESERVE:
        e.op = TRACE_OP_VA_RESERVE;
        break;
    case REC_CALL_MAP:
        e.op = TRACE_OP_MAP;
        break;
    case REC_CALL_FREE:
        if (!ci.addr)
            return;
        e.op = TRACE_OP_FREE;
        break;
    case REC_CALL_UNMAP:
        e.op = TRACE_OP_UNMAP;
        break;
    case REC_CALL_VA_FREE:
        e.op = TRACE_OP_VA_FREE;
        break;
    case REC_CALL_PHYS_RELEASE:
        e.op = TRACE_OP_PHYS_RELEASE;
        break;
    case REC_CALL_POOL_TRIM:
        e.op = TRACE_OP_POOL_TRIM;
        break;
    default:
        return; /* pool create/destroy record no event */
    }
    if (!ok && e.op != TRACE_OP_ALLOC_FAILED)
        return;
    if (e.op == TRACE_OP_ALLOC_FAILED || e.op == TRACE_OP_POOL_TRIM)
        e.addr = 0;
    list_push(&rr->expected, &e);
}

/* Replays `log` into the running session (the caller starts it with the
 * fake driver installed and stops it). Returns 0, -1 (printed) when the log
 * is malformed. */
static int replay_log(const char *log, replay_result *rr) {
    memset(rr, 0, sizeof *rr);
    FILE *f = fopen(log, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", log);
        return -1;
    }
    static worker workers[MAX_THREADS];
    static struct {
        uint32_t corr;
        CUpti_CallbackId cbid;
        int open;
    } outer[MAX_THREADS]; /* per worker: the outermost call in progress */
    memset(outer, 0, sizeof outer);
    size_t n_workers = 0;
    int rc = 0;
    char line[1024];
    for (size_t line_no = 1; fgets(line, sizeof line, f); line_no++) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        parsed_call pc;
        const char *why;
        if (parse_line(line, &pc, &why) != 0) {
            fprintf(stderr, "%s:%zu: %s\n", log, line_no, why);
            rc = -1;
            break;
        }
        rr->lines++;
        size_t w = 0;
        while (w < n_workers && workers[w].tid != pc.tid)
            w++;
        if (w == n_workers) {
            if (n_workers == MAX_THREADS) {
                fprintf(stderr, "%s: more than %d threads\n", log, MAX_THREADS);
                rc = -1;
                break;
            }
            workers[w].tid = pc.tid;
            sem_init(&workers[w].go, 0, 0);
            sem_init(&workers[w].done, 0, 0);
            if (pthread_create(&workers[w].thread, NULL, worker_main, &workers[w]) != 0) {
                fprintf(stderr, "%s: cannot start a replay thread\n", log);
                rc = -1;
                break;
            }
            n_workers++;
        }
        const rec_cupti_call *call = &pc.call;
        if (call->site == CUPTI_API_ENTER && !outer[w].open)
            outer[w].open = 1, outer[w].corr = call->correlation_id, outer[w].cbid = call->cbid;
        else if (call->site == CUPTI_API_EXIT && outer[w].open &&
                 outer[w].corr == call->correlation_id && outer[w].cbid == call->cbid) {
            outer[w].open = 0;
            expect_event(call, rr);
        }
        fake_driver_observe(call);
        workers[w].job = call;
        sem_post(&workers[w].go);
        sem_wait(&workers[w].done);
    }
    for (size_t w = 0; w < n_workers; w++) {
        workers[w].job = NULL;
        sem_post(&workers[w].go);
        pthread_join(workers[w].thread, NULL);
        sem_destroy(&workers[w].go);
        sem_destroy(&workers[w].done);
    }
    rr->threads = n_workers;
    fclose(f);
    return rc;
}

#endif
