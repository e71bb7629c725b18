/* rec_python_monitor.c — Python frames on CPython 3.12 and 3.13 through
 * sys.monitoring (PEP 669) instead of a profile hook (rec_python.h).
 *
 * What a stack needs of a Python frame is the index of its code object in
 * the code table (names, file), its line, and which C call of the eval loop
 * runs it. From 3.12 all three can be read, when a stack is captured, from
 * the calling thread's own chain of running frames (the interpreter's
 * _PyInterpreterFrame list), without the GIL: the thread is in native code
 * below those frames, so they cannot change under it (the same reason the
 * profile hook's splicer may read lines from its frames). The chain marks
 * each C call of the eval loop with an entry frame of its own (owner
 * FRAME_OWNED_BY_CSTACK), so the interleaving with native frames is exact —
 * for every thread, however and whenever it started, and for the frames
 * that were running at attach time. No shadow stack is kept: nothing has to
 * stay balanced through generators, coroutines, exceptions or threads, and
 * no frame is ever referenced by us.
 *
 * Only the code table needs the GIL (it copies names out of a code object):
 * a PY_START callback, a C function (METH_FASTCALL, called by vectorcall),
 * enters a code object the first time it runs and returns
 * sys.monitoring.DISABLE, which takes the event off that code for our tool.
 * From then on a call of that code costs nothing; the events are global, so
 * no thread needs a hook of its own. Frames running at attach time are
 * entered by walking every thread's chain once. A code object the table
 * could not enter (full, out of memory) shows as "<python>".
 *
 * Cost (bench/README.md, issue 26): a call of a function seen before costs
 * nothing measurable (+6 and -2 ns on 3.12 and 3.13, against +145 and +122
 * with the profile hook). A shadow stack kept from events could not go below
 * ~30 ns per call (PY_START and PY_RETURN into empty C callbacks), ~75 ns
 * taking the frame object (PyEval_GetFrame) each time. A recorded stack walks
 * the chain; a per-thread cache maps an instruction's address to its code
 * index and line.
 *
 * Tool id: 3, else 4, the ids sys.monitoring leaves unnamed. Not
 * PROFILER_ID (2): cProfile takes it from 3.12 and raised "Another
 * profiling tool is already active" under memrec while we held it. Both
 * taken: one warning, and the profile hook instead.
 *
 * Layout. The thread's current frame is read from its PyThreadState (the
 * public header cpython/pystate.h: 3.12's cframe->current_frame, 3.13's
 * current_frame), a frame's code, previous frame, instruction pointer and
 * owner from _PyInterpreterFrame (the internal pycore_frame.h: the same
 * offsets in 3.12 and 3.13), its line through the public
 * PyUnstable_InterpreterFrame_GetLine. At attach the chain read this way must
 * agree frame by frame with the one the public API gives (PyEval_GetFrame,
 * PyFrame_GetBack, PyFrame_GetCode, PyFrame_GetLineNumber,
 * PyUnstable_InterpreterFrame_GetLasti for the instruction pointer); where it
 * does not, the profile hook is used, as it
 * is on versions whose layout is not written here (3.14+).
 *
 * Detach sets the tool's events and callback back to none, restarts the
 * events we disabled (DISABLE stays with the tool id: whoever took the id
 * next missed PY_START of every code object we had seen, on 3.12.1 and
 * 3.13.0; restart_events also re-enables other tools' disabled events, which
 * a tool must take, as any tool may call it) and frees the id. */
#include "rec_core.h"
#include "rec_python.h"
#include "rec_stack.h"

#include <assert.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TSTATE_CFRAME_312 56 /* PyThreadState.cframe; current_frame is _PyCFrame's first field */
#define TSTATE_FRAME_313 72  /* PyThreadState.current_frame */
#define FRAME_CODE 0         /* _PyInterpreterFrame.f_code (3.12), f_executable (3.13) */
#define FRAME_PREVIOUS 8
#define FRAME_INSTR 56 /* _PyInterpreterFrame.prev_instr (3.12), instr_ptr (3.13) */
#define FRAME_OWNER 70 /* char */
#define FRAME_OWNED_BY_THREAD 0
#define FRAME_OWNED_BY_GENERATOR 1
#define FRAME_OWNED_BY_CSTACK 3
#define FRAMEOBJ_FRAME 24    /* PyFrameObject.f_frame */
#define CHAIN_MAX 8192       /* frames looked at per walk, at most */
#define LINE_CACHE_SLOTS 256 /* per thread: instruction -> code index, line */
#define TOOL_NAME "memrec"

