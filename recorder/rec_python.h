/* rec_python.h — Python frames in the recorder's stacks (issue 6).
 *
 * When the recorded process is CPython, every stack interleaves Python
 * frames (function, file, line) with the native ones, in call order.
 * Capture never takes the GIL (PyTorch releases it around its ops, and a
 * CUDA callback must never wait for it). Up to CPython 3.11 a C-level
 * profile hook keeps a shadow stack of the thread's Python frames with the
 * GIL held and capture reads the calling thread's own shadow stack
 * (rec_python.c); on 3.12 and 3.13 capture reads the thread's running
 * frames themselves, and a sys.monitoring PY_START and PY_RESUME callback,
 * off again after a code object's first call (a resume point's first
 * resume), only enters code objects in the code table
 * (rec_python_monitor.c). The CPython C API is looked up at run time,
 * so libmemrec.so never links against libpython. See both files for the
 * interleaving rule and its limits. */
#ifndef GMT_REC_PYTHON_H
#define GMT_REC_PYTHON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libmemrec.so. Call with the GIL held (the library does,
 * through rec_python_attach_soon; a test through ctypes.PyDLL). On CPython
 * 3.12 and 3.13: takes sys.monitoring tool id 3 (else 4) for PY_START and
 * PY_RESUME, which covers every thread (a program's own use_tool_id of that
 * id raises ValueError meanwhile; one that frees it and takes it has its way,
 * and memrec falls back to the profile hook); elsewhere, or when both ids are
 * taken: installs the profile hook on the calling thread, on every thread
 * `threading` starts later and, on CPython >= 3.12, on the threads already
 * running. Has os.fork's children that do not record drop the profile hook
 * again (the sys.monitoring tool stays there: see memrec_python_detach).
 * Returns 0 when attached
 * (or when MEMREC_STACKS=native asks for no Python frames), -1 when the
 * process is not CPython >= 3.9 with a GIL, or the GIL is not held.
 * Idempotent. */
__attribute__((visibility("default"))) int memrec_python_attach(void);

/* In a CPython process (the library loaded by the driver, NVTX or ctypes
 * when recording starts): asks the interpreter to run memrec_python_attach
 * on its main thread as soon as that thread runs Python code again
 * (Py_AddPendingCall, which needs no GIL). Nothing in any other process,
 * with MEMREC_STACKS=native, or when attached already. Frames of threads
 * started before that moment are missing before CPython 3.12. */
void rec_python_attach_soon(void);

/* Stops splicing and removes the hook (GIL held): the sys.monitoring tool
 * (events, callbacks, the events it disabled, its id — only while
 * get_tool says the id is still memrec's), or the profile hook from the
 * calling thread and future threads (every shadow stack taken before is
 * stale from then on: none is spliced, each thread drops its own at its next
 * profile event); stacks recorded meanwhile are native. Taking the tool off
 * calls sys.monitoring.restart_events(), which hands every other tool the
 * events it had disabled once more, so it happens on an explicit call only
 * (memrec_torch.py's while a PyTorch profiler with Python stacks runs, or
 * the program's): os.fork's children that do not record drop the profile
 * hook (it would only slow the child down) but keep the tool, which after
 * DISABLE costs them one callback per code object they run first. Returns 0,
 * -1 when not attached. A later memrec_python_attach attaches again. */
__attribute__((visibility("default"))) int memrec_python_detach(void);

/* ---- between rec_python.c and rec_python_monitor.c only --------------- */

#define REC_PY_METH_FASTCALL 0x0080
typedef void *(*py_fastcall_fn)(void *self, void *const *args, ptrdiff_t nargs);
typedef struct py_method_def { /* PyMethodDef, stable ABI */
    const char *name;
    py_fastcall_fn meth;
    int flags;
    const char *doc;
} py_method_def;

/* The code table (rec_python.c). The index of a code object, entering it
 * (its names copied, the object kept alive) on first sight; 0 when the table
 * is full or out of memory. GIL held. */
uint32_t rec_python_code_index(void *code);
/* Its index if entered already, else 0. Any thread, without the GIL, no
 * allocation, no lock. */
uint32_t rec_python_code_find(const void *code);
/* A line as recorded (clamped; 0: unknown), and the stack token of a frame
 * of code index `code` at that line. */
uint32_t rec_python_line(int line);
uint64_t rec_python_token(uint32_t code, uint32_t line);
/* 1 when `ip` (a return address) lies in _PyEval_EvalFrameDefault. */
int rec_python_is_eval_ip(uint64_t ip);

/* The sys.monitoring path (rec_python_monitor.c), CPython 3.12 and 3.13,
 * GIL held. attach: 0 when on (its splicer installed), -1 when this process
 * cannot have it (the profile hook is used instead; a warning said why when
 * that is not simply the version). detach: takes it off again. */
int rec_python_monitor_attach(int minor);
void rec_python_monitor_detach(void);
/* The tool id it holds, -1 when off. */
int rec_python_monitor_tool(void);
/* Called by the sys.monitoring path when its tool id turned out to be no
 * longer its own (it took itself off): the profile hook takes over. */
void rec_python_monitor_lost(void);

#ifdef __cplusplus
}
#endif
#endif
