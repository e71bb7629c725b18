/* cupti_log_replay.h — replaying a raw CUPTI callback log (MEMREC_CALLBACK_LOG,
 * format in tests/fixtures/cupti/README.md) through rec_cupti_handle, for
 * test_rec_cupti_fixture.c.
 *
 * What it holds: a fake driver that answers from what the replayed calls
 * allocated (which pool a pointer came from, where a cuMemCreate handle
 * lives), as a real one would; the line parser, which rebuilds the real
 * *_params struct (and the structs its members point to) from the layout
 * table of rec_cupti_log.c; the replay, which runs each tid of the log on a
 * worker thread of its own, line by line in the log's order, because the
 * handler keeps one open call per thread; and what the log's calls must
 * make by the handler's rules: the events, and the END record's counts of
 * the calls it counts instead of recording.
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
    int managed;         /* made by cuMemAllocManaged */
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
        else if (attr == CU_POINTER_ATTRIBUTE_IS_MANAGED)
            /* as the real driver answers for any pointer it gave out (an unsigned int): the
             * handler asks at cuMemFree, which frees managed memory too (H200,
             * nvidia_h200_cuda_managed.log: without this the free replayed as device memory) */
            *(unsigned int *)data = (unsigned int)known_ptrs[i].managed;
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
        known_ptrs[n_known_ptrs].managed = ci.kind == TRACE_KIND_MANAGED;
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
#define MAX_PARAMS 128 /* bytes of the largest handled *_params struct, and more */
typedef struct parsed_call {
    rec_cupti_call call;
    uint32_t tid;
    union {
        unsigned char bytes[MAX_PARAMS];
        uint64_t align;
    } params;
    /* what the params' pointer members point to */
    uint64_t outputs[MAX_OUTPUTS];
    CUmemAllocationProp prop;
    CUmemPoolProps pool_props;
    CUDA_MEM_ALLOC_NODE_PARAMS alloc_node;
#if CUDA_VERSION >= 12010
    CUmulticastObjectProp mc_prop;
#endif
#if CUDA_VERSION >= 12020
    CUgraphNodeParams node;
#endif
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

/* An output the driver writes: its value, or "-" (not written yet: what the
 * caller left there). */
static int parse_output(const char *s, uint64_t *v) {
    *v = REPLAY_GARBAGE;
    return strcmp(s, "-") == 0 ? 0 : parse_u64(s, v);
}

/* Splits "a,b,c" into its words (in buf); returns how many, -1 for more than
 * max or for an empty word. */
#define MAX_WORDS 4
static int split_commas(const char *v, char *buf, size_t len, char **words, int max) {
    if (snprintf(buf, len, "%s", v) >= (int)len)
        return -1;
    int n = 0;
    for (char *w = buf;; n++) {
        char *comma = strchr(w, ',');
        if (n == max || !*w || comma == w)
            return -1;
        words[n] = w;
        if (!comma)
            return n + 1;
        *comma = '\0';
        w = comma + 1;
    }
}

#if CUDA_VERSION >= 12020
/* "type", "10,bytesize,dptr" (memory allocation node), "11,dptr" (free). */
static int parse_graph_node(char **w, int n, CUgraphNodeParams *node) {
    uint64_t type, u, dptr;
    if (parse_u64(w[0], &type) != 0 || type > UINT32_MAX)
        return -1;
    node->type = (CUgraphNodeType)type;
    if (node->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        if (n != 3 || parse_u64(w[1], &u) != 0 || parse_output(w[2], &dptr) != 0)
            return -1;
        node->alloc.bytesize = (size_t)u;
        node->alloc.dptr = (CUdeviceptr)dptr;
        return 0;
    }
    if (node->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
        if (n != 2 || parse_u64(w[1], &u) != 0)
            return -1;
        node->free.dptr = (CUdeviceptr)u;
        return 0;
    }
    return n == 1 ? 0 : -1;
}
#endif

/* A pointer member's struct (not "null"): fills it in pc, returns where it is. */
static void *parse_pointed(parsed_call *pc, const rec_cupti_field *f, const char *v, int *n_out) {
    char buf[128], *w[MAX_WORDS];
    unsigned type;
    uint64_t u, dptr;
    int n = f->type == REC_FIELD_OUT ? 0 : split_commas(v, buf, sizeof buf, w, MAX_WORDS);
    switch (f->type) {
    case REC_FIELD_OUT: {
        if (*n_out == MAX_OUTPUTS)
            return NULL;
        uint64_t *slot = &pc->outputs[(*n_out)++];
        return parse_output(v, slot) == 0 ? slot : NULL;
    }
    case REC_FIELD_ALLOC_PROP:
        if (parse_location(v, &type, &pc->prop.location) != 0)
            return NULL;
        pc->prop.type = (CUmemAllocationType)type;
        return &pc->prop;
    case REC_FIELD_POOL_PROPS:
        if (parse_location(v, &type, &pc->pool_props.location) != 0)
            return NULL;
        pc->pool_props.allocType = (CUmemAllocationType)type;
        return &pc->pool_props;
    case REC_FIELD_MEM_ALLOC_NODE:
        if (n != 2 || parse_u64(w[0], &u) != 0 || parse_output(w[1], &dptr) != 0)
            return NULL;
        pc->alloc_node.bytesize = (size_t)u;
        pc->alloc_node.dptr = (CUdeviceptr)dptr;
        return &pc->alloc_node;
    case REC_FIELD_MULTICAST_PROP:
#if CUDA_VERSION >= 12010
        if (n != 1 || parse_u64(w[0], &u) != 0)
            return NULL;
        pc->mc_prop.size = (size_t)u;
        return &pc->mc_prop;
#else
        return NULL;
#endif
    case REC_FIELD_GRAPH_NODE:
#if CUDA_VERSION >= 12020
        return n >= 1 && parse_graph_node(w, n, &pc->node) == 0 ? &pc->node : NULL;
#else
        return NULL;
#endif
    case REC_FIELD_SIZE:
    case REC_FIELD_HEX:
    case REC_FIELD_UINT:
    case REC_FIELD_INT:
        break; /* no pointers */
    }
    return NULL;
}

static int parse_field(parsed_call *pc, const rec_cupti_field *f, const char *v, int *n_out) {
    unsigned char *at = pc->params.bytes + f->offset;
    uint64_t u = 0;
    void *p = NULL;
    unsigned type;
    char *end;
    long long i;
    int32_t i32;
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
    case REC_FIELD_INT:
        i = strtoll(v, &end, 10);
        if (!*v || *end || i < INT32_MIN || i > INT32_MAX)
            return -1;
        i32 = (int32_t)i;
        memcpy(at, &i32, sizeof i32);
        return 0;
    default:
        break; /* pointers: "null", or what they point to */
    }
    if (strcmp(v, "null") != 0 && !(p = parse_pointed(pc, f, v, n_out)))
        return -1;
    memcpy(at, &p, sizeof p);
    return 0;
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

/* What a call counted in the END record adds up to (rec_core.h's count
 * slots: rec_call_count_slot). */
typedef struct replay_count {
    CUpti_CallbackId cbid;
    const char *name;
    uint64_t calls, bytes;
} replay_count;

typedef struct replay_result {
    event_list expected;                  /* op and addr of what the outermost calls must record */
    replay_count counts[REC_COUNT_SLOTS]; /* by count slot; calls = 0: none expected */
    size_t lines, threads;
} replay_result;

/* ---- what the handler counts instead of recording, as the replay expects ---
 * The handler's rules (rec_cupti.c), kept as simply as a log needs them:
 * graph memory and imported pool pointers are remembered by address (an
 * imported one until its free), and a device free of one is counted, not
 * recorded, until a recorded allocation or map takes the address; handles
 * imported or made multicast are another process's, so their maps, the
 * unmaps of those and their releases are no events. Reset per replay. */
static struct {
    uint64_t addr, bytes;
    int once;
} counted_addrs[KNOWN_MAX];
static uint64_t foreign_handles[KNOWN_MAX], foreign_maps[KNOWN_MAX];
static size_t n_counted_addrs, n_foreign_handles, n_foreign_maps;

static void replay_model_reset(void) { n_counted_addrs = n_foreign_handles = n_foreign_maps = 0; }

/* The index of v in a[0 .. n), or -1. */
static long index_of(const uint64_t *a, size_t n, uint64_t v) {
    for (size_t i = 0; i < n; i++)
        if (a[i] == v)
            return (long)i;
    return -1;
}

static void set_add(uint64_t *a, size_t *n, uint64_t v) {
    if (index_of(a, *n, v) < 0 && *n < KNOWN_MAX)
        a[(*n)++] = v;
}

static void set_remove(uint64_t *a, size_t *n, uint64_t v) {
    long i = index_of(a, *n, v);
    if (i >= 0)
        a[i] = a[--*n];
}

static long counted_index(uint64_t addr) {
    for (size_t i = 0; addr && i < n_counted_addrs; i++)
        if (counted_addrs[i].addr == addr)
            return (long)i;
    return -1;
}

static void counted_addr_forget(uint64_t addr) {
    long i = counted_index(addr);
    if (i >= 0)
        counted_addrs[i] = counted_addrs[--n_counted_addrs];
}

static void expect_in_slot(replay_result *rr, int slot, CUpti_CallbackId cbid, const char *name,
                           uint64_t bytes) {
    if (slot < 0)
        return;
    rr->counts[slot].cbid = cbid;
    rr->counts[slot].name = name;
    rr->counts[slot].calls++;
    rr->counts[slot].bytes += bytes;
}

static void expect_count(replay_result *rr, CUpti_CallbackId cbid, uint64_t bytes) {
    const char *name = NULL;
    int slot = rec_call_count_slot(cbid, &name); /* before name is read */
    expect_in_slot(rr, slot, cbid, name, bytes);
}

/* An allocation call that failed with another error than out of memory: its count. */
static void expect_refused(replay_result *rr, CUpti_CallbackId cbid, uint64_t bytes) {
    const char *name = NULL;
    int slot = rec_call_refused_slot(cbid, &name);
    expect_in_slot(rr, slot, cbid, name, bytes);
}

/* A successful REC_CALL_COUNT call: its count, and the memory it names. */
static void expect_counted_call(const rec_call_info *ci, replay_result *rr) {
    uint64_t bytes = ci->size;
    long i;
    switch (ci->count_mem) {
    case REC_COUNT_NOT_MEMORY:
        return;
    case REC_COUNT_NEW_GRAPH:
    case REC_COUNT_NEW_IMPORT:
        counted_addr_forget(ci->addr);
        if (ci->addr && n_counted_addrs < KNOWN_MAX) {
            counted_addrs[n_counted_addrs].addr = ci->addr;
            counted_addrs[n_counted_addrs].bytes = ci->size;
            counted_addrs[n_counted_addrs++].once = ci->count_mem == REC_COUNT_NEW_IMPORT;
        }
        break;
    case REC_COUNT_OF_ADDR:
        if (!bytes && (i = counted_index(ci->addr)) >= 0)
            bytes = counted_addrs[i].bytes;
        break;
    default:
        break;
    }
    expect_count(rr, ci->cbid, bytes);
}

/* What an outermost call's exit must produce, by the handler's rules: an
 * event, a count, or nothing. */
static void expect_event(const rec_cupti_call *call, replay_result *rr) {
    rec_call_info ci;
    int ok = call->result == CUDA_SUCCESS;
    long i;
    if (rec_call_decode(call->cbid, call->params, ok, &ci) != 0)
        return;
    trace_event e = {.addr = ci.addr};
    switch (ci.cls) {
    case REC_CALL_ALLOC:
    case REC_CALL_PHYS_CREATE:
        if (!ok && call->result != CUDA_ERROR_OUT_OF_MEMORY) {
            expect_refused(rr, ci.cbid, ci.requested); /* refused, not short of memory */
            return;
        }
        if (ok && ci.cls == REC_CALL_ALLOC)
            counted_addr_forget(ci.addr); /* the address is memory now */
        if (ok && ci.cls == REC_CALL_PHYS_CREATE)
            set_remove(foreign_handles, &n_foreign_handles, ci.addr);
        e.op = !ok                        ? TRACE_OP_ALLOC_FAILED
               : ci.cls == REC_CALL_ALLOC ? TRACE_OP_ALLOC
                                          : TRACE_OP_PHYS_CREATE;
        break;
    case REC_CALL_HOST_REGISTER: /* a failed registration pinned nothing */
        e.op = TRACE_OP_ALLOC;
        break;
    case REC_CALL_VA_RESERVE:
        e.op = TRACE_OP_VA_RESERVE;
        break;
    case REC_CALL_MAP:
        if (ok && index_of(foreign_handles, n_foreign_handles, (uint64_t)ci.handle) >= 0) {
            set_add(foreign_maps, &n_foreign_maps, ci.addr);
            expect_count(rr, ci.cbid, ci.size);
            return;
        }
        if (ok)
            counted_addr_forget(ci.addr);
        e.op = TRACE_OP_MAP;
        break;
    case REC_CALL_FREE:
        if (!ci.addr)
            return;
        if (ok && ci.kind == TRACE_KIND_DEVICE && (i = counted_index(ci.addr)) >= 0) {
            expect_count(rr, ci.cbid, counted_addrs[i].bytes);
            if (counted_addrs[i].once)
                counted_addrs[i] = counted_addrs[--n_counted_addrs];
            return;
        }
        e.op = TRACE_OP_FREE;
        break;
    case REC_CALL_UNMAP:
        if (ok && index_of(foreign_maps, n_foreign_maps, ci.addr) >= 0) {
            set_remove(foreign_maps, &n_foreign_maps, ci.addr);
            expect_count(rr, ci.cbid, ci.size);
            return;
        }
        e.op = TRACE_OP_UNMAP;
        break;
    case REC_CALL_VA_FREE:
        e.op = TRACE_OP_VA_FREE;
        break;
    case REC_CALL_PHYS_RELEASE:
        if (index_of(foreign_handles, n_foreign_handles, ci.addr) >= 0)
            return; /* counted at its import */
        e.op = TRACE_OP_PHYS_RELEASE;
        break;
    case REC_CALL_POOL_TRIM:
        e.op = TRACE_OP_POOL_TRIM;
        break;
    case REC_CALL_PHYS_IMPORT:
        if (ok) {
            set_add(foreign_handles, &n_foreign_handles, ci.addr);
            expect_count(rr, ci.cbid, ci.size);
        }
        return;
    case REC_CALL_COUNT:
        if (ok)
            expect_counted_call(&ci, rr);
        return;
    default:
        return; /* pool create/destroy, retain record no event */
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
    replay_model_reset();
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
