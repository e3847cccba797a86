"""``Enumerator``: the valid points of large search spaces, found on all the host's cores.

A space's points are checked one by one in Python (work-group, registers, local memory, images): the GEMM
spaces of several dtypes, half a million configurations each for skinny products, took a sizeable share
of a tune in one process, while the device waited. Each part of such a space's product is checked in a
process of its own, which builds the same space from the family's name and the facts it was built from.
Where processes cannot start (a program read from standard input, which spawned processes cannot import
again), the spaces are enumerated in this process."""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import replace

from ..codelets.registry import SpaceFacts, family_named
from ..codelets.space import Point, SearchSpace
from ..cores import usable_cores

log = logging.getLogger(__name__)

#: Spaces whose product holds fewer points than this are enumerated in this process (starting the
#: processes would cost more than it saves).
PARALLEL_FROM = 50_000
#: Processes at most.
MAX_PROCESSES = 16


def _valid_part(family: str, facts: SpaceFacts, start: int, stop: int) -> list[Point]:
    space = family_named(family).space(facts)
    return [] if space is None else space.valid_between(start, stop)


class Enumerator:
    """Enumerates spaces, the large ones in parallel processes (started on first need, ended by
    ``close``)."""

    def __init__(self, processes: int | None = None) -> None:
        self.processes = processes or min(MAX_PROCESSES, usable_cores())
        main = getattr(sys.modules.get("__main__"), "__file__", None)
        if main is not None and not os.path.exists(main):
            self.processes = 1          # spawned processes import the main program again, and cannot
        self._pool: Executor | None = None

    def enumerate(self, facts: SpaceFacts, spaces: list[SearchSpace]) -> None:
        """Find the valid points of ``spaces`` (each built by its family's ``space`` from ``facts``)."""
        large = [s for s in spaces if s.product_size >= PARALLEL_FROM] if self.processes > 1 else []
        if large and self._pool is None:
            self._pool = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"))
        parts = {}
        facts = replace(facts, device=replace(facts.device, cl_device=None))   # (facts, not handles, travel)
        for space in large:
            size = space.product_size
            bounds = [size * i // (4 * self.processes) for i in range(4 * self.processes + 1)]
            parts[id(space)] = [self._pool.submit(_valid_part, space.family, facts, start, stop)
                                for start, stop in zip(bounds, bounds[1:])]
        for space in spaces:
            if id(space) not in parts:
                space.points()
        for space in large:
            try:
                space.take_points([p for part in parts[id(space)] for p in part.result()])
            except Exception as exc:   # noqa: BLE001 - the processes could not run: this one enumerates
                log.info("enumerating search spaces in processes failed (%s); enumerating here", exc)
                self.processes = 1
                space.points()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Enumerator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
