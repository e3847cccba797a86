"""Interruptions lose nothing (issue 8): ``autogemm tune`` killed with SIGKILL at random moments, several
times over, resumes where it was: the profile on disk is whole after every kill, nothing the checkpoint
holds is measured again, and the run that finishes ranks first the best of everything measured."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

from autogemm.profiles import store
from autogemm.tuning.records import Record

COMMAND = ["-m", "autogemm.cli", "tune", "--quick", "--dtype", "s", "--size-class", "small", "--size-class",
           "medium", "--budget", "30", "--strategy", "random", "--top", "1"]
KILLS = 3


def _records(folder) -> dict[int, list[Record]]:
    """Every whole record in the checkpoints (a line torn by a kill is not one), by the problem's size."""
    found: dict[int, list[Record]] = {}
    for path in folder.glob("*.jsonl"):
        text = path.read_text(encoding="utf-8").splitlines()
        if not text:
            continue                     # made a moment ago by the run, its header not written yet
        header, *lines = text
        records = found.setdefault(json.loads(header)["shape"][0], [])
        for line in lines:
            try:
                records.append(Record.from_dict(json.loads(line)))
            except ValueError:
                continue
    return found


def _measured(folder) -> int:
    return sum(map(len, _records(folder).values()))


def test_a_tuning_run_killed_at_random_moments_resumes_and_loses_nothing(tmp_path):
    """Each run is killed at a random moment after it has taken between 1 and 5 new measurements (a
    moment in its building, checking, timing or writing)."""
    env = {**os.environ, "AUTOGEMM_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    rng = random.Random()
    checkpoints = tmp_path / "checkpoints"
    measured_before = []
    for _ in range(KILLS):
        target = _measured(checkpoints) + rng.randint(1, 5)
        run = subprocess.Popen([sys.executable, *COMMAND], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while _measured(checkpoints) < target and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.3))
        run.send_signal(signal.SIGKILL)
        code = run.wait()
        if code == 0 and measured_before:       # the run finished its budget first: nothing left to kill
            break
        assert code == -signal.SIGKILL, "the first run ended before it was killed"
        for path in (tmp_path / "profiles").glob("*.json"):
            store.read(path)                                  # whole, never half-written
        measured_before.append(_measured(checkpoints))
    finished = subprocess.run([sys.executable, *COMMAND], env=env, capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr[-3000:]
    by_size = _records(tmp_path / "checkpoints")
    for records in by_size.values():
        keys = [r.key for r in records]
        assert len(keys) == len(set(keys)), "a measurement was taken again"
    assert 0 < measured_before[0] <= measured_before[-1] <= _measured(checkpoints)
    (path,) = (tmp_path / "profiles").glob("*.json")
    profile = store.read(path)
    for name in ("small", "medium"):
        entry = profile.entry("s", name)
        best = max((r for r in by_size[entry.shape[0]] if r.ok and r.runs >= 5), key=lambda r: r.gflops)
        assert entry.ranked[0].config == best.config
