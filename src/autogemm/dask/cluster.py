"""Dask workers on autogemm's devices: ``AutogemmPlugin`` pins each worker to one OpenCL device and warms
its plans; ``local_cluster`` starts one worker process per GPU of this machine (or per CPU device where
there is none)."""

from __future__ import annotations

import os

import numpy as np
from distributed import Client, LocalCluster, Worker, WorkerPlugin

from ..runtime.discovery import DEVICE_ENV, devices
from .blocks import block_product, worker_device

#: Threads of a worker: block products on one device run one after another on its queue, and a second
#: thread moves the next blocks in and out meanwhile.
THREADS_PER_WORKER = 2


class AutogemmPlugin(WorkerPlugin):
    """Pins each worker to one of ``slots`` (devices as ``"P:D"``, taken by the worker's number in its
    cluster, else the first; None: each worker keeps ``AUTOGEMM_DEVICE`` or the default device) and builds
    the plans of a first product there, so the first block products do not wait for compilers."""

    name = "autogemm"

    def __init__(self, slots: list[str] | None = None) -> None:
        self.slots = slots

    def setup(self, worker: Worker) -> None:
        if self.slots:
            number = worker.name if isinstance(worker.name, int) else 0
            os.environ[DEVICE_ENV] = self.slots[number % len(self.slots)]
            worker_device.cache_clear()
        if worker_device() is not None:
            a = np.ones((64, 64), np.float32)
            block_product(a, a, trans_a="N", trans_b="N", alpha=1.0)


def local_cluster(n_workers: int | None = None, threads_per_worker: int = THREADS_PER_WORKER,
                  **kwargs: object) -> LocalCluster:
    """A ``distributed.LocalCluster`` of worker processes, one per GPU of this machine (or per CPU
    device where there is none; ``n_workers`` sets another number, the devices taken in turn), each
    pinned to its device by ``AutogemmPlugin``. Other arguments go to ``LocalCluster``."""
    listed = devices()
    gpus = [d for d in listed if d.is_gpu]
    chosen = gpus or [d for d in listed if d.device_type == "CPU"] or list(listed)
    slots = [f"{d.platform_index}:{d.device_index}" for d in chosen] or None
    cluster = LocalCluster(n_workers=n_workers or max(1, len(chosen)), threads_per_worker=threads_per_worker,
                           processes=True, **kwargs)
    with Client(cluster) as client:
        client.register_plugin(AutogemmPlugin(slots))
    return cluster
