"""The one entry of every GEMM call below the public functions: a repeated call signature finds its
resolved route (``resolved``) and only binds the call's memory, scalars and events; any other call is
validated once (``call.GemmCall``) and handed to the route that takes it:

- CUDA tensors: the CUDA path, where they lie (``routes.cuda_tensors``);
- ``devices=``: C's rows shared among GPUs and the host's BLAS (``routes.targets``);
- numpy operands of a product the device's profile measured the host's BLAS faster for: numpy's BLAS in
  the calling thread (``routes.host_blas``);
- numpy operands on a Hopper GPU, in the dtypes whose fastest kernels only CUDA reaches: the CUDA path
  through page-locked copies (``routes.cuda_host``), strided batches of numpy stacks too;
- numpy operands too large to cross in row blocks: streamed through the device (``routes.targets``);
- anything else: one OpenCL device (``routes.opencl``)."""

from __future__ import annotations

import numpy as np

from ..blas import plan_cache
from ..blas.problem import alignment_class
from ..errors import ArgumentError
from ..profiles import thresholds_for
from ..runtime import live_contexts
from ..runtime.cuda import live_cuda_contexts
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.discovery import find_device
from ..shares.staging import release_page_locked
from .call import GemmCall, GemmOptions
from .operands import Matrix, as_matrix
from .resolved import ROUTES
from .routes import cuda_host
from .routes.cuda_host import CudaHostRoute
from .routes.cuda_tensors import run_tensors, tensors_among
from .routes.host_blas import PLAIN_ROUTES, HostRoute, host_route
from .routes.opencl import OpenCLRoute
from .routes.targets import run_on_targets
from .transfer import large_on_host


def run_gemm(a: Matrix, b: Matrix, c: Matrix | None, batch: int | None, options: GemmOptions) -> Matrix:
    """C = alpha op(A) op(B) + beta C: one product of matrices or CUDA tensors (``batch`` None), or a
    strided batch of ``batch`` products where ``a``, ``b`` and ``c`` are checked stacks along their first
    dimension (``a`` or ``b`` a matrix, or a stack of one, is used in every product). A call whose
    signature has a route kept was checked when the route was made: it only binds its memory, scalars
    and events."""
    key = call_signature(a, b, c, batch, options)
    route = ROUTES.get(key) if options.stream is None else None
    if route is None:
        options.check()
        if batch is None and tensors_among(a, b, c):
            return run_tensors(a, b, c, options)
        if options.stream is not None:
            raise ArgumentError("stream is for CUDA tensors; numpy and pyopencl operands run on their own queue")
        if batch is None:
            a, b = (as_matrix(x, name, "for a vector use autogemm.gemv or autogemm.matmul",
                              "for stacks of matrices use autogemm.matmul or autogemm.gemm_batched")
                    for x, name in ((a, "a"), (b, "b")))
            c = None if c is None else as_matrix(c, "c")
        call = GemmCall.build(a, b, c, batch, options)
        call = call.in_working_dtype()
        if batch is None:
            done = _elsewhere(call, key)
            if done is not None:
                return done
        route = ROUTES.keep(key, (batch is not None and cuda_host.cuda_host_route(call)) or OpenCLRoute(call))
    done = route.run(a, b, c, options)
    if done is None:                    # the CUDA path failed the call (out of memory, say): OpenCL takes it
        return run_gemm(a, b, c, batch, options._replace(backend="opencl"))
    return done


