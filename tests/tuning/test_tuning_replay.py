"""Replaying searches on a finished checkpoint (``tune --replay``), the simulation evaluator behind it, and
the typed requests of the evaluation worker."""

from __future__ import annotations

import dataclasses
import gzip
import json

import pytest
from click.testing import CliRunner
from synthetic import rate

from autogemm.cli import main
from autogemm.codelets.registry import SpaceFacts
from autogemm.codelets.simt import SimtParams
from autogemm.codelets.simt.space import space as simt_space
from autogemm.dtypes import DTYPES
from autogemm.errors import ArgumentError, ConfigError, TuningError
from autogemm.runtime import Device
from autogemm.tuning import STRATEGIES, Outcome, Record
from autogemm.tuning.checkpoint import Checkpoint
from autogemm.tuning.evaluation import SimulatedEvaluator
from autogemm.tuning.evaluation.requests import (
    BenchmarkFma,
    Discard,
    Evaluate,
    EvaluatorSpec,
    MakeEvaluator,
    Prepare,
    Start,
    Verify,
    decode,
    encode,
)
from autogemm.tuning.replay import replay

HELD = 48


@pytest.fixture
def measured(device, tmp_path) -> Checkpoint:
    """A checkpoint of this device holding the first ``HELD`` points of its SGEMM space, with synthetic
    rates (one of them wrong, one a one-run probe)."""
    space = simt_space(SpaceFacts(device, DTYPES["s"]))
    checkpoint = Checkpoint.for_problem(device, DTYPES["s"], (256, 256, 256), directory=tmp_path)
    for i, point in enumerate(space.points()[:HELD]):
        config = space.config(point)
        if i == 5:
            record = Record(config, Outcome.WRONG, message="relative error 1e-1")
        else:
            record = Record(config, Outcome.OK, rate(config), 1e-3, 1e-7, runs=1 if i == 7 else 5)
        checkpoint.add(record)
    return Checkpoint.read(checkpoint.path)


def test_the_simulated_evaluator_answers_with_the_checkpoints_records(measured):
    evaluator = SimulatedEvaluator(measured)
    record = next(iter(measured.records.values()))
    assert evaluator.holds(record.config) and evaluator.evaluate(record.config) == record
    absent = SimtParams(tile_rows=16, tile_cols=16)
    assert not evaluator.holds(absent)
    with pytest.raises(TuningError, match="no record"):
        evaluator.evaluate(absent)


def test_a_replay_searches_only_what_was_measured_and_finds_its_best(measured):
    found = replay(measured, list(STRATEGIES), evaluations=HELD, seeds=3)
    assert found.held == HELD and found.points > HELD
    complete = [r.gflops for r in measured.records.values() if r.ok and r.runs >= 5]
    assert found.best_gflops == max(complete)
    for name, curves in found.curves.items():
        assert len(curves) == 3
        for curve in curves:
            assert curve == sorted(curve) and 0 < len(curve) <= HELD      # the best so far never falls
            assert max(curve) <= found.best_gflops
        median, worst = found.quality(name, HELD)
        assert 0 < worst <= median <= 100
    assert found.quality("exhaustive", HELD) == (100.0, 100.0)       # every point measured: the best found
    cold = replay(measured, ["random"], evaluations=4, seeds=2, cold=True)
    assert cold.held == HELD and all(len(curve) == 4 for curve in cold.curves["random"])


def test_a_compressed_checkpoint_replays_the_same(measured, tmp_path):
    packed = tmp_path / "packed.jsonl.gz"
    packed.write_bytes(gzip.compress(measured.path.read_bytes()))
    again = Checkpoint.read(packed)
    assert again.records == measured.records
    assert replay(again, ["phased"], 20, seeds=1).curves == replay(measured, ["phased"], 20, seeds=1).curves
    assert not list(tmp_path.glob("packed*.lock"))            # read only: no lock file left beside it
    with pytest.raises(TuningError, match="read only"):
        again.add(next(iter(again.records.values())))


def test_a_checkpoint_without_device_facts_cannot_be_replayed(measured, tmp_path):
    lines = measured.path.read_text().splitlines()
    header = json.loads(lines[0])
    del header["device_facts"]
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    with pytest.raises(TuningError, match="lacks the device's facts"):
        replay(Checkpoint.read(old), ["random"], 10)
    (tmp_path / "not.jsonl").write_text("hello\n")
    with pytest.raises(TuningError, match="not an autogemm checkpoint"):
        Checkpoint.read(tmp_path / "not.jsonl")


