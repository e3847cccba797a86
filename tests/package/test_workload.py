"""Tuning for a workload: a program's shapes recorded as it runs (``AUTOGEMM_RECORD``), the file read back
line by line as untrusted data, ``tune --shapes`` tuning exactly those shapes, and the profile's entries
for them used for that very problem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from click.testing import CliRunner

import autogemm
from autogemm import workload
from autogemm.blas import GemmProblem, Op
from autogemm.blas.gemv import GemvProblem
from autogemm.blas.plans import gemm_plan
from autogemm.blas.selection import choose_gemv_params, choose_params
from autogemm.cli import main
from autogemm.dtypes import DTYPES
from autogemm.errors import ArgumentError, ProfileError
from autogemm.profiles import Profile, profile_for
from autogemm.tuning import Budget, tune
from autogemm.tuning.scope import shape_classes, workload_work
from autogemm.workload import Recorder, ShapeRecord, read_workload

PROGRAM = """
import numpy as np, autogemm
a, b = np.ones((30, 20), np.float32), np.ones((20, 10), np.float32)
for _ in range(3):
    autogemm.gemm(a, b)
autogemm.gemm(a, np.ones((10, 20), np.float32), trans_b="T")
autogemm.matmul(a, np.ones(20, np.float32))
autogemm.gemv(a, np.ones(20, np.float32))
autogemm.gemm_batched(np.ones((4, 5, 6), np.float32), np.ones((4, 6, 7), np.float32))
"""


def test_a_program_run_twice_at_once_records_every_shape_with_its_count(tmp_path):
    path = tmp_path / "shapes.jsonl"
    env = dict(os.environ, AUTOGEMM_RECORD=str(path))
    runs = [subprocess.Popen([sys.executable, "-c", PROGRAM], env=env) for _ in range(2)]
    assert all(run.wait(timeout=300) == 0 for run in runs)
    records, skipped = read_workload(path)
    assert not skipped
    found = {r.describe(): r.count for r in records}
    assert found == {"sgemm NN 30x10x20": 6, "sgemm NT 30x10x20": 2, "sgemm NN 30x1x20": 2,
                     "sgemv N 30x20x1": 2,
                     "sgemm NN 5x7x6 x4": 2}
    lines = path.read_text().splitlines()
    assert all(json.loads(line).keys() == {"routine", "dtype", "layout", "m", "n", "k", "batch", "count"}
               for line in lines)


def test_threads_recording_at_once_lose_no_count(tmp_path):
    recorder = Recorder(tmp_path / "r.jsonl")

    def work(i: int) -> None:
        for _ in range(200):
            recorder.record("gemm", "d", "NT", 8 + i % 3, 9, 10)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recorder.flush()
    recorder.flush()                                    # nothing more to write
    records, _ = read_workload(tmp_path / "r.jsonl")
    assert sorted((r.m, r.count) for r in records) == [(8, 400), (9, 400), (10, 400)]


def test_a_broken_or_hostile_line_is_reported_and_skipped(tmp_path):
    good = {"routine": "gemm", "dtype": "s", "layout": "NT", "m": 4, "n": 5, "k": 6, "batch": 1, "count": 2}
    lines = [json.dumps(good), "64 32 16 TN", "  # a comment", "",
             json.dumps({**good, "m": -1}), json.dumps({**good, "layout": "NX"}), json.dumps({**good, "dtype": "q"}),
             json.dumps({**good, "extra": 1}), json.dumps({**good, "count": True}), json.dumps({**good, "k": 2**40}),
             json.dumps({**good, "routine": "gemv", "layout": "N", "k": 7}), '{"routine": "gemm"',
             "__import__('os').system('touch pwned')", "1 2", "[1, 2, 3]"]
    path = tmp_path / "w.txt"
    path.write_text("\n".join(lines))
    records, skipped = read_workload(path, ("s", "d"))
    assert [r.describe() for r in records] == ["sgemm NT 4x5x6", "sgemm TN 64x32x16", "dgemm TN 64x32x16"]
    assert len(skipped) == 11 and all(str(path) in s for s in skipped)
    assert not (tmp_path / "pwned").exists()
    path.write_text("nothing here\n")
    with pytest.raises(ArgumentError, match="holds no shape"):
        read_workload(path)


def test_a_recorder_that_cannot_write_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv(workload.RECORD_ENV, str(tmp_path))          # a directory is no file to append to
    with pytest.raises(ArgumentError, match="AUTOGEMM_RECORD"):
        workload._from_environment()


def test_a_recorder_whose_writes_fail_never_fails_a_product(tmp_path, monkeypatch):
    """Issue 57 D13: with ``AUTOGEMM_RECORD`` on a full disk every ``gemm`` raised ``OSError``. A write
    that fails stops the recording with one warning; the products go on, right."""
    import warnings

    recorder = Recorder(tmp_path / "shapes.jsonl")
    recorder.path = "/dev/full"                          # every write: ENOSPC, as on a full disk
    monkeypatch.setattr(workload, "RECORDER", recorder)
    rng = np.random.default_rng(13)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for m in (5, 6, 7):
            a, b = rng.random((m, 4)).astype(np.float32), rng.random((4, 3)).astype(np.float32)
            np.testing.assert_allclose(autogemm.gemm(a, b), a.astype(np.float64) @ b, rtol=1e-5)
        recorder.flush()
    assert [str(w.message) for w in caught if "AUTOGEMM_RECORD" in str(w.message)] == [
        "AUTOGEMM_RECORD: cannot write /dev/full (No space left on device); shapes are no longer recorded"]
    assert recorder.failed


def test_tuned_shapes_are_used_for_those_problems_alone(device, monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    shapes = [ShapeRecord("gemm", "s", "NT", 70, 45, 33), ShapeRecord("gemm", "s", "NN", 40, 24, 36),
              ShapeRecord("gemm", "s", "NN", 5, 7, 6, batch=4), ShapeRecord("gemv", "s", "N", 30, 20, 1),
              ShapeRecord("gemm", "s", "NT", 6, 450, 140)]
    profile = tune(device, budget=Budget(evaluations=8), shapes=shapes, top=2)
    # the GEMV as itself, the GEMM of 6 rows as the GEMV it runs as: B (450 x 140, as stored) times 6 vectors
    assert sorted((key, e.name, e.shape) for key, entries in profile.shapes.items() for e in entries) == [
        ("s", "N", (30, 20, 1)), ("s", "N", (450, 140, 6)), ("s", "NN", (40, 24, 36)), ("s", "NT", (70, 45, 33))]
    assert not profile.dtypes and not profile.gemv           # a workload run tunes nothing else
    stored = profile_for(device)
    best = stored.entry("s", "NT", "shapes", (70, 45, 33)).ranked[0].config
    exact = GemmProblem.dense(DTYPES["s"], 70, 45, 33, Op(), Op(transposed=True))
    chosen = choose_params(device, exact)
    assert chosen.params == best and "this shape" in chosen.source
    assert "this shape" not in choose_params(device, GemmProblem.dense(DTYPES["s"], 70, 45, 34)).source
    ctx = autogemm.context_for(device)
    assert gemm_plan(ctx, exact).params == best
    a, b = np.random.rand(70, 33).astype(np.float32), np.random.rand(45, 33).astype(np.float32)
    assert np.allclose(autogemm.gemm(a, b, trans_b="T", device=device), a @ b.T, rtol=1e-4)
    for rows, cols, vectors in ((30, 20, 1), (450, 140, 6)):
        gemv = GemvProblem(DTYPES["s"], rows, cols, Op(), cols, vectors=vectors, ldx=cols if vectors > 1 else 0)
        chosen = choose_gemv_params(device, gemv)
        config, source = chosen.params, chosen.source
        assert config == stored.entry("s", "N", "shapes", (rows, cols, vectors)).ranked[0].config and "N" in source
    a, b = np.random.rand(6, 140).astype(np.float32), np.random.rand(450, 140).astype(np.float32)
    assert np.allclose(autogemm.gemm(a, b, trans_b="T", device=device), a @ b.T, rtol=1e-4)


def test_a_forged_shape_entry_is_rejected_field_by_field(device):
    entry = {"class": "NT", "shape": [4, 5, 6], "strategy": "model", "evaluations": 1, "seconds": 1.0,
             "ranked": [{"gflops": 1.0, "config": autogemm.SimtParams().to_dict(), "split": 4}]}
    base = Profile(device.fingerprint, "d", "v", "1", "0.1.0", "2026-11-24T00:00:00+00:00", "1").to_dict()
    assert Profile.from_json(json.dumps({**base, "shapes": {"s": [entry]}})).shapes["s"][0].ranked[0].split == 4
    forged = [({**entry, "class": "large"}, "shapes"), ({**entry, "class": "NC"}, "shapes"),
              ({**entry, "ranked": [{**entry["ranked"][0], "split": -1}]}, "split"),
              ({**entry, "ranked": [{**entry["ranked"][0], "split": 65}]}, "split"),
              ({**entry, "ranked": [{**entry["ranked"][0], "cmd": "rm"}]}, "unexpected cmd"),
              ({**entry, "ranked": [{**entry["ranked"][0], "config": {"family": "gemv"}}]}, "unknown kernel family"),
              ({**entry, "class": "N"}, "expected one of gemv"), ({**entry, "class": 7}, "class")]
    for bad, words in forged:
        with pytest.raises(ProfileError, match=words):
            Profile.from_json(json.dumps({**base, "shapes": {"s": [bad]}}))
    with pytest.raises(ProfileError, match="repeat"):
        Profile.from_json(json.dumps({**base, "shapes": {"s": [entry, entry]}}))


def test_tune_shapes_from_the_command_line(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    path = tmp_path / "w.txt"
    path.write_text("48 40 24 NT\nnot a shape\n")
    out = CliRunner().invoke(main, ["tune", "--shapes", str(path), "--budget", "4", "--json", str(tmp_path / "t.json")])
    assert out.exit_code == 0, out.output
    assert "skipped" in out.output and "s NT 48x40x24" in out.output
    # a plain log at 80 columns: no line longer, the configuration on a line of its own by the table
    assert max(map(len, out.output.splitlines())) <= 80
    written = json.loads((tmp_path / "t.json").read_text())
    (record,) = written["tuned"]
    assert record["shape"] == [48, 40, 24] and record["gflops"] > 0 and written["not_tuned"] == []
    assert f"s NT 48x40x24: {record['config']}" in " ".join(out.output.split())
    assert any(line.startswith("s NT 48x40x24 ") and f" {record['gflops']:.1f} " in line   # a row, unwrapped
               for line in out.output.splitlines())
    out = CliRunner().invoke(main, ["profile", "show"])
    assert out.exit_code == 0 and "tune --shapes" in out.output and "48x40x24" in out.output
    assert max(map(len, out.output.splitlines())) <= 80
    # a second run starts from the first's profile, and compares the workload's plans before and after it
    out = CliRunner().invoke(main, ["tune", "--shapes", str(path), "--budget", "4", "--json", str(tmp_path / "t.json")])
    assert out.exit_code == 0, out.output
    said = " ".join(out.output.split())
    assert "runs slower than before this run" in said or "keep the plan they had before this run" in said
    assert isinstance(json.loads((tmp_path / "t.json").read_text())["kept_before"], list)
    assert max(map(len, out.output.splitlines())) <= 80
    out = CliRunner().invoke(main, ["tune", "--shapes", str(path), "--size-class", "large"])
    assert out.exit_code == 2 and "not both" in out.output


def test_an_exact_shape_that_leaves_units_idle_gets_its_k_split_measured(device, monkeypatch, tmp_path):
    from simt_default import CPU_SIMT

    from autogemm.blas import defaults
    from autogemm.blas.coverage import split_counts
    from autogemm.codelets.stream_k import STREAM_K

    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    problem = GemmProblem.dense(DTYPES["s"], 8, 8, 4096)
    one_block = autogemm.SimtParams(tile_k=4)
    # (slices summed in the kernel: 64 deep at least)
    assert split_counts(one_block, problem, 2) == [1, 2, 4, 8, 16, 32, 64, STREAM_K]
    assert split_counts(one_block, GemmProblem.dense(DTYPES["s"], 4096, 4096, 4096), 2) == []
    assert split_counts(one_block, GemmProblem.dense(DTYPES["s"], 8, 8, 100), 2) == [1, STREAM_K]   # too short to slice
    # a C of more than 16 columns and rows: a GEMM kernel's, not the multi-vector GEMV's; tuned from the
    # simt family's default on a CPU too (the cpu family's blocks of a few rows fill a small CPU's units)
    monkeypatch.setitem(defaults._CPU_WIDE, "s", CPU_SIMT)
    problem = GemmProblem.dense(DTYPES["s"], 20, 20, 4096)
    profile = tune(device, budget=Budget(evaluations=4), shapes=[ShapeRecord("gemm", "s", "NN", 20, 20, 4096)],
                   top=2)
    ranked = profile.shapes["s"][0].ranked
    # the finalists whose blocks leave units idle were timed with their splits (the best of all may be
    # one whose blocks fill the units: it has none)
    assert any(r.split is not None and r.split in split_counts(r.config, problem, device.compute_units)
               for r in ranked)
    best = ranked[0]
    plan = gemm_plan(autogemm.context_for(device), problem)
    assert plan.params == best.config and (best.split is None or plan.split == best.split)
    a, b = np.random.rand(20, 4096).astype(np.float32), np.random.rand(4096, 20).astype(np.float32)
    assert np.allclose(autogemm.gemm(a, b, device=device), a.astype(np.float64) @ b, rtol=1e-4)


def test_a_partial_tune_keeps_every_entry_of_a_bundled_profile(device, monkeypatch, tmp_path):
    """The profile a run saves in the user's cache replaces a bundled one for the device: the entries the
    run does not tune must come along (they were lost, and a device's other products fell back to the
    class defaults, after tuning a workload on the H100)."""
    from autogemm.profiles import Ranked, SizeClassEntry, store

    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    shipped = Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                      "2026-11-20T00:00:00+00:00", "1m", {"s1": "fma"},
                      {"s": (SizeClassEntry("large", (64, 64, 64), (Ranked(autogemm.SimtParams(), 9.0),), "model",
                                            1, 1.0),)})
    monkeypatch.setattr(store, "bundled", lambda: [("bundled/test.json", shipped)])
    store.forget()
    assert profile_for(device) is shipped
    tune(device, budget=Budget(evaluations=3), shapes=[ShapeRecord("gemm", "s", "NT", 40, 24, 36)], top=1)
    saved = profile_for(device)
    assert saved is not shipped and saved.entry("s", "large") == shipped.entry("s", "large")
    assert saved.entry("s", "NT", "shapes", (40, 24, 36)) is not None


def test_a_retuned_shape_keeps_the_profile_choice_timed_with_its_splits(device, monkeypatch, tmp_path):
    """The search times candidates with the plan's split alone: the profile's choice for the shape must
    be timed with each split too, or a retune can end below it (on the H100 a 128 x 1024 x 4096 product
    fell from 25 to 11 TFLOP/s)."""
    from autogemm.profiles import Ranked, SizeClassEntry, save

    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    # one block of 32 x 32 for C (the units idle: splits are worth timing), one element of K a step
    slow = autogemm.SimtParams("NN", "offset", 16, 16, 2, 2, 1, 1, False, False)
    before = SizeClassEntry("NN", (20, 20, 4096), (Ranked(slow, 0.5, 1),), "model", 1, 1.0)
    save(Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                 "2026-11-24T00:00:00+00:00", "1m", {}, shapes={"s": (before,)}))
    entry = tune(device, budget=Budget(evaluations=6), shapes=[ShapeRecord("gemm", "s", "NN", 20, 20, 4096)],
                 top=1).shapes["s"][0]
    kept = next(r for r in entry.ranked if r.config == slow)
    assert kept.split is not None and kept.gflops > 0


def test_a_workload_larger_than_the_budget_stops_when_the_time_is_spent(monkeypatch, tmp_path):
    """Each exact shape had a second at least and then the verification and split timing of its finalists
    on top: 66 shapes given 230 s ran past 350 s on the H100. Once the time is spent the rest are skipped,
    and said to be; the largest products come first, whatever the file's order."""
    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    path = tmp_path / "w.txt"
    path.write_text("".join(f"{m} 40 600 NT\n" for m in range(30, 38)))
    out = CliRunner().invoke(main, ["tune", "--shapes", str(path), "--budget", "2s"])
    assert out.exit_code == 0, out.output
    assert "30x40x600" in out.output.partition("a longer --budget would also tune")[2]
    assert "s NT 37x40x600" in out.output       # the largest is tuned, whatever the budget


def test_a_workload_is_tuned_in_the_order_of_its_shares_of_the_work(device):
    """The shapes of most multiply-adds over the workload first (count times a product's), each class
    once, GEMV's by the size of A: where the budget ends early the products where tuning pays are tuned."""
    records = [ShapeRecord("gemm", "s", "NT", 64, 64, 64),                  # 2.6e5
               ShapeRecord("gemm", "s", "NN", 500, 400, 300),               # 6e7
               ShapeRecord("gemm", "s", "NT", 64, 64, 64, count=3),         # the first again, counted apart
               ShapeRecord("gemm", "s", "TT", 32, 48, 40, count=10**4),     # 6.1e8 over the workload
               ShapeRecord("gemv", "s", "N", 3000, 2000, 1),                # 6e6
               ShapeRecord("gemm", "d", "NN", 900, 900, 900)]               # another dtype
    names = [size.shape for size in shape_classes(records, DTYPES["s"], device)]
    assert names == [(32, 48, 40), (500, 400, 300), (3000, 2000, 1), (64, 64, 64)]
    assert workload_work(records[3]) == 10**4 * 32 * 48 * 40 and workload_work(records[4]) == 3000 * 2000
