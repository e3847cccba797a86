"""The rate of a (kernel, K split) on a shape no one measured, predicted from a profile's ``Predictor``.

The model (``modelled``) is the share of the device's time that is the product's work: the product's
flops over its time. That time is the GEMM kernel's, the longer of its flops spread over the padded
blocks, K steps and busy compute units (``coverage.useful_share``) and the elements it reads and writes
at the device's ``Predictor.balance``; plus the elements the plan's packs and merge copy
(``Routing.traffic``: transposes, padding, the slices' partial sums) at that balance; plus a cost per
launch (``Predictor.launch``, fitted to the samples). A configuration that stages every layout alike is
modelled as the twin that runs: the one reading A and B as stored (``selection.read_as_stored``). That
model is corrected by what the samples nearest to the shape measured. For each kernel of the bank and
each split, the residual of a sample is its measured rate over the model's share at that sample; the
prediction is the model's share at the shape times the weighted geometric mean of the residuals of the
``NEIGHBOURS`` nearest samples that timed that pair (``neighbours``: nearest in log scale of m, n and k,
a sample stored in another layout farther by ``LAYOUT_DISTANCE`` per operand). So what the model misses
near the samples (the operands' caches, the kernels' own speeds) is measured, and far from them the
model still ranks the plans by how well they cover C and what they copy."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ..codelets.registry import KernelParams
from ..dtypes import Dtype
from ..profiles import Predictor
from ..profiles.profile import shape_distance
from .coverage import area_share, split_counts, stream_share, useful_share
from .problem import GemmProblem, Op
from .routing import Routing

NEIGHBOURS = 4
LAYOUT_DISTANCE = 2.5
#: The predictor serves problems of at most this many times the work of its largest sample: past
#: them every kernel's blocks fill the device, and the size classes measured there decide.
REACH = 8

#: A shape as the predictor sees it: A and B stored as the layout says (NN to TT), C of m x n, depth k.
Shape = tuple[str, int, int, int]


class Prediction(NamedTuple):
    """The kernel and K slices predicted fastest for a shape, and their predicted GFLOP/s."""

    params: KernelParams
    split: int
    gflops: float


class Terms(NamedTuple):
    """What the model needs of one plan: the product's flops, the share of the device its blocks keep
    busy on real work, the elements its packs and merge copy, the elements its GEMM kernel reads and
    writes, and its launches."""

    flops: float
    covered: float
    copied: int
    streamed: int
    launches: int


def predict(predictor: Predictor, problem: GemmProblem, compute_units: int,
            usable: Callable[[KernelParams], bool]) -> Prediction | None:
    """The pair of a ``usable`` kernel of the bank and a split predicted fastest for ``problem`` (one
    product, not a batch); None when the problem is beyond the predictor's reach or no usable pair was
    timed on any sample."""
    pairs = ranked(predictor, problem, compute_units, usable)
    return pairs[0] if pairs else None


def ranked(predictor: Predictor, problem: GemmProblem, compute_units: int,
           usable: Callable[[KernelParams], bool]) -> list[Prediction]:
    """Every pair of a ``usable`` kernel of the bank and a split that some sample timed, with its rate
    predicted for ``problem``, fastest first (of equal rates, the bank's and the splits' order); none for
    a batch or a problem beyond the predictor's reach."""
    m, n, k = problem.m, problem.n, problem.k
    largest = max(s.shape[0] * s.shape[1] * s.shape[2] for s in predictor.samples)
    if problem.batch > 1 or m * n * k > REACH * largest:
        return []
    stored = ("T" if problem.op_a.transposed else "N") + ("T" if problem.op_b.transposed else "N")
    shape = (stored, m, n, k)
    order, distances = nearest(predictor, shape)
    pairs = []
    for index, params in enumerate(predictor.bank):
        if not usable(params):
            continue
        # (one that stages every layout alike runs as its twin in the stored layout, with no pack:
        # ``selection.read_as_stored``; its samples, measured in its own, correct the twin's model)
        runs = params.in_layout(stored, problem.dtype) if params.stages_alike(problem.dtype) else params
        for split in split_counts(params, problem, compute_units) or [1]:
            found = neighbours(predictor, order, distances, index, split)
            if not found:
                continue
            near = [modelled(predictor, problem.dtype, params, split, predictor.samples[i].layout_shape,
                             compute_units) for i, _, _ in found]
            rate = math.exp(corrected(modelled(predictor, problem.dtype, runs, split, shape, compute_units),
                                      np.array(near), np.array([w for _, w, _ in found]),
                                      np.log([gflops for _, _, gflops in found])))
            pairs.append(Prediction(params, split, rate))
    return sorted(pairs, key=lambda pair: -pair.gflops)


