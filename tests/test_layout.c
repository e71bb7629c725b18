/* test_layout.c — the segment layout rebuilt from the database (layout.h)
 * against hand-built traces with known answers, against the replay's own
 * timeline at every event of a synthetic run, and against the schema's
 * `allocations` view; and the stack labels and cross-run stack keys. */
#include "check.h"
#include "free_split.h"
#include "layout.h"
#include "stack_names.h"
#include "trace_build.h"
#include "training_sim.h"

static layout *at(int64_t event_id) {
    char err[256];
    layout *l = NULL;
    if (layout_build(db, 0, event_id, &l, err, sizeof err) != 0)
        fprintf(stderr, "layout_build(%lld): %s\n", (long long)event_id, err);
    CHECK(l != NULL);
    return l;
}

/* Blocks tile every segment; the sums are those of the blocks. */
static int tiles(const layout *l) {
    uint64_t reserved = 0, allocated = 0, largest = 0;
    size_t live = 0;
    for (size_t i = 0; i < l->segment_count; i++) {
        const layout_segment *s = &l->segments[i];
        uint64_t a = s->addr, seg_alloc = 0;
        if (i && s->addr < l->segments[i - 1].addr + l->segments[i - 1].size)
            return 0;
        for (size_t k = 0; k < s->block_count; k++) {
            const layout_block *b = &l->blocks[s->first_block + k];
            if (b->addr != a || b->size == 0)
                return 0;
            a += b->size;
            if (b->state == LAYOUT_INACTIVE) {
                if (b->alloc_event_id || b->stack_id)
                    return 0;
                if (b->size > largest)
                    largest = b->size;
                /* inactive neighbours are merged */
                if (k && l->blocks[s->first_block + k - 1].state == LAYOUT_INACTIVE)
                    return 0;
            } else {
                seg_alloc += b->size;
                live++;
            }
        }
        if (a != s->addr + s->size || seg_alloc != s->allocated_bytes)
            return 0;
        reserved += s->size;
        allocated += seg_alloc;
    }
    for (size_t i = 0; i < l->outside_count; i++) {
        allocated += l->outside[i].size;
        live++;
    }
    return reserved == l->reserved_bytes && allocated == l->allocated_bytes &&
           largest == l->largest_free_bytes && live == l->live_blocks;
}

/* A plain CUDA program: each segment is one allocated block. */
static void test_whole_blocks(void) {
    begin();
    cupti_segment(TRACE_OP_ALLOC, 0x20000000, 6 * MiB);
    cupti_segment(TRACE_OP_ALLOC, 0x10000000, 4 * MiB);
    cupti_segment(TRACE_OP_FREE, 0x20000000, 0);
    replay_it(db_path, DB_READ_ONLY);
    layout *l = at(0);
    CHECK(l && l->segment_count == 0 && l->block_count == 0 && l->live_blocks == 0);
    layout_free(l);
    l = at(2);
    CHECK(l && l->segment_count == 2 && l->block_count == 2 && tiles(l));
    if (l && l->segment_count == 2) {
        CHECK_EQ_U64(l->segments[0].addr, 0x10000000); /* by address, not by id */
        CHECK_EQ_U64(l->segments[0].segment_id, 2);
        CHECK(l->segments[0].whole_block && !l->segments[0].mapped);
        CHECK_EQ_U64(l->blocks[0].state, LAYOUT_ALLOCATED);
        CHECK_EQ_U64(l->blocks[0].alloc_event_id, 2); /* the segment's id */
        CHECK_EQ_U64(l->blocks[1].size, 6 * MiB);
        CHECK_EQ_U64(l->allocated_bytes, 10 * MiB);
        CHECK_EQ_U64(l->reserved_bytes, 10 * MiB);
        CHECK_EQ_U64(l->lifetime_count, 2);
    }
    layout_free(l);
    l = at(3);
    CHECK(l && l->segment_count == 1 && l->allocated_bytes == 4 * MiB && tiles(l));
    layout_free(l);
}

/* PyTorch blocks inside a segment: gaps are inactive blocks, a requested
 * free makes a block pending until its free completes. */
