"""Products of device arrays past the kernels' 32-bit indexing (issue 8) run in blocks that each fit
(``blas.blocks``). Tests lower the limit, so that small arrays are cut the way arrays of 2^31 elements
would be: rows of C and A, columns of C and B^T, and parts of K added into C."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array
import pytest

import autogemm
from autogemm.blas import blocks
from autogemm.blas.problem import GemmProblem, Op
from autogemm.checking import apply_op, random_matrix, relative_error, tolerance
from autogemm.dtypes import DTYPES

LIMIT = 3000


@pytest.mark.parametrize("ta, tb", [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")])
def test_every_block_fits_and_together_they_cover_the_product_once(ta, tb):
    pr = GemmProblem(DTYPES["s"], 97, 83, 61, Op.from_letter(ta, "a"), Op.from_letter(tb, "b"),
                     lda=(97 if ta == "T" else 61) + 3, ldb=(61 if tb == "T" else 83) + 2, ldc=90,
                     offset_a=7, offset_b=11, offset_c=5)
    old, blocks.INDEX_LIMIT = blocks.INDEX_LIMIT, LIMIT
    try:
        found = blocks.blocks(pr)
    finally:
        blocks.INDEX_LIMIT = old
    assert len(found) > 1
    covered = np.zeros((97, 83), int)
    for block in found:
        b = block.problem
        assert all(b.elements_needed(name) <= LIMIT for name in "ABC")
        row, col = divmod(block.starts[2] - pr.offset_c, pr.ldc)
        covered[row:row + b.m, col:col + b.n] += b.k
    assert (covered == pr.k).all()                   # each element of C gets all of K, once


@pytest.mark.parametrize("letter, ta, tb, beta", [("s", "N", "N", 0.0), ("d", "T", "N", 0.5), ("c", "N", "C", 0.0),
                                                  ("z", "C", "T", -1.0)])
def test_device_arrays_past_the_limit_give_the_right_product(ctx, monkeypatch, letter, ta, tb, beta):
    monkeypatch.setattr(blocks, "INDEX_LIMIT", LIMIT)
    ran = []
    real = blocks.blocks
    monkeypatch.setattr(blocks, "blocks", lambda pr: ran.append(real(pr)) or ran[-1])
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


def test_past_the_limit_a_batch_or_a_host_operand_still_says_so(ctx, monkeypatch):
    monkeypatch.setattr(blocks, "INDEX_LIMIT", LIMIT)
    a = np.ones((97, 61), np.float32)
    with pytest.raises(autogemm.ShapeError, match="2\\^31"):
        autogemm.gemm(cl_array.to_device(ctx.queue, a), a.T.copy())
    stack = cl_array.to_device(ctx.queue, np.ones((2, 97, 61), np.float32))
    with pytest.raises(autogemm.ShapeError, match="2\\^31"):
        autogemm.gemm_batched(stack, stack, trans_b="T")
