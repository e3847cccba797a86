"""``autogemm bench-calls`` (``bench.call_path``): host time per call, each result checked."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from autogemm.bench import call_path
from autogemm.cli import main
from autogemm.dtypes import DTYPES


def test_bench_calls_times_each_kind_of_operand_and_writes_json(tmp_path):
    path = tmp_path / "calls.json"
    result = CliRunner().invoke(main, ["bench-calls", "--sizes", "16,24", "--calls", "10", "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert "Host microseconds per call" in result.output
    data = json.loads(path.read_text())
    kinds = {(c["kind"], c["n"]) for c in data["cases"]}
    assert {("pyopencl", 16), ("numpy", 16), ("pyopencl", 24), ("numpy", 24)} <= kinds
    for case in data["cases"]:
        assert case["call_seconds"] > 0 and case["error"] < DTYPES[case["dtype"]].tolerance and case["calls"] == 10


def test_a_wrong_result_is_never_reported_as_a_timing(ctx, monkeypatch):
    monkeypatch.setattr(call_path, "gemm", lambda a, b, c, **options: c.fill(1.0))
    with pytest.raises(AssertionError, match="wrong result"):
        call_path.on_device_arrays(ctx, DTYPES["s"], 16, 10, np.random.default_rng(0))


def test_per_call_is_the_loop_over_its_calls():
    ticks, drained = [], []
    seconds = call_path.per_call(lambda: ticks.append(1), 50, lambda: drained.append(1))
    assert len(ticks) == 55 and len(drained) == 2 and 0 < seconds < 1e-3
