"""Out-of-place transpose (and conjugation, and plain copy) of row-major storage: the ``pack`` helper
with no padding, one work-group per tile of the result, one layer of work-groups per matrix of a stack."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..codelets import helpers
from ..codelets.kernel import round_up
from ..dtypes import Dtype
from ..errors import ShapeError
from ..runtime.opencl import commands as ocl
from ..runtime.opencl.context import DeviceContext
from .problem import INT32_MAX, addressable


class Storage(NamedTuple):
    """Where the matrices of one side lie: the buffer, the first element, the leading dimension and the
    elements between the matrices of a stack."""

    buffer: ocl.Buffer
    offset: int
    ld: int
    stride: int


def enqueue_transpose(ctx: DeviceContext, dt: Dtype, rows: int, cols: int, layers: int, src: Storage, dst: Storage,
                      transpose: bool, conjugate: bool, wait_for: list[ocl.Event] | None = None) -> ocl.Event:
    """Write the ``rows`` x ``cols`` matrices dst = op(src) of ``layers`` stacked products, op a transpose
    (src is then stored ``cols`` x ``rows``) or not, conjugating complex elements when asked; ``ShapeError``
    where an index within one matrix, or the stride between two, would pass the kernel's 32-bit indices
    (offsets are 64-bit)."""
    for name, side, height, width in (("source", src, cols if transpose else rows, rows if transpose else cols),
                                      ("result", dst, rows, cols)):
        span = (height - 1) * side.ld + width if height and width else 0
        if span > addressable(dt) or side.stride > INT32_MAX:
            raise ShapeError(f"a {name} matrix spans {span} elements, {side.stride} from the next, past the "
                             "transpose's 32-bit indexing")
    source = helpers.pack(dt, transpose, conjugate and dt.is_complex)
    kernel = ctx.kernel(source.source, source.name)
    i32, i64 = np.int32, np.int64
    kernel.set_args(i32(rows), i32(cols), src.buffer, i64(src.offset), i32(src.ld), dst.buffer, i64(dst.offset),
                    i32(rows), i32(cols), i32(dst.ld), i32(src.stride), i32(dst.stride))
    size = (round_up(cols, helpers.TILE), round_up(rows, helpers.TILE), layers)
    return ocl.launch(ctx.queue, kernel, size, (helpers.TILE, helpers.TILE, 1), wait_for=wait_for)
