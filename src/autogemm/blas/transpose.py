"""Out-of-place transpose (and conjugation, and plain copy) of row-major storage: the ``pack`` helper
with no padding, one work-group per tile of the result, one layer of work-groups per matrix of a stack."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyopencl as cl

from ..codelets import helpers
from ..codelets.kernel import round_up
from ..dtypes import Dtype
from ..errors import ShapeError
from ..runtime.context import DeviceContext
from .problem import INT32_MAX


class Storage(NamedTuple):
    """Where the matrices of one side lie: the buffer, the first element, the leading dimension and the
    elements between the matrices of a stack."""

    buffer: cl.Buffer
    offset: int
    ld: int
    stride: int


def enqueue_transpose(ctx: DeviceContext, dt: Dtype, rows: int, cols: int, layers: int, src: Storage, dst: Storage,
                      transpose: bool, conjugate: bool, wait_for: list[cl.Event] | None = None) -> cl.Event:
    """Write the ``rows`` x ``cols`` matrices dst = op(src) of ``layers`` stacked products, op a transpose
    (src is then stored ``cols`` x ``rows``) or not, conjugating complex elements when asked; ``ShapeError``
    where an index would pass the kernel's int32 range."""
    for name, side, height, width in (("source", src, cols if transpose else rows, rows if transpose else cols),
                                      ("result", dst, rows, cols)):
        last = side.offset + (layers - 1) * side.stride + (height - 1) * side.ld + width - 1
        if last > INT32_MAX:
            raise ShapeError(f"the {name} reaches element {last} of its buffer, past the transpose's int32 range")
    source = helpers.pack(dt, transpose, conjugate and dt.is_complex)
    kernel = ctx.kernel(source.source, source.name)
    i32 = np.int32
    kernel.set_args(i32(rows), i32(cols), src.buffer, i32(src.offset), i32(src.ld), dst.buffer, i32(dst.offset),
                    i32(rows), i32(cols), i32(dst.ld), i32(src.stride), i32(dst.stride))
    size = (round_up(cols, helpers.TILE), round_up(rows, helpers.TILE), layers)
    return cl.enqueue_nd_range_kernel(ctx.queue, kernel, size, (helpers.TILE, helpers.TILE, 1), wait_for=wait_for)
