"""A product's blocks written in place into one result array, where Dask's workers are threads of the
caller's process, so that ``compute()`` hands that array over instead of concatenating copies of the
blocks (for a large product on several GPUs, concatenating them on one thread of the host took longer
than the product).

Each block task ``claim``s its place in a result array known by the product's key, made by the first
task to need it; ``assemble``, the last step of ``compute()`` (``InPlaceProduct``), hands that array over
when every block lies at its place in it, else concatenates them as dask does. A place is written at
most once: a task that finds its place claimed (a rerun, or a second ``compute()`` of the same graph)
takes the next result array that has it free, or a new one, so an array already handed to a caller is
never written again."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import dask
import dask.array as da
import numpy as np
from dask.array.optimization import optimize


@dataclass
class _Result:
    """One result array of a product, known by the array that owns its memory (held by the blocks'
    views of it, not here: views of views keep only the owner), and the places claimed in it, by their
    first row and column."""

    owner: weakref.ref
    shape: tuple[int, int]
    dtype: np.dtype
    claimed: set[tuple[int, int]] = field(default_factory=set)

    def array(self) -> np.ndarray | None:
        """The result array, while its memory lives."""
        owner = self.owner()
        return None if owner is None else np.ndarray(self.shape, self.dtype, buffer=owner)


def memory_owner(x: np.ndarray) -> np.ndarray:
    """The array at the root of ``x``'s chain of views."""
    while isinstance(x.base, np.ndarray):
        x = x.base
    return x


#: How the addresses of workers that are threads of the caller's process begin.
INPROC = "inproc://"
_results: dict[str, list[_Result]] = {}
_lock = threading.Lock()


def in_process() -> bool:
    """Whether the task running this shares its process with the caller of ``compute()``: outside a
    distributed worker (dask's local schedulers), or in one reached in-process (a ``LocalCluster`` of
    threads, as ``local_cluster`` starts)."""
    try:
        from distributed import get_worker

        return get_worker().address.startswith(INPROC)
    except ValueError:                      # not in a worker
        return True


def claim(key: str, shape: tuple[int, int], dtype: np.dtype, row: int, col: int,
          allocate: Callable[[tuple[int, int], np.dtype], np.ndarray]) -> np.ndarray:
    """A result array of ``key`` (``shape``, ``dtype``) in which the place of the block from (``row``,
    ``col``) on is now claimed: the oldest such array where it is free, else a new one from ``allocate``
    (the block's view of it holds it; nothing here does)."""
    with _lock:
        results = _results.setdefault(key, [])
        results[:] = [r for r in results if r.owner() is not None]
        for result in results:
            array = result.array()
            if array is not None and (row, col) not in result.claimed:
                result.claimed.add((row, col))
                return array
        array = allocate(shape, np.dtype(dtype))
        results.append(_Result(weakref.ref(memory_owner(array)), shape, np.dtype(dtype), {(row, col)}))
        return array


def assemble(blocks: list[list[np.ndarray]], key: str, chunks: tuple[tuple[int, ...], tuple[int, ...]]
             ) -> np.ndarray:
    """The computed product from its blocks (``blocks[i][j]``, of ``chunks``): the result array of ``key``
    they all lie in at their places, handed over (and forgotten here: nothing writes it again), else
    dask's concatenation of them."""
    with _lock:
        for result in _results.get(key, []):
            array = result.array()
            if array is not None and _tiled_by(array, blocks, chunks):
                _results[key].remove(result)
                if not _results[key]:
                    del _results[key]
                return array
    return da.core.finalize(blocks)


def _tiled_by(array: np.ndarray, blocks: list[list[np.ndarray]], chunks: tuple[tuple[int, ...], ...]) -> bool:
    """Whether ``blocks`` are views of ``array`` at the places ``chunks`` give them."""
    if array.shape != (sum(chunks[0]), sum(chunks[1])) or len(blocks) != len(chunks[0]):
        return False
    start, (row_step, col_step) = array.__array_interface__["data"][0], array.strides
    row = 0
    for row_blocks, rows in zip(blocks, chunks[0]):
        if len(row_blocks) != len(chunks[1]):
            return False
        col = 0
        for block, cols in zip(row_blocks, chunks[1]):
            if not (isinstance(block, np.ndarray) and block.shape == (rows, cols) and block.strides == array.strides
                    and block.__array_interface__["data"][0] == start + row * row_step + col * col_step):
                return False
            col += cols
        row += rows
    return True


class InPlaceProduct(da.Array):
    """A dask array of a product whose blocks ``claim`` their places in one result array of ``key``:
    computing it hands that array over (``assemble``). Operations on it give ordinary dask arrays."""

    def __new__(cls, product: da.Array, key: str) -> InPlaceProduct:
        self = super().__new__(cls, product.dask, product.name, product.chunks, meta=product._meta)
        self.result_key = key
        return self

    def __dask_postcompute__(self) -> tuple[Callable, tuple]:
        return assemble, (self.result_key, self.chunks)

    @staticmethod
    def __dask_optimize__(dsk: Mapping, keys: Sequence, **kwargs: object) -> Mapping:
        """dask.array's optimizations but the fusion of tasks into chains, which would drop the block
        tasks' annotations (``placement``); the block tasks fuse with nothing that costs a hand-over."""
        with dask.config.set({"optimization.fuse.active": False}):
            return optimize(dsk, keys, **kwargs)