def _elsewhere(call: GemmCall, key: tuple | None) -> Matrix | None:
    """The result of a product that a route other than one OpenCL device runs (a host or CUDA route is
    kept for the call's signature ``key``), or None."""
    a, b, c, o = call.a, call.b, call.c, call.options

    def alone(device, config) -> Matrix:
        """The product on one device alone, where a split gives it every row: routed as a call on that
        device is (the host's BLAS or the CUDA path where its profile says they are faster)."""
        return run_gemm(a, b, c, None, o._replace(device=device, config=config, devices=None, split=None))

    if o.devices is not None or o.split is not None:
        if o.devices is None:
            raise ArgumentError("split is for a product shared among devices: give devices= too")
        if o.device is not None or o.wait_for:
            raise ArgumentError("devices= runs on several targets and blocks: leave device and wait_for out")
        return run_on_targets(call, o.devices, alone)
    where, route = route_elsewhere(call)
    if where == HOST_BLAS:
        return ROUTES.keep(key, route).run(a, b, c, o)
    if where == CUDA_PATH:
        done = ROUTES.keep(key, route).run(a, b, c, o)
        # the CUDA path failed the call (out of its memory, say): OpenCL takes it, streamed where large
        return done if done is not None else run_gemm(a, b, c, None, o._replace(backend="opencl"))
    if where == STREAMED:
        # as a share of its device: streamed (copies through page-locked staging, overlapping the
        # kernels), or in place where the device shares the host's memory
        return run_on_targets(call, [o.device], alone)
    return None


#: Where a product of one device's call runs (``route_elsewhere``).
HOST_BLAS, CUDA_PATH, STREAMED, OPENCL_PLAN = ("the host's BLAS", "the CUDA path", "streamed through the device",
                                               "the device's OpenCL plan")


def route_elsewhere(call: GemmCall) -> tuple[str, HostRoute | CudaHostRoute | None]:
    """Where a product on one device runs, and the route kept for it where it is one: the host's BLAS, the
    CUDA path, streamed through the device as a share of it (numpy operands too large to cross in row
    blocks), or the device's OpenCL plan (``OpenCLRoute``; None here)."""
    host = host_route(call)
    if host is not None:
        return HOST_BLAS, host
    cuda = cuda_host.cuda_host_route(call)
    if cuda is not None:
        return CUDA_PATH, cuda
    if not call.options.wait_for and large_on_host(call, thresholds_for(find_device(call.options.device))):
        return STREAMED, None
    return OPENCL_PLAN, None


def call_signature(a: Matrix, b: Matrix, c: Matrix | None, batch: int | None, options: GemmOptions) -> tuple | None:
    """What a call's route depends on: for operands all numpy arrays their shapes, strides, dtypes and
    whether C is writeable; for operands all device arrays their shapes, strides, the alignment classes
    of their offsets, dtypes and queues; and ``batch``, whether C is given, and the options
    (``GemmOptions.key``). None for other or mixed operands, or options that cannot be a key: such calls
    are resolved afresh each time. Views of a stack at offsets of one class share a signature, so a loop
    over them is resolved once. (Every call makes one: written for speed.)"""
    if type(a) is np.ndarray:
        if type(b) is not np.ndarray or not (c is None or type(c) is np.ndarray):
            return None
        operands = (a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype,
                    None if c is None else (c.shape, c.strides, c.dtype, c.flags.writeable))
    elif isinstance(a, ocl.DeviceArray):
        if not isinstance(b, ocl.DeviceArray) or not (c is None or isinstance(c, ocl.DeviceArray)):
            return None
        operands = (_device_key(a), _device_key(b), None if c is None else _device_key(c))
    else:
        return None
    options_key = options.key()
    return None if options_key is None else (operands, batch, options_key)


def _device_key(x: ocl.DeviceArray) -> tuple:
    """A device array's part of a call signature."""
    return x.shape, x.strides, alignment_class(x.offset // x.dtype.itemsize), x.dtype, x.queue


def clear_calls() -> None:
    """Forget every resolved call (``ROUTES``, the plain host routes) and cached plan, and free the device
    buffers and page-locked host memory kept for later calls (``autogemm.clear_plans``; the tuner's worker
    after timing calls from numpy to numpy)."""
    ROUTES.clear()
    PLAIN_ROUTES.clear()
    plan_cache.clear()
    for ctx in live_contexts():
        ctx.buffers.clear()
        release_page_locked(ctx)
    for cuda_ctx in live_cuda_contexts():
        cuda_ctx.release_kept()
