"""Phased search in the manner of Jiang & Snir: search some knobs with the others fixed, in a set order,
and refine an ordered, unimodal knob (the K tile) with their exponential-stride 1-D search."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...codelets.space import Point, SearchSpace
from ..objective import Objective
from .base import Strategy

#: The phases on the codelet space, in order: the codelet; the work-group and register tile together (they
#: set the block size between them, as Jiang & Snir nest their mc and mrt loops); the memory path.
SIMT_GROUPS = (("layout", "assignment"), ("work_group", "tile", "vector_width"), ("staging",))


def exponential_stride_search(score: Callable[[int], float], lo: int, hi: int, start: int) -> int:
    """The index in [lo, hi] maximising ``score``, assumed unimodal (Jiang & Snir, algorithm 1).

    From ``start``, step outwards with strides 1, 2, 4, ... until the range ends or a score is no better
    than the lower of the two before it; then search again, the same way, the gaps either side of the best
    index found. ``score`` should remember its answers: indices are asked for more than once."""
    best = start
    seen: dict[int, float] = {start: score(start)}

    def value(i: int) -> float:
        if i not in seen:
            seen[i] = score(i)
        return seen[i]

    def scan(origin: int, length: int, direction: int) -> None:
        nonlocal best
        if length < 1:
            return
        stride, last_two = 1, []
        while stride <= length:
            i = origin + direction * stride
            s = value(i)
            if s > value(best):
                best = i
            if len(last_two) == 2 and s <= min(last_two):
                break
            last_two = (last_two + [s])[-2:]
            stride *= 2
        centre = best
        left = max((j for j in seen if j < centre), default=lo - 1)
        right = min((j for j in seen if j > centre), default=hi + 1)
        scan(centre, centre - left - 1, -1)
        scan(centre, right - centre - 1, +1)

    scan(start, hi - start, +1)
    scan(start, start - lo, -1)
    return best


class Phased(Strategy):
    name = "phased"
    summary = "Jiang & Snir: K tile by exponential stride, then knob groups in turn, repeated until stable"

    def __init__(self, seed: int = 0, groups: Sequence[Sequence[str]] = SIMT_GROUPS,
                 unimodal: Sequence[str] = ("tile_k",)) -> None:
        super().__init__(seed)
        self.groups = [tuple(g) for g in groups]
        self.unimodal = tuple(unimodal)

    def _plan(self, space: SearchSpace) -> tuple[list[tuple[str, ...]], list[str]]:
        """The phases for this space: the configured groups of knobs it has, every other knob alone, and
        the unimodal knobs it has (searched by exponential stride)."""
        unimodal = [n for n in self.unimodal if n in space.names and space.knob(n).ordered]
        groups = [tuple(n for n in g if n in space.names) for g in self.groups]
        groups = [g for g in groups if g]
        covered = {n for g in groups for n in g} | set(unimodal)
        groups += [(n,) for n in space.names if n not in covered]
        return groups, unimodal

    def _stride(self, space: SearchSpace, objective: Objective, point: Point, name: str) -> Point:
        axis = space.names.index(name)

        def score(i: int) -> float:
            candidate = space.with_values(point, {name: i})
            return objective.measure(candidate) if space.valid(candidate) else -1.0

        best = exponential_stride_search(score, 0, len(space.knob(name).values) - 1, point[axis])
        return space.with_values(point, {name: best})

    def search(self, space: SearchSpace, objective: Objective, start: Point | None = None) -> None:
        groups, unimodal = self._plan(space)
        point = start if start is not None else space.shuffled(self.rng)[0]
        objective.measure(point)
        for name in unimodal:
            point = self._stride(space, objective, point, name)
        while True:
            before = point
            for group in groups:
                candidates = list(space.sweep(point, group))
                objective.measure_many(candidates)
                point = self.best_of(objective, candidates + [point])
            for name in unimodal:
                point = self._stride(space, objective, point, name)
            if point == before:
                break
        self._restart(space, objective, groups)

    def _restart(self, space: SearchSpace, objective: Objective, groups: list[tuple[str, ...]]) -> None:
        """Once the phases agree, spend what is left from random starting points (a local optimum of a
        phased search is not the global one)."""
        remaining = [p for p in space.shuffled(self.rng) if objective.score(p) is None]
        for start in remaining:
            if objective.score(start) is not None:
                continue
            point = start
            objective.measure(point)
            for group in groups:
                candidates = list(space.sweep(point, group))
                objective.measure_many(candidates)
                point = self.best_of(objective, candidates + [point])
