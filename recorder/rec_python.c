/* rec_python.c — Python frames in the recorder's stacks (rec_python.h).
 *
 * What every CPython shares: the code table (code object -> index -> names),
 * the resolver, where the eval loop lives, attaching and detaching. On 3.12
 * and 3.13 the frames come from sys.monitoring and the running frames
 * themselves (rec_python_monitor.c); this file's profile hook is used up to
 * 3.11, and on 3.12+ only when that path cannot be had (tool ids taken, an
 * unknown frame layout). The hook has three parts, split by who runs them:
 *  - the profile hook (program threads, GIL held): on each call it pushes
 *    the frame onto the thread's shadow stack, on each return it pops it.
 *    An entry holds a strong reference to its frame (so a frame is never
 *    freed while an entry names it, even when another profiler replaces
 *    ours and returns go unseen), the index of its code object in the code
 *    table, and the hook's own stack address, which tells which C-level
 *    eval call runs the frame (below). First sight of a code object copies
 *    its qualified name and file into the code table, which keeps the code
 *    object alive so its address is never reused for another.
 *  - the splicer (program threads, inside rec_stack_here, no GIL): replaces
 *    each native frame of the eval loop by the Python frames it runs. Lines
 *    are read from the thread's own frames, which cannot move while the
 *    thread is in native code: the innermost at every capture (a ctypes call
 *    raises no profile event), a caller's once per call it makes (cached).
 *  - the resolver (writer thread): code index and line -> names, from the
 *    code table only; it never touches a Python object.
 *
 * Stale shadow stacks. A thread's hook can end without its thread seeing it:
 * PyTorch's tracer sets and then clears the profile function of every
 * thread (PyThreadState_Swap, PyEval_SetProfile) while memrec is detached
 * around it, and a detach leaves other threads' stacks as they were. A
 * stack such a thread kept would then be spliced into every later event,
 * frozen, and keep its frames (and the tensors in their locals) alive. So
 * each stack carries the generation it was taken in: a detach starts a new
 * one (hook_generation), the end of a thread's hook object gives its stack
 * up (generation 0, and its frames go unless its thread is splicing at that
 * moment); the splicer ignores a stack of another generation, and its
 * thread drops it at its next profile event and takes the running frames
 * again.
 *
 * Interleaving. Up to 3.10 each Python frame has its own C call of
 * _PyEval_EvalFrameDefault. From 3.11 one C call runs a run of frames (a
 * Python-to-Python call does not recurse in C). The hook sees the same
 * stack address for all frames entered by one C eval call and a deeper
 * one (by at least the eval function's own C frame) for a frame entered
 * through native code, so a shadow entry starts a new C eval call when its
 * hook ran deeper than its caller's by more than SAME_EVAL_SLACK bytes.
 * The eval function's address ranges come from the ELF symbol table
 * (hot and .cold parts) when the binary has one, else from its dynamic
 * symbol (hot part only). Limits: frames already running at attach time
 * are assumed to share one C eval call on 3.11+; Python frames the native
 * stack cannot place (no eval range found, a stripped binary whose eval
 * call sits in a cold part) are put outermost, still in call order; threads
 * not started through `threading` (before 3.12) have no Python frames, nor
 * (before 3.12) threads whose hook another tool ended; free-threaded builds
 * are refused. */
#include "rec_python.h"
#include "rec_core.h"
#include "rec_stack.h"

#include "gmt_hash.h"

#include <assert.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PYTRACE_CALL 0
#define PYTRACE_RETURN 3
#define LINE_BITS 24 /* token value: code index << LINE_BITS | line */
#define LINE_MAX_RECORDED ((1u << LINE_BITS) - 1)
#define CODE_CHUNK_BITS 12
#define CODE_CHUNKS 1024 /* 4 M distinct code objects at most */
#define SAME_EVAL_SLACK 128
#define POPULATE_MAX 512 /* frames taken from a running chain */
#define EVAL_RANGES_MAX 8

/* ---- the CPython API, found at run time ---------------------------------- */

typedef int (*py_profile_fn)(void *obj, void *frame, int what, void *arg);

