/* pyglue.c -- see pyglue.h. */
#include "pyglue.h"

#include <stdlib.h>
#include <string.h>

/* ================================================================ errors */

void conv_py_raise(int status) {
    /* Read the message first: it is valid until the next libconv call. */
    const char *msg = conv_last_error();
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    if (!text) return;

    static PyObject *factory = NULL; /* libconv._errors._from_status, kept */
    if (!factory) {
        PyObject *mod = PyImport_ImportModule("libconv._errors");
        if (mod) {
            factory = PyObject_GetAttrString(mod, "_from_status");
            Py_DECREF(mod);
        }
        if (!factory) {
            /* The low-level module used outside its package: still say it. */
            PyErr_Clear();
            PyErr_Format(PyExc_RuntimeError, "libconv: %s: %U",
                         conv_status_string((conv_status_t)status), text);
            Py_DECREF(text);
            return;
        }
    }
    PyObject *exc = PyObject_CallFunction(factory, "iO", status, text);
    Py_DECREF(text);
    if (!exc) return; /* the factory's own exception stands */
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
}

/* ================================================================== dims */

/* No dim, stride or padding is ever INT64_MIN. */
#define CONV_PY_DIMS_SENTINEL INT64_MIN

void conv_py_dims_prepare(int64_t *dims) {
    for (int i = 0; i < CONV_PY_MAX_DIMS; ++i) dims[i] = CONV_PY_DIMS_SENTINEL;
}

PyObject *conv_py_dims_tuple(const int64_t *dims) {
    Py_ssize_t n = 0;
    while (n < CONV_PY_MAX_DIMS && dims[n] != CONV_PY_DIMS_SENTINEL) ++n;
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *v = PyLong_FromLongLong(dims[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

int conv_py_dims_from_sequence(PyObject *seq, int64_t *dims, const char *func, const char *arg) {
    PyObject *fast = PySequence_Fast(seq, "");
    if (!fast) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a sequence of ints, not %.100s", func, arg,
                     Py_TYPE(seq)->tp_name);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > CONV_PY_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "%s: %s has %zd values, at most %d are accepted", func,
                     arg, n, CONV_PY_MAX_DIMS);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *index = PyNumber_Index(PySequence_Fast_GET_ITEM(fast, i));
        if (!index) {
            PyErr_Format(PyExc_TypeError, "%s: %s[%zd] must be an int", func, arg, i);
            Py_DECREF(fast);
            return -1;
        }
        long long v = PyLong_AsLongLong(index);
        Py_DECREF(index);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        dims[i] = (int64_t)v;
    }
    for (Py_ssize_t i = n; i < CONV_PY_MAX_DIMS; ++i) dims[i] = 0;
    Py_DECREF(fast);
    return 0;
}

/* ========================================================= communicators */

int conv_py_devices_arg(PyObject *arg, int *devices, int *n, const char *func) {
    if (PyLong_Check(arg) || !devices) {
        long v = PyLong_AsLong(arg);
        if (v == -1 && PyErr_Occurred()) return -1;
        if (v < 0 || v > CONV_PY_MAX_RANKS) {
            PyErr_Format(PyExc_ValueError, "%s: count %ld out of range 0..%d", func, v,
                         CONV_PY_MAX_RANKS);
            return -1;
        }
        *n = (int)v;
        return 0;
    }
    PyObject *fast = PySequence_Fast(arg, "");
    if (!fast) {
        PyErr_Format(PyExc_TypeError, "%s: devices must be a count or a sequence of ints", func);
        return -1;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    if (len > CONV_PY_MAX_RANKS) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: %zd devices, at most %d", func, len, CONV_PY_MAX_RANKS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; ++i) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        devices[i] = (int)v;
    }
    Py_DECREF(fast);
    *n = (int)len;
    return 0;
}

PyObject *conv_py_status_tuple(int status) {
    const char *msg = conv_last_error();
    return Py_BuildValue("(is)", status, msg);
}

/* ================================================================ memory */