static void test_blocks_pending(void) {
    begin();
    uint64_t s = 0x7f0000000000ULL;
    cupti_segment(TRACE_OP_ALLOC, s, 20 * MiB);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, s, 20 * MiB, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, s, 5 * MiB + 1, 5 * MiB + 1, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, s + 6 * MiB, 2 * MiB, 2 * MiB, 0);
    ev(TRACE_OP_FREE_REQUESTED, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, s + 6 * MiB, 0, 0, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, s + 6 * MiB, 0, 0, 0);
    replay_it(db_path, DB_READ_ONLY);
    layout *l = at(4);
    CHECK(l && l->segment_count == 1 && l->block_count == 4 && tiles(l));
    if (l && l->block_count == 4) {
        CHECK(!l->segments[0].whole_block);
        CHECK_EQ_U64(l->segments[0].segment_id, 1); /* CUPTI's and PyTorch's reports: one */
        CHECK_EQ_U64(l->blocks[0].size, 5 * MiB + 512);
        CHECK_EQ_U64(l->blocks[0].requested, 5 * MiB + 1);
        CHECK_EQ_U64(l->blocks[0].alloc_event_id, 3);
        CHECK_EQ_U64(l->blocks[1].state, LAYOUT_INACTIVE);
        CHECK_EQ_U64(l->blocks[1].size, MiB - 512);
        CHECK_EQ_U64(l->blocks[2].state, LAYOUT_ALLOCATED);
        CHECK_EQ_U64(l->blocks[3].size, 12 * MiB);
        CHECK_EQ_U64(l->largest_free_bytes, 12 * MiB);
        CHECK_EQ_U64(l->segments[0].live_blocks, 2);
        CHECK_EQ_U64(l->requested_bytes, 7 * MiB + 1);
    }
    layout_free(l);
    l = at(5);
    CHECK(l && l->block_count == 4 && tiles(l));
    if (l && l->block_count == 4) {
        CHECK_EQ_U64(l->blocks[2].state, LAYOUT_PENDING_FREE); /* still live */
        CHECK_EQ_U64(l->pending_bytes, 2 * MiB);
        CHECK_EQ_U64(l->allocated_bytes, 7 * MiB + 512);
        CHECK_STR_EQ(layout_state_name(l->blocks[2].state), "active_pending_free");
    }
    layout_free(l);
    l = at(6);
    CHECK(l && l->block_count == 2 && tiles(l)); /* the free merged the gaps */
    if (l && l->block_count == 2)
        CHECK_EQ_U64(l->blocks[1].size, 15 * MiB - 512);
    layout_free(l);
}

/* VMM: adjacent mapped ranges are one expandable segment, as PyTorch shows it. */
static void test_vmm_join(void) {
    begin();
    cupti_segment(TRACE_OP_MAP, 0x40200000, 2 * MiB);
    cupti_segment(TRACE_OP_MAP, 0x40000000, 2 * MiB);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x40100000, 2 * MiB, 0, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x40100000, 0, 0, 0);
    cupti_segment(TRACE_OP_UNMAP, 0x40200000, 2 * MiB);
    replay_it(db_path, DB_READ_ONLY);
    layout *l = at(3);
    CHECK(l && l->segment_count == 1 && l->lifetime_count == 2 && tiles(l));
    if (l && l->segment_count == 1 && l->block_count == 3) {
        CHECK(l->segments[0].mapped);
        CHECK_EQ_U64(l->segments[0].addr, 0x40000000);
        CHECK_EQ_U64(l->segments[0].size, 4 * MiB);
        CHECK_EQ_U64(l->blocks[1].addr, 0x40100000); /* across the two ranges */
        CHECK_EQ_U64(l->blocks[1].state, LAYOUT_ALLOCATED);
    }
    layout_free(l);
    l = at(5);
    CHECK(l && l->segment_count == 1 && l->lifetime_count == 1 && tiles(l));
    if (l && l->segment_count == 1)
        CHECK_EQ_U64(l->segments[0].size, 2 * MiB);
    layout_free(l);
}

/* The free part of the segments, split as DESIGN.md's "fragmentation" says: whole free
 * segments and whole free pages of expandable segments are releasable (empty_cache() returns
 * them), the rest of the free bytes is trapped. */
static void test_releasable(void) {
    begin();
    /* A: 20 MiB, nothing live: all releasable */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x10000000, 20 * MiB, 0, 0);
    /* B: 20 MiB holding a 2 MiB block: 18 MiB trapped */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x20000000, 20 * MiB, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, 0x20000000, 2 * MiB, 0, 0);
    /* C: expandable, 60 MiB (three 20 MiB large-pool pages) holding 4 MiB at 0 and 2 MiB at
     * 42 MiB: free [4, 42) holds the whole page [20, 40); [44, 60) holds none */
    cupti_segment(TRACE_OP_MAP, 0x40000000, 60 * MiB);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, 0x40000000, 4 * MiB, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, 0x40000000 + 42 * MiB, 2 * MiB, 0, 0);
    /* D: expandable small pool, 4 MiB (two 2 MiB pages, mapped one at a time as PyTorch does)
     * holding 512 KiB at 0: page [2, 4) */
    cupti_segment(TRACE_OP_MAP, 0x50000000, 2 * MiB);
    cupti_segment(TRACE_OP_MAP, 0x50000000 + 2 * MiB, 2 * MiB);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_TORCH, 0x50000000, MiB / 2, 0, 0);
    replay_it(db_path, DB_READ_ONLY);
    layout *l = at(9);
    CHECK(l && l->segment_count == 4 && tiles(l));
    if (l && l->segment_count == 4) {
        CHECK_EQ_U64(l->segments[0].releasable_bytes, 20 * MiB);
        CHECK_EQ_U64(l->segments[1].releasable_bytes, 0);
        CHECK_EQ_U64(l->segments[2].releasable_bytes, 20 * MiB);
        CHECK_EQ_U64(l->segments[3].releasable_bytes, 2 * MiB);
        CHECK_EQ_U64(l->releasable_bytes, 42 * MiB);
        CHECK_EQ_U64(l->trapped_bytes, 18 * MiB + 34 * MiB + 3 * MiB / 2);
        CHECK_EQ_U64(l->releasable_bytes + l->trapped_bytes + l->allocated_bytes,
                     l->reserved_bytes);
    }
    layout_free(l);
    free_split f[2];
    char err[256];
    int64_t ids[] = {9, 2};
    CHECK(free_split_at(db, 0, ids, 2, f, err, sizeof err) == 0);
    CHECK_EQ_U64(f[0].trapped, 18 * MiB + 34 * MiB + 3 * MiB / 2);
    CHECK_EQ_U64(f[0].releasable, 42 * MiB);
    CHECK_EQ_U64(f[1].releasable, 40 * MiB); /* A and B, both free after event 2 */
    CHECK_EQ_U64(f[1].trapped, 0);
    CHECK(free_split_trapped_ratio(&f[0]) > 0.514 && free_split_trapped_ratio(&f[0]) < 0.515);
}

