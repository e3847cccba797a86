"""Products of device tensors on the CUDA path: torch, cupy and jax arrays (anything that exports DLPack
on a CUDA GPU) are read and written where they lie, without copies. The call enqueues its work on the
caller's stream (by default the current stream of the operands' library) and returns at once; a new
result is handed back as that library's tensor."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ...blas.complex_embedding import kernel_dtype, kernel_problem
from ...blas.cuda_gemm import CudaGemm, DeviceOperand, cuda_plan, cuda_ready, opencl_twin
from ...blas.problem import Op
from ...blas.selection import choose_cuda_params
from ...dtypes import Dtype, get_dtype
from ...errors import ArgumentError, ShapeError
from ...profiles import profile_for, still_current
from ...runtime.cuda import CudaContext, cuda_devices, cuda_missing, dlpack
from ...runtime.cuda.arrays import CudaArray
from ...runtime.cuda.context import DeviceMemory, Prepared, as_stream
from ...runtime.cuda.driver import cuda_device_of
from ...runtime.opencl.discovery import find_device
from ..call import GemmCall, GemmOptions, checked_scalars, oriented
from ..operands import layout_of
from ..resolved import ROUTES

#: Where each library's ``from_dlpack`` is, by the top-level module of its array type.
IMPORTERS = {"torch": "torch", "cupy": "cupy", "jax": "jax.dlpack", "jaxlib": "jax.dlpack"}


def is_cuda_tensor(x: object) -> bool:
    """True for an array that exports DLPack from a CUDA GPU's memory (a torch tensor says so itself,
    at less cost than its DLPack probe)."""
    if getattr(x, "is_cuda", None) is True:
        return True
    probe = getattr(x, "__dlpack_device__", None)
    if probe is None or isinstance(x, np.ndarray):
        return False
    return int(probe()[0]) == dlpack.CUDA


class _Tensor(NamedTuple):
    """A borrowed device operand as validation sees it (``shape``, ``dtype``) and as the kernels take it."""

    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...]
    pointer: int
    ordinal: int


def tensors_among(a: object, b: object, c: object | None) -> bool:
    """True where the operands are CUDA tensors, False where none is; ``ArgumentError`` for a mix."""
    found = [x is not None and is_cuda_tensor(x) for x in (a, b, c)]
    if not any(found):
        return False
    for x, name, tensor in zip((a, b, c), "abc", found):
        if x is not None and not tensor:
            raise ArgumentError(f"a CUDA tensor was given but {name} is a {type(x).__name__}: pass every operand "
                                f"on the GPU (e.g. torch.as_tensor({name}, device='cuda'))")
    return True


def run_tensors(a: object, b: object, c: object | None, options: GemmOptions) -> object:
    """C = alpha op(A) op(B) + beta C of CUDA tensors (``tensors_among``), enqueued on ``options.stream``
    (a handle, or an object with ``cuda_stream`` or ``ptr``: torch's and cupy's streams; None: the
    library's current one). Returns ``c``, or a new tensor of ``a``'s library (a ``CudaArray`` for a
    library not in ``IMPORTERS``). A call of the signature of an earlier one runs on its resolved route."""
    if options.backend == "opencl":
        raise ArgumentError("CUDA tensors are multiplied on the CUDA path; leave backend 'auto' or 'cuda'")
    if options.opencl_only():
        raise ArgumentError(f"{options.opencl_only()} is an option of the OpenCL path, not for CUDA tensors")
    handle = caller_stream(a, options.stream)
    operands = (a, b, c)
    # torch's own tensors on its current stream: nothing needs ordering, and their attributes cost torch
    # less than DLPack's exchange (a call on tensors must cost the host little)
    if options.stream is None and all(x is None or _library(x) == "torch" for x in operands):
        a, b = (_resolved(x) for x in (a, b))
        if c is not None and _lazy(c):
            raise ArgumentError("c is a conjugated or negated view (torch's lazy conj or neg bit): write into a "
                                "tensor of its own, c.resolve_conj()")
        operands = (a, b, c)
        key = (*(None if x is None else (x.shape, x.stride(), x.dtype, x.get_device()) for x in operands),
               options.key())
        route = ROUTES.get(key)
        if route is None:
            tensors = [None if x is None else _attributes(x, name) for x, name in zip(operands, "abc")]
            route = ROUTES.keep(key, TensorRoute(GemmCall.build(*tensors, None, options), tensors))
        return route.run([None if x is None else x.data_ptr() for x in operands], a, c, handle, True, options)
    borrowed: list[dlpack.Borrowed] = []
    try:
        tensors = []
        for x, name in zip(operands, "abc"):
            if x is not None:
                borrowed.append(dlpack.borrow(x, handle))
            tensors.append(None if x is None else _borrowed(borrowed[-1], name))
        key = (*(None if t is None else (t.shape, t.strides, t.dtype, t.ordinal) for t in tensors), options.key())
        route = ROUTES.get(key) or ROUTES.keep(key, TensorRoute(GemmCall.build(*tensors, None, options), tensors))
        return route.run([None if t is None else t.pointer for t in tensors], a, c, handle, False, options)
    finally:
        for x in borrowed:
            x.release()


class TensorRoute:
    """A call of CUDA tensors resolved: the context of the GPU they lie on, how the kernels read them
    (a column-major C by the swapped product) and the plan; a run binds the tensors' memory and the
    scalars and enqueues on the caller's stream, the last run's launch again where it repeats them."""

    def __init__(self, call: GemmCall, tensors: list[_Tensor | None]) -> None:
        ta, tb, tc = tensors
        self.dt, self.shape, self.has_c = call.dt, call.shape, tc is not None
        layouts = _layout(ta, "a"), _layout(tb, "b")
        column_major = tc is not None and call.m and call.n and _column_major(tc, call.m, call.n)
        if call.k == 0 and call.m and call.n:
            raise ArgumentError("k is 0: the product is empty (scale c by beta instead)")
        self.ctx = _context(tensors, call.options.device, call.dt)
        # the operands as the kernels read them: which tensor, its rows, op and leading dimension
        reads = oriented(("a", call.m, layouts[0][0]), call.op_a, layouts[0][1],
                         ("b", call.n, layouts[1][0]), call.op_b, layouts[1][1], call.m, call.n, bool(column_major))
        self.reads = reads
        self.device = opencl_twin(self.ctx.device)
        self.profile = profile_for(self.device) if self.device is not None else None
        self.plan: CudaGemm | None = None
        self._last: tuple[tuple, Prepared] | None = None    # the last run's memory and scalars, and launch
        if reads.m and reads.n:
            with self.ctx.lock:
                self.ctx.activate()
                kernel_dt, sizes, ops = kernel_problem(call.dt, (reads.m, reads.n, call.k),
                                                       (reads.op_first, reads.op_second))
                chosen = choose_cuda_params(self.device, kernel_dt, *sizes, self.ctx.multiprocessors, ops=ops)
                self.plan = cuda_plan(self.ctx, call.dt, reads.m, reads.n, call.k, chosen.params)

    def current(self) -> bool:
        """Whether the device's profile, which chose the configuration, is still the one it was."""
        return self.device is None or still_current(self.device, self.profile)

    def run(self, pointers: list[int | None], a: object, c: object | None, handle: int, own: bool,
            options: GemmOptions) -> object:
        """The product of the memory at ``pointers`` (of ``a``, ``b`` and ``c``) on the stream ``handle``;
        a new result is made by torch's own allocator where ``own``."""
        alpha, beta = checked_scalars(options, self.dt, self.has_c)
        if pointers[2] is not None:
            result, out = None, pointers[2]
        elif own:                                  # torch's own allocator, on its current stream
            import torch

            result = torch.empty(self.shape, dtype=getattr(torch, self.dt.output.numpy.name), device=a.device)
            out = result.data_ptr()
        else:
            result = CudaArray.empty(self.ctx, self.shape, self.dt.output.numpy, handle)
            out = int(result.memory.pointer)
        if self.plan is not None:
            r = self.reads
            bound = (pointers["ab".index(r.first[0])], pointers["ab".index(r.second[0])], out, alpha, beta)
            stream = as_stream(handle)
            with self.ctx.lock:
                self.ctx.activate()
                last = self._last
                if last is not None and last[0] == bound:
                    self.ctx.enqueue_prepared(last[1], stream)
                else:
                    first = _operand(bound[0], r.first, r.op_first, DeviceOperand.of_a)
                    second = _operand(bound[1], r.second, r.op_second, DeviceOperand.of_b)
                    launch = self.plan.enqueue(first, second, DeviceMemory.lent(out), alpha, beta, stream)
                    self._last = None if launch is None else (bound, launch)
        if result is None:
            return c
        return result if own else hand_back(result, a)


def caller_stream(like: object, stream: object) -> int:
    """The stream handle a call on ``like`` runs on: ``stream``'s, or the current one of ``like``'s
    library (torch, cupy), else the legacy default stream (0)."""
    if stream is not None:
        return int(getattr(stream, "cuda_stream", getattr(stream, "ptr", stream)))
    library = _library(like)
    if library == "torch":
        import torch

        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)     # (the handle alone, as Triton asks)
        if raw is not None:
            return int(raw(like.get_device()))
        return int(torch.cuda.current_stream(like.get_device()).cuda_stream)
    if library == "cupy":
        import cupy

        return int(cupy.cuda.get_current_stream().ptr)
    return 0


