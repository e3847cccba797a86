"""``ExtraTrees``: a small ensemble of randomised regression trees (Geurts et al.), the surrogate model of
the model-guided search. It needs only numpy, fits a few hundred points in milliseconds, and its trees'
disagreement serves as the uncertainty of a prediction."""

from __future__ import annotations

import numpy as np


class _Tree:
    """One tree as flat arrays: split feature and threshold per node, children, leaf values."""

    def __init__(self, x: np.ndarray, y: np.ndarray, rng: np.random.Generator, min_leaf: int, max_depth: int,
                 tries: int) -> None:
        self.feature: list[int] = []
        self.threshold: list[float] = []
        self.left: list[int] = []
        self.right: list[int] = []
        self.value: list[float] = []
        self._grow(x, y, np.arange(len(y)), 0, rng, min_leaf, max_depth, tries)
        self.arrays = [np.asarray(a) for a in (self.feature, self.threshold, self.left, self.right, self.value)]

    def _node(self) -> int:
        for column in (self.feature, self.threshold, self.left, self.right, self.value):
            column.append(-1)
        return len(self.value) - 1

    def _grow(self, x, y, rows, depth, rng, min_leaf, max_depth, tries) -> int:
        node = self._node()
        self.value[node] = float(y[rows].mean())
        if len(rows) < 2 * min_leaf or depth >= max_depth or np.ptp(y[rows]) == 0:
            return node
        sub = x[rows]
        low, high = sub.min(axis=0), sub.max(axis=0)
        varying = np.flatnonzero(high > low)
        if varying.size == 0:
            return node
        features = rng.choice(varying, size=min(tries, varying.size), replace=False)
        cuts = rng.uniform(low[features], high[features])
        masks = sub[:, features] <= cuts                     # rows x tries: left side of each split
        target = y[rows][:, None]
        n_left = masks.sum(axis=0)
        n_right = len(rows) - n_left
        usable = (n_left >= min_leaf) & (n_right >= min_leaf)
        if not usable.any():
            return node
        sum_left = (masks * target).sum(axis=0)
        sum_all = target.sum()
        # within-side sum of squares, up to a constant: -(sum_left^2 / n_left + sum_right^2 / n_right)
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = -(sum_left**2 / n_left + (sum_all - sum_left) ** 2 / n_right)
        spread[~usable] = np.inf
        choice = int(np.argmin(spread))
        best = (spread[choice], features[choice], cuts[choice], masks[:, choice])
        _, feature, cut, mask = best
        self.feature[node], self.threshold[node] = int(feature), float(cut)
        self.left[node] = self._grow(x, y, rows[mask], depth + 1, rng, min_leaf, max_depth, tries)
        self.right[node] = self._grow(x, y, rows[~mask], depth + 1, rng, min_leaf, max_depth, tries)
        return node

    def predict(self, x: np.ndarray) -> np.ndarray:
        feature, threshold, left, right, value = self.arrays
        node = np.zeros(len(x), dtype=np.int64)
        while True:
            inner = feature[node] >= 0
            if not inner.any():
                return value[node]
            rows = np.flatnonzero(inner)
            f = feature[node[rows]]
            go_left = x[rows, f] <= threshold[node[rows]]
            node[rows] = np.where(go_left, left[node[rows]], right[node[rows]])


class ExtraTrees:
    """An ensemble of extremely randomised trees for regression."""

    def __init__(self, trees: int = 12, min_leaf: int = 3, max_depth: int = 12, seed: int = 0) -> None:
        self.trees, self.min_leaf, self.max_depth = trees, min_leaf, max_depth
        self.rng = np.random.default_rng(seed)
        self._fitted: list[_Tree] = []

    def fit(self, x: np.ndarray, y: np.ndarray) -> ExtraTrees:
        tries = max(1, int(np.sqrt(x.shape[1])) * 2)
        self._fitted = [_Tree(x, y, self.rng, self.min_leaf, self.max_depth, tries) for _ in range(self.trees)]
        return self

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of the trees' predictions per row."""
        each = np.stack([tree.predict(x) for tree in self._fitted])
        return each.mean(axis=0), each.std(axis=0)
