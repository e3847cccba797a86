"""The interface every search strategy implements."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import ClassVar

from ...codelets.space import Point, SearchSpace
from ..objective import BudgetSpent, Objective


class Strategy(ABC):
    """A way to choose which points of a space to measure. ``search`` asks the objective for scores until
    it is done or the objective raises ``BudgetSpent`` (pruning by ``check`` has already happened: the
    space holds valid points only)."""

    name: ClassVar[str]
    summary: ClassVar[str]

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    @abstractmethod
    def search(self, space: SearchSpace, objective: Objective, start: Point | None = None) -> None:
        """Measure points of ``space`` through ``objective``, starting from ``start`` where given."""

    def run(self, space: SearchSpace, objective: Objective, start: Point | None = None,
            warm: list[Point] = ()) -> None:
        """``search`` after measuring the ``warm`` points first (those that were best before), from the
        best of them where it beats ``start``; a spent budget ends it quietly."""
        try:
            if warm:
                objective.measure_many(list(warm))
                best = self.best_of(objective, list(warm) + ([start] if start is not None else []))
                start = best if objective.score(best) else start
            self.search(space, objective, start)
        except BudgetSpent:
            pass

    @staticmethod
    def best_of(objective: Objective, points: list[Point]) -> Point:
        """The point of ``points`` with the highest measured score (the first on ties)."""
        return max(points, key=lambda p: objective.score(p) or 0.0)


def in_chunks(points: list[Point], size: int) -> list[list[Point]]:
    return [points[i:i + size] for i in range(0, len(points), size)]
