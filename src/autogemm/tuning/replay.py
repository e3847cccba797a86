"""``replay``: every search strategy run again on a finished checkpoint, at no device time: the quality of
the search against its budget (``autogemm tune --replay``).

The spaces are those the tuner searches for the checkpoint's dtype and routine on the device its header
describes (its facts, written there when it was made), restricted to the configurations the checkpoint
holds (an exhaustive run holds all of them). Each strategy then searches them exactly as ``tune`` would,
from the same start point and with the families' shares of the budget, but every measurement is
answered from the checkpoint (``SimulatedEvaluator``), so the curves show the search alone, on the rates
that device measured. The best after N evaluations counts only fully timed correct kernels, as the
tuner does."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..blas import default_params
from ..blas.gemv import DEFAULTS as GEMV_DEFAULTS
from ..codelets.registry import GEMV, SpaceFacts
from ..dtypes import get_dtype
from ..errors import AutogemmError, TuningError
from ..runtime.opencl.device import Device
from .budget import Budget
from .checkpoint import Checkpoint
from .evaluation import SimulatedEvaluator
from .objective import Objective
from .records import Record
from .searching import search, start_point
from .tuner import searched_spaces


@dataclass(frozen=True)
class Replay:
    """The outcome of replaying strategies on one checkpoint: its best full rate, how many points the
    searched spaces have and how many of them it holds, and per strategy one curve per seed (the best
    full rate after each evaluation; 0 before the first)."""

    description: str
    best_gflops: float
    points: int
    held: int
    curves: dict[str, list[list[float]]]

    def quality(self, strategy: str, evaluations: int) -> tuple[float, float]:
        """(median, worst) over the seeds of the best after ``evaluations``, in % of the best rate."""
        at = [(curve[min(evaluations, len(curve)) - 1] if curve else 0.0) / self.best_gflops * 100
              for curve in self.curves[strategy]]
        return statistics.median(at), min(at)


def replay(checkpoint: Checkpoint, strategies: Sequence[str], evaluations: int, seeds: int = 10,
           cold: bool = False) -> Replay:
    """Run each of ``strategies`` with ``seeds`` seeds and a budget of ``evaluations`` on ``checkpoint``;
    ``cold`` starts without the device class's default configuration (as on a device with no good
    default)."""
    header = checkpoint.header
    try:
        device = Device.from_facts(header.get("device_facts"))
    except AutogemmError as exc:
        raise TuningError(f"{checkpoint.path} cannot be replayed: its header lacks the device's facts "
                          f"(checkpoints made before autogemm wrote them): {exc}") from None
    dt = get_dtype(header["dtype"])
    routine, layout = checkpoint.problem
    records = list(checkpoint.records.values())
    evaluator = SimulatedEvaluator(checkpoint)
    macs = {r.config.vector_width: r.config.mac for r in records if hasattr(r.config, "mac")}
    shapes = tuple(dict.fromkeys(r.config.shape for r in records if r.config.family == "nvidia_mma"))
    gemv = routine == GEMV
    facts = SpaceFacts(device, dt, macs, {dt.mma_operand: shapes} if dt.mma_operand else {},
                       layout if gemv else None, max(r.config.vectors for r in records) if gemv else 1)
    default = GEMV_DEFAULTS[layout] if gemv else default_params(device, dt)
    full = searched_spaces(facts, routine, default)
    held = [space.restricted(evaluator.holds, "not in the checkpoint") for space, _ in full]
    spaces = [(space, None if cold else start_point(space, default)) for space in held if len(space)]
    if not spaces:
        raise TuningError(f"{checkpoint.path} holds no configuration of the spaces {device.name} searches")
    complete = [r.gflops for r in records if r.ok and r.runs >= evaluator.runs]
    if not complete:
        raise TuningError(f"{checkpoint.path} holds no fully timed correct kernel")
    curves = {name: [_curve(spaces, evaluator, evaluations, name, seed) for seed in range(seeds)]
              for name in strategies}
    shape = "x".join(map(str, header["shape"]))
    problem = f"{dt.letter}gemv {layout}" if gemv else dt.routine + (f" {layout}" if layout else "")
    description = f"{problem} {shape} on {header['device_name']}"
    return Replay(description, max(complete), sum(len(space) for space, _ in full),
                  sum(len(space) for space, _ in spaces), curves)


def _curve(spaces: list, evaluator: SimulatedEvaluator, evaluations: int, strategy: str, seed: int) -> list[float]:
    best: list[float] = []

    def on_record(objective: Objective, record: Record, fresh: bool) -> None:
        done = record.gflops if objective.complete(record) else 0.0
        best.append(max(best[-1] if best else 0.0, done))

    search(spaces, evaluator, None, Budget(evaluations=evaluations), strategy, seed, overlap=False, workers=1,
           on_record=on_record)
    return best
