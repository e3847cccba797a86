"""A product of device buffers whose operands span more elements than the kernels' 32-bit indices reach
(2^31), run in blocks that each fit: rows of C (with A's rows where A is stored untransposed), columns of
C where B is stored transposed, and parts of K where A is stored transposed or B is not (the blocks of K
after the first add into C). Each block's operands are sub-buffers that begin at the block's first
element (rounded down to the device's base-address alignment), so that its offsets are small too.

Numpy operands that large never come here: they stream through the device in tiles (``stream``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product

import pyopencl as cl

from .plan_cache import cached_plan
from .problem import INT32_MAX, GemmProblem

#: The elements an operand of one launch may span (tests lower it to cut small problems into blocks).
INDEX_LIMIT = INT32_MAX


@dataclass(frozen=True)
class Block:
    """One block: its problem (offsets 0), where its operands begin in the whole ones (elements), and
    whether it adds into C (a later part of K)."""

    problem: GemmProblem
    starts: tuple[int, int, int]
    accumulate: bool


def _rows_fitting(ld: int, row: int, limit: int) -> int:
    """How many stored rows of ``row`` elements, ``ld`` apart, fit within ``limit`` elements."""
    return max(1, (limit - row) // max(ld, 1) + 1)


def exceeds(problem: GemmProblem) -> bool:
    """Whether an operand of ``problem`` spans more than ``INDEX_LIMIT`` elements (then run it in blocks)."""
    return any(problem.elements_needed(name) > INDEX_LIMIT for name in "ABC")


def blocks(problem: GemmProblem) -> list[Block]:
    """The blocks of ``problem`` (one product, not a batch), in the order to run them, each operand of
    each within ``INDEX_LIMIT`` elements; one block when it fits as it is."""
    pr, limit = problem, INDEX_LIMIT
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
            starts = (pr.offset_a + (k0 * pr.lda + r0 if a_t else r0 * pr.lda + k0),
                      pr.offset_b + (c0 * pr.ldb + k0 if b_t else k0 * pr.ldb + c0),
                      pr.offset_c + r0 * pr.ldc + c0)
            block = replace(pr, m=m, n=n, k=k, offset_a=0, offset_b=0, offset_c=0)
            found.append(Block(block, starts, accumulate=k0 > 0))
    return found


def _sub_buffer(buffer: cl.Buffer, start: int, extent: int, itemsize: int, align: int) -> tuple[cl.Buffer, int]:
    """A sub-buffer of ``buffer`` holding elements [start, start + extent), and the element offset of
    ``start`` in it (the sub-buffer begins at an address aligned to ``align`` bytes)."""
    origin = start * itemsize // align * align
    size = min(start * itemsize + max(extent, 1) * itemsize, buffer.size) - origin
    return buffer.get_sub_region(origin, size), (start * itemsize - origin) // itemsize


def enqueue_blocks(ctx, problem: GemmProblem, config, edge: str, buffers: tuple[cl.Buffer, cl.Buffer, cl.Buffer],
                   alpha, beta, wait_for: list[cl.Event]) -> list[cl.Event]:
    """Enqueue ``problem`` on ``buffers`` block by block (on one in-order queue: each block after the
    last); the events of the last block's launches."""
    align = max(ctx.device.cl_device.mem_base_addr_align // 8, 1)
    itemsizes = (problem.dtype.itemsize, problem.dtype.itemsize, problem.dtype.output.itemsize)
    events: list[cl.Event] = []
    for block in blocks(problem):
        pr = block.problem
        subs = [_sub_buffer(buf, start, pr.elements_needed(name), size, align)
                for buf, start, name, size in zip(buffers, block.starts, "ABC", itemsizes)]
        offsets = tuple(offset for _, offset in subs)
        placed = replace(pr, offset_a=offsets[0], offset_b=offsets[1], offset_c=offsets[2])
        plan = cached_plan(ctx, placed.aligned(), config, edge)
        events = plan.enqueue(*(sub for sub, _ in subs), alpha=alpha, beta=1 if block.accumulate else beta,
                              wait_for=None if events else wait_for, offsets=offsets) or events
    return events
