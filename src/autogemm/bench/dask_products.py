"""``run_dask``: one n x n x n product from host arrays to a host result through Dask, on clusters of
several sizes: ``autogemm.dask`` on autogemm workers, dask's own ``da.matmul`` on numpy chunks (the same
workers, numpy's BLAS), and dask's ``da.matmul`` on cupy chunks (the usual way to multiply dask arrays on
NVIDIA GPUs: one worker process per GPU, through dask-cuda where it is installed) where cupy is; beside
them ``autogemm.gemm`` on the numpy arrays in this process, without Dask. Each path is timed by the wall
clock from the operands to the numpy result (after a warm-up), and its result checked against float64 on
sampled rows. The dask arrays' numpy chunks are held by the workers before the clock starts, as data loaded
with Dask is: a graph holding the numpy arrays themselves would be serialized on every run, which takes
far longer than the product."""

from __future__ import annotations

import importlib.util
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..accuracy import gemm_flops, random_matrix, relative_error
from ..dtypes import Dtype

AUTOGEMM, PLAIN, DASK_NUMPY, DASK_CUPY = "autogemm.dask", "autogemm.gemm", "dask numpy", "dask cupy"
#: The paths ``run_dask`` can time.
PATHS = (AUTOGEMM, PLAIN, DASK_NUMPY, DASK_CUPY)
#: Rows of the product checked against float64 (the whole reference would cost as much as the product).
SAMPLED_ROWS = 64


@dataclass
class DaskResult:
    """One path on one cluster: wall seconds (median; None where it failed or is missing) and the sampled
    rows' relative error."""

    path: str
    workers: int
    dtype: str
    n: int
    chunk: int
    seconds: float | None = None
    tflops: float | None = None
    error: float | None = None
    note: str = ""
    #: autogemm.dask's devices: the share of the wall time they computed blocks (``tasks.spans_share``,
    #: median over the runs; None on other paths, or with workers in processes of their own).
    busy: float | None = None
    #: the same for the blocks' way back to the host (read back and copied into place), which overlaps
    #: other blocks' turns.
    copying: float | None = None


def run_dask(dt: Dtype, n: int, chunk: int, workers: list[int], runs: int, rng: np.random.Generator,
             progress: Callable[[str], None] = lambda what: None, paths: tuple[str, ...] = PATHS,
             measured: Callable[[DaskResult], None] = lambda result: None) -> list[DaskResult]:
    """Each of ``paths`` on a cluster of each number of ``workers`` (``autogemm.gemm`` once, as one
    worker); ``progress`` told what runs next, ``measured`` given each result as it comes (a run cut
    short keeps what it measured)."""
    import dask.array as da
    from distributed import Client

    from ..api import gemm
    from ..dask import local_cluster, matmul
    from ..dask.tasks import COPY, device_of_worker, recorded_spans, spans_share

    a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
    rows = np.sort(rng.choice(n, min(SAMPLED_ROWS, n), replace=False))
    want = a[rows].astype(dt.reference_numpy) @ b.astype(dt.reference_numpy)
    flops = gemm_flops(dt, n, n, n)
    results = []

    def timed(path: str, count: int, product: Callable[[], np.ndarray]) -> DaskResult:
        result = DaskResult(path, count, dt.key, n, chunk)
        try:
            out = product()
            times, busy, copying = [], [], []
            for _ in range(runs):
                with recorded_spans() as spans:
                    started = time.perf_counter()
                    out = product()
                    times.append(time.perf_counter() - started)
                busy.append(spans_share(spans, times[-1]))
                copying.append(spans_share(spans, times[-1], COPY))
        except Exception as exc:   # noqa: BLE001 - a failed path is a row of the table, not the end of the run
            result.note = f"failed: {type(exc).__name__}: {exc}"[:200]
            return result
        result.seconds = statistics.median(times)
        result.busy = statistics.median(busy) if None not in busy else None
        result.copying = statistics.median(copying) if None not in copying else None
        result.tflops = flops / result.seconds / 1e12
        result.error = relative_error(np.asarray(out)[rows], want)
        if not result.error < dt.tolerance:
            result.note = f"wrong: relative error {result.error:.1e} on sampled rows"
        return result

    def add(result: DaskResult) -> None:
        results.append(result)
        measured(result)

    if PLAIN in paths:
        progress("this process, without Dask")
        add(timed(PLAIN, 1, lambda: gemm(a, b)))
    for count in workers:
        progress(f"{count} worker{'s' * (count > 1)}")
        with (local_cluster(n_workers=count, dashboard_address=":0", memory_limit=0) as cluster,
              Client(cluster) as client):
            A, B = _held(client, a, chunk), _held(client, b, chunk)
            if AUTOGEMM in paths:
                ours = timed(AUTOGEMM, count, lambda A=A, B=B: matmul(A, B).compute())
                fallen = sum(device is None for device in client.run(
                    lambda dask_worker: device_of_worker(dask_worker.address)).values())
                if fallen and not ours.note:
                    ours.note = f"{fallen} of {count} workers on numpy's BLAS (no usable device)"
                add(ours)
            if DASK_NUMPY in paths:
                add(timed(DASK_NUMPY, count, lambda A=A, B=B: da.matmul(A, B).compute()))
        if DASK_CUPY in paths:
            add(_cupy(dt, count, timed, a, b, chunk))
    return results


def _held(client: object, x: np.ndarray, chunk: int) -> object:
    """``x`` as a dask array of numpy chunks held by ``client``'s workers. (The graph that sends them holds
    ``x`` itself, which Dask warns of as a large graph: sent once, before the clock starts, it is what
    this benchmark means to do, so the warning is left out of its log.)"""
    import dask.array as da
    from distributed import wait

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
        held = client.persist(da.from_array(x, chunks=chunk))
    wait(held)
    return held


def _cupy(dt: Dtype, count: int, timed: Callable[..., DaskResult], a: np.ndarray, b: np.ndarray, chunk: int
          ) -> DaskResult:
    """dask's ``da.matmul`` on cupy chunks on ``count`` GPUs, a worker process each (dask-cuda's
    ``LocalCUDACluster`` where installed, else the same by ``CUDA_VISIBLE_DEVICES``), from the numpy arrays
    to a numpy result; or a row saying what is missing."""
    if importlib.util.find_spec("cupy") is None:
        return DaskResult(DASK_CUPY, count, dt.key, a.shape[0], chunk, note="not installed: cupy")
    import cupy
    import dask.array as da
    from distributed import Client

    with _gpu_cluster(count) as cluster, Client(cluster) as client:
        A, B = _held(client, a, chunk).map_blocks(cupy.asarray), _held(client, b, chunk).map_blocks(cupy.asarray)
        return timed(DASK_CUPY, count, lambda: da.matmul(A, B).map_blocks(cupy.asnumpy).compute())


def _gpu_cluster(count: int) -> object:
    """A cluster of ``count`` worker processes of one thread, each seeing one GPU of its own, without a
    host memory limit (dask's default, the host's memory over its cores, paused a 32768^3 product's
    workers on two H200s)."""
    if importlib.util.find_spec("dask_cuda") is not None:
        from dask_cuda import LocalCUDACluster

        return LocalCUDACluster(n_workers=count, dashboard_address=":0", memory_limit=0)
    from distributed import Nanny, Scheduler, SpecCluster

    workers = {number: {"cls": Nanny, "options": {"nthreads": 1, "memory_limit": 0,
                                                  "env": {"CUDA_VISIBLE_DEVICES": str(number)}}}
               for number in range(count)}
    return SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {"dashboard_address": ":0"}})
