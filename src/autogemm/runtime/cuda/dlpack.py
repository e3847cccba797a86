"""DLPack both ways. ``borrow``: the memory of another library's array (torch, cupy and jax tensors on a
GPU; numpy's on the host), without a copy: its address, shape, strides, element type and device, held
until ``Borrowed.release`` hands it back; what the CUDA path reads device operands through. ``export``:
memory of ours as a capsule another library takes without a copy (``from_dlpack``); how the CUDA path
hands its results back.

The protocol: ``x.__dlpack__(stream=...)`` gives a capsule named "dltensor" around a ``DLManagedTensor``;
the consumer renames it "used_dltensor" (so that the capsule's own destructor leaves it alone) and calls
the tensor's deleter when it is done with the memory. ``stream`` is the consumer's CUDA stream: the
producer makes its pending work on the array visible to it first."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...errors import ArgumentError

#: DLPack's device types this module names.
CPU, CUDA = 1, 2
#: DLPack's element type codes and bits, as numpy's type names (bfloat16 by its name: ml_dtypes').
_TYPES = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64", (1, 8): "uint8",
          (2, 16): "float16", (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16",
          (5, 64): "complex64", (5, 128): "complex128"}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _ManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ManagedTensor))
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_ManagedTensor._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]

_capsules = ctypes.pythonapi
_capsules.PyCapsule_IsValid.restype = ctypes.c_int
_capsules.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsules.PyCapsule_GetPointer.restype = ctypes.c_void_p
_capsules.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsules.PyCapsule_SetName.restype = ctypes.c_int
_capsules.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsules.PyCapsule_New.restype = ctypes.py_object
_capsules.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CapsuleDestructor]
# The same two functions on a capsule being destroyed, by address (a Python reference to it there would
# bring it back to life).
_dying_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _capsules))
_dying_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _capsules))
_NAME = b"dltensor"
#: DLPack's element type of each numpy type name.
_CODES = {name: code_bits for code_bits, name in _TYPES.items()}


@dataclass
class Borrowed:
    """Another library's array as its memory: ``pointer`` (of the first element), ``shape``, ``strides``
    in elements, ``dtype`` (numpy's name), ``device`` (DLPack's type and number). The memory stays
    valid until ``release``."""

    pointer: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    device: tuple[int, int]
    _managed: ctypes.POINTER(_ManagedTensor) | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def release(self) -> None:
        """Hand the memory back to its owner (once; later calls do nothing)."""
        with self._lock:
            managed, self._managed = self._managed, None
        if managed and managed.contents.deleter:
            managed.contents.deleter(managed)

    def __del__(self) -> None:
        self.release()


def borrow(array: object, stream: int | None = None) -> Borrowed:
    """The memory of ``array`` (an object with ``__dlpack__``), its pending work made visible on the CUDA
    ``stream`` first where it lives on a GPU; ``ArgumentError`` for an object without DLPack or of an
    element type DLPack does not name here."""
    export = getattr(array, "__dlpack__", None)
    if export is None:
        raise ArgumentError(f"{type(array).__name__} does not export DLPack (no __dlpack__)")
    if stream == 0:              # DLPack names CUDA's legacy default stream 1 (0 is refused as ambiguous)
        stream = 1
    capsule = export() if stream is None else export(stream=stream)
    if not _capsules.PyCapsule_IsValid(capsule, b"dltensor"):
        raise ArgumentError(f"{type(array).__name__}.__dlpack__ gave no unused DLPack tensor")
    managed = ctypes.cast(_capsules.PyCapsule_GetPointer(capsule, b"dltensor"), ctypes.POINTER(_ManagedTensor))
    _capsules.PyCapsule_SetName(capsule, b"used_dltensor")        # it is ours to delete now
    tensor = managed.contents.dl_tensor
    dtype = _TYPES.get((tensor.dtype.code, tensor.dtype.bits)) if tensor.dtype.lanes == 1 else None
    borrowed = Borrowed(0, (), (), dtype or "", (tensor.device.device_type, tensor.device.device_id), managed)
    if dtype is None:
        borrowed.release()
        raise ArgumentError(f"a DLPack element type of code {tensor.dtype.code}, {tensor.dtype.bits} bits and "
                            f"{tensor.dtype.lanes} lanes, which autogemm does not multiply")
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if tensor.strides:
        strides = tuple(tensor.strides[i] for i in range(tensor.ndim))
    else:                                              # no strides: compact and row-major
        strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(tensor.ndim))
    borrowed.pointer = (tensor.data or 0) + tensor.byte_offset
    borrowed.shape, borrowed.strides = shape, strides
    return borrowed


#: What each exported tensor keeps alive until its consumer calls the deleter, by the tensor's address.
_exported: dict[int, tuple] = {}
_exported_lock = threading.Lock()


@_Deleter
def _delete_exported(managed: ctypes.POINTER(_ManagedTensor)) -> None:
    with _exported_lock:
        kept = _exported.pop(ctypes.addressof(managed.contents), None)
    if kept is not None:
        kept[-1]()


@_CapsuleDestructor
def _destroy_capsule(capsule: int) -> None:
    """A capsule no consumer took (still named "dltensor") deletes its tensor itself."""
    if _dying_valid(capsule, _NAME):
        managed = ctypes.cast(_dying_pointer(capsule, _NAME), ctypes.POINTER(_ManagedTensor))
        _delete_exported(managed)


def export(pointer: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: str, device: tuple[int, int],
           on_delete: Callable[[], None]) -> object:
    """A DLPack capsule of the array at ``pointer`` (``shape``, ``strides`` in elements, ``dtype`` a numpy
    type name, ``device`` DLPack's type and number); ``on_delete`` is called once when its consumer
    is done with it (or when no consumer took it)."""
    if dtype not in _CODES:
        raise ArgumentError(f"DLPack has no element type for {dtype}")
    code, bits = _CODES[dtype]
    dims, steps = (ctypes.c_int64 * len(shape))(*shape), (ctypes.c_int64 * len(shape))(*strides)
    managed = _ManagedTensor()
    managed.dl_tensor = _Tensor(pointer, _Device(*device), len(shape), _DataType(code, bits, 1), dims, steps, 0)
    managed.deleter = _delete_exported
    with _exported_lock:
        _exported[ctypes.addressof(managed)] = (managed, dims, steps, on_delete)
    return _capsules.PyCapsule_New(ctypes.addressof(managed), _NAME, _destroy_capsule)
