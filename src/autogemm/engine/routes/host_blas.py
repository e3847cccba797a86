"""Products of numpy operands that the host's own BLAS (numpy's) finishes sooner than the device: where
the device's profile measured it so (``Thresholds.host_multiply_adds``, measured by ``tune``'s routes
step), a call of numpy arrays with fewer multiply-adds runs there, in the calling thread, so that
``gemm`` is never slower than the ``a @ b`` the user already has. ``backend='opencl'`` (or 'cuda') keeps
a call on the device."""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ... import workload
from ...accuracy import apply_op
from ...profiles import current_until, profile_for, store, thresholds_for
from ...profiles.thresholds import HOST_DTYPES
from ...runtime.opencl.device import Device
from ...runtime.opencl.discovery import find_device
from ...shares.host import HostGemm
from ..call import GemmCall, GemmOptions, checked_scalars

#: The host routes of plain calls, ``gemm(a, b)`` of numpy arrays with every option its default, by the
#: operands' shapes (``a.shape + b.shape``), each with the operands' dtypes it was resolved for (with the
#: shapes, all the host's route depends on): the commonest call, and where the host's BLAS takes a product
#: it finishes in microseconds, in which the engine's own checks and lookups would cost half as much again.
PLAIN_ROUTES: dict[tuple[int, ...], list[PlainRoute]] = {}
#: Products' shapes whose plain calls' routes are kept at most (a program runs a few; past them the table
#: starts again).
PLAIN_CAPACITY = 256
#: Products of fewer multiply-adds are numpy's ``ndarray.dot``, larger ones its matmul (``a @ b``): both
#: reach its BLAS, but dot skips matmul's ufunc machinery, a share of a tiny product's time, while on some
#: hosts matmul ran larger products faster (the GEMM guide's ``host_multiply_adds`` row has the figures).
DOT_BELOW_MULTIPLY_ADDS = 2**20
#: numpy's array type and the clock of ``HostRoute.until``, looked up once (``plain_product``).
_NDARRAY, _MONOTONIC = np.ndarray, time.monotonic
#: A plain call's scalars, ops, edge and backend (its other options are None): both scalars floats.
PLAIN = (1.0, 0.0, "N", "N", "auto", "auto")


def plain_product_py(a: object, b: object) -> np.ndarray | None:
    """``a @ b`` (as ``HostRoute.run`` computes it) where a plain call of such operands resolved to the host's
    BLAS before, under the device's profile of now; None where none did (nor while ``AUTOGEMM_RECORD``
    records calls). ``plain_product`` is this, in C where the package was built with it (``_plain.c``)."""
    # (each step here is a share of a 64^3 product's few microseconds: numpy's dtypes of its own types are
    # one object each, so that identity stands for equality where it holds; a dtype made anew, as by
    # unpickling, is compared; the key's four dimensions are two matrices' only where a is one)
    if type(a) is not _NDARRAY or type(b) is not _NDARRAY or workload.RECORDER is not None:
        return None
    for dtype_a, dtype_b, route in PLAIN_ROUTES.get(a.shape + b.shape, ()):
        if (a.dtype is dtype_a or a.dtype == dtype_a) and (b.dtype is dtype_b or b.dtype == dtype_b) and a.ndim == 2:
            # (``route.current()``'s quick answer first, without the call)
            if (_MONOTONIC() < route.until and store.FORGETS == route.forgets) or route.current():
                return route.product(a, b)
            return None
    return None


class PlainRoute(NamedTuple):
    """A plain call's host route, for operands of these dtypes."""

    dtype_a: np.dtype
    dtype_b: np.dtype
    route: HostRoute


def host_route(call: GemmCall) -> HostRoute | None:
    """The host's route of a call, or None where the device runs it: numpy operands of a dtype numpy
    computes natively, computed in their own precision (a 3xTF32 call's short product too), with no
    option only a device has, of fewer multiply-adds than the device's profile measured the host faster
    for."""
    o = call.options
    if o.backend != "auto" or o.opencl_only() or call.dt.precision:
        return None
    if call.dt.key not in HOST_DTYPES or call.batch is not None:
        return None
    if o.out_dtype is not None and np.dtype(o.out_dtype) != call.dt.numpy:     # (the operands' own: as none)
        return None
    if not all(isinstance(x, np.ndarray) for x in (call.a, call.b, call.c) if x is not None):
        return None
    device = find_device(o.device)
    if call.m * call.n * call.k >= thresholds_for(device).host_below(call.dt.key):
        return None
    route = HostRoute(call, device)
    if call.c is None and plain(*o):
        key = call.a.shape + call.b.shape
        if key not in PLAIN_ROUTES and len(PLAIN_ROUTES) >= PLAIN_CAPACITY:
            PLAIN_ROUTES.clear()
        dtypes = (call.a.dtype, call.b.dtype)
        others = [kept for kept in PLAIN_ROUTES.get(key, ()) if (kept.dtype_a, kept.dtype_b) != dtypes]
        PLAIN_ROUTES[key] = [PlainRoute(call.a.dtype, call.b.dtype, route), *others]
    return route


