"""A fuzz of checkpoints (issue 57): lines of a valid checkpoint replaced by random bytes, by JSON of any
kind, by records with one field forged, or cut short, and its header damaged. Reading it never raises:
each bad line is skipped and counted, every record kept is one a profile can hold, a damaged header
starts the problem over; a replay's reader (``Checkpoint.read``) says ``TuningError`` for a file that
is no checkpoint."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic import SyntheticEvaluator, synthetic_space

from autogemm.dtypes import DTYPES
from autogemm.errors import TuningError
from autogemm.profiles.profile import MAX_GFLOPS
from autogemm.tuning import Budget, BudgetSpent, Objective, get_strategy
from autogemm.tuning.checkpoint import Checkpoint

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
JUNK = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=8)


def _checkpoint(folder: Path, device) -> Checkpoint:
    return Checkpoint.for_problem(device, DTYPES["s"], (64, 64, 64), directory=folder)


_lines: dict[str, list[bytes]] = {}


def _valid_lines(device) -> list[bytes]:
    """The lines of a checkpoint of ten measurements (made once)."""
    if device.fingerprint not in _lines:
        with tempfile.TemporaryDirectory() as folder:
            checkpoint = _checkpoint(Path(folder), device)
            space = synthetic_space()
            objective = Objective(space, SyntheticEvaluator(), checkpoint, Budget(evaluations=10), overlap=False,
                                  workers=1)
            try:
                get_strategy("phased", seed=5).search(space, objective, start=space.points()[0])
            except BudgetSpent:
                pass
            _lines[device.fingerprint] = checkpoint.path.read_bytes().splitlines()
    return _lines[device.fingerprint]


@st.composite
def _damaged(draw, line: bytes) -> bytes:
    kind = draw(st.sampled_from(["bytes", "json", "field", "cut"]))
    if kind == "bytes":
        return draw(st.binary(max_size=60)).replace(b"\n", b" ").replace(b"\r", b" ")    # one line
    if kind == "json":
        return json.dumps(draw(JUNK)).encode()
    if kind == "cut":
        return line[:draw(st.integers(0, max(len(line) - 1, 0)))]
    record = json.loads(line)
    record[draw(st.sampled_from(sorted(record) + ["extra"]))] = draw(JUNK)
    return json.dumps(record).encode()


@FUZZ
@given(data=st.data())
def test_damaged_lines_are_skipped_and_the_rest_kept(device, data):
    lines = _valid_lines(device)
    damaged = data.draw(st.sets(st.integers(1, len(lines) - 1), min_size=1, max_size=4))
    written = [data.draw(_damaged(line)) if i in damaged else line for i, line in enumerate(lines)]
    with tempfile.TemporaryDirectory() as folder:
        path = _checkpoint(Path(folder), device).path
        path.write_bytes(b"\n".join(written) + b"\n")
        reread = _checkpoint(Path(folder), device)
        assert len(reread) + reread.skipped >= len(lines) - 1 - len(damaged)
        assert reread.skipped <= len(damaged)
        for record in reread.records.values():
            assert not record.ok or 0 <= record.gflops <= MAX_GFLOPS


@FUZZ
@given(data=st.data())
def test_a_damaged_header_starts_over_or_is_refused_by_a_replay(device, data):
    lines = _valid_lines(device)
    header = data.draw(_damaged(lines[0]))
    with tempfile.TemporaryDirectory() as folder:
        path = _checkpoint(Path(folder), device).path
        path.write_bytes(b"\n".join([header, *lines[1:]]) + b"\n")
        try:
            replayed = Checkpoint.read(path)
        except TuningError as error:
            assert str(path) in str(error)
        else:
            assert len(replayed) + replayed.skipped <= len(lines)
        reread = _checkpoint(Path(folder), device)
        assert len(reread) in (0, len(lines) - 1)
