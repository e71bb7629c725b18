/* phases.c — a stack's training phase from its frames (see phases.h). */
#include "phases.h"

#include <string.h>

static const char *base_name(const char *file) {
    const char *slash = file ? strrchr(file, '/') : NULL;
    return slash ? slash + 1 : file ? file : "";
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

static int is_backward(const named_frame *f) {
    const char *name = f->name ? f->name : "";
    if (strstr(name, "torch::autograd::Engine::") || strstr(name, "autograd::engine"))
        return 1;
    const char *file = f->file ? f->file : "";
    return (!strcmp(name, "backward") || !strcmp(name, "run_backward") ||
            !strcmp(name, "_engine_run_backward")) &&
           (ends_with(file, "autograd/__init__.py") || ends_with(file, "torch/_tensor.py") ||
            ends_with(file, "autograd/graph.py"));
}

static int is_optimizer(const named_frame *f) {
    static const char *const files[] = {"adam.py",    "adamw.py",    "sgd.py",   "adagrad.py",
                                        "rmsprop.py", "adamax.py",   "nadam.py", "radam.py",
                                        "lbfgs.py",   "optimizer.py"};
    const char *file = f->file ? f->file : "";
    if (strstr(file, "torch/optim/"))
        return 1;
    const char *base = base_name(file);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!strcmp(base, files[i]))
            return 1;
    return 0;
}

static int is_forward(const named_frame *f) {
    const char *name = f->name ? f->name : "";
    if (!strcmp(name, "forward"))
        return 1;
    return (!strcmp(name, "_call_impl") || !strcmp(name, "_wrapped_call_impl")) &&
           ends_with(f->file ? f->file : "", "module.py");
}

/* zero_grad (torch/optim/optimizer.py) frees last step's gradients at the start of the next
 * step, before its input is loaded: it is no optimizer step, and counting it as one would put
 * the step's input after an optimizer phase. */
static int is_zero_grad(const named_frame *f) { return f->name && !strcmp(f->name, "zero_grad"); }

unsigned phase_frame_flags(const named_frame *f) {
    if (is_backward(f))
        return PHASE_FLAG_BACKWARD;
    return (is_zero_grad(f)   ? PHASE_FLAG_ZERO_GRAD
            : is_optimizer(f) ? PHASE_FLAG_OPTIMIZER
                              : 0u) |
           (is_forward(f) ? PHASE_FLAG_FORWARD : 0u);
}

phase phase_of_flags(unsigned flags) {
    if (flags & PHASE_FLAG_BACKWARD)
        return PHASE_BACKWARD;
    if (flags & PHASE_FLAG_ZERO_GRAD)
        return PHASE_OTHER;
    return flags & PHASE_FLAG_OPTIMIZER ? PHASE_OPTIMIZER
           : flags & PHASE_FLAG_FORWARD ? PHASE_FORWARD
                                        : PHASE_OTHER;
}

phase phase_of_stack(const named_stack *stack) {
    if (!stack || !stack->known || !stack->frame_count)
        return PHASE_UNKNOWN;
    unsigned flags = 0;
    for (size_t i = 0; i < stack->frame_count; i++)
        flags |= phase_frame_flags(&stack->frames[i]);
    return phase_of_flags(flags);
}

const char *phase_name(phase p) {
    static const char *const names[PHASE_COUNT] = {"unknown", "other", "forward", "backward",
                                                   "optimizer"};
    return p < PHASE_COUNT ? names[p] : "unknown";
}