int conv_py_get_pointer(PyObject *obj, int writable, void **ptr, Py_buffer *view, int *have_view) {
    *have_view = 0;
    if (obj == Py_None) {
        *ptr = NULL;
        return 0;
    }
    if (PyLong_Check(obj)) {
        void *p = PyLong_AsVoidPtr(obj);
        if (!p && PyErr_Occurred()) return -1;
        *ptr = p;
        return 0;
    }
    if (PyObject_GetBuffer(obj, view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) return -1;
    *have_view = 1;
    *ptr = view->buf;
    return 0;
}

PyObject *conv_py_buffer_info(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "O:py_buffer_info", &obj)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO) < 0) return NULL;
    PyObject *shape = PyTuple_New(view.ndim), *strides = NULL, *result = NULL;
    int whole = view.itemsize > 0;
    if (!shape) goto done;
    for (int i = 0; i < view.ndim; i++) {
        PyObject *d = PyLong_FromSsize_t(view.shape[i]);
        if (!d) goto done;
        PyTuple_SET_ITEM(shape, i, d);
        if (whole && view.strides[i] % view.itemsize) whole = 0;
    }
    if (whole) {
        strides = PyTuple_New(view.ndim);
        if (!strides) goto done;
        for (int i = 0; i < view.ndim; i++) {
            PyObject *s = PyLong_FromSsize_t(view.strides[i] / view.itemsize);
            if (!s) goto done;
            PyTuple_SET_ITEM(strides, i, s);
        }
    } else {
        Py_INCREF(Py_None);
        strides = Py_None;
    }
    result = Py_BuildValue("(NOOsnO)", PyLong_FromVoidPtr(view.buf), shape, strides,
                           view.format ? view.format : "B", view.itemsize,
                           view.readonly ? Py_True : Py_False);
done:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    PyBuffer_Release(&view);
    return result;
}

/* ====================================================== algorithm search */

