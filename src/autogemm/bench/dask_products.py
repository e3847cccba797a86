"""``run_dask``: one n x n x n product from host arrays to a host result through Dask, on clusters of
several sizes: ``autogemm.dask`` on autogemm workers, dask's own ``da.matmul`` on numpy chunks (the same
workers, numpy's BLAS), and dask's ``da.matmul`` on cupy chunks (the usual way to multiply dask arrays on
NVIDIA GPUs) where cupy and dask-cuda are installed. Each path is timed by the wall clock from the numpy
operands to the numpy result (after a warm-up), and its result checked against float64 on sampled rows."""

from __future__ import annotations

import importlib.util
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..accuracy import gemm_flops, random_matrix, relative_error
from ..dtypes import Dtype

AUTOGEMM, DASK_NUMPY, DASK_CUPY = "autogemm.dask", "dask numpy", "dask cupy"
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


def run_dask(dt: Dtype, n: int, chunk: int, workers: list[int], runs: int, rng: np.random.Generator,
             progress: Callable[[str], None] = lambda what: None) -> list[DaskResult]:
    """Every path on a cluster of each number of ``workers``; ``progress`` told what runs next."""
    import dask.array as da
    from distributed import Client

    from ..dask import local_cluster, matmul

    a, b = random_matrix(rng, dt, (n, n)), random_matrix(rng, dt, (n, n))
    rows = np.sort(rng.choice(n, min(SAMPLED_ROWS, n), replace=False))
    want = a[rows].astype(dt.reference_numpy) @ b.astype(dt.reference_numpy)
    flops = gemm_flops(dt, n, n, n)
    results = []

    def timed(path: str, count: int, product: Callable[[], np.ndarray]) -> DaskResult:
        result = DaskResult(path, count, dt.key, n, chunk)
        try:
            out = product()
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                out = product()
                times.append(time.perf_counter() - started)
        except Exception as exc:   # noqa: BLE001 - a failed path is a row of the table, not the end of the run
            result.note = f"failed: {type(exc).__name__}: {exc}"[:200]
            return result
        result.seconds = statistics.median(times)
        result.tflops = flops / result.seconds / 1e12
        result.error = relative_error(np.asarray(out)[rows], want)
        if not result.error < dt.tolerance:
            result.note = f"wrong: relative error {result.error:.1e} on sampled rows"
        return result

    A, B = da.from_array(a, chunks=chunk), da.from_array(b, chunks=chunk)
    for count in workers:
        progress(f"{count} worker{'s' * (count > 1)}")
        with local_cluster(n_workers=count, dashboard_address=":0") as cluster, Client(cluster):
            results.append(timed(AUTOGEMM, count, lambda: matmul(A, B).compute()))
            results.append(timed(DASK_NUMPY, count, lambda: da.matmul(A, B).compute()))
        results.append(_cupy(dt, count, timed, a, b, chunk))
    return results


def _cupy(dt: Dtype, count: int, timed: Callable[..., DaskResult], a: np.ndarray, b: np.ndarray, chunk: int
          ) -> DaskResult:
    """dask's ``da.matmul`` on cupy chunks on a ``dask_cuda.LocalCUDACluster`` of ``count`` GPUs, from the
    numpy arrays to a numpy result (or a row saying what is missing)."""
    missing = [name for name in ("cupy", "dask_cuda") if importlib.util.find_spec(name) is None]
    if missing:
        return DaskResult(DASK_CUPY, count, dt.key, a.shape[0], chunk, note=f"not installed: {', '.join(missing)}")
    import cupy
    import dask.array as da
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    with LocalCUDACluster(n_workers=count, dashboard_address=":0") as cluster, Client(cluster):
        A = da.from_array(a, chunks=chunk).map_blocks(cupy.asarray)
        B = da.from_array(b, chunks=chunk).map_blocks(cupy.asarray)
        return timed(DASK_CUPY, count, lambda: da.matmul(A, B).map_blocks(cupy.asnumpy).compute())
