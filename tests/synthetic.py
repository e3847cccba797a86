"""A synthetic tuning problem: a space shaped like the codelet space, a rate with a known best point, and
an evaluator that returns records instantly (optionally noisy for one-run probes, optionally failing)."""

from __future__ import annotations

import math

from autogemm.codelets.simt import SimtParams
from autogemm.codelets.space import Knob, SearchSpace
from autogemm.tuning import Outcome, Record

KNOBS = [
    Knob("layout", ("TN", "NN", "NT")),
    Knob("assignment", ("offset", "consecutive")),
    Knob("work_group", ((8, 8), (8, 16), (16, 8), (16, 16))),
    Knob("tile", tuple((r, c) for r in (1, 2, 4, 8) for c in (1, 2, 4, 8))),
    Knob("tile_k", (1, 2, 4, 8, 16), ordered=True),
]


def make(values: dict) -> SimtParams:
    (wr, wc), (tr, tc) = values["work_group"], values["tile"]
    return SimtParams(layout=values["layout"], assignment=values["assignment"], wg_rows=wr, wg_cols=wc,
                      tile_rows=tr, tile_cols=tc, tile_k=values["tile_k"], vector_width=1)


def synthetic_space() -> SearchSpace:
    """1,920 points; tiles of 1x8 and 8x1 are invalid (to exercise pruning)."""
    return SearchSpace(KNOBS, make, lambda p: "thin" if {p.tile_rows, p.tile_cols} == {1, 8} else None,
                       family=SimtParams.family)


def rate(p: SimtParams) -> float:
    """GFLOP/s with one best point: TN offset, 16x8 work-group, 4x8 tile, tile_k 8; the tile and the
    work-group interact (the block size matters), and tile_k is unimodal."""
    codelet = {("TN", "offset"): 1.0, ("TN", "consecutive"): 0.8, ("NN", "offset"): 0.7,
               ("NN", "consecutive"): 0.6, ("NT", "offset"): 0.5, ("NT", "consecutive"): 0.55}
    block = math.log2(p.wg_rows * p.tile_rows) + math.log2(p.wg_cols * p.tile_cols)
    registers = p.tile_rows * p.tile_cols
    tile = math.exp(-((block - 12) ** 2) / 4) * (1.0 if registers <= 32 else 0.6) * (1 + registers / 64)
    shape = (1.0 if p.wg_rows >= p.wg_cols else 0.93) * (1.0 if p.tile_cols >= p.tile_rows else 0.95)
    k = math.exp(-((math.log2(p.tile_k) - 3) ** 2) / 3)
    return 1000.0 * codelet[(p.layout, p.assignment)] * tile * shape * k


class SyntheticEvaluator:
    """Stands in for ``Evaluator``: rates from ``rate``, noise of +-``noise`` on one-run probes, and
    ``KeyboardInterrupt`` at call number ``interrupt_at`` (as if the run were stopped there)."""

    runs = 5

    def __init__(self, noise: float = 0.0, interrupt_at: int | None = None, seed: int = 0) -> None:
        import random
        self.rng = random.Random(seed)
        self.noise, self.interrupt_at = noise, interrupt_at
        self.calls = 0
        self.best_seconds = math.inf

    def prepare(self, params: SimtParams) -> None:
        return None

    def evaluate(self, params: SimtParams, plan=None, runs=None, build_seconds=0.0) -> Record:
        self.calls += 1
        if self.interrupt_at is not None and self.calls == self.interrupt_at:
            raise KeyboardInterrupt
        runs = self.runs if runs is None else runs
        gflops = rate(params)
        if runs == 1 and self.noise:
            gflops *= 1 + self.rng.uniform(-self.noise, self.noise)
        return Record(params, Outcome.OK, gflops, 1.0 / gflops, 0.0, runs)


def true_best(space: SearchSpace):
    return max(space.points(), key=lambda p: rate(space.config(p)))
