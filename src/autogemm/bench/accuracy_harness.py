"""How accurate float32 products are, by input distribution and depth: FP32 SGEMM (numpy's, and autogemm's
on the device) against 3xTF32 (emulated here as the CUDA path computes it, and autogemm's on the device),
each against a float64 product of the same float32 operands.

The error of one element is measured against the scale of its terms: |c - exact| / (|A| |B|), the
componentwise bound every GEMM's rounding error obeys, so that a product whose exact value cancels to
nearly zero is not reported as an infinite relative error. Where the exact product is not finite (inf or
NaN operands, overflow) an implementation must give the same non-finite value: each element that does not
counts as a mismatch, as does a non-finite result where the exact one is finite.

3xTF32 is emulated as the CUDA path computes it (``codelets.wgmma``): each operand split into ``big``, its
nearest TF32 (rounded half away from zero, as ``cvt.rna.tf32.f32``, or toward zero where that would pass
float32's largest), and ``small = x - big``, which the tensor cores read with its low 13 mantissa bits
dropped; the three products small x big, big x small and big x big summed in float32. Operands holding
inf, NaN or values below ``SPLIT_SMALLEST`` are multiplied in plain float32
(``codelets.float32_product``), as their parts cannot be made or held."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

FloatArray = np.ndarray

#: float32 bits a TF32 value keeps (sign, exponent and 10 mantissa bits), and half of its last place.
TF32_MASK = np.uint32(0xFFFFE000)
TF32_HALF = np.uint32(0x1000)
#: The smallest magnitude 3xTF32 splits: below it, a value's small part (about 2^-11 of it) is below
#: float32's normal range, where TF32 holds fewer of its bits (``codelets.wgmma.render.split``).
SPLIT_SMALLEST = 2.0**-115


def _scaled(rng: np.random.Generator, shape: tuple[int, int], scale: float) -> FloatArray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _spread(rng: np.random.Generator, shape: tuple[int, int]) -> FloatArray:
    """Values of random sign whose magnitudes spread over 2^-30 .. 2^30 within every row."""
    return (rng.choice([-1.0, 1.0], shape) * np.exp2(rng.uniform(-30, 30, shape))).astype(np.float32)


def _with_zeros(rng: np.random.Generator, shape: tuple[int, int]) -> FloatArray:
    x = _scaled(rng, shape, 1.0)
    x[rng.random(shape) < 0.5] = 0
    return x


def _non_finite(rng: np.random.Generator, shape: tuple[int, int]) -> FloatArray:
    """Normal values with an inf, a -inf and a NaN in about one row or column in eight."""
    x = _scaled(rng, shape, 1.0)
    count = max(1, x.size // (8 * max(shape)))
    for value in (np.inf, -np.inf, np.nan):
        x.flat[rng.integers(0, x.size, count)] = value
    return x


#: Each distribution: how an operand of a shape is drawn, given the product's depth K (some scale with it).
Draw = Callable[[np.random.Generator, tuple[int, int], int], FloatArray]
DISTRIBUTIONS: dict[str, Draw] = {
    "uniform [0, 1)": lambda rng, shape, k: rng.random(shape, np.float32),
    "uniform [-1, 1)": lambda rng, shape, k: (2 * rng.random(shape, np.float32) - 1).astype(np.float32),
    "normal": lambda rng, shape, k: _scaled(rng, shape, 1.0),
    "spread 2^-30..2^30": lambda rng, shape, k: _spread(rng, shape),
    "half zeros": lambda rng, shape, k: _with_zeros(rng, shape),
    # products near float32's largest: each term about 2^124 / K, the sums below 2^127
    "large products": lambda rng, shape, k: _scaled(rng, shape, 2.0**62 / np.sqrt(k)),
    "inf and NaN": lambda rng, shape, k: _non_finite(rng, shape),
}
#: Distributions drawn as a pair of operands: cancelling products (B's columns end in the negation of
#: their first half); A's values near float32's largest with B's small enough to keep C finite; and A's
#: values tiny (about 2^-120, normal, and below 2^-126, subnormal) with B's large enough to make C's
#: values ordinary, where 3xTF32's small parts fall below float32's normal range.
CANCELLING, LARGEST_OPERANDS = "cancelling", "largest operands"
TINY_OPERANDS, SUBNORMAL_OPERANDS = "tiny operands", "subnormal operands"
#: The scale of A's and of B's values in each pair of tiny operands.
TINY_SCALES = {TINY_OPERANDS: (2.0**-120, 2.0**100), SUBNORMAL_OPERANDS: (2.0**-133, 2.0**113)}


def cancelling_pair(rng: np.random.Generator, m: int, n: int, k: int) -> tuple[FloatArray, FloatArray]:
    """A (m x k) and B (k x n) whose products cancel: A's columns repeat as a pair, B's second half of each
    column is the negation of its first, perturbed by one part in 2^12, so each exact element is about
    2^-12 of its terms."""
    half = max(k // 2, 1)
    a = _scaled(rng, (m, half), 1.0)
    b = _scaled(rng, (half, n), 1.0)
    return (np.concatenate([a, a], 1)[:, :k],
            np.concatenate([b, (-b * (1 + 2.0**-12)).astype(np.float32)], 0)[:k])


def to_tf32(x: FloatArray) -> FloatArray:
    """``x`` rounded to the nearest TF32, half away from zero (``cvt.rna.tf32.f32``)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    finite = np.isfinite(x)
    rounded = np.where(finite, (bits + TF32_HALF) & TF32_MASK, bits)
    return rounded.view(np.float32)


