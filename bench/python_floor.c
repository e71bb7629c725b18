/* python_floor.c — a CPython 3.12+ extension module for bench_python_floor.py:
 * the cheapest sys.monitoring callbacks there are, C functions called by
 * vectorcall (METH_FASTCALL), to measure what a hook built on events costs at
 * the least, whatever it does inside. Built by bench/run_python_hook.sh
 * against each interpreter's own headers; never part of the recorder.
 *
 *   empty(*args)     returns None at once
 *   getframe(*args)  PyEval_GetFrame() (which makes the frame object), None
 *   disable(*args)   returns sys.monitoring.DISABLE (memrec's PY_START)
 *   checks(*args)    with arguments: counts whether PyEval_GetFrame()'s code
 *                    is the code object the event names; without: returns
 *                    (same, different) */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *disable_value;
static long same, different;

static PyObject *empty(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self, (void)args, (void)nargs;
    Py_RETURN_NONE;
}

static PyObject *getframe(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self, (void)args, (void)nargs;
    (void)PyEval_GetFrame();
    Py_RETURN_NONE;
}

static PyObject *disable(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self, (void)args, (void)nargs;
    return Py_NewRef(disable_value);
}

static PyObject *checks(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs == 0)
        return Py_BuildValue("(ll)", same, different);
    PyFrameObject *frame = PyEval_GetFrame();
    PyCodeObject *code = frame ? PyFrame_GetCode(frame) : NULL;
    if ((PyObject *)code == args[0])
        same++;
    else
        different++;
    Py_XDECREF(code);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"empty", (PyCFunction)(void (*)(void))empty, METH_FASTCALL, NULL},
    {"getframe", (PyCFunction)(void (*)(void))getframe, METH_FASTCALL, NULL},
    {"disable", (PyCFunction)(void (*)(void))disable, METH_FASTCALL, NULL},
    {"checks", (PyCFunction)(void (*)(void))checks, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "python_floor", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_python_floor(void) {
    PyObject *sys = PyImport_ImportModule("sys");
    PyObject *monitoring = sys ? PyObject_GetAttrString(sys, "monitoring") : NULL;
    disable_value = monitoring ? PyObject_GetAttrString(monitoring, "DISABLE") : NULL;
    Py_XDECREF(monitoring);
    Py_XDECREF(sys);
    return disable_value ? PyModule_Create(&module) : NULL;
}