static struct {
    int (*is_initialized)(void);
    int (*gil_check)(void);
    const char *(*version)(void);
    void (*set_profile)(py_profile_fn, void *);
    void (*set_profile_all_threads)(py_profile_fn, void *); /* 3.12+, else NULL */
    void *(*current_frame)(void);                           /* borrowed */
    void *(*frame_back)(void *);                            /* new reference */
    void *(*frame_code)(void *);                            /* new reference */
    int (*frame_line)(void *);
    void (*incref)(void *);
    void (*decref)(void *);
    void *(*get_attr)(void *, const char *);
    const char *(*utf8)(void *);
    void (*err_clear)(void);
    void *(*import)(const char *);
    void *(*new_cfunction)(py_method_def *, void *, void *);
    void *(*call_objargs)(void *, ...);
    void *(*capsule_new)(void *, const char *, void (*)(void *));
    void *(*capsule_pointer)(void *, const char *);
    void *(*call)(void *, void *, void *);
    void *(*tuple_new)(ptrdiff_t);
    void *(*dict_new)(void);
    int (*dict_set_item)(void *, const char *, void *);
    void *none;
} py;

#define LOOKUP(field, name) (py.field = (__typeof__(py.field))dlsym(RTLD_DEFAULT, name))

static int load_api(void) {
    LOOKUP(is_initialized, "Py_IsInitialized");
    LOOKUP(gil_check, "PyGILState_Check");
    LOOKUP(version, "Py_GetVersion");
    LOOKUP(set_profile, "PyEval_SetProfile");
    LOOKUP(set_profile_all_threads, "PyEval_SetProfileAllThreads");
    LOOKUP(current_frame, "PyEval_GetFrame");
    LOOKUP(frame_back, "PyFrame_GetBack");
    LOOKUP(frame_code, "PyFrame_GetCode");
    LOOKUP(frame_line, "PyFrame_GetLineNumber");
    LOOKUP(incref, "Py_IncRef");
    LOOKUP(decref, "Py_DecRef");
    LOOKUP(get_attr, "PyObject_GetAttrString");
    LOOKUP(utf8, "PyUnicode_AsUTF8");
    LOOKUP(err_clear, "PyErr_Clear");
    LOOKUP(import, "PyImport_ImportModule");
    LOOKUP(new_cfunction, "PyCFunction_NewEx");
    LOOKUP(call_objargs, "PyObject_CallFunctionObjArgs");
    LOOKUP(capsule_new, "PyCapsule_New");
    LOOKUP(capsule_pointer, "PyCapsule_GetPointer");
    LOOKUP(call, "PyObject_Call");
    LOOKUP(tuple_new, "PyTuple_New");
    LOOKUP(dict_new, "PyDict_New");
    LOOKUP(dict_set_item, "PyDict_SetItemString");
    py.none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
    int all = py.is_initialized && py.gil_check && py.version && py.set_profile &&
              py.current_frame && py.frame_back && py.frame_code && py.frame_line && py.incref &&
              py.decref && py.get_attr && py.utf8 && py.err_clear && py.import &&
              py.new_cfunction && py.call_objargs && py.capsule_new && py.capsule_pointer &&
              py.call && py.tuple_new && py.dict_new && py.dict_set_item && py.none;
    return all ? 0 : -1;
}

/* ---- state --------------------------------------------------------------- */

typedef struct code_info {
    char *function, *file;
} code_info;

typedef struct shadow_entry {
    void *frame;       /* strong reference, taken and dropped under the GIL */
    uintptr_t hook_sp; /* the hook's stack address at the frame's entry; 0: unknown */
    uint32_t code;     /* code table index; 0: unknown */
    uint32_t line;     /* a caller's call line, cached by the splicer; 0: not yet */
    int starts_eval;   /* 1: the first frame its C eval call runs */
} shadow_entry;

typedef struct shadow_stack {
    shadow_entry *entries;
    uint32_t depth, cap;
    void *capsule; /* the capsule of the hook object installed last (borrowed): only its end
                      means the hook is gone */
    /* hook_generation when it was last taken from the running frames; 0: given up (its hook
     * ended on another thread). Any other than hook_generation: stale (a detach came after),
     * never spliced, dropped by its thread at its next profile event. */
    _Atomic uint32_t generation;
    _Atomic uint32_t splicing; /* > 0 while its thread's splicer reads it (no GIL) */
    _Atomic uint32_t refs;     /* its thread's, until it exits, and each capsule's naming it */
} shadow_stack;

static atomic_int attached;
/* The shadow stacks' generation: bumped at each detach of the profile hook; never 0. */
static _Atomic uint32_t hook_generation = 1;
static int python_minor;
static uint64_t token_prefix;
static uintptr_t eval_start[EVAL_RANGES_MAX], eval_end[EVAL_RANGES_MAX];
static unsigned eval_ranges;

/* Code table: index -> names, read by the writer; written under the GIL. */
static _Atomic(code_info *) code_chunks[CODE_CHUNKS];
static _Atomic uint32_t code_count = 1; /* index 0: unknown */
/* Code object -> index (open addressing): written under the GIL, read by
 * the sys.monitoring splicer without it (rec_python_code_find). A key is
 * stored after its value (release); a grown map is published whole and the
 * one it replaces is kept, never freed, since a reader may still probe it
 * (all of them together hold at most twice the last one's slots). */