static const int tool_choices[] = {3, 4};

static struct {
    int (*is_initialized)(void);
    int (*is_finalizing)(void);
    void *(*gilstate_this)(void);
    void *(*thread_get)(void);
    int (*frame_lasti)(void *);
    int (*frame_line)(void *);
    void *(*current_frame)(void); /* borrowed */
    void *(*frame_back)(void *);  /* new reference */
    void *(*frame_code)(void *);  /* new reference */
    int (*frame_object_line)(void *);
    void *(*interp_get)(void);
    void *(*thread_head)(void *);
    void *(*thread_next)(void *);
    void (*incref)(void *);
    void (*decref)(void *);
    void *(*import)(const char *);
    void *(*get_attr)(void *, const char *);
    void *(*call_objargs)(void *, ...);
    void *(*long_from)(long);
    long (*long_as)(void *);
    void *(*str_from)(const char *);
    const char *(*utf8)(void *);
    void *(*new_cfunction)(py_method_def *, void *, void *);
    void (*err_clear)(void);
    void *none;
} api;

static int tool = -1;       /* held tool id; -1: off */
static int layout_minor;    /* 12 or 13 */
static void *monitoring;    /* sys.monitoring, kept */
static void *disable;       /* sys.monitoring.DISABLE, kept */
static long py_start_event; /* sys.monitoring.events.PY_START */

/* An instruction's address names its code object and line for good when
 * that code object is in the code table (which keeps it alive): the
 * bytecode lies inside the code object. */
typedef struct line_slot {
    const void *instr; /* NULL: empty */
    uint32_t code, line;
} line_slot;
static __thread line_slot line_cache[LINE_CACHE_SLOTS];
_Static_assert(LINE_CACHE_SLOTS == 256, "frame_token's hash keeps 8 bits");

#define LOOKUP(field, name) (api.field = (__typeof__(api.field))dlsym(RTLD_DEFAULT, name))

static int load_api(int minor) {
    LOOKUP(is_initialized, "Py_IsInitialized");
    LOOKUP(is_finalizing, minor == 12 ? "_Py_IsFinalizing" : "Py_IsFinalizing");
    LOOKUP(gilstate_this, "PyGILState_GetThisThreadState");
    LOOKUP(thread_get, "PyThreadState_Get");
    LOOKUP(frame_lasti, "PyUnstable_InterpreterFrame_GetLasti");
    LOOKUP(frame_line, "PyUnstable_InterpreterFrame_GetLine");
    LOOKUP(current_frame, "PyEval_GetFrame");
    LOOKUP(frame_back, "PyFrame_GetBack");
    LOOKUP(frame_code, "PyFrame_GetCode");
    LOOKUP(frame_object_line, "PyFrame_GetLineNumber");
    LOOKUP(interp_get, "PyInterpreterState_Get");
    LOOKUP(thread_head, "PyInterpreterState_ThreadHead");
    LOOKUP(thread_next, "PyThreadState_Next");
    LOOKUP(incref, "Py_IncRef");
    LOOKUP(decref, "Py_DecRef");
    LOOKUP(import, "PyImport_ImportModule");
    LOOKUP(get_attr, "PyObject_GetAttrString");
    LOOKUP(call_objargs, "PyObject_CallFunctionObjArgs");
    LOOKUP(long_from, "PyLong_FromLong");
    LOOKUP(long_as, "PyLong_AsLong");
    LOOKUP(str_from, "PyUnicode_FromString");
    LOOKUP(utf8, "PyUnicode_AsUTF8");
    LOOKUP(new_cfunction, "PyCFunction_NewEx");
    LOOKUP(err_clear, "PyErr_Clear");
    api.none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
    int all = api.is_initialized && api.is_finalizing && api.gilstate_this && api.thread_get &&
              api.frame_lasti && api.frame_line && api.current_frame && api.frame_back &&
              api.frame_code && api.frame_object_line && api.interp_get && api.thread_head &&
              api.thread_next && api.incref && api.decref && api.import && api.get_attr &&
              api.call_objargs && api.long_from && api.long_as && api.str_from && api.utf8 &&
              api.new_cfunction && api.err_clear && api.none;
    return all ? 0 : -1;
}

/* ---- the running frames, read without the GIL ---------------------------- */

