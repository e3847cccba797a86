"""Properties of ``gemm`` against numpy over random shapes (0 and 1 included), transposes, layouts,
offsets, host or device placement of each operand, alpha and beta: the result matches a float64
reference and the operands are unchanged."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array
from hypothesis import HealthCheck, given, settings, strategies as st

import autogemm
from autogemm.checking import apply_op, random_matrix, relative_error, tolerance
from autogemm.dtypes import DTYPES

LAYOUTS = ("C", "F", "view")


def _place(queue, x, layout, device):
    """``x`` as a C- or Fortran-ordered array, or as a view with an offset into a wider one, on the host
    or on the device; and a function that reads the operand back to the host."""
    if layout == "view":
        wide = np.full((x.shape[0] + 2, x.shape[1] + 3), -7, x.dtype)
        wide[2:, 1:1 + x.shape[1]] = x
        whole = cl_array.to_device(queue, wide) if device else wide
        region = (slice(2, None), slice(1, 1 + x.shape[1]))
        return whole[region], lambda: (whole.get() if device else whole)[region]
    x = np.asfortranarray(x) if layout == "F" else x
    placed = cl_array.to_device(queue, x) if device else x
    return placed, lambda: placed.get() if device else placed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(letter=st.sampled_from("sd"), m=st.integers(0, 40), n=st.integers(0, 40), k=st.integers(0, 40),
       ta=st.sampled_from("NT"), tb=st.sampled_from("NT"), layouts=st.tuples(*[st.sampled_from(LAYOUTS)] * 3),
       places=st.tuples(st.booleans(), st.booleans(), st.booleans()), alpha=st.sampled_from([1.0, -0.5, 0.0]),
       beta=st.sampled_from([0.0, 2.0]), seed=st.integers(0, 2**32 - 1))
def test_gemm_matches_numpy(ctx, letter, m, n, k, ta, tb, layouts, places, alpha, beta, seed):
    queue = ctx.queue
    dt, rng = DTYPES[letter], np.random.default_rng(seed)
    a = random_matrix(rng, dt, (k, m) if ta == "T" else (m, k))
    b = random_matrix(rng, dt, (n, k) if tb == "T" else (k, n))
    c = random_matrix(rng, dt, (m, n))
    want = alpha * (apply_op(a.astype(np.float64), ta) @ apply_op(b.astype(np.float64), tb)) + beta * c
    (da, read_a), (db, read_b), (dc, read_c) = (_place(queue, x, lay, dev)
                                                for x, lay, dev in zip((a, b, c), layouts, places))
    result = autogemm.gemm(da, db, dc, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb)
    assert result is dc
    got = read_c()
    assert got.shape == (m, n)
    if m and n:
        assert relative_error(got, want) < tolerance(dt, max(k, 1))
    assert np.array_equal(read_a(), a) and np.array_equal(read_b(), b)


@st.composite
def _stacks(draw):
    """Stack dimensions of a and b that broadcast: a common shape, each operand keeping a suffix of it
    with some dimensions reduced to 1."""
    common = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))
    own = []
    for _ in range(2):
        kept = common[draw(st.integers(0, len(common))):]
        own.append(tuple(d if draw(st.booleans()) else 1 for d in kept))
    return own


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(letter=st.sampled_from("sz"), stacks=_stacks(), m=st.integers(1, 12), n=st.integers(1, 12),
       k=st.integers(1, 12), places=st.tuples(st.booleans(), st.booleans()), fortran=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_matmul_matches_numpy_on_stacks(ctx, letter, stacks, m, n, k, places, fortran, seed):
    """Batch counts from 0 up, broadcasting along any stack dimension (one batch or several), host or
    device operands, row- or column-major matrices."""
    dt, rng = DTYPES[letter], np.random.default_rng(seed)
    a, b = random_matrix(rng, dt, stacks[0] + (m, k)), random_matrix(rng, dt, stacks[1] + (k, n))
    if fortran:
        b = np.swapaxes(np.ascontiguousarray(np.swapaxes(b, -1, -2)), -1, -2)
    want = np.matmul(a.astype(dt.reference_numpy), b)
    da, db = (cl_array.to_device(ctx.queue, np.ascontiguousarray(x)) if dev else x for x, dev in zip((a, b), places))
    got = autogemm.matmul(da, db)
    got = got.get() if any(places) else got
    assert got.shape == want.shape
    if got.size:
        assert relative_error(got, want) < tolerance(dt, k)
