"""``runtime.cuda.dlpack``: ``borrow`` reads another library's array through DLPack without a copy, and
``export`` lends memory of ours the same way: tried on numpy's arrays (the protocol is the same for
torch's and cupy's on a GPU, which the GPU tests take)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from autogemm.errors import ArgumentError
from autogemm.runtime.cuda.dlpack import CPU, borrow, export


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_an_array_is_borrowed_in_place_with_its_shape_strides_and_type(dtype):
    base = np.arange(60, dtype=dtype).reshape(6, 10)
    view = base[1:5, 2:9:2]                                # an offset and strides in both directions
    borrowed = borrow(view)
    assert borrowed.pointer == view.ctypes.data and borrowed.device == (CPU, 0) and borrowed.dtype == dtype
    assert borrowed.shape == (4, 4) and borrowed.strides == (10, 2)
    borrowed.release()
    borrowed.release()                                     # once only
    assert borrow(base.T).strides == (1, 10)


def test_the_owner_lives_until_the_memory_is_handed_back():
    array = np.ones((3, 3))
    alive = weakref.ref(array)
    borrowed = borrow(array)
    del array
    gc.collect()
    assert alive() is not None                              # the borrowed memory keeps its owner
    borrowed.release()
    gc.collect()
    assert alive() is None


def test_what_dlpack_cannot_lend_is_refused_with_a_reason():
    with pytest.raises(ArgumentError, match="no __dlpack__"):
        borrow([[1.0, 2.0]])
    with pytest.raises(ArgumentError, match="does not multiply"):
        borrow(np.ones(3, dtype=np.bool_))


class Lent:
    """Host memory lent through ``export`` as a transposed view; ``deleted`` counts the deleter's calls."""

    def __init__(self) -> None:
        self.array, self.deleted = np.arange(12, dtype=np.float64).reshape(3, 4), 0

    def __dlpack_device__(self):
        return CPU, 0

    def __dlpack__(self, *, stream=None, **_):
        return export(self.array.ctypes.data, (4, 3), (1, 4), "float64", (CPU, 0), self._deleted)

    def _deleted(self) -> None:
        self.deleted += 1


def test_exported_memory_is_taken_without_a_copy_and_handed_back_once():
    lent = Lent()
    view = np.from_dlpack(lent)
    assert np.shares_memory(view, lent.array) and (view == lent.array.T).all() and lent.deleted == 0
    del view
    gc.collect()
    assert lent.deleted == 1
    capsule = lent.__dlpack__()                          # never taken: its own destructor hands it back
    del capsule
    gc.collect()
    assert lent.deleted == 2
    with pytest.raises(ArgumentError, match="no element type"):
        export(lent.array.ctypes.data, (1,), (1,), "bool", (CPU, 0), lent._deleted)


@pytest.mark.gpu
@pytest.mark.cuda
def test_a_torch_tensor_on_the_gpu_is_borrowed_on_the_consumers_stream():
    try:
        import torch
    except Exception as exc:       # noqa: BLE001 - absent, or broken where it is installed
        pytest.skip(f"torch does not import here: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    if not torch.cuda.is_available():
        pytest.skip("torch with CUDA")
    from autogemm.runtime.cuda.dlpack import CUDA

    tensor = torch.arange(24, dtype=torch.float32, device="cuda").reshape(4, 6)[:, 1:5]
    borrowed = borrow(tensor, stream=torch.cuda.current_stream().cuda_stream)
    assert borrowed.pointer == tensor.data_ptr() and borrowed.device == (CUDA, tensor.device.index or 0)
    assert borrowed.shape == (4, 4) and borrowed.strides == (6, 1) and borrowed.dtype == "float32"
    borrowed.release()
