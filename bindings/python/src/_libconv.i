/* _libconv.i -- the Python module over conv.h: libconv._libconv (private).
 *
 * The public Python API is the pure-Python package around it (libconv/*.py).
 * This file holds only what is Python-specific: typemaps for the argument
 * patterns listed in bindings/swig/conv.i, chosen by argument type and name,
 * so that a function added to conv.h is wrapped with no change here:
 *
 *   return value   conv_status_t        success -> None (or the outputs);
 *                                        failure -> raises the libconv.ConvError
 *                                        subclass of the status, with the text of
 *                                        conv_last_error() (outputs are dropped)
 *   handle out     SWIGTYPE **out        returned (an opaque SWIG pointer)
 *   scalar out     int *, unsigned *, int64_t *, size_t *, double *, enum *
 *                                        returned
 *   dims out       int64_t *strides, *dilations, *begin, *end, *padding,
 *                  *y_dims, *dims        returned as a tuple of the values written
 *   dims in        const int64_t *       any sequence of ints (or None -> NULL)
 *   memory in      void *, const void *  an int address, None, or an object with
 *                                        the buffer protocol (held for the call)
 *   address out    void **               returned as an int
 *   string out     (char *name, size_t capacity)
 *                                        nothing in, a str out
 *                  const char **name     nothing in, a str out (a static
 *                                        string of the library)
 *   functions in   conv_alloc_fn_t, conv_free_fn_t
 *                                        an int address (of a ctypes function), or None
 *   search results (int capacity, conv_algo_t *algos, double *milliseconds,
 *                   size_t *workspace_bytes, int *count)
 *                                        capacity in, a list of
 *                                        (algo, milliseconds, workspace_bytes) out
 *   id list        (int capacity, conv_algo_t *algos, int *count)
 *                                        nothing in, a list of ids out
 *   handle groups  (int nranks, conv_comm_t *comms)
 *                                        nranks in, a list of handles out
 *                  (int ndevices, const int *devices, conv_comm_t *comms)
 *                                        a count or a sequence of devices in,
 *                                        a list of handles out
 *   conv_comm_get_error                  returns [(status, message), state]:
 *                                        its status is the answer, not raised
 *
 * Several outputs come back as a list, in argument order. Built with
 * `swig -python -threads`: the GIL is released around every C call.
 */
%module(package="libconv",
        docstring="Private SWIG wrapper of conv.h. Use the libconv package instead.") _libconv

%feature("autodoc", "2");

%{
#include "pyglue.h"

/* A list of `n` handles of SWIG type `type` (needs SWIG's runtime: here). */
static PyObject *conv_py_handle_list(void **handles, int n, swig_type_info *type) {
    PyObject *list = PyList_New(n);
    if (!list) return NULL;
    for (int i = 0; i < n; ++i) {
        PyObject *h = SWIG_NewPointerObj(handles[i], type, 0);
        if (!h) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, h);
    }
    return list;
}
%}

%include <stdint.i>

/* ------------------------------------------------------- status -> raise */

%typemap(out) conv_status_t {
    if ($1 != CONV_STATUS_SUCCESS) {
        conv_py_raise((int)$1);
        SWIG_fail;
    }
    $result = SWIG_Py_Void();
}

/* ---------------------------------------------------------- handle outs */

%typemap(in, numinputs=0) SWIGTYPE **out ($*1_ltype temp = NULL) "$1 = &temp;"
%typemap(argout) SWIGTYPE **out {
    $result = SWIG_Python_AppendOutput(
        $result, SWIG_NewPointerObj(SWIG_as_voidptr(*$1), $*1_descriptor, 0));
}

/* ---------------------------------------------------------- scalar outs */

%define %conv_scalar_out(TYPE, CONVERT)
%typemap(in, numinputs=0) TYPE * (TYPE temp = 0) "$1 = &temp;"
%typemap(argout) TYPE * "$result = SWIG_Python_AppendOutput($result, CONVERT(*$1));"
%enddef

