"""Tuning survives its candidates (issue 8): kernels that do not build, compute wrongly, crash their
process, read far out of bounds or never finish are each recorded with their cause, and the search goes on
in a new worker process (``tuning.evaluation.isolated``)."""

from __future__ import annotations

from faulty_family import FAULTS, faulty
from simt_default import simt_default

from autogemm.codelets.space import Knob, SearchSpace
from autogemm.dtypes import DTYPES
from autogemm.tuning import Budget, Objective, Outcome
from autogemm.tuning.evaluation import EvaluatorSpec, IsolatedEvaluator, WorkerProcess
from autogemm.tuning.strategies import get_strategy

EXPECTED = {"build": Outcome.BUILD_ERROR, "wrong": Outcome.WRONG, "crash": Outcome.CRASHED,
            "oob_read": Outcome.CRASHED, "hang": Outcome.TIMED_OUT, "none": Outcome.OK}
RUN_LIMIT = 8.0


def test_every_fault_is_recorded_with_its_cause_and_the_search_goes_on(device):
    base = simt_default(device)
    space = SearchSpace([Knob("fault", FAULTS)], lambda values: faulty(base, values["fault"]), family="faulty")
    with WorkerProcess(device, preload=("faulty_family",), run_limit=RUN_LIMIT) as worker:
        evaluator = IsolatedEvaluator(worker, EvaluatorSpec.gemm(DTYPES["s"], (64, 48, 40)))
        objective = Objective(space, evaluator, None, Budget(evaluations=len(FAULTS)), overlap=False, workers=2)
        get_strategy("exhaustive").run(space, objective, None)
        restarts = worker.restarts
    records = {r.config.fault: r for r in objective.records.values()}
    assert {fault: r.outcome for fault, r in records.items()} == EXPECTED
    assert "this is not OpenCL" in records["build"].message or "error" in records["build"].message.lower()
    assert "unwritten or NaN" in records["wrong"].message or "relative error" in records["wrong"].message
    assert f"nothing for {RUN_LIMIT:g} s" in records["hang"].message
    if not device.is_gpu:          # on a CPU the operating system stops the process; a GPU loses its context
        assert all("died of SIG" in records[fault].message for fault in ("crash", "oob_read"))
    assert objective.best[1].config.fault == "none" and records["none"].gflops > 0
    assert restarts >= 3           # after each crash and after the hang, a new process went on


def test_a_finalist_that_crashes_on_the_verifications_shapes_is_rejected_and_the_next_is_verified(device):
    """Verification runs in the worker too: a kernel right on the tuning problem that crashes on awkward
    shapes is rejected with the cause, and the worker starts anew for the next finalist."""
    base = simt_default(device)
    with WorkerProcess(device, preload=("faulty_family",), run_limit=RUN_LIMIT) as worker:
        rows = 2 * base.block_rows                     # the tuning problem: whole blocks of M
        evaluator = IsolatedEvaluator(worker, EvaluatorSpec.gemm(DTYPES["s"], (rows, 48, 40)))
        assert evaluator.evaluate(faulty(base, "edge_crash")).outcome is Outcome.OK
        problem = worker.verify(faulty(base, "edge_crash"), DTYPES["s"])
        assert worker.verify(faulty(base, "none"), DTYPES["s"]) is None
    assert problem and ("lost its process" in problem or "OUT_OF_RESOURCES" in problem)
