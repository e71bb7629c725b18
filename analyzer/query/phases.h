/* phases.h — the phase of a training step an allocation was made in, from its stack: the
 * frames PyTorch's own code leaves there.
 *
 *   backward   a frame of autograd's engine (torch::autograd::Engine::thread_main,
 *              evaluate_function, execute; the C++-only frames of a snapshot's backward), or
 *              Python's torch.autograd.backward / Tensor.backward
 *   optimizer  a Python frame of torch/optim/ (adam.py, adamw.py, sgd.py, optimizer.py, ...):
 *              Optimizer.step and its _init_group, the state it makes
 *   forward    a module call (torch/nn/modules/module.py _call_impl / _wrapped_call_impl), or a
 *              Python function named forward
 *   other      a stack with none of these (data loading, model creation, user code), or
 *              one inside a zero_grad (Optimizer.zero_grad, Module.zero_grad: last step's
 *              gradients freed at the start of the next step: no optimizer step; the flag
 *              PHASE_FLAG_ZERO_GRAD says so)
 *   unknown    no stack
 * PyTorch's own recording frames (torch::unwind::unwind, CapturedTraceback::gather,
 * gather_with_cpp, the caching allocator's malloc and free) are in every stack it records: they
 * say how a stack was taken, not what the program was doing, and never decide a phase (nor a
 * user rule, category_rules.h).
 * checked in that order: backward runs modules' backward hooks and the optimizer may call
 * forward-looking helpers, so the more specific phase wins. File names match by their last
 * components, so site-packages paths, PyTorch's relative ones and a bare "adamw.py" agree. */
#ifndef GMT_PHASES_H
#define GMT_PHASES_H

#include "stack_names.h"

typedef enum phase {
    PHASE_UNKNOWN = 0,
    PHASE_OTHER,
    PHASE_FORWARD,
    PHASE_BACKWARD,
    PHASE_OPTIMIZER,
    PHASE_COUNT
} phase;

/* What one frame says: PHASE_FLAG_* bits. A stack's phase is phase_of_flags of its frames'
 * bits together, so a stack trie can compute it node by node from its parent's. */
enum {
    PHASE_FLAG_FORWARD = 1u,
    PHASE_FLAG_BACKWARD = 2u,
    PHASE_FLAG_OPTIMIZER = 4u,
    PHASE_FLAG_ZERO_GRAD = 8u
};
unsigned phase_frame_flags(const named_frame *f);

/* Whether f is one of PyTorch's recording frames (above): the stack's taking, not its code. */
int phase_frame_is_recording(const named_frame *f);
phase phase_of_flags(unsigned flags);

/* The phase of a stack (NULL or unknown: PHASE_UNKNOWN). */
phase phase_of_stack(const named_stack *stack);

/* "unknown", "other", "forward", "backward", "optimizer". */
const char *phase_name(phase p);

#endif
