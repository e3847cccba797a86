"""Dask workers on autogemm's devices: ``AutogemmPlugin`` pins each worker to one OpenCL device and warms
its plans; ``local_cluster`` starts one worker per GPU of this machine (or per CPU device where there is
none)."""

from __future__ import annotations

import numpy as np
from distributed import Client, LocalCluster, Worker, WorkerPlugin

from ..api import gemm
from ..runtime.opencl.discovery import cpu_devices, devices
from .tasks import pin_worker, slot_device, unpin_worker

#: Threads of a worker: their block products take turns on its device (``blocks.device_turn``), one
#: moving its blocks in and out while the other's kernels run.
THREADS_PER_WORKER = 2


class AutogemmPlugin(WorkerPlugin):
    """Pins each worker to one of ``slots`` (devices as ``"P:D"``, taken by the worker's number in its
    cluster, else the first; None: each worker keeps ``AUTOGEMM_DEVICE`` or the default device) and builds
    the plans of a first product there, so the first block products do not wait for compilers. Workers
    that are threads of one process each keep their own device."""

    name = "autogemm"

    def __init__(self, slots: list[str] | None = None) -> None:
        self.slots = slots

    def setup(self, worker: Worker) -> None:
        number = worker.name if isinstance(worker.name, int) else 0
        slot = self.slots[number % len(self.slots)] if self.slots else None
        if slot is not None:
            pin_worker(worker.address, slot)
        device = slot_device(slot)
        if device is not None:
            a = np.ones((64, 64), np.float32)
            gemm(a, a, device=device)

    def teardown(self, worker: Worker) -> None:
        unpin_worker(worker.address)


def local_cluster(n_workers: int | None = None, threads_per_worker: int = THREADS_PER_WORKER,
                  processes: bool = False, **kwargs: object) -> LocalCluster:
    """A ``distributed.LocalCluster`` of workers, one per GPU of this machine (or per CPU device where
    there is none, less a CPU driver that builds nothing beside one that builds; ``n_workers`` sets
    another number, the devices taken in turn), each pinned to its device by ``AutogemmPlugin``. The
    workers are threads of this process unless ``processes``: block products release the GIL while
    devices and copies work, and threads hand each other blocks without copying them (a block product
    through a worker process took far longer than through a worker thread). Other arguments go to ``LocalCluster``."""
    listed = devices()
    gpus = [d for d in listed if d.is_gpu]
    chosen = gpus or cpu_devices(listed) or list(listed)
    slots = [d.slot for d in chosen] or None
    cluster = LocalCluster(n_workers=n_workers or max(1, len(chosen)), threads_per_worker=threads_per_worker,
                           processes=processes, **kwargs)
    with Client(cluster) as client:
        client.register_plugin(AutogemmPlugin(slots))
    return cluster
