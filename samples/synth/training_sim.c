/* training_sim.c — the simulated training job behind `synth`.
 *
 * Shaped as three layers: (1) the stacks of the allocation sites, built once
 * into the trace's trie with native and Python frames as a real recording
 * would have them; (2) thin wrappers that turn allocator-model calls and
 * their effects into trace events; (3) the training loop itself, which only
 * says what a transformer step allocates and frees. The model decides every
 * address, so the trace obeys PyTorch's allocator rules by construction. */
#include "training_sim.h"

#include "alloc_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- allocation sites and their stacks -------------------------------- */

enum site_id {
    SITE_PARAM,
    SITE_INPUT,
    SITE_ACT_QKV,
    SITE_ACT_ATTN,
    SITE_ACT_MLP,
    SITE_TEMP_SOFTMAX,
    SITE_TEMP_GELU,
    SITE_LOSS,
    SITE_GRAD_INPUT,
    SITE_PARAM_GRAD,
    SITE_OPT_STATE,
    SITE_OPT_TEMP,
    SITE_LEAK,
    SITE_FRAG,
    SITE_SPIKE,
    SITE_COUNT
};

typedef struct site_desc {
    gmt_category category;             /* what the simulation knows the block is */
    const char *op;                    /* the aten op whose output this is */
    const char *py_function, *py_file; /* innermost Python frame */
    uint32_t py_line;
    uint32_t train_line; /* line in train.py's train_step that led here */
} site_desc;

static const site_desc sites[SITE_COUNT] = {
    [SITE_PARAM] = {BLOCK_CATEGORY_PARAMETER, "at::native::empty_cuda", "__init__", "model.py", 21,
                    0},
    [SITE_INPUT] = {BLOCK_CATEGORY_INPUT, "at::native::_to_copy", "load_batch", "data.py", 47, 79},
    [SITE_ACT_QKV] = {BLOCK_CATEGORY_ACTIVATION, "at::native::addmm_out_cuda", "forward",
                      "layers.py", 58, 80},
    [SITE_ACT_ATTN] = {BLOCK_CATEGORY_ACTIVATION, "at::native::_efficient_attention_forward",
                       "forward", "layers.py", 61, 80},
    [SITE_ACT_MLP] = {BLOCK_CATEGORY_ACTIVATION, "at::native::addmm_out_cuda", "forward",
                      "layers.py", 66, 80},
    [SITE_TEMP_SOFTMAX] = {BLOCK_CATEGORY_TEMPORARY, "at::native::softmax_cuda", "forward",
                           "layers.py", 60, 80},
    [SITE_TEMP_GELU] = {BLOCK_CATEGORY_TEMPORARY, "at::native::gelu_out_cuda", "forward",
                        "layers.py", 67, 80},
    [SITE_LOSS] = {BLOCK_CATEGORY_ACTIVATION, "at::native::nll_loss_forward_out_cuda",
                   "cross_entropy", "functional.py", 3104, 81},
    [SITE_GRAD_INPUT] = {BLOCK_CATEGORY_TEMPORARY, "at::native::mm_out_cuda", "backward",
                         "autograd.py", 251, 83},
    [SITE_PARAM_GRAD] = {BLOCK_CATEGORY_GRADIENT, "at::native::mm_out_cuda", "backward",
                         "autograd.py", 251, 83},
    [SITE_OPT_STATE] = {BLOCK_CATEGORY_OPTIMIZER_STATE, "at::native::zeros_like", "_init_group",
                        "adamw.py", 137, 85},
    [SITE_OPT_TEMP] = {BLOCK_CATEGORY_TEMPORARY, "at::native::foreach_tensor_mul_cuda",
                       "_multi_tensor_adamw", "adamw.py", 512, 85},
    [SITE_LEAK] = {BLOCK_CATEGORY_OTHER, "at::native::clone", SIM_LEAK_FUNCTION, SIM_LEAK_FILE,
                   SIM_LEAK_LINE, 0},
    [SITE_FRAG] = {BLOCK_CATEGORY_INPUT, "at::native::empty_cuda", "pad_batch", "data.py", 63, 79},
    [SITE_SPIKE] = {BLOCK_CATEGORY_TEMPORARY, "at::native::empty_cuda", SIM_SPIKE_FUNCTION,
                    SIM_SPIKE_FILE, SIM_SPIKE_LINE, 80},
};