def test_an_old_checkpoint_without_facts_still_resumes(device, tmp_path):
    """The facts ride along in the header: a checkpoint written before them is the same problem's."""
    made = Checkpoint.for_problem(device, DTYPES["s"], (64, 64, 64), directory=tmp_path)
    made.add(Record(SimtParams(), Outcome.OK, 5.0, 1e-3, runs=5))
    lines = made.path.read_text().splitlines()
    header = json.loads(lines[0])
    del header["device_facts"]
    made.path.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    assert len(Checkpoint.for_problem(device, DTYPES["s"], (64, 64, 64), directory=tmp_path)) == 1


def test_a_batchs_checkpoint_is_its_own(device, tmp_path):
    """The same shape measured one at a time and in a strided batch are two problems: two files, and a
    header naming the batch."""
    single = Checkpoint.for_problem(device, DTYPES["s"], (32, 32, 32), directory=tmp_path)
    batched = Checkpoint.for_problem(device, DTYPES["s"], (32, 32, 32), directory=tmp_path, batch=2048)
    batched.add(Record(SimtParams(), Outcome.OK, 5.0, 1e-3, runs=5))
    assert single.path != batched.path and batched.path.name.endswith("-32x32x32-b2048.jsonl")
    assert json.loads(batched.path.read_text().splitlines()[0])["batch"] == 2048
    assert len(Checkpoint.for_problem(device, DTYPES["s"], (32, 32, 32), directory=tmp_path)) == 0
    assert len(Checkpoint.for_problem(device, DTYPES["s"], (32, 32, 32), directory=tmp_path, batch=2048)) == 1


def test_device_facts_round_trip_and_are_validated(device):
    copy = Device.from_facts(json.loads(json.dumps(device.facts())))
    assert copy.fingerprint == device.fingerprint and copy.cl_device is None
    with pytest.raises(ArgumentError, match="fields"):
        Device.from_facts({"name": "x"})
    with pytest.raises(ArgumentError, match="compute_units"):
        Device.from_facts({**device.facts(), "compute_units": "many"})
    with pytest.raises(ArgumentError, match="fp64"):
        Device.from_facts({**device.facts(), "fp64": 1})


def test_tune_replay_prints_the_quality_of_each_strategy(measured):
    runner = CliRunner()
    out = runner.invoke(main, ["tune", "--replay", str(measured.path), "--budget", "16", "--seeds", "2"])
    assert out.exit_code == 0, out.output
    assert f"{HELD} of" in out.output and "16 evals" in out.output
    assert all(name in out.output for name in STRATEGIES)
    out = runner.invoke(main, ["tune", "--replay", str(measured.path), "--budget", "16", "--strategy", "phased"])
    assert out.exit_code == 0 and "phased" in out.output and "exhaustive" not in out.output
    out = runner.invoke(main, ["tune", "--replay", str(measured.path), "--budget", "5m"])
    assert out.exit_code == 2 and "counts evaluations" in out.output


def test_requests_cross_the_pipe_as_json_and_come_back_equal():
    config = SimtParams(tile_rows=8)
    spec = EvaluatorSpec.gemm(DTYPES["d"], (64, 32, 16), full=True)
    requests = [Start("0:0", "abc", ("faulty_family",), 3, 0), MakeEvaluator(dataclasses.replace(spec, seed=7)),
                Prepare(4, config), Discard(4), Evaluate(4, config, 5, 0.25), BenchmarkFma(("s", "d"), (1, 2)),
                Verify(config, "d")]
    for request in requests:
        message = json.loads(json.dumps(encode(request)))
        assert decode(message) == request
    assert EvaluatorSpec.gemv(DTYPES["s"], (8, 4), "T").routine == "gemv"


def test_a_request_that_is_none_or_carries_a_bad_configuration_is_refused():
    with pytest.raises(ArgumentError, match="not an evaluation request"):
        decode({"request": "format disk"})
    message = encode(Prepare(1, SimtParams()))
    message["config"]["build_options"] = ["-DX=system"]
    with pytest.raises(ConfigError, match="build option"):
        decode(message)


def test_a_gemv_checkpoint_replays_in_its_layouts_space(device, tmp_path):
    from autogemm.codelets.gemv.space import space as gemv_space

    space = gemv_space(SpaceFacts(device, DTYPES["d"], layout="T"))
    checkpoint = Checkpoint.for_problem(device, DTYPES["d"], (512, 512, 1), directory=tmp_path, routine="gemv",
                                        layout="T")
    for i, point in enumerate(space.points()[:30]):
        config = space.config(point)
        checkpoint.add(Record(config, Outcome.OK, 10.0 + (i * 7) % 13, 1e-3, 1e-12, runs=5))
    read = Checkpoint.read(checkpoint.path)
    assert read.problem == ("gemv", "T") and "gemv-t-" in read.path.name
    found = replay(read, ["random", "exhaustive"], evaluations=30, seeds=2)
    assert found.held == 30 and found.description.startswith("dgemv T 512x512x1")
    assert found.quality("exhaustive", 30) == (100.0, 100.0)
