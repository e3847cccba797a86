"""Tuning runs on one device at once (issue 8): two ``autogemm tune`` processes on the same dtype and class
share one checkpoint and one profile file. Both finish, the profile is whole and holds the class, and
every checkpoint line is whole (runs of different dtypes merging their entries into one profile:
``test_profiles``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from autogemm.profiles import store
from autogemm.tuning.records import Record

COMMAND = ["-m", "autogemm.cli", "tune", "--quick", "--dtype", "s", "--size-class", "small", "--budget", "8",
           "--strategy", "random"]


def test_two_tuning_runs_at_once_leave_one_whole_profile_and_checkpoint(tmp_path):
    env = {**os.environ, "AUTOGEMM_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    runs = [subprocess.Popen([sys.executable, *COMMAND, "--seed", str(seed)], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True) for seed in range(2)]
    for run in runs:
        _, errors = run.communicate(timeout=600)
        assert run.returncode == 0, errors[-3000:]
    (path,) = (tmp_path / "profiles").glob("*.json")
    profile = store.read(path)
    assert profile.entry("s", "small").ranked
    assert not list((tmp_path / "profiles").glob("*.tmp"))
    for checkpoint in (tmp_path / "checkpoints").glob("*.jsonl"):
        header, *lines = checkpoint.read_text(encoding="utf-8").splitlines()
        json.loads(header)
        for line in lines:
            Record.from_dict(json.loads(line))
