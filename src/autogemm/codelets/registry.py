"""The kernel families autogemm generates, behind one typed registry.

A family is one folder of ``codelets`` holding all of it: a frozen parameter class, ``check`` (why a
configuration cannot run on a device), ``render`` (its OpenCL source) and ``space`` (the points a tuning
run searches on a device). Each folder registers a ``Family`` when the package is imported; everything
above this layer (plans, the tuner, profiles, the command line) reaches the families only through this
module, so that adding one touches no shared code. Configurations read from outside name their family
(``"family"``; none means ``simt``, as profiles written before there were families do)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ..dtypes import Dtype, get_dtype
from ..errors import ConfigError
from ..runtime.backend import OPENCL
from ..runtime.opencl.device import Device
from .kernel import KernelSource
from .space import SearchSpace

#: The routines a family's kernels compute.
GEMM, GEMV = "gemm", "gemv"


class Params(Protocol):
    """A configuration of any family: a frozen dataclass that names its family and says, without a
    device, whether it lies outside its family's space."""

    family: ClassVar[str]
    build_options: tuple[str, ...]

    def to_dict(self) -> dict: ...

    def malformed(self) -> str | None: ...

    def describe(self) -> str: ...


class KernelParams(Params, Protocol):
    """A configuration of a GEMM family, with the geometry a plan needs around its kernel."""

    layout: str
    vector_width: int
    image_a: bool
    image_b: bool

    @property
    def block_rows(self) -> int: ...

    @property
    def block_cols(self) -> int: ...

    @property
    def tile_k(self) -> int: ...


@dataclass(frozen=True)
class SpaceFacts:
    """What a family's tuning space depends on besides the device and the dtype: the multiply-add form
    the FMA micro-benchmark chose per vector width, the matrix instructions the device was probed to run
    (by operand type), for GEMV the layout and the number of right-hand sides tuned for, and whether the
    space is searched for a ``skinny`` C, of few rows or columns (``tune --shapes`` of such a shape: it
    wants blocks of its shape)."""

    device: Device
    dtype: Dtype
    macs: Mapping[int, str] = field(default_factory=dict)
    instructions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    layout: str | None = None
    vectors: int = 1
    skinny: bool = False


@dataclass(frozen=True)
class Family:
    """One kernel family: its configurations' class and the functions on them. ``render`` takes a
    configuration, a dtype and a flag (GEMM families: edge-guarded; GEMV: conjugating A), and GEMM
    families a second (the stream-K schedule, ``codelets.stream_k``). ``fit`` adapts a
    configuration to a dtype where the family's instructions depend on it (by default it is returned as it
    is). ``weight`` is the family's share of a size class's budget among the families a device searches
    (relative to the others'), ``reads_16bit`` says whether a configuration's kernels take 16-bit operands
    as they are stored and can write a 16-bit C (``render`` takes ``stored_c``; the others' plans convert
    such operands to float32 first and round C from a float32 temporary), ``short_k_guards`` that its
    edge-guarded kernels are worth running on a K shorter than one K step, in place of packing both
    operands to pad K, ``sums_slices`` that they read the slices of a K split where A and B lie and add
    them up themselves (``render`` takes ``summed``: a split product in one launch), and ``merges_slices``
    that their guarded kernels are worth running on more slices than that, each into its layer of C,
    which a merge adds up (``sliced``), in place of packing both operands for the unguarded kernel.
    ``aligned_rows`` says that its kernels copy ``kernel.ALIGNED_BYTES`` at once where told that every
    row of A and B starts at such a boundary (``render`` takes ``aligned``), whatever their vector width,
    and at the edges of a guarded kernel too.
    ``backend`` is the runtime its kernels run on:
    OpenCL, or CUDA for the sm_90a families (``render`` gives their CUDA C++, which ``runtime.cuda``
    builds and runs; OpenCL's plans never take them: their ``render`` takes a configuration, which
    operands lie MN-major and whether C is stored transposed)."""

    name: str
    params: type
    check: Callable[[Any, Device, Dtype], str | None]
    render: Callable[..., KernelSource]
    space: Callable[[SpaceFacts], SearchSpace | None]
    fit: Callable[[Any, Dtype], Any] = lambda params, dtype: params
    routine: str = GEMM
    weight: float = 1.0
    reads_16bit: Callable[[Any], bool] = lambda params: False
    short_k_guards: bool = True
    sums_slices: bool = False
    merges_slices: bool = False
    aligned_rows: bool = False
    backend: str = OPENCL

    def default(self, dtype: Dtype) -> Any:
        """The family's default configuration, fitted to ``dtype``."""
        return self.fit(self.params(), dtype)


_FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add ``family`` (a family's own package calls this; so do tests that define one)."""
    if getattr(family.params, "family", None) != family.name:
        raise ConfigError(f"{family.params.__name__}.family must be {family.name!r}")
    _FAMILIES[family.name] = family
    return family


def families(routine: str | None = GEMM, backend: str | None = OPENCL) -> tuple[Family, ...]:
    """The registered families of ``routine`` on ``backend`` (None: of every routine, every backend), in
    registration order."""
    return tuple(f for f in _FAMILIES.values()
                 if (routine is None or f.routine == routine) and (backend is None or f.backend == backend))


def family_named(name: str, routine: str | None = None, backend: str | None = None) -> Family:
    """The family called ``name`` (of ``routine`` and on ``backend`` where given), or ``ConfigError``."""
    found = _FAMILIES.get(name) if isinstance(name, str) else None
    if found is None or (routine is not None and found.routine != routine) or \
            (backend is not None and found.backend != backend):
        known = ", ".join(f.name for f in families(routine, backend))
        raise ConfigError(f"unknown kernel family {name!r}; expected one of {known}")
    return found


def family_of(params: object) -> Family:
    """The family of ``params``, or ``ConfigError`` when it is no registered family's configuration."""
    found = _FAMILIES.get(getattr(type(params), "family", None))
    if found is None or not isinstance(params, found.params):
        raise ConfigError(f"not a kernel configuration: {type(params).__name__}")
    return found


def kernel_dtype(params: KernelParams, dtype: Dtype | str) -> Dtype:
    """The dtype the kernel of ``params`` computes a ``dtype`` problem in: ``dtype`` itself where the
    configuration reads 16-bit operands as they are stored (``Family.reads_16bit``), else
    ``dtype.compute`` (a plan then converts such operands to float32 before the product)."""
    dt = get_dtype(dtype)
    return dt if family_of(params).reads_16bit(params) else dt.compute


def writes_16bit(params: KernelParams, dtype: Dtype | str) -> bool:
    """Whether the kernel of ``params`` writes a ``dtype`` problem's C in its 16 bits itself: it reads A
    and B in them (``kernel_dtype``) and C is stored in them too (not float32)."""
    kernel = kernel_dtype(params, dtype)
    return kernel.half and get_dtype(dtype).output == kernel


def check(params: Params, device: Device, dtype: Dtype | str) -> str | None:
    """Why ``params`` (of any family) cannot run on ``device`` for ``dtype``, or None."""
    return family_of(params).check(params, device, kernel_dtype(params, dtype))


def render(params: KernelParams, dtype: Dtype | str, guarded: bool = True, stream: bool = False,
           summed: bool = False, sliced: bool = False, aligned: bool = False, stored_c: bool = False
           ) -> KernelSource:
    """The OpenCL source of ``params`` (of any GEMM family) for a ``dtype`` problem, over its tiles (one
    work-group each), with ``stream`` the stream-K schedule, with ``summed`` K slices added up in the
    kernel, with ``sliced`` K slices read where A and B lie, each into its layer of C (families that
    ``sums_slices`` only). ``aligned`` promises that A's and B's rows start at ``kernel.ALIGNED_BYTES``
    boundaries, which a family with ``aligned_rows`` uses (the others' kernels are right either way);
    ``stored_c`` that the kernel writes a 16-bit problem's C in its 16 bits (``reads_16bit`` families)."""
    family = family_of(params)
    options = {"summed": summed, "sliced": sliced} if summed or sliced else {}
    if options and not family.sums_slices:
        raise ConfigError(f"the {family.name} family's kernels do not read K slices in place")
    if stored_c:
        options["stored_c"] = True
    if aligned and family.aligned_rows:
        options["aligned"] = True
    return family.render(params, kernel_dtype(params, dtype), guarded, stream, **options)


def params_from_dict(data: object, routine: str | None = GEMM, backend: str | None = OPENCL) -> Params:
    """A configuration of the family ``data`` names, validated field by field; the family must be one of
    ``routine``'s on ``backend`` (None: of any routine, any backend)."""
    if not isinstance(data, dict):
        raise ConfigError("a configuration must be a JSON object")
    fields = dict(data)
    return family_named(fields.pop("family", "simt"), routine, backend).params.from_dict(fields)
