"""Where the blocks of C of a product go when Dask's workers are threads of this process: in even,
contiguous shares, worker by worker in the order of C's blocks (a worker gets whole rows of blocks
where the counts allow, so it uploads fewer panels of A). Dask places a task where most of its inputs
lie, which between threads of one process means nothing: it often put more blocks of C on one worker
than on another, whose extra blocks then set the product's time.

The shares are Dask annotations on the block tasks (``spread``), worked out when the graph is computed,
over the workers pinned to this process's devices then; elsewhere (worker processes, a scheduler in
another process, no cluster) Dask decides. The restrictions are loose: a block whose worker is lost
runs on another."""

from __future__ import annotations

import functools

from .tasks import workers_in_process


def spread(grid: tuple[int, int]) -> dict[str, object]:
    """The annotations of a product's block tasks, C's blocks being ``grid`` (rows, columns) of them:
    for ``dask.annotate`` around the layer that makes them."""
    return {"workers": functools.partial(worker_of, grid=grid), "allow_other_workers": True}


def worker_of(key: tuple, grid: tuple[int, int]) -> list[str] | None:
    """The worker of block (``key[1]``, ``key[2]``) of a product of ``grid`` blocks, where two workers or
    more are threads of this process, pinned to its devices (the block's rank among C's in row order,
    times the workers, over the blocks); None where Dask is to decide."""
    workers = workers_in_process()
    if len(workers) < 2:
        return None
    rank = key[1] * grid[1] + key[2]
    return [workers[rank * len(workers) // (grid[0] * grid[1])]]
