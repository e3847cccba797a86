"""Searching a size class's spaces: each family's in turn, from a start point and the configurations
known to be good, under the family's share of the budget (``search``), and finding a configuration's
point in a space up to what a space sets itself (the multiply-add form, build options)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..codelets.registry import Params, family_named
from ..codelets.space import Point, SearchSpace
from .budget import Budget
from .checkpoint import Checkpoint
from .evaluation import Evaluator
from .objective import Objective
from .records import Record
from .strategies import get_strategy


def _any_mac(config: Params) -> Params:
    """``config`` up to its multiply-add form (which a space sets from the run's FMA benchmark)."""
    return replace(config, mac="fma") if hasattr(config, "mac") else config


def _any_mac_or_options(config: Params) -> Params:
    """``config`` up to its multiply-add form and build options (which a space sets itself)."""
    plain = _any_mac(config)
    return replace(plain, build_options=()) if hasattr(plain, "build_options") else plain


def known_points(space: SearchSpace, configs: list[Params]) -> list[Point]:
    """The points of ``space`` whose configurations are among ``configs`` up to the multiply-add form, in
    the order of ``configs``."""
    index = space.index(_any_mac)
    found = (index.get(_any_mac(c)) for c in configs if c.family == space.family)
    return list(dict.fromkeys(p for p in found if p is not None))


def start_point(space: SearchSpace, params: Params) -> Point | None:
    """The point of ``space`` whose configuration is ``params`` up to the multiply-add form and build
    options, to start local searches from; None when it is not in it (or is of another family)."""
    if params.family != space.family:
        return None
    return space.index(_any_mac_or_options).get(_any_mac_or_options(params))


def search(spaces: list[tuple[SearchSpace, Point | None]], evaluator: Evaluator, checkpoint: Checkpoint | None,
           budget: Budget, strategy: str, seed: int, known: list[Params] = (), *, overlap: bool,
           workers: int | None = None, on_record: Callable[[Objective, Record, bool], None] | None = None,
           on_start: Callable[[SearchSpace, Objective], None] | None = None) -> list[Objective]:
    """Search each family's space in turn, from its start point, with ``strategy`` under its family's
    share of ``budget`` (by the families' weights), measuring through ``evaluator`` into ``checkpoint``;
    the ``known`` configurations of each family first, building ``workers`` candidates at once (see
    ``Objective``). The objectives, one per space."""
    weights = [family_named(space.family).weight for space, _ in spaces]
    objectives = []
    for (space, start), weight in zip(spaces, weights):
        objective = Objective(space, evaluator, checkpoint, budget.share(weight / sum(weights)), overlap=overlap,
                              workers=workers, on_record=on_record)
        objectives.append(objective)
        if on_start is not None:
            on_start(space, objective)
        get_strategy(strategy, seed).run(space, objective, start, known_points(space, list(known)))
    return objectives
