"""Replay every search strategy on a complete exhaustive checkpoint: the quality-versus-budget curve.

    python scripts/replay_strategies.py CHECKPOINT.jsonl [--budget 200] [--seeds 10] [--at 25,50,100,200]

The checkpoint must hold a measurement of every point of the space (an exhaustive run over it, as the
H100 runs of notes/2026-11-22-h100-exhaustive.md made). Each strategy then searches that space exactly as
`autogemm tune` would, from the same start point, but every measurement is answered from the checkpoint,
so the curves show the search alone, on real H100 rates, at no device time. The best after N
evaluations counts only fully timed correct kernels, as the tuner does. The space is built for the H100's
OpenCL facts (below), which decide its pruning."""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

import autogemm
from autogemm.blas import default_params
from autogemm.codelets.simt.check import register_cap
from autogemm.dtypes import DTYPES
from autogemm.tuning import Budget, Objective, Record
from autogemm.tuning.objective import BudgetSpent
from autogemm.tuning.records import config_key
from autogemm.tuning.simt_space import simt_space
from autogemm.tuning.strategies import STRATEGIES, get_strategy
from autogemm.tuning.tuner import start_point

#: What NVIDIA's OpenCL driver reports for the H100 80GB HBM3 (the facts the space is pruned by).
H100_FACTS = dict(vendor="NVIDIA Corporation", platform_name="NVIDIA CUDA", device_type="GPU",
                  name="NVIDIA H100 80GB HBM3", compute_units=132, local_mem_bytes=49152,
                  max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64), fp64=True,
                  image_support=True, image2d_max=(32768, 32768))


class ReplayEvaluator:
    """Answers each configuration with its stored record, as if it had just been measured."""

    runs = 5

    def __init__(self, records: dict[str, Record]) -> None:
        self.records = records
        self.best_seconds = float("inf")

    def prepare(self, params) -> None:
        return None

    def evaluate(self, params, plan=None, runs=None, build_seconds=0.0) -> Record:
        return self.records[config_key(params)]


def load(path: Path) -> tuple[dict, dict[str, Record]]:
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    records = {}
    for line in lines[1:]:
        record = Record.from_dict(json.loads(line))
        records[config_key(record.config)] = record
    return header, records


def curve(strategy: str, seed: int, space, records, start, budget: int) -> list[float]:
    """Best complete rate after each evaluation (GFLOP/s; 0 before the first)."""
    evaluator = ReplayEvaluator(records)
    best: list[float] = []

    def on_record(objective, record, fresh) -> None:
        best.append(objective.best[1].gflops if objective.best else 0.0)

    objective = Objective(space, evaluator, None, Budget(evaluations=budget), overlap=False, workers=1,
                          on_record=on_record)
    try:
        get_strategy(strategy, seed).search(space, objective, start)
    except BudgetSpent:
        pass
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--at", default="25,50,100,200")
    parser.add_argument("--cold", action="store_true",
                        help="start without the class default (as on a device with no good default)")
    args = parser.parse_args()
    marks = [int(x) for x in args.at.split(",")]
    header, records = load(args.checkpoint)
    dt = DTYPES[header["dtype"]]
    device = dataclasses.replace(autogemm.default_device(), **H100_FACTS)
    macs = {r.config.vector_width: r.config.mac for r in records.values()}
    caps = tuple(sorted({register_cap(r.config) for r in records.values()} - {None}, reverse=True))
    space = simt_space(device, dt, macs, register_caps=caps)
    missing = [p for p in space.points() if config_key(space.config(p)) not in records]
    if missing:
        sys.exit(f"{len(missing)} of {len(space)} points are not in the checkpoint: not an exhaustive one")
    best = max(r.gflops for r in records.values() if r.ok and r.runs >= ReplayEvaluator.runs)
    start = None if args.cold else start_point(space, default_params(device, dt))
    print(f"{header['dtype']}gemm {'x'.join(map(str, header['shape']))} on {header['device_name']}: "
          f"{len(space)} points, exhaustive best {best / 1e3:.2f} TFLOP/s; "
          f"{'cold start' if args.cold else 'starting from the class default'}; median (worst) of "
          f"{args.seeds} seeds, % of the exhaustive best")
    print("| strategy | " + " | ".join(f"{m} evals" for m in marks) + " |")
    print("| --- |" + " --- |" * len(marks))
    for name in STRATEGIES:
        runs = [curve(name, seed, space, records, start, max(marks)) for seed in range(args.seeds)]
        cells = []
        for mark in marks:
            at = [run[min(mark, len(run)) - 1] / best * 100 if run else 0.0 for run in runs]
            cells.append(f"{statistics.median(at):.1f} ({min(at):.1f})")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
