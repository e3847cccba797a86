"""A product whose C is one column or one row goes to GEMV (reading A once, at memory bandwidth) wherever
GEMV computes it as it is, and is right either way: every dtype, transpose, alpha and beta, host and
device operands, a NaN-poisoned C with beta = 0."""

from __future__ import annotations

import itertools

import numpy as np
import pyopencl.array as cl_array
import pytest

import autogemm
from autogemm.accuracy import apply_op, random_matrix, relative_error, tolerance
from autogemm.dtypes import DTYPES

RNG = np.random.default_rng(31)
CASES = [(letter, ta, tb, vector) for letter in "sdcz" for ta, tb in itertools.product("NTC", repeat=2)
         for vector in ("column", "row")]


@pytest.fixture
def routed(monkeypatch):
    """The vector products that went to GEMV, as (trans, matrix shape)."""
    module = __import__("autogemm.api.gemm", fromlist=["gemv"])
    calls = []
    real = module.gemv

    def spy(a, x, y=None, **options):
        calls.append((options["trans"], a.shape))
        return real(a, x, y, **options)

    monkeypatch.setattr(module, "gemv", spy)
    return calls


@pytest.mark.parametrize("letter, ta, tb, vector", CASES)
def test_a_column_or_row_product_is_right_and_goes_to_gemv_where_it_can(ctx, routed, letter, ta, tb, vector):
    dt = DTYPES[letter]
    m, n, k = (77, 1, 131) if vector == "column" else (1, 77, 131)
    a = random_matrix(RNG, dt, (k, m) if ta != "N" else (m, k))
    b = random_matrix(RNG, dt, (n, k) if tb != "N" else (k, n))
    c0 = random_matrix(RNG, dt, (m, n))
    wide = dt.reference_numpy
    product = apply_op(a.astype(wide), ta) @ apply_op(b.astype(wide), tb)
    got = autogemm.gemm(a, b, trans_a=ta, trans_b=tb, device=ctx.device)
    assert got.shape == (m, n) and relative_error(got, product) < tolerance(dt, k)
    c = c0.copy()
    assert autogemm.gemm(a, b, c, alpha=0.5, beta=-2.0, trans_a=ta, trans_b=tb, device=ctx.device) is c
    assert relative_error(c, 0.5 * product - 2.0 * c0.astype(wide)) < tolerance(dt, k)
    conjugated_vector = dt.is_complex and ("C" in (tb,) if vector == "column" else "C" in (ta, tb))
    assert len(routed) == (0 if conjugated_vector else 2)


def test_device_operands_and_a_poisoned_column_of_a_fortran_c(ctx, routed):
    dt = DTYPES["d"]
    a, x = random_matrix(RNG, dt, (90, 40)), random_matrix(RNG, dt, (40, 1))
    da, dx = cl_array.to_device(ctx.queue, a), cl_array.to_device(ctx.queue, x)
    dc = autogemm.gemm(da, dx)
    assert dc.shape == (90, 1) and relative_error(dc.get(), a @ x) < dt.tolerance
    wide = np.full((90, 3), np.nan, order="F")       # C a column of a wider Fortran-ordered matrix
    out = wide[:, 1:2]
    autogemm.gemm(a, x, out, beta=0.0)                # NaN in C is not read with beta = 0
    assert relative_error(out, a @ x) < dt.tolerance and np.isnan(wide[:, [0, 2]]).all()
    dout = cl_array.to_device(ctx.queue, np.full((90, 1), np.nan))
    result = autogemm.gemm(da, dx, dout, alpha=2.0)
    assert result is dout and dout.events and relative_error(dout.get(), 2 * a @ x) < dt.tolerance
    assert len(routed) == 3


def test_matmul_of_a_matrix_and_a_vector_is_a_gemv(ctx, routed):
    a, v = random_matrix(RNG, DTYPES["s"], (64, 48)), random_matrix(RNG, DTYPES["s"], (48,))
    assert relative_error(autogemm.matmul(a, v, device=ctx.device), a.astype(np.float64) @ v) < 1e-5
    w = random_matrix(RNG, DTYPES["s"], (64,))
    assert relative_error(autogemm.matmul(w, a, device=ctx.device), w.astype(np.float64) @ a) < 1e-5
    assert [trans for trans, _ in routed] == ["N", "T"]


def test_what_gemv_cannot_compute_as_it_is_stays_a_gemm(ctx, routed):
    a = random_matrix(RNG, DTYPES["s"], (32, 16))
    x = random_matrix(RNG, DTYPES["s"], (16, 1))
    autogemm.gemm(a, x, config=autogemm.SimtParams(), device=ctx.device)          # a configuration asked for
    half = random_matrix(RNG, DTYPES["h"], (32, 16)), random_matrix(RNG, DTYPES["h"], (16, 1))
    got = autogemm.gemm(*half, out_dtype=np.float32, device=ctx.device)           # C of another dtype
    assert got.dtype == np.float32 and got.shape == (32, 1)
    autogemm.gemm(a, random_matrix(RNG, DTYPES["s"], (16, 2)), device=ctx.device)  # two columns
    assert routed == []
