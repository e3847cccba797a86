"""The maintained tools in tools/ run on this machine's device with small problems and report what they
are for (each made for a GPU's sizes, so only the path through them is checked here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def run(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(TOOLS / args[0]), *args[1:]] if args[0].endswith(".py") else [str(TOOLS / args[0]),
                                                                                                  *args[1:]]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=dict(os.environ))


@pytest.mark.parametrize("dtype", ["s", "z"])
def test_out_of_core_checks_the_product_it_streams(dtype):
    done = run("out_of_core.py", "300x170x90", "--dtype", dtype)
    assert done.returncode == 0, done.stderr
    assert "planned: tiles of" in done.stdout and "left NaN -> right" in done.stdout


def test_stream_timeline_traces_a_streamed_product():
    done = run("stream_timeline.py", "--n", "256", "--runs", "1")
    assert done.returncode == 0, done.stderr
    assert "kernels busy" in done.stdout and "copies in" in done.stdout and "new C" in done.stdout
    assert "error" in done.stdout


def test_launch_gaps_times_launches_and_a_plan():
    done = run("launch_gaps.py")
    assert done.returncode == 0, done.stderr
    assert "arguments set once" in done.stdout and "merge C" in done.stdout


def test_host_memory_measures_the_copies_a_stream_makes():
    done = run("host_memory.py", "--mib", "4")
    assert done.returncode == 0, done.stderr
    assert "numpy->pinned" in done.stdout and len([line for line in done.stdout.splitlines()
                                                   if line.strip().startswith("16 |")]) == 1


def test_the_driver_check_passes_where_a_compiler_builds():
    done = run("ensure-opencl-driver.sh", sys.executable)
    assert done.returncode == 0, done.stderr
    assert "builds kernels" in done.stdout
