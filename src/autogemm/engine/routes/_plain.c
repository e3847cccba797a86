/* The plainest call, ``gemm(a, b)`` of numpy arrays that the host's BLAS took before, in C: the same steps
 * as ``host_blas.plain_product`` (which it replaces where it is built), without the interpreter's cost of
 * each, which is most of the gap to numpy's own call on a product it finishes in a microsecond or two.
 *
 * Built against Python's limited API (one build serves every Python from 3.10), with no numpy headers:
 * it reads the arrays as any Python object (their type, ``shape`` and ``dtype``) and leaves the table of
 * routes, their currency and the product itself to ``host_blas`` (``bind`` hands it what it needs).
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <time.h>

static PyObject *routes;       /* host_blas.PLAIN_ROUTES: shapes -> list of (dtype_a, dtype_b, route) */
static PyObject *ndarray;      /* numpy.ndarray */
static PyObject *store;        /* profiles.store (FORGETS) */
static PyObject *workload;     /* autogemm.workload (RECORDER) */
static PyObject *monotonic;    /* time.monotonic */
static PyObject *s_shape, *s_dtype, *s_until, *s_forgets, *s_product, *s_current, *s_FORGETS, *s_RECORDER;

/* The monotonic clock's seconds, as ``time.monotonic`` reads them (on Linux the same clock, read here
 * without a call into Python); NULL on an error. */
static PyObject *now(void) {
#ifdef __linux__
    struct timespec t;
    if (clock_gettime(CLOCK_MONOTONIC, &t) == 0) {        /* (rounded as CPython rounds its nanoseconds) */
        long long ns = (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
        return PyFloat_FromDouble(ns % 1000000000LL ? (double)ns / 1e9 : (double)(ns / 1000000000LL));
    }
#endif
    return PyObject_CallNoArgs(monotonic);
}

/* Whether a route is current by its quick test (``HostRoute.current``'s first, without the call): the
 * monotonic clock before its ``until`` and ``store.FORGETS`` its ``forgets``; -1 on an error. */
static int quick_current(PyObject *route) {
    PyObject *until = PyObject_GetAttr(route, s_until);
    if (!until) return -1;
    PyObject *clock = now();
    if (!clock) { Py_DECREF(until); return -1; }
    int sooner = PyObject_RichCompareBool(clock, until, Py_LT);
    Py_DECREF(clock);
    Py_DECREF(until);
    if (sooner != 1) return sooner;
    PyObject *forgets = PyObject_GetAttr(route, s_forgets);
    if (!forgets) return -1;
    PyObject *count = PyObject_GetAttr(store, s_FORGETS);
    if (!count) { Py_DECREF(forgets); return -1; }
    int same = forgets == count ? 1 : PyObject_RichCompareBool(forgets, count, Py_EQ);
    Py_DECREF(count);
    Py_DECREF(forgets);
    return same;
}

/* The dtype test of ``plain_product``: identity, else equality; -1 on an error. */
static int same_dtype(PyObject *x, PyObject *kept) {
    PyObject *dtype = PyObject_GetAttr(x, s_dtype);
    if (!dtype) return -1;
    int same = dtype == kept ? 1 : PyObject_RichCompareBool(dtype, kept, Py_EQ);
    Py_DECREF(dtype);
    return same;
}

/* The product of one kept route, or None where it is no longer current. */
static PyObject *through(PyObject *route, PyObject *a, PyObject *b) {
    int current = quick_current(route);
    if (current == 0) {
        PyObject *method = PyObject_GetAttr(route, s_current);
        if (!method) return NULL;
        PyObject *asked = PyObject_CallNoArgs(method);
        Py_DECREF(method);
        if (!asked) return NULL;
        current = PyObject_IsTrue(asked);
        Py_DECREF(asked);
    }
    if (current < 0) return NULL;
    if (!current) Py_RETURN_NONE;
    PyObject *product = PyObject_GetAttr(route, s_product);
    if (!product) return NULL;
    PyObject *done = PyObject_CallFunctionObjArgs(product, a, b, NULL);
    Py_DECREF(product);
    return done;
}

static PyObject *plain_product(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "plain_product takes a and b");
        return NULL;
    }
    PyObject *a = args[0], *b = args[1];
    if (!routes || (PyObject *)Py_TYPE(a) != ndarray || (PyObject *)Py_TYPE(b) != ndarray) Py_RETURN_NONE;
    PyObject *recorder = PyObject_GetAttr(workload, s_RECORDER);
    if (!recorder) return NULL;
    int recording = recorder != Py_None;
    Py_DECREF(recorder);
    if (recording) Py_RETURN_NONE;
    PyObject *shape_a = PyObject_GetAttr(a, s_shape);
    if (!shape_a) return NULL;
    PyObject *shape_b = PyObject_GetAttr(b, s_shape);
    if (!shape_b) { Py_DECREF(shape_a); return NULL; }
    int matrix = PyObject_Length(shape_a) == 2;
    PyObject *key = PySequence_Concat(shape_a, shape_b);
    Py_DECREF(shape_a);
    Py_DECREF(shape_b);
    if (!key) return NULL;
    PyObject *kept = PyDict_GetItemWithError(routes, key);     /* borrowed */
    Py_DECREF(key);
    if (!kept) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    if (!matrix) Py_RETURN_NONE;
    if (!PyList_Check(kept)) {
        PyErr_SetString(PyExc_TypeError, "a plain route's table holds lists");
        return NULL;
    }
    Py_INCREF(kept);                    /* (the table may change under a call it makes) */
    PyObject *found = NULL;
    Py_ssize_t count = PyList_Size(kept);
    for (Py_ssize_t i = 0; i < count; ++i) {
        PyObject *entry = PyList_GetItem(kept, i);             /* (dtype_a, dtype_b, route) */
        if (!entry) goto done;
        if (!PyTuple_Check(entry) || PyTuple_Size(entry) != 3) {
            PyErr_SetString(PyExc_ValueError, "a plain route is (dtype_a, dtype_b, route)");
            goto done;
        }
        Py_INCREF(entry);               /* (held while its route's Python runs) */
        int same = same_dtype(a, PyTuple_GetItem(entry, 0));
        if (same == 1) same = same_dtype(b, PyTuple_GetItem(entry, 1));
        if (same == 1)                  /* the first route of these dtypes decides */
            found = through(PyTuple_GetItem(entry, 2), a, b);
        Py_DECREF(entry);
        if (same != 0) goto done;       /* (its answer, or an error) */
    }
    found = Py_None;
    Py_INCREF(found);