static void *load_ptr(const void *base, size_t offset) {
    void *p;
    memcpy(&p, (const char *)base + offset, sizeof p);
    return p;
}

static int owner_of(const void *frame) { return ((const signed char *)frame)[FRAME_OWNER]; }

/* The innermost _PyInterpreterFrame of thread state `ts`, NULL when none
 * (it may be an entry frame). */
static void *frame_of_thread(const void *ts, int minor) {
    if (minor == 12) {
        void *cframe = load_ptr(ts, TSTATE_CFRAME_312);
        return cframe ? load_ptr(cframe, 0) : NULL;
    }
    return load_ptr(ts, TSTATE_FRAME_313);
}

static uint64_t frame_token(void *frame, line_slot *cache) {
    const void *instr = load_ptr(frame, FRAME_INSTR);
    line_slot *slot = &cache[((uintptr_t)instr * 0x9E3779B97F4A7C15ull) >> 56];
    if (slot->instr == instr && instr)
        return rec_python_token(slot->code, slot->line);
    uint32_t index = rec_python_code_find(load_ptr(frame, FRAME_CODE));
    uint32_t line = rec_python_line(api.frame_line(frame));
    if (index) /* one not in the table may go, and its memory hold another */
        *slot = (line_slot){instr, index, line};
    return rec_python_token(index, line);
}

/* Writes the Python frames one C call of the eval loop runs, innermost
 * first, from `frame` to that call's entry frame; returns the frame after
 * the entry frame (NULL: the chain's end, or `out` full). */
static void *emit_run(void *frame, uint64_t *out, unsigned *o, unsigned cap, unsigned *steps,
                      line_slot *cache) {
    while (frame && *steps < CHAIN_MAX && *o < cap) {
        ++*steps;
        void *back = load_ptr(frame, FRAME_PREVIOUS);
        if (owner_of(frame) == FRAME_OWNED_BY_CSTACK)
            return back;
        out[(*o)++] = frame_token(frame, cache);
        frame = back;
    }
    return NULL;
}

/* The rec_stack_splicer: each eval-loop frame of `native` becomes the
 * Python frames its C call runs (kept as it is when it runs none, as while
 * it returns); Python frames the native stack cannot place go outermost. */
static unsigned splice_monitor(const uint64_t *native, unsigned n, uint64_t *out, unsigned cap) {
    void *frame = NULL;
    if (rec_stack_mode() != REC_STACKS_NATIVE && api.is_initialized() && !api.is_finalizing()) {
        void *ts = api.gilstate_this(); /* this thread's, whether it holds the GIL or not */
        frame = ts ? frame_of_thread(ts, layout_minor) : NULL;
    }
    unsigned o = 0, steps = 0;
    line_slot *cache = line_cache; /* one look-up of this thread's TLS */
    for (unsigned k = 0; k < n && o < cap; k++) {
        unsigned before = o;
        if (frame && rec_python_is_eval_ip(native[k]))
            frame = emit_run(frame, out, &o, cap, &steps, cache);
        if (o == before && o < cap)
            out[o++] = native[k];
    }
    while (frame && o < cap)
        frame = emit_run(frame, out, &o, cap, &steps, cache);
    assert(o <= cap);
    return o;
}

/* ---- attaching (GIL held) ------------------------------------------------- */

/* 1 when the calling thread's chain read through the offsets above is, frame
 * by frame, the one the public API gives; 0 when it is not; -1 when there is
 * nothing to compare (no Python frame runs, another thread state). */
