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
 * Incomplete frames. The chain also holds frames that have not run their
 * first RESUME yet, which CPython itself skips (_PyFrame_IsIncomplete: not
 * owned by a generator, and its instruction before the code's
 * _co_firsttraceable): on 3.13 the shim frame (code _Py_InitCleanup) that a
 * class instantiation specialised as CALL_ALLOC_AND_ENTER_INIT pushes under
 * every __init__, and on both a frame caught while it sets up. Every walk
 * here skips them as PyFrame_GetBack and tracebacks do.
 *
 * Only the code table needs the GIL (it copies names out of a code object):
 * a PY_START and PY_RESUME callback, a C function (METH_FASTCALL, called by
 * vectorcall), enters a code object the first time it runs and returns
 * sys.monitoring.DISABLE, which takes the event off that location for our
 * tool. PY_RESUME is for generators and coroutines made before attach (or
 * while detached): resuming one fires PY_RESUME, never PY_START, and each of
 * its resume points fires once. From then on a call of that code costs
 * nothing; the events are global, so no thread needs a hook of its own.
 * Frames running at attach time are entered by walking every thread's chain
 * once. A code object the table could not enter (full, out of memory), or a
 * generator resumed before attach and only resumed by throw() since, shows
 * as "<python>".
 *
 * Cost (bench/README.md, issue 26): a call of a function seen before costs
 * nothing measurable (+6 and -2 ns on 3.12 and 3.13, against +145 and +122
 * with the profile hook). A shadow stack kept from events could not go below
 * ~30 ns per call (PY_START and PY_RETURN into empty C callbacks), ~75 ns
 * taking the frame object (PyEval_GetFrame) each time. A recorded stack walks
 * the chain; a per-thread cache, 512 sets of 4 ways (least recently used
 * out), maps an instruction's address to its code index and line, so the
 * frames of one stack no longer evict each other and about 2 000 call sites
 * stay cached: a miss scans the code's line table (PyCode_Addr2Line).
 *
 * Tool id: 3, else 4, the ids sys.monitoring leaves unnamed. Not
 * PROFILER_ID (2): cProfile takes it from 3.12 and raised "Another
 * profiling tool is already active" under memrec while we held it. Both
 * taken: one warning, and the profile hook instead. While memrec holds its
 * id, a program's own sys.monitoring.use_tool_id of it raises ValueError; a
 * program may free it (free_tool_id) and take it, and memrec never frees,
 * nor sets events on, an id whose get_tool is not "memrec": its callback,
 * called once more under an id that is no longer memrec's, takes itself off
 * (returning None, not DISABLE, which would be the new owner's), says so
 * once and hands Python frames to the profile hook; where the new owner's
 * events replaced ours first, nothing calls us again (code first run since
 * shows as "<python>"), and detach says so and takes only our callbacks off.
 *
 * Layout. The thread's current frame is read from its PyThreadState (the
 * public header cpython/pystate.h: 3.12's cframe->current_frame, 3.13's
 * current_frame), a frame's code, previous frame, instruction pointer and
 * owner from _PyInterpreterFrame (the internal pycore_frame.h: the same
 * offsets in 3.12 and 3.13), a code object's _co_firsttraceable and where
 * its bytecode starts (co_code_adaptive) from PyCodeObject (cpython/code.h),
 * a frame's line through the public PyUnstable_InterpreterFrame_GetLine. At
 * attach the chain read this way must agree frame by frame with the one the
 * public API gives (PyEval_GetFrame, PyFrame_GetBack, PyFrame_GetCode,
 * PyFrame_GetLineNumber, PyUnstable_InterpreterFrame_GetLasti for the
 * instruction pointer and where the bytecode starts), the innermost frame
 * compared before anything is read through it, and each code's
 * _co_firsttraceable must be the index of the first RESUME of its co_code;
 * where any of it does not hold, the profile hook is used, as it is on
 * versions whose layout is not written here (3.14+).
 *
 * Detach (memrec_python_detach: a call of the program's; memrec_torch.py
 * steps aside for a PyTorch profiler only where frames come from the profile
 * hook) sets the tool's events and callbacks back to none, restarts the
 * events we disabled (DISABLE stays with the tool id: whoever took the id
 * next missed PY_START of every code object we had seen, on 3.12.1 and
 * 3.13.0) and frees the id. restart_events also re-delivers every other
 * tool's disabled events (a coverage tool sees the lines it had turned off
 * once more): a tool must take that, as any tool may call it, so it is done
 * on an explicit detach only — a forked child that does not record (a
 * DataLoader worker) keeps the tool instead (rec_python.c), which after
 * DISABLE costs it one callback per code object it runs first. */