done:
    Py_DECREF(kept);
    return found;
}

static PyObject *bind(PyObject *module, PyObject *args) {
    PyObject *new_routes, *new_ndarray, *new_store, *new_workload, *new_monotonic;
    if (!PyArg_ParseTuple(args, "OOOOO", &new_routes, &new_ndarray, &new_store, &new_workload, &new_monotonic))
        return NULL;
    if (!PyDict_Check(new_routes)) {
        PyErr_SetString(PyExc_TypeError, "bind takes the routes' dict first");
        return NULL;
    }
    PyObject **slots[] = {&routes, &ndarray, &store, &workload, &monotonic};
    PyObject *given[] = {new_routes, new_ndarray, new_store, new_workload, new_monotonic};
    for (int i = 0; i < 5; ++i) {
        PyObject *old = *slots[i];
        Py_INCREF(given[i]);
        *slots[i] = given[i];
        Py_XDECREF(old);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"plain_product", (PyCFunction)(void (*)(void))plain_product, METH_FASTCALL,
     "host_blas.plain_product, in C (a and b; None where no kept route takes them)."},
    {"bind", bind, METH_VARARGS,
     "bind(routes, ndarray, store, workload, monotonic): what plain_product reads."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef plain_module = {PyModuleDef_HEAD_INIT, "_plain", NULL, -1, methods};

PyMODINIT_FUNC PyInit__plain(void) {
    const char *names[] = {"shape", "dtype", "until", "forgets", "product", "current", "FORGETS", "RECORDER"};
    PyObject **slots[] = {&s_shape, &s_dtype, &s_until, &s_forgets, &s_product, &s_current, &s_FORGETS,
                          &s_RECORDER};
    for (int i = 0; i < 8; ++i)
        if (!(*slots[i] = PyUnicode_InternFromString(names[i]))) return NULL;
    return PyModule_Create(&plain_module);
}
