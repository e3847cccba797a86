"""A tune never makes a product slower. After ``autogemm tune --shapes``, every product of the workload is
run as a call would run it (the plan a call makes, with its launches, timed on the device as ``autogemm
bench`` times it) under the profile the run started from and under the one it made; where the new plan
is slower, the one before is kept as that product's own entry. A run changes products it never reached
too: an exact shape tuned is the nearest entry of a GEMV of a similar shape, and the predictor learns from
the shapes tuned. A product kept this way gives its GEMV entry to its neighbours in turn, so the workload
is compared once more after the first products are kept."""

from __future__ import annotations

from dataclasses import dataclass

from ..accuracy import gemm_flops
from ..codelets.registry import GEMM, params_from_dict
from ..dtypes import Dtype, get_dtype
from ..profiles import Profile, Ranked, SizeClassEntry
from ..profiles.profile import SHAPES
from ..workload import ShapeRecord
from .evaluation.isolated import WorkerProcess

#: Timed runs of each plan compared (their median counts, after a run to warm up).
RUNS = 5
#: Comparisons of the workload: the first, and one after the products it kept.
ROUNDS = 2
#: The strategy a kept entry names: taken over from the profile before the run, not searched.
KEPT = "kept"

#: A workload's GEMM problem as the worker takes it: dtype key, m, n, k, layout.
Problem = tuple[str, int, int, int, str]


@dataclass(frozen=True)
class Kept:
    """A product whose plan the tuned profile made slower: the seconds of the plan before the run (now its
    entry's) and of the one after (None: it failed)."""

    dtype: str
    shape: tuple[int, int, int]
    layout: str
    before: float
    after: float | None


def workload_problems(records: list[ShapeRecord], dtypes: tuple[Dtype, ...]) -> list[Problem]:
    """The workload's GEMM products of ``dtypes`` a plan runs alone (batches are not), each once."""
    keys = {dt.key for dt in dtypes}
    return list(dict.fromkeys((r.dtype, r.m, r.n, r.k, r.layout) for r in records
                              if r.routine == GEMM and r.batch == 1 and r.dtype in keys))


def keep_no_slower(worker: WorkerProcess, before: Profile, tuned: Profile, problems: list[Problem]
                   ) -> tuple[Profile, list[Kept] | None]:
    """``tuned`` with an entry of the plan ``before`` made for each of ``problems`` that ``tuned``'s plan
    runs slower, and those products; None for them where the worker was lost comparing (``tuned`` then
    keeps only what was found before)."""
    kept: list[Kept] = []
    for _ in range(ROUNDS):
        compared = worker.compare_plans((before, tuned), problems, RUNS)
        if compared is None:
            return tuned, None
        slower = [(problem, *timed) for problem, timed in zip(problems, compared)
                  if timed is not None and _slower(*timed)]
        for problem, was, now in slower:
            tuned = tuned.with_entry(problem[0], _entry(problem, was), SHAPES)
            kept.append(Kept(problem[0], problem[1:4], problem[4], was["seconds"], now["seconds"]))
        if not slower:
            break
    return tuned, kept


def _slower(before: dict, after: dict) -> bool:
    return before["seconds"] is not None and (after["seconds"] is None or after["seconds"] > before["seconds"])


def _entry(problem: Problem, timed: dict) -> SizeClassEntry:
    """The exact entry that makes a call run ``timed``'s plan for ``problem``: a GEMM's of the product's
    shape and layout, or the multi-vector GEMV's of its route's."""
    key, m, n, k, layout = problem
    config = params_from_dict(timed["config"], routine=None, backend=None)
    gflops = gemm_flops(get_dtype(key), m, n, k) / timed["seconds"] / 1e9
    if timed["gemv"]:
        gemv_layout, rows, cols, vectors = timed["gemv"]
        return SizeClassEntry(gemv_layout, (rows, cols, vectors), (Ranked(config, gflops),), KEPT, 1, timed["seconds"])
    return SizeClassEntry(layout, (m, n, k), (Ranked(config, gflops, timed["split"]),), KEPT, 1, timed["seconds"])