static int layout_agrees(int minor) {
    void *ts = api.thread_get();
    void *obj = api.current_frame();
    if (!ts || api.gilstate_this() != ts || !obj)
        return -1;
    api.incref(obj);
    void *frame = frame_of_thread(ts, minor);
    int ok = 1;
    unsigned n = 0;
    intptr_t bytecode_at = -1; /* where a code object's bytecode starts in it */
    while (obj && ok && ++n < CHAIN_MAX) {
        while (frame && owner_of(frame) == FRAME_OWNED_BY_CSTACK)
            frame = load_ptr(frame, FRAME_PREVIOUS);
        void *code = api.frame_code(obj);
        ok = frame && code && load_ptr(obj, FRAMEOBJ_FRAME) == frame &&
             load_ptr(frame, FRAME_CODE) == code &&
             (owner_of(frame) == FRAME_OWNED_BY_THREAD ||
              owner_of(frame) == FRAME_OWNED_BY_GENERATOR) &&
             api.frame_line(frame) == api.frame_object_line(obj);
        if (ok) { /* the instruction pointer: its offset from the code object is lasti's */
            intptr_t at = (intptr_t)((uintptr_t)load_ptr(frame, FRAME_INSTR) -
                                     (uintptr_t)api.frame_lasti(frame) - (uintptr_t)code);
            ok = at > 0 && at < 1024 && (bytecode_at < 0 || at == bytecode_at);
            bytecode_at = at;
        }
        if (code)
            api.decref(code);
        void *back = api.frame_back(obj);
        api.decref(obj);
        obj = back;
        if (frame)
            frame = load_ptr(frame, FRAME_PREVIOUS);
    }
    if (obj)
        api.decref(obj);
    while (ok && frame && owner_of(frame) == FRAME_OWNED_BY_CSTACK)
        frame = load_ptr(frame, FRAME_PREVIOUS);
    return ok && !frame && n < CHAIN_MAX;
}

/* Counts the running frames of every thread (at most `max`) and, given
 * `codes`, stores a new reference to each one's code object there. Calls
 * nothing that could run Python code. */
static unsigned running_codes(int minor, void **codes, unsigned max) {
    void *interp = api.interp_get();
    unsigned count = 0;
    for (void *ts = interp ? api.thread_head(interp) : NULL; ts; ts = api.thread_next(ts)) {
        unsigned n = 0;
        for (void *frame = frame_of_thread(ts, minor); frame && n < CHAIN_MAX && count < max;
             frame = load_ptr(frame, FRAME_PREVIOUS), n++) {
            if (owner_of(frame) == FRAME_OWNED_BY_CSTACK)
                continue;
            if (codes) {
                codes[count] = load_ptr(frame, FRAME_CODE);
                api.incref(codes[count]);
            }
            count++;
        }
    }
    return count;
}

/* Enters the code objects of every thread's running frames: their PY_START
 * went before we were there. The other threads wait for the GIL or run
 * native code, so their chains hold still while they are walked; the codes
 * are taken (referenced) first and entered after, since entering one calls
 * into Python. */
static void enter_running_frames(int minor) {
    unsigned n = running_codes(minor, NULL, 1u << 20);
    void **codes = n ? calloc(n, sizeof *codes) : NULL;
    if (!codes)
        return;
    n = running_codes(minor, codes, n);
    for (unsigned i = 0; i < n; i++) {
        rec_python_code_index(codes[i]);
        api.decref(codes[i]);
    }
    free(codes);
}

/* sys.monitoring.PY_START's callback (code, instruction_offset). */
static void *on_py_start(void *self, void *const *args, ptrdiff_t nargs) {
    (void)self;
    if (nargs >= 1 && args[0])
        rec_python_code_index(args[0]); /* clears any error it meets */
    api.incref(disable);
    return disable; /* this code object's PY_START: never again for us */
}

static py_method_def on_py_start_def = {"memrec_py_start", on_py_start, REC_PY_METH_FASTCALL, NULL};

/* sys.monitoring.NAME(args[0], ..): `nargs` arguments (at most 3), each a
 * new reference that this call gives back; a NULL one (it could not be made)
 * fails the call. Returns 0, or -1 with the error cleared. */