/* What the replay did with damaged traces, the layout does too. */
static void test_anomalies(void) {
    begin();
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x10000000, 2 * MiB, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x10000000, MiB / 2, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x10000000, MiB, 0, 0); /* again */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x20000000, 2 * MiB, 0, 0);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x20000000, MiB, 0, 0);
    ev(TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_TORCH, 0x20000000, 0, 0, 0);   /* in use */
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x90000000, MiB, 0, 0); /* outside */
    ev(TRACE_OP_FREE, TRACE_LEVEL_BLOCK, TRACE_SOURCE_MEMREC, 0x12345, 0, 0, 0);       /* unknown */
    replay_it(db_path, DB_READ_ONLY);
    CHECK(sqlite3_exec(db, "SELECT 1", NULL, NULL, NULL) == SQLITE_OK);
    int64_t ids[] = {8, 3, 5, 6, 7, 3};
    layout *ls[6];
    char err[256];
    CHECK(layout_build_many(db, 0, ids, 6, ls, err, sizeof err) == 0);
    for (int i = 0; i < 6; i++) {
        CHECK(ls[i] && tiles(ls[i]) && ls[i]->event_id == ids[i]);
        layout_totals t;
        CHECK(layout_timeline_at(db, 0, ids[i], &t) == 0);
        CHECK_EQ_U64(ls[i]->allocated_bytes, t.allocated_bytes);
        CHECK_EQ_U64(ls[i]->reserved_bytes, t.reserved_bytes);
    }
    CHECK(ls[1]->live_blocks == 1 && ls[1]->blocks[0].alloc_event_id == 3); /* the old one ended */
    CHECK(ls[5]->live_blocks == 1 && ls[5]->allocated_bytes == MiB);        /* a repeated point */
    CHECK(ls[2]->segment_count == 2 && ls[2]->live_blocks == 2);
    CHECK(ls[3]->segment_count == 1 && ls[3]->live_blocks == 1); /* ended with its segment */
    CHECK(ls[3]->outside_count == 0);
    CHECK(ls[4]->outside_count == 1 && ls[4]->live_blocks == 2);
    CHECK(ls[4]->outside[0].addr == 0x90000000 && ls[4]->allocated_bytes == 2 * MiB);
    CHECK(ls[0]->live_blocks == 2);
    for (int i = 0; i < 6; i++)
        layout_free(ls[i]);
}

/* ---- stacks ---- */

static uint32_t str(const char *s) { return trace_writer_string(w, s, strlen(s)); }

static uint32_t frame(trace_frame_kind kind, const char *fn, const char *file, uint32_t line,
                      uint32_t module, uint64_t ip) {
    trace_frame f = {.kind = (uint8_t)kind,
                     .module_id = module,
                     .ip = ip,
                     .function_id = fn ? str(fn) : 0,
                     .file_id = file ? str(file) : 0,
                     .line = line};
    return trace_writer_frame(w, &f);
}

/* A stack from its frames, outermost first. */
static uint32_t stack(const uint32_t *frames, size_t n) {
    uint32_t parent = 0;
    for (size_t i = 0; i < n; i++)
        parent = trace_writer_stack(w, parent, frames[i]);
    return parent;
}

static void module(uint32_t id, const char *path) {
    trace_module m = {.module_id = id, .base = 0x400000, .size = 0x100000};
    m.path = (trace_bytes){path, (uint32_t)strlen(path)};
    CHECK(trace_writer_module(w, &m) == 0);
}

typedef struct stack_ids {
    uint32_t user, library, native, autograd, allocator, unsymbolized, cpp;
    uint32_t backward, accumulate, runtime_only, bmm, returns;
} stack_ids;

