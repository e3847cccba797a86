"""Kernel arguments are set only where they changed since the kernel's last launch, and always where
they did: a plan enqueued on new offsets, buffers or scalars computes with them."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from autogemm.runtime.opencl.arguments import KernelArguments


class Recorder:
    """A stand-in kernel that records what is set on it."""

    def __init__(self, handle: int) -> None:
        self.int_ptr, self.calls = handle, []

    def set_args(self, *args):
        self.calls.append(("all", args))

    def set_arg(self, index, value):
        self.calls.append((index, value))


def test_only_changed_arguments_are_set(ctx):
    buffers = [cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE, 64) for _ in range(2)]
    kernel, other = Recorder(1), Recorder(2)
    arguments = KernelArguments()
    arguments.set(kernel, np.int32(3), buffers[0], np.float32(1.5))
    arguments.set(kernel, np.int32(3), buffers[0], np.float32(1.5))
    assert kernel.calls == [("all", (np.int32(3), buffers[0], np.float32(1.5)))]
    arguments.set(kernel, np.int32(4), buffers[0], np.float32(1.5))
    arguments.set(kernel, np.int32(4), buffers[1], np.float32(np.nan))
    arguments.set(kernel, np.int32(4), buffers[1], np.float32(np.nan))      # NaN is set again: not equal
    assert kernel.calls[1:] == [(0, np.int32(4)), (1, buffers[1]), (2, kernel.calls[3][1]), (2, kernel.calls[4][1])]
    arguments.set(other, np.int32(4))
    assert other.calls == [("all", (np.int32(4),))]                         # per kernel object
    arguments.clear()
    arguments.set(kernel, np.int32(4), buffers[1], np.float32(0))
    assert kernel.calls[-1][0] == "all"
