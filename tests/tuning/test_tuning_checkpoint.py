"""Checkpoints: every measurement is on disk as it is taken, and a run stopped midway (by Ctrl-C, or
killed outright) resumes without measuring anything again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic import SyntheticEvaluator, synthetic_space

from autogemm.dtypes import DTYPES
from autogemm.tuning import Budget, BudgetSpent, Objective, get_strategy
from autogemm.tuning.checkpoint import Checkpoint

HERE = Path(__file__).parent


def checkpoint_in(folder: Path, device) -> Checkpoint:
    return Checkpoint.for_problem(device, DTYPES["s"], (64, 64, 64), directory=folder)


def search(checkpoint: Checkpoint, evaluator: SyntheticEvaluator, evaluations: int,
           strategy: str = "phased") -> Objective:
    space = synthetic_space()
    objective = Objective(space, evaluator, checkpoint, Budget(evaluations=evaluations), overlap=False, workers=1)
    try:
        get_strategy(strategy, seed=5).search(space, objective, start=space.points()[0])
    except BudgetSpent:
        pass
    return objective


@pytest.mark.parametrize("strategy", ["phased", "model", "rank-refine"])
def test_an_interrupted_run_resumes_without_measuring_again(tmp_path, device, strategy):
    first = SyntheticEvaluator(interrupt_at=18)
    with pytest.raises(KeyboardInterrupt):
        search(checkpoint_in(tmp_path, device), first, 40, strategy)
    assert len(checkpoint_in(tmp_path, device)) == 17
    again = SyntheticEvaluator()
    resumed = search(checkpoint_in(tmp_path, device), again, 40, strategy)
    uninterrupted = search(None, SyntheticEvaluator(), 40, strategy)
    assert resumed.reused == 17 and again.calls == uninterrupted.fresh - 17
    assert resumed.best_point == uninterrupted.best_point


def test_a_resumed_run_out_of_time_still_takes_everything_the_checkpoint_answers(tmp_path, device):
    """What earlier runs measured costs nothing to take again: a resumed run whose time is already spent
    (a busy host) takes every point the checkpoint answers along its way, and stops at the first it
    would have to measure, so it ranks at least what they found."""
    search(checkpoint_in(tmp_path, device), SyntheticEvaluator(), 20)
    again = SyntheticEvaluator()
    space = synthetic_space()
    objective = Objective(space, again, checkpoint_in(tmp_path, device), Budget(seconds=1e-9), overlap=False,
                          workers=1)
    with pytest.raises(BudgetSpent):
        get_strategy("phased", seed=5).search(space, objective, start=space.points()[0])
    assert objective.reused == 20 and again.calls == 0


def test_a_killed_process_loses_nothing_it_measured(tmp_path, device):
    """The tuner process is killed with SIGKILL after 25 measurements; the next run finds all 25."""
    code = f"""
import os, signal, sys
sys.path[:0] = [{str(HERE)!r}, {str(HERE.parent)!r}]       # this module, and the helpers in tests/
import autogemm
from synthetic import SyntheticEvaluator
from test_tuning_checkpoint import checkpoint_in, search
class Killed(SyntheticEvaluator):
    def evaluate(self, *args, **kwargs):
        if self.calls == 25:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().evaluate(*args, **kwargs)
