"""Search strategies behind one interface (``Strategy.search``), by name."""

from __future__ import annotations

from ...errors import ArgumentError
from .base import Strategy
from .exhaustive import Exhaustive, RandomSearch
from .model import ModelGuided
from .phased import Phased, exponential_stride_search
from .rank_refine import RankRefine

STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls for cls in (ModelGuided, Phased, RankRefine, RandomSearch, Exhaustive)
}
DEFAULT_STRATEGY = "model"


def get_strategy(name: str, seed: int = 0) -> Strategy:
    try:
        return STRATEGIES[name](seed=seed)
    except KeyError:
        raise ArgumentError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}") from None


__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "Strategy", "get_strategy", "exponential_stride_search",
           "Exhaustive", "ModelGuided", "Phased", "RandomSearch", "RankRefine"]
