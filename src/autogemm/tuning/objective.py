"""``Objective``: what a search maximises, the measured rate of a point, with everything around it.

It answers from the checkpoint what was measured before (so an interrupted run resumes without measuring
again), counts every answer against the budget, builds the next candidates on worker threads while the
device times the current one (on a CPU device, where compiling would disturb the timing, it builds a
batch first and then times it; on a GPU the threads hand the compiling to the worker processes of
``DeviceContext.building_in_processes``), records every outcome and reports it to a callback (the
progress bar)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from ..codelets.space import Point, SearchSpace
from ..runtime.opencl.build_pool import default_builders
from .budget import Budget, BudgetClock
from .checkpoint import Checkpoint
from .evaluation.interface import Evaluator, discard_plan
from .records import Outcome, Record, config_key


class BudgetSpent(Exception):
    """Raised inside a search when its budget is used up; the tuner catches it."""


class Objective:
    """Measured scores (GFLOP/s of correct kernels, else 0) of points of one ``SearchSpace``."""

    def __init__(self, space: SearchSpace, evaluator: Evaluator, checkpoint: Checkpoint | None,
                 budget: Budget, *, overlap: bool = True, workers: int | None = None,
                 on_record: Callable[[Objective, Record, bool], None] | None = None) -> None:
        self.space, self.evaluator, self.checkpoint = space, evaluator, checkpoint
        self.clock = BudgetClock(budget)
        self.overlap = overlap
        self.workers = workers or default_builders()
        self.on_record = on_record
        self.records: dict[Point, Record] = {}
        self.scores: dict[Point, float] = {}
        self.fresh = 0            # measured in this run
        self.reused = 0           # answered from the checkpoint
        self.failures = 0
        self.best: tuple[Point, Record] | None = None

    # ----- what searches call --------------------------------------------------------------------
    def measure(self, point: Point) -> float:
        return self.measure_many([point])[0]

    def measure_many(self, points: Sequence[Point], runs: int | None = None) -> list[float]:
        """Scores of ``points`` in order, measuring those not known yet (``runs`` timed runs each:
        fewer for a quick probe). Raises ``BudgetSpent`` when the budget runs out part-way; what was
        measured by then is kept."""
        runs = self.evaluator.runs if runs is None else runs
        todo: list[Point] = []
        for point in dict.fromkeys(points):
            if not self._known(point, runs):
                todo.append(point)
        for point, plan, build_seconds in self._prepared(todo, runs):
            if isinstance(plan, BudgetSpent):
                raise plan
            record = self.evaluator.evaluate(self.space.config(point), plan, runs, build_seconds)
            self._keep(point, record, fresh=True)
        return [self.scores.get(p, 0.0) for p in points]

    def score(self, point: Point) -> float | None:
        """The score of a point measured in this run, or None."""
        return self.scores.get(point)

    def complete(self, record: Record) -> bool:
        """True for a correct kernel timed in full (a one-run probe is not: it is only for ranking)."""
        return record.ok and record.runs >= self.evaluator.runs

    @property
    def best_point(self) -> Point | None:
        return self.best[0] if self.best else None

    @property
    def evaluations(self) -> int:
        return self.clock.evaluations

    # ----- bookkeeping ---------------------------------------------------------------------------
    def _known(self, point: Point, runs: int) -> bool:
        """True when ``point`` needs no new measurement (known here, or answered from the checkpoint)."""
        record = self.records.get(point)
        if record is not None and (not record.ok or record.runs >= runs):
            return True
        if self.checkpoint is None:
            return False
        stored = self.checkpoint.get(config_key(self.space.config(point)), min_runs=runs)
        if stored is None:
            return False
        # counted, but taken past the budget too: it costs nothing, and a run resumed on a busy host, whose
        # time ran out before it reached what the interrupted runs measured, would rank without it
        self.clock.evaluations += 1
        if stored.ok:
            self.evaluator.best_seconds = min(self.evaluator.best_seconds, stored.seconds)
        self._keep(point, stored, fresh=False)
        return True

    def _charge(self) -> None:
        """Count one evaluation, or raise ``BudgetSpent``; the first one always counts, so that a budget
        shorter than the first builds (many slow compiles in parallel) still leaves a measurement."""
        if self.clock.evaluations and self.clock.spent():
            raise BudgetSpent()
        self.clock.evaluations += 1

    def _keep(self, point: Point, record: Record, fresh: bool) -> None:
        self.records[point] = record
        self.scores[point] = record.score
        if fresh:
            self.fresh += 1
            if self.checkpoint is not None:
                self.checkpoint.add(record)
        else:
            self.reused += 1
        if record.outcome not in (Outcome.OK, Outcome.TOO_SLOW):
            self.failures += 1
        if self.complete(record) and (self.best is None or record.score > self.best[1].score):
            self.best = (point, record)
        if self.on_record:
            self.on_record(self, record, fresh)

    # ----- building ahead ------------------------------------------------------------------------
    def _prepare(self, point: Point) -> tuple[object, float]:
        started = time.perf_counter()
        try:
            plan: object = self.evaluator.prepare(self.space.config(point))
        except Exception as exc:   # noqa: BLE001 - the evaluator turns it into a record
            plan = exc
        return plan, time.perf_counter() - started

    def _prepared(self, points: list[Point], runs: int) -> Iterator[tuple[Point, object, float]]:
        """(point, plan or exception, build seconds) in order, building up to a window ahead; yields a
        ``BudgetSpent`` in place of a plan when the budget ends, after releasing what was built."""
        if not points:
            return
        window = 2 * self.workers if self.overlap else self.workers
        queue: deque[tuple[Point, Future]] = deque()
        pending = iter(points)
        with ThreadPoolExecutor(self.workers, thread_name_prefix="autogemm-build") as pool:
            def submit(count: int) -> None:
                for _ in range(count):
                    point = next(pending, None)
                    if point is None:
                        return
                    queue.append((point, pool.submit(self._prepare, point)))

            submit(window)
            try:
                while queue:
                    if not self.overlap:
                        for _, future in queue:
                            future.result()
                    point, future = queue.popleft()
                    plan, seconds = future.result()
                    try:
                        self._charge()
                    except BudgetSpent as spent:
                        discard_plan(plan)
                        yield point, spent, 0.0
                        return
                    yield point, plan, seconds
                    if self.overlap:
                        submit(1)
                    elif not queue:
                        submit(window)
            finally:
                for _, future in queue:
                    if not future.cancel():
                        discard_plan(future.result()[0])