search(checkpoint_in(__import__('pathlib').Path({str(tmp_path)!r}), autogemm.default_device()), Killed(), 60)
"""
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == -9
    again = SyntheticEvaluator()
    resumed = search(checkpoint_in(tmp_path, device), again, 60)
    assert resumed.reused == 25 and again.calls == 35


def test_a_torn_last_line_and_foreign_lines_are_skipped(tmp_path, device):
    search(checkpoint_in(tmp_path, device), SyntheticEvaluator(), 10)
    path = checkpoint_in(tmp_path, device).path
    lines = path.read_text().splitlines()
    forged = json.loads(lines[2])
    forged["config"]["build_options"] = ["-DX=1"]
    path.write_text("\n".join(lines[:2] + [json.dumps(forged)] + lines[3:]) + "\n" + lines[4][:37])
    reread = checkpoint_in(tmp_path, device)
    assert len(reread) == 9 and reread.skipped == 2


def test_a_checkpoint_of_another_problem_is_not_used(tmp_path, device):
    search(checkpoint_in(tmp_path, device), SyntheticEvaluator(), 10)
    path = checkpoint_in(tmp_path, device).path
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["device"] = "0" * 16
    path.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    assert len(checkpoint_in(tmp_path, device)) == 0
    evaluator = SyntheticEvaluator()
    search(checkpoint_in(tmp_path, device), evaluator, 10)
    assert evaluator.calls == 10
    assert len(checkpoint_in(tmp_path, device)) == 10


def test_a_resumed_run_keeps_the_multiply_add_forms_it_measured(ctx, monkeypatch, tmp_path):
    """The FMA benchmark's results are kept beside the checkpoints: a resumed run tunes the same space
    (the forms are part of every configuration), ``fresh`` measures again, a forged file is ignored."""
    from autogemm.tuning import fma

    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    calls = []

    def measure(reals, widths):
        calls.append((reals, widths))
        return fma.benchmark(ctx, reals, widths, runs=1)

    first = fma.measured(ctx.device, measure, ("s",), (1, 2))
    assert calls == [(("s",), (1,)), (("s",), (2,))]                       # a width at a time
    assert fma.measured(ctx.device, measure, ("s",), (1, 2)) == first and len(calls) == 2
    assert fma.measured(ctx.device, measure, ("s",), (2,)) == first[1:] and len(calls) == 2
    fma.measured(ctx.device, measure, ("s",), (1, 2), fresh=True)
    assert len(calls) == 4
    path = tmp_path / "checkpoints" / f"{ctx.device.fingerprint}-fma.json"
    forged = json.loads(path.read_text())
    forged[0]["gflops"]["fma"] = "fast"
    path.write_text(json.dumps(forged))
    fma.measured(ctx.device, measure, ("s",), (1, 2))
    assert len(calls) == 6 and json.loads(path.read_text())[0]["gflops"]["fma"] != "fast"


def test_a_width_whose_benchmark_loses_its_process_is_left_out(ctx, monkeypatch, tmp_path):
    """PoCL 3.0 crashes running double8 kernels it builds afresh: that width keeps fma(), the others are
    measured; a benchmark lost at every width ends the run with the reason."""
    from autogemm.errors import TuningError
    from autogemm.tuning import fma

    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))

    def measure(reals, widths):
        if widths == (2,):
            raise TuningError("the FMA benchmark lost its process")
        return fma.benchmark(ctx, reals, widths, runs=1)

    results = fma.measured(ctx.device, measure, ("s",), (1, 2, 4))
    assert [r.vector_width for r in results] == [1, 4] and "s2" not in fma.mac_table(results)
    with pytest.raises(TuningError, match="every vector width"):
        fma.measured(ctx.device, measure, ("s",), (2,), fresh=True)


def test_a_line_of_invalid_utf8_is_skipped_and_the_run_resumes(tmp_path, device):
    """Issue 57 D3: a damaged checkpoint line (bytes that are no UTF-8) is skipped like any invalid
    line; the run resumes on the others instead of ending in a UnicodeDecodeError."""
    search(checkpoint_in(tmp_path, device), SyntheticEvaluator(), 10)
    path = checkpoint_in(tmp_path, device).path
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n".join(lines[:3] + [b'{"config": "\xff\xfe"}'] + lines[3:]) + b"\n")
    reread = checkpoint_in(tmp_path, device)
    assert len(reread) == 10 and reread.skipped == 1
    evaluator = SyntheticEvaluator()
    search(reread, evaluator, 12)
    assert evaluator.calls == 2                                  # the ten measured before stand
    assert Checkpoint.read(path).header["device"] == device.fingerprint


def test_a_rate_no_profile_can_hold_is_refused_where_the_record_is_read(tmp_path, device):
    """Issue 57 D4: a record claiming 1e308 GFLOP/s was taken as the best, and the profile saved with it
    was rejected by its own reader, every dtype's entries with it. A record is validated as the profile
    will be: past ``MAX_GFLOPS`` it is skipped; and no profile that would not read back is written."""
    from autogemm import SimtParams
    from autogemm.errors import ProfileError
    from autogemm.profiles import Profile, Ranked, SizeClassEntry, read, save
    from autogemm.profiles.profile import MAX_GFLOPS

    search(checkpoint_in(tmp_path, device), SyntheticEvaluator(), 10)
    path = checkpoint_in(tmp_path, device).path
    lines = path.read_text().splitlines()
    forged = json.loads(lines[1])
    forged["gflops"] = 1e308
    path.write_text("\n".join(lines + [json.dumps(forged)]) + "\n")
    reread = checkpoint_in(tmp_path, device)
    assert reread.skipped == 1 and max(r.gflops for r in reread.records.values()) <= MAX_GFLOPS

    kept = tmp_path / "mine.json"
    good = Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                   "2026-11-28T10:00:00+00:00", "60s")
    save(good, kept)
    bad = good.with_entry("s", SizeClassEntry("small", (64, 64, 64), (Ranked(SimtParams(), 1e308),), "model", 1, 1.0))
    with pytest.raises(ProfileError, match="gflops"):
        save(bad, kept)
    assert read(kept) == good


def test_a_link_at_a_checkpoints_path_is_never_written_through(tmp_path, device):
    """Issue 57 D7: a dangling link planted at a checkpoint's path was followed, and the tuner wrote a file
    outside the cache. A checkpoint is appended to as a regular file only."""
    from autogemm import SimtParams
    from autogemm.tuning.records import Outcome, Record

    checkpoint = checkpoint_in(tmp_path / "cache", device)
    outside = tmp_path / "outside.jsonl"
    checkpoint.path.parent.mkdir(parents=True, exist_ok=True)
    checkpoint.path.symlink_to(outside)
    record = Record(SimtParams(), Outcome.OK, 1.0, 1e-3, 0.0, 3, 0.1, "")
    with pytest.raises(OSError):
        checkpoint.add(record)
    assert not outside.exists()


def test_a_link_planted_at_the_lock_during_a_run_is_refused_when_the_lock_is_next_taken(tmp_path, device):
    """Issue 57 D8: a checkpoint keeps its lock for the whole run and takes it for every record; a link
    planted at the lock's path after the run began is refused there, never followed."""
    from autogemm import SimtParams
    from autogemm.tuning.records import Outcome, Record

    checkpoint = checkpoint_in(tmp_path / "cache", device)
    record = Record(SimtParams(), Outcome.OK, 1.0, 1e-3, 0.0, 3, 0.1, "")
    checkpoint.add(record)
    lock = Path(str(checkpoint.path) + ".lock")
    lock.unlink(missing_ok=True)
    outside = tmp_path / "outside"
    lock.symlink_to(outside)
    with pytest.raises(OSError, match="a link lies where autogemm keeps a lock"):
        checkpoint.add(record)
    assert not outside.exists()
