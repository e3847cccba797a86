"""GEMM on host operands shared among several targets by rows of C (``split.Split``): each device computes
its rows while the host's BLAS (numpy's) computes the host's rows in place.

RaijinCL's hybrid algorithm, for any number of devices: every device starts on its rows, each from a
thread of its own (its operands copied in, the product enqueued, its rows of C copied back:
``stream.DeviceStream`` does so tile by tile, overlapping the copies with the kernels; a device that
shares the host's memory reads and writes the arrays in place instead, ``mapped.MappedShare``), the host
computes its rows meanwhile, and the call returns when every share is in C. No callbacks (the seed
measured that they cost CPU time)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ..codelets.registry import KernelParams
from ..runtime.free_memory import check_host_memory
from .host import HOST, HostGemm, Target
from .mapped import MappedShare
from .split import Split
from .streaming import DeviceStream, share_b


def run_split(targets: Sequence[Target], split: Split, gemm: HostGemm,
              configs: Sequence[KernelParams | None] | None = None, edge: str = "auto") -> None:
    """Compute ``gemm`` with ``split`` over ``targets`` (device contexts and ``HOST``, one per share of
    the split); ``configs`` per target (None: the device's profile). Every device share is planned (its
    tiles fitted to the device's memory) before anything runs; each then streams on a thread of its own
    while the calling thread computes the host's rows; errors are raised once every share has stopped.
    What the product takes of the host's memory (a new result, copies, the host's rows) is checked
    against what it has before anything runs (``HostMemoryError``)."""
    m = gemm.shape[0]
    configs = list(configs) if configs is not None else [None] * len(targets)
    streams = [(MappedShare if target.device.shares_host_memory else DeviceStream)(target, gemm, rows, config, edge)
               for target, rows, config in zip(targets, split.rows(m), configs)
               if target != HOST and rows[1] > rows[0]]
    check_host_memory({"the result": gemm.c.nbytes if gemm.new_result else 0,
                       "copies of operands": sum(share.host_bytes for share in streams),
                       "the host's rows": sum(gemm.host_bytes(*rows) for target, rows in zip(targets, split.rows(m))
                                              if target == HOST)})
    errors: list[BaseException] = []

    def stream(share: DeviceStream | MappedShare) -> None:
        try:
            share.run()
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            errors.append(exc)

    shared = share_b([share for share in streams if isinstance(share, DeviceStream)])
    threads = [threading.Thread(target=stream, args=(share,), name="autogemm-stream") for share in streams]
    for thread in threads:
        thread.start()
    try:
        for target, (start, stop) in zip(targets, split.rows(m)):
            if target == HOST:
                gemm.on_host(start, stop)
    finally:
        for thread in threads:
            thread.join()
        if shared is not None:
            shared.release()
    if errors:
        raise errors[0]