def truncated_tf32(x: FloatArray) -> FloatArray:
    """``x`` with the mantissa bits TF32 lacks dropped, as the tensor cores read a float32 operand."""
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) & TF32_MASK).view(np.float32)


def tf32_big_part(x: FloatArray) -> FloatArray:
    """3xTF32's big part of finite ``x``: its nearest TF32, or ``x`` truncated to TF32 where the nearest
    is past float32's largest (the CUDA path's split kernel)."""
    nearest = to_tf32(x)
    return np.where(np.isinf(nearest) & np.isfinite(x), truncated_tf32(x), nearest)


def splits(x: FloatArray) -> bool:
    """Whether 3xTF32 can split every value of ``x`` (the CUDA path's split kernel): none is inf or NaN,
    nor below ``SPLIT_SMALLEST`` but zero."""
    magnitude = np.abs(x)
    return bool(np.isfinite(x).all() and not ((magnitude < SPLIT_SMALLEST) & (magnitude > 0)).any())


def emulated_3xtf32(a: FloatArray, b: FloatArray) -> FloatArray:
    """A B as the CUDA path's 3xTF32 computes it (see the module's docstring), in float32."""
    if not (splits(a) and splits(b)):
        return a @ b
    big_a, big_b = tf32_big_part(a), tf32_big_part(b)
    with np.errstate(over="ignore"):
        small_a, small_b = truncated_tf32(a - big_a), truncated_tf32(b - big_b)
        return (small_a @ big_b + big_a @ small_b + big_a @ big_b).astype(np.float32)