typedef struct code_map {
    struct code_map *older;
    uint32_t cap, used;
    uint32_t *values;
    _Atomic(void *) keys[];
} code_map;
static _Atomic(code_map *) code_map_now;

static __thread shadow_stack *thread_shadow;
static pthread_key_t shadow_key; /* frees a thread's shadow stack at exit */

/* ---- the code table (GIL held) ------------------------------------------- */

static uint32_t map_slot(const void *key, uint32_t cap) {
    return (uint32_t)(gmt_hash_fib((uint64_t)(uintptr_t)key, 64) >> 32) & (cap - 1);
}

/* GIL held. Returns the live map, grown when it is half full; NULL when out of memory. */
static code_map *map_for_insert(void) {
    code_map *old = atomic_load_explicit(&code_map_now, memory_order_relaxed);
    if (old && (old->used + 1) * 2 <= old->cap)
        return old;
    uint32_t cap = old ? old->cap * 2 : 4096;
    code_map *map = calloc(1, sizeof *map + cap * sizeof map->keys[0]);
    uint32_t *values = map ? calloc(cap, sizeof *values) : NULL;
    if (!values) {
        free(map);
        return NULL;
    }
    *map = (code_map){old, cap, old ? old->used : 0, values};
    for (uint32_t i = 0; old && i < old->cap; i++) {
        void *key = atomic_load_explicit(&old->keys[i], memory_order_relaxed);
        if (!key)
            continue;
        uint32_t j = map_slot(key, cap);
        while (atomic_load_explicit(&map->keys[j], memory_order_relaxed))
            j = (j + 1) & (cap - 1);
        values[j] = old->values[i];
        atomic_store_explicit(&map->keys[j], key, memory_order_relaxed);
    }
    atomic_store_explicit(&code_map_now, map, memory_order_release);
    return map;
}

uint32_t rec_python_code_find(const void *code) {
    code_map *map = atomic_load_explicit(&code_map_now, memory_order_acquire);
    if (!map || !code)
        return 0;
    for (uint32_t i = map_slot(code, map->cap);; i = (i + 1) & (map->cap - 1)) {
        void *key = atomic_load_explicit(&map->keys[i], memory_order_acquire);
        if (key == code)
            return map->values[i];
        if (!key)
            return 0; /* never full: at most half its slots are used */
    }
}

/* A copy of the str attribute `name` of `obj`, or NULL. */
static char *copy_str_attr(void *obj, const char *name) {
    void *value = py.get_attr(obj, name);
    if (!value) {
        py.err_clear();
        return NULL;
    }
    const char *text = py.utf8(value);
    char *copy = text ? strdup(text) : NULL;
    if (!text)
        py.err_clear();
    py.decref(value);
    return copy;
}

/* The index of a code object, entering it on first sight; 0 when the
 * table is full or out of memory. */
uint32_t rec_python_code_index(void *code) {
    uint32_t found = rec_python_code_find(code);
    if (found)
        return found;
    uint32_t index = atomic_load_explicit(&code_count, memory_order_relaxed);
    if (index >= (uint32_t)CODE_CHUNKS << CODE_CHUNK_BITS)
        return 0;
    code_map *map = map_for_insert();
    if (!map)
        return 0;
    code_info *chunk = atomic_load(&code_chunks[index >> CODE_CHUNK_BITS]);
    if (!chunk) {
        chunk = calloc(1u << CODE_CHUNK_BITS, sizeof *chunk);
        if (!chunk)
            return 0;
        atomic_store(&code_chunks[index >> CODE_CHUNK_BITS], chunk);
    }
    code_info *info = &chunk[index & ((1u << CODE_CHUNK_BITS) - 1)];
    info->function = copy_str_attr(code, python_minor >= 11 ? "co_qualname" : "co_name");
    info->file = copy_str_attr(code, "co_filename");
    if (!info->function || !info->file) {
        free(info->function);
        free(info->file);
        info->function = info->file = NULL;
        return 0;
    }
    py.incref(code); /* kept: its address names it for the whole run */
    atomic_store_explicit(&code_count, index + 1, memory_order_release);
    uint32_t i = map_slot(code, map->cap);
    while (atomic_load_explicit(&map->keys[i], memory_order_relaxed))
        i = (i + 1) & (map->cap - 1);
    map->values[i] = index;
    atomic_store_explicit(&map->keys[i], code, memory_order_release);
    map->used++;
    return index;
}