%conv_scalar_out(int, PyLong_FromLong)
%conv_scalar_out(unsigned, PyLong_FromUnsignedLong)
%conv_scalar_out(int64_t, PyLong_FromLongLong)
%conv_scalar_out(size_t, PyLong_FromSize_t)
%conv_scalar_out(double, PyFloat_FromDouble)

%typemap(in, numinputs=0) enum SWIGTYPE * ($*1_ltype temp) "temp = ($*1_ltype)0; $1 = &temp;"
%typemap(argout) enum SWIGTYPE * {
    $result = SWIG_Python_AppendOutput($result, PyLong_FromLong((long)*$1));
}

/* ------------------------------------------------------ dims arrays out */

%define %conv_dims_out(NAME)
%typemap(in, numinputs=0) int64_t *NAME (int64_t temp[CONV_PY_MAX_DIMS]) {
    conv_py_dims_prepare(temp);
    $1 = temp;
}
%typemap(argout) int64_t *NAME {
    $result = SWIG_Python_AppendOutput($result, conv_py_dims_tuple($1));
}
%enddef

%conv_dims_out(strides)
%conv_dims_out(dilations)
%conv_dims_out(begin)
%conv_dims_out(end)
%conv_dims_out(padding)
%conv_dims_out(y_dims)
%conv_dims_out(dims)

/* ------------------------------------------------------- dims arrays in */

%typemap(in) const int64_t * (int64_t temp[CONV_PY_MAX_DIMS]) {
    if ($input == Py_None) {
        $1 = NULL;
    } else {
        if (conv_py_dims_from_sequence($input, temp, "$symname", "$1_name") < 0) SWIG_fail;
        $1 = temp;
    }
}
/* Inputs give nothing back (SWIG would otherwise fall back on the dims-out
 * typemaps above, matching `const int64_t *dims` as `int64_t *dims`). */
%typemap(argout) const int64_t * ""

/* ---------------------------------------------------------- raw memory */

%typemap(in) void * (Py_buffer view, int have_view = 0) {
    if (conv_py_get_pointer($input, 1, &$1, &view, &have_view) < 0) SWIG_fail;
}
%typemap(freearg) void * "if (have_view$argnum) PyBuffer_Release(&view$argnum);"

%typemap(in) const void * (Py_buffer view, int have_view = 0) {
    void *p = NULL;
    if (conv_py_get_pointer($input, 0, &p, &view, &have_view) < 0) SWIG_fail;
    $1 = p;
}
%typemap(freearg) const void * "if (have_view$argnum) PyBuffer_Release(&view$argnum);"

%typemap(in, numinputs=0) void ** (void *temp = NULL) "$1 = &temp;"
%typemap(argout) void ** "$result = SWIG_Python_AppendOutput($result, PyLong_FromVoidPtr(*$1));"

/* ------------------------------------------------------ string out */

/* (char *name, size_t capacity): nothing in, the string out. */
%typemap(in, numinputs=0) (char *name, size_t capacity) (char buf[CONV_PY_MAX_STRING]) {
    buf[0] = '\0';
    $1 = buf;
    $2 = sizeof buf;
}
%typemap(argout) (char *name, size_t capacity) {
    $result = SWIG_Python_AppendOutput($result, PyUnicode_DecodeUTF8($1, (Py_ssize_t)strlen($1), "replace"));
}

