/* phases.c — a stack's training phase from its frames (see phases.h). */
#include "phases.h"

#include <string.h>

/* Paths are compared with '\\' taken as '/': a Windows snapshot's D:\\...\\torch\\optim\\adam.py
 * is the same program's frame as a Linux one's (issue 29). */
static int same_char(char a, char b) { return a == b || (a == '\\' && b == '/'); }

static const char *base_name(const char *file) {
    const char *base = file ? file : "";
    for (const char *p = base; *p; p++)
        if (*p == '/' || *p == '\\')
            base = p + 1;
    return base;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    if (n < k)
        return 0;
    for (size_t i = 0; i < k; i++)
        if (!same_char(s[n - k + i], tail[i]))
            return 0;
    return 1;
}

static int path_contains(const char *s, const char *part) {
    size_t k = strlen(part);
    for (; *s; s++) {
        size_t i = 0;
        while (i < k && s[i] && same_char(s[i], part[i]))
            i++;
        if (i == k)
            return 1;
    }
    return 0;
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
    if (path_contains(file, "torch/optim/"))
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
static int is_zero_grad(const named_frame *f) {
    return f->name && (!strcmp(f->name, "zero_grad") || ends_with(f->name, ".zero_grad"));
}

int phase_frame_is_recording(const named_frame *f) {
    static const char *const names[] = {"torch::unwind::", "CapturedTraceback::", "gather_with_cpp",
                                        "CUDACachingAllocator::", "c10::cuda::CUDAAllocator::"};
    static const char *const files[] = {"CUDACachingAllocator.cpp", "combined_traceback.cpp",
                                        "memory_snapshot.cpp", "unwind.cpp"};
    const char *name = f->name ? f->name : "";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strstr(name, names[i]))
            return 1;
    const char *base = base_name(f->file);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!strcmp(base, files[i]))
            return 1;
    return 0;
}

unsigned phase_frame_flags(const named_frame *f) {
    if (phase_frame_is_recording(f))
        return 0u;
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