/* ---- the shadow stack (GIL held) ----------------------------------------- */

static void pop_to(shadow_stack *s, uint32_t depth);

/* Drops one reference to `s`, freeing it with the last. `gil`: the caller
 * holds the GIL, so the frames left in it can be given back. */
static void shadow_unref(shadow_stack *s, int gil) {
    uint32_t refs = atomic_fetch_sub(&s->refs, 1);
    assert(refs > 0);
    if (refs != 1)
        return;
    if (gil)
        pop_to(s, 0);
    free(s->entries); /* without the GIL (thread exit) frames left over stay referenced */
    free(s);
}

/* The thread's end (pthread key destructor, no GIL). */
static void free_shadow(void *arg) {
    shadow_stack *s = arg;
    if (thread_shadow == s)
        thread_shadow = NULL; /* a later destructor's CUDA call must not splice it */
    shadow_unref(s, 0);
}

static shadow_stack *my_shadow(void) {
    shadow_stack *s = thread_shadow;
    if (!s && (s = calloc(1, sizeof *s)) != NULL) { /* generation 0: stale until taken */
        atomic_store(&s->refs, 1);
        thread_shadow = s;
        pthread_setspecific(shadow_key, s);
    }
    return s;
}

/* 1 when `s` was taken since the last detach and not given up since. */
static int shadow_fresh(shadow_stack *s) {
    return atomic_load(&s->generation) == atomic_load(&hook_generation);
}

/* Every shadow stack is stale from now on (a detach). */
static void shadow_stacks_stale(void) {
    if (atomic_fetch_add(&hook_generation, 1) + 1 == 0)
        atomic_store(&hook_generation, 1); /* 0 means given up */
}

static void pop_to(shadow_stack *s, uint32_t depth) {
    while (s->depth > depth)
        py.decref(s->entries[--s->depth].frame);
}

/* Pushes `frame` (taking over one reference). Returns -1 (reference
 * dropped) when the stack cannot grow. */
static int push(shadow_stack *s, void *frame, uintptr_t hook_sp, int starts_eval) {
    if (s->depth == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 64;
        shadow_entry *grown = realloc(s->entries, cap * sizeof *grown);
        if (!grown) {
            py.decref(frame);
            return -1;
        }
        s->entries = grown;
        s->cap = cap;
    }
    void *code = py.frame_code(frame);
    shadow_entry *e = &s->entries[s->depth++];
    *e = (shadow_entry){frame, hook_sp, code ? rec_python_code_index(code) : 0, 0, starts_eval};
    if (code)
        py.decref(code);
    return 0;
}

/* Replaces the stack by the running chain from `frame` (borrowed, may be
 * NULL) outward. Their C eval calls are unknown: on 3.11+ they are taken to
 * share the outermost one's. `inner_sp` is a stack address from a profile
 * event of the innermost one (0: none), which tells whether its first
 * callee runs in its C eval call (see on_call). */
static void populate(shadow_stack *s, void *frame, uintptr_t inner_sp) {
    void *chain[POPULATE_MAX];
    unsigned n = 0;
    pop_to(s, 0);
    if (frame) {
        py.incref(frame);
        chain[n++] = frame;
    }
    while (n && n < POPULATE_MAX && (chain[n] = py.frame_back(chain[n - 1])) != NULL)
        n++;
    while (n-- > 0)
        push(s, chain[n], 0, python_minor < 11 || s->depth == 0);
    if (s->depth)
        s->entries[s->depth - 1].hook_sp = inner_sp;
    atomic_store(&s->generation, atomic_load(&hook_generation));
}

static void on_call(void *frame, uintptr_t hook_sp) {
    shadow_stack *s = my_shadow();
    if (!s)
        return;
    if (!shadow_fresh(s)) { /* from before a detach: taken again from the running frames */
        pop_to(s, 0);
        atomic_store(&s->generation, atomic_load(&hook_generation));
    }
    void *back = py.frame_back(frame);
    uint32_t k = s->depth;
    while (k > 0 && s->entries[k - 1].frame != back)
        k--;
    if (k > 0 || !back)
        pop_to(s, k); /* normally k == depth: nothing to pop */
    else
        populate(s, back, 0);
    /* Frames entered by one C eval call see the hook at the same stack
     * address; a C eval call nested through native code is deeper by at
     * least its own frame. A caller taken from a running chain without an
     * address lends it this callee's: the callee joins its C eval call. */
    int starts_eval = 1;
    if (s->depth > 0 && python_minor >= 11) {
        shadow_entry *caller = &s->entries[s->depth - 1];
        if (!caller->hook_sp)
            caller->hook_sp = hook_sp;
        starts_eval = caller->hook_sp > hook_sp + SAME_EVAL_SLACK;
    }
    if (s->depth > 0)
        s->entries[s->depth - 1].line = 0; /* it calls from a new line */
    py.incref(frame);
    push(s, frame, hook_sp, starts_eval);
    if (back)
        py.decref(back);
}