#include "rec_core.h"
#include "rec_python.h"
#include "rec_stack.h"

#include "gmt_hash.h"

#include <assert.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TSTATE_CFRAME_312 56 /* PyThreadState.cframe; current_frame is _PyCFrame's first field */
#define TSTATE_ROOT_CFRAME_312 272 /* PyThreadState.root_cframe: cframe outside any eval */
#define TSTATE_FRAME_313 72        /* PyThreadState.current_frame */
#define FRAME_CODE 0               /* _PyInterpreterFrame.f_code (3.12), f_executable (3.13) */
#define FRAME_PREVIOUS 8
#define FRAME_INSTR 56 /* _PyInterpreterFrame.prev_instr (3.12), instr_ptr (3.13) */
#define FRAME_OWNER 70 /* char */
#define FRAME_OWNED_BY_THREAD 0
#define FRAME_OWNED_BY_GENERATOR 1
#define FRAME_OWNED_BY_CSTACK 3
#define FRAMEOBJ_FRAME 24            /* PyFrameObject.f_frame */
#define CODE_FIRST_TRACEABLE_312 176 /* PyCodeObject._co_firsttraceable (int, in code units) */
#define CODE_FIRST_TRACEABLE_313 184
#define CODE_BYTECODE_312 192 /* PyCodeObject.co_code_adaptive: _PyCode_CODE */
#define CODE_BYTECODE_313 200
#define OP_RESUME_312 151 /* opcode.opmap["RESUME"]: fixed within a minor by its magic number */
#define OP_RESUME_313 149
#define CODE_UNIT 2           /* sizeof(_Py_CODEUNIT) */
#define CHAIN_MAX 8192        /* frames looked at per walk, at most */
#define LINE_CACHE_SET_BITS 9 /* per thread: instruction -> code index, line */
#define LINE_CACHE_WAYS 4     /* 512 sets of 4: 32 KiB */
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
    int (*bytes_as)(void *, char **, ptrdiff_t *);
    void *(*new_cfunction)(py_method_def *, void *, void *);
    void (*err_clear)(void);
    void *none;
} api;

static int tool = -1;                              /* held tool id; -1: off */
static void *tool_obj;                             /* int(tool) while held */
static void *callback;                             /* our callback while the tool is held */
static int layout_minor;                           /* 12 or 13; 0: not set yet */
static size_t code_first_traceable, code_bytecode; /* this minor's PyCodeObject offsets */
static unsigned op_resume;                         /* this minor's RESUME opcode */
static void *monitoring;                           /* sys.monitoring, kept */
static void *disable;                              /* sys.monitoring.DISABLE, kept */
static void *get_tool;                             /* sys.monitoring.get_tool, kept */
static long py_start_event;                        /* sys.monitoring.events.PY_START */
static long py_resume_event;                       /* sys.monitoring.events.PY_RESUME */

/* An instruction's address names its code object and line for good when
 * that code object is in the code table (which keeps it alive): the
 * bytecode lies inside the code object. A set holds its ways most recently
 * used first; a miss puts the new one first and drops the last. */
