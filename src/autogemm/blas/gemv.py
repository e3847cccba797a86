"""GEMV on row-major storage: ``GemvProblem`` (y = alpha op(A) x + beta y with A's leading dimension, the
vectors' increments and everyone's offsets) and ``GemvLaunchPlan`` (the gemv kernel of one configuration
and, when the reduction is split over work-groups, the merge that adds the slices into y)."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ..codelets import gemv as codelet
from ..codelets import helpers
from ..codelets.kernel import ceil_div, round_up
from ..dtypes import Dtype
from ..errors import ConfigError, ShapeError
from ..profiles import profile_for
from ..runtime.arguments import KernelArguments
from ..runtime.context import DeviceContext
from ..runtime.device import Device
from .problem import INT32_MAX, Op, addressable

#: A configuration per layout for devices without a tuned one: a warp per row (N) or per 32 columns (T),
#: eight of them per work-group, and the T reduction split so that a few waves of work-groups run.
DEFAULTS = {
    "N": codelet.GemvParams("N", 32, 8, 1, 4, 2),
    "T": codelet.GemvParams("T", 32, 8, 1, 4, 4),
}
_SAFE = {layout: codelet.GemvParams(layout, 1, 1, 1, 1, 0) for layout in codelet.params.LAYOUTS}


@dataclass(frozen=True)
class GemvProblem:
    """y = alpha op(A) x + beta y for A stored row-major as ``rows`` x ``cols`` (leading dimension ``lda``),
    op a transpose or not, conjugating or not; x and y ``incx`` and ``incy`` elements apart (positive)."""

    dtype: Dtype
    rows: int
    cols: int
    op: Op = Op()
    lda: int = 0
    incx: int = 1
    incy: int = 1
    offset_a: int = 0
    offset_x: int = 0
    offset_y: int = 0

    @property
    def layout(self) -> str:
        """The codelet layout that reads A as stored: N for y = A x, T for y = A^T x."""
        return "T" if self.op.transposed else "N"

    @property
    def outputs(self) -> int:
        """The length of y."""
        return self.cols if self.op.transposed else self.rows

    @property
    def reduction(self) -> int:
        """The length of x: how many products each output sums."""
        return self.rows if self.op.transposed else self.cols

    def validate(self) -> None:
        """``ShapeError`` for storage the kernel cannot address (negative or short strides, indices past
        int32 where the kernel counts in int)."""
        if min(self.rows, self.cols) < 0:
            raise ShapeError(f"A's dimensions {self.rows}x{self.cols} must not be negative")
        if self.lda < max(1, self.cols):
            raise ShapeError(f"lda={self.lda} is below the {self.cols} columns A stores per row")
        if self.incx < 1 or self.incy < 1:
            raise ShapeError(f"the increments of x and y must be positive, not {self.incx} and {self.incy}")
        for name, value in (("rows", self.rows), ("cols", self.cols), ("lda", self.lda),
                            ("incx", self.incx), ("incy", self.incy)):
            if value > INT32_MAX:
                raise ShapeError(f"{name}={value} exceeds the kernels' int32 range")
        for name, length, inc in (("x", self.reduction, self.incx), ("y", self.outputs, self.incy)):
            if length and (length - 1) * inc > INT32_MAX:
                raise ShapeError(f"{name} spans {(length - 1) * inc + 1} elements, past the kernels' int32 range")
        if self.outputs and (self.outputs - 1) * self.incy > addressable(self.dtype):
            raise ShapeError(f"y spans {(self.outputs - 1) * self.incy + 1} elements, beyond the merge kernel's "
                             "32-bit indexing")


def default_gemv_params(device: Device, dt: Dtype, layout: str) -> codelet.GemvParams:
    """The default of ``layout``, or the smallest configuration where it does not fit the device."""
    for params in (DEFAULTS[layout], _SAFE[layout]):
        if codelet.check(params, device, dt) is None:
            return params
    raise ConfigError(f"no GEMV configuration fits {device.name.strip()}: {codelet.check(_SAFE[layout], device, dt)}")


def choose_gemv_params(device: Device, problem: GemvProblem) -> tuple[codelet.GemvParams, str]:
    """The configuration for ``problem`` on ``device`` and where it came from: from the device's profile,
    the best one that passes ``check`` of the class of the problem's layout nearest to it in shape
    (outputs and reduction length, in log scale); else the default."""
    dt, layout = problem.dtype, problem.layout
    profile = profile_for(device)
    if profile is not None:
        def distance(entry) -> float:
            rows, cols = entry.shape[:2]
            tuned = (cols, rows) if layout == "T" else (rows, cols)
            return sum(abs(math.log(max(a, 1)) - math.log(max(b, 1)))
                       for a, b in zip(tuned, (problem.outputs, problem.reduction)))

        for entry in sorted(profile.gemv_entries(dt.key, layout), key=distance):
            for ranked in entry.ranked:
                if codelet.check(ranked.config, device, dt) is None:
                    return ranked.config, f"profile {profile.device_fingerprint} {entry.name}"
    return default_gemv_params(device, dt, layout), "default"


class GemvLaunchPlan:
    """The launches of one ``GemvProblem`` with one configuration: the gemv kernel, the merge of a split
    reduction, or (alpha or the reduction 0) the scaling of y alone. Its partial sums buffer is allocated
    at the first ``enqueue``; ``release`` frees it."""

    def __init__(self, ctx: DeviceContext, problem: GemvProblem, params: codelet.GemvParams | None = None) -> None:
        problem.validate()
        self.ctx, self.problem, self.dtype = ctx, problem, problem.dtype
        if params is None:
            self.params, self.params_source = choose_gemv_params(ctx.device, problem)
        else:
            self.params, self.params_source = params, "given"
        if not isinstance(self.params, codelet.GemvParams):
            raise ConfigError(f"a GEMV configuration must be a GemvParams, not {type(self.params).__name__}")
        if self.params.layout != problem.layout:
            raise ConfigError(f"configuration of layout {self.params.layout} for a problem of layout {problem.layout}")
        reason = codelet.check(self.params, ctx.device, problem.dtype)
        if reason:
            raise ConfigError(f"configuration rejected for {ctx.device.name.strip()}: {reason}")
        self.kernel_source = codelet.render(self.params, self.dtype, problem.op.conjugated and self.dtype.is_complex)
        self.slices, self.chunk = self._split()
        self._partial: cl.Buffer | None = None
        self._lock = threading.Lock()
        self._arguments = KernelArguments()
        self.kernel = ctx.kernel(self.kernel_source.source, self.kernel_source.name, self.kernel_source.options)
        epilogues = helpers.epilogues(self.dtype)
        self._merge = ctx.kernel(epilogues.source, "merge") if self.slices > 1 else None
        self._scale = ctx.kernel(epilogues.source, "scale")

    def _split(self) -> tuple[int, int]:
        """(slices, chunk): how many work-groups share each output's reduction, and how many elements of
        it each takes (a whole number of reduction steps). Split until about ``waves`` x compute units
        work-groups run, no further than one step per slice."""
        p, pr = self.params, self.problem
        step, length = p.reduction_step, max(pr.reduction, 1)
        groups = ceil_div(max(pr.outputs, 1), p.outputs_per_group)
        wanted = ceil_div(p.waves * self.ctx.device.compute_units, groups) if p.waves else 1
        slices = max(1, min(wanted, ceil_div(length, step)))
        chunk = round_up(ceil_div(length, slices), step)
        return ceil_div(length, chunk), chunk

    def global_size(self) -> tuple[int, int]:
        """The NDRange: output blocks along one dimension, slices of the reduction along the other."""
        p = self.params
        blocks = ceil_div(self.problem.outputs, p.outputs_per_group)
        if p.layout == "N":
            return self.slices * p.wg_x, blocks * p.wg_y
        return blocks * p.wg_x, self.slices * p.wg_y

    def temporary_bytes(self) -> dict[str, int]:
        """The bytes of the buffer ``enqueue`` allocates: the partial sums of a split reduction."""
        if self.slices == 1:
            return {}
        return {"partial": self.slices * self.problem.outputs * self.dtype.compute.itemsize}

    @property
    def allocated(self) -> bool:
        """True while the plan holds its partial sums buffer."""
        return self._partial is not None

    def release(self) -> None:
        if self._partial is not None:
            self._partial.release()
            self._partial = None
            self._arguments.clear()

    def _scalar(self, value: complex | float) -> np.generic:
        return self.dtype.scalar_numpy.type(value)

    def enqueue(self, a: cl.Buffer, x: cl.Buffer, y: cl.Buffer, alpha: complex | float = 1.0,
                beta: complex | float = 0.0, wait_for: list[cl.Event] | None = None,
                offsets: tuple[int, int, int] | None = None) -> list[cl.Event]:
        """Enqueue y = alpha op(A) x + beta y on the device's queue; the events, first to last (none when y
        is empty). ``offsets`` (A's, x's, y's elements) replace the problem's. With alpha 0 or an empty
        reduction only y = beta y runs, as BLAS does (A and x are not read)."""
        pr, i32, i64 = self.problem, np.int32, np.int64
        offset_a, offset_x, offset_y = offsets or (pr.offset_a, pr.offset_x, pr.offset_y)
        queue = self.ctx.queue
        if pr.outputs == 0:
            return []
        tiles = (helpers.TILE, helpers.TILE, 1)
        with self._lock:
            if alpha == 0 or pr.reduction == 0:
                self._arguments.set(self._scale, i32(pr.outputs), i32(1), y, i64(offset_y), i32(pr.incy),
                                    self._scalar(beta), i32(0))
                grid = (helpers.TILE, round_up(pr.outputs, helpers.TILE), 1)
                return [cl.enqueue_nd_range_kernel(queue, self._scale, grid, tiles, wait_for=wait_for)]
            if self.slices > 1 and self._partial is None:
                self._partial = cl.Buffer(self.ctx.context, cl.mem_flags.READ_WRITE, self.temporary_bytes()["partial"])
            partial = self._partial if self._partial is not None else y   # unsplit: never written
            self._arguments.set(self.kernel, i32(pr.rows), i32(pr.cols), i32(self.chunk), i32(self.slices), a,
                                 i64(offset_a), i32(pr.lda), x, i64(offset_x), i32(pr.incx), y, i64(offset_y),
                                 i32(pr.incy), partial, self._scalar(alpha), self._scalar(beta))
            if self._merge is not None:
                # y as an outputs x 1 matrix of leading dimension incy; the slices are its T_s
                self._arguments.set(self._merge, i32(pr.outputs), i32(1), self._partial, i32(1), i32(pr.outputs),
                                     i32(self.slices), self._scalar(alpha), y, i64(offset_y), i32(pr.incy),
                                     self._scalar(beta), i32(0))
            events = [cl.enqueue_nd_range_kernel(queue, self.kernel, self.global_size(),
                                                 (self.params.wg_x, self.params.wg_y), wait_for=wait_for)]
            if self._merge is not None:
                events.append(cl.enqueue_nd_range_kernel(queue, self._merge,
                                                         (helpers.TILE, round_up(pr.outputs, helpers.TILE), 1), tiles))
            return events

    def describe(self) -> str:
        """What ``enqueue`` launches, for logs."""
        text = f"{self.params.describe()} ({self.params_source})"
        return text + (f", reduction split in {self.slices} ; merge y" if self.slices > 1 else "")