int conv_py_find_prepare(PyObject *capacity, conv_py_find_buffers *b) {
    memset(b, 0, sizeof *b);
    long c = PyLong_AsLong(capacity);
    if (c == -1 && PyErr_Occurred()) return -1;
    if (c < 0 || c > 4096) {
        PyErr_Format(PyExc_ValueError, "capacity %ld out of range 0..4096", c);
        return -1;
    }
    size_t n = c > 0 ? (size_t)c : 1;
    b->capacity = (int)c;
    b->algos = PyMem_Calloc(n, sizeof *b->algos);
    b->milliseconds = PyMem_Calloc(n, sizeof *b->milliseconds);
    b->workspace_bytes = PyMem_Calloc(n, sizeof *b->workspace_bytes);
    if (!b->algos || !b->milliseconds || !b->workspace_bytes) {
        conv_py_find_free(b);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

PyObject *conv_py_find_results(const conv_py_find_buffers *b, int count) {
    if (count < 0) count = 0;
    if (count > b->capacity) count = b->capacity;
    PyObject *list = PyList_New(count);
    if (!list) return NULL;
    for (int i = 0; i < count; ++i) {
        PyObject *item = Py_BuildValue("(idn)", (int)b->algos[i], b->milliseconds[i],
                                       (Py_ssize_t)b->workspace_bytes[i]);
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

void conv_py_find_free(conv_py_find_buffers *b) {
    PyMem_Free(b->algos);
    PyMem_Free(b->milliseconds);
    PyMem_Free(b->workspace_bytes);
    b->algos = NULL;
    b->milliseconds = NULL;
    b->workspace_bytes = NULL;
}

/* ================================================================ DLPack */

/* The DLPack ABI (dlpack.h, v1.0), declared here to need no extra header. */
typedef struct {
    int32_t device_type; /* DLDeviceType: kDLCPU = 1, kDLCUDA = 2, ... */
    int32_t device_id;
} DLDevice;

typedef struct {
    uint8_t code; /* kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, ... */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define CONV_DLPACK_MAJOR 1
#define CONV_DLPACK_MINOR 0
#define CONV_DLPACK_FLAG_READ_ONLY ((uint64_t)1 << 0)
#define CONV_DLPACK_MAX_NDIM 32

/* --------------------------------------------------------------- export */

typedef struct {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
    PyObject *owner;
    int64_t shape[CONV_DLPACK_MAX_NDIM];
    int64_t strides[CONV_DLPACK_MAX_NDIM];
} export_ctx;

static void export_release(export_ctx *c) {
    /* A consumer may call the deleter from any thread, or after the
     * interpreter is gone (then the owner is leaked rather than crash). */
    if (Py_IsInitialized()) {
        PyGILState_STATE st = PyGILState_Ensure();
        Py_XDECREF(c->owner);
        PyGILState_Release(st);
    }
    free(c);
}

static void legacy_deleter(DLManagedTensor *m) { export_release((export_ctx *)m->manager_ctx); }
static void versioned_deleter(DLManagedTensorVersioned *m) {
    export_release((export_ctx *)m->manager_ctx);
}

/* A capsule never consumed still owns its tensor. */
static void legacy_capsule_destructor(PyObject *capsule) {
    if (!PyCapsule_IsValid(capsule, "dltensor")) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
    if (m && m->deleter) m->deleter(m);
    PyErr_Restore(type, value, tb);
}

static void versioned_capsule_destructor(PyObject *capsule) {
    if (!PyCapsule_IsValid(capsule, "dltensor_versioned")) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    if (m && m->deleter) m->deleter(m);
    PyErr_Restore(type, value, tb);
}

static int read_int64s(PyObject *seq, int64_t *out, Py_ssize_t *n, const char *what) {
    PyObject *fast = PySequence_Fast(seq, "");
    if (!fast) {
        PyErr_Format(PyExc_TypeError, "py_dlpack_export: %s must be a sequence of ints", what);
        return -1;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    if (len > CONV_DLPACK_MAX_NDIM) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "py_dlpack_export: %s has %zd values, at most %d", what,
                     len, CONV_DLPACK_MAX_NDIM);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; ++i) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        out[i] = (int64_t)v;
    }
    Py_DECREF(fast);
    *n = len;
    return 0;
}

PyObject *conv_py_dlpack_export(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *owner, *address, *shape, *strides;
    int code, bits, device_type, device_id, readonly, versioned;
    if (!PyArg_ParseTuple(args, "OOOOiiiipp:py_dlpack_export", &owner, &address, &shape,
                          &strides, &code, &bits, &device_type, &device_id, &readonly,
                          &versioned))
        return NULL;
    void *data = PyLong_AsVoidPtr(address);
    if (!data && PyErr_Occurred()) return NULL;

    export_ctx *c = calloc(1, sizeof *c);
    if (!c) return PyErr_NoMemory();
    Py_ssize_t ndim = 0, nstrides = 0;
    if (read_int64s(shape, c->shape, &ndim, "shape") < 0) goto fail;
    if (strides != Py_None) {
        if (read_int64s(strides, c->strides, &nstrides, "strides") < 0) goto fail;
        if (nstrides != ndim) {
            PyErr_Format(PyExc_ValueError, "py_dlpack_export: %zd strides for %zd dims", nstrides,
                         ndim);
            goto fail;
        }
    }

    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = device_type;
    t.device.device_id = device_id;
    t.ndim = (int32_t)ndim;
    t.dtype.code = (uint8_t)code;
    t.dtype.bits = (uint8_t)bits;
    t.dtype.lanes = 1;
    t.shape = c->shape;
    t.strides = strides != Py_None ? c->strides : NULL;
    t.byte_offset = 0;

    PyObject *capsule;
    Py_INCREF(owner);
    c->owner = owner;
    if (versioned) {
        c->versioned.version.major = CONV_DLPACK_MAJOR;
        c->versioned.version.minor = CONV_DLPACK_MINOR;
        c->versioned.manager_ctx = c;
        c->versioned.deleter = versioned_deleter;
        c->versioned.flags = readonly ? CONV_DLPACK_FLAG_READ_ONLY : 0;
        c->versioned.dl_tensor = t;
        capsule = PyCapsule_New(&c->versioned, "dltensor_versioned", versioned_capsule_destructor);
    } else {
        c->legacy.dl_tensor = t;
        c->legacy.manager_ctx = c;
        c->legacy.deleter = legacy_deleter;
        capsule = PyCapsule_New(&c->legacy, "dltensor", legacy_capsule_destructor);
    }
    if (!capsule) {
        Py_DECREF(owner);
        goto fail;
    }
    return capsule;

fail:
    free(c);
    return NULL;
}

/* --------------------------------------------------------------- import */

/* Keeps an imported DLManagedTensor[Versioned] and calls its deleter when
 * collected. */
typedef struct {
    PyObject_HEAD
    void *managed;
    int versioned;
} dlpack_holder;

static void dlpack_holder_dealloc(PyObject *obj) {
    dlpack_holder *h = (dlpack_holder *)obj;
    if (h->managed) {
        if (h->versioned) {
            DLManagedTensorVersioned *m = h->managed;
            if (m->deleter) m->deleter(m);
        } else {
            DLManagedTensor *m = h->managed;
            if (m->deleter) m->deleter(m);
        }
        h->managed = NULL;
    }
    PyTypeObject *type = Py_TYPE(obj);
    type->tp_free(obj);
    Py_DECREF(type);
}

static PyType_Slot dlpack_holder_slots[] = {
    {Py_tp_dealloc, (void *)dlpack_holder_dealloc},
    {Py_tp_doc, (void *)"Owns memory imported through DLPack; frees it when collected."},
    {0, NULL},
};

static PyType_Spec dlpack_holder_spec = {
    "libconv._libconv.DLPackHolder", sizeof(dlpack_holder), 0, Py_TPFLAGS_DEFAULT,
    dlpack_holder_slots,
};

PyObject *conv_py_dlpack_import(PyObject *self, PyObject *args) {
    (void)self;
    static PyObject *holder_type = NULL;
    PyObject *capsule;
    if (!PyArg_ParseTuple(args, "O:py_dlpack_import", &capsule)) return NULL;
    if (!holder_type) {
        holder_type = PyType_FromSpec(&dlpack_holder_spec);
        if (!holder_type) return NULL;
    }

    int versioned;
    DLTensor *t;
    void *managed;
    int readonly = 0;
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        if (!m) return NULL;
        if (m->version.major != CONV_DLPACK_MAJOR) {
            PyErr_Format(PyExc_BufferError,
                         "DLPack version %u.%u is not supported (libconv reads %d.x)",
                         m->version.major, m->version.minor, CONV_DLPACK_MAJOR);
            return NULL;
        }
        versioned = 1;
        managed = m;
        t = &m->dl_tensor;
        readonly = (m->flags & CONV_DLPACK_FLAG_READ_ONLY) != 0;
    } else if (PyCapsule_IsValid(capsule, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
        if (!m) return NULL;
        versioned = 0;
        managed = m;
        t = &m->dl_tensor;
    } else {
        PyErr_SetString(PyExc_TypeError,
                        "expected an unconsumed DLPack capsule (named \"dltensor\" or "
                        "\"dltensor_versioned\")");
        return NULL;
    }
    if (t->ndim < 0 || t->ndim > CONV_DLPACK_MAX_NDIM || (t->ndim > 0 && !t->shape)) {
        PyErr_Format(PyExc_BufferError, "DLPack tensor with a bad rank %d", (int)t->ndim);
        return NULL;
    }

    /* From here the holder owns the tensor: any failure below frees it. */
    dlpack_holder *h = PyObject_New(dlpack_holder, (PyTypeObject *)holder_type);
    if (!h) return NULL;
    h->managed = managed;
    h->versioned = versioned;
    if (PyCapsule_SetName(capsule, versioned ? "used_dltensor_versioned" : "used_dltensor") < 0) {
        h->managed = NULL; /* still the capsule's */
        Py_DECREF(h);
        return NULL;
    }

    PyObject *shape = PyTuple_New(t->ndim);
    PyObject *strides = t->strides ? PyTuple_New(t->ndim) : (Py_INCREF(Py_None), Py_None);
    if (!shape || !strides) goto fail;
    for (int i = 0; i < t->ndim; ++i) {
        PyObject *v = PyLong_FromLongLong(t->shape[i]);
        if (!v) goto fail;
        PyTuple_SET_ITEM(shape, i, v);
        if (t->strides) {
            v = PyLong_FromLongLong(t->strides[i]);
            if (!v) goto fail;
            PyTuple_SET_ITEM(strides, i, v);
        }
    }
    PyObject *result = Py_BuildValue(
        "(NNNNiiiiiO)", (PyObject *)h, PyLong_FromVoidPtr((char *)t->data + t->byte_offset),
        shape, strides, (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes,
        (int)t->device.device_type, (int)t->device.device_id, readonly ? Py_True : Py_False);
    return result; /* "N" stole h, shape and strides, also on failure */

fail:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_DECREF(h);
    return NULL;
}
