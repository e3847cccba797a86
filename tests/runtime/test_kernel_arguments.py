"""Kernel arguments are set only where they changed since the kernel's last launch, and always where
they did: a plan enqueued on new offsets, buffers or scalars computes with them, each converted to the
type its kernel's signature names."""

from __future__ import annotations

import math

import numpy as np
import pyopencl as cl

from autogemm.runtime.opencl.arguments import KernelArguments


class Recorder:
    """A stand-in kernel that records what is set on it."""

    def __init__(self) -> None:
        self.calls = []

    def set_args(self, *args):
        self.calls.append(("all", args))

    def set_arg(self, index, value):
        self.calls.append((index, value))


def test_only_changed_arguments_are_set_each_as_its_signature_types_it(ctx):
    buffers = [cl.Buffer(ctx.context, cl.mem_flags.READ_WRITE, 64) for _ in range(2)]
    kernel, other = Recorder(), Recorder()
    arguments = KernelArguments(np.float32)
    arguments.set(kernel, "imel", 3, buffers[0], 1.5, 7)
    arguments.set(kernel, "imel", 3, buffers[0], 1.5, 7)
    assert len(kernel.calls) == 1
    (what, first), = kernel.calls
    assert what == "all" and first == (3, buffers[0], 1.5, 7)
    assert [type(x) for x in first] == [np.int32, cl.Buffer, np.float32, np.int64]
    arguments.set(kernel, "imel", 4, buffers[0], 1.5, 7)
    arguments.set(kernel, "imel", 4, buffers[1], math.nan, 8)
    arguments.set(kernel, "imel", 4, buffers[1], float("nan"), 8)    # another NaN: set again, not equal
    indices = [call[0] for call in kernel.calls[1:]]
    assert indices == [0, 1, 2, 3, 2]
    assert type(kernel.calls[1][1]) is np.int32 and kernel.calls[2][1] is buffers[1]
    assert type(kernel.calls[4][1]) is np.int64 and kernel.calls[4][1] == 8
    arguments.set(other, "i", 4)
    assert other.calls == [("all", (4,))]                             # per kernel object
    arguments.clear()
    arguments.set(kernel, "imel", 4, buffers[1], 0.0, 8)
    assert kernel.calls[-1][0] == "all"
