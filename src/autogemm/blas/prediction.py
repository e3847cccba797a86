"""The rate of a (kernel, K split) on a shape no one measured, predicted from a profile's ``Predictor``.

The model is coverage's (``coverage.useful_share``: padded blocks and idle compute units), times the
share of the time left to the product beside the transposing packs a kernel of another layout than the
operands' needs (their elements read and written, at the device's ``Predictor.balance``), corrected by
what the samples nearest to the shape measured. For each kernel of the bank and each split, the residual
of a sample is its measured rate over the model's share at that sample; the prediction is the model's
share at the shape times the weighted geometric mean of the residuals of the ``NEIGHBOURS`` nearest
samples that timed that pair (nearest in log scale of m, n and k, a sample stored in another layout
farther by ``LAYOUT_DISTANCE`` per operand: the pack a layout needs is in its residuals). So what the
coverage model misses near the samples (launch costs, the operands' caches, packs, the merge of the
slices) is measured, and far from them the model still ranks blocks by how well they cover C."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from ..codelets.registry import KernelParams
from ..profiles import Predictor
from ..profiles.profile import shape_distance
from .coverage import split_counts, useful_share
from .problem import GemmProblem

NEIGHBOURS = 4
LAYOUT_DISTANCE = 2.5
#: The predictor serves problems of at most this many times the work of its largest sample: past
#: them every kernel's blocks fill the device, and the size classes measured there decide.
REACH = 8


class Prediction(NamedTuple):
    """The kernel and K slices predicted fastest for a shape, and their predicted GFLOP/s."""

    params: KernelParams
    split: int
    gflops: float


def predict(predictor: Predictor, problem: GemmProblem, compute_units: int,
            usable: Callable[[KernelParams], bool]) -> Prediction | None:
    """The pair of a ``usable`` kernel of the bank and a split predicted fastest for ``problem`` (one
    product, not a batch); None when the problem is beyond the predictor's reach or no usable pair was
    timed on any sample."""
    m, n, k = problem.m, problem.n, problem.k
    largest = max(s.shape[0] * s.shape[1] * s.shape[2] for s in predictor.samples)
    if problem.batch > 1 or m * n * k > REACH * largest:
        return None
    stored = ("T" if problem.op_a.transposed else "N") + ("T" if problem.op_b.transposed else "N")
    distances = [shape_distance(sample.shape, (m, n, k))
                 + LAYOUT_DISTANCE * sum(a != b for a, b in zip(sample.layout, stored)) for sample in predictor.samples]
    order = sorted(range(len(distances)), key=distances.__getitem__)
    best: Prediction | None = None
    for index, params in enumerate(predictor.bank):
        if not usable(params):
            continue
        for split in split_counts(params, problem, compute_units) or [1]:
            rate = _predicted(predictor, order, distances, index, params, split, (stored, m, n, k), compute_units)
            if rate is not None and (best is None or rate > best.gflops):
                best = Prediction(params, split, rate)
    return best


def _predicted(predictor: Predictor, order: list[int], distances: list[float], index: int, params: KernelParams,
               split: int, shape: tuple[str, int, int, int], compute_units: int) -> float | None:
    """The rate of bank kernel ``index`` with ``split`` slices on ``shape`` (stored layout, m, n, k), from
    the nearest samples that timed that pair (``order``: the samples nearest first); None when none did."""
    logs, weights = 0.0, 0.0
    found = 0
    for i in order:
        sample = predictor.samples[i]
        measured = next((gflops for s, gflops in sample.rates[index] if s == split), None)
        if not measured:
            continue
        share = modelled(predictor, params, split, (sample.layout, *sample.shape), compute_units)
        weight = 1.0 / (distances[i] + 0.1) ** 2
        logs += weight * math.log(measured / share)
        weights += weight
        found += 1
        if found == NEIGHBOURS:
            break
    if not found:
        return None
    return modelled(predictor, params, split, shape, compute_units) * math.exp(logs / weights)


def modelled(predictor: Predictor, params: KernelParams, split: int, shape: tuple[str, int, int, int],
             compute_units: int) -> float:
    """The model's share of the device's time that is the product's work, for ``params`` with ``split``
    slices on ``shape`` (stored layout, m, n, k): coverage's, and the share of time the transposing packs
    leave (each operand stored otherwise than the kernel reads it is read and written once more)."""
    layout, m, n, k = shape
    share = useful_share(params, m, n, split, compute_units)
    packed = (m * k if layout[0] != params.layout[0] else 0) + (k * n if layout[1] != params.layout[1] else 0)
    if not packed or not predictor.balance:
        return share
    flops = 2.0 * m * n * k
    return share * flops / (flops + predictor.balance * 2.0 * packed)