/* The same stacks in every run; `shift` interns other frames first, so ids differ. */
static stack_ids write_stacks(int shift) {
    stack_ids s;
    if (shift) {
        frame(TRACE_FRAME_PYTHON, "unrelated", "other.py", 1, 0, 0);
        frame(TRACE_FRAME_PYTHON, "unrelated", "other.py", 2, 0, 0);
        uint32_t f = frame(TRACE_FRAME_PYTHON, "unrelated", "other.py", 3, 0, 0);
        stack(&f, 1);
    }
    module(1, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
    module(2, "/usr/local/cuda/lib64/libcudart.so.12");
    module(3, shift ? "/opt/build/app" : "/home/me/app");
    module(4, "/venv/lib/python3.11/site-packages/torch/lib/libc10_cuda.so");
    uint32_t malloc_f = frame(TRACE_FRAME_OTHER,
                              "c10::cuda::CUDACachingAllocator::Native::"
                              "DeviceCachingAllocator::malloc",
                              "c10/cuda/CUDACachingAllocator.cpp", 1153, 0, 0);
    uint32_t empty = frame(TRACE_FRAME_OTHER, "at::detail::empty_cuda",
                           "aten/src/ATen/cuda/EmptyTensor.cpp", 23, 0, 0);
    uint32_t mm = frame(TRACE_FRAME_OTHER, "at::native::mm_out_cuda",
                        "aten/src/ATen/native/cuda/Blas.cpp", 109, 0, 0);
    uint32_t engine = frame(TRACE_FRAME_OTHER, "torch::autograd::Engine::evaluate_function",
                            "torch/csrc/autograd/engine.cpp", 1013, 0, 0);
    uint32_t thread =
        frame(TRACE_FRAME_OTHER, "start_thread", "./nptl/pthread_create.c", 442, 0, 0);
    uint32_t linear = frame(TRACE_FRAME_PYTHON, "forward",
                            shift ? "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py"
                                  : "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py",
                            116, 0, 0);
    uint32_t model = frame(TRACE_FRAME_PYTHON, "forward",
                           shift ? "/home/other/proj/model.py" : "/home/me/proj/model.py",
                           shift ? 45 : 44, 0, 0); /* an edit moved the line */
    uint32_t train = frame(TRACE_FRAME_PYTHON, "train_step", "/home/me/proj/train.py", 88, 0, 0);
    uint32_t cu = frame(TRACE_FRAME_NATIVE, "cuMemAlloc_v2", NULL, 0, 1, 0x7000);
    uint32_t rt = frame(TRACE_FRAME_NATIVE, "cudaMalloc", NULL, 0, 2, 0x8000);
    uint32_t main_f = frame(TRACE_FRAME_NATIVE, "main", "vector_add.cu", 20, 3, 0x401000);
    uint32_t anon = frame(TRACE_FRAME_NATIVE, NULL, NULL, 0, 3, 0x401234);
    uint32_t c10 = frame(TRACE_FRAME_NATIVE, NULL, NULL, 0, 4, 0x9000);
    s.user = stack((uint32_t[]){train, model, linear, mm, empty, malloc_f}, 6);
    s.library = stack((uint32_t[]){linear, mm, empty, malloc_f}, 4);
    s.native = stack((uint32_t[]){main_f, rt, cu}, 3);
    s.autograd = stack((uint32_t[]){thread, engine, mm, empty, malloc_f}, 5);
    s.allocator = stack((uint32_t[]){empty, malloc_f}, 2);
    s.unsymbolized = stack((uint32_t[]){anon, c10}, 2);
    uint32_t grow =
        frame(TRACE_FRAME_OTHER, "pool::(anonymous namespace)::Arena::grow(unsigned long, bool)",
              "??", 0, 0, 0);
    s.cpp = stack((uint32_t[]){thread, grow, malloc_f}, 3);
    /* A backward thread's stack as PyTorch snapshots symbolize it (train-step-m512.pickle):
     * C++ only, its outer frames named after neighbouring libc/libstdc++ symbols. */
    uint32_t clone_f = frame(TRACE_FRAME_OTHER, "__clone", "??", 0, 0, 0);
    uint32_t pthread = frame(TRACE_FRAME_OTHER, "pthread_condattr_setpshared", "??", 0, 0, 0);
    uint32_t errc =
        frame(TRACE_FRAME_OTHER, "std::error_code::default_error_condition() const", "??", 0, 0, 0);
    uint32_t tmain = frame(TRACE_FRAME_OTHER,
                           "torch::autograd::Engine::thread_main(std::shared_ptr<"
                           "torch::autograd::GraphTask> const&)",
                           "??", 0, 0, 0);
    uint32_t node = frame(TRACE_FRAME_OTHER,
                          "torch::autograd::Node::operator()(std::vector<at::Tensor, "
                          "std::allocator<at::Tensor> >&&)",
                          "", 0, 0, 0);
    uint32_t gather = frame(TRACE_FRAME_OTHER,
                            "torch::autograd::generated::GatherBackward0::apply(std::vector<"
                            "at::Tensor, std::allocator<at::Tensor> >&&)",
                            "??", 0, 0, 0);
    uint32_t op = frame(TRACE_FRAME_OTHER,
                        "at::native::gather_backward(at::Tensor const&, at::Tensor const&, long, "
                        "at::Tensor const&, bool)",
                        "??", 0, 0, 0);
    uint32_t accumulate = frame(TRACE_FRAME_OTHER,
                                "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, "
                                "std::allocator<at::Tensor> >&&)",
                                "??", 0, 0, 0);
    s.backward =
        stack((uint32_t[]){clone_f, pthread, errc, tmain, node, gather, op, empty, malloc_f}, 9);
    s.accumulate =
        stack((uint32_t[]){clone_f, pthread, tmain, node, accumulate, empty, malloc_f}, 7);
    uint32_t xmknod = frame(TRACE_FRAME_OTHER, "__xmknodat", "??", 0, 0, 0);
    uint32_t routine =
        frame(TRACE_FRAME_OTHER, "execute_native_thread_routine", "thread48.o", 0, 0, 0);
    s.runtime_only = stack((uint32_t[]){xmknod, pthread, routine, errc, op, empty, malloc_f}, 7);
    /* return types do not hide a frame's namespace: "void at::meta::..." is ATen's */
    uint32_t bmm_node = frame(TRACE_FRAME_OTHER,
                              "torch::autograd::generated::BmmBackward0::apply(std::vector<"
                              "at::Tensor, std::allocator<at::Tensor> >&&)",
                              "??", 0, 0, 0);
    uint32_t checks = frame(TRACE_FRAME_OTHER,
                            "void at::meta::common_checks_baddbmm_bmm<at::meta::structured_bmm>("
                            "at::meta::structured_bmm&, at::Tensor const&, bool)",
                            "", 0, 0, 0);
    s.bmm =
        stack((uint32_t[]){clone_f, pthread, tmain, node, bmm_node, checks, empty, malloc_f}, 8);
    s.returns = stack((uint32_t[]){clone_f, pthread, checks, empty, malloc_f}, 5);
    return s;
}

static void check_label(int64_t stack_id, const char *want, int want_rc) {
    char buf[256];
    int rc = stack_label(db, stack_id, buf, sizeof buf);
    CHECK_STR_EQ(buf, want);
    CHECK(rc == want_rc);
}

static void test_stacks(void) {
    begin();
    stack_ids a = write_stacks(0);
    uint32_t from_caller = stack(
        (uint32_t[]){
            frame(TRACE_FRAME_PYTHON, "train_step", "/home/me/proj/train.py", 90, 0, 0),
            frame(TRACE_FRAME_OTHER, "wrapper", "/venv/lib/python3.11/site-packages/x.py", 3, 0, 0),
            frame(TRACE_FRAME_PYTHON, "forward", "/home/me/proj/model.py", 60, 0, 0)},
        3);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 0x10000000, 2 * MiB, 0, a.user);
    char path_a[320];
    snprintf(path_a, sizeof path_a, "%s/a.db", tmpdir);
    replay_it(path_a, DB_READ_ONLY);
    check_label(a.user, "model.py:44 forward", 0);
    check_label(a.library, "linear.py:116 forward", 0);
    check_label(a.native, "vector_add.cu:20 main", 0);
    check_label(a.autograd, "Blas.cpp:109 at::native::mm_out_cuda", 0);
    check_label(a.allocator,
                "CUDACachingAllocator.cpp:1153 "
                "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc",
                0);
    check_label(a.unsymbolized, "0x401234 (app)", 0);
    check_label(a.cpp, "pool::(anonymous namespace)::Arena::grow", 0);
    /* threads and the C/C++ runtime never name a site; a backward thread's autograd node does */
    check_label(a.backward, "GatherBackward0::apply", 0);
    check_label(a.accumulate, "AccumulateGrad::apply", 0);
    check_label(a.runtime_only, "at::native::gather_backward", 0);
    check_label(a.bmm, "BmmBackward0::apply", 0);
    check_label(a.returns, "at::meta::common_checks_baddbmm_bmm<at::meta::structured_bmm>", 0);
    check_label(0, "no stack", -1);
    check_label(987654, "unknown stack", -1);
    /* what tells two stacks of one site apart: the frame inside it, else the caller outside */
    char via[256];
    CHECK(stack_label_via(db, a.user, via, sizeof via) == 0);
    CHECK_STR_EQ(via, "model.py:44 forward via linear.py:116 forward");
    CHECK(stack_label_via(db, a.library, via, sizeof via) == 0);
    CHECK_STR_EQ(via, "linear.py:116 forward"); /* only plumbing inside, no user code outside */
    CHECK(stack_label_via(db, from_caller, via, sizeof via) == 0);
    CHECK_STR_EQ(via, "model.py:60 forward from train.py:90 train_step");
    char tiny[8];
    stack_label(db, a.user, tiny, sizeof tiny);
    CHECK_STR_EQ(tiny, "model.p"); /* truncated, terminated */

    stack_names *ca = stack_names_new(db);
    const named_stack *su = stack_names_get(ca, a.user);
    CHECK(su && su->known && su->frame_count == 6);
    if (su && su->frame_count == 6) {
        CHECK_STR_EQ(su->frames[0].name, "c10::cuda::CUDACachingAllocator::Native::"
                                         "DeviceCachingAllocator::malloc");
        CHECK_STR_EQ(su->frames[5].file, "/home/me/proj/train.py");
        CHECK_EQ_U64(su->frames[5].line, 88);
        CHECK_STR_EQ(su->site, "model.py:44 forward");
    }
    CHECK(stack_names_get(ca, a.user) == su); /* cached */
    const named_stack *unknown = stack_names_get(ca, 987654);
    CHECK(unknown && !unknown->known && unknown->frame_count == 0);
    CHECK(unknown && !strcmp(unknown->site, "unknown stack"));
    /* the layout's segment carries its stack */
    layout *l = at(1);
    CHECK(l && l->segment_count == 1 && l->segments[0].stack_id == a.user);
    CHECK(l && l->blocks[0].stack_id == a.user);
    layout_free(l);

    /* another run of the same code: other ids, directories and lines; same keys */
    begin();
    stack_ids b = write_stacks(1);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 0x10000000, 2 * MiB, 0, b.user);
    char path_b[320];
    snprintf(path_b, sizeof path_b, "%s/b.db", tmpdir);
    sqlite3 *db_a = db;
    db = NULL;
    replay_it(path_b, DB_READ_ONLY);
    CHECK(b.user != a.user);
    stack_names *cb = stack_names_new(db);
    uint32_t as[] = {a.user, a.library, a.native, a.autograd, a.allocator, a.unsymbolized, a.cpp};
    uint32_t bs[] = {b.user, b.library, b.native, b.autograd, b.allocator, b.unsymbolized, b.cpp};
    for (int i = 0; i < 7; i++) {
        const named_stack *x = stack_names_get(ca, as[i]), *y = stack_names_get(cb, bs[i]);
        CHECK(x && y && !strcmp(x->key, y->key));
        for (int k = 0; k < 7; k++)
            if (k != i) {
                const named_stack *z = stack_names_get(cb, bs[k]);
                CHECK(x && z && strcmp(x->key, z->key) != 0);
            }
    }
    CHECK_STR_EQ(stack_names_get(cb, b.user)->site, "model.py:45 forward");
    CHECK(strcmp(stack_names_get(ca, 0)->key, stack_names_get(ca, 987654)->key) != 0);
    stack_names_free(ca);
    stack_names_free(cb);
    sqlite3_close(db_a);
}

