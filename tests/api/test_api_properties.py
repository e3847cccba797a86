"""Properties of ``gemm`` against numpy over random shapes (0 and 1 included), transposes, layouts,
offsets, host or device placement of each operand, alpha and beta: the result matches a float64
reference and the operands are unchanged. And over random calls valid or not (issue 8's fuzzing): each
matches numpy or raises an ``AutogemmError``, changing nothing."""

from __future__ import annotations

import random
from typing import NamedTuple

import numpy as np
import pyopencl.array as cl_array
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import autogemm
from autogemm.accuracy import apply_op, random_matrix, relative_error, tolerance
from autogemm.dtypes import DTYPES

LAYOUTS = ("C", "F", "view", "reversed")


def _place(queue, x, layout, device):
    """``x`` as a C- or Fortran-ordered array, or as a view with an offset into a wider one, on the host
    or on the device, or on the host as a view with negative strides (whose length-1 axes numpy calls
    contiguous: issue 57's D2); and a function that reads the operand back to the host."""
    if layout == "reversed" and not device:
        backwards = np.ascontiguousarray(x[::-1, ::-1])
        return backwards[::-1, ::-1], lambda: backwards[::-1, ::-1]
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


NUMERIC = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}
ODD_TYPES = {"int32": np.int32, "bool": np.bool_, "f16": np.float16}
DTYPE_OF = {np.dtype(v): DTYPES[key] for key, v in NUMERIC.items()}


def _operand(chance, kind: str, rows: int, cols: int) -> np.ndarray:
    """A numpy operand of ``rows`` x ``cols`` and type ``kind``; now and then of another type, another
    number of dimensions or another shape, or read-only."""
    kind = _mostly(chance, [kind], [*NUMERIC, *ODD_TYPES])
    shape = _mostly(chance, [(rows, cols)], [(rows,), (1, rows, cols), (rows, cols + 1)])
    x = np.random.default_rng(chance.getrandbits(32)).standard_normal(shape).astype({**NUMERIC, **ODD_TYPES}[kind])
    if chance.random() < 0.03:
        x.setflags(write=False)
    return x


def _mostly(chance, valid: list, invalid: list):
    """One of ``valid``, or one of ``invalid`` once in twenty."""
    return chance.choice(invalid if chance.random() < 0.05 else valid)


def _placed(chance, queue, x: np.ndarray | None):
    """``x`` on the device one time in three (else as it is), and a function reading it back to the host."""
    if x is None or x.ndim == 0 or chance.random() >= 1 / 3 or x.dtype.kind not in "fc" or x.dtype == np.float16:
        return x, (lambda: x)
    placed = cl_array.to_device(queue, x)
    return placed, placed.get


class _Called(NamedTuple):
    result: object            # what the routine returned
    got: np.ndarray           # the result on the host
    placed: list              # the arguments as passed (host or device arrays, or None)
    before: list              # copies of the arguments from before the call (None for those left out)


def _call(ctx, chance, routine, arrays: tuple, inputs: int, **options) -> _Called | None:
    """``routine(*arrays, **options)`` with each array on the host or the device (the call's device is the
    arrays' where any is on one, else ``ctx``'s). None when it raised an ``AutogemmError``, which must have
    left every array as it was; else the first ``inputs`` arrays must be as they were."""
    placed = [_placed(chance, ctx.queue, x) for x in arrays]
    before = [None if x is None else x.copy() for x in arrays]
    kept = [(x, read) for x, (_, read) in zip(before, placed) if x is not None]
    on_device = any(isinstance(x, cl_array.Array) for x, _ in placed)
    try:
        result = routine(*(x for x, _ in placed), device=None if on_device else ctx.device, **options)
    except autogemm.AutogemmError as error:
        event(f"raised {type(error).__name__}")
        assert all(np.array_equal(x, read(), equal_nan=True) for x, read in kept)
        return None
    event("computed")
    assert all(np.array_equal(x, read(), equal_nan=True) for x, read in kept[:inputs])
    got = result.get() if isinstance(result, cl_array.Array) else result
    return _Called(result, got, [x for x, _ in placed], before)


def _close(got: np.ndarray, want: np.ndarray, scale: np.ndarray, inner: int) -> None:
    """``got`` has ``want``'s shape and is within the tolerance of its dtype over sums of ``inner`` terms,
    relative to ``scale``, the sums of the terms' magnitudes (|alpha| |op(A)| |op(B)| + |beta| |C|): a
    result that cancels to far less than its terms errs by their rounding, not its own."""
    assert got.shape == want.shape
    if got.size:
        error = np.linalg.norm((got - want).ravel())
        assert error <= tolerance(DTYPE_OF[got.dtype], max(inner, 1)) * np.linalg.norm(scale.ravel())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(list(NUMERIC)), m=st.integers(0, 20),
       n=st.integers(0, 20), k=st.integers(0, 20), with_c=st.booleans())
