"""What the tuner asks its evaluation worker (``worker``), as typed requests, and how they cross the pipe:
``encode`` makes a JSON object of a request (``{"request": name, ...fields}``, configurations as their
JSON data), ``decode`` makes the request again on the other side, validating every configuration as it
validates one read from a file. The replies are small JSON objects, described with each request."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import ClassVar

from ...codelets.registry import GEMM, GEMV, Params, params_from_dict
from ...dtypes import Dtype
from ...errors import ArgumentError
from ...runtime.backend import OPENCL


@dataclass(frozen=True)
class EvaluatorSpec:
    """An evaluator a worker makes: its ``routine``'s problem of ``dtype`` (a key) and ``shape`` (GEMM's
    (m, n, k) with A and B stored as ``layout`` says, NN by default; GEMV's A as (rows, cols) and its
    right-hand sides, read as ``layout`` N or T), ``runs`` timed runs a full measurement, random operands
    from ``seed`` (the same after a restart), with ``full`` every candidate timed in full (none cut short
    for being slow), for GEMM K computed in ``split`` slices (None: as plans decide), on the runtime
    ``backend`` (the CUDA path's families on ``cuda``); for GEMM, ``batch`` products of that shape in one
    strided call where more than one."""

    routine: str
    dtype: str
    shape: tuple[int, ...]
    layout: str | None = None
    full: bool = False
    runs: int = 5
    seed: int = 0
    split: int | None = None
    backend: str = OPENCL
    batch: int = 1

    @classmethod
    def gemm(cls, dtype: Dtype, shape: tuple[int, int, int], full: bool = False, layout: str = "NN",
             split: int | None = None, backend: str = OPENCL, batch: int = 1) -> EvaluatorSpec:
        return cls(GEMM, dtype.key, tuple(shape), None if layout == "NN" else layout, full, split=split,
                   backend=backend, batch=batch)

    @classmethod
    def gemv(cls, dtype: Dtype, shape: tuple[int, ...], layout: str, full: bool = False) -> EvaluatorSpec:
        return cls(GEMV, dtype.key, tuple(shape), layout, full)

    @classmethod
    def from_dict(cls, data: dict) -> EvaluatorSpec:
        return cls(**{**data, "shape": tuple(data["shape"])})


@dataclass(frozen=True)
class Start:
    """The first request of a process: open a context on the device of ``slot`` (checked against its
    ``fingerprint``) after importing ``preload`` (families tests define), with ``builders`` build threads
    and ``build_processes`` compile processes (0: compile in the worker). Replied ``{"ready": true}``."""

    name: ClassVar[str] = "start"
    slot: str
    fingerprint: str
    preload: tuple[str, ...] = ()
    builders: int = 1
    build_processes: int = 0


@dataclass(frozen=True)
class MakeEvaluator:
    """Make the evaluator ``spec`` describes, in place of the last. Replied ``{"ready": true}``."""

    name: ClassVar[str] = "evaluator"
    spec: EvaluatorSpec


@dataclass(frozen=True)
class Prepare:
    """Build ``config``'s plan in the background, as candidate ``index``. No reply."""

    name: ClassVar[str] = "prepare"
    index: int
    config: Params


@dataclass(frozen=True)
class Discard:
    """Free candidate ``index``'s plan, prepared and not measured. No reply."""

    name: ClassVar[str] = "discard"
    index: int


@dataclass(frozen=True)
class Evaluate:
    """Measure candidate ``index`` (``config``; built now if it was not prepared) with ``runs`` timed runs,
    the fastest full measurement so far being ``best_seconds``. Replied ``{"running": index}`` once the
    plan is built and the device is about to run it, then ``{"record": {...}, "best_seconds": s}``."""

    name: ClassVar[str] = "evaluate"
    index: int
    config: Params
    runs: int
    best_seconds: float


@dataclass(frozen=True)
class BenchmarkFma:
    """The FMA micro-benchmark (``fma.benchmark``) of ``reals`` ('s', 'd') at ``widths``. Replied
    ``{"fma": [result, ...]}``."""

    name: ClassVar[str] = "fma"
    reals: tuple[str, ...]
    widths: tuple[int, ...]


@dataclass(frozen=True)
class Verify:
    """``config`` on awkward shapes of ``dtype`` (a key; ``verification.verify``). Replied
    ``{"verified": null}`` or what went wrong."""

    name: ClassVar[str] = "verify"
    config: Params
    dtype: str


@dataclass(frozen=True)
class TimeCalls:
    """Time products of ``config`` on the GEMM problem of ``dtype`` (a key) and ``shape`` (A and B
    row-major, stored as ``layout`` says) enqueued back to back, as a program's loop enqueues them: the
    host's time and the device's together, per product, by the wall clock (the queue drained at the
    end), over calls adding up to about ``seconds``. Replied ``{"seconds": s}``, or
    ``{"seconds": null, "error": why}`` for a configuration that does not build or run."""

    name: ClassVar[str] = "time-calls"
    config: Params
    dtype: str
    shape: tuple[int, ...]
    layout: str
    seconds: float


@dataclass(frozen=True)
class TimeHostCalls:
    """Time a product of ``dtype`` (a key) of two ``side`` x ``side`` numpy arrays into a new one, over calls
    adding up to about ``seconds`` each way: on the device through ``gemm``'s own engine, its host route
    aside (copies, plan and pools as a user's call has them), after a pause that lets numpy's BLAS threads
    settle, then by the host's BLAS (numpy's); each way the fastest of a few rounds. Replied
    ``{"device": s, "host": s}`` (``device`` null where it failed)."""

    name: ClassVar[str] = "time-host-calls"
    dtype: str
    side: int
    seconds: float


@dataclass(frozen=True)
class ComparePlans:
    """For each GEMM problem of ``problems`` (dtype key, m, n, k, layout), the plan a call makes under each
    profile of ``profiles`` (their JSON), timed as ``autogemm bench`` times it (operands on the device,
    the median of ``runs`` after a warm-up) where the plans differ. Replied ``{"compared": [...]}``, one
    item a problem: null where every profile makes the same plan, else one ``{"seconds": s, "config":
    {...}, "split": n, "gemv": [layout, rows, cols, vectors] or null}`` a profile (``seconds`` null, with
    ``error``, for a plan that fails)."""

    name: ClassVar[str] = "compare-plans"
    profiles: tuple[str, ...]
    problems: tuple[tuple, ...]
    runs: int


Request = (Start | MakeEvaluator | Prepare | Discard | Evaluate | BenchmarkFma | Verify | TimeCalls | TimeHostCalls
           | ComparePlans)
REQUESTS: dict[str, type] = {cls.name: cls for cls in (Start, MakeEvaluator, Prepare, Discard, Evaluate,
                                                          BenchmarkFma, Verify, TimeCalls, TimeHostCalls,
                                                          ComparePlans)}


def encode(request: Request) -> dict:
    """The JSON object of ``request``."""
    message: dict = {"request": request.name}
    for field in fields(request):
        value = getattr(request, field.name)
        if field.name == "config":
            value = value.to_dict()
        elif isinstance(value, EvaluatorSpec):
            value = asdict(value)
        message[field.name] = list(value) if isinstance(value, tuple) else value
    return message


def decode(message: dict) -> Request:
    """The request ``message`` (from ``encode``) stands for; ``ArgumentError`` for one no request has
    the shape of, ``ConfigError`` for a configuration that fails validation."""
    cls = REQUESTS.get(message.get("request")) if isinstance(message, dict) else None
    if cls is None:
        raise ArgumentError(f"not an evaluation request: {str(message)[:200]}")
    values = {}
    for field in fields(cls):
        if field.name not in message:
            continue
        value = message[field.name]
        if field.name == "config":
            value = params_from_dict(value, routine=None, backend=None)
        elif field.name == "spec":
            value = EvaluatorSpec.from_dict(value)
        elif isinstance(value, list):
            value = tuple(value)
        values[field.name] = value
    return cls(**values)
