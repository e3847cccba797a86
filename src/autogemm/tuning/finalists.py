"""What enters a profile from a size class's measurements: the fastest correct configurations that pass
verification on awkward shapes, with the best of each codelet layout beside them; for a GPU's large
class, their order decided again on a problem twice the size; and for an exact shape whose blocks leave
compute units idle, the K split measured best for each."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from ..blas import GemmProblem
from ..blas.coverage import split_counts
from ..codelets.registry import Params
from ..dtypes import Dtype
from ..profiles import Ranked
from ..profiles.profile import MAX_RANKED
from .evaluation import EvaluatorSpec, IsolatedEvaluator, WorkerProcess
from .objective import Objective

#: How many more verified finalists than it keeps a class with ``confirm`` times again.
CONFIRM_POOL = 2


def layout_of(ranked: Ranked) -> str:
    """A configuration's codelet layout: the kinds a class keeps the best of."""
    return ranked.config.layout


def layout_and_block(measured: str) -> Callable[[Ranked], object]:
    """The kinds a batch class keeps the best of: each layout, and in the ``measured`` one each block
    shape. A batch class serves batches of smaller and larger matrices than its own, for which the block
    whose share of C is largest wins (``blas.selection.class_choice``): it needs their best blocks."""
    def kind(ranked: Ranked) -> object:
        config = ranked.config
        return (config.layout, config.block_rows, config.block_cols) if config.layout == measured else config.layout

    return kind


def finalists(check: Callable[[Params], str | None], objectives: list[Objective], top: int,
              late: Callable[[], bool] = lambda: False, kind: Callable[[Ranked], object] = layout_of
              ) -> tuple[list[Ranked], list[tuple[Params, str]]]:
    """Over the measurements of ``objectives`` (one per family searched): the ``top`` best correct
    configurations that also pass ``check`` (the verification: what goes wrong, or None; see
    ``best_of_each_kind``, which stops at the essentials once ``late``), with the best of each
    ``kind``; and those rejected by it."""
    ok = [Ranked(r.config, r.gflops) for o in objectives for r in o.records.values() if o.complete(r)]
    rejected: list[tuple[Params, str]] = []

    def verified(ranked: Ranked) -> bool:
        problem = check(ranked.config)
        if problem:
            rejected.append((ranked.config, problem))
        return not problem

    return best_of_each_kind(ok, top, verified, late, kind), rejected


def best_of_each_kind(candidates: list[Ranked], top: int, accept: Callable[[Ranked], bool] = lambda r: True,
                      late: Callable[[], bool] = lambda: False, kind: Callable[[Ranked], object] = layout_of
                      ) -> list[Ranked]:
    """The ``top`` fastest of ``candidates`` that ``accept`` takes, then the fastest accepted one of each
    codelet layout not among them (so that a problem stored in that layout can be computed without a
    transposing pack, see ``blas.selection``) and of each other ``kind`` (by default the layout alone),
    best first, at most ``MAX_RANKED`` (room kept for each layout). ``accept`` is asked only as far as
    needed; once ``late`` (the class's time is spent: each verification costs about a second) only for
    the fastest of each layout."""
    ordered = sorted(candidates, key=lambda r: r.gflops, reverse=True)
    kept: list[Ranked] = []
    kinds: set[object] = set()
    layouts: set[str] = set()
    all_kinds, all_layouts = {kind(r) for r in ordered}, {r.config.layout for r in ordered}
    for ranked in ordered:
        if len(kept) >= MAX_RANKED:
            break
        if len(kept) >= top or (kept and late()):
            new_layout, new_kind = ranked.config.layout not in layouts, kind(ranked) not in kinds
            room = len(kept) < MAX_RANKED - len(all_layouts - layouts)
            if not new_layout and not (new_kind and room and not late()):
                continue
        if accept(ranked):
            kept.append(ranked)
            kinds.add(kind(ranked))
            layouts.add(ranked.config.layout)
        if len(kept) >= top and kinds >= all_kinds:
            break
    return kept


def with_measured_splits(worker: WorkerProcess, problem: GemmProblem, ranked: list[Ranked], timed: int
                         ) -> list[Ranked]:
    """``ranked`` (configurations for ``problem``, one exact shape) with, for the first ``timed`` of them
    whose blocks leave compute units idle, every K split ``coverage.split_counts`` allows timed in full
    and the fastest kept (``Ranked.split``, used by plans of that shape); best first. (Splits multiply
    the measurements of a configuration by up to eight: for all the finalists they were most of an exact
    shape's time.)"""
    found = ((r.config, split_counts(r.config, problem, worker.device.compute_units)) for r in ranked)
    counts = dict(itertools.islice(((config, c) for config, c in found if c), timed))
    best = {r.config: r for r in ranked}
    layout = "NT"[problem.op_a.transposed] + "NT"[problem.op_b.transposed]
    for count in sorted({c for found in counts.values() for c in found}):
        spec = EvaluatorSpec.gemm(problem.dtype, (problem.m, problem.n, problem.k), True, layout, split=count)
        evaluator = IsolatedEvaluator(worker, spec)
        for config in (c for c, found in counts.items() if count in found):
            record = evaluator.evaluate(config)
            if record.ok and (best[config].split is None or record.gflops > best[config].gflops):
                best[config] = Ranked(config, record.gflops, count)
    return sorted(best.values(), key=lambda r: r.gflops, reverse=True)


def confirmed(worker: WorkerProcess, dtype: Dtype, size: int, ranked: list[Ranked], top: int) -> list[Ranked] | None:
    """``ranked`` timed again, in full, on the square problem of ``size`` in ``worker`` and kept as
    ``best_of_each_kind`` keeps them; None where that problem would take more than a quarter of the
    device's memory (operands, C and the float64 reference) or none of them computes it right."""
    device = worker.device
    reference_itemsize = np.dtype(dtype.reference_numpy).itemsize
    needed = size * size * (2 * dtype.itemsize + dtype.output.itemsize + reference_itemsize)
    if 4 * needed > device.global_mem_bytes or size * size * reference_itemsize > device.max_mem_alloc_bytes:
        return None
    evaluator = IsolatedEvaluator(worker, EvaluatorSpec.gemm(dtype, (size,) * 3, full=True))
    records = [evaluator.evaluate(r.config) for r in ranked]
    timed = [Ranked(record.config, record.gflops) for record in records if record.ok]
    return best_of_each_kind(timed, top) or None
