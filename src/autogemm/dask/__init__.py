"""``autogemm.dask``: products of dask arrays whose block products run on autogemm's devices.

Dask places the tasks, moves the blocks, spills to disk and reruns what a lost worker was doing; autogemm
makes each block product as fast as its worker's device allows. ``matmul`` and ``gemm`` build the graph
with dask.array's own ``blockwise`` (the partial products over K summed in a tree); ``local_cluster``
starts one worker per GPU of this machine, each pinned to its device by ``AutogemmPlugin``. Needs the
``dask`` extra: ``pip install 'autogemm[dask]'``."""

from __future__ import annotations

try:
    import dask.array  # noqa: F401
    import distributed  # noqa: F401
except ImportError as exc:           # pragma: no cover - the extra is part of the test set-up
    raise ImportError("autogemm.dask needs Dask: pip install 'autogemm[dask]'") from exc

from .cluster import AutogemmPlugin, local_cluster
from .products import gemm, matmul

__all__ = ["AutogemmPlugin", "gemm", "local_cluster", "matmul"]
