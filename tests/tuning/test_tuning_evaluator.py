"""The evaluator on the real device: every outcome is a record (ok, build error, wrong, too slow,
crashed) and nothing raises; FMA micro-benchmark; finalist verification."""

from __future__ import annotations

import dataclasses
import math
import threading
from concurrent.futures import Future

import numpy as np
import pyopencl as cl
import pytest

from autogemm.accuracy import random_matrix, relative_error
from autogemm.blas import launch_plan as plan_module
from autogemm.blas.verification import verify
from autogemm.codelets.simt import SimtParams
from autogemm.dtypes import DTYPES
from autogemm.tuning import GemmEvaluator, Outcome, fma
from autogemm.tuning.evaluation.device_reference import DeviceReference

GOOD = SimtParams("NN", "consecutive", 4, 8, 2, 2, 2, 1, False, False, mac="mul_add")


def sabotage(monkeypatch, old: str, new: str) -> None:
    """Make every GEMM kernel rendered from now on have ``old`` replaced by ``new``."""
    real = plan_module.render

    def render(params, dtype, guarded=True, stream=False, **options):
        src = real(params, dtype, guarded, stream, **options)
        assert old in src.source
        return dataclasses.replace(src, source=src.source.replace(old, new))

    monkeypatch.setattr(plan_module, "render", render)


@pytest.fixture
def evaluator(ctx):
    ev = GemmEvaluator(ctx, DTYPES["s"], 40, 24, 36, runs=2)
    yield ev
    ev.release()


def test_a_good_kernel_is_ok(evaluator):
    record = evaluator.evaluate(GOOD)
    assert record.outcome is Outcome.OK, record.message
    assert record.gflops > 0 and record.error < 1e-5 and record.runs == 2


@pytest.mark.parametrize("letter", "dcz")
def test_every_dtype(ctx, letter):
    ev = GemmEvaluator(ctx, DTYPES[letter], 33, 17, 9, runs=1)
    try:
        record = ev.evaluate(GOOD)
    finally:
        ev.release()
    assert record.ok, record.message


def test_a_batch_is_measured_and_checked_whole(ctx):
    """A batch class's evaluator times all its products in one call and checks every one of them: a plan
    for the first product alone leaves the others unwritten."""
    import dataclasses

    ev = GemmEvaluator(ctx, DTYPES["s"], 9, 7, 5, runs=1, batch=6)
    try:
        record = ev.evaluate(GOOD)
        assert record.ok, record.message
        assert ev.flops == 6 * 2 * 9 * 7 * 5 and ev.problem.stride_c == 9 * 7
        ev.problem = dataclasses.replace(ev.problem, batch=1)
        record = ev.evaluate(GOOD)
    finally:
        ev.release()
    assert record.outcome is Outcome.WRONG and "315 elements unwritten" in record.message


def test_a_build_error_is_a_record(evaluator, monkeypatch):
    sabotage(monkeypatch, "const bool beta_zero", "const bool beta_zero = this is not C;")
    record = evaluator.evaluate(GOOD)
    assert record.outcome is Outcome.BUILD_ERROR and "BuildError" in record.message


def test_a_wrong_kernel_is_caught(evaluator, monkeypatch):
    sabotage(monkeypatch, "for (int k0 = 0; k0 < K;", "for (int k0 = TILE_K; k0 < K;")
    record = evaluator.evaluate(GOOD)
    assert record.outcome is Outcome.WRONG and "relative error" in record.message


def test_an_unwritten_element_is_caught(evaluator, monkeypatch):
    sabotage(monkeypatch, "store_1(C, ldc, M, N, row, col, value);",
             "if (row != 3 || col != 5) store_1(C, ldc, M, N, row, col, value);")
    record = evaluator.evaluate(GOOD)
    assert record.outcome is Outcome.WRONG and "1 elements unwritten" in record.message


def test_a_slow_kernel_is_cut_short(evaluator):
    evaluator.best_seconds = 1e-12
    record = evaluator.evaluate(GOOD)
    assert record.outcome is Outcome.TOO_SLOW and record.runs == 1


def test_a_runtime_failure_is_a_record(evaluator, monkeypatch):
    def fail(*args, **kwargs):
        raise cl.RuntimeError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")

    monkeypatch.setattr(plan_module.LaunchPlan, "enqueue", fail)
    record = evaluator.evaluate(GOOD)
    assert record.outcome is Outcome.CRASHED and "OUT_OF_RESOURCES" in record.message


def test_verify_passes_a_correct_configuration_and_fails_a_wrong_one(ctx, monkeypatch):
    params = dataclasses.replace(GOOD, layout="TN", vector_width=2)
    assert verify(ctx, params, DTYPES["c"]) is None
    sabotage(monkeypatch, "if (!beta_zero) value", "if (false) value")   # beta C is dropped
    assert "relative error" in verify(ctx, params, DTYPES["c"])


def test_fma_benchmark_picks_a_form_per_width(ctx):
    results = fma.benchmark(ctx, ("s",), (1, 4), runs=1)
    assert [(r.real, r.vector_width) for r in results] == [("s", 1), ("s", 4)]
    for r in results:
        assert set(r.gflops) == set(fma.MACS) and all(v > 0 for v in r.gflops.values())
        assert r.best in fma.MACS
    table = fma.mac_table(results)
    assert set(table) == {"s1", "s4"}


def test_fma_prefers_fma_unless_a_rival_is_clearly_faster():
    assert fma.FmaResult("s", 1, {"fma": 100.0, "mad": 102.0, "mul_add": 101.0}).best == "fma"
    assert fma.FmaResult("s", 1, {"fma": 10.0, "mad": 11.0, "mul_add": 40.0}).best == "mul_add"


@pytest.mark.parametrize("letter,pending", [("s", False), ("d", True), ("c", True), ("z", False)])
def test_the_device_check_agrees_with_the_host(ctx, letter, pending):
    """Also with the reference still computing when the check is set up (it waits for it)."""
    dt = DTYPES[letter]
    rng = np.random.default_rng(7)
    want = random_matrix(rng, dt, (37, 29)).astype(dt.reference_numpy)
    got = (want + 1e-3 * random_matrix(rng, dt, want.shape)).astype(dt.numpy)
    later: Future | np.ndarray = want
    if pending:
        later = Future()
        threading.Timer(0.2, later.set_result, [want]).start()
    reference = DeviceReference(ctx, dt, later, want.size)
    buf = cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=got)
    try:
        error, unwritten = reference.compare(buf)
        assert unwritten == 0
        assert error == pytest.approx(relative_error(got, want), rel=1e-3)
        got[[3, 30], [4, 1]] = np.nan
        got[0, 0] = np.inf
        cl.enqueue_copy(ctx.queue, buf, got).wait()
        assert reference.compare(buf) == (math.inf, 3)
    finally:
        reference.release()
        buf.release()
