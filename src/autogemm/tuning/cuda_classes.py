"""The CUDA path's part of a tuning run (issue 28): on a Hopper GPU that the CUDA driver sees too, each
GEMM size class of a dtype the CUDA families compute (``codelets.wgmma``, ``codelets.dmma``) is searched
there as well, on the problem OpenCL's best was ranked on, from the dtype's default configuration
(``blas.defaults.CUDA_DEFAULTS``) and what the profile held before. The fastest configuration that passes
verification on awkward shapes is kept in the profile's CUDA entries beside the OpenCL rate of the class,
so that a product runs on whichever backend was faster for the class nearest it (``CudaEntry.backend``).
The measurements go to a checkpoint of their own, so an interrupted run resumes without measuring twice."""

from __future__ import annotations

import time
from dataclasses import replace

from ..blas.cuda_gemm import CudaParams
from ..blas.defaults import CUDA_DEFAULTS
from ..codelets.registry import GEMM, SpaceFacts, families
from ..codelets.space import Point, SearchSpace
from ..dtypes import Dtype
from ..profiles import CudaEntry, Profile, SizeClassEntry
from ..runtime.backend import CUDA
from ..runtime.opencl.device import Device
from .budget import Budget
from .checkpoint import Checkpoint
from .evaluation import EvaluatorSpec, IsolatedEvaluator, WorkerProcess
from .objective import Objective
from .scope import SizeClass
from .searching import search, start_point

#: How many of a class's fastest configurations are verified, at most, before the class keeps none.
VERIFY_TRIES = 3
#: A class's CUDA search gets this share of the weight of its OpenCL search in the run's schedule.
CUDA_SHARE = 0.5


def cuda_spaces(device: Device, dt: Dtype) -> list[tuple[SearchSpace, Point | None]]:
    """The CUDA families' spaces for ``dt``, each with the point of the dtype's default configuration."""
    facts = SpaceFacts(device, dt)
    spaces = [space for family in families(GEMM, CUDA) if (space := family.space(facts)) is not None]
    return [(space, start_point(space, CUDA_DEFAULTS[dt.key])) for space in spaces]


def tune_cuda_class(worker: WorkerProcess, dt: Dtype, size: SizeClass, opencl: SizeClassEntry | None,
                    budget: Budget, strategy: str, seed: int, fresh: bool, prior: Profile | None, listener
                    ) -> tuple[CudaEntry | None, list[tuple[CudaParams, str]], list[Objective], float]:
    """Search the CUDA families for ``dt``'s class ``size`` on the problem ``opencl`` (the class's OpenCL
    entry, whose rate it is compared with) was ranked on, under ``budget``, in ``worker``'s process (a
    candidate that crashes or hangs costs it, not the run), as OpenCL's candidates are; the
    configurations ``prior``'s entry for the class holds are measured first. The entry (None when no
    configuration was correct and verified), the configurations verification rejected, the searches'
    objectives and the seconds the search took (``listener``: the run's ``TuneListener``, told of each
    record)."""
    device = worker.device
    shape = opencl.shape if opencl is not None else size.shape
    layout = size.layout or "NN"
    checkpoint = Checkpoint.for_problem(device, dt, shape, routine="cuda-gemm", layout=layout)
    if fresh:
        checkpoint.clear()
    before = next((e for e in prior.cuda.get(dt.key, ()) if e.name == size.name), None) if prior else None
    evaluator = IsolatedEvaluator(worker, EvaluatorSpec.gemm(dt, shape, layout=layout, backend=CUDA))
    searched_as = replace(size, m=shape[0], n=shape[1], k=shape[2])
    started = time.monotonic()
    objectives = search(cuda_spaces(device, dt), evaluator, checkpoint, budget, strategy, seed,
                        [before.config] if before else [], overlap=True, on_record=listener.record,
                        on_start=lambda space, objective: listener.class_started(dt, searched_as, space, objective))
    searched = time.monotonic() - started
    measured = sorted((r for o in objectives for r in o.records.values() if o.complete(r)),
                      key=lambda r: r.gflops, reverse=True)
    rejected: list[tuple[CudaParams, str]] = []
    entry = None
    for record in measured[:VERIFY_TRIES]:
        problem = worker.verify(record.config, dt)
        if problem is None:
            entry = CudaEntry(size.name, shape, record.config, record.gflops,
                              opencl.ranked[0].gflops if opencl is not None else 0.0,
                              sum(o.evaluations for o in objectives), time.monotonic() - started)
            break
        rejected.append((record.config, problem))
    return entry, rejected, objectives, searched