def plain(alpha: object, beta: object, trans_a: object, trans_b: object, device: object, config: object,
          edge: object, precision: object, out_dtype: object, wait_for: object, devices: object, split: object,
          backend: object, stream: object) -> bool:
    """Whether a call's options (``GemmOptions``' fields in their order) are a plain call's: ``PLAIN``'s
    scalars (floats), ops, edge and backend, every other option None. (Asked of every ``gemm`` call
    before its options are made: identity where a value's own equality could mislead, as numpy's
    dtype float64, which equals None.)"""
    return (device is None and config is None and precision is None and out_dtype is None and wait_for is None
            and devices is None and split is None and stream is None and type(alpha) is float
            and type(beta) is float and (alpha, beta, trans_a, trans_b, edge, backend) == PLAIN)


class HostRoute:
    """A call resolved on the host's BLAS: ``run`` computes it in the calling thread, into ``c`` (through
    a row-major copy where ``c`` is not one, ``shares.host.HostGemm``) or a new array (numpy's own
    product, scaled)."""

    def __init__(self, call: GemmCall, device: Device) -> None:
        self.dt, self.shape, self.has_c = call.dt, call.shape, call.c is not None
        #: numpy's product of two matrices (``DOT_BELOW_MULTIPLY_ADDS``)
        self.product = np.ndarray.dot if call.m * call.n * call.k < DOT_BELOW_MULTIPLY_ADDS else operator.matmul
        self.trans = (call.options.trans_a.upper(), call.options.trans_b.upper())
        self.device, self.profile = device, profile_for(device)
        #: until when (``time.monotonic``) and under which count of ``profiles.store.forget`` s the profile
        #: is known to be still the device's (``profiles.current_until``): asked again only after
        self.forgets, self.until = store.FORGETS, current_until(device, self.profile)
        #: what ``AUTOGEMM_RECORD`` records of each call: the product as the call states it
        self.recorded = ("gemm", call.dt.key, "NT"[call.op_a.transposed] + "NT"[call.op_b.transposed],
                         call.m, call.n, call.k)

    def current(self) -> bool:
        """Whether the device's profile, whose thresholds chose the host, is still the one it was (asked
        at most once a ``profiles.current_until``: a kept host route's call costs microseconds)."""
        if time.monotonic() < self.until and store.FORGETS == self.forgets:
            return True
        self.forgets, self.until = store.FORGETS, current_until(self.device, self.profile)
        return self.until > 0.0

    def run(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None, options: GemmOptions) -> np.ndarray:
        if workload.RECORDER is not None:
            workload.RECORDER.record(*self.recorded)
        alpha, beta = checked_scalars(options, self.dt, self.has_c)
        if c is None and alpha == 0:            # (no product: BLAS's quick return)
            return np.zeros(self.shape, self.dt.numpy)
        if c is None:               # (the commonest call, and a product the host finishes in microseconds)
            out = self.product(apply_op(a, self.trans[0]), apply_op(b, self.trans[1]))
            if alpha != 1:
                out *= alpha
            return out
        out = c if c.flags.c_contiguous else np.empty(self.shape, self.dt.numpy)
        if out is not c and beta != 0:
            out[...] = c
        HostGemm(self.dt, a, b, out, *self.trans, alpha, beta).on_host(0, self.shape[0])
        if out is not c:
            c[...] = out
            return c
        return out


def _compiled_plain_product() -> Callable[[object, object], np.ndarray | None] | None:
    """``_plain.plain_product`` bound to this module's table and the state it reads, where the extension
    was built (not without a C compiler at install, nor on a Python older than its limited API)."""
    try:
        from . import _plain
    except ImportError:
        return None
    _plain.bind(PLAIN_ROUTES, np.ndarray, store, workload, time.monotonic)
    return _plain.plain_product


#: ``gemm``'s first step for a call with no option (``plain_product_py``'s steps, in C where built: for a
#: product numpy finishes in a microsecond or two, the interpreter's cost of those steps is most of the gap).
plain_product = _compiled_plain_product() or plain_product_py