typedef struct line_slot {
    const void *instr; /* NULL: empty */
    uint32_t code, line;
} line_slot;
typedef struct line_set {
    line_slot way[LINE_CACHE_WAYS];
} line_set;
static __thread line_set line_cache[1u << LINE_CACHE_SET_BITS];
_Static_assert(sizeof(line_set) == 64, "a set is one cache line");

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
    LOOKUP(bytes_as, "PyBytes_AsStringAndSize");
    LOOKUP(new_cfunction, "PyCFunction_NewEx");
    LOOKUP(err_clear, "PyErr_Clear");
    api.none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
    int all = api.is_initialized && api.is_finalizing && api.gilstate_this && api.thread_get &&
              api.frame_lasti && api.frame_line && api.current_frame && api.frame_back &&
              api.frame_code && api.frame_object_line && api.interp_get && api.thread_head &&
              api.thread_next && api.incref && api.decref && api.import && api.get_attr &&
              api.call_objargs && api.long_from && api.long_as && api.str_from && api.utf8 &&
              api.bytes_as && api.new_cfunction && api.err_clear && api.none;
    return all ? 0 : -1;
}

/* The offsets and opcode of `minor` (12 or 13), set once: a splicer may read them. */
static void set_layout(int minor) {
    if (layout_minor)
        return;
    code_first_traceable = minor == 12 ? CODE_FIRST_TRACEABLE_312 : CODE_FIRST_TRACEABLE_313;
    code_bytecode = minor == 12 ? CODE_BYTECODE_312 : CODE_BYTECODE_313;
    op_resume = minor == 12 ? OP_RESUME_312 : OP_RESUME_313;
    layout_minor = minor;
}

/* ---- the running frames, read without the GIL ---------------------------- */

static void *load_ptr(const void *base, size_t offset) {
    void *p;
    memcpy(&p, (const char *)base + offset, sizeof p);
    return p;
}

static int owner_of(const void *frame) { return ((const signed char *)frame)[FRAME_OWNER]; }

/* The innermost _PyInterpreterFrame of thread state `ts`, NULL when none
 * (it may be an entry frame, or incomplete). */
static void *frame_of_thread(const void *ts, int minor) {
    if (minor == 12) {
        void *cframe = load_ptr(ts, TSTATE_CFRAME_312);
        return cframe ? load_ptr(cframe, 0) : NULL;
    }
    return load_ptr(ts, TSTATE_FRAME_313);
}

/* 1 when `instr`, the instruction pointer of a frame of code object `code`,
 * lies before the code's first traceable instruction (its first RESUME): on
 * 3.12 prev_instr, one before the instruction to run, on 3.13 instr_ptr. */
static int before_first_traceable(const void *code, const void *instr) {
    int first;
    memcpy(&first, (const char *)code + code_first_traceable, sizeof first);
    intptr_t at = (intptr_t)instr - (intptr_t)((const char *)code + code_bytecode);
    return at < (intptr_t)first * CODE_UNIT;
}

/* _PyFrame_IsIncomplete, for a frame that is not an entry frame. */
static int incomplete(const void *frame) {
    return owner_of(frame) != FRAME_OWNED_BY_GENERATOR &&
           before_first_traceable(load_ptr(frame, FRAME_CODE), load_ptr(frame, FRAME_INSTR));
}

/* The token of `frame`, which is not an entry frame; 0 when it is incomplete
 * (no stack shows it). */
static uint64_t frame_token(void *frame, line_set *cache) {
    const void *instr = load_ptr(frame, FRAME_INSTR);
    line_set *set = &cache[gmt_hash_fib((uintptr_t)instr, LINE_CACHE_SET_BITS)];
    for (unsigned w = 0; w < LINE_CACHE_WAYS; w++) {
        if (set->way[w].instr == instr && instr) {
            line_slot hit = set->way[w];
            memmove(&set->way[1], &set->way[0], w * sizeof hit);
            set->way[0] = hit;
            return rec_python_token(hit.code, hit.line);
        }
    }
    const void *code = load_ptr(frame, FRAME_CODE);
    int before = before_first_traceable(code, instr);
    if (before && owner_of(frame) != FRAME_OWNED_BY_GENERATOR)
        return 0;
    uint32_t index = rec_python_code_find(code);
    uint32_t line = rec_python_line(api.frame_line(frame));
    /* Kept when it names its code and line for good: a code object in the table (one that is not
     * may go, and its memory hold another), an instruction past the first RESUME (where no frame
     * of that code is incomplete, so a hit needs no look at the code object). */
    if (index && !before) {
        memmove(&set->way[1], &set->way[0], (LINE_CACHE_WAYS - 1) * sizeof set->way[0]);
        set->way[0] = (line_slot){instr, index, line};
    }
    uint64_t token = rec_python_token(index, line);
    assert(token != 0); /* a token has the resolver's prefix: 0 says "incomplete" */
    return token;
}

