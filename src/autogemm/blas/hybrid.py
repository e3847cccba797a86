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
from dataclasses import dataclass

import numpy as np

from ..accuracy import apply_op
from ..codelets.registry import KernelParams
from ..dtypes import Dtype
from ..runtime.context import DeviceContext
from .mapped import MappedShare
from .split import Split
from .stream import DeviceStream, share_b

#: The target that is the host's own BLAS rather than an OpenCL device.
HOST = "host"
Target = DeviceContext | str


def target_name(target: Target) -> str:
    """'host', or the device's name."""
    return HOST if target == HOST else target.device.name.strip()


@dataclass(frozen=True)
class HostGemm:
    """C = alpha op(A) op(B) + beta C on host arrays: ``a`` and ``b`` as stored (op given by their BLAS
    letters), ``c`` the row-major, contiguous m x n result (read only when beta is not 0)."""

    dt: Dtype
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    trans_a: str
    trans_b: str
    alpha: complex | float
    beta: complex | float

    @property
    def shape(self) -> tuple[int, int, int]:
        """(m, n, k)."""
        m, k = apply_op(self.a, self.trans_a).shape
        return m, apply_op(self.b, self.trans_b).shape[1], k

    def on_host(self, start: int, stop: int) -> None:
        """Rows [start, stop) of C by numpy's BLAS, in the compute type (float32 for 16-bit dtypes)."""
        if start == stop:
            return
        compute = self.dt.compute.numpy
        x = apply_op(self.a, self.trans_a)[start:stop].astype(compute, copy=False)
        y = apply_op(self.b, self.trans_b).astype(compute, copy=False)
        rows = self.c[start:stop]
        product = x @ y
        if self.beta == 0:
            rows[...] = self.alpha * product if self.alpha != 1 else product
        else:
            rows[...] = self.alpha * product + self.beta * rows.astype(compute)


def run_split(targets: Sequence[Target], split: Split, gemm: HostGemm,
              configs: Sequence[KernelParams | None] | None = None, edge: str = "auto") -> None:
    """Compute ``gemm`` with ``split`` over ``targets`` (device contexts and ``HOST``, one per share of
    the split); ``configs`` per target (None: the device's profile). Every device share is planned (its
    tiles fitted to the device's memory) before anything runs; each then streams on a thread of its own
    while the calling thread computes the host's rows; errors are raised once every share has stopped."""
    m = gemm.shape[0]
    configs = list(configs) if configs is not None else [None] * len(targets)
    streams = [(MappedShare if target.device.shares_host_memory else DeviceStream)(target, gemm, rows, config, edge)
               for target, rows, config in zip(targets, split.rows(m), configs)
               if target != HOST and rows[1] > rows[0]]
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
