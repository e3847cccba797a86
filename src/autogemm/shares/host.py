"""A product on host arrays (``HostGemm``), which every share of it reads and writes, and the host's own
BLAS as one of the targets a product is shared among (``HOST``: numpy's, computing its rows in place)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..accuracy import apply_op
from ..dtypes import Dtype
from ..runtime.opencl.context import DeviceContext

#: The target that is the host's own BLAS rather than an OpenCL device.
HOST = "host"
#: Seconds the host is left idle before a device's calls from numpy to numpy are timed: numpy's BLAS
#: threads spin for a while after each of its products, and took the cores from the copy threads (such a
#: call right after a numpy product took far longer than one after a pause).
HOST_SETTLE_SECONDS = 0.3
Target = DeviceContext | str


def target_name(target: Target) -> str:
    """'host', or the device's name."""
    return HOST if target == HOST else target.device.name.strip()


@dataclass(frozen=True)
class HostGemm:
    """C = alpha op(A) op(B) + beta C on host arrays: ``a`` and ``b`` as stored (op given by their BLAS
    letters), ``c`` the row-major, contiguous m x n result (read only when beta is not 0); ``new_result``:
    ``c`` was made for this product and nothing is written in it yet (the system gives its memory as
    it is first written, so it counts among what the product takes of the host's)."""

    dt: Dtype
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    trans_a: str
    trans_b: str
    alpha: complex | float
    beta: complex | float
    new_result: bool = False

    @property
    def shape(self) -> tuple[int, int, int]:
        """(m, n, k)."""
        m, k = apply_op(self.a, self.trans_a).shape
        return m, apply_op(self.b, self.trans_b).shape[1], k

    def host_bytes(self, start: int, stop: int) -> int:
        """The most host memory ``on_host(start, stop)`` allocates: the product of its rows, and two more
        of its size where alpha or beta is applied; a conjugated operand's copy; its operands in the
        compute type where they are of another."""
        if stop <= start:
            return 0
        m, n, k = self.shape
        size = np.dtype(self.dt.compute.numpy).itemsize
        product = (stop - start) * n * size       # (none where it is computed into C: counted all the same)
        scaled = 2 * product if self.alpha != 1 or self.beta != 0 else 0
        conjugated = sum(x.nbytes for x, op in ((self.a, self.trans_a), (self.b, self.trans_b)) if op == "C")
        converted = 0 if self.dt.compute is self.dt else ((stop - start) * k + k * n) * size
        return product + scaled + conjugated + converted

    def on_host(self, start: int, stop: int) -> None:
        """Rows [start, stop) of C by numpy's BLAS, in the compute type (float32 for 16-bit dtypes)."""
        if start == stop:
            return
        rows = self.c[start:stop]
        if self.alpha == 0 or self.a.shape[0] == 0 or self.a.shape[1] == 0:
            # no product (BLAS's quick return: NaN in A or B does not reach C): C scaled by beta alone
            if self.beta == 0:
                rows[...] = 0
            elif self.beta != 1:
                rows *= self.beta
            return
        compute = self.dt.compute.numpy
        x = apply_op(self.a, self.trans_a)[start:stop].astype(compute, copy=False)
        y = apply_op(self.b, self.trans_b).astype(compute, copy=False)
        if self.beta == 0 and rows.dtype == compute:      # straight into C, scaled there
            np.matmul(x, y, out=rows)
            if self.alpha != 1:
                rows *= self.alpha
            return
        product = x @ y
        if self.beta == 0:
            rows[...] = self.alpha * product if self.alpha != 1 else product
        else:
            rows[...] = self.alpha * product + self.beta * rows.astype(compute)