/* Native frames every allocation stack has, innermost first. */
static const struct native_frame {
    uint32_t module; /* index into modules[] */
    uint64_t offset;
    const char *function, *file;
    uint32_t line;
} allocator_frames[] =
    {
        {0, 0x4a1f0, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc",
         "c10/cuda/CUDACachingAllocator.cpp", 1153},
        {0, 0x4b880, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate",
         "c10/cuda/CUDACachingAllocator.cpp", 3362},
        {1, 0x1e2c340, "at::TensorBase at::detail::_empty_generic", "aten/src/ATen/EmptyTensor.cpp",
         56},
        {2, 0x3f0a10, "at::detail::empty_cuda", "aten/src/ATen/cuda/EmptyTensor.cpp", 23},
},
  dispatch_frames[] =
      {
          {1, 0x27a0b10, "c10::Dispatcher::call", "aten/src/ATen/core/dispatch/Dispatcher.h", 692},
          {1, 0x27a11f0, "at::_ops::call", "build/aten/src/ATen/Operators_4.cpp", 3011},
          {3, 0x5c7a20, "torch::autograd::THPVariable_op",
           "torch/csrc/autograd/generated/python_torch_functions_0.cpp", 4880},
          {4, 0x16d2a0, "cfunction_call", "Objects/methodobject.c", 542},
},
  eval_frame = {4, 0x1a0040, "_PyEval_EvalFrameDefault", "Python/ceval.c", 4769},
  outer_frames[] = {
      {4, 0x2a8f10, "pymain_run_python", "Modules/main.c", 617},
      {4, 0x2a9320, "Py_RunMain", "Modules/main.c", 695},
      {5, 0x1130, "main", "Programs/python.c", 15},
      {6, 0x271c9, "__libc_start_call_main", "../sysdeps/nptl/libc_start_call_main.h", 58},
};