def _library(x: object) -> str:
    return _library_of(type(x))


@functools.lru_cache(maxsize=32)
def _library_of(kind: type) -> str:
    """The top-level module an array type comes from ('torch', 'cupy'), found once a type."""
    return kind.__module__.split(".", 1)[0]


def _lazy(x: object) -> bool:
    """Whether a torch tensor is a view its memory does not hold as it reads (a complex tensor's lazy
    conjugate or negation: its data pointer is the unconjugated memory)."""
    return x.dtype.is_complex and (x.is_conj() or x.is_neg())


def _resolved(x: object) -> object:
    """A torch operand as its memory holds it: a lazily conjugated or negated one made real (a copy)."""
    return x.resolve_conj().resolve_neg() if _lazy(x) else x


def _attributes(x: object, name: str) -> _Tensor:
    """A torch tensor as the call sees it, from its own attributes."""
    return _tensor(tuple(x.shape), _torch_dtype_name(x.dtype), tuple(x.stride()), x.data_ptr(),
                   max(x.get_device(), 0), name)


def _borrowed(lent: dlpack.Borrowed, name: str) -> _Tensor:
    """An array borrowed through DLPack as the call sees it."""
    return _tensor(lent.shape, lent.dtype, lent.strides, lent.pointer, lent.device[1], name)