/* The rules every label follows, on stacks of their own: Windows paths, PyTorch's recording
 * frames, and a list's stacks of one site told apart. */
static void test_stack_rules(void) {
    begin();
    uint32_t malloc_f = frame(TRACE_FRAME_OTHER,
                              "c10::cuda::CUDACachingAllocator::Native::"
                              "DeviceCachingAllocator::malloc",
                              "c10\\cuda\\CUDACachingAllocator.cpp", 1153, 0, 0);
    uint32_t unwind = frame(TRACE_FRAME_OTHER, "torch::unwind::unwind()", "??", 0, 0, 0);
    uint32_t gather = frame(TRACE_FRAME_OTHER, "torch::CapturedTraceback::gather(bool, bool, bool)",
                            "??", 0, 0, 0);
    uint32_t with_cpp =
        frame(TRACE_FRAME_OTHER, "torch::cuda::(anonymous namespace)::gather_with_cpp()",
              "memory_snapshot.cpp", 0, 0, 0);
    uint32_t handle =
        frame(TRACE_FRAME_OTHER, "at::cuda::getCurrentCUDABlasHandle()", "??", 0, 0, 0);
    uint32_t thread = frame(TRACE_FRAME_OTHER, "start_thread", "??", 0, 0, 0);
    /* a Windows recording: D:\ paths, the library under site-packages\, the stdlib in Lib\ */
    uint32_t w_linear =
        frame(TRACE_FRAME_PYTHON, "forward",
              "C:\\Python311\\Lib\\site-packages\\torch\\nn\\modules\\linear.py", 116, 0, 0);
    uint32_t w_model = frame(TRACE_FRAME_PYTHON, "forward", "D:\\proj\\model.py", 44, 0, 0);
    uint32_t w_train = frame(TRACE_FRAME_PYTHON, "train_step", "D:\\proj\\train.py", 88, 0, 0);
    uint32_t w_thread = frame(TRACE_FRAME_PYTHON, "run",
                              "C:\\Users\\me\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\"
                              "threading.py",
                              982, 0, 0);
    uint32_t win = stack((uint32_t[]){w_thread, w_train, w_model, w_linear, malloc_f}, 5);
    uint32_t win_library = stack((uint32_t[]){w_thread, w_linear, malloc_f}, 3);
    uint32_t l_linear =
        frame(TRACE_FRAME_PYTHON, "forward",
              "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", 116, 0, 0);
    uint32_t l_model = frame(TRACE_FRAME_PYTHON, "forward", "/home/me/proj/model.py", 44, 0, 0);
    uint32_t l_train = frame(TRACE_FRAME_PYTHON, "train_step", "/home/me/proj/train.py", 88, 0, 0);
    uint32_t l_thread =
        frame(TRACE_FRAME_PYTHON, "run", "/usr/lib/python3.11/threading.py", 982, 0, 0);
    uint32_t l_malloc = frame(TRACE_FRAME_OTHER,
                              "c10::cuda::CUDACachingAllocator::Native::"
                              "DeviceCachingAllocator::malloc",
                              "c10/cuda/CUDACachingAllocator.cpp", 1153, 0, 0);
    uint32_t lin = stack((uint32_t[]){l_thread, l_train, l_model, l_linear, l_malloc}, 5);
    /* a C++ thread's allocation under PyTorch's recording frames */
    uint32_t recorded = stack((uint32_t[]){thread, handle, malloc_f, with_cpp, gather, unwind}, 6);
    /* one site, model.py:60, reached four ways: two calls inside it, two callers outside */
    uint32_t m60 = frame(TRACE_FRAME_PYTHON, "forward", "/p/model.py", 60, 0, 0);
    uint32_t attn88 = frame(TRACE_FRAME_PYTHON, "attend", "/venv/site-packages/attn.py", 88, 0, 0);
    uint32_t attn95 = frame(TRACE_FRAME_PYTHON, "attend", "/venv/site-packages/attn.py", 95, 0, 0);
    uint32_t t90 = frame(TRACE_FRAME_PYTHON, "train_step", "/p/train.py", 90, 0, 0);
    uint32_t t95 = frame(TRACE_FRAME_PYTHON, "train_step", "/p/train.py", 95, 0, 0);
    uint32_t s1 = stack((uint32_t[]){t90, m60, attn88, l_malloc}, 4);
    uint32_t s2 = stack((uint32_t[]){t90, m60, attn95, l_malloc}, 4);
    uint32_t s3 = stack((uint32_t[]){t95, m60, attn88, l_malloc}, 4);
    uint32_t alone = stack((uint32_t[]){t95, l_malloc}, 2);
    ev(TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, TRACE_SOURCE_CUPTI, 0x10000000, 2 * MiB, 0, win);
    char path[320];
    snprintf(path, sizeof path, "%s/rules.db", tmpdir);
    replay_it(path, DB_READ_ONLY);
    check_label(win, "model.py:44 forward", 0);
    check_label(win_library, "linear.py:116 forward", 0);
    check_label(lin, "model.py:44 forward", 0);
    check_label(recorded, "at::cuda::getCurrentCUDABlasHandle", 0);
    stack_names *c = stack_names_new(db);
    const named_stack *sw = stack_names_get(c, win), *sl = stack_names_get(c, lin);
    CHECK(sw && sl && !strcmp(sw->key, sl->key)); /* matched across runs */
    /* a list: the site, then the first frame where the stacks differ, inside, then outside */
    int64_t ids[] = {s1, s2, s3, alone, s1};
    char labels[5][256], *out[5] = {labels[0], labels[1], labels[2], labels[3], labels[4]};
    CHECK(stack_labels_of(db, ids, 5, out, sizeof labels[0]) == 0);
    CHECK_STR_EQ(labels[0],
                 "model.py:60 forward via attn.py:88 attend from train.py:90 train_step");
    CHECK_STR_EQ(labels[1], "model.py:60 forward via attn.py:95 attend");
    CHECK_STR_EQ(labels[2],
                 "model.py:60 forward via attn.py:88 attend from train.py:95 train_step");
    CHECK_STR_EQ(labels[3], "train.py:95 train_step"); /* no other of its site */
    CHECK_STR_EQ(labels[4], labels[0]);                /* the same stack: one label */
    CHECK(stack_labels_of(db, ids + 1, 1, out, sizeof labels[0]) == 0);
    CHECK_STR_EQ(labels[0], "model.py:60 forward"); /* alone in its list */
    stack_names_free(c);
}

