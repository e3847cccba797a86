"""``codelets.k_major``: the pass that lays an operand out K-contiguous and zero-padded for TMA, checked
element for element on a Hopper GPU for every element size, both orientations, rows and K that are not
whole tiles, a leading dimension longer than the rows, and complex128's conjugate."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from autogemm.codelets import k_major

# numpy types of the pass's element sizes (complex128: two float64 a element)
ELEMENTS = {2: np.float16, 4: np.float32, 8: np.float64, 16: np.complex128}


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("element_bytes", sorted(ELEMENTS))
@pytest.mark.parametrize("transposed", [False, True])
def test_the_pass_lays_out_any_operand_k_contiguous_and_zero_padded(hopper, element_bytes, transposed):
    from autogemm.runtime.cuda import CudaContext, compile_cuda

    ctx = CudaContext(hopper)
    rows, k = 70, 2 * k_major.tile_k(element_bytes) + 3          # edges on both sides of the tiles
    padded = k_major.padded_k(k, element_bytes)
    rng = np.random.default_rng(element_bytes + transposed)
    stored_shape = (k, rows + 5) if transposed else (rows, k + 7)  # rows ld elements apart, ld beyond them
    values = rng.standard_normal(stored_shape) + (1j * rng.standard_normal(stored_shape) if element_bytes == 16
                                                  else 0)
    stored = values.astype(ELEMENTS[element_bytes])
    conjugate = element_bytes == 16
    operand = (stored[:, :rows].T if transposed else stored[:, :k])
    expected = np.zeros((rows, padded), stored.dtype)
    expected[:, :k] = np.conj(operand) if conjugate else operand
    function = ctx.function(compile_cuda(k_major.render(), "k_major"), k_major.NAMES[element_bytes])
    with ctx.session():
        src, dst = ctx.allocate(stored.nbytes), ctx.allocate(expected.nbytes)
        try:
            ctx.upload(src, stored)
            ctx.fill(dst, np.array(np.nan, stored.dtype), expected.nbytes)      # what it does not write shows
            ctx.launch(function, k_major.grid(rows, padded, element_bytes), (k_major.TILE_ROWS, k_major.ROWS_PER_PASS),
                       [(src, None), (dst, None), (rows, ctypes.c_int), (k, ctypes.c_int), (padded, ctypes.c_int),
                        (stored.shape[1], ctypes.c_longlong), (int(transposed), ctypes.c_int),
                        (int(conjugate), ctypes.c_int)])
            got = np.empty_like(expected)
            ctx.download(got, dst)
        finally:
            src.release()
            dst.release()
    assert np.array_equal(got, expected)
