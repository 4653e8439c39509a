/* pyglue.h -- C helpers of the Python module (_libconv.i): error raising,
 * argument conversion for the typemaps, and the DLPack capsule protocol.
 * Python-only; nothing here is part of libconv's C API. */
#ifndef CONV_PYGLUE_H
#define CONV_PYGLUE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "conv.h"

/* Longest int64_t array any conv.h function reads or writes (ndim <= 5). */
#define CONV_PY_MAX_DIMS 16

/* Sets the Python exception for a failed call: the libconv.ConvError
 * subclass of `status`, built by libconv._errors._from_status(status,
 * conv_last_error()). Call with the GIL held, right after the failed call. */
void conv_py_raise(int status);

/* Fills an output dims buffer with a sentinel no function writes. */
void conv_py_dims_prepare(int64_t *dims);
/* The values written before the first sentinel, as a tuple of ints. */
PyObject *conv_py_dims_tuple(const int64_t *dims);
/* A sequence of at most CONV_PY_MAX_DIMS ints into `dims` (the rest zeroed,
 * so a C function that reads more than given reads zeros, never past the
 * buffer). Returns -1 with a Python exception set. */
int conv_py_dims_from_sequence(PyObject *seq, int64_t *dims, const char *func, const char *arg);

/* The address an argument stands for: None -> NULL, an int -> that address,
 * else the buffer of an object with the buffer protocol (contiguous; writable
 * when `writable`), which *have_view says must be released with
 * PyBuffer_Release(view). Returns -1 with a Python exception set. */
int conv_py_get_pointer(PyObject *obj, int writable, void **ptr, Py_buffer *view, int *have_view);

/* Longest string a (char *name, size_t capacity) output may hold. */
#define CONV_PY_MAX_STRING 4096

/* Most communicators one call creates (conv_comm_create_local allows 1024). */
#define CONV_PY_MAX_RANKS 1024

/* The most algorithm ids conv_algo_list returns through the binding (one
 * engine's: conv.h's values and a private range of 100). */
#define CONV_PY_MAX_ALGOS 256

/* A count (an int) or, when `devices` is not NULL, a sequence of at most
 * CONV_PY_MAX_RANKS ints copied into `devices`; *n receives the count.
 * Returns -1 with a Python exception set. */
int conv_py_devices_arg(PyObject *arg, int *devices, int *n, const char *func);
/* (status, conv_last_error()) as a tuple, for calls whose status is data. */
PyObject *conv_py_status_tuple(int status);

/* Result buffers of conv_find_algorithms. */
typedef struct conv_py_find_buffers {
    int capacity;
    conv_algo_t *algos;
    double *milliseconds;
    size_t *workspace_bytes;
} conv_py_find_buffers;
int conv_py_find_prepare(PyObject *capacity, conv_py_find_buffers *b);
/* A list of `count` tuples (algo, milliseconds, workspace_bytes). */
PyObject *conv_py_find_results(const conv_py_find_buffers *b, int count);
void conv_py_find_free(conv_py_find_buffers *b);

/* py_dlpack_export(owner, address, shape, strides, type_code, bits,
 *                  device_type, device_id, readonly, versioned) -> capsule
 * A DLPack capsule ("dltensor", or "dltensor_versioned" when `versioned`)
 * for memory at `address`; `strides` in elements (None: compact row-major).
 * The capsule, and the consumer after it, hold a reference to `owner` until
 * the DLManagedTensor's deleter runs. */
PyObject *conv_py_dlpack_export(PyObject *self, PyObject *args);

/* py_dlpack_import(capsule) -> (holder, address, shape, strides, type_code,
 *                               bits, lanes, device_type, device_id, readonly)
 * Consumes a DLPack capsule (renaming it "used_dltensor[_versioned]"):
 * `holder` calls the producer's deleter when it is garbage-collected, so it
 * must be kept alive as long as the memory is used. `address` includes the
 * byte offset; `strides` is None for compact row-major. */
PyObject *conv_py_dlpack_import(PyObject *self, PyObject *args);

/* py_buffer_info(obj) -> (address, shape, strides in elements, format,
 * itemsize, readonly) of a buffer-protocol object (a NumPy array), in one
 * call: what wrapping an array reads, which from Python attributes cost
 * several microseconds. Strides that are not whole elements come back as
 * None (the caller's slow path words the error). Raises BufferError (or
 * TypeError) for objects without a strided buffer. */
PyObject *conv_py_buffer_info(PyObject *self, PyObject *args);

#endif /* CONV_PYGLUE_H */
