"""``DeviceReference``: a float64 reference kept on the device, against which results are checked there.

Copying a 4096 x 4096 result to the host and comparing it in numpy takes longer than timing the kernel;
the tuner checks thousands of candidates, so it compares on the device instead: one reduction kernel sums
|C - R|^2 and counts non-finite outputs, and the host adds the partial sums. R is the float64 (complex128)
reference rounded to the result's dtype; that rounding adds at most half an ulp per element, far below
every dtype's tolerance."""

from __future__ import annotations

import math
from concurrent.futures import Future

import numpy as np

from ...codelets import helpers
from ...dtypes import Dtype
from ...runtime.opencl import commands as ocl
from ...runtime.opencl.context import DeviceContext

#: Work-groups of the reduction at most (each work-item strides over the elements).
MAX_GROUPS = 1024


class DeviceReference:
    """The reference result of one problem on the device; ``compare`` checks a result buffer against it.
    The reference of ``size`` elements may still be computing (a ``Future``: the host's float64 product of
    large operands takes seconds, done while the first candidates build); the first ``compare`` waits
    for it."""

    def __init__(self, ctx: DeviceContext, dtype: Dtype, reference: np.ndarray | Future[np.ndarray],
                 size: int) -> None:
        self.ctx, self.dtype, self.size = ctx, dtype, size
        self._pending: np.ndarray | Future[np.ndarray] | None = reference
        self.reference: ocl.Buffer | None = None
        self.norm = 1.0
        output = dtype.output
        self.groups = max(1, min(MAX_GROUPS, math.ceil(self.size / helpers.RESIDUAL_GROUP)))
        self.partial_host = np.empty(self.groups, np.dtype(dtype.real_numpy))
        self.bad_host = np.empty(self.groups, np.int32)
        self.partial = ocl.device_buffer(ctx.context, self.partial_host.nbytes)
        self.bad = ocl.device_buffer(ctx.context, self.bad_host.nbytes)
        src = helpers.residual(output)
        self.kernel = ctx.kernel(src.source, src.name, src.options)

    def compare(self, result: ocl.Buffer) -> tuple[float, int]:
        """(||C - R|| / ||R||, number of non-finite elements of C) for the C stored densely in ``result``;
        the error is inf when any element is not finite."""
        queue = self.ctx.queue
        self.kernel.set_args(np.int32(self.size), result, self._uploaded(), self.partial, self.bad)
        group = helpers.RESIDUAL_GROUP
        ocl.launch(queue, self.kernel, (self.groups * group,), (group,))
        ocl.copy(queue, self.partial_host, self.partial)
        ocl.copy(queue, self.bad_host, self.bad).wait()
        unwritten = int(self.bad_host.sum())
        if unwritten:
            return math.inf, unwritten
        error = math.sqrt(float(self.partial_host.astype(np.float64).sum())) / self.norm
        return (error if math.isfinite(error) else math.inf), 0

    def _uploaded(self) -> ocl.Buffer:
        """The reference on the device, uploaded the first time (once it is computed)."""
        if self.reference is None:
            pending, self._pending = self._pending, None
            reference = pending.result() if isinstance(pending, Future) else pending
            self.norm = float(np.linalg.norm(reference)) or 1.0
            rounded = np.ascontiguousarray(reference, dtype=self.dtype.output.scalar_numpy)
            self.reference = ocl.buffer_of(self.ctx.context, rounded, read_only=True)
        return self.reference

    def release(self) -> None:
        for buf in (self.reference, self.partial, self.bad):
            if buf is not None:
                buf.release()