def test_any_call_matches_numpy_or_raises_an_autogemm_error_and_changes_nothing(ctx, seed, kind, m, n, k, with_c):
    """Random calls, valid and not, operands on the host or the device: wrong types, dimensions, shapes,
    transposes, scalars, edge modes and read-only outputs. Each either gives numpy's result or raises an
    ``AutogemmError``, and the caller's arrays are as they were (C too, when it raises). The seed draws
    every choice, so that a failing call is found again from it."""
    chance = random.Random(seed)
    ta, tb = _mostly(chance, ["N", "T", "C"], ["x", 1, None]), _mostly(chance, ["N", "T", "C"], ["Q", ""])
    alpha = _mostly(chance, [1.0, -0.5, 0.0, 2], [1 + 2j, "two", None])
    beta = _mostly(chance, [0.0, 1.5, 0, -1] if with_c else [0.0, 0], [-1j, "0", [1.0], 1.5])
    edge = _mostly(chance, ["auto", "guard", "pad"], ["sideways", 3])
    a = _operand(chance, kind, k, m) if ta in ("T", "C") else _operand(chance, kind, m, k)
    b = _operand(chance, kind, n, k) if tb in ("T", "C") else _operand(chance, kind, k, n)
    c = _operand(chance, kind, m, n) if with_c else None
    called = _call(ctx, chance, autogemm.gemm, (a, b, c), 2, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb, edge=edge)
    if called is None:
        return
    ref = np.complex128 if np.iscomplexobj(called.got) else np.float64
    want = alpha * (apply_op(a.astype(ref), ta) @ apply_op(b.astype(ref), tb))
    scale = abs(alpha) * (np.abs(apply_op(a.astype(ref), ta)) @ np.abs(apply_op(b.astype(ref), tb)))
    if c is not None:
        assert called.result is called.placed[2]
        want = want + beta * called.before[2].astype(ref)
        scale = scale + abs(beta) * np.abs(called.before[2].astype(ref))
    assert called.got.dtype == np.result_type(a.dtype, b.dtype)
    _close(called.got, want, scale, apply_op(a, ta).shape[1])           # shapes drawn "wrong" may fit


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(list(NUMERIC)), m=st.integers(0, 20),
       n=st.integers(0, 20), with_y=st.booleans())
def test_any_gemv_call_matches_numpy_or_raises_an_autogemm_error_and_changes_nothing(ctx, seed, kind, m, n, with_y):
    """``gemv`` with operands on the host or the device, valid and not, as for ``gemm`` above."""
    chance = random.Random(seed)
    trans = _mostly(chance, ["N", "T", "C"], ["x", None])
    rows, cols = (n, m) if trans in ("T", "C") else (m, n)       # op(A) is m x n
    a = _operand(chance, kind, rows, cols)
    x = _operand(chance, kind, 1, n)[0] if chance.random() > 0.05 else _operand(chance, kind, 1, n + 1)
    y = _operand(chance, kind, 1, m)[0] if with_y else None
    alpha = _mostly(chance, [1.0, -0.5, 0.0], [1j, "one"])
    beta = _mostly(chance, [0.0, 2.0] if with_y else [0.0], [-1j, 2.0])
    called = _call(ctx, chance, autogemm.gemv, (a, x, y), 2, alpha=alpha, beta=beta, trans=trans)
    if called is None:
        return
    ref = np.complex128 if np.iscomplexobj(a) else np.float64
    want = alpha * (apply_op(a.astype(ref), trans) @ x.astype(ref))
    scale = abs(alpha) * (np.abs(apply_op(a.astype(ref), trans)) @ np.abs(x.astype(ref)))
    if y is not None:
        want = want + beta * called.before[2].astype(ref)
        scale = scale + abs(beta) * np.abs(called.before[2].astype(ref))
    _close(called.got, want, scale, x.size)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(list(NUMERIC)), m=st.integers(0, 12),
       n=st.integers(0, 12), with_out=st.booleans())
def test_any_transpose_call_matches_numpy_or_raises_an_autogemm_error_and_changes_nothing(ctx, seed, kind, m, n,
                                                                                          with_out):
    """``transpose`` (conjugating or not) of a matrix or a stack, on the host or the device, into a new or
    a given array, valid and not: the result is numpy's bit for bit, or an ``AutogemmError``."""
    chance = random.Random(seed)
    a = _operand(chance, kind, m, n)
    if chance.random() < 0.3:
        a = np.stack([a, a[::-1]]) if a.ndim == 2 else a
    conjugate = _mostly(chance, [False, True], ["yes"])
    want = np.swapaxes(a, -1, -2) if a.ndim >= 2 else None
    if want is not None and conjugate is True:
        want = want.conj()
    out = None
    if with_out:
        shape = want.shape if want is not None and chance.random() > 0.1 else (n + 1, m)
        kind_out = np.dtype(_mostly(chance, [a.dtype], [np.float64, np.int32]))
        out = np.full(shape, np.nan if kind_out.kind in "fc" else -7, kind_out)
    called = _call(ctx, chance, autogemm.transpose, (a, out), 1, conjugate=conjugate)
    if called is not None:
        assert np.array_equal(called.got, want)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(list(NUMERIC)),
       shape_a=st.lists(st.integers(0, 6), min_size=1, max_size=4), shape_b=st.lists(st.integers(0, 6), min_size=1,
                                                                                        max_size=4))
