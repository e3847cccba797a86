"""A product of device buffers where one matrix spans more elements than the kernels' 32-bit indices
reach (2^31 reals: 2^30 complex elements), run in blocks that each fit: rows of C (with A's rows where A
is stored untransposed), columns of C where B is stored transposed, and parts of K where A is stored
transposed or B is not (the blocks of K after the first add into C). Kernels take 64-bit offsets, so a
block is the same buffers at its first elements; only the indices within a block are 32-bit.

Numpy operands that large never come here: they stream through the device in tiles (``shares.streaming``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product

from ..errors import DeviceError, ShapeError
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from ..runtime.opencl.memory import check_memory
from .launch_plan import LaunchPlan
from .plan_cache import cached_plan
from .problem import INT32_MAX, GemmProblem, addressable

#: The reals a matrix of one launch may span (tests lower it to cut small problems into blocks).
INDEX_LIMIT = INT32_MAX
#: The smallest limit blocks are halved to when a plan's padded copies of them do not fit.
MIN_LIMIT = 2**20


@dataclass(frozen=True)
class Block:
    """One block: its problem (its offsets where its operands begin in the whole ones), and whether it
    adds into C (a later part of K)."""

    problem: GemmProblem
    accumulate: bool


def _rows_fitting(ld: int, row: int, limit: int) -> int:
    """How many stored rows of ``row`` elements, ``ld`` apart, fit within ``limit`` elements."""
    return max(1, (limit - row) // max(ld, 1) + 1)


def exceeds(problem: GemmProblem) -> bool:
    """Whether a matrix of ``problem`` spans more than ``INDEX_LIMIT`` reals (then run it in blocks)."""
    limit = addressable(problem.dtype, INDEX_LIMIT)
    return any(problem.member_elements(name) > limit for name in "ABC")


def blocks(problem: GemmProblem, limit: int | None = None) -> list[Block]:
    """The blocks of ``problem`` (one product, not a batch), in the order to run them, each operand of
    each within ``limit`` reals (``INDEX_LIMIT`` if None); one block when it fits as it is."""
    pr, limit = problem, addressable(problem.dtype, INDEX_LIMIT if limit is None else limit)
    a_t, b_t = pr.op_a.transposed, pr.op_b.transposed
    rows = _rows_fitting(pr.ldc, pr.n, limit)                                 # C's rows
    if not a_t:
        rows = min(rows, _rows_fitting(pr.lda, pr.k, limit))                  # A's rows are C's
    cols = _rows_fitting(pr.ldb, pr.k, limit) if b_t else pr.n                # B^T's rows are C's columns
    depth = pr.k
    if a_t:
        depth = min(depth, _rows_fitting(pr.lda, min(rows, pr.m), limit))     # A^T's rows are K
    if not b_t:
        depth = min(depth, _rows_fitting(pr.ldb, min(cols, pr.n), limit))     # B's rows are K
    found = []
    for r0, c0 in product(range(0, pr.m, rows), range(0, pr.n, cols)):
        m, n = min(rows, pr.m - r0), min(cols, pr.n - c0)
        for k0 in range(0, max(pr.k, 1), max(depth, 1)):
            k = min(depth, pr.k - k0)
            block = replace(pr, m=m, n=n, k=k,
                            offset_a=pr.offset_a + (k0 * pr.lda + r0 if a_t else r0 * pr.lda + k0),
                            offset_b=pr.offset_b + (c0 * pr.ldb + k0 if b_t else k0 * pr.ldb + c0),
                            offset_c=pr.offset_c + r0 * pr.ldc + c0)
            found.append(Block(block, accumulate=k0 > 0))
    return found


def _planned(ctx: DeviceContext, problem: GemmProblem, config, edge: str, limit: int) -> list[tuple[Block, LaunchPlan]]:
    """The blocks of ``problem`` within ``limit`` reals, each with its plan; ``ShapeError`` or
    ``DeviceError`` where a plan's temporaries do not fit."""
    planned = [(block, cached_plan(ctx, block.problem.aligned(), config, edge)) for block in blocks(problem, limit)]
    new = {id(plan): plan for _, plan in planned if not plan.allocated}
    check_memory(ctx, [size for plan in new.values() for size in plan.temporary_bytes().values()])
    return planned


def enqueue_blocks(ctx: DeviceContext, problem: GemmProblem, config, edge: str,
                   buffers: tuple[ocl.Buffer, ocl.Buffer, ocl.Buffer], alpha, beta,
                   wait_for: list[ocl.Event]) -> list[ocl.Event]:
    """Enqueue ``problem`` on ``buffers`` block by block (on one in-order queue: each block after the
    last); the events of the last block's launches. Blocks are halved until their plans' temporaries
    (operands padded to the tiles) fit the indices and the device's memory too."""
    limit = INDEX_LIMIT
    while True:
        try:
            planned = _planned(ctx, problem, config, edge, limit)
            break
        except (ShapeError, DeviceError):
            if limit < 2 * MIN_LIMIT:
                raise
            limit //= 2
    events: list[ocl.Event] = []
    for block, plan in planned:
        pr = block.problem
        events = plan.enqueue(*buffers, alpha=alpha, beta=1 if block.accumulate else beta,
                              wait_for=None if events else wait_for,
                              offsets=(pr.offset_a, pr.offset_b, pr.offset_c)) or events
    return events