/* ---- a synthetic run: every event ---- */

static int by_id(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The layout's live blocks are exactly the `allocations` view's at event n. */
static void check_against_view(const layout *l) {
    char sql[400];
    snprintf(sql, sizeof sql,
             "SELECT alloc_id FROM allocations WHERE device = 0 AND kind = 'device' AND "
             "alloc_id <= %lld AND (free_event_id IS NULL OR free_event_id > %lld) "
             "ORDER BY alloc_id",
             (long long)l->event_id, (long long)l->event_id);
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
    int64_t *mine = malloc((l->live_blocks + 1) * sizeof *mine);
    size_t n = 0;
    for (size_t i = 0; i < l->block_count; i++)
        if (l->blocks[i].state != LAYOUT_INACTIVE)
            mine[n++] = l->blocks[i].alloc_event_id;
    qsort(mine, n, sizeof *mine, by_id);
    size_t k = 0;
    int same = 1;
    while (sqlite3_step(st) == SQLITE_ROW)
        if (k >= n || mine[k++] != sqlite3_column_int64(st, 0))
            same = 0;
    CHECK(same && k == n);
    sqlite3_finalize(st);
    free(mine);
}

static void test_synthetic_every_event(void) {
    char err[256];
    w = trace_writer_open(trace_path, NULL, err, sizeof err);
    sim_config cfg = sim_config_default();
    cfg.steps = 4;
    cfg.leak_bytes = 3 * MiB;
    cfg.fragment = 1;
    cfg.streams = 2;
    sim_result res;
    CHECK(sim_run(&cfg, w, &res, err, sizeof err) == 0);
    replay_it(db_path, DB_READ_ONLY);
    int64_t last = q("SELECT max(event_id) FROM event_rows");
    CHECK(last > 500);
    int64_t *ids = malloc((size_t)(last + 1) * sizeof *ids);
    layout **ls = calloc((size_t)(last + 1), sizeof *ls);
    for (int64_t i = 0; i <= last; i++)
        ids[i] = last - i; /* any order */
    CHECK(layout_build_many(db, 0, ids, (size_t)last + 1, ls, err, sizeof err) == 0);
    int bad_tiles = 0, bad_totals = 0, pending = 0;
    for (int64_t i = 0; i <= last; i++) {
        const layout *l = ls[i];
        layout_totals t;
        if (!l || !tiles(l))
            bad_tiles++;
        if (!l || layout_timeline_at(db, 0, ids[i], &t) != 0 ||
            (int64_t)l->allocated_bytes != t.allocated_bytes ||
            (int64_t)l->requested_bytes != t.requested_bytes ||
            (int64_t)l->reserved_bytes != t.reserved_bytes ||
            (int64_t)l->segment_count != t.segments ||
            (int64_t)l->largest_free_bytes != t.largest_free_bytes || l->outside_count) {
            if (bad_totals++ < 3)
                fprintf(stderr, "event %lld: layout %llu/%llu, timeline %lld/%lld\n",
                        (long long)ids[i], l ? (unsigned long long)l->allocated_bytes : 0ULL,
                        l ? (unsigned long long)l->reserved_bytes : 0ULL,
                        (long long)t.allocated_bytes, (long long)t.reserved_bytes);
        }
        pending += l && l->pending_bytes > 0;
    }
    CHECK(bad_tiles == 0);
    CHECK(bad_totals == 0);
    CHECK(pending > 0); /* the run has stream-ordered frees */
    /* the same as one at a time, and the same live blocks as the schema's view */
    for (int64_t n = 0; n <= last; n += last / 7) {
        layout *one = at(n);
        const layout *many = ls[last - n];
        CHECK(one && many && one->block_count == many->block_count &&
              one->segment_count == many->segment_count);
        for (size_t k = 0; one && many && k < one->block_count && k < many->block_count; k++) {
            const layout_block *x = &one->blocks[k], *y = &many->blocks[k];
            CHECK(x->addr == y->addr && x->size == y->size && x->requested == y->requested &&
                  x->stream == y->stream && x->alloc_event_id == y->alloc_event_id &&
                  x->stack_id == y->stack_id && x->state == y->state);
        }
        if (one)
            check_against_view(one);
        layout_free(one);
    }
    for (int64_t i = 0; i <= last; i++)
        layout_free(ls[i]);
    free(ls);
    free(ids);
}

static void test_errors(void) {
    char err[256] = "";
    layout *l = (layout *)1;
    sqlite3 *empty;
    CHECK(sqlite3_open(":memory:", &empty) == SQLITE_OK);
    CHECK(layout_build(empty, 0, 5, &l, err, sizeof err) == -1);
    CHECK(l == NULL && strstr(err, "no such table") != NULL);
    layout_totals t;
    CHECK(layout_timeline_at(empty, 0, 5, &t) == -1);
    char buf[64];
    CHECK(stack_label(empty, 3, buf, sizeof buf) == -1);
    CHECK_STR_EQ(buf, "unknown stack");
    stack_names *c = stack_names_new(empty);
    CHECK(c && !strcmp(stack_names_get(c, 3)->site, "unknown stack"));
    stack_names_free(c);
    sqlite3_close(empty);
    layout_free(NULL);
}

int main(void) {
    if (tmpdir_make("layout") != 0)
        return 1;
    test_whole_blocks();
    test_blocks_pending();
    test_vmm_join();
    test_releasable();
    test_anomalies();
    test_stacks();
    test_stack_rules();
    test_synthetic_every_event();
    test_errors();
    return tmpdir_finish("test_layout");
}