static const struct module_desc {
    const char *path;
    uint64_t base, size;
} modules[] = {
    {"/usr/lib/python3/site-packages/torch/lib/libc10_cuda.so", 0x7f3a10000000ULL, 0x200000},
    {"/usr/lib/python3/site-packages/torch/lib/libtorch_cpu.so", 0x7f3a20000000ULL, 0x9000000},
    {"/usr/lib/python3/site-packages/torch/lib/libtorch_cuda.so", 0x7f3a40000000ULL, 0x8000000},
    {"/usr/lib/python3/site-packages/torch/lib/libtorch_python.so", 0x7f3a50000000ULL, 0x1000000},
    {"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", 0x7f3a60000000ULL, 0x400000},
    {"/usr/bin/python3.11", 0x560000000000ULL, 0x2000},
    {"/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f3a70000000ULL, 0x200000},
};
#define MODULE_COUNT (sizeof modules / sizeof modules[0])

/* ---- simulation state -------------------------------------------------- */

typedef struct block {
    uint64_t addr, size, requested, stream;
    gmt_category category; /* its site's */
} block;

typedef struct device_sim {
    am_model *model;
    uint32_t device;
    uint64_t *param_sizes; /* per layer x 4 weight matrices */
    block *params, *grads, *opt_state;
    int have_grads, have_opt_state;
    block *pending; /* free_requested, not yet completed */
    size_t pending_len, pending_cap;
    uint64_t live[BLOCK_CATEGORY_COUNT]; /* block bytes live now, by category */
    uint64_t allocated;                  /* their sum */
    sim_device_truth *truth;             /* what is live at the peak (device < SIM_TRUTH_DEVICES) */
} device_sim;

typedef struct sim {
    const sim_config *cfg;
    trace_writer *w;
    uint64_t rng;
    uint64_t ts;
    uint32_t site_stack[SITE_COUNT][2]; /* [site][0 main thread, 1 autograd thread] */
    uint8_t symbolized[4096];           /* native frame ids already given a SYMBOL record */
    device_sim *devs;
    sim_result res;
    int done, failed;
    char *err;
    size_t errlen;
} sim;

enum { TID_MAIN = 4100, TID_AUTOGRAD = 4117 };

static uint64_t rnd(sim *s) {
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static void tick(sim *s) {
    s->ts += 800 + rnd(s) % 24000; /* 0.8 .. 25 us between allocator calls */
}

static uint32_t str(sim *s, const char *text) {
    return trace_writer_string(s->w, text, strlen(text));
}

static uint32_t native(sim *s, const struct native_frame *nf) {
    trace_frame f = {.kind = TRACE_FRAME_NATIVE,
                     .module_id = nf->module + 1,
                     .ip = modules[nf->module].base + nf->offset};
    uint32_t id = trace_writer_frame(s->w, &f);
    if (id && id < sizeof s->symbolized && !s->symbolized[id]) {
        /* What the recorder's symbolizer writes after the run. */
        trace_symbol_entry e = {str(s, nf->function), str(s, nf->file), nf->line};
        trace_symbol sym = {.frame_id = id, .count = 1, .entries = &e};
        trace_writer_symbol(s->w, &sym);
        s->symbolized[id] = 1;
    }
    return id;
}

static uint32_t python(sim *s, const char *function, const char *file, uint32_t line) {
    trace_frame f = {.kind = TRACE_FRAME_PYTHON,
                     .function_id = str(s, function),
                     .file_id = str(s, file),
                     .line = line};
    return trace_writer_frame(s->w, &f);
}

/* Builds the stack of one site from the outermost frame in: the trie wants
 * parents first. Python frames each sit on an interpreter frame. */
static uint32_t build_stack(sim *s, const site_desc *d, int autograd_thread) {
    uint32_t node = 0;
    if (autograd_thread) {
        /* The autograd engine's own thread: no Python below it. */
        static const struct native_frame engine[] = {
            {6, 0x94ac0, "start_thread", "./nptl/pthread_create.c", 442},
            {1, 0x4c81d10, "torch::autograd::Engine::thread_init", "torch/csrc/autograd/engine.cpp",
             362},
            {1, 0x4c7f540, "torch::autograd::Engine::evaluate_function",
             "torch/csrc/autograd/engine.cpp", 1013},
        };
        for (size_t i = 0; i < sizeof engine / sizeof engine[0]; i++)
            node = trace_writer_stack(s->w, node, native(s, &engine[i]));
    } else {
        for (size_t i = sizeof outer_frames / sizeof outer_frames[0]; i-- > 0;)
            node = trace_writer_stack(s->w, node, native(s, &outer_frames[i]));
        node = trace_writer_stack(s->w, node, native(s, &eval_frame));
        node = trace_writer_stack(s->w, node, python(s, "<module>", "train.py", 131));
        node = trace_writer_stack(s->w, node, native(s, &eval_frame));
        node = trace_writer_stack(s->w, node, python(s, "main", "train.py", 120));
        if (d->train_line) {
            node = trace_writer_stack(s->w, node, native(s, &eval_frame));
            node =
                trace_writer_stack(s->w, node, python(s, "train_step", "train.py", d->train_line));
        }
        if (d->train_line == 80) { /* forward goes through the model */
            node = trace_writer_stack(s->w, node, native(s, &eval_frame));
            node = trace_writer_stack(s->w, node, python(s, "_call_impl", "module.py", 1527));
            node = trace_writer_stack(s->w, node, native(s, &eval_frame));
            node = trace_writer_stack(s->w, node, python(s, "forward", "model.py", 44));
        }
        node = trace_writer_stack(s->w, node, native(s, &eval_frame));
        node = trace_writer_stack(s->w, node, python(s, d->py_function, d->py_file, d->py_line));
    }
    for (size_t i = sizeof dispatch_frames / sizeof dispatch_frames[0]; i-- > 0;)
        node = trace_writer_stack(s->w, node, native(s, &dispatch_frames[i]));
    struct native_frame op = {2, 0x100000 + (uint64_t)(d - sites) * 0x1340, d->op,
                              "aten/src/ATen/native/cuda/ops.cu", 100 + (uint32_t)(d - sites)};
    node = trace_writer_stack(s->w, node, native(s, &op));
    for (size_t i = sizeof allocator_frames / sizeof allocator_frames[0]; i-- > 0;)
        node = trace_writer_stack(s->w, node, native(s, &allocator_frames[i]));
    return node;
}

/* ---- events ------------------------------------------------------------ */

static void emit(sim *s, uint32_t device, trace_op op, trace_level level, uint64_t addr,
                 uint64_t size, uint64_t requested, uint64_t stream, uint32_t stack, uint32_t tid) {
    if (s->done)
        return;
    tick(s);
    trace_event ev = {.ts_ns = s->ts,
                      .addr = addr,
                      .size = size,
                      .requested = requested,
                      .stream = stream,
                      .stack_id = stack,
                      .tid = tid,
                      .device = device,
                      .op = (uint8_t)op,
                      .level = (uint8_t)level,
                      .kind = TRACE_KIND_DEVICE,
                      .source = TRACE_SOURCE_TORCH};
    if (trace_writer_event(s->w, &ev) != 0) {
        s->failed = s->done = 1;
        return;
    }
    if (++s->res.events == s->cfg->max_events)
        s->done = 1;
}

static void driver_sample(sim *s, device_sim *d) {
    if (s->done)
        return;
    const uint64_t context_bytes = 534ULL << 20; /* CUDA context + cuBLAS workspaces */
    am_stats_info st = am_stats(d->model);
    uint64_t used = st.reserved_bytes + context_bytes;
    trace_counter c = {.ts_ns = s->ts,
                       .device = d->device,
                       .kind = TRACE_COUNTER_DRIVER_FREE,
                       .value = used < s->cfg->device_memory ? s->cfg->device_memory - used : 0};
    trace_writer_counter(s->w, &c);
    c.kind = TRACE_COUNTER_DRIVER_TOTAL;
    c.value = s->cfg->device_memory;
    trace_writer_counter(s->w, &c);
}

typedef struct effect_ctx {
    sim *s;
    device_sim *d;
    uint32_t stack, tid;
} effect_ctx;

/* A block's free completed: it no longer counts. */
static void block_ended(device_sim *d, const block *b) {
    d->live[b->category] -= b->size;
    d->allocated -= b->size;
}

static void forget_pending(device_sim *d, uint64_t addr) {
    for (size_t i = 0; i < d->pending_len; i++)
        if (d->pending[i].addr == addr) {
            block_ended(d, &d->pending[i]);
            d->pending[i] = d->pending[--d->pending_len];
            return;
        }
}

/* The allocator model's effects are what the driver-level recorder and the
 * allocator's own history would show: segments, failures, OOM. */
static void on_effect(void *ctx, const am_effect *e) {
    effect_ctx *x = ctx;
    sim *s = x->s;
    uint32_t dev = x->d->device;
    switch (e->kind) {
    case AM_EFFECT_SEGMENT_ALLOC:
        emit(s, dev, TRACE_OP_ALLOC, TRACE_LEVEL_SEGMENT, e->addr, e->size, e->size, e->stream,
             x->stack, x->tid);
        break;
    case AM_EFFECT_SEGMENT_FREE:
        emit(s, dev, TRACE_OP_FREE, TRACE_LEVEL_SEGMENT, e->addr, e->size, e->size, e->stream,
             x->stack, x->tid);
        break;
    case AM_EFFECT_SEGMENT_MAP: /* expandable segments (not enabled by the generator yet) */
    case AM_EFFECT_SEGMENT_UNMAP:
        emit(s, dev, e->kind == AM_EFFECT_SEGMENT_MAP ? TRACE_OP_MAP : TRACE_OP_UNMAP,
             TRACE_LEVEL_SEGMENT, e->addr, e->size, e->size, e->stream, x->stack, x->tid);
        break;
    case AM_EFFECT_ALLOC_FAILED:
        driver_sample(s, x->d);
        emit(s, dev, TRACE_OP_ALLOC_FAILED, TRACE_LEVEL_SEGMENT, 0, e->size, e->size, e->stream,
             x->stack, x->tid);
        break;
    case AM_EFFECT_OOM:
        emit(s, dev, TRACE_OP_OOM, TRACE_LEVEL_BLOCK, 0, e->size, e->requested, e->stream, x->stack,
             x->tid);
        s->res.ooms++;
        break;
    case AM_EFFECT_FREE_COMPLETED:
        emit(s, dev, TRACE_OP_FREE, TRACE_LEVEL_BLOCK, e->addr, e->size, e->requested, e->stream,
             x->stack, x->tid);
        forget_pending(x->d, e->addr);
        break;
    }
}

/* Allocates like torch.empty(); an OOM yields a block of size 0. */
static block sim_alloc(sim *s, device_sim *d, uint64_t requested, uint64_t stream, int site,
                       uint32_t tid) {
    block b = {0};
    if (s->done)
        return b;
    uint32_t stack = s->site_stack[site][tid == TID_AUTOGRAD];
    effect_ctx x = {s, d, stack, tid};
    am_block_info info;
    if (am_malloc(d->model, requested, stream, stack, on_effect, &x, &info) != AM_OK)
        return b;
    b = (block){info.addr, info.size, info.requested, stream, sites[site].category};
    emit(s, d->device, TRACE_OP_ALLOC, TRACE_LEVEL_BLOCK, b.addr, b.size, b.requested, stream,
         stack, tid);
    d->live[b.category] += b.size;
    d->allocated += b.size;
    if (d->truth && d->allocated > d->truth->peak_allocated) { /* the first event at the peak */
        d->truth->peak_allocated = d->allocated;
        memcpy(d->truth->categories_at_peak, d->live, sizeof d->live);
    }
    return b;
}

/* Frees like a tensor's last reference going away. A block used on a side
 * stream is only free_requested: its free completes after the stream's
 * event, which the simulation models as a few allocations later. */
static void sim_free(sim *s, device_sim *d, block *b, uint32_t tid) {
    if (!b->size || s->done) {
        b->size = 0;
        return;
    }
    if (b->stream != 0 && d->pending_len < d->pending_cap &&
        am_free_request(d->model, b->addr) == AM_OK) {
        emit(s, d->device, TRACE_OP_FREE_REQUESTED, TRACE_LEVEL_BLOCK, b->addr, b->size,
             b->requested, b->stream, 0, tid);
        d->pending[d->pending_len++] = *b;
    } else if (am_free(d->model, b->addr) == AM_OK) {
        emit(s, d->device, TRACE_OP_FREE, TRACE_LEVEL_BLOCK, b->addr, b->size, b->requested,
             b->stream, 0, tid);
        block_ended(d, b);
    }
    b->size = 0;
}

static void complete_pending_frees(sim *s, device_sim *d) {
    while (d->pending_len && !s->done) {
        block b = d->pending[--d->pending_len];
        if (am_free(d->model, b.addr) == AM_OK) {
            emit(s, d->device, TRACE_OP_FREE, TRACE_LEVEL_BLOCK, b.addr, b.size, b.requested,
                 b.stream, 0, TID_MAIN);
            block_ended(d, &b);
        }
    }
}

/* ---- the training loop -------------------------------------------------- */

enum { WEIGHTS_PER_LAYER = 6 };

static void setup_device(sim *s, device_sim *d) {
    uint64_t h = s->cfg->hidden;
    size_t n = (size_t)s->cfg->layers * WEIGHTS_PER_LAYER;
    for (size_t i = 0; i < n; i++) {
        /* qkv, out-proj, mlp-up, mlp-down (bf16 matrices) and two norms. */
        static const uint64_t rows[WEIGHTS_PER_LAYER] = {3, 1, 4, 4, 0, 0};
        uint64_t bytes =
            rows[i % WEIGHTS_PER_LAYER] ? rows[i % WEIGHTS_PER_LAYER] * h * h * 2 : h * 2;
        d->param_sizes[i] = bytes;
        d->params[i] = sim_alloc(s, d, bytes, 0, SITE_PARAM, TID_MAIN);
    }
}

static void stage(sim *s, const char *name);
static void name_tensors(sim *s, device_sim *d, uint64_t step);

static void train_step(sim *s, device_sim *d, uint64_t step) {
    const sim_config *c = s->cfg;
    uint64_t h = c->hidden, tokens = c->tokens;
    size_t nparams = (size_t)c->layers * WEIGHTS_PER_LAYER;
    if (c->fragment) /* variable sequence lengths: odd sizes, every step different */
        tokens = tokens / 4 + (rnd(s) % (tokens * 3 / 4 / 64 + 1)) * 64 + 17;

    /* zero_grad(set_to_none=True): last step's gradients go */
    for (size_t i = 0; d->have_grads && i < nparams; i++)
        sim_free(s, d, &d->grads[i], TID_MAIN);
    d->have_grads = 0;

    uint64_t side = c->streams > 1 ? 1 + step % (c->streams - 1) : 0;
    stage(s, "data_loading");
    block input = sim_alloc(s, d, tokens * 8, side, SITE_INPUT, TID_MAIN);
    stage(s, NULL);
    block pad = {0};
    if (c->fragment)
        pad = sim_alloc(s, d, tokens * h * 3 + 4096 * (rnd(s) % 700), 0, SITE_FRAG, TID_MAIN);

    stage(s, "forward");
    /* forward: per layer, activations kept for backward, temporaries not */
    block *acts = calloc((size_t)c->layers * 3, sizeof *acts);
    if (!acts) {
        s->failed = s->done = 1;
        return;
    }
    for (uint32_t l = 0; l < c->layers && !s->done; l++) {
        acts[l * 3 + 0] = sim_alloc(s, d, tokens * 3 * h * 2, 0, SITE_ACT_QKV, TID_MAIN);
        block t = sim_alloc(s, d, tokens * 16 * 4, 0, SITE_TEMP_SOFTMAX, TID_MAIN);
        acts[l * 3 + 1] = sim_alloc(s, d, tokens * h * 2, 0, SITE_ACT_ATTN, TID_MAIN);
        sim_free(s, d, &t, TID_MAIN);
        acts[l * 3 + 2] = sim_alloc(s, d, tokens * 4 * h * 2, 0, SITE_ACT_MLP, TID_MAIN);
        t = sim_alloc(s, d, tokens * 4 * h * 2, 0, SITE_TEMP_GELU, TID_MAIN);
        sim_free(s, d, &t, TID_MAIN);
    }
    if (c->spike_bytes && step == c->spike_step) { /* a planted spike, gone before backward */
        block spike = sim_alloc(s, d, c->spike_bytes, 0, SITE_SPIKE, TID_MAIN);
        sim_free(s, d, &spike, TID_MAIN);
    }
    block loss = sim_alloc(s, d, 4, 0, SITE_LOSS, TID_MAIN);
    sim_free(s, d, &input, TID_MAIN);
    if (c->fragment)
        sim_free(s, d, &pad, TID_MAIN);

    stage(s, NULL);
    stage(s, "backward");
    /* backward, on autograd's thread: gradients in, activations out */
    block grad_in = {0};
    for (uint32_t l = c->layers; l-- > 0 && !s->done;) {
        block next = sim_alloc(s, d, tokens * h * 2, 0, SITE_GRAD_INPUT, TID_AUTOGRAD);
        sim_free(s, d, &grad_in, TID_AUTOGRAD);
        grad_in = next;
        for (int k = 0; k < WEIGHTS_PER_LAYER; k++) {
            size_t i = (size_t)l * WEIGHTS_PER_LAYER + (size_t)k;
            d->grads[i] = sim_alloc(s, d, d->param_sizes[i], 0, SITE_PARAM_GRAD, TID_AUTOGRAD);
        }
        for (int k = 2; k >= 0; k--)
            sim_free(s, d, &acts[l * 3 + (uint32_t)k], TID_AUTOGRAD);
    }
    sim_free(s, d, &grad_in, TID_AUTOGRAD);
    d->have_grads = 1;
    sim_free(s, d, &loss, TID_MAIN);
    free(acts);

    stage(s, NULL);
    stage(s, "optimizer");
    /* optimizer: AdamW state once (fp32 exp_avg and exp_avg_sq), temporaries always */
    if (!d->have_opt_state) {
        for (size_t i = 0; i < nparams; i++) {
            d->opt_state[2 * i] =
                sim_alloc(s, d, d->param_sizes[i] * 2, 0, SITE_OPT_STATE, TID_MAIN);
            d->opt_state[2 * i + 1] =
                sim_alloc(s, d, d->param_sizes[i] * 2, 0, SITE_OPT_STATE, TID_MAIN);
        }
        d->have_opt_state = 1;
    }
    for (size_t i = 0; i < nparams && !s->done; i += WEIGHTS_PER_LAYER) {
        block t = sim_alloc(s, d, d->param_sizes[i] * 2, 0, SITE_OPT_TEMP, TID_MAIN);
        sim_free(s, d, &t, TID_MAIN);
    }
    stage(s, NULL);
    name_tensors(s, d, step);
    if (c->leak_bytes) {
        block leak = sim_alloc(s, d, c->leak_bytes, 0, SITE_LEAK, TID_MAIN);
        if (leak.size)
            s->res.leaked_bytes += leak.requested;
    }
    complete_pending_frees(s, d);
    driver_sample(s, d);
}

static void name_mark(sim *s, uint64_t addr, const char *category, uint32_t layer,
                      const char *weight, const char *suffix) {
    char text[160];
    snprintf(text, sizeof text, "%s layers.%u.%s%s", category, layer, weight, suffix);
    trace_marker m = {.ts_ns = s->ts,
                      .value = (int64_t)addr,
                      .tid = TID_MAIN,
                      .domain_id = str(s, TRACE_TENSOR_DOMAIN),
                      .name_id = str(s, text),
                      .kind = TRACE_MARK_MARK};
    trace_writer_marker(s->w, &m);
}

/* --names: what memrec's walk at the optimizer step's end writes (TRACE_FORMAT.md "Tensor
 * names"): every parameter and optimizer state at the first step, and the gradients at every
 * step (new tensors each step under zero_grad(set_to_none=True)). */
static void name_tensors(sim *s, device_sim *d, uint64_t step) {
    static const char *const weights[WEIGHTS_PER_LAYER] = {
        "attn.qkv.weight", "attn.out_proj.weight", "mlp.up.weight",
        "mlp.down.weight", "norm1.weight",         "norm2.weight"};
    if (!s->cfg->names || s->done)
        return;
    size_t n = (size_t)s->cfg->layers * WEIGHTS_PER_LAYER;
    for (size_t i = 0; i < n; i++) {
        uint32_t layer = (uint32_t)(i / WEIGHTS_PER_LAYER);
        const char *w = weights[i % WEIGHTS_PER_LAYER];
        if (step == 0) {
            name_mark(s, d->params[i].addr, "parameter", layer, w, "");
            name_mark(s, d->opt_state[2 * i].addr, "optimizer_state", layer, w, ".exp_avg");
            name_mark(s, d->opt_state[2 * i + 1].addr, "optimizer_state", layer, w, ".exp_avg_sq");
        }
        if (d->grads[i].size)
            name_mark(s, d->grads[i].addr, "gradient", layer, w, ".grad");
    }
}

static void marker(sim *s, trace_marker_kind kind, uint32_t name) {
    if (s->done)
        return;
    trace_marker m = {.ts_ns = s->ts, .tid = TID_MAIN, .name_id = name, .kind = (uint8_t)kind};
    trace_writer_marker(s->w, &m);
}

/* --stages: a named NVTX range opens (name) or the last one closes (NULL), as a program marks
 * its phases with torch.cuda.nvtx.range_push/pop. */
static void stage(sim *s, const char *name) {
    if (!s->cfg->stages)
        return;
    s->ts += 1000; /* 1 us apart: an event at a range's end time would be outside it */
    marker(s, name ? TRACE_MARK_RANGE_PUSH : TRACE_MARK_RANGE_POP, name ? str(s, name) : 0);
}

static void write_preamble(sim *s) {
    const sim_config *c = s->cfg;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "synth --seed %llu --steps %u --devices %u --layers %u%s",
             (unsigned long long)c->seed, c->steps, c->devices, c->layers,
             c->fragment ? " --fragment" : "");
    const char *host = c->host ? c->host : "synth-host";
    if (c->rank >= 0) /* as memrec's command line shows a torchrun rank */
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " --rank %d", (int)c->rank);
    trace_process p = {.pid = 31337 + (uint32_t)(c->rank > 0 ? c->rank : 0),
                       .ppid = 1,
                       .rank = c->rank,
                       .wall_anchor_ns = 1795000000000000000ULL,
                       .clock_anchor_ns = s->ts,
                       .host = {host, (uint32_t)strlen(host)},
                       .cmdline = {cmd, (uint32_t)strlen(cmd)},
                       .clock_source = {"simulated", 9},
                       .producer = {"synth", 5}};
    trace_writer_process(s->w, &p);
    for (uint32_t i = 0; i < c->devices; i++) {
        trace_device dev = {
            .device = i, .total_bytes = c->device_memory, .name = {"Simulated GPU", 13}};
        trace_writer_device(s->w, &dev);
    }
    for (size_t i = 0; i < MODULE_COUNT; i++) {
        char build_id[20];
        for (int k = 0; k < 20; k++)
            build_id[k] = (char)(i * 31 + (size_t)k * 7);
        trace_module m = {.module_id = (uint32_t)i + 1,
                          .base = modules[i].base,
                          .size = modules[i].size,
                          .path = {modules[i].path, (uint32_t)strlen(modules[i].path)},
                          .build_id = {build_id, 20}};
        trace_writer_module(s->w, &m);
    }
    trace_thread t = {TID_MAIN, str(s, "python3")};
    trace_writer_thread(s->w, &t);
    t = (trace_thread){TID_AUTOGRAD, str(s, "pt_autograd_0")};
    trace_writer_thread(s->w, &t);
    for (int i = 0; i < SITE_COUNT; i++) {
        s->site_stack[i][0] = build_stack(s, &sites[i], 0);
        s->site_stack[i][1] = build_stack(s, &sites[i], 1);
    }
}

