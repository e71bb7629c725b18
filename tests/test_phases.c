/* test_phases.c — phases.h on the frames real PyTorch stacks carry (torch/nn/modules/module.py,
 * torch/autograd/__init__.py, autograd's C++ engine thread with no Python frame at all, as a
 * snapshot's backward shows it, torch/optim/adam.py) and on a synthetic trace's bare names. */
#include "check.h"
#include "phases.h"

static phase of(const named_frame *frames, size_t n) {
    named_stack s = {.stack_id = 1, .known = 1, .frames = (named_frame *)frames, .frame_count = n};
    return phase_of_stack(&s);
}

#define PY(name, file)                                                                             \
    { name, file, NULL, 1, 0 }

int main(void) {
    /* innermost first, as stack_names gives them */
    const named_frame forward[] = {
        PY("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", NULL),
        PY("forward", "/usr/lib/python3/site-packages/torch/nn/modules/linear.py"),
        PY("_call_impl", "/usr/lib/python3/site-packages/torch/nn/modules/module.py"),
        PY("train_step", "/home/me/train.py")};
    CHECK_EQ_U64(of(forward, 4), PHASE_FORWARD);
    const named_frame call_only[] = {PY("_wrapped_call_impl", "torch/nn/modules/module.py"),
                                     PY("main", "train.py")};
    CHECK_EQ_U64(of(call_only, 2), PHASE_FORWARD);
    /* backward from Python, and autograd's own thread with C++ frames only */
    const named_frame py_backward[] = {
        PY("at::native::mm_out_cuda", NULL), PY("_engine_run_backward", "torch/autograd/graph.py"),
        PY("backward", "torch/autograd/__init__.py"), PY("backward", "torch/_tensor.py"),
        PY("train_step", "train.py")};
    CHECK_EQ_U64(of(py_backward, 5), PHASE_BACKWARD);
    const named_frame engine[] = {PY("at::native::mm_out_cuda", "ops.cu"),
                                  PY("torch::autograd::Engine::evaluate_function", "engine.cpp"),
                                  PY("torch::autograd::Engine::thread_main", "engine.cpp"),
                                  PY("start_thread", "pthread_create.c")};
    CHECK_EQ_U64(of(engine, 4), PHASE_BACKWARD);
    /* a module's forward run inside backward (activation checkpointing): backward wins */
    const named_frame recompute[] = {PY("forward", "model.py"),
                                     PY("_call_impl", "torch/nn/modules/module.py"),
                                     PY("torch::autograd::Engine::thread_main", "engine.cpp")};
    CHECK_EQ_U64(of(recompute, 3), PHASE_BACKWARD);
    /* the optimizer: torch/optim/, or a bare adamw.py as synth writes it */
    const named_frame adam[] = {PY("at::native::zeros_like", NULL),
                                PY("_init_group", "/opt/conda/lib/python3.11/site-packages/torch/"
                                                  "optim/adam.py"),
                                PY("step", "/opt/conda/lib/python3.11/site-packages/torch/optim/"
                                           "optimizer.py"),
                                PY("train_step", "train.py")};
    CHECK_EQ_U64(of(adam, 4), PHASE_OPTIMIZER);
    const named_frame bare[] = {PY("_init_group", "adamw.py"), PY("train_step", "train.py")};
    CHECK_EQ_U64(of(bare, 2), PHASE_OPTIMIZER);
    /* zero_grad frees last step's gradients before the next step's input: not an optimizer step,
     * whether set_to_none frees them or zero_() writes them */
    const named_frame zero_grad[] = {
        PY("zero_grad", "/opt/conda/lib/python3.11/site-packages/torch/optim/optimizer.py"),
        PY("train_step", "train.py")};
    CHECK_EQ_U64(of(zero_grad, 2), PHASE_OTHER);
    /* frame by frame, as a stack trie computes it */
    CHECK_EQ_U64(phase_of_flags(phase_frame_flags(&adam[1]) | phase_frame_flags(&forward[2])),
                 PHASE_OPTIMIZER);
    CHECK_EQ_U64(phase_of_flags(phase_frame_flags(&engine[1])), PHASE_BACKWARD);
    CHECK_EQ_U64(phase_of_flags(0), PHASE_OTHER);
    /* user code, a data loader, no frames */
    const named_frame data[] = {PY("load_batch", "data.py"), PY("main", "train.py")};
    CHECK_EQ_U64(of(data, 2), PHASE_OTHER);
    /* PyTorch's recording frames, in every stack it takes, never decide (nor match a rule) */
    const named_frame recording[] = {
        PY("torch::unwind::unwind()", NULL),
        PY("torch::CapturedTraceback::gather(bool, bool, bool)", NULL),
        PY("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp"),
        PY("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free(Block*)",
           "CUDACachingAllocator.cpp"),
        PY("forward", "torch/csrc/profiler/unwind/unwind.cpp")};
    for (size_t i = 0; i < sizeof recording / sizeof recording[0]; i++) {
        CHECK(phase_frame_is_recording(&recording[i]));
        CHECK_EQ_U64(phase_frame_flags(&recording[i]), 0);
    }
    CHECK_EQ_U64(of(recording, 5), PHASE_OTHER);
    CHECK(!phase_frame_is_recording(&forward[1]) && !phase_frame_is_recording(&engine[1]));
    /* zero_grad by its qualified name too (Optimizer.zero_grad, Module.zero_grad) */
    const named_frame qualified = PY("Optimizer.zero_grad", "torch/optim/optimizer.py");
    CHECK_EQ_U64(phase_frame_flags(&qualified), PHASE_FLAG_ZERO_GRAD);
    CHECK_EQ_U64(phase_frame_flags(&zero_grad[0]), PHASE_FLAG_ZERO_GRAD);
    CHECK_EQ_U64(phase_of_stack(NULL), PHASE_UNKNOWN);
    named_stack unknown = {.stack_id = 9, .known = 0};
    CHECK_EQ_U64(phase_of_stack(&unknown), PHASE_UNKNOWN);
    CHECK_STR_EQ(phase_name(PHASE_OPTIMIZER), "optimizer");
    CHECK_STR_EQ(phase_name(PHASE_COUNT), "unknown");
    return check_finish("test_phases");
}
