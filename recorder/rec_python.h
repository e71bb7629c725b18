/* rec_python.h — Python frames in the recorder's stacks (issue 6).
 *
 * When the recorded process is CPython, every stack interleaves Python
 * frames (function, file, line) with the native ones, in call order. A
 * C-level profile hook keeps a shadow stack of the thread's Python frames
 * with the GIL held; capture reads the calling thread's own shadow stack
 * without the GIL (PyTorch releases it around its ops, and a CUDA callback
 * must never wait for it). The CPython C API is looked up at run time, so
 * libmemrec.so never links against libpython. See rec_python.c for the
 * interleaving rule and its limits. */
#ifndef GMT_REC_PYTHON_H
#define GMT_REC_PYTHON_H

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libmemrec.so. Call with the GIL held (the library does,
 * through rec_python_attach_soon; a test through ctypes.PyDLL): installs
 * the profile hook on the calling thread, on every thread `threading`
 * starts later and, on CPython >= 3.12, on the threads already running, and
 * has os.fork's children that do not record drop it again. Returns 0 when attached
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

/* 1 when rec_stack_here should not unwind native frames at all and let the
 * splicer build the whole stack from Python frames (MEMREC_STACKS=python
 * in an attached process). */
int rec_python_only(void);

/* Removes the hook from the calling thread and future threads and stops
 * splicing (GIL held). For a forked child that will not record (attach
 * registers it with os.register_at_fork): a profile hook there
 * would only slow the child down. Returns 0, -1 when not attached. A later
 * memrec_python_attach attaches again. */
__attribute__((visibility("default"))) int memrec_python_detach(void);

#ifdef __cplusplus
}
#endif
#endif
