"""``Record``: the outcome of measuring one configuration, as kept in checkpoints and reports."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from enum import Enum

from ..codelets.registry import Params, params_from_dict
from ..errors import ConfigError
from ..profiles.profile import MAX_GFLOPS


class Outcome(str, Enum):
    """What became of a candidate. Only ``OK`` carries a trustworthy rate."""

    OK = "ok"
    BUILD_ERROR = "build_error"   # the OpenCL compiler rejected it
    WRONG = "wrong"               # ran, but an output was unwritten or off by more than the bound
    CRASHED = "crashed"           # the runtime failed while it ran, or its process died
    TIMED_OUT = "timed_out"       # still running after the run limit: its process was stopped
    TOO_SLOW = "too_slow"         # its first run was slower than a multiple of the best: cut short


def config_key(config: Params) -> str:
    """A canonical text of a configuration, the identity records are kept under."""
    return json.dumps(config.to_dict(), sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Record:
    """One measurement: the configuration, its outcome and, when it ran, its rate and error."""

    config: Params
    outcome: Outcome
    gflops: float = 0.0            # median rate (OK) or the rate of the one run (TOO_SLOW)
    seconds: float = 0.0           # median device time of one product
    error: float | None = None     # ||C - C_ref|| / ||C_ref|| when it ran
    runs: int = 0                  # timed runs behind ``seconds`` (1 for a probe)
    build_seconds: float = 0.0
    message: str = ""

    @property
    def key(self) -> str:
        return config_key(self.config)

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK

    @property
    def score(self) -> float:
        """What searches maximise: the rate of a correct kernel, else 0."""
        return self.gflops if self.ok else 0.0

    def to_dict(self) -> dict:
        out = asdict(self)
        out["config"] = self.config.to_dict()
        out["outcome"] = self.outcome.value
        return out

    @classmethod
    def from_dict(cls, data: object) -> Record:
        """Validate a record read back from a checkpoint (a file anyone could have edited)."""
        if not isinstance(data, dict):
            raise ConfigError("a record must be a JSON object")
        expected = {"config", "outcome", "gflops", "seconds", "error", "runs", "build_seconds", "message"}
        if set(data) != expected:
            raise ConfigError(f"record fields {sorted(data)} are not {sorted(expected)}")
        try:
            outcome = Outcome(data["outcome"])
        except ValueError as exc:
            raise ConfigError(f"unknown outcome {data['outcome']!r}") from exc
        numbers = {name: data[name] for name in ("gflops", "seconds", "build_seconds")}
        if data["error"] is not None:
            numbers["error"] = data["error"]
        for name, value in numbers.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ConfigError(f"record field {name} must be a finite number >= 0, not {value!r}")
        if data["gflops"] > MAX_GFLOPS:             # a profile holds no more: it would be rejected when read
            raise ConfigError(f"record field gflops must be at most {MAX_GFLOPS:g}, not {data['gflops']!r}")
        runs = data["runs"]
        if isinstance(runs, bool) or not isinstance(runs, int) or not 0 <= runs <= 10_000:
            raise ConfigError(f"record field runs must be an integer in 0..10000, not {runs!r}")
        if not isinstance(data["message"], str):
            raise ConfigError("record field message must be a string")
        config = params_from_dict(data["config"], routine=None, backend=None)
        return cls(config, outcome, float(data["gflops"]), float(data["seconds"]),
                   None if data["error"] is None else float(data["error"]), runs,
                   float(data["build_seconds"]), data["message"][:4000])
