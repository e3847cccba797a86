"""Exhaustive and random search: the baseline every other strategy is judged against, and the simplest
one that honours any budget."""

from __future__ import annotations

from ...codelets.space import Point, SearchSpace
from ..objective import Objective
from .base import Strategy, in_chunks

CHUNK = 32


class Exhaustive(Strategy):
    name = "exhaustive"
    summary = "every point of the pruned space, in order (resumable across runs through the checkpoint)"

    def search(self, space: SearchSpace, objective: Objective, start: Point | None = None) -> None:
        for chunk in in_chunks(space.points(), CHUNK):
            objective.measure_many(chunk)


class RandomSearch(Strategy):
    name = "random"
    summary = "uniformly random points without repetition"

    def search(self, space: SearchSpace, objective: Objective, start: Point | None = None) -> None:
        order = space.shuffled(self.rng)
        if start is not None and start in order:
            order.remove(start)
            order.insert(0, start)
        for chunk in in_chunks(order, CHUNK):
            objective.measure_many(chunk)
