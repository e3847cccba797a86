"""``Budget``: how much a search may spend, in evaluations, in wall time, or both; ``Schedule``: the steps of
a tuning run sharing one."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Hashable
from dataclasses import dataclass

from ..errors import ArgumentError

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_TERM = re.compile(r"^(\d+(?:\.\d+)?)([smh]|e|evals?)?$")


@dataclass(frozen=True)
class Budget:
    """A limit on a search: ``evaluations`` (kernels measured) and/or ``seconds`` of wall time."""

    evaluations: int | None = None
    seconds: float | None = None

    @classmethod
    def parse(cls, text: str) -> Budget:
        """'10m', '90s', '1.5h' (wall time), '200' or '200e' (evaluations), or both: '10m,500'."""
        evaluations: int | None = None
        seconds: float | None = None
        for term in (t.strip().lower() for t in str(text).split(",")):
            match = _TERM.match(term)
            if not match:
                raise ArgumentError(f"budget {text!r}: expected terms like 10m, 90s, 1h or 200 (evaluations)")
            value, unit = float(match[1]), match[2]
            if unit in _UNITS:
                seconds = value * _UNITS[unit]
            else:
                if value != int(value):
                    raise ArgumentError(f"budget {text!r}: evaluations must be a whole number")
                evaluations = int(value)
        budget = cls(evaluations, seconds)
        if not budget.bounded or (evaluations == 0) or (seconds is not None and seconds <= 0):
            raise ArgumentError(f"budget {text!r} must be a positive time or number of evaluations")
        return budget

    @property
    def bounded(self) -> bool:
        return self.evaluations is not None or self.seconds is not None

    def share(self, fraction: float) -> Budget:
        """This budget scaled by ``fraction`` (at least one evaluation)."""
        # (the epsilon keeps a share that is whole on paper, 6 x 0.6 / 1.2, whole in floating point too)
        return Budget(None if self.evaluations is None else max(1, math.floor(self.evaluations * fraction + 1e-9)),
                      None if self.seconds is None else self.seconds * fraction)

    def describe(self) -> str:
        parts = []
        if self.seconds is not None:
            parts.append(f"{self.seconds / 60:g}m" if self.seconds >= 60 else f"{self.seconds:g}s")
        if self.evaluations is not None:
            parts.append(str(self.evaluations))
        return ",".join(parts) or "unbounded"


class BudgetClock:
    """Counts what a search has spent against its ``Budget``."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.started = time.monotonic()
        self.evaluations = 0

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def spent(self) -> bool:
        b = self.budget
        return ((b.evaluations is not None and self.evaluations >= b.evaluations)
                or (b.seconds is not None and self.elapsed >= b.seconds))

    def fraction(self) -> float:
        """How much of the budget is used, 0 to 1 (the larger of the two measures)."""
        b, parts = self.budget, [0.0]
        if b.evaluations:
            parts.append(self.evaluations / b.evaluations)
        if b.seconds:
            parts.append(self.elapsed / b.seconds)
        return min(1.0, max(parts))


class Schedule:
    """A tuning run's steps in order (size classes, exact shapes, predictors), each a kind and a weight,
    sharing one ``Budget``. Besides its search, every step costs time the search does not control: building
    its spaces, setting up its problem, verifying, confirming and split-timing its finalists. The schedule
    learns that overhead per kind as the run goes (the last measured; for a kind not seen yet, the mean of
    those seen) and keeps it aside for every step still to come, so each search gets its weight's part of
    what is left after them and the run ends within its time. Once the time is spent, the remaining steps
    are skipped (``spent``); evaluations are shared by weight alone."""

    def __init__(self, budget: Budget, steps: list[tuple[Hashable, float]], started: float | None = None) -> None:
        """``started``: when the run began (``time.monotonic``; default now), so what it did before its
        steps is paid from the budget too."""
        self.budget = budget
        self.started = time.monotonic() if started is None else started
        self._steps = list(steps)
        self._total_weight = sum(weight for _, weight in steps) or 1.0
        self._overheads: dict[Hashable, float] = {}
        self._began = self.started

    def overhead(self, kind: Hashable) -> float:
        """The seconds a step of ``kind`` is expected to take besides its search."""
        if kind in self._overheads:
            return self._overheads[kind]
        known = list(self._overheads.values())
        return sum(known) / len(known) if known else 0.0

    def spent(self) -> bool:
        """Whether the run's time is used up (never before its first step, nor for a budget of
        evaluations alone)."""
        return (bool(self._overheads) and self.budget.seconds is not None
                and time.monotonic() - self.started >= self.budget.seconds)

    def skip(self) -> None:
        """Drop the next step unrun."""
        self._steps.pop(0)

    def begin(self) -> tuple[Budget, float | None]:
        """Start the next step: the budget of its search, and the time (``time.monotonic``) by which the
        whole step should end (None for a budget without time). A search gets at least a second."""
        kind, weight = self._steps[0]
        self._began = now = time.monotonic()
        evaluations = self.budget.share(weight / self._total_weight).evaluations
        if self.budget.seconds is None:
            return Budget(evaluations, None), None
        kept = sum(self.overhead(k) for k, _ in self._steps)
        remaining = sum(w for _, w in self._steps) or 1.0
        seconds = max(1.0, (self.budget.seconds - (now - self.started) - kept) * weight / remaining)
        return Budget(evaluations, seconds), now + seconds + self.overhead(kind)

    def end(self, searched: float) -> None:
        """End the step begun last, whose search took ``searched`` seconds: what else it took is its
        kind's overhead from now on."""
        kind, _ = self._steps.pop(0)
        self._overheads[kind] = max(0.0, time.monotonic() - self._began - searched)
