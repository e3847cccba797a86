"""``gemm`` and ``matmul`` on CUDA tensors (``api.cuda_tensors``): on the CPU, how they are told apart from
host arrays and the refusals that come before anything is read or written; on a Hopper GPU, products of
device views (transposed, offset, strided, column-major C) against float64, each dtype of the CUDA path,
with C poisoned where beta 0 must not read it, and the results handed back through DLPack."""

from __future__ import annotations

import numpy as np
import pytest

import autogemm
from autogemm.accuracy import Reference, apply_op, random_matrix
from autogemm.blas.defaults import CUDA_DEFAULTS
from autogemm.dtypes import DTYPES
from autogemm.engine.routes.cuda_tensors import is_cuda_tensor
from autogemm.errors import ArgumentError, ShapeError
from autogemm.runtime.cuda import dlpack


class HostAsCuda:
    """A host array that says it lies on CUDA device ``ordinal`` (what reaches the checks on the CPU)."""

    def __init__(self, array: np.ndarray, ordinal: int = 0) -> None:
        self.array, self.ordinal, self.shape = array, ordinal, array.shape

    def __dlpack_device__(self):
        return dlpack.CUDA, self.ordinal

    def __dlpack__(self, *, stream=None, **_):
        steps = tuple(s // self.array.itemsize for s in self.array.strides)
        return dlpack.export(self.array.ctypes.data, self.array.shape, steps, self.array.dtype.name,
                             self.__dlpack_device__(), lambda: self.array)


def test_cuda_tensors_are_told_apart_from_host_arrays():
    host = np.ones((2, 2))
    assert not is_cuda_tensor(host) and not is_cuda_tensor([[1.0]]) and is_cuda_tensor(HostAsCuda(host))


def test_refusals_come_before_anything_is_written():
    a = HostAsCuda(np.ones((4, 4)))
    c = np.full((4, 4), 7.0)
    with pytest.raises(ArgumentError, match="pass every operand on the GPU"):
        autogemm.gemm(a, np.ones((4, 4)), c)
    with pytest.raises(ArgumentError, match="on the CUDA path; leave backend"):
        autogemm.gemm(a, a, backend="opencl")
    with pytest.raises(ArgumentError, match="wait_for is an option of the OpenCL path"):
        autogemm.gemm(a, a, wait_for=[object()])
    with pytest.raises(ArgumentError, match="stream is for CUDA tensors"):
        autogemm.gemm(np.ones((4, 4)), np.ones((4, 4)), stream=5)
    with pytest.raises(ArgumentError):          # no CUDA here (or no device 9): refused, never read
        autogemm.gemm(HostAsCuda(np.ones((4, 4)), 9), HostAsCuda(np.ones((4, 4)), 9))
    with pytest.raises(ShapeError, match="matrices"):
        autogemm.matmul(HostAsCuda(np.ones((2, 4, 4))), a)
    with pytest.raises(ShapeError, match="contiguous"):            # strided along both axes
        autogemm.gemm(HostAsCuda(np.ones((4, 8))[:, ::2]), a)
    assert (c == 7.0).all()


def _hopper_context():
    from autogemm.runtime.cuda import cuda_context, cuda_devices, cuda_missing

    hopper = [] if cuda_missing() else [d for d in cuda_devices() if d.capability == (9, 0)]
    if not hopper:
        pytest.skip("an sm_90 GPU with the CUDA bindings")
    return cuda_context(hopper[0])


class DeviceView:
    """A view of a ``CudaArray``'s memory with its own shape, strides (elements) and element offset, as a
    library's sliced or transposed tensor would be."""

    def __init__(self, base, shape, strides, offset: int = 0) -> None:
        self.base, self.shape, self.strides, self.offset = base, shape, strides, offset

    def __dlpack_device__(self):
        return self.base.__dlpack_device__()

    def __dlpack__(self, *, stream=None, **_):
        pointer = int(self.base.memory.pointer) + self.offset * self.base.dtype.itemsize
        return dlpack.export(pointer, self.shape, self.strides, self.base.dtype.name, self.__dlpack_device__(),
                             lambda: self.base)


def _on_device(ctx, host: np.ndarray, layout: str, offset: int = 0) -> DeviceView:
    """``host`` on the device: 'row' major, 'col' major or 'strided' (the first columns of a matrix twice
    as wide), ``offset`` elements into its memory (TMA's alignment lost for an odd one)."""
    from autogemm.runtime.cuda.arrays import CudaArray

    rows, cols = host.shape
    if layout == "col":
        stored, strides = host.T, (1, rows)
    elif layout == "strided":
        stored = np.zeros((rows, 2 * cols), host.dtype)
        stored[:, :cols] = host
        strides = (2 * cols, 1)
    else:
        stored, strides = host, (cols, 1)
    flat = np.concatenate([np.zeros(offset, host.dtype), np.ascontiguousarray(stored).reshape(-1)])
    return DeviceView(CudaArray.from_host(ctx, flat), host.shape, strides, offset)


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", sorted(CUDA_DEFAULTS))
@pytest.mark.parametrize("trans_a,trans_b,layout", [("N", "N", "row"), ("T", "N", "col"), ("N", "T", "strided"),
                                                    ("T", "C", "row")])
def test_device_views_multiply_in_place_against_float64(key, trans_a, trans_b, layout):
    ctx = _hopper_context()
    dt = DTYPES[key]
    if trans_b == "C" and not dt.is_complex:
        trans_b = "T"
    rng = np.random.default_rng(len(key) + ord(trans_a))
    m, n, k = 131, 97, 77
    a = random_matrix(rng, dt, (m, k) if trans_a == "N" else (k, m))
    b = random_matrix(rng, dt, (k, n) if trans_b == "N" else (n, k))
    reference = Reference(dt, apply_op(a, trans_a), apply_op(b, trans_b), rng)
    poisoned = np.full((m, n), np.nan, dt.output.numpy)          # beta 0: written, never read
    c = _on_device(ctx, poisoned, "col" if layout == "col" else "row", offset=3)
    got = autogemm.gemm(_on_device(ctx, a, layout, offset=1), _on_device(ctx, b, layout), c,
                        trans_a=trans_a, trans_b=trans_b, precision=dt.precision or None)
    assert got is c
    whole = c.base.get()[3:]
    result = whole.reshape(n, m).T if layout == "col" else whole.reshape(m, n)
    error, ok = reference.check(result)
    assert ok, f"{key} {trans_a}{trans_b} {layout}: error {error:.2e}"


@pytest.mark.gpu
@pytest.mark.cuda
def test_a_new_result_comes_back_through_dlpack_with_alpha_and_beta():
    ctx = _hopper_context()
    from autogemm.runtime.cuda.arrays import CudaArray

    dt = DTYPES["z"]
    rng = np.random.default_rng(5)
    a, b, c = (random_matrix(rng, dt, shape) for shape in ((70, 50), (50, 90), (70, 90)))
    got = autogemm.matmul(CudaArray.from_host(ctx, a), CudaArray.from_host(ctx, b))
    assert isinstance(got, CudaArray) and got.shape == (70, 90)
    assert np.allclose(got.get(), a @ b, rtol=1e-12, atol=1e-12)
    into = CudaArray.from_host(ctx, c)
    autogemm.gemm(CudaArray.from_host(ctx, a), CudaArray.from_host(ctx, b), into, alpha=2j, beta=-0.5)
    assert np.allclose(into.get(), 2j * (a @ b) - 0.5 * c, rtol=1e-12, atol=1e-12)
    with pytest.raises(ArgumentError, match="precision='tf32' or '3xtf32'"):
        autogemm.gemm(CudaArray.from_host(ctx, a.real.astype(np.float32)),
                      CudaArray.from_host(ctx, b.real.astype(np.float32)))


@pytest.mark.gpu
@pytest.mark.cuda
def test_repeated_calls_reuse_their_prepared_launch_and_rebind_memory_and_scalars(monkeypatch):
    """A call that repeats an earlier one's tensors and scalars enqueues the launch prepared for it; new
    scalars, or the same shapes in other memory, prepare their own, and every result is right (NT: both
    operands read as they lie, so no layout pass makes memory of its own)."""
    ctx = _hopper_context()
    from autogemm.runtime.cuda.arrays import CudaArray

    prepared = []
    real = type(ctx).prepared
    monkeypatch.setattr(type(ctx), "prepared", lambda self, *args: prepared.append(1) or real(self, *args))
    dt = DTYPES["d"]
    rng = np.random.default_rng(11)
    a, b = random_matrix(rng, dt, (96, 64)), random_matrix(rng, dt, (80, 64))
    pairs = [(CudaArray.from_host(ctx, a), CudaArray.from_host(ctx, b)) for _ in range(2)]
    outs = [CudaArray.from_host(ctx, np.full((96, 80), np.nan)) for _ in range(2)]
    for alpha, pair, out in ((1.0, 0, 0), (1.0, 0, 0), (-2.0, 0, 0), (1.0, 1, 1), (1.0, 1, 1)):
        autogemm.gemm(*pairs[pair], outs[out], alpha=alpha, trans_b="T")
        assert np.allclose(outs[out].get(), alpha * (a @ b.T), rtol=1e-12, atol=1e-12)
    assert len(prepared) == 3          # the first call, new alpha, other memory; the repeats reuse theirs


@pytest.mark.gpu
@pytest.mark.cuda
def test_torch_tensors_on_the_current_stream_multiply_in_place_and_repeat_their_launch(monkeypatch):
    """torch's tensors on its current stream are read through their own attributes (B a transposed view,
    a new result from torch's allocator); a loop that repeats a call's memory and scalars enqueues the
    same launch again, new scalars a launch of their own, each result right (A and B^T K-major with K a
    whole number of tiles: read as they lie, in one launch)."""
    ctx = _hopper_context()
    try:
        import torch
    except Exception as exc:       # noqa: BLE001 - absent, or broken where it is installed
        pytest.skip(f"torch does not import here: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    rng = np.random.default_rng(17)
    dt = DTYPES["h"]
    m, n, k = 77, 53, 128
    a, b_t = random_matrix(rng, dt, (m, k)), random_matrix(rng, dt, (n, k))
    ta, tb_t = (torch.from_numpy(x).cuda() for x in (a, b_t))
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")      # poisoned
    enqueued = []
    real = type(ctx).enqueue_prepared
    monkeypatch.setattr(type(ctx), "enqueue_prepared",
                        lambda self, *args: enqueued.append(args[0]) or real(self, *args))
    for step, alpha in enumerate((1.0, 1.0, -0.5)):
        if step == 1:                           # new data in the same memory
            a = -a
            ta.neg_()
        c.fill_(float("nan"))
        got = autogemm.gemm(ta, tb_t.T, c, alpha=alpha)
        assert got is c
        reference = Reference(dt, alpha * a.astype(np.float64), b_t.T, rng)
        error, ok = reference.check(c.cpu().numpy())
        assert ok, f"step {step}: error {error:.2e}"
    assert len(enqueued) == 3 and enqueued[0] is enqueued[1] and enqueued[2] is not enqueued[1]
    fresh = autogemm.gemm(tb_t, ta.T)                          # a new result, torch's own
    assert isinstance(fresh, torch.Tensor) and fresh.shape == (n, m)
    error, ok = Reference(dt, b_t, a.T, rng).check(fresh.cpu().numpy())
    assert ok, f"new result: error {error:.2e}"


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("key", ["c.tf32", "c.3xtf32"])
def test_complex64_tensors_in_tf32_are_embedded_on_the_device(key):
    """complex64 torch tensors with precision 'tf32' or '3xtf32': their real forms made on the device
    (A conjugated-transposed as a view, B transposed, a complex alpha and beta), against complex128;
    without a precision they are refused with the precisions named."""
    _hopper_context()
    try:
        import torch
    except Exception as exc:       # noqa: BLE001 - absent, or broken where it is installed
        pytest.skip(f"torch does not import here: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    rng = np.random.default_rng(23)
    dt = DTYPES[key]
    m, n, k = 69, 45, 131
    a_t, b_t, c0 = (random_matrix(rng, dt, shape) for shape in ((k, m), (n, k), (m, n)))
    ta, tb, tc = (torch.from_numpy(x).cuda() for x in (a_t, b_t, c0))
    alpha, beta = 0.5 - 1j, 2j
    got = autogemm.gemm(ta.conj().T, tb.T, tc, alpha=alpha, beta=beta, precision=dt.precision)
    want = alpha * a_t.conj().T.astype(np.complex128) @ b_t.T.astype(np.complex128) + beta * c0
    error = np.abs(got.cpu().numpy() - want).max() / np.abs(want).max()
    assert got is tc and error < (2e-3 if key == "c.tf32" else 1e-5), error
    with pytest.raises(ArgumentError, match="precision='tf32' or '3xtf32'"):
        autogemm.gemm(ta.T, tb.T)


@pytest.mark.gpu
@pytest.mark.cuda
def test_torch_lazily_conjugated_operands_are_read_as_they_read():
    """A torch ``x.conj()`` is a view whose memory holds x: read as the conjugate it reads as (its data
    pointer alone would give x); a conjugated c to write into is refused with the fix named."""
    _hopper_context()
    try:
        import torch
    except Exception as exc:       # noqa: BLE001 - absent, or broken where it is installed
        pytest.skip(f"torch does not import here: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    rng = np.random.default_rng(23)
    dt = DTYPES["z"]
    a, b = random_matrix(rng, dt, (40, 24)), random_matrix(rng, dt, (24, 30))
    ta, tb = (torch.from_numpy(x).cuda() for x in (a, b))
    got = autogemm.gemm(ta.conj(), tb)
    error, ok = Reference(dt, a.conj(), b, rng).check(got.cpu().numpy())
    assert ok, f"error {error:.2e}"
    with pytest.raises(ArgumentError, match="resolve_conj"):
        autogemm.gemm(ta, tb, torch.zeros(40, 30, dtype=torch.complex128, device="cuda").conj())
