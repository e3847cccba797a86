"""``Budget``: how much a search may spend, in evaluations, in wall time, or both."""

from __future__ import annotations

import math
import re
import time
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
