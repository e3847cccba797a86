"""Model-guided search: fit a surrogate of the rate on what was measured, measure what it predicts best.

The surrogate (randomised regression trees over the knobs) is refitted after every batch; candidates are
ranked by an optimistic bound (mean + kappa * spread of the trees) so that the search also explores where
the model is unsure, with kappa falling as the budget is used. Part of every batch goes to the unmeasured
neighbours of the best points so far that the model rates highest (a local step that a model fitted on
few points may not propose by itself). Rates are modelled on a log scale, failures as a floor below the
best, since what matters is the order near the top."""

from __future__ import annotations

import math

import numpy as np

from ...codelets.space import Point, SearchSpace
from ..objective import Objective
from .base import Strategy
from .surrogate import ExtraTrees

INITIAL = 16          # random points measured before the first fit
BATCH = 8             # points measured per refit (more once many are measured: fits cost)
LOCAL = 2             # of which neighbours of the best points so far
LEADERS = 3           # the best points whose neighbours are considered
MAX_POOL = 20_000     # candidates scored per round (a random subset of larger spaces)


class ModelGuided(Strategy):
    name = "model"
    summary = "a surrogate (randomised trees) fitted on the measurements proposes the next batch"

    def __init__(self, seed: int = 0, initial: int = INITIAL, batch: int = BATCH,
                 kappa: tuple[float, float] = (1.0, 0.1)) -> None:
        super().__init__(seed)
        self.initial, self.batch, self.kappa = initial, batch, kappa
        self.model_seed = seed

    def search(self, space: SearchSpace, objective: Objective, start: Point | None = None) -> None:
        points = space.points()
        first = space.shuffled(self.rng)[: self.initial]
        if start is not None:
            first = [start] + [p for p in first if p != start][: self.initial - 1]
        objective.measure_many(first)
        features = space.features(points)
        index = {p: i for i, p in enumerate(points)}
        model = ExtraTrees(seed=self.model_seed)
        while True:
            measured = [p for p in objective.scores if p in index]
            open_rows = [i for i, p in enumerate(points) if objective.score(p) is None]
            if not open_rows:
                return
            if len(open_rows) > MAX_POOL:
                open_rows = self.rng.sample(open_rows, MAX_POOL)
            scores = np.array([objective.scores[p] for p in measured])
            floor = max(scores.max(), 1e-9) * 0.01
            y = np.log(np.maximum(scores, floor))
            model.fit(features[[index[p] for p in measured]], y)
            mean, spread = model.predict(features[open_rows])
            start_k, end_k = self.kappa
            kappa = start_k + (end_k - start_k) * objective.clock.fraction()
            ranked = [points[open_rows[i]] for i in np.argsort(-(mean + kappa * spread))]
            local = self._local_step(space, objective, model, features, index)
            batch = list(dict.fromkeys(local + ranked))
            objective.measure_many(batch[: max(self.batch, len(measured) // 12)])
            if not math.isfinite(float(mean.max())):
                return

    def _local_step(self, space: SearchSpace, objective: Objective, model: ExtraTrees, features: np.ndarray,
                    index: dict[Point, int]) -> list[Point]:
        """The unmeasured neighbours of the best measured points that the model predicts highest."""
        leaders = sorted(objective.scores, key=objective.scores.__getitem__, reverse=True)[:LEADERS]
        near = list(dict.fromkeys(n for p in leaders for n in space.neighbours(p)
                                  if objective.score(n) is None and n in index))
        if not near:
            return []
        mean, _ = model.predict(features[[index[p] for p in near]])
        return [near[i] for i in np.argsort(-mean)[:LOCAL]]