/* const char **name: the library's own (static) string, returned as a str. */
%typemap(in, numinputs=0) const char **name (const char *temp = NULL) "$1 = ($1_ltype)&temp;"
%typemap(argout) const char **name {
    const char *s = *$1 ? *$1 : "";
    $result = SWIG_Python_AppendOutput($result, PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace"));
}

/* --------------------------------------------------- function pointers */

/* A C function's address as an int (ctypes: cast(f, c_void_p).value), or None. */
%typemap(in) conv_alloc_fn_t, conv_free_fn_t {
    void *p = NULL;
    if ($input != Py_None) {
        p = PyLong_AsVoidPtr($input);
        if (!p && PyErr_Occurred()) SWIG_fail;
    }
    $1 = ($1_ltype)p;
}

/* ------------------------------------------ groups of communicators out */

/* (int nranks, conv_comm_t *comms): nranks in, a list of nranks handles out. */
%typemap(in) (int nranks, conv_comm_t *comms) (conv_comm_t temp[CONV_PY_MAX_RANKS]) {
    if (conv_py_devices_arg($input, NULL, &$1, "$symname") < 0) SWIG_fail;
    $2 = temp;
}
%typemap(argout) (int nranks, conv_comm_t *comms) {
    $result = SWIG_Python_AppendOutput($result, conv_py_handle_list((void **)$2, $1, $*2_descriptor));
}

/* (int ndevices, const int *devices, conv_comm_t *comms): one argument, a
 * count (GPUs 0..n-1) or a sequence of GPU indices; a list of handles out. */
%typemap(in) (int ndevices, const int *devices, conv_comm_t *comms)
             (int devs[CONV_PY_MAX_RANKS], conv_comm_t temp[CONV_PY_MAX_RANKS]) {
    if (conv_py_devices_arg($input, devs, &$1, "$symname") < 0) SWIG_fail;
    $2 = PyLong_Check($input) ? NULL : devs;
    $3 = temp;
}
%typemap(argout) (int ndevices, const int *devices, conv_comm_t *comms) {
    $result = SWIG_Python_AppendOutput($result, conv_py_handle_list((void **)$3, $1, $*3_descriptor));
}

/* conv_comm_get_error reports a failed communicator through its status:
 * returned as (status, message), not raised; the state follows. */
%typemap(out) conv_status_t conv_comm_get_error {
    $result = conv_py_status_tuple((int)$1);
}

/* ----------------------------------------------- algorithm search results */

%typemap(in) (int capacity, conv_algo_t *algos, double *milliseconds, size_t *workspace_bytes,
              int *count) (int n = 0, conv_py_find_buffers bufs = {0}) {
    if (conv_py_find_prepare($input, &bufs) < 0) SWIG_fail;
    $1 = bufs.capacity;
    $2 = bufs.algos;
    $3 = bufs.milliseconds;
    $4 = bufs.workspace_bytes;
    $5 = &n;
}
%typemap(argout) (int capacity, conv_algo_t *algos, double *milliseconds,
                  size_t *workspace_bytes, int *count) {
    $result = SWIG_Python_AppendOutput($result, conv_py_find_results(&bufs$argnum, n$argnum));
}
%typemap(freearg) (int capacity, conv_algo_t *algos, double *milliseconds,
                   size_t *workspace_bytes, int *count) "conv_py_find_free(&bufs$argnum);"

/* (int capacity, conv_algo_t *algos, int *count): the whole list out. */
%typemap(in, numinputs=0) (int capacity, conv_algo_t *algos, int *count)
                          (conv_algo_t ids[CONV_PY_MAX_ALGOS], int n = 0) {
    $1 = CONV_PY_MAX_ALGOS;
    $2 = ids;
    $3 = &n;
}
%typemap(argout) (int capacity, conv_algo_t *algos, int *count) {
    if (n$argnum > CONV_PY_MAX_ALGOS) {
        PyErr_Format(PyExc_RuntimeError, "$symname: %d ids, more than the binding's %d",
                     n$argnum, CONV_PY_MAX_ALGOS);
        SWIG_fail;
    }
    PyObject *list = PyList_New(n$argnum);
    if (!list) SWIG_fail;
    for (int i = 0; i < n$argnum; ++i) {
        PyObject *id = PyLong_FromLong((long)ids$argnum[i]);
        if (!id) {
            Py_DECREF(list);
            SWIG_fail;
        }
        PyList_SET_ITEM(list, i, id);
    }
    $result = SWIG_Python_AppendOutput($result, list);
}

/* ------------------------------------------------- Python-only helpers */

/* DLPack capsules (see pyglue.h); not part of conv.h. */
%native(py_dlpack_export) PyObject *conv_py_dlpack_export(PyObject *self, PyObject *args);
%native(py_dlpack_import) PyObject *conv_py_dlpack_import(PyObject *self, PyObject *args);
%native(py_buffer_info) PyObject *conv_py_buffer_info(PyObject *self, PyObject *args);

/* ------------------------------------------------------------- conv.h */

#define CONV_STATIC_DEFINE
%include "conv.i"
