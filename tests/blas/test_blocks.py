"""Products of device arrays past the kernels' 32-bit indexing (issue 8) run in blocks that each fit
(``blas.index_blocks``). Tests lower the limit, so that small arrays are cut the way arrays of 2^31 elements
would be: rows of C and A, columns of C and B^T, and parts of K added into C."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array
import pytest

import autogemm
from autogemm.accuracy import apply_op, random_matrix, relative_error, tolerance
from autogemm.blas import index_blocks
from autogemm.blas import launch_plan as plan_module
from autogemm.blas.problem import GemmProblem, Op
from autogemm.dtypes import DTYPES

LIMIT = 3000


@pytest.mark.parametrize("ta, tb", [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")])
def test_every_block_fits_and_together_they_cover_the_product_once(ta, tb):
    pr = GemmProblem(DTYPES["s"], 97, 83, 61, Op.from_letter(ta, "a"), Op.from_letter(tb, "b"),
                     lda=(97 if ta == "T" else 61) + 3, ldb=(61 if tb == "T" else 83) + 2, ldc=90,
                     offset_a=7, offset_b=11, offset_c=5)
    old, index_blocks.INDEX_LIMIT = index_blocks.INDEX_LIMIT, LIMIT
    try:
        found = index_blocks.blocks(pr)
    finally:
        index_blocks.INDEX_LIMIT = old
    assert len(found) > 1
    covered = np.zeros((97, 83, 61), int)            # row of C, column of C, index along K
    for block in found:
        b = block.problem
        assert all(b.member_elements(name) <= LIMIT for name in "ABC")
        row, col = divmod(b.offset_c - pr.offset_c, pr.ldc)
        into_a, into_b = b.offset_a - pr.offset_a, b.offset_b - pr.offset_b
        k0, row_a = divmod(into_a, pr.lda) if ta == "T" else (into_a - row * pr.lda, row)
        col_b, k0_b = divmod(into_b, pr.ldb) if tb == "T" else divmod(into_b, pr.ldb)[::-1]
        assert row_a == row and col_b == col and k0_b == k0 and block.accumulate == (k0 > 0)
        covered[row:row + b.m, col:col + b.n, k0:k0 + b.k] += 1
    assert (covered == 1).all()                      # each element of C gets each product along K, once


@pytest.mark.parametrize("letter, ta, tb, beta", [("s", "N", "N", 0.0), ("d", "T", "N", 0.5), ("c", "N", "C", 0.0),
                                                  ("z", "C", "T", -1.0)])
def test_device_arrays_past_the_limit_give_the_right_product(ctx, monkeypatch, letter, ta, tb, beta):
    monkeypatch.setattr(index_blocks, "INDEX_LIMIT", LIMIT)
    ran = []
    real = index_blocks.blocks
    monkeypatch.setattr(index_blocks, "blocks", lambda pr, limit=None: ran.append(real(pr, limit)) or ran[-1])
    dt, rng = DTYPES[letter], np.random.default_rng()
    m, n, k = 97, 83, 61
    a = random_matrix(rng, dt, (k, m) if ta != "N" else (m, k))
    b = random_matrix(rng, dt, (n, k) if tb != "N" else (k, n))
    c0 = random_matrix(rng, dt, (m, n))
    wide = np.full((m + 3, n + 5), np.nan, dt.numpy)            # C a view at an offset, wider rows
    if beta:
        wide[3:, 2:2 + n] = c0
    queue = ctx.queue
    da, db = cl_array.to_device(queue, a), cl_array.to_device(queue, b)
    dwide = cl_array.to_device(queue, wide)
    dc = dwide[3:, 2:2 + n]
    autogemm.gemm(da, db, dc, alpha=1.5, beta=beta, trans_a=ta, trans_b=tb)
    got = dwide.get()
    ref = dt.reference_numpy
    want = 1.5 * apply_op(a.astype(ref), ta) @ apply_op(b.astype(ref), tb) + beta * c0.astype(ref)
    assert len(ran) == 1 and len(ran[0]) > 1 and any(block.accumulate for block in ran[0]) == (ta != "N" or tb == "N")
    assert relative_error(got[3:, 2:2 + n], want) < tolerance(dt, k)
    assert np.isnan(got[:3]).all() and np.isnan(got[3:, :2]).all() and np.isnan(got[3:, 2 + n:]).all()


def test_a_blocked_product_runs_when_the_device_is_given_as_an_object(ctx, monkeypatch):
    """A call naming a ``Device`` object is resolved afresh each time (it has no key): blocked, it still
    runs on the device arrays it was given (it had no plan, and went to the host-transfer path)."""
    monkeypatch.setattr(index_blocks, "INDEX_LIMIT", LIMIT)
    rng = np.random.default_rng()
    a, b = rng.random((97, 61), np.float32), rng.random((61, 83), np.float32)
    c = autogemm.gemm(cl_array.to_device(ctx.queue, a), cl_array.to_device(ctx.queue, b), device=ctx.device)
    assert relative_error(c.get(), a.astype(np.float64) @ b) < tolerance(DTYPES["s"], 61)


def test_blocks_halve_until_the_plans_padded_copies_fit(ctx, monkeypatch):
    """A block within the limit can still need a padded copy past it (rows and leading dimensions rounded
    up to the tiles): the blocks are halved until every plan's temporaries fit."""
    monkeypatch.setattr(index_blocks, "INDEX_LIMIT", LIMIT)
    monkeypatch.setattr(index_blocks, "MIN_LIMIT", 64)
    monkeypatch.setattr(plan_module, "INT32_MAX", LIMIT)      # the plans' own limit, for their temporaries
    limits = []
    real = index_blocks.blocks
    monkeypatch.setattr(index_blocks, "blocks", lambda pr, limit=None: limits.append(limit) or real(pr, limit))
    rng = np.random.default_rng()
    a, b = rng.random((197, 61), np.float32), rng.random((61, 24), np.float32)
    dc = cl_array.to_device(ctx.queue, np.full((197, 24), np.nan, np.float32))
    autogemm.gemm(cl_array.to_device(ctx.queue, a), cl_array.to_device(ctx.queue, b), dc, edge="pad")
    assert len(limits) > 1 and limits[-1] < LIMIT
    want = a.astype(np.float64) @ b
    assert relative_error(dc.get(), want) < tolerance(DTYPES["s"], 61)