static void on_return(void *frame) {
    shadow_stack *s = thread_shadow;
    if (!s)
        return;
    if (!shadow_fresh(s)) { /* its frames go now; the next call takes the running ones */
        pop_to(s, 0);
        return;
    }
    for (uint32_t k = s->depth; k-- > 0;) {
        if (s->entries[k].frame == frame) {
            pop_to(s, k);
            return;
        }
    }
}

static int profile_hook(void *obj, void *frame, int what, void *arg) {
    (void)obj;
    (void)arg;
    if (what == PYTRACE_CALL)
        on_call(frame, (uintptr_t)__builtin_frame_address(0));
    else if (what == PYTRACE_RETURN)
        on_return(frame);
    return 0;
}

#define SHADOW_CAPSULE "memrec.shadow"

static void *hook_bootstrap(void *self, void *const *args, ptrdiff_t nargs);
static py_method_def hook_bootstrap_def = {"memrec_profile", hook_bootstrap, REC_PY_METH_FASTCALL,
                                           NULL};

/* The profile hook's object, what sys.getprofile() returns while the hook
 * is on: hook_bootstrap as a Python callable, bound to a capsule naming the
 * thread's shadow stack. Callable, because code that saves and restores
 * profilers (cProfile, coverage, IPython, torch.profiler) hands it back to
 * sys.setprofile: Python then calls it as f(frame, event, arg) and it puts
 * the C-level hook back (a capsule alone raised TypeError at every call).
 * The capsule: CPython drops the object when anything else (sys.setprofile,
 * cProfile, a debugger) replaces the hook on that thread, and then no RETURN
 * event will ever pop the shadow stack again — so the capsule's destructor
 * gives the frames back at once. Holding them would keep their locals, CUDA
 * tensors included, alive for ever. Runs with the GIL held, on the owner's
 * thread or on another (PyEval_SetProfileAllThreads; PyTorch's tracer, which
 * sets and clears every thread's profile function through
 * PyThreadState_Swap): the stack is given up (generation 0) first, so no
 * splice reads it from then on, and its frames go unless the owner is
 * splicing right then (the owner drops them at its next profile event; both
 * sides announce themselves before they look at the other's word, so one of
 * them sees the other). The capsule holds a reference to the stack, which
 * may outlive its thread. */
static void shadow_capsule_gone(void *capsule) {
    shadow_stack *s = py.capsule_pointer(capsule, SHADOW_CAPSULE);
    if (!s) {
        py.err_clear();
        return;
    }
    assert(atomic_load(&s->refs) > (s == thread_shadow)); /* the capsule's, and its thread's */
    /* An older hook object (one the program saved and restored, then dropped) ending says
     * nothing: the hook it stood for was put back under a newer one. */
    if (s->capsule == capsule) {
        s->capsule = NULL;
        atomic_store(&s->generation, 0);
        if (atomic_load(&s->splicing) == 0)
            pop_to(s, 0);
    }
    shadow_unref(s, 1);
}

/* A new hook object for shadow stack `s` (NULL: none, for the hook set on
 * all threads at once), or NULL with the error cleared. */
static void *new_hook_object(shadow_stack *s) {
    void *capsule = s ? py.capsule_new(s, SHADOW_CAPSULE, shadow_capsule_gone) : py.none;
    if (capsule && s)
        atomic_fetch_add(&s->refs, 1); /* the capsule's, dropped by its destructor */
    void *hook = capsule ? py.new_cfunction(&hook_bootstrap_def, capsule, NULL) : NULL;
    if (!hook)
        py.err_clear();
    else if (s)
        s->capsule = capsule;
    if (capsule && capsule != py.none)
        py.decref(capsule); /* the callable holds it */
    return hook;
}

/* Installs the C-level hook on the calling thread (GIL held). */
static void install_hook(shadow_stack *s) {
    void *hook = new_hook_object(s);
    py.set_profile(profile_hook, hook); /* takes its own reference */
    if (hook)
        py.decref(hook);
}

/* The hook object called as a Python profile function, f(frame, event,
 * arg): the first profile event of a thread `threading` started (through
 * threading.setprofile), or of a thread whose saved hook object was given
 * back to sys.setprofile. Takes the running frames, then hands the thread
 * to the C-level hook. */