sim_config sim_config_default(void) {
    return (sim_config){.seed = 1,
                        .steps = 20,
                        .devices = 1,
                        .streams = 2,
                        .layers = 12,
                        .hidden = 1024,
                        .tokens = 8 * 512,
                        .device_memory = 80ULL << 30,
                        .rank = -1};
}

static int free_devices(sim *s, int rc) {
    for (uint32_t i = 0; s->devs && i < s->cfg->devices; i++) {
        device_sim *d = &s->devs[i];
        am_model_free(d->model);
        free(d->param_sizes);
        free(d->params);
        free(d->grads);
        free(d->opt_state);
        free(d->pending);
    }
    free(s->devs);
    return rc;
}

int sim_run(const sim_config *cfg, trace_writer *w, sim_result *result, char *err, size_t errlen) {
    if (cfg->devices < 1 || cfg->devices > SIM_MAX_DEVICES || cfg->streams < 1 ||
        cfg->streams > 4 || cfg->layers < 1 || cfg->layers > 1000 || cfg->hidden < 64 ||
        cfg->tokens < 64) {
        snprintf(err, errlen,
                 "simulation config out of range (devices 1-8, streams 1-4, "
                 "layers 1-1000, hidden >= 64, tokens >= 64)");
        return -1;
    }
    sim s = {.cfg = cfg,
             .w = w,
             .rng = cfg->seed * 0x9E3779B97F4A7C15ULL + 1,
             .ts = 1000000000ULL,
             .err = err,
             .errlen = errlen};
    s.devs = calloc(cfg->devices, sizeof *s.devs);
    if (!s.devs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t nparams = (size_t)cfg->layers * WEIGHTS_PER_LAYER;
    for (uint32_t i = 0; i < cfg->devices; i++) {
        device_sim *d = &s.devs[i];
        am_config ac = am_config_default();
        ac.device_capacity = cfg->device_memory - (534ULL << 20);
        ac.va_base = 0x7f0000000000ULL + ((uint64_t)i << 40);
        d->model = am_model_new(&ac);
        d->device = i;
        d->truth = &s.res.truth[i];
        d->param_sizes = calloc(nparams, sizeof *d->param_sizes);
        d->params = calloc(nparams, sizeof *d->params);
        d->grads = calloc(nparams, sizeof *d->grads);
        d->opt_state = calloc(nparams * 2, sizeof *d->opt_state);
        d->pending_cap = 16;
        d->pending = calloc(d->pending_cap, sizeof *d->pending);
        if (!d->model || !d->param_sizes || !d->params || !d->grads || !d->opt_state ||
            !d->pending) {
            snprintf(err, errlen, "out of memory");
            return free_devices(&s, -1);
        }
    }
    write_preamble(&s);
    stage(&s, "model_creation");
    for (uint32_t i = 0; i < cfg->devices; i++)
        setup_device(&s, &s.devs[i]);
    stage(&s, NULL);
    for (uint64_t step = 0; !s.done && (cfg->max_events || step < cfg->steps); step++) {
        char name[32];
        snprintf(name, sizeof name, "step %llu", (unsigned long long)step);
        marker(&s, TRACE_MARK_RANGE_PUSH, str(&s, name));
        for (uint32_t i = 0; i < cfg->devices && !s.done; i++)
            train_step(&s, &s.devs[i], step);
        s.ts += 40000000 + rnd(&s) % 20000000; /* the CPU waits for the GPU: ~50 ms */
        marker(&s, TRACE_MARK_RANGE_POP, 0);
        if (!s.done)
            s.res.steps_completed++;
    }
    if (s.failed || trace_writer_error(w)[0]) {
        snprintf(err, errlen, "%s",
                 trace_writer_error(w)[0] ? trace_writer_error(w) : "simulation failed");
        return free_devices(&s, -1);
    }
    if (result)
        *result = s.res;
    return free_devices(&s, 0);
}