def emulated_6xtf32(a: FloatArray, b: FloatArray) -> FloatArray:
    """A B with each operand split into three TF32 parts (its nearest TF32, the nearest TF32 of what is
    left, and the rest, TF32 truncated: about 33 bits, where float32 holds 24) and the six products of
    parts whose sizes reach float32's last place, summed in float32, the smallest first: a split whose
    own error stays below float32's rounding, which 3xTF32's two parts (22 bits) do not at a short K.
    No kernel computes it (it takes twice 3xTF32's products); the harness shows what it would close.
    Operands 3xTF32 cannot split are multiplied in float32, as there."""
    if not (splits(a) and splits(b)):
        return a @ b

    def parts(x: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        big = tf32_big_part(x)
        with np.errstate(over="ignore"):
            left = x - big
            middle = to_tf32(left)
            return big, middle, truncated_tf32(left - middle)

    (a0, a1, a2), (b0, b1, b2) = parts(a), parts(b)
    with np.errstate(over="ignore", invalid="ignore"):
        smallest, middle = a0 @ b2 + a1 @ b1 + a2 @ b0, a0 @ b1 + a1 @ b0
        return (smallest + middle + a0 @ b0).astype(np.float32)


@dataclass(frozen=True)
class Errors:
    """One implementation's errors on one distribution and depth: the largest and the median of
    |c - exact| / (|A| |B|) over the elements whose exact value is finite, and how many elements are
    non-finite where the exact one is not the same (or finite where it is not)."""

    largest: float
    median: float
    mismatches: int


def errors(got: FloatArray, exact: FloatArray, scale: FloatArray) -> Errors:
    """``got``'s ``Errors`` against ``exact`` (float64) at the componentwise ``scale`` (|A| |B|)."""
    got64 = got.astype(np.float64)
    finite = np.isfinite(exact)
    same = np.where(finite, np.isfinite(got64), (got64 == exact) | (np.isnan(got64) & np.isnan(exact)))
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = np.abs(got64 - exact) / np.where(scale > 0, scale, 1.0)
    relative = relative[finite & np.isfinite(got64)]
    return Errors(float(relative.max(initial=0.0)), float(np.median(relative)) if relative.size else 0.0,
                  int((~same).sum()))


def largest_pair(rng: np.random.Generator, m: int, n: int, k: int) -> tuple[FloatArray, FloatArray]:
    """A (m x k) of values within a factor of two of float32's largest, of random sign, and B (k x n) of
    normal values times 2^-64 / sqrt(K): every product and sum finite, about 2^64."""
    big = np.finfo(np.float32).max
    a = (rng.choice([-1.0, 1.0], (m, k)) * rng.uniform(0.5, 1.0, (m, k)) * big).astype(np.float32)
    return a, _scaled(rng, (k, n), 2.0**-64 / np.sqrt(k))


#: All the distributions ``measure`` draws, by name.
NAMES = (*DISTRIBUTIONS, CANCELLING, LARGEST_OPERANDS, *TINY_SCALES)


def operands(name: str, rng: np.random.Generator, m: int, n: int, k: int) -> tuple[FloatArray, FloatArray]:
    """A (m x k) and B (k x n) of distribution ``name`` (one of ``NAMES``)."""
    if name == CANCELLING:
        return cancelling_pair(rng, m, n, k)
    if name == LARGEST_OPERANDS:
        return largest_pair(rng, m, n, k)
    if name in TINY_SCALES:
        a_scale, b_scale = TINY_SCALES[name]
        return _scaled(rng, (m, k), a_scale), _scaled(rng, (k, n), b_scale)
    draw = DISTRIBUTIONS[name]
    return draw(rng, (m, k), k), draw(rng, (k, n), k)


@dataclass
class AccuracyCase:
    """The errors of each implementation on one distribution and depth (C of ``size`` x ``size``)."""

    distribution: str
    size: int
    k: int
    errors: dict[str, Errors]


def measure(name: str, size: int, k: int, implementations: dict[str, Callable[[FloatArray, FloatArray], FloatArray]],
            rng: np.random.Generator) -> AccuracyCase:
    """Every implementation's ``Errors`` on one draw of distribution ``name``."""
    a, b = operands(name, rng, size, size, k)
    with np.errstate(invalid="ignore", over="ignore"):       # inf and NaN operands are part of the point
        wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
        exact, scale = wide_a @ wide_b, np.abs(wide_a) @ np.abs(wide_b)
        return AccuracyCase(name, size, k, {label: errors(run(a, b), exact, scale)
                                            for label, run in implementations.items()})


def worst(cases: list[AccuracyCase], label: str, distribution: str) -> Errors:
    """An implementation's errors on one distribution over every depth: the largest of the largest, the
    median of the medians, the mismatches added up."""
    found = [c.errors[label] for c in cases if c.distribution == distribution and label in c.errors]
    return Errors(max(e.largest for e in found), statistics.median(e.median for e in found),
                  sum(e.mismatches for e in found))