def nearest(predictor: Predictor, shape: Shape) -> tuple[list[int], np.ndarray]:
    """The samples' indices nearest ``shape`` first, and each sample's distance to it."""
    layout, m, n, k = shape
    distances = shape_distance(np.array([s.shape for s in predictor.samples]), (m, n, k)) + LAYOUT_DISTANCE * \
        np.array([(s.layout[0] != layout[0]) + (s.layout[1] != layout[1]) for s in predictor.samples])
    return np.argsort(distances, kind="stable").tolist(), distances


def neighbours(predictor: Predictor, order: Sequence[int], distances: Sequence[float], index: int,
               split: int) -> list[tuple[int, float, float]]:
    """(sample, weight, measured GFLOP/s) of the ``NEIGHBOURS`` samples first in ``order`` that timed
    bank kernel ``index`` with ``split`` slices, weighed by the inverse square of their distance."""
    found = []
    for i in order:
        measured = next((gflops for s, gflops in predictor.samples[i].rates[index] if s == split), None)
        if measured:
            found.append((i, 1.0 / (distances[i] + 0.1) ** 2, measured))
            if len(found) == NEIGHBOURS:
                break
    return found


def corrected(at: ArrayLike, near: ArrayLike, weights: ArrayLike, measured_logs: ArrayLike) -> ArrayLike:
    """The logarithm of the rate predicted from the model's share ``at`` the shape, corrected by the
    neighbours' residuals: the weighted mean of their measured rates' logarithms over their modelled
    shares ``near`` (along the last axis: numbers for one prediction, rows of arrays for many). A product
    with no multiply-add (K of 0) has a share of 0, whose logarithm is -inf: no rate, and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(at) + (weights * (measured_logs - np.log(near))).sum(-1) / np.sum(weights, -1)


def modelled(predictor: Predictor, dtype: Dtype, params: KernelParams, split: int, shape: Shape,
             compute_units: int) -> float:
    """The model's share of the device's time that is the product's work, for ``params`` with ``split``
    slices on ``shape`` of ``dtype``, at the predictor's balance and launch cost."""
    return share(terms(dtype, params, split, shape, compute_units), predictor.balance, predictor.launch)


def share(plan: Terms, balance: float, launch: float) -> float:
    """The model's share for a plan's ``Terms`` at ``balance`` flops per element moved and ``launch``
    flops per launch (numbers, or numpy arrays of them): the GEMM kernel takes the longer of its
    multiply-adds and its own reads and writes (they overlap), the copies and launches add to it."""
    kernel = np.maximum(_over(plan.flops, plan.covered), balance * plan.streamed)
    return _over(plan.flops, kernel + balance * plan.copied + launch * plan.launches)


def _over(x: ArrayLike, y: ArrayLike) -> ArrayLike:
    """x / y, 0 where y is 0 (an empty product: no work, nothing covered, no time)."""
    if np.ndim(x) == 0 and np.ndim(y) == 0:
        return float(x / y) if y else 0.0
    y = np.asarray(y, dtype=float)
    return np.divide(x, y, out=np.zeros(np.broadcast(x, y).shape), where=y != 0)


@functools.lru_cache(maxsize=2**16)
def terms(dtype: Dtype, params: KernelParams, split: int, shape: Shape, compute_units: int) -> Terms:
    """The model's ``Terms`` of ``params`` with ``split`` slices on ``shape`` of ``dtype`` (kept: the
    samples' are asked for again at every prediction)."""
    layout, m, n, k = shape
    problem = GemmProblem.dense(dtype, m, n, k, Op.from_letter(layout[0], "layout"),
                                Op.from_letter(layout[1], "layout"))
    routing = Routing(problem, params, split, compute_units)
    traffic = routing.traffic()
    covered = (area_share(params, m, n) * stream_share(routing.partition, compute_units) if routing.partition
               else useful_share(params, m, n, split, compute_units))
    return Terms(2.0 * m * n * k, covered * traffic.depth_share, traffic.copied, traffic.streamed, traffic.launches)