static void *hook_bootstrap(void *self, void *const *args, ptrdiff_t nargs) {
    (void)self;
    shadow_stack *s = my_shadow();
    if (s && nargs >= 2 && args[0]) {
        const char *event = py.utf8(args[1]);
        if (!event)
            py.err_clear();
        int returning = event && strcmp(event, "return") == 0;
        void *back = returning ? py.frame_back(args[0]) : NULL;
        /* Called through Python's profile trampoline from the C eval call
         * that runs args[0]: a few frames deeper than our hook would be,
         * far less deep than a nested C eval call (about 370 bytes on
         * 3.11/x86-64, against about 110 for the trampoline). */
        populate(s, returning ? back : args[0], (uintptr_t)__builtin_frame_address(0));
        if (back)
            py.decref(back);
    }
    install_hook(s);
    py.incref(py.none);
    return py.none;
}

/* ---- capture (program thread, no GIL) ------------------------------------ */

int rec_python_is_eval_ip(uint64_t ip) {
    uintptr_t at = (uintptr_t)ip - 1; /* a return address: the call is before it */
    for (unsigned i = 0; i < eval_ranges; i++)
        if (at >= eval_start[i] && at < eval_end[i])
            return 1;
    return 0;
}

uint32_t rec_python_line(int line) {
    return line <= 0 ? 0 : (uint32_t)line > LINE_MAX_RECORDED ? LINE_MAX_RECORDED : (uint32_t)line;
}

uint64_t rec_python_token(uint32_t code, uint32_t line) {
    assert(line <= LINE_MAX_RECORDED && code < (uint32_t)CODE_CHUNKS << CODE_CHUNK_BITS);
    return token_prefix | (uint64_t)code << LINE_BITS | line;
}

static uint64_t frame_token(shadow_stack *s, uint32_t k) {
    shadow_entry *e = &s->entries[k];
    uint32_t line = e->line;
    if (!line || k + 1 == s->depth) { /* the innermost may have moved on */
        line = rec_python_line(py.frame_line(e->frame));
        if (k + 1 < s->depth)
            e->line = line;
    }
    return rec_python_token(e->code, line);
}

/* The rec_stack_splicer: each eval-loop frame of `native` becomes the
 * Python frames its C call runs; leftovers go outermost. */
static unsigned splice_python(const uint64_t *native, unsigned n, uint64_t *out, unsigned cap) {
    shadow_stack *s = thread_shadow;
    uint32_t left = 0; /* entries not placed yet; next: left - 1 */
    if (s) {
        /* Announced before the generation is read (both sequentially consistent), so a thread
         * that gives the stack up either sees this or is seen (shadow_capsule_gone). */
        atomic_fetch_add(&s->splicing, 1);
        if (rec_stack_mode() != REC_STACKS_NATIVE && shadow_fresh(s))
            left = s->depth;
    }
    unsigned o = 0;
    for (unsigned k = 0; k < n && o < cap; k++) {
        if (!left || !rec_python_is_eval_ip(native[k])) {
            out[o++] = native[k];
            continue;
        }
        while (left && o < cap) {
            int first = s->entries[left - 1].starts_eval;
            out[o++] = frame_token(s, --left);
            if (first)
                break;
        }
    }
    while (left && o < cap)
        out[o++] = frame_token(s, --left);
    if (s)
        atomic_fetch_sub_explicit(&s->splicing, 1, memory_order_release);
    assert(o <= cap);
    return o;
}

/* ---- names (writer thread) ----------------------------------------------- */

static int resolve_python_frame(uint64_t value, rec_symbolic_frame *out) {
    uint32_t index = (uint32_t)(value >> LINE_BITS);
    const code_info *info = NULL;
    if (index && index < atomic_load_explicit(&code_count, memory_order_acquire))
        info = &atomic_load(
            &code_chunks[index >> CODE_CHUNK_BITS])[index & ((1u << CODE_CHUNK_BITS) - 1)];
    out->function = info ? info->function : "<python>";
    out->file = info ? info->file : "";
    out->line = (uint32_t)(value & LINE_MAX_RECORDED);
    out->kind = TRACE_FRAME_PYTHON;
    return 0;
}

/* ---- where the eval loop lives ------------------------------------------- */

static void add_eval_range(uintptr_t start, uintptr_t size) {
    if (size && eval_ranges < EVAL_RANGES_MAX) {
        eval_start[eval_ranges] = start;
        eval_end[eval_ranges++] = start + size;
    }
}

/* Reads the ELF symbol table (else the dynamic one) of the file that holds
 * `eval` for _PyEval_EvalFrameDefault and its split parts (".cold").
 * Returns 0 when the file's symbols agree with the running code. */