/* Writes the Python frames one C call of the eval loop runs, innermost
 * first, from `frame` to that call's entry frame; returns the frame after
 * the entry frame (NULL: the chain's end, or `out` full). */
static void *emit_run(void *frame, uint64_t *out, unsigned *o, unsigned cap, unsigned *steps,
                      line_set *cache) {
    while (frame && *steps < CHAIN_MAX && *o < cap) {
        ++*steps;
        void *back = load_ptr(frame, FRAME_PREVIOUS);
        if (owner_of(frame) == FRAME_OWNED_BY_CSTACK)
            return back;
        uint64_t token = frame_token(frame, cache);
        if (token) /* 0: incomplete, skipped */
            out[(*o)++] = token;
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
    line_set *cache = line_cache; /* one look-up of this thread's TLS */
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

/* 1 when `p` lies on the calling thread's C stack, in a caller's frame; 0
 * when it does not; -1 when the stack's bounds cannot be had. */
static int in_my_callers(const void *p) {
    pthread_attr_t attr;
    void *base;
    size_t size;
    int in = -1;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return -1;
    if (pthread_attr_getstack(&attr, &base, &size) == 0)
        in = (uintptr_t)p > (uintptr_t)__builtin_frame_address(0) &&
             (uintptr_t)p < (uintptr_t)base + size;
    pthread_attr_destroy(&attr);
    return in;
}

/* The calling thread's innermost frame as thread state `ts` names it, when
 * that is the frame of PyEval_GetFrame()'s frame object `obj` (Python code
 * called us: the innermost frame is neither an entry frame nor incomplete);
 * else NULL, with *unknown set when that could not be told. Nothing is read
 * through a pointer from `ts` before it is known to be right: on 3.12 the
 * _PyCFrame it names must be the thread state's own or on this thread's
 * stack, where the eval loop keeps it. */
static void *checked_innermost(const void *ts, int minor, const void *obj, int *unknown) {
    void *frame;
    if (minor == 12) {
        const void *cframe = load_ptr(ts, TSTATE_CFRAME_312);
        int trusted = cframe && cframe != (const char *)ts + TSTATE_ROOT_CFRAME_312
                          ? in_my_callers(cframe)
                          : cframe != NULL;
        *unknown = trusted < 0;
        if (trusted <= 0)
            return NULL;
        frame = load_ptr(cframe, 0);
    } else {
        frame = load_ptr(ts, TSTATE_FRAME_313);
    }
    return frame && frame == load_ptr(obj, FRAMEOBJ_FRAME) ? frame : NULL;
}

/* `frame` or the first frame after it that a stack shows (neither an entry
 * frame nor incomplete); NULL at the chain's end. */
static void *next_shown(void *frame) {
    for (unsigned n = 0; frame && n < CHAIN_MAX; n++) {
        if (owner_of(frame) != FRAME_OWNED_BY_CSTACK && !incomplete(frame))
            return frame;
        frame = load_ptr(frame, FRAME_PREVIOUS);
    }
    return NULL;
}

/* 1 when code object `code`'s _co_firsttraceable, read at this minor's
 * offset, is the index of the first RESUME in its co_code (the bytecode as
 * compiled: base opcodes, every inline cache entry zero). */
static int first_traceable_agrees(void *code) {
    void *bytes = api.get_attr(code, "co_code");
    char *data = NULL;
    ptrdiff_t size = 0, resume = -1;
    if (!bytes || api.bytes_as(bytes, &data, &size) != 0) {
        api.err_clear();
        size = 0;
    }
    for (ptrdiff_t i = 0; i + 1 < size && resume < 0; i += CODE_UNIT)
        if ((unsigned char)data[i] == op_resume)
            resume = i / CODE_UNIT;
    if (bytes)
        api.decref(bytes);
    int first;
    memcpy(&first, (const char *)code + code_first_traceable, sizeof first);
    return resume >= 0 && first == resume;
}

/* 1 when the calling thread's chain read through the offsets above is, frame
 * by frame, the one the public API gives; 0 when it is not; -1 when there is
 * nothing to compare (no Python frame runs, another thread state). */
static int layout_agrees(int minor) {
    void *ts = api.thread_get();
    void *obj = api.current_frame();
    if (!ts || api.gilstate_this() != ts || !obj)
        return -1;
    int unknown = 0;
    void *frame = checked_innermost(ts, minor, obj, &unknown);
    if (!frame)
        return unknown ? -1 : 0;
    api.incref(obj);
    int ok = 1;
    unsigned n = 0;
    while (obj && ok && ++n < CHAIN_MAX) {
        void *code = api.frame_code(obj);
        /* Each frame is the frame object's before anything is read through it; the instruction
         * pointer lies lasti bytes past where the bytecode starts. */
        ok = frame && code && load_ptr(obj, FRAMEOBJ_FRAME) == frame &&
             load_ptr(frame, FRAME_CODE) == code &&
             (owner_of(frame) == FRAME_OWNED_BY_THREAD ||
              owner_of(frame) == FRAME_OWNED_BY_GENERATOR) &&
             api.frame_line(frame) == api.frame_object_line(obj) &&
             (uintptr_t)load_ptr(frame, FRAME_INSTR) - (uintptr_t)api.frame_lasti(frame) ==
                 (uintptr_t)code + code_bytecode &&
             first_traceable_agrees(code) && !incomplete(frame);
        if (code)
            api.decref(code);
        void *back = api.frame_back(obj);
        api.decref(obj);
        obj = back;
        frame = ok ? next_shown(load_ptr(frame, FRAME_PREVIOUS)) : NULL;
    }
    if (obj)
        api.decref(obj);
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
            if (owner_of(frame) == FRAME_OWNED_BY_CSTACK || incomplete(frame))
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

/* sys.monitoring.NAME(args[0], ..): `nargs` arguments (at most 3), each a
 * new reference that this call gives back; a NULL one (it could not be made)
 * fails the call. Returns the result (a new reference) when `keep`, else
 * None's (borrowed: only tells success); NULL with the error cleared. */
static void *mon_call_result(const char *name, unsigned nargs, void *a, void *b, void *c,
                             int keep) {
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
    void *refs[] = {fn, a, b, c};
    for (unsigned i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (refs[i])
            api.decref(refs[i]);
    if (result && !keep) {
        api.decref(result);
        result = api.none;
    }
    return result;
}

/* The same, for success only: 0, or -1 with the error cleared. */
static int mon_call(const char *name, unsigned nargs, void *a, void *b, void *c) {
    return mon_call_result(name, nargs, a, b, c, 0) ? 0 : -1;
}

static void *none_ref(void) {
    api.incref(api.none);
    return api.none;
}

/* Tool `id`'s name as sys.monitoring.get_tool gives it, into `out`: "" when
 * the id is free, "?" when it cannot be read. */
static void tool_holder(int id, char *out, size_t size) {
    void *arg = api.long_from(id);
    void *name = arg ? api.call_objargs(get_tool, arg, NULL) : NULL;
    const char *text = !name ? "?" : name == api.none ? "" : api.utf8(name);
    snprintf(out, size, "%s", text ? text : "?");
    api.err_clear();
    if (name)
        api.decref(name);
    if (arg)
        api.decref(arg);
}

/* 1 while the tool id we took is still memrec's (get_tool(tool) ==
 * "memrec"): a program may free it and take it for itself. */
static int tool_still_ours(void) {
    void *name = api.call_objargs(get_tool, tool_obj, NULL);
    const char *text = name && name != api.none ? api.utf8(name) : NULL;
    int ours = text && strcmp(text, TOOL_NAME) == 0;
    if (!text)
        api.err_clear();
    if (name)
        api.decref(name);
    return ours;
}

static int take_tool(void) {
    for (unsigned i = 0; i < sizeof tool_choices / sizeof tool_choices[0]; i++)
        if (mon_call("use_tool_id", 2, api.long_from(tool_choices[i]), api.str_from(TOOL_NAME),
                     NULL) == 0)
            return tool_choices[i];
    return -1;
}

/* Takes our callback off `event` of tool id `tool`, where it is still ours
 * (register_callback gives back the one it replaced: another's goes back). */
static void unregister_ours(long event) {
    void *old = mon_call_result("register_callback", 3, api.long_from(tool), api.long_from(event),
                                none_ref(), 1);
    if (old && old != api.none && old != callback)
        mon_call("register_callback", 3, api.long_from(tool), api.long_from(event), old);
    else if (old)
        api.decref(old);
}

/* Forgets the tool: what we kept of it goes. */
static void forget_tool(void) {
    if (tool_obj)
        api.decref(tool_obj);
    if (callback)
        api.decref(callback);
    tool_obj = callback = NULL;
    tool = -1;
}

/* Registers our callback for `event` of our tool. Returns 0, -1. */
static int register_ours(long event) {
    api.incref(callback); /* the call gives one reference back */
    return mon_call("register_callback", 3, api.long_from(tool), api.long_from(event), callback);
}

/* Gives the tool id back with nothing left behind under it: events,
 * callbacks, the locations DISABLE took off (restart_events), the id. Only
 * when it is memrec's: a program that freed it and took it for itself keeps
 * its events and callbacks, and only our callbacks leave it; one freed and
 * left free is taken back for the moment it takes to leave it clean.
 * `detaching`: memrec_python_detach's, which says once that the id had been
 * taken (the program's events had replaced ours: code first run since then
 * went unnamed). */
static void release_tool(int detaching) {
    assert(tool >= 0);
    char holder[64] = "?";
    int ours = tool_obj && tool_still_ours();
    if (!ours && tool_obj) {
        tool_holder(tool, holder, sizeof holder);
        if (!holder[0] &&
            mon_call("use_tool_id", 2, api.long_from(tool), api.str_from(TOOL_NAME), NULL) == 0)
            ours = 1;
    }
    if (ours) {
        mon_call("set_events", 2, api.long_from(tool), api.long_from(0), NULL);
        mon_call("register_callback", 3, api.long_from(tool), api.long_from(py_start_event),
                 none_ref());
        mon_call("register_callback", 3, api.long_from(tool), api.long_from(py_resume_event),
                 none_ref());
        mon_call("restart_events", 0, NULL, NULL, NULL);
        mon_call("free_tool_id", 1, api.long_from(tool), NULL, NULL);
    } else if (callback) {
        static int warned;
        if (detaching && holder[0] && strcmp(holder, "?") != 0)
            rec_warn_once(&warned,
                          "sys.monitoring tool id %d was freed and taken by \"%s\" while memrec "
                          "held it: code first run since then showed as <python> in stacks",
                          tool, holder);
        unregister_ours(py_start_event);
        unregister_ours(py_resume_event);
    }
    forget_tool();
}

/* Our callback ran under an id that is no longer memrec's: it takes itself
 * off, and the profile hook takes over (rec_python.c). */
static void lose_tool(void) {
    static int warned;
    int id = tool;
    char holder[64];
    tool_holder(id, holder, sizeof holder);
    release_tool(0);
    rec_stack_set_splicer(NULL);
    rec_warn_once(&warned,
                  "sys.monitoring tool id %d is no longer memrec's (%s%s%s): Python frames come "
                  "from a profile hook from now on (more time per Python call)",
                  id, holder[0] ? "now \"" : "freed", holder, holder[0] ? "\"" : "");
    rec_python_monitor_lost();
}

/* The callback of sys.monitoring's PY_START and PY_RESUME (code,
 * instruction_offset): the first time a code object starts, or a generator
 * or coroutine resumes at a resume point. */
static void *on_code_start(void *self, void *const *args, ptrdiff_t nargs) {
    (void)self;
    if (tool < 0)
        return none_ref();
    if (!tool_still_ours()) {
        lose_tool();
        return none_ref(); /* not DISABLE: that would be the new owner's */
    }
    if (nargs >= 1 && args[0])
        rec_python_code_index(args[0]); /* clears any error it meets */
    api.incref(disable);
    return disable; /* this location: never again for us */
}

static py_method_def on_code_start_def = {"memrec_py_start", on_code_start, REC_PY_METH_FASTCALL,
                                          NULL};

/* An attribute of sys.monitoring.events as a C long; -1 when missing. */
static long event_value(void *events, const char *name) {
    void *value = events ? api.get_attr(events, name) : NULL;
    long v = value ? api.long_as(value) : -1;
    if (value)
        api.decref(value);
    return v;
}

/* sys.monitoring, DISABLE, get_tool and the events' values, kept. Returns 0, -1. */
static int load_monitoring(void) {
    if (monitoring)
        return 0;
    void *sys = api.import("sys");
    void *mon = sys ? api.get_attr(sys, "monitoring") : NULL;
    void *off = mon ? api.get_attr(mon, "DISABLE") : NULL;
    void *getter = off ? api.get_attr(mon, "get_tool") : NULL;
    void *events = getter ? api.get_attr(mon, "events") : NULL;
    long start = event_value(events, "PY_START"), resume = event_value(events, "PY_RESUME");
    void *refs[] = {events, sys};
    for (unsigned i = 0; i < sizeof refs / sizeof refs[0]; i++)
        if (refs[i])
            api.decref(refs[i]);
    if (start <= 0 || resume <= 0) {
        api.err_clear();
        void *kept[] = {getter, off, mon};
        for (unsigned i = 0; i < sizeof kept / sizeof kept[0]; i++)
            if (kept[i])
                api.decref(kept[i]);
        return -1;
    }
    monitoring = mon;
    disable = off;
    get_tool = getter;
    py_start_event = start;
    py_resume_event = resume;
    return 0;
}

int rec_python_monitor_tool(void) { return tool; }

int rec_python_monitor_attach(int minor) {
    static int warned_layout, warned_tools, warned_failed;
    if (tool >= 0)
        return 0;
    if ((minor != 12 && minor != 13) || load_api(minor) != 0)
        return -1;
    set_layout(minor);
    if (load_monitoring() != 0) {
        rec_warn_once(&warned_failed, "sys.monitoring could not be used: Python frames come "
                                      "from a profile hook instead (more time per Python call)");
        return -1;
    }
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
    tool_obj = api.long_from(tool);
    callback = api.new_cfunction(&on_code_start_def, NULL, NULL);
    if (!tool_obj || !callback || register_ours(py_start_event) != 0 ||
        register_ours(py_resume_event) != 0 ||
        mon_call("set_events", 2, api.long_from(tool),
                 api.long_from(py_start_event | py_resume_event), NULL) != 0) {
        api.err_clear();
        release_tool(0);
        rec_warn_once(&warned_failed, "sys.monitoring could not be used: Python frames come "
                                      "from a profile hook instead (more time per Python call)");
        return -1;
    }
    enter_running_frames(minor);
    rec_stack_set_splicer(splice_monitor);
    return 0;
}

void rec_python_monitor_detach(void) {
    if (tool < 0)
        return;
    rec_stack_set_splicer(NULL);
    release_tool(1);
}
