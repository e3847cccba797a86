"""``Evaluator``: what a search's objective measures configurations through, whatever does the measuring.

Four kinds implement it: ``GemmEvaluator`` and ``GemvEvaluator`` build, check and time candidates on a
device in this process; ``IsolatedEvaluator`` has one of them do so in a worker process, so that a
candidate that crashes or hangs costs that process only; ``SimulatedEvaluator`` answers from the records
of a finished checkpoint, to replay searches at no device time."""

from __future__ import annotations

from typing import Protocol

from ...codelets.registry import Params
from ..records import Record


class Evaluator(Protocol):
    """Measures configurations of one routine on one problem; every outcome is a ``Record``, never an
    exception.

    ``runs`` is how many timed runs make a full measurement (a record with fewer is a probe, for ranking
    only). ``best_seconds`` is the fastest full measurement so far: a candidate far slower than it is
    cut short; the objective lowers it with what a checkpoint answers."""

    runs: int
    best_seconds: float

    def prepare(self, params: Params) -> object:
        """Start building ``params``'s plan ahead (called from worker threads while the device times
        another candidate); what it returns, or the exception it raised, is handed to ``evaluate``."""
        ...

    def evaluate(self, params: Params, plan: object = None, runs: int | None = None,
                 build_seconds: float = 0.0) -> Record:
        """Measure ``params`` (with ``runs`` timed runs; default ``self.runs``) using ``plan`` where
        ``prepare`` made one."""
        ...

    def release(self) -> None:
        """Free what the evaluator holds (device memory, operands)."""
        ...


def discard_plan(plan: object) -> None:
    """Free a plan built ahead and not measured (plans on a device hold its memory)."""
    release = getattr(plan, "release", None)
    if release is not None:
        release()
