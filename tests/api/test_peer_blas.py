"""Differential tests against the peers a user would compare with (issue 57): ``gemm``, ``gemm_batched``,
``gemv`` and ``matmul`` on random problems against ``scipy.linalg.blas`` (its double-precision routines
on the operands widened, so that the reference is the exact product to within float64) and numpy. The
operands come in every layout numpy makes: row- and column-major, strided views, views with negative
strides, and broadcast views with zero strides (length-1 axes included, which numpy calls contiguous
whatever their stride); C holds NaN where beta is 0, which must not reach the result. Every operand a
routine only reads is unchanged afterwards."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autogemm
from autogemm.accuracy import apply_op, tolerance
from autogemm.dtypes import DTYPES

blas = pytest.importorskip("scipy.linalg.blas")

#: How a matrix operand is laid out in memory.
LAYOUTS = ("C", "F", "strided", "reversed", "broadcast")
#: BLAS's transpose codes, as scipy's wrappers take them.
TRANS = {"N": 0, "T": 1, "C": 2}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _values(rng: np.random.Generator, letter: str, shape: tuple[int, ...]) -> np.ndarray:
    dt = DTYPES[letter]
    x = rng.standard_normal(shape)
    if dt.is_complex:
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt.numpy)


def _laid_out(rng: np.random.Generator, letter: str, shape: tuple[int, int], layout: str) -> np.ndarray:
    """A matrix of random values of ``shape`` in ``layout``: 'broadcast' repeats one random row (a view
    with a zero stride down the rows)."""
    if layout == "broadcast":
        return np.broadcast_to(_values(rng, letter, (1, shape[1])), shape)
    x = _values(rng, letter, shape)
    if layout == "F":
        return np.asfortranarray(x)
    if layout == "strided":
        wide = _values(rng, letter, (shape[0], 2 * shape[1] + 1))
        wide[:, 1::2] = x
        return wide[:, 1::2]
    if layout == "reversed":
        return np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1]
    return x


def _scalar(draw, letter: str) -> complex | float:
    values = [0.0, 1.0, -0.5, 2.25]
    if DTYPES[letter].is_complex:
        values += [1j, 0.5 - 1.5j]
    return draw(st.sampled_from(values))


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def _reference_gemm(letter, alpha, a, b, beta, c, ta, tb) -> np.ndarray:
    """scipy's dgemm or zgemm on the operands widened; numpy where a dimension is 0 (BLAS's wrappers take
    no empty matrix)."""
    m, k = apply_op(a, ta).shape
    n = apply_op(b, tb).shape[1]
    base = np.zeros((m, n), np.complex128 if DTYPES[letter].is_complex else np.float64)
    if beta != 0:
        base = beta * _wide(c)
    if 0 in (m, n, k):
        return base
    routine = blas.zgemm if DTYPES[letter].is_complex else blas.dgemm
    return routine(alpha, _wide(a), _wide(b), beta=1.0, c=np.asfortranarray(base), trans_a=TRANS[ta],
                   trans_b=TRANS[tb])


def _trans(draw, letter: str) -> str:
    return draw(st.sampled_from("NTC" if DTYPES[letter].is_complex else "NT"))


def _error(got: np.ndarray, want: np.ndarray, alpha, op_a: np.ndarray, op_b: np.ndarray, beta, c) -> float:
    """||got - want|| over the norm of the sum of the terms' magnitudes, |alpha| |op(A)| |op(B)| + |beta|
    |C|: a result that cancels to near zero is held to the rounding of its terms, not of itself."""
    if not np.all(np.isfinite(got)):
        return float("inf")
    terms = abs(alpha) * (np.abs(_wide(op_a)) @ np.abs(_wide(op_b)))
    if beta != 0:
        terms = terms + abs(beta) * np.abs(_wide(c))
    scale = np.linalg.norm(terms)
    return float(np.linalg.norm(_wide(got) - want) / (scale if scale else 1.0))


def _same(before: list[np.ndarray], after: list[np.ndarray]) -> bool:
    return all(np.array_equal(x, y, equal_nan=True) for x, y in zip(before, after))


@SETTINGS
@given(data=st.data(), letter=st.sampled_from("sdcz"), m=st.integers(0, 23), n=st.integers(0, 23),
       k=st.integers(0, 23), layouts=st.tuples(*[st.sampled_from(LAYOUTS)] * 2),
       c_layout=st.sampled_from(("C", "F", "strided", "reversed", None)), edge=st.sampled_from(("guard", "pad")),
       seed=st.integers(0, 2**32 - 1))
def test_gemm_matches_scipy_blas(ctx, data, letter, m, n, k, layouts, c_layout, edge, seed):
    rng = np.random.default_rng(seed)
    ta, tb = _trans(data.draw, letter), _trans(data.draw, letter)
    alpha, beta = _scalar(data.draw, letter), _scalar(data.draw, letter) if c_layout else 0.0
    a = _laid_out(rng, letter, (k, m) if ta != "N" else (m, k), layouts[0])
    b = _laid_out(rng, letter, (n, k) if tb != "N" else (k, n), layouts[1])
    c = None if c_layout is None else _laid_out(rng, letter, (m, n), c_layout)
    if c is not None and beta == 0:
        c[...] = np.nan                                       # must not be read
    want = _reference_gemm(letter, alpha, a, b, beta, c, ta, tb)
    inputs, before = [a.copy(), b.copy()], None if c is None else c.copy()
    got = autogemm.gemm(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb, edge=edge, device=ctx.device)
    assert c is None or got is c
    assert got.shape == (m, n) and got.dtype == DTYPES[letter].numpy
    if got.size:
        error = _error(got, want, alpha, apply_op(a, ta), apply_op(b, tb), beta, before)
        assert error < tolerance(DTYPES[letter], max(k, 1)), f"{ta}{tb} {layouts} {c_layout}"
    assert _same(inputs, [a, b])


@SETTINGS
@given(data=st.data(), letter=st.sampled_from("sdcz"), m=st.integers(0, 29), n=st.integers(0, 29),
       a_layout=st.sampled_from(LAYOUTS), x_step=st.sampled_from((1, 2, -1, 0)),
       y_step=st.sampled_from((1, 3, -2, None)), seed=st.integers(0, 2**32 - 1))
def test_gemv_matches_scipy_blas(ctx, data, letter, m, n, a_layout, x_step, y_step, seed):
    """x and y as vectors with strides (negative, and zero for x: a broadcast)."""
    rng = np.random.default_rng(seed)
    trans = _trans(data.draw, letter)
    alpha, beta = _scalar(data.draw, letter), _scalar(data.draw, letter) if y_step else 0.0
    a = _laid_out(rng, letter, (m, n), a_layout)
    columns, rows = (n, m) if trans == "N" else (m, n)          # x's length, y's
    if x_step == 0:
        x = np.broadcast_to(_values(rng, letter, (1,)), (columns,))
    else:
        x = _values(rng, letter, (max(columns, 1) * abs(x_step),))[::x_step][:columns]
    y = None if y_step is None else _values(rng, letter, (max(rows, 1) * abs(y_step),))[::y_step][:rows]
    if y is not None and beta == 0:
        y[...] = np.nan
    want = np.zeros(rows, np.complex128 if DTYPES[letter].is_complex else np.float64)
    if beta != 0:
        want = beta * _wide(y)
    if m and n:
        routine = blas.zgemv if DTYPES[letter].is_complex else blas.dgemv
        want = routine(alpha, _wide(a), _wide(x), beta=1.0, y=want.copy(), trans=TRANS[trans])
    inputs, before = [a.copy(), x.copy()], None if y is None else y.copy()
    got = autogemm.gemv(a, x, y, alpha=alpha, beta=beta, trans=trans, device=ctx.device)
    assert y is None or got is y
    assert got.shape == (rows,)
    if got.size:
        error = _error(got[:, None], want[:, None], alpha, apply_op(a, trans), x[:, None], beta,
                       None if before is None else before[:, None])
        assert error < tolerance(DTYPES[letter], max(columns, 1)), f"{trans} {a_layout}"
    assert _same(inputs, [a, x])


@SETTINGS
@given(data=st.data(), letter=st.sampled_from("sdcz"), batch=st.integers(1, 4), m=st.integers(1, 13),
       n=st.integers(1, 13), k=st.integers(1, 13), shared=st.sampled_from((None, "a", "b")),
       reversed_stack=st.booleans(), with_c=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_gemm_batched_matches_scipy_blas_product_by_product(ctx, data, letter, batch, m, n, k, shared,
                                                            reversed_stack, with_c, seed):
    """A stack along its first dimension (read backwards where ``reversed_stack``), or one matrix used in
    every product (``shared``: a 2-D operand)."""
    rng = np.random.default_rng(seed)
    ta, tb = _trans(data.draw, letter), _trans(data.draw, letter)
    alpha, beta = _scalar(data.draw, letter), _scalar(data.draw, letter) if with_c else 0.0
    a_shape, b_shape = ((k, m) if ta != "N" else (m, k)), ((n, k) if tb != "N" else (k, n))
    a = _values(rng, letter, a_shape if shared == "a" else (batch, *a_shape))
    b = _values(rng, letter, b_shape if shared == "b" else (batch, *b_shape))
    if reversed_stack:
        a, b = (x[::-1] if x.ndim == 3 else x for x in (a, b))
    c = _values(rng, letter, (batch, m, n)) if with_c else None
    if c is not None and beta == 0:
        c[...] = np.nan
    want = [_reference_gemm(letter, alpha, a if a.ndim == 2 else a[i], b if b.ndim == 2 else b[i], beta,
                            None if c is None else c[i], ta, tb) for i in range(batch)]
    before = None if c is None else c.copy()
    got = autogemm.gemm_batched(a, b, c, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb, device=ctx.device)
    assert got.shape == (batch, m, n)
    for i in range(batch):
        x, y = (a if a.ndim == 2 else a[i]), (b if b.ndim == 2 else b[i])
        error = _error(got[i], want[i], alpha, apply_op(x, ta), apply_op(y, tb), beta, None if c is None else before[i])
        assert error < tolerance(DTYPES[letter], k), f"product {i} of {batch}"


@SETTINGS
@given(letter=st.sampled_from("sdcz"), stack=st.sampled_from(((), (1,), (3,), (2, 1), (1, 3))),
       m=st.integers(1, 9), n=st.integers(1, 9), k=st.integers(1, 9), vector=st.sampled_from((None, "a", "b")),
       layouts=st.tuples(*[st.sampled_from(("C", "F", "reversed", "broadcast"))] * 2),
       seed=st.integers(0, 2**32 - 1))
def test_matmul_matches_numpy(ctx, letter, stack, m, n, k, vector, layouts, seed):
    """Stacks broadcast against a matrix, 1-D operands, and views reversed or broadcast in their last two
    dimensions; the result as numpy's, in shape and type (a numpy scalar from two vectors)."""
    rng = np.random.default_rng(seed)

    def operand(shape: tuple[int, int], layout: str, stacked: bool) -> np.ndarray:
        x = _laid_out(rng, letter, shape, layout)
        return np.broadcast_to(x, stack + shape) if stacked else x

    a = operand((m, k), layouts[0], True)
    b = operand((k, n), layouts[1], False)
    if vector == "a":
        a = a[..., 0, :]
    elif vector == "b":
        b = b[:, 0]
    want = np.matmul(_wide(a), _wide(b))
    got = autogemm.matmul(a, b, device=ctx.device)
    assert np.shape(got) == want.shape and type(got) is type(np.matmul(a, b))
    assert _error(np.asarray(got), want, 1, a, b, 0, None) < tolerance(DTYPES[letter], k)