static int eval_ranges_from_elf(const char *path, uintptr_t eval, uintptr_t load_base) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    const unsigned char *file = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (file == MAP_FAILED)
        return -1;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)file;
    const char name[] = "_PyEval_EvalFrameDefault";
    int rc = -1;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > size ||
        (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
        goto done;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(file + eh->e_shoff);
    const Elf64_Shdr *symtab = NULL;
    for (unsigned i = 0; i < eh->e_shnum; i++)
        if (sh[i].sh_type == SHT_SYMTAB || (sh[i].sh_type == SHT_DYNSYM && !symtab))
            symtab = &sh[i];
    if (!symtab || symtab->sh_link >= eh->e_shnum || symtab->sh_offset > size ||
        symtab->sh_size > size - symtab->sh_offset)
        goto done;
    const Elf64_Shdr *strtab = &sh[symtab->sh_link];
    if (strtab->sh_offset > size || strtab->sh_size > size - strtab->sh_offset)
        goto done;
    const Elf64_Sym *syms = (const Elf64_Sym *)(file + symtab->sh_offset);
    const char *strs = (const char *)(file + strtab->sh_offset);
    size_t nsyms = symtab->sh_size / sizeof(Elf64_Sym);
    uintptr_t bias = eh->e_type == ET_DYN ? load_base : 0;
    for (int pass = 0; pass < 2; pass++) { /* the function itself first */
        for (size_t i = 0; i < nsyms; i++) {
            if (ELF64_ST_TYPE(syms[i].st_info) != STT_FUNC || syms[i].st_name >= strtab->sh_size)
                continue;
            const char *sym = strs + syms[i].st_name;
            size_t room = strtab->sh_size - syms[i].st_name;
            if (room < sizeof name || strncmp(sym, name, sizeof name - 1) != 0)
                continue;
            int exact = sym[sizeof name - 1] == 0, part = sym[sizeof name - 1] == '.';
            if (pass == 0 && exact) {
                if (syms[i].st_value + bias != eval)
                    goto done; /* not the file that is running */
                add_eval_range(eval, syms[i].st_size);
                rc = 0;
            } else if (pass == 1 && part && rc == 0) {
                add_eval_range(syms[i].st_value + bias, syms[i].st_size);
            }
        }
    }
done:
    munmap((void *)file, size);
    return rc;
}

static void find_eval_ranges(void) {
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const Elf64_Sym *sym = NULL;
    eval_ranges = 0;
    if (!eval || !dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT))
        return;
    if (info.dli_fname && info.dli_fname[0] &&
        eval_ranges_from_elf(info.dli_fname, (uintptr_t)eval, (uintptr_t)info.dli_fbase) == 0)
        return;
    eval_ranges = 0;
    if (eval_ranges_from_elf("/proc/self/exe", (uintptr_t)eval, (uintptr_t)info.dli_fbase) == 0)
        return;
    eval_ranges = 0;
    if (sym)
        add_eval_range((uintptr_t)eval, sym->st_size);
}

/* ---- attaching ------------------------------------------------------------ */

/* threading.setprofile(callable): what every thread `threading` starts from
 * now on calls first. Returns 0, -1 (the error cleared). */
