/* Python.h — stub for kevo's tests (tests/torch/stub/README.md): the part
 * of CPython 3's C API that the generated PyTorch binding uses (module
 * definition, the GIL, warnings), with the signatures of
 * docs.python.org/3/c-api.  Declarations only. */
#ifndef KEVO_STUB_PYTHON_H
#define KEVO_STUB_PYTHON_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef ssize_t Py_ssize_t;

typedef struct _object {
    Py_ssize_t ob_refcnt;
    struct _typeobject *ob_type;
} PyObject;

typedef struct PyMethodDef PyMethodDef;
typedef struct PyModuleDef_Slot PyModuleDef_Slot;
typedef int (*visitproc)(PyObject *, void *);
typedef int (*traverseproc)(PyObject *, visitproc, void *);
typedef int (*inquiry)(PyObject *);
typedef void (*freefunc)(void *);

/* Interpreter state. */
int Py_IsInitialized(void);

/* The GIL from a thread that may not hold it. */
typedef enum { PyGILState_LOCKED, PyGILState_UNLOCKED } PyGILState_STATE;
PyGILState_STATE PyGILState_Ensure(void);
void PyGILState_Release(PyGILState_STATE state);

/* Exceptions and warnings. */
extern PyObject *PyExc_UserWarning;
int PyErr_WarnEx(PyObject *category, const char *message, Py_ssize_t stack_level);
void PyErr_Clear(void);

/* Modules: a definition with every field, and its initialisation function. */
typedef struct PyModuleDef_Base {
    PyObject ob_base;
    PyObject *(*m_init)(void);
    Py_ssize_t m_index;
    PyObject *m_copy;
} PyModuleDef_Base;

#define PyModuleDef_HEAD_INIT {{1, NULL}, NULL, 0, NULL}

typedef struct PyModuleDef {
    PyModuleDef_Base m_base;
    const char *m_name;
    const char *m_doc;
    Py_ssize_t m_size;
    PyMethodDef *m_methods;
    PyModuleDef_Slot *m_slots;
    traverseproc m_traverse;
    inquiry m_clear;
    freefunc m_free;
} PyModuleDef;

#define PYTHON_API_VERSION 1013
PyObject *PyModule_Create2(PyModuleDef *def, int module_api_version);
#define PyModule_Create(def) PyModule_Create2((def), PYTHON_API_VERSION)

#ifdef __cplusplus
}
#define PyMODINIT_FUNC extern "C" __attribute__((visibility("default"))) PyObject *
#else
#define PyMODINIT_FUNC __attribute__((visibility("default"))) PyObject *
#endif

#endif /* KEVO_STUB_PYTHON_H */
