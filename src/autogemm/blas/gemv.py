"""GEMV on row-major storage: ``GemvProblem`` (y = alpha op(A) x + beta y with A's leading dimension, the
vectors' increments and everyone's offsets, or several such vectors at once) and ``GemvLaunchPlan`` (the
gemv kernel of one configuration and, when the reduction is split over work-groups into more partial sums
than it adds up itself, the merge that adds the slices into y)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import numpy as np

from ..codelets import gemv as codelet
from ..codelets import helpers
from ..codelets.kernel import ceil_div, round_up
from ..codelets.writer import fence_options
from ..dtypes import Dtype
from ..errors import ConfigError, ShapeError
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.arguments import KernelArguments
from ..runtime.opencl.context import DeviceContext
from ..runtime.opencl.device import Device
from .problem import INT32_MAX, Op, addressable

#: A configuration per layout for devices without a tuned one: a warp per row (N) or per 32 columns (T),
#: eight of them per work-group, and the T reduction split so that a few waves of work-groups run.
DEFAULTS = {
    "N": codelet.GemvParams("N", 32, 8, 1, 4, 2),
    "T": codelet.GemvParams("T", 32, 8, 1, 4, 4),
}
_SAFE = {layout: codelet.GemvParams(layout, 1, 1, 1, 1, 0) for layout in codelet.params.LAYOUTS}
#: A split reduction's slices are added up by the kernel's last work-group to arrive at its outputs where
#: each of its work-items reads at most this many partial sums (its work-items share each output's
#: slices, ``GemvParams.summing_lanes``); more, and that one work-group's reads take longer than the
#: merge's launch of its own, whose work-items each read one output's.
SUMMED_MAX_READS = 1024
#: The work-items a work-group of a configuration's ``waves`` stands for: a configuration of smaller
#: work-groups splits the reduction further, so that as many work-items read A (a class tuned on long,
#: wide problems in groups of 32 work-items, met by a few outputs over a long reduction, ran a wave of
#: them on a GPU made to hold thousands of work-items a unit), as long as each slice keeps
#: ``FILL_MIN_SLICE`` elements of the reduction: shorter slices ran slower than fewer (the figures are in
#: the routines guide).
FILL_WORK_ITEMS, FILL_MIN_SLICE = 256, 1536


@dataclass(frozen=True)
class GemvProblem:
    """y = alpha op(A) x + beta y for A stored row-major as ``rows`` x ``cols`` (leading dimension ``lda``),
    op a transpose or not, conjugating or not; x and y ``incx`` and ``incy`` elements apart (positive).

    With ``vectors`` above 1, Y = alpha op(A) X + beta Y for that many pairs of x and y, vector j's
    starting ``j * ldx`` and ``j * ldy`` elements after the first (one of ``incy`` and ``ldy`` is 1: Y is
    a row-major matrix, or its transpose), x conjugated where ``conjugate_x``: the GEMM of a C with few
    columns (or rows) read as it is stored."""

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
    vectors: int = 1
    ldx: int = 0
    ldy: int = 0
    conjugate_x: bool = False

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
        if self.vectors < 1 or min(self.ldx, self.ldy) < 0:
            raise ShapeError(f"{self.vectors} vectors {self.ldx} and {self.ldy} apart: give at least one, "
                             "distances not negative")
        if self.vectors > 1 and 1 not in (self.incy, self.ldy):
            raise ShapeError(f"{self.vectors} vectors of y need incy or ldy 1, not {self.incy} and {self.ldy}")
        for name, value in (("rows", self.rows), ("cols", self.cols), ("lda", self.lda),
                            ("incx", self.incx), ("incy", self.incy), ("vectors", self.vectors),
                            ("ldx", self.ldx), ("ldy", self.ldy)):
            if value > INT32_MAX:
                raise ShapeError(f"{name}={value} exceeds the kernels' int32 range")
        for name, length, inc in (("x", self.reduction, self.incx), ("y", self.outputs, self.incy)):
            if length and (length - 1) * inc > INT32_MAX:
                raise ShapeError(f"{name} spans {(length - 1) * inc + 1} elements, past the kernels' int32 range")
        span = (self.outputs - 1) * self.incy + (self.vectors - 1) * self.ldy
        if self.outputs and span > addressable(self.dtype):
            raise ShapeError(f"y spans {span + 1} elements, beyond the merge kernel's 32-bit indexing")

    @property
    def packs_x(self) -> bool:
        """True where a plan packs X first (a launch of its own): layout N reads a vector's consecutive
        elements across a warp, and several vectors stored interleaved (``ldx`` 1) would have each load
        touch a cache line per work-item instead of sharing one across the warp."""
        return self.layout == "N" and self.vectors > 1 and self.incx != 1 and self.ldx == 1

    @property
    def y_rows_are_vectors(self) -> bool:
        """True where Y is stored as a row per vector (``incy`` 1 with several vectors): the merge then
        writes Y^T, vectors x outputs of leading dimension ``ldy``, else outputs x vectors of ``incy``."""
        return self.vectors > 1 and self.incy == 1


def default_gemv_params(device: Device, dt: Dtype, layout: str, vectors: int = 1) -> codelet.GemvParams:
    """The default of ``layout`` (taking as many of ``vectors`` right-hand sides per pass as fit), or the
    smallest configuration where it does not fit the device."""
    wanted = [replace(DEFAULTS[layout], vectors=v) for v in codelet.params.VECTORS if 1 < v < 2 * vectors][::-1]
    for params in (*wanted, DEFAULTS[layout], _SAFE[layout]):
        if codelet.check(params, device, dt) is None:
            return params
    raise ConfigError(f"no GEMV configuration fits {device.name.strip()}: {codelet.check(_SAFE[layout], device, dt)}")


class GemvLaunchPlan:
    """The launches of one ``GemvProblem`` with one configuration: the gemv kernel (after a pack of x
    stored interleaved; a split reduction added up in it, ``sums_slices``, or by the merge after it), or
    (alpha or the reduction 0) the scaling of y alone. The buffers of a split reduction's partial sums and
    counts of arrivals are allocated at the first ``enqueue``; ``release`` frees them."""

    def __init__(self, ctx: DeviceContext, problem: GemvProblem, params: codelet.GemvParams,
                 source: str = "given") -> None:
        problem.validate()
        self.ctx, self.problem, self.dtype = ctx, problem, problem.dtype
        self.params, self.params_source = params, source
        if not isinstance(self.params, codelet.GemvParams):
            raise ConfigError(f"a GEMV configuration must be a GemvParams, not {type(self.params).__name__}")
        if self.params.layout != problem.layout:
            raise ConfigError(f"configuration of layout {self.params.layout} for a problem of layout {problem.layout}")
        reason = codelet.check(self.params, ctx.device, problem.dtype)
        if reason:
            raise ConfigError(f"configuration rejected for {ctx.device.name.strip()}: {reason}")
        self.vector_groups = self.params.passes(problem.vectors)
        self.slices, self.chunk = self._split()
        block = min(problem.vectors, self.params.vectors)
        lanes = self.params.summing_lanes(block, self.slices)
        reads = (ceil_div(self.params.outputs_per_group * block * lanes, self.params.work_group_size)
                 * ceil_div(self.slices, lanes))
        self.sums_slices = self.slices > 1 and reads <= SUMMED_MAX_READS
        self.lanes = lanes if self.sums_slices else 1      # work-items adding up each output's slices
        self.packs_x = problem.packs_x
        self.kernel_source = codelet.render(self.params, self.dtype, problem.op.conjugated and self.dtype.is_complex,
                                            conjugate_x=problem.conjugate_x and self.dtype.is_complex,
                                            vectors=problem.vectors, unit_x=self.packs_x or problem.incx == 1,
                                            lanes=self.lanes)
        self._partial: ocl.Buffer | None = None
        self._arrivals: ocl.Buffer | None = None
        self._lock = threading.Lock()
        self._arguments = KernelArguments(problem.dtype.scalar_numpy.type)
        self.kernel = ctx.kernel(self.kernel_source.source, self.kernel_source.name,
                                 self.kernel_source.options + fence_options(ctx.device))
        epilogues = helpers.epilogues(self.dtype)
        self._merge = ctx.kernel(epilogues.source, "merge") if self.slices > 1 and not self.sums_slices else None
        self.merge_lanes = helpers.lanes_for(self.slices, helpers.TILE) if self._merge is not None else 1
        self._scale = ctx.kernel(epilogues.source, "scale")
        self._x: ocl.Buffer | None = None
        if self.packs_x:
            pack = helpers.pack(self.dtype, transpose=True, conjugate=False)
            self._pack = ctx.kernel(pack.source, pack.name)

    def _split(self) -> tuple[int, int]:
        """(slices, chunk): how many work-groups share each output's reduction, and how many elements of
        it each takes (a whole number of reduction steps). Split until about ``waves`` x compute units
        work-groups run, or for groups under ``FILL_WORK_ITEMS`` work-items until as many work-items run
        (each slice but the last ``FILL_MIN_SLICE`` elements at least), no further than one step per
        slice."""
        p, pr = self.params, self.problem
        step, length = p.reduction_step, max(pr.reduction, 1)
        groups = ceil_div(max(pr.outputs, 1), p.outputs_per_group) * self.vector_groups
        wave_groups = p.waves * self.ctx.device.compute_units
        wanted = ceil_div(wave_groups, groups) if p.waves else 1
        if p.waves and p.work_group_size < FILL_WORK_ITEMS:
            filled = ceil_div(wave_groups * FILL_WORK_ITEMS // p.work_group_size, groups)
            wanted = max(wanted, min(filled, length // FILL_MIN_SLICE))
        slices = max(1, min(wanted, ceil_div(length, step)))
        chunk = round_up(ceil_div(length, slices), step)
        return ceil_div(length, chunk), chunk

    def global_size(self) -> tuple[int, int, int]:
        """The NDRange: output blocks along one dimension, slices of the reduction along the other, groups
        of right-hand sides along the third."""
        p = self.params
        blocks = ceil_div(self.problem.outputs, p.outputs_per_group)
        if p.layout == "N":
            return self.slices * p.wg_x, blocks * p.wg_y, self.vector_groups
        return blocks * p.wg_x, self.slices * p.wg_y, self.vector_groups

    @property
    def work_groups(self) -> int:
        """The work-groups the GEMV kernel launches (how many compute units it can keep busy)."""
        grid = self.global_size()
        return grid[0] // self.params.wg_x * (grid[1] // self.params.wg_y) * grid[2]

    @property
    def output_groups(self) -> int:
        """The work-groups of one slice of the reduction: each group of outputs, for each group of vectors
        (a split reduction counts the slices arrived at each)."""
        return self.work_groups // self.slices

    def _y_matrix(self) -> tuple[int, int, int]:
        """Y as the merge and scale kernels see it, a row-major matrix (rows, columns, leading dimension):
        outputs x vectors, or vectors x outputs where each vector is a row of Y. Each slice's partial sums
        are that matrix, dense."""
        pr = self.problem
        if pr.y_rows_are_vectors:
            return pr.vectors, pr.outputs, pr.ldy
        return pr.outputs, pr.vectors, pr.incy

    def temporary_bytes(self) -> dict[str, int]:
        """The bytes of the buffers ``enqueue`` allocates: the partial sums of a split reduction and its
        counts of arrivals, and the right-hand sides packed one after another (``GemvProblem.packs_x``)."""
        pr, sizes = self.problem, {}
        if self.slices > 1:
            sizes["partial"] = self.slices * pr.outputs * pr.vectors * self.dtype.compute.itemsize
        if self.sums_slices:
            sizes["arrivals"] = 4 * self.output_groups
        if self.packs_x:
            sizes["x"] = pr.vectors * pr.reduction * self.dtype.itemsize
        return sizes

    @property
    def allocated(self) -> bool:
        """True while the plan holds its temporary buffers."""
        return any(buffer is not None for buffer in (self._partial, self._arrivals, self._x))

    def release(self) -> None:
        for buffer in (self._partial, self._arrivals, self._x):
            if buffer is not None:
                buffer.release()
        self._partial = self._arrivals = self._x = None
        self._arguments.clear()

    def enqueue(self, a: ocl.Buffer, x: ocl.Buffer, y: ocl.Buffer, alpha: complex | float = 1.0,
                beta: complex | float = 0.0, wait_for: list[ocl.Event] | None = None,
                offsets: tuple[int, int, int] | None = None) -> list[ocl.Event]:
        """Enqueue y = alpha op(A) x + beta y on the device's queue; the events, first to last (none when y
        is empty). ``offsets`` (A's, x's, y's elements) replace the problem's. With alpha 0 or an empty
        reduction only y = beta y runs, as BLAS does (A and x are not read)."""
        pr = self.problem
        offset_a, offset_x, offset_y = offsets or (pr.offset_a, pr.offset_x, pr.offset_y)
        queue = self.ctx.queue
        if pr.outputs == 0:
            return []
        tiles = (helpers.TILE, helpers.TILE, 1)
        y_rows, y_cols, y_ld = self._y_matrix()
        y_grid = (round_up(y_cols, helpers.TILE), round_up(y_rows, helpers.TILE), 1)
        with self._lock:
            if alpha == 0 or pr.reduction == 0:
                if beta == 1:           # BLAS's quick return: y as it is, whatever it holds
                    return []
                self._arguments.set(self._scale, helpers.SCALE_SIGNATURE, y_rows, y_cols, y, offset_y, y_ld, beta, 0)
                return [ocl.launch(queue, self._scale, y_grid, tiles, wait_for=wait_for)]
            sizes = self.temporary_bytes()
            if self.slices > 1 and self._partial is None:
                self._partial = ocl.device_buffer(self.ctx.context, sizes["partial"])
            if self.sums_slices and self._arrivals is None:
                self._arrivals = ocl.buffer_of(self.ctx.context, np.zeros(self.output_groups, np.int32))
            if self.packs_x and self._x is None:
                self._x = ocl.device_buffer(self.ctx.context, sizes["x"])
            partial = self._partial if self._partial is not None else y   # unsplit: never written
            arrivals = self._arrivals if self._arrivals is not None else y
            launches = []
            if self.packs_x:
                # X stored reduction x vectors (leading dimension incx) -> vectors x reduction
                self._arguments.set(self._pack, helpers.PACK_SIGNATURE, pr.vectors, pr.reduction, x, offset_x, pr.incx,
                                    self._x, 0, pr.vectors, pr.reduction, pr.reduction, 0, 0)
                launches.append((self._pack, (round_up(pr.reduction, helpers.TILE),
                                              round_up(pr.vectors, helpers.TILE), 1), tiles))
                x, offset_x, incx, ldx = self._x, 0, 1, pr.reduction
            else:
                incx, ldx = pr.incx, pr.ldx
            # a slice's partial sums, Y's matrix dense: element (o, v) at o x partial_o + v x partial_v
            partial_o, partial_v = (1, y_cols) if pr.y_rows_are_vectors else (y_cols, 1)
            self._arguments.set(self.kernel, codelet.GEMV_SIGNATURE, pr.rows, pr.cols, self.chunk, self.slices,
                                pr.vectors, a, offset_a, pr.lda, x, offset_x, incx, ldx, y, offset_y, pr.incy, pr.ldy,
                                partial, partial_o, partial_v, arrivals, int(self.sums_slices), alpha, beta)
            if self._merge is not None:
                self._arguments.set(self._merge, helpers.MERGE_SIGNATURE, y_rows, y_cols, self._partial, y_cols,
                                    pr.outputs * pr.vectors, self.slices, alpha, y, offset_y, y_ld, beta, 0,
                                    self.merge_lanes)
            launches.append((self.kernel, self.global_size(), (self.params.wg_x, self.params.wg_y, 1)))
            if self._merge is not None:
                launches.append((self._merge, (y_grid[0], round_up(y_rows * self.merge_lanes, helpers.TILE), 1),
                                 tiles))
            events = []
            for kernel, grid, group in launches:
                events.append(ocl.launch(queue, kernel, grid, group,
                                         wait_for=None if events else wait_for))
            return events

    def describe(self) -> str:
        """What ``enqueue`` launches, for logs."""
        text = ("pack x ; " if self.packs_x else "") + f"{self.params.describe()} ({self.params_source})"
        if self.slices == 1:
            return text
        merge = f" ; merge y ({self.merge_lanes} work-items an element)" if self.merge_lanes > 1 else " ; merge y"
        return text + f", reduction split in {self.slices}" + (", summed in the kernel" if self.sums_slices
                                                                else merge)
