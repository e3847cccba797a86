"""``SimulatedEvaluator``: measurements answered from the records of a finished checkpoint, as Kernel
Tuner's simulation mode answers from its cache, so that searches can be replayed at no device time (to
compare strategies and budgets on real rates: ``tuning.replay``)."""

from __future__ import annotations

import math

from ...codelets.registry import Params
from ...errors import TuningError
from ..checkpoint import Checkpoint
from ..records import Record, config_key


class SimulatedEvaluator:
    """An ``Evaluator`` whose every measurement is the record ``checkpoint`` holds for the configuration;
    ``runs`` is the timed runs of a full measurement there (the tuner's 5). A configuration the checkpoint
    does not hold raises ``TuningError``: replays search spaces restricted to what was measured."""

    def __init__(self, checkpoint: Checkpoint, runs: int = 5) -> None:
        self.checkpoint, self.runs = checkpoint, runs
        self.best_seconds = math.inf

    def holds(self, params: Params) -> bool:
        """True when the checkpoint has a record of ``params`` to answer with."""
        return config_key(params) in self.checkpoint

    def prepare(self, params: Params) -> None:
        return None

    def evaluate(self, params: Params, plan: object = None, runs: int | None = None,
                 build_seconds: float = 0.0) -> Record:
        record = self.checkpoint.get(config_key(params))
        if record is None:
            raise TuningError(f"the checkpoint holds no record of {params.describe()}")
        return record

    def release(self) -> None:
        """Nothing to free."""
