"""A GEMM whose C has few columns or few rows, computed as a GEMV of several right-hand sides.

C = op(A) op(B) with n columns, n at most ``MAX_VECTORS``, is Y = op(A) X for the n columns of op(B); with
m rows, C^T = op(B)^T op(A)^T is Y = op(B)^T X for the m rows of op(A). Either way the multi-vector GEMV
reads the matrix once at memory bandwidth, where a GEMM kernel's blocks of 32 to 128 rows and columns
would be mostly padding. ``blas.plans.plan_for`` makes the plan a GEMM call runs on: a ``VectorsPlan``
for such a product, else a ``LaunchPlan``."""

from __future__ import annotations

from dataclasses import dataclass

from ..codelets.gemv import GemvParams
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from .gemv import GemvLaunchPlan, GemvProblem
from .problem import GemmProblem, Op

#: A product whose C has at most this many columns (or rows) is computed by the multi-vector GEMV.
MAX_VECTORS = 16


@dataclass(frozen=True)
class VectorsRoute:
    """How a GEMM is a GEMV: the GEMV problem on the operands' storage, and whether its matrix is B (C's
    rows are the vectors; A's elements are then x's) rather than A."""

    gemv: GemvProblem
    matrix_is_b: bool


def as_vectors(problem: GemmProblem) -> VectorsRoute | None:
    """The multi-vector GEMV that computes ``problem`` as it is stored, or None where it is not one: C
    of more than ``MAX_VECTORS`` rows and columns, or empty; a batch; a precision mode or a C of another
    dtype than the operands' (GEMM kernels do those). Whether a device runs it so is
    ``selection.vectors_route``'s to say."""
    pr, dt = problem, problem.dtype
    if pr.batch != 1 or dt.precision or dt.output is not dt or min(pr.m, pr.n) < 1 \
            or min(pr.m, pr.n) > MAX_VECTORS:
        return None
    if pr.n <= pr.m:
        # Y = op(A) X: vector j is column j of op(B) (row j of a transposed B), y_j column j of C
        rows, cols = (pr.k, pr.m) if pr.op_a.transposed else (pr.m, pr.k)
        incx, ldx = (1, pr.ldb) if pr.op_b.transposed else (pr.ldb, 1)
        gemv = GemvProblem(dt, rows, cols, pr.op_a, pr.lda, incx, pr.ldc, pr.offset_a, pr.offset_b, pr.offset_c,
                           vectors=pr.n, ldx=ldx, ldy=1, conjugate_x=pr.op_b.conjugated)
        return VectorsRoute(gemv, matrix_is_b=False)
    # Y = op(B)^T X: vector i is row i of op(A) (column i of a transposed A), y_i row i of C
    rows, cols = (pr.n, pr.k) if pr.op_b.transposed else (pr.k, pr.n)
    incx, ldx = (pr.lda, 1) if pr.op_a.transposed else (1, pr.lda)
    gemv = GemvProblem(dt, rows, cols, Op(not pr.op_b.transposed, pr.op_b.conjugated), pr.ldb, incx, 1,
                       pr.offset_b, pr.offset_a, pr.offset_c, vectors=pr.m, ldx=ldx, ldy=pr.ldc,
                       conjugate_x=pr.op_a.conjugated)
    return VectorsRoute(gemv, matrix_is_b=True)


class VectorsPlan:
    """The plan of a GEMM that ``as_vectors`` routes to GEMV: a ``GemvLaunchPlan`` behind the interface of
    a ``LaunchPlan`` (``enqueue`` takes A, B and C and their offsets), so that every caller of a GEMM plan
    runs it unchanged."""

    def __init__(self, ctx: DeviceContext, problem: GemmProblem, route: VectorsRoute, params: GemvParams,
                 source: str = "given") -> None:
        self.ctx, self.problem, self.route = ctx, problem, route
        self.gemv = GemvLaunchPlan(ctx, route.gemv, params, source)

    @property
    def params(self) -> GemvParams:
        return self.gemv.params

    @property
    def params_source(self) -> str:
        return self.gemv.params_source

    @property
    def allocated(self) -> bool:
        return self.gemv.allocated

    @property
    def work_groups(self) -> int:
        return self.gemv.work_groups

    def temporary_bytes(self) -> dict[str, int]:
        return self.gemv.temporary_bytes()

    def release(self) -> None:
        self.gemv.release()

    def enqueue(self, a: ocl.Buffer, b: ocl.Buffer, c: ocl.Buffer, alpha: complex | float = 1.0,
                beta: complex | float = 0.0, wait_for: list[ocl.Event] | None = None,
                offsets: tuple[int, int, int] | None = None) -> list[ocl.Event]:
        """``LaunchPlan.enqueue``: C = alpha op(A) op(B) + beta C, A's, B's and C's element offsets
        ``offsets`` where they are not the problem's."""
        pr = self.problem
        offset_a, offset_b, offset_c = offsets or (pr.offset_a, pr.offset_b, pr.offset_c)
        if self.route.matrix_is_b:
            return self.gemv.enqueue(b, a, c, alpha, beta, wait_for, (offset_b, offset_a, offset_c))
        return self.gemv.enqueue(a, b, c, alpha, beta, wait_for, (offset_a, offset_b, offset_c))

    def describe(self) -> str:
        """What this plan launches, for logs and ``autogemm run``."""
        vectors = self.route.gemv.vectors
        whose = "rows" if self.route.matrix_is_b else "columns"
        return f"{self.gemv.describe()}: C's {vectors} {whose} as GEMV right-hand sides"

