"""Tuning the CUDA path beside OpenCL: a run searches each GEMM class of a dtype with CUDA kernels there too,
after its OpenCL search, compares the two on the class's problem and keeps both in the profile (on the CPU,
with the CUDA search stood in for); on a Hopper GPU, the CUDA evaluator measures a configuration correctly
and rejects a wrong result, the evaluation worker measures and verifies CUDA configurations in its own
process, and a short search keeps a verified configuration."""

from __future__ import annotations

import numpy as np
import pytest

from autogemm.blas import default_params
from autogemm.blas.defaults import CUDA_DEFAULTS
from autogemm.codelets.dmma import DmmaParams
from autogemm.dtypes import DTYPES
from autogemm.profiles import CudaEntry, read
from autogemm.profiles.store import path_for
from autogemm.tuning import Budget, TuneListener, tuner
from autogemm.tuning.evaluation import EvaluatorSpec, IsolatedEvaluator, WorkerProcess
from autogemm.tuning.records import Outcome


class _Heard(TuneListener):
    def __init__(self) -> None:
        self.finished: list[tuple[str, str, CudaEntry | None]] = []

    def cuda_finished(self, dtype, size, entry, objectives, rejected) -> None:
        self.finished.append((dtype.key, size.name, entry))


def test_each_gemm_class_is_searched_on_cuda_after_opencl_and_the_faster_kept(cache, device, monkeypatch):
    """float64 has CUDA kernels, float32 none: each float64 GEMM class gets a CUDA search on the problem its
    OpenCL entry was ranked on, told that entry's rate; the profile keeps both, and which was faster."""
    asked = []

    def search_on_cuda(worker, dt, size, opencl, budget, strategy, seed, fresh, prior, listener):
        asked.append((dt.key, size.name, opencl.shape))
        assert budget.evaluations is not None and isinstance(worker, WorkerProcess)
        gflops = opencl.ranked[0].gflops * (2.0 if size.name == "large" else 0.5)
        return CudaEntry(size.name, opencl.shape, DmmaParams("d"), gflops, opencl.ranked[0].gflops, 3, 0.1), \
            [], [], 0.01

    monkeypatch.setattr(tuner, "cuda_unreachable", lambda dev, dt: None if dt.key == "d" else "none")
    monkeypatch.setattr(tuner, "tune_cuda_class", search_on_cuda)
    heard = _Heard()
    profile = tuner.tune(device, (DTYPES["s"], DTYPES["d"]), Budget(evaluations=8), quick=True, top=1,
                         listener=heard, classes=("large", "small"))
    assert [(key, name) for key, name, _ in asked] == [("d", "large"), ("d", "small")]
    assert [shape for *_, shape in asked] == [profile.entry("d", name).shape for name in ("large", "small")]
    assert [(key, name) for key, name, _ in heard.finished] == [("d", "large"), ("d", "small")]
    assert "s" not in profile.cuda and [e.backend for e in profile.cuda["d"]] == ["cuda", "opencl"]
    saved = read(path_for(device.fingerprint)).cuda["d"]
    assert [(e.name, e.config, e.backend) for e in saved] == [(e.name, e.config, e.backend) for e in profile.cuda["d"]]


def _hopper_context():
    from autogemm.blas.cuda_gemm import cuda_target
    from autogemm.runtime.opencl.discovery import devices

    for found in devices():
        ctx, _ = cuda_target(found, DTYPES["d"])
        if ctx is not None:
            return found, ctx
    pytest.skip("an sm_90 GPU with the CUDA bindings")


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", ["h", "d"])
def test_the_cuda_evaluator_measures_a_correct_configuration_and_rejects_a_wrong_result(key, monkeypatch):
    from autogemm.tuning.evaluation.cuda import CudaEvaluator

    _, ctx = _hopper_context()
    evaluator = CudaEvaluator(ctx, DTYPES[key], 1000, 520, 264, layout="TN", runs=3)
    try:
        record = evaluator.evaluate(CUDA_DEFAULTS[key])
        assert record.outcome is Outcome.OK and record.gflops > 0 and record.runs == 3, record.message
        monkeypatch.setattr(evaluator.reference, "product", evaluator.reference.product * 1.01)
        assert evaluator.evaluate(CUDA_DEFAULTS[key]).outcome is Outcome.WRONG
    finally:
        evaluator.release()


@pytest.mark.gpu
@pytest.mark.cuda
def test_a_short_cuda_search_keeps_a_verified_configuration(cache):
    from autogemm.tuning.cuda_classes import tune_cuda_class
    from autogemm.tuning.scope import SizeClass

    device, _ = _hopper_context()
    size = SizeClass("small", 512, 512, 512, 0.2)
    with WorkerProcess(device) as worker:       # the candidates run in the worker's process, as OpenCL's do
        entry, rejected, objectives, _ = tune_cuda_class(worker, DTYPES["d"], size, None, Budget(evaluations=4),
                                                         "random", 0, True, None, TuneListener())
    assert entry is not None and not rejected and entry.opencl_gflops == 0 and entry.backend == "cuda"
    assert entry.shape == (512, 512, 512) and sum(o.evaluations for o in objectives) >= 1
    assert np.isfinite(entry.gflops) and entry.config.dtype == "d"


@pytest.mark.gpu
@pytest.mark.cuda
def test_the_worker_measures_and_verifies_cuda_configurations_in_its_process():
    """A CUDA candidate runs in the evaluation worker's process, as OpenCL's do (one that crashes costs
    that process, not the run): measured there on its spec's problem and verified on awkward shapes."""
    device, _ = _hopper_context()
    with WorkerProcess(device) as worker:
        evaluator = IsolatedEvaluator(worker, EvaluatorSpec.gemm(DTYPES["d"], (300, 260, 128), layout="TN",
                                                                 backend="cuda"), runs=2)
        record = evaluator.evaluate(CUDA_DEFAULTS["d"])
        assert record.outcome is Outcome.OK and record.gflops > 0, record.message
        assert worker.verify(CUDA_DEFAULTS["d"], DTYPES["d"]) is None
        opencl = IsolatedEvaluator(worker, EvaluatorSpec.gemm(DTYPES["d"], (64, 64, 64)), runs=1)
        assert opencl.evaluate(default_params(device, DTYPES["d"])).outcome is Outcome.OK