static int mon_call(const char *name, unsigned nargs, void *a, void *b, void *c) {
    void *args[3] = {a, b, c}, *result = NULL;
    assert(nargs <= 3);
    int complete = 1;
    for (unsigned i = 0; i < nargs; i++)
        complete &= args[i] != NULL;
    void *fn = complete ? api.get_attr(monitoring, name) : NULL;
    if (fn)
        result = nargs == 0   ? api.call_objargs(fn, NULL)
                 : nargs == 1 ? api.call_objargs(fn, a, NULL)
                 : nargs == 2 ? api.call_objargs(fn, a, b, NULL)
                              : api.call_objargs(fn, a, b, c, NULL);
    if (!result)
        api.err_clear();
    void *refs[] = {result, fn, a, b, c};
    for (unsigned i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (refs[i])
            api.decref(refs[i]);
    return result ? 0 : -1;
}

static void *none_ref(void) {
    api.incref(api.none);
    return api.none;
}

/* A held tool's name, for the warning ("?" when unreadable). */
static void tool_holder(int id, char *out, size_t size) {
    void *fn = api.get_attr(monitoring, "get_tool");
    void *arg = fn ? api.long_from(id) : NULL;
    void *name = arg ? api.call_objargs(fn, arg, NULL) : NULL;
    const char *text = name && name != api.none ? api.utf8(name) : NULL;
    snprintf(out, size, "%s", text ? text : "?");
    api.err_clear();
    void *refs[] = {name, arg, fn};
    for (unsigned i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (refs[i])
            api.decref(refs[i]);
}

static int take_tool(void) {
    for (unsigned i = 0; i < sizeof tool_choices / sizeof tool_choices[0]; i++)
        if (mon_call("use_tool_id", 2, api.long_from(tool_choices[i]), api.str_from(TOOL_NAME),
                     NULL) == 0)
            return tool_choices[i];
    return -1;
}

/* Gives the tool id back with nothing left behind under it. */
static void release_tool(void) {
    mon_call("set_events", 2, api.long_from(tool), api.long_from(0), NULL);
    mon_call("register_callback", 3, api.long_from(tool), api.long_from(py_start_event),
             none_ref());
    mon_call("restart_events", 0, NULL, NULL, NULL);
    mon_call("free_tool_id", 1, api.long_from(tool), NULL, NULL);
    tool = -1;
}

/* sys.monitoring, DISABLE and PY_START's value, kept. Returns 0, -1. */
static int load_monitoring(void) {
    if (monitoring)
        return 0;
    void *sys = api.import("sys");
    void *mon = sys ? api.get_attr(sys, "monitoring") : NULL;
    void *off = mon ? api.get_attr(mon, "DISABLE") : NULL;
    void *events = off ? api.get_attr(mon, "events") : NULL;
    void *start = events ? api.get_attr(events, "PY_START") : NULL;
    long value = start ? api.long_as(start) : -1;
    void *refs[] = {start, events, sys};
    for (unsigned i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (refs[i])
            api.decref(refs[i]);
    if (value <= 0) {
        api.err_clear();
        if (off)
            api.decref(off);
        if (mon)
            api.decref(mon);
        return -1;
    }
    monitoring = mon;
    disable = off;
    py_start_event = value;
    return 0;
}

int rec_python_monitor_tool(void) { return tool; }

int rec_python_monitor_attach(int minor) {
    static int warned_layout, warned_tools, warned_failed;
    if (tool >= 0)
        return 0;
    if ((minor != 12 && minor != 13) || load_api(minor) != 0)
        return -1;
    int agrees = layout_agrees(minor);
    api.err_clear();
    if (agrees < 0)
        return -1; /* cannot tell: the profile hook is always right */
    if (!agrees) {
        rec_warn_once(&warned_layout,
                      "this CPython 3.%d does not lay out its frames as memrec expects: Python "
                      "frames come from a profile hook instead (more time per Python call)",
                      minor);
        return -1;
    }
    if (load_monitoring() != 0) {
        rec_warn_once(&warned_failed, "sys.monitoring could not be used: Python frames come "
                                      "from a profile hook instead (more time per Python call)");
        return -1;
    }
    tool = take_tool();
    if (tool < 0) {
        char first[64], second[64];
        tool_holder(tool_choices[0], first, sizeof first);
        tool_holder(tool_choices[1], second, sizeof second);
        rec_warn_once(&warned_tools,
                      "sys.monitoring tool ids %d and %d are taken (by \"%s\" and \"%s\"): "
                      "Python frames come from a profile hook instead (more time per Python call)",
                      tool_choices[0], tool_choices[1], first, second);
        return -1;
    }
    void *callback = api.new_cfunction(&on_py_start_def, NULL, NULL);
    if (!callback ||
        mon_call("register_callback", 3, api.long_from(tool), api.long_from(py_start_event),
                 callback) != 0 ||
        mon_call("set_events", 2, api.long_from(tool), api.long_from(py_start_event), NULL) != 0) {
        api.err_clear();
        release_tool();
        rec_warn_once(&warned_failed, "sys.monitoring could not be used: Python frames come "
                                      "from a profile hook instead (more time per Python call)");
        return -1;
    }
    layout_minor = minor;
    enter_running_frames(minor);
    rec_stack_set_splicer(splice_monitor);
    return 0;
}

void rec_python_monitor_detach(void) {
    if (tool < 0)
        return;
    rec_stack_set_splicer(NULL);
    release_tool();
}
