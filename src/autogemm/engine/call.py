"""A GEMM call as the engine takes it: its options listed once (``GemmOptions``) and its operands and
options validated once (``GemmCall``), whatever route then runs it, and the one rule that turns a product
of column-major matrices into one of row-major storage (``oriented``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple, TypedDict, TypeVar

import numpy as np

from ..blas import Op
from ..blas.selection import working_dtype
from ..codelets.registry import GEMM, OPENCL, family_of
from ..dtypes import Dtype, get_dtype, with_output, with_precision
from ..errors import ArgumentError, ConfigError, DtypeError, ShapeError
from ..profiles import thresholds_for
from ..runtime import Device
from ..runtime.opencl.context import context_for_queue
from ..runtime.opencl.discovery import find_device
from .operands import on_device, scalar

if TYPE_CHECKING:
    from ..codelets.registry import KernelParams
    from ..runtime.opencl import commands as ocl
    from ..shares.split import Split

#: What ``backend`` may name.
BACKENDS = ("auto", "opencl", "cuda")


class GemmOptions(NamedTuple):
    """Every option of a GEMM call beyond its operands, as ``autogemm.gemm`` takes them: the one list of
    them below the public calls, so that a route takes a call, not a dozen parameters. (A named tuple:
    every call makes one.)"""

    alpha: complex | float = 1.0
    beta: complex | float = 0.0
    trans_a: str = "N"
    trans_b: str = "N"
    device: Device | str | int | None = None
    config: object = None
    edge: str = "auto"
    precision: str | None = None
    out_dtype: object = None
    wait_for: list | tuple | None = None
    devices: object = None
    split: object = None
    backend: str = "auto"
    stream: object = None

    @classmethod
    def given(cls, caller: str, options: dict[str, object]) -> GemmOptions:
        """The options of a call that names them by keyword (``gemm(a, b, **options)``), the rest their
        defaults; a name that is no option is the ``TypeError`` Python gives for an unknown keyword."""
        unknown = next((name for name in options if name not in cls._fields), None)
        if unknown is not None:
            raise TypeError(f"{caller}() got an unexpected keyword argument {unknown!r}")
        return cls(**options)

    def check(self) -> None:
        """``ArgumentError`` for an option no route takes."""
        if self.backend not in BACKENDS:
            raise ArgumentError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, not {self.backend!r}")

    def opencl_only(self) -> str | None:
        """The first option given that only the OpenCL path has, or None."""
        given = (("devices", self.devices is not None), ("split", self.split is not None),
                 ("config", self.config is not None), ("edge", self.edge != "auto"), ("wait_for", bool(self.wait_for)))
        return next((name for name, present in given if present), None)

    def key(self) -> tuple | None:
        """What a resolved route depends on among the options: all but the scalars, the events and the
        stream, which every call binds afresh (a ``Device`` by its place among the platforms' devices);
        None where one cannot be a key (a list of devices, a configuration given as a dict)."""
        device = self.device
        if isinstance(device, Device):
            device = (device.platform_index, device.device_index)
        values = (self.trans_a, self.trans_b, device, self.config, self.edge, self.precision, self.out_dtype,
                  bool(self.wait_for), self.devices, self.split, self.backend)
        try:
            hash(values)
        except TypeError:
            return None
        return values


class GemmKeywords(TypedDict, total=False):
    """The keyword options of ``gemm``, each optional (their defaults and meanings: ``gemm``): the type of
    its ``**options``, for type checkers and editors. ``GemmOptions`` holds the same names in the same
    order (a test holds the two to it)."""

    alpha: complex | float
    beta: complex | float
    trans_a: str
    trans_b: str
    device: Device | str | int | None
    config: KernelParams | None
    edge: str
    precision: str | None
    out_dtype: object
    wait_for: list[ocl.Event] | None
    devices: str | list | tuple | None
    split: Split | None
    backend: str
    stream: object


@dataclass(frozen=True)
class GemmCall:
    """A GEMM call validated where that does not depend on where it runs: the operands as given (numpy
    or pyopencl arrays, or the engine's views of CUDA tensors), ``batch`` (None: one product), the dtype
    with its precision and output, the ops, the sizes, the result's shape and the scalars."""

    a: object
    b: object
    c: object | None
    batch: int | None
    options: GemmOptions
    dt: Dtype
    op_a: Op
    op_b: Op
    m: int
    n: int
    k: int
    shape: tuple[int, ...]
    alpha: complex | float
    beta: complex | float

    @classmethod
    def build(cls, a, b, c, batch: int | None, options: GemmOptions) -> GemmCall:
        """The call of these operands and options, or the error that names what is wrong with them;
        nothing is enqueued or written before this."""
        o = options
        dt = with_precision(get_dtype(a.dtype), o.precision)
        if b.dtype != a.dtype:
            raise DtypeError(f"a is {a.dtype} but b is {b.dtype}; convert them to one dtype")
        if c is not None and o.out_dtype is not None and c.dtype != get_dtype(o.out_dtype).numpy:
            raise DtypeError(f"c is {c.dtype} but out_dtype is {get_dtype(o.out_dtype).numpy}")
        try:
            dt = with_output(dt, c.dtype if c is not None else o.out_dtype)
        except DtypeError as exc:
            raise DtypeError(f"{'c' if c is not None else 'out_dtype'}: {exc}") from None
        op_a, op_b = Op.from_letter(o.trans_a, "trans_a"), Op.from_letter(o.trans_b, "trans_b")
        m, k = a.shape[-1:-3:-1] if op_a.transposed else a.shape[-2:]
        k_b, n = b.shape[-1:-3:-1] if op_b.transposed else b.shape[-2:]
        if k != k_b:
            raise ShapeError(f"op(a) is {m}x{k} but op(b) is {k_b}x{n}: inner dimensions differ")
        shape = (m, n) if batch is None else (batch, m, n)
        if c is not None:
            if c.shape != shape:
                raise ShapeError(f"c has shape {c.shape}; the result is {'x'.join(map(str, shape))}")
            if isinstance(c, np.ndarray) and not c.flags.writeable:
                raise ArgumentError("c is read-only")
        # (backend='cuda' refuses any config, saying that it is an option of the OpenCL path)
        if o.config is not None and o.backend != "cuda" and not _is_gemm_config(o.config):
            raise ArgumentError(f"config must be a configuration of an OpenCL kernel family (SimtParams or another "
                                f"family's), not {type(o.config).__name__} (the CUDA path's configurations come "
                                f"from its defaults and the device's profile)")
        alpha, beta = checked_scalars(o, dt, c is not None)
        return cls(a, b, c, batch, o, dt, op_a, op_b, m, n, k, shape, alpha, beta)

    def in_working_dtype(self) -> GemmCall:
        """This call in the dtype its product is computed in on its device (``blas.selection.working_dtype``
        under the device's thresholds: 3xTF32's short products in plain float32), where the call leaves
        the choice to autogemm: backend 'auto', no ``config`` (whose family may only take the precision
        asked for) and one device (``devices=`` calls each device's share so). Other precisions are
        returned at once, without looking the device up."""
        o = self.options
        if self.dt.precision != "3xtf32" or o.backend != "auto" or o.config is not None or o.devices is not None:
            return self
        dt = working_dtype(self.dt, self.m, self.n, self.k, thresholds_for(self.device()))
        return self if dt is self.dt else replace(self, dt=dt)

    def device(self) -> Device:
        """The device the call runs on: that of its device arrays, else the one its options name (or the
        default)."""
        for x in (self.a, self.b, self.c):
            if on_device(x):
                return context_for_queue(x.queue).device
        return find_device(self.options.device)

    @property
    def empty(self) -> bool:
        """True where C has no element (nothing to compute)."""
        return self.m == 0 or self.n == 0 or self.batch == 0

    @property
    def on_device(self) -> bool:
        """True where an operand is a pyopencl array: the call runs on its queue and returns at once."""
        return any(on_device(x) for x in (self.a, self.b, self.c))


def checked_scalars(options: GemmOptions, dt: Dtype, has_c: bool) -> tuple[complex | float, complex | float]:
    """alpha and beta as the kernels of ``dt`` take them; ``ArgumentError`` for a beta not 0 without a C.
    A call that found its resolved route checks these alone."""
    alpha, beta = scalar(options.alpha, "alpha", dt), scalar(options.beta, "beta", dt)
    if not has_c and beta != 0:
        raise ArgumentError("beta is not 0 but no c was given to scale")
    return alpha, beta


def _is_gemm_config(config: object) -> bool:
    """True for a configuration of a GEMM kernel family of the OpenCL path."""
    try:
        family = family_of(config)
        return family.routine == GEMM and family.backend == OPENCL
    except ConfigError:
        return False


Operand = TypeVar("Operand")


class Oriented(NamedTuple):
    """A product on the row-major storage of its operands: the first and second operand the kernels
    read, their ops, the sizes of the C they write, and whether A and B were swapped."""

    first: object
    op_first: Op
    second: object
    op_second: Op
    m: int
    n: int
    swapped: bool


def oriented(a: Operand, op_a: Op, a_flipped: bool, b: Operand, op_b: Op, b_flipped: bool, m: int, n: int,
             c_flipped: bool) -> Oriented:
    """The product op(A) op(B) (m x n) on row-major storage, where a flipped operand is column-major (the
    row-major storage of its transpose): its op flipped; where C is column-major too, A and B swapped,
    since C^T = op(B)^T op(A)^T is the row-major product that writes it."""
    op_a = op_a.flipped() if a_flipped else op_a
    op_b = op_b.flipped() if b_flipped else op_b
    if c_flipped:
        return Oriented(b, op_b.flipped(), a, op_a.flipped(), n, m, True)
    return Oriented(a, op_a, b, op_b, m, n, False)