def test_offsets_and_batches_past_the_limit_need_no_blocks(ctx, monkeypatch):
    """Offsets are 64-bit: a matrix far into its buffer, or a batch whose stack spans past the limit while
    each matrix fits, runs in one launch."""
    monkeypatch.setattr(index_blocks, "INDEX_LIMIT", LIMIT)
    monkeypatch.setattr(index_blocks, "blocks", lambda *args: pytest.fail("blocked"))
    rng, queue = np.random.default_rng(), ctx.queue
    big = rng.random((200, 40), np.float32)                     # 8000 elements; the rows used start past 3000
    b = rng.random((40, 30), np.float32)
    dc = cl_array.to_device(queue, np.full((50, 30), np.nan, np.float32))
    autogemm.gemm(cl_array.to_device(queue, big)[150:], cl_array.to_device(queue, b), dc)
    assert relative_error(dc.get(), big[150:].astype(np.float64) @ b) < tolerance(DTYPES["s"], 40)
    stack_a, stack_b = rng.random((6, 30, 25), np.float32), rng.random((6, 25, 20), np.float32)   # 4500 each
    got = autogemm.gemm_batched(cl_array.to_device(queue, stack_a), cl_array.to_device(queue, stack_b)).get()
    assert relative_error(got, stack_a.astype(np.float64) @ stack_b) < tolerance(DTYPES["s"], 25)


def test_past_the_limit_a_batch_or_a_host_operand_still_says_so(ctx, monkeypatch):
    monkeypatch.setattr(index_blocks, "INDEX_LIMIT", LIMIT)
    a = np.ones((97, 61), np.float32)
    with pytest.raises(autogemm.ShapeError, match="32-bit indexing"):
        autogemm.gemm(cl_array.to_device(ctx.queue, a), a.T.copy())
    stack = cl_array.to_device(ctx.queue, np.ones((2, 97, 61), np.float32))
    with pytest.raises(autogemm.ShapeError, match="32-bit indexing"):
        autogemm.gemm_batched(stack, stack, trans_b="T")


@pytest.mark.parametrize("letter", "sdcz")
def test_complex_operands_reach_the_limit_at_half_the_elements(monkeypatch, letter):
    """Kernels address a complex element through its first real (its index times 2, in 32 bits), so
    complex operands are cut at half as many elements as real ones."""
    monkeypatch.setattr(index_blocks, "INDEX_LIMIT", LIMIT)
    dt = DTYPES[letter]
    pr = GemmProblem.dense(dt, 40, 40, 40)               # 1600 elements an operand: over LIMIT / 2, under LIMIT
    assert index_blocks.exceeds(pr) == dt.is_complex
    found = index_blocks.blocks(pr)
    assert (len(found) > 1) == dt.is_complex
    assert all(b.problem.member_elements(x) * dt.reals_per_element <= LIMIT for b in found for x in "ABC")
    if dt.is_complex:
        with pytest.raises(autogemm.ShapeError, match="32-bit indexing"):
            pr.validate(index_limit=LIMIT)
    else:
        pr.validate(index_limit=LIMIT)
