"""GATLAS's rank-and-refine: a short probe (one timed run) of many candidates, then full, repeated timing
of the best few, since probes are cheap but noisy."""

from __future__ import annotations

from ...codelets.space import Point, SearchSpace
from ..objective import Objective
from .base import Strategy, in_chunks

PROBE_RUNS = 1
CHUNK = 32


class RankRefine(Strategy):
    name = "rank-refine"
    summary = "GATLAS: probe many candidates with one run each, then time the top ranked in full"

    def __init__(self, seed: int = 0, probe_share: float = 0.8, refine_share: float = 0.1) -> None:
        super().__init__(seed)
        self.probe_share = probe_share
        self.refine_share = refine_share

    def search(self, space: SearchSpace, objective: Objective, start: Point | None = None) -> None:
        order = space.shuffled(self.rng)
        if start is not None and start in order:
            order.remove(start)
            order.insert(0, start)
        probed: list[Point] = []
        for chunk in in_chunks(order, CHUNK):
            if objective.clock.fraction() >= self.probe_share:
                break
            try:
                objective.measure_many(chunk, runs=PROBE_RUNS)
            finally:
                probed += [p for p in chunk if objective.score(p) is not None]
        ranked = sorted(probed, key=lambda p: objective.score(p) or 0.0, reverse=True)
        top = max(3, int(len(probed) * self.refine_share))
        for point in ranked[:top]:
            objective.measure_many([point])