def test_any_matmul_call_matches_numpy_or_raises_an_autogemm_error_and_changes_nothing(ctx, seed, kind, shape_a,
                                                                                       shape_b):
    """``matmul`` on operands of any number of dimensions, broadcasting or not, on the host or the
    device: numpy's result (and numpy's refusal of shapes that do not fit), or an ``AutogemmError``."""
    chance = random.Random(seed)
    if chance.random() < 0.7 and len(shape_a) >= 2:          # mostly inner dimensions that fit
        shape_b[-2 if len(shape_b) >= 2 else -1] = shape_a[-1]
    make = np.random.default_rng(seed).standard_normal
    a = make(shape_a).astype(_mostly(chance, [NUMERIC[kind]], [np.int32, np.float16]))
    b = make(shape_b).astype(_mostly(chance, [NUMERIC[kind]], [np.complex128]))
    try:
        want = np.matmul(a.astype(np.complex128), b.astype(np.complex128))
        scale = np.matmul(np.abs(a.astype(np.complex128)), np.abs(b.astype(np.complex128)))
    except ValueError:
        want = None
    called = _call(ctx, chance, autogemm.matmul, (a, b), 2)
    if called is None:
        return
    assert want is not None, "numpy refuses these shapes"
    _close(called.got, want if np.iscomplexobj(called.got) else want.real, scale, a.shape[-1])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(list(NUMERIC)), batch=st.integers(0, 4),
       m=st.integers(0, 9), n=st.integers(0, 9), k=st.integers(0, 9), with_c=st.booleans())
def test_any_batched_or_device_gemm_call_matches_numpy_or_raises_an_autogemm_error_and_changes_nothing(
        ctx, seed, kind, batch, m, n, k, with_c):
    """``gemm_batched`` on stacks (a stack of one, or a matrix, used in every product) and ``gemm`` on its
    first products, operands on the host or the device, valid and not, as for ``gemm`` above."""
    chance = random.Random(seed)
    ta, tb = _mostly(chance, ["N", "T", "C"], ["x"]), _mostly(chance, ["N", "T", "C"], [2])
    alpha = _mostly(chance, [1.0, -0.5, 0.0], ["two", 1j])
    beta = _mostly(chance, [0.0, 1.5] if with_c else [0.0], [1.5, -1j])

    def stack(rows: int, cols: int, depth: int) -> np.ndarray:
        """A stack of ``depth`` matrices (of one, sometimes a plain matrix); drawn wrong now and then."""
        x = _operand(chance, kind, rows, cols)
        if x.ndim != 2 or (depth == 1 and chance.random() < 0.5):
            return x
        return np.repeat(x[None], depth, axis=0) + np.arange(depth).reshape(-1, 1, 1).astype(x.dtype)

    def matrix(x: np.ndarray, i: int) -> np.ndarray:
        return x if x.ndim == 2 else x[min(i, len(x) - 1)]

    depths = [_mostly(chance, [batch, 1], [batch + 1]) for _ in range(2)]
    a = stack(*((k, m) if ta in ("T", "C") else (m, k)), depths[0])
    b = stack(*((n, k) if tb in ("T", "C") else (k, n)), depths[1])
    c = stack(m, n, _mostly(chance, [batch], [batch + 2])) if with_c else None
    called = _call(ctx, chance, autogemm.gemm_batched, (a, b, c), 2, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb)
    if called is None:
        return
    ref = np.complex128 if np.iscomplexobj(a) else np.float64
    got = called.got
    products = [(apply_op(matrix(a, i).astype(ref), ta), apply_op(matrix(b, i).astype(ref), tb))
                for i in range(len(got))]
    want = np.stack([alpha * (x @ y) for x, y in products]) if len(got) else got.astype(ref)
    scale = np.stack([abs(alpha) * (np.abs(x) @ np.abs(y)) for x, y in products]) if len(got) else want.real
    if c is not None:
        want = want + beta * called.before[2].astype(ref)
        scale = scale + abs(beta) * np.abs(called.before[2].astype(ref))
    stacks = [len(x) for x in (a, b, c) if x is not None and x.ndim == 3]
    assert len(got) == next((depth for depth in stacks if depth != 1), 1)       # stacks of one are every product's
    _close(got, want, scale, a.shape[-2 if ta in ("T", "C") else -1])
