"""The predictor's training (``autogemm tune``): a bank of the profile's kernels timed, with every K split
worth trying, on shapes sampled across the space, for ``blas.prediction`` to choose kernel and split
for any shape from.

The bank is what the size classes found: each class's best kernel and the best of each other codelet
layout (a problem stored in that layout runs it without a transposing pack). The shapes are drawn
log-uniform: m and n from just past the multi-vector GEMV's columns to ``MAX_SIDE``, k from ``MIN_K``
to ``MAX_K``, each layout in turn, at most ``max_work`` multiply-adds (the host computes each one's
float64 reference) and at least ``MIN_WORK``; half of them rounded to whole tiles, as applications'
shapes often are (their plans copy nothing to pad). Every result is checked like every candidate's.
Sampling stops when its budget is spent: each sample is kept as it is measured, so a shorter run gives
a coarser predictor, not none. ``merged`` adds what the profile measured before (the shapes tuned
exactly, an older predictor's samples), ``calibrate`` then fits the model's cost of a launch (and its balance,
near the one measured) to the samples, and ``held_out`` says how near the predictor's choices come to
the best measured on samples it did not see, beside the size classes' choices: a predictor that does
not beat them is not kept."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ..blas import GemmProblem, Op
from ..blas.coverage import auto_slices, split_counts
from ..blas.prediction import NEIGHBOURS, Terms, corrected, nearest, neighbours, predict, share, terms
from ..blas.selection import class_choice
from ..blas.vectors import MAX_VECTORS
from ..codelets.registry import GEMM, Params
from ..codelets.stream_k import STREAM_K
from ..dtypes import Dtype
from ..profiles import Predictor, Profile, Sample, SizeClassEntry
from ..profiles.profile import MAX_BANK, MAX_SAMPLES, SHAPES, routine_of
from ..runtime.opencl.device import Device
from .budget import Budget, BudgetClock
from .evaluation import EvaluatorSpec, IsolatedEvaluator, WorkerProcess
from .records import Outcome
from .scope import bandwidth

#: Kernels in a bank at most, and the timed runs of each measurement.
BANK_SIZE, RUNS = 24, 3
LAYOUTS = ("NN", "NT", "TN", "TT")
MIN_K, MIN_WORK = 1, 2**15
#: The largest side and reduction sampled (a language model's vocabulary is a side of 128256), and
#: the most multiply-adds of a sample: on a GPU, with ``quick``, and on a CPU.
MAX_SIDE, MAX_K = 2**17, 2**16
GPU_WORK, QUICK_WORK, CPU_WORK = 2**34, 2**31, 2**24
#: Sides of aligned samples are rounded to multiples of this (or of the power of two below a shorter one).
ALIGNMENT = 128
#: The launch costs ``calibrate`` tries, in flops: none, and powers of two from about a microsecond of
#: a CPU to tens of microseconds of a large GPU; and the factors of the measured balance it tries.
LAUNCH_GRID = (0.0, *(2.0**p for p in range(14, 33)))
BALANCE_FACTORS = (0.5, 1.0, 2.0)
#: ``held_out`` judges a predictor on this many samples at least: on a few samples a predictor can beat
#: the size classes by chance (a tune from a borrowed profile kept a DGEMM predictor judged on 3 samples,
#: whose pick for 4096^3 ran far slower than the borrowed profile's).
MIN_JUDGED = 8


def bank(profile: Profile, dtype: Dtype) -> tuple[Params, ...]:
    """The kernels the predictor times for ``dtype``: of each size class of single products the profile
    holds, its best and the best of each other codelet layout, without repeats; then, for each layout,
    the large class's best with smaller blocks (``smaller_blocks``: the classes are squares, whose best
    blocks are large, while a product of few blocks, skinny or small, fills the device only with smaller
    ones); at most ``BANK_SIZE``."""
    found: list[Params] = []
    for entry in (e for e in profile.dtypes.get(dtype.key, ()) if e.batch == 1):
        layouts: set[str] = set()
        for ranked in entry.ranked:
            if ranked.config.layout not in layouts and ranked.config not in found:
                found.append(ranked.config)
            layouts.add(ranked.config.layout)
    large = profile.entry(dtype.key, "large")
    best_by_layout: dict[str, Params] = {}
    for ranked in large.ranked if large else ():
        best_by_layout.setdefault(ranked.config.layout, ranked.config)
    for config in best_by_layout.values():
        found += [smaller for smaller in config.smaller_blocks() if smaller not in found]
    return tuple(found[:min(BANK_SIZE, MAX_BANK)])


def balance(profile: Profile, dtype: Dtype) -> float:
    """``Predictor.balance`` of ``dtype`` from ``profile``: its large class's best rate over its GEMV's
    best rate in elements per second (0 where either is not tuned)."""
    large = profile.entry(dtype.key, "large")
    gemv = [bandwidth(dtype, e.shape, e.ranked[0].gflops) for e in profile.gemv.get(dtype.native.key, ())]
    if large is None or not gemv:
        return 0.0
    return large.ranked[0].gflops / (max(gemv) / dtype.itemsize)


def sample_shapes(max_work: int, max_elements: int, seed: int) -> list[tuple[str, tuple[int, int, int]]]:
    """``MAX_SAMPLES`` (layout, (m, n, k)) drawn log-uniform from ``seed``, the layouts in turn, each of
    ``MIN_WORK`` to ``max_work`` multiply-adds and at most ``max_elements`` in A, B and C together;
    every other four (one of each layout) ``aligned``."""
    rng = np.random.default_rng(seed)
    low = MAX_VECTORS + 1
    shapes = []
    while len(shapes) < MAX_SAMPLES:
        m, n = (int(round(math.exp(rng.uniform(math.log(low), math.log(MAX_SIDE))))) for _ in range(2))
        k = int(round(math.exp(rng.uniform(math.log(MIN_K), math.log(MAX_K)))))
        if len(shapes) // len(LAYOUTS) % 2:
            m, n = (side if side >= low else 2 * side for side in (aligned(m), aligned(n)))
            k = aligned(k)
        if MIN_WORK <= m * n * k <= max_work and m * k + k * n + m * n <= max_elements:
            shapes.append((LAYOUTS[len(shapes) % len(LAYOUTS)], (m, n, k)))
    return shapes


def aligned(side: int) -> int:
    """``side`` rounded to the nearest multiple of ``ALIGNMENT``, or of the power of two at most ``side``
    where that is less."""
    step = min(ALIGNMENT, 1 << (side.bit_length() - 1))
    return max(step, round(side / step) * step)


def sample_limits(device: Device, quick: bool) -> tuple[int, int]:
    """The most multiply-adds of a sample on ``device`` (a GPU or a CPU), and the most elements of its
    operands: their float64 copies within an eighth of its memory and half its largest allocation."""
    work = (QUICK_WORK if quick else GPU_WORK) if device.is_gpu else CPU_WORK
    return work, min(device.global_mem_bytes // 8, device.max_mem_alloc_bytes // 2) // 8


def fit(worker: WorkerProcess, dtype: Dtype, kernels: tuple[Params, ...], budget: Budget, quick: bool = False,
        seed: int = 0, flops_per_element: float = 0.0,
        progress: Callable[[int, float], None] = lambda samples, fraction: None) -> Predictor | None:
    """Time ``kernels`` in ``worker`` on sampled shapes of ``dtype`` until ``budget`` is spent (with every
    K split ``coverage.split_counts`` allows; else whole; the last sample may hold some kernels' rates
    only, the first holds all of them), ``progress`` told the samples done and the
    budget's share used after each; the predictor (of the device's ``flops_per_element``, ``balance``),
    or None when no sample was measured."""
    clock = BudgetClock(budget)
    started = time.monotonic()
    samples: list[Sample] = []
    units = worker.device.compute_units
    for number, (layout, shape) in enumerate(sample_shapes(*sample_limits(worker.device, quick), seed)):
        if clock.spent():
            break
        problem = GemmProblem.dense(dtype, *shape, Op.from_letter(layout[0], "layout"),
                                    Op.from_letter(layout[1], "layout"))
        splits = {config: split_counts(config, problem, units) or [1] for config in kernels}
        rates: dict[Params, list[tuple[int, float]]] = {config: [] for config in kernels}
        for split in sorted({s for found in splits.values() for s in found}):
            if samples and clock.spent():
                break       # (a sample of many kernels and splits can take several seconds)
            evaluator = IsolatedEvaluator(worker, EvaluatorSpec.gemm(dtype, shape, layout=layout, split=split),
                                          runs=RUNS, seed=seed + number)
            for config in (c for c in kernels if split in splits[c]):
                if samples and clock.spent():
                    break
                record = evaluator.evaluate(config)
                clock.evaluations += 1
                if record.outcome in (Outcome.OK, Outcome.TOO_SLOW) and record.gflops > 0:
                    rates[config].append((split, record.gflops))
        if any(rates.values()):
            samples.append(Sample(layout, shape, tuple(tuple(rates[c]) for c in kernels)))
        progress(len(samples), clock.fraction())
    if not samples:
        return None
    return Predictor(kernels, tuple(samples), time.monotonic() - started, flops_per_element)


def merged(fitted: Predictor, older: Predictor | None, exact: Sequence[SizeClassEntry], dtype: Dtype,
           compute_units: int) -> Predictor:
    """``fitted`` with every sample the profile measured before, calibrated (``calibrate``): the shapes
    ``autogemm tune --shapes`` tuned exactly (``exact``, the GEMM entries of the profile's ``shapes`` table: the
    rates of their ranked kernels, with the split each was measured best with or a plan's), then
    ``fitted``'s own, then ``older``'s (a predictor the profile held). Each keeps the rates of the kernels
    of ``fitted``'s bank it measured; one sample per stored layout and shape, the first found, at most
    ``MAX_SAMPLES`` of them, none without a rate."""
    measured: list[tuple[str, tuple[int, int, int], dict[Params, tuple[tuple[int, float], ...]]]] = []
    for entry in exact:
        if routine_of(SHAPES, entry.name) != GEMM:
            continue
        problem = GemmProblem.dense(dtype, *entry.shape, Op.from_letter(entry.name[0], "layout"),
                                    Op.from_letter(entry.name[1], "layout"))
        measured.append((entry.name, entry.shape, {
            r.config: ((auto_slices(r.config, problem, compute_units) if r.split is None else r.split, r.gflops),)
            for r in entry.ranked}))
    for source in (fitted, older) if older is not None else (fitted,):
        measured += [(s.layout, s.shape, dict(zip(source.bank, s.rates))) for s in source.samples]
    samples: dict[tuple[str, tuple[int, int, int]], Sample] = {}
    for layout, shape, rates in measured:
        sample = Sample(layout, shape, tuple(rates.get(config, ()) for config in fitted.bank))
        if (layout, shape) not in samples and any(sample.rates) and len(samples) < MAX_SAMPLES:
            samples[layout, shape] = sample
    return calibrate(replace(fitted, samples=tuple(samples.values())), dtype, compute_units)


def calibrate(predictor: Predictor, dtype: Dtype, compute_units: int) -> Predictor:
    """``predictor`` with the launch cost (of ``LAUNCH_GRID``) and balance (the measured one times one of
    ``BALANCE_FACTORS``) whose model predicts each sample's measured rates best from the other samples:
    the least squared error of the logarithms, each sample left out in turn."""
    targets: list[Terms] = []
    measured: list[float] = []
    around: list[list[tuple[Terms, float, float]]] = []
    for i, sample in enumerate(predictor.samples):
        order, distances = nearest(predictor, sample.layout_shape)
        order = [j for j in order if j != i]
        for index, params in enumerate(predictor.bank):
            for split, gflops in sample.rates[index]:
                found = neighbours(predictor, order, distances, index, split)
                if not found or not gflops:
                    continue
                targets.append(terms(dtype, params, split, sample.layout_shape, compute_units))
                measured.append(math.log(gflops))
                around.append([(terms(dtype, params, split, predictor.samples[j].layout_shape, compute_units),
                                weight, math.log(rate)) for j, weight, rate in found])
    if not targets:
        return predictor
    # the neighbours as arrays of NEIGHBOURS columns, missing ones of weight 0
    padded = [row + [row[0][:1] + (0.0, 0.0)] * (NEIGHBOURS - len(row)) for row in around]
    near = Terms(*(np.array([[t[0][f] for t in row] for row in padded]) for f in range(len(Terms._fields))))
    weights = np.array([[t[1] for t in row] for row in padded])
    near_logs = np.array([[t[2] for t in row] for row in padded])
    target = Terms(*(np.array(values) for values in zip(*targets)))
    logs = np.array(measured)

    def error(balance: float, launch: float) -> float:
        predicted = corrected(share(target, balance, launch), share(near, balance, launch), weights, near_logs)
        return float(((predicted - logs) ** 2).sum())

    balances = [predictor.balance * f for f in BALANCE_FACTORS] if predictor.balance else [0.0]
    best = min(((b, launch) for b in balances for launch in LAUNCH_GRID), key=lambda c: error(*c))
    return replace(predictor, balance=best[0], launch=best[1])


class Judged(NamedTuple):
    """``held_out``'s figures: the geometric means, over the samples judged, of the rate the new predictor's
    pick measured over the best measured there (``picks``) and the size classes' (``classes``); and,
    where the profile had a predictor, over the samples it had not measured, the new picks' and its
    (``unseen``: (new, older), or None where fewer than ``MIN_JUDGED`` could be judged)."""

    picks: float
    classes: float
    unseen: tuple[float, float] | None = None


def held_out(fitted: Predictor, profile: Profile, dtype: Dtype, compute_units: int,
             older: Predictor | None = None) -> Judged | None:
    """How good the predictor's choices are where nothing told it the answer, beside the size classes'
    (``selection.class_choice`` of ``profile``, with the K slices a plan would take) and, on the samples
    it had not measured, beside ``older``'s (the predictor the profile held): for each sample, the rate
    each pick measured there (the predictor's predicted from the other samples) over the best rate
    measured there; their geometric means over the samples (None with fewer than ``MIN_JUDGED``). A
    sample where a pick's kernel and split has no rate (measured before that split was a candidate, as
    stream-K, or with a plan since routed otherwise, or failed there; or a kernel the bank no longer
    holds) is not judged by it."""
    shares: list[tuple[float, float]] = []
    against_older: list[tuple[float, float]] = []
    seen = {(s.layout, s.shape) for s in older.samples} if older is not None else set()
    for i, sample in enumerate(fitted.samples):
        best = max((gflops for rates in sample.rates for _, gflops in rates), default=0.0)
        others = replace(fitted, samples=fitted.samples[:i] + fitted.samples[i + 1:])
        if not best or not others.samples:
            continue
        layout = sample.layout
        problem = GemmProblem.dense(dtype, *sample.shape, Op.from_letter(layout[0], "layout"),
                                    Op.from_letter(layout[1], "layout"))
        pick = predict(others, problem, compute_units, lambda config: True)
        if pick is None:
            continue
        ours = _measured(fitted, sample, pick.params, pick.split)
        chosen = class_choice(profile, problem, compute_units, lambda config: config in fitted.bank)
        if chosen is not None and ours is not None:
            by_class = _measured(fitted, sample, chosen.config, auto_slices(chosen.config, problem, compute_units))
            if by_class is not None:
                shares.append((ours / best, by_class / best))
        if older is not None and ours is not None and (layout, sample.shape) not in seen:
            theirs = predict(older, problem, compute_units, lambda config: config in fitted.bank)
            rate = theirs and _measured(fitted, sample, theirs.params, theirs.split)
            if rate is not None:
                against_older.append((ours / best, rate / best))
    if len(shares) < MIN_JUDGED:
        return None
    unseen = _means(against_older) if len(against_older) >= MIN_JUDGED else None
    return Judged(*_means(shares), unseen)


def _means(shares: list[tuple[float, float]]) -> tuple[float, float]:
    """The geometric means of the pairs' first and second shares."""
    return tuple(math.exp(sum(math.log(max(s[j], 1e-6)) for s in shares) / len(shares)) for j in (0, 1))


def kept(judged: Judged | None) -> bool:
    """Whether a predictor ``held_out`` judged so is kept: where its picks came nearer to the best
    measured than the size classes' did, and, on the samples the profile's predictor had not measured,
    no farther than that predictor's (a tune does not replace a predictor with a worse one)."""
    return (judged is not None and judged.picks > judged.classes
            and (judged.unseen is None or judged.unseen[0] >= judged.unseen[1]))


def _measured(fitted: Predictor, sample: Sample, params: Params, split: int) -> float | None:
    """The rate ``sample`` measured for ``params`` with ``split``, or with the K slices timed there nearest
    below it; None where it timed no such split (or failed there)."""
    timed = [(s, gflops) for s, gflops in sample.rates[fitted.bank.index(params)]
             if s == split or STREAM_K < s < split]
    return max(timed)[1] if timed else None