static int threading_setprofile(void *callable) {
    void *threading = py.import("threading");
    void *setprofile = threading ? py.get_attr(threading, "setprofile") : NULL;
    void *result = setprofile && callable ? py.call_objargs(setprofile, callable, NULL) : NULL;
    if (!result)
        py.err_clear();
    void *refs[] = {result, setprofile, threading};
    for (unsigned i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (refs[i])
            py.decref(refs[i]);
    return result ? 0 : -1;
}

/* Threads started later take the hook on their first profile event. */
static int hook_future_threads(void) {
    void *bootstrap = new_hook_object(NULL);
    if (!bootstrap)
        return -1;
    int rc = threading_setprofile(bootstrap);
    py.decref(bootstrap); /* threading keeps its own reference */
    return rc;
}

/* os.register_at_fork(after_in_child=...)'s callable: a forked child that
 * does not record (a DataLoader worker) drops the profile hook, which would
 * only slow it down. The sys.monitoring tool stays: taking it off would call
 * restart_events, handing every other tool of the child (coverage) the
 * events it had disabled again, and after DISABLE it costs one callback per
 * code object the child runs first. */
static void *detach_in_child(void *self, void *const *args, ptrdiff_t nargs) {
    (void)self, (void)args, (void)nargs;
    /* a child that records on its own keeps its Python frames */
    if (!rec_enabled() && rec_python_monitor_tool() < 0)
        memrec_python_detach();
    py.incref(py.none);
    return py.none;
}

/* Once per process: detach_in_child after every os.fork. */
static void detach_at_fork(void) {
    static int registered;
    if (registered)
        return;
    static py_method_def def = {"memrec_detach_in_child", detach_in_child, REC_PY_METH_FASTCALL,
                                NULL};
    void *os = py.import("os");
    void *reg = os ? py.get_attr(os, "register_at_fork") : NULL;
    void *fn = reg ? py.new_cfunction(&def, NULL, NULL) : NULL;
    void *args = fn ? py.tuple_new(0) : NULL;
    void *kwargs = args ? py.dict_new() : NULL;
    void *result = NULL;
    if (kwargs && py.dict_set_item(kwargs, "after_in_child", fn) == 0)
        result = py.call(reg, args, kwargs);
    if (!result)
        py.err_clear();
    registered = result != NULL;
    void *refs[] = {result, kwargs, args, fn, reg, os};
    for (unsigned i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (refs[i])
            py.decref(refs[i]);
}

static int attach_pending(void *arg) {
    (void)arg;
    memrec_python_attach(); /* clears any error it meets */
    return 0;
}

void rec_python_attach_soon(void) {
    int (*initialized)(void), (*add_pending)(int (*)(void *), void *);
    void *a = dlsym(RTLD_DEFAULT, "Py_IsInitialized"),
         *b = dlsym(RTLD_DEFAULT, "Py_AddPendingCall");
    memcpy(&initialized, &a, sizeof a);
    memcpy(&add_pending, &b, sizeof b);
    if (!initialized || !add_pending || !initialized() || rec_stack_mode() == REC_STACKS_NATIVE ||
        atomic_load(&attached))
        return;
    add_pending(attach_pending, NULL); /* needs neither the GIL nor a thread state */
}

/* The profile hook: on this thread, on the threads `threading` starts from
 * now on and (3.12+) on the threads running now; then its splicer. */
static void attach_profile_hook(void) {
    static int warned_threads;
    if (hook_future_threads() != 0)
        rec_warn_once(&warned_threads, "threading.setprofile failed: threads started from now "
                                       "on are recorded without Python frames");
    if (py.set_profile_all_threads) { /* 3.12+: threads running now take it too */
        void *hook = new_hook_object(NULL);
        py.set_profile_all_threads(profile_hook, hook);
        if (hook)
            py.decref(hook);
    }
    /* Then this thread's own, after: setting all threads replaces its hook
     * object, whose capsule would give its frames back. */
    shadow_stack *s = my_shadow();
    if (s)
        populate(s, py.current_frame(), 0); /* ctypes' frames are too deep to compare */
    install_hook(s);
    rec_stack_set_splicer(splice_python);
}

void rec_python_monitor_lost(void) {
    if (atomic_load(&attached))
        attach_profile_hook();
}

int memrec_python_attach(void) {
    if (load_api() != 0 || !py.is_initialized() || py.gil_check() != 1)
        return -1;
    if (atomic_load(&attached)) /* the GIL orders attach calls */
        return 0;
    int major = 0, minor = 0;
    const char *version = py.version();
    if (sscanf(version, "%d.%d", &major, &minor) != 2 || major != 3 || minor < 9 ||
        strstr(version, "free-threading"))
        return -1;
    if (rec_stack_mode() == REC_STACKS_NATIVE)
        return 0; /* nothing to hook: stacks stay native */
    static int have_key;
    python_minor = minor;
    token_prefix = rec_stack_register_symbolic(resolve_python_frame);
    if (!token_prefix || (!have_key && pthread_key_create(&shadow_key, free_shadow) != 0))
        return -1;
    have_key = 1;
    find_eval_ranges();
    if (minor >= 12 && rec_python_monitor_attach(minor) == 0) {
        atomic_store(&attached, 1); /* the monitor installed its splicer */
        detach_at_fork();
        return 0;
    }
    attach_profile_hook();
    atomic_store(&attached, 1);
    detach_at_fork();
    return 0;
}

int memrec_python_detach(void) {
    if (!atomic_load(&attached) || !py.gil_check || py.gil_check() != 1)
        return -1;
    rec_stack_set_splicer(NULL);
    if (rec_python_monitor_tool() >= 0) {
        rec_python_monitor_detach();
        atomic_store(&attached, 0);
        return 0;
    }
    py.set_profile(NULL, NULL); /* the capsule's destructor gives the frames back */
    shadow_stack *s = thread_shadow;
    if (s)
        pop_to(s, 0);
    shadow_stacks_stale(); /* other threads' too: whatever ends their hooks from now on */
    threading_setprofile(py.none);
    atomic_store(&attached, 0);
    return 0;
}