def _tensor(shape: tuple[int, ...], dtype: str, strides: tuple[int, ...], pointer: int, ordinal: int, name: str
            ) -> _Tensor:
    if len(shape) != 2:
        raise ShapeError(f"{name} has {len(shape)} dimensions; gemm multiplies matrices (2-D)")
    return _Tensor(shape, _numpy_dtype(dtype), strides, pointer, ordinal)


@functools.lru_cache(maxsize=32)
def _torch_dtype_name(dtype: object) -> str:
    """A torch dtype's name as DLPack and numpy say it ('float16'), found once a dtype."""
    return str(dtype).removeprefix("torch.")


@functools.lru_cache(maxsize=32)
def _numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a tensor's dtype name (as torch and DLPack name them), found once a name."""
    return get_dtype(name).numpy


def _layout(x: _Tensor, name: str) -> tuple[int, bool]:
    """(ld, flipped) of ``x`` as ``engine.operands.layout_of`` gives them; ``ShapeError`` for strides that
    are not those of a row- or column-major matrix."""
    layout = layout_of(x.shape, x.strides, 1)
    if layout is None:
        raise ShapeError(f"{name}: a tensor of strides {x.strides} (elements) is not a row- or column-major "
                         f"matrix; pass a contiguous one (.contiguous())")
    return layout


def _operand(pointer: int, read: tuple[str, int, int], op: Op, of: Callable[..., DeviceOperand]) -> DeviceOperand:
    """The memory at ``pointer`` as the kernels read it: ``read`` (its name, rows and leading dimension)
    with ``op`` (``of``: ``DeviceOperand.of_a`` or ``of_b``)."""
    _, rows, ld = read
    return of(DeviceMemory.lent(pointer), rows, ld, op)


def _context(tensors: list[_Tensor | None], device, dt: Dtype) -> CudaContext:
    """The CUDA context of the GPU the operands lie on, or ``ArgumentError`` saying why there is none
    for them (several GPUs, another than ``device``, one without the CUDA path's kernels for ``dt``)."""
    why = cuda_missing()
    if why:
        raise ArgumentError(f"CUDA tensors need the CUDA path: {why}")
    ordinals = {t.ordinal for t in tensors if t is not None}
    if len(ordinals) > 1:
        raise ArgumentError(f"the operands lie on different GPUs (CUDA devices {sorted(ordinals)})")
    ordinal = ordinals.pop()
    twin = next((d for d in cuda_devices() if d.ordinal == ordinal), None)
    if twin is None:
        raise ArgumentError(f"the operands lie on CUDA device {ordinal}, which the CUDA driver here does not show")
    if device is not None and cuda_device_of(find_device(device)) != twin:
        raise ArgumentError(f"device={device!r} is not {twin.name} (CUDA device {twin.ordinal}), where the "
                            f"operands lie")
    ctx, why = cuda_ready(twin, kernel_dtype(dt))
    if why:
        hint = (f"; {dt.numpy.name} takes precision='tf32' or '3xtf32' (float32's accuracy)" if dt.key in ("s", "c")
                else "")
        raise ArgumentError(f"cannot multiply these CUDA tensors: {why}{hint}")
    return ctx


def _column_major(c: _Tensor, m: int, n: int) -> bool:
    """Whether ``c`` (m x n) is dense column-major rather than dense row-major; ``ShapeError`` for neither."""
    layout = layout_of(c.shape, c.strides, 1)
    if layout is None or layout[0] != (m if layout[1] else n):
        raise ShapeError(f"c: the CUDA path writes a dense row- or column-major matrix, not one of strides "
                         f"{c.strides} (elements)")
    return layout[1]


def hand_back(result: CudaArray, like: object) -> object:
    """``result`` as a tensor of ``like``'s library through its ``from_dlpack``, or itself."""
    module = IMPORTERS.get(_library(like))
    return result if module is None else importlib.import_module(module).from_dlpack(result)
