"""``CudaArray``: a row-major matrix in device memory that autogemm allocated on a CUDA stream, handed to
other libraries through DLPack (``torch.from_dlpack``, ``cupy.from_dlpack``, ``jax.dlpack.from_dlpack``
take it without a copy). The CUDA path's results for device operands are made as one."""

from __future__ import annotations

import contextlib

import numpy as np

from ...errors import DeviceError
from . import dlpack
from .context import CudaContext, DeviceMemory, as_stream


class CudaArray:
    """A C-ordered ``shape`` array of ``dtype`` in ``memory`` of ``ctx``'s device, written by what was
    enqueued on ``stream`` (a CUDA stream handle); the memory is freed in that stream's order once
    neither this object nor any DLPack consumer of it holds it."""

    def __init__(self, ctx: CudaContext, memory: DeviceMemory, shape: tuple[int, ...], dtype: np.dtype,
                 stream: int) -> None:
        self.ctx, self.memory, self.shape, self.dtype, self.stream = ctx, memory, shape, np.dtype(dtype), stream

    @classmethod
    def empty(cls, ctx: CudaContext, shape: tuple[int, ...], dtype: np.dtype, stream: int) -> CudaArray:
        """An uninitialized array, its memory allocated in the order of ``stream``."""
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return cls(ctx, ctx.allocate(nbytes, as_stream(stream)), tuple(shape), dtype, stream)

    @classmethod
    def from_host(cls, ctx: CudaContext, array: np.ndarray, stream: int = 0) -> CudaArray:
        """A copy of a host array on the device (the call waits for the copy)."""
        array = np.ascontiguousarray(array)
        made = cls.empty(ctx, array.shape, array.dtype, stream)
        ctx.order(as_stream(stream), ctx.stream)
        ctx.upload(made.memory, array)
        ctx.order(ctx.stream, as_stream(stream))
        return made

    @property
    def strides(self) -> tuple[int, ...]:
        """The strides in elements (C order)."""
        return tuple(int(np.prod(self.shape[i + 1:], dtype=np.int64)) for i in range(len(self.shape)))

    def get(self) -> np.ndarray:
        """The array on the host, once what its stream has enqueued is done."""
        out = np.empty(self.shape, self.dtype)
        self.ctx.order(as_stream(self.stream), self.ctx.stream)
        self.ctx.download(out.reshape(-1).view(np.uint8), self.memory)
        return out

    def __dlpack_device__(self) -> tuple[int, int]:
        return dlpack.CUDA, self.ctx.device.ordinal

    def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> object:
        """A DLPack capsule of the array, what its stream has enqueued ordered before the consumer's
        ``stream`` (DLPack's numbering: 1 the legacy default stream, -1 for no ordering)."""
        if copy:
            raise BufferError("a CudaArray is exported without copies (copy=True was asked)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"a CudaArray lives on CUDA device {self.ctx.device.ordinal}, not {dl_device}")
        if stream is not None and stream != -1:
            self.ctx.order(as_stream(self.stream), as_stream(stream))
        return dlpack.export(int(self.memory.pointer), self.shape, self.strides, self.dtype.name,
                             self.__dlpack_device__(), lambda: self)   # holds the array while it is used

    def __repr__(self) -> str:
        return f"CudaArray(shape={self.shape}, dtype={self.dtype}, device={self.ctx.device.ordinal})"

    def __del__(self) -> None:
        with contextlib.suppress(DeviceError, ImportError, AttributeError):   # e.g. at the interpreter's exit
            self.ctx.activate()
            self.memory.release()
