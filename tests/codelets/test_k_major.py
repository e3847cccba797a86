"""``codelets.k_major``: the pass that lays a product's operands out K-contiguous and zero-padded for TMA
in one launch, checked element for element on a Hopper GPU for every element size, both orientations,
rows and K that are not whole tiles, leading dimensions longer than the rows, complex128's conjugate,
one operand left as it lies, and the stream-K counters it zeroes."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from autogemm.codelets import k_major

# numpy types of the pass's element sizes (complex128: two float64 an element)
ELEMENTS = {2: np.float16, 4: np.float32, 8: np.float64, 16: np.complex128}


def _stored(rng: np.random.Generator, element_bytes: int, rows: int, k: int, transposed: bool
            ) -> tuple[np.ndarray, np.ndarray]:
    """An operand of ``rows`` x K stored so (K x rows where transposed), its rows a few elements longer
    than it needs, and the operand itself."""
    shape = (k, rows + 5) if transposed else (rows, k + 7)
    values = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if element_bytes == 16 else 0)
    stored = values.astype(ELEMENTS[element_bytes])
    return stored, stored[:, :rows].T if transposed else stored[:, :k]


@pytest.mark.gpu
@pytest.mark.cuda
@pytest.mark.parametrize("element_bytes", sorted(ELEMENTS))
@pytest.mark.parametrize("transposed_a", [False, True])
@pytest.mark.parametrize("lay_a,looped", [(True, False), (False, False), (True, True)])
def test_one_launch_lays_out_both_operands_k_contiguous_and_zero_padded(hopper, element_bytes, transposed_a,
                                                                        lay_a, looped):
    """``looped``: one block down the grid, which then takes every tile of K in turn (as past 65535)."""
    from autogemm.runtime.cuda import CudaContext, compile_cuda

    ctx = CudaContext(hopper)
    rng = np.random.default_rng(element_bytes + 2 * transposed_a + 4 * lay_a)
    k = 2 * k_major.tile_k(element_bytes) + 3                      # edges on both sides of the tiles
    padded = k_major.padded_k(k, element_bytes)
    conjugated = element_bytes == 16
    # A of 70 rows stored as the parameter says (or left as it lies), B of 45 the other way, conjugated
    rows = (70 if lay_a else 0, 45)
    transposed = (transposed_a, not transposed_a)
    operands = [_stored(rng, element_bytes, max(r, 1), k, t) for r, t in zip(rows, transposed)]
    expected = []
    for (stored, operand), r in zip(operands, rows):
        out = np.zeros((r, padded), stored.dtype)
        out[:, :k] = np.conj(operand[:r]) if conjugated else operand[:r]
        expected.append(out)
    counters = np.arange(1, 301, dtype=np.int32)
    function = ctx.function(compile_cuda(k_major.render(), "k_major"), k_major.NAMES[element_bytes])
    with ctx.session():
        memory = [ctx.allocate(max(x.nbytes, 1)) for x in (operands[0][0], expected[0], operands[1][0],
                                                            expected[1], counters)]
        try:
            for to, x in zip(memory, (operands[0][0], None, operands[1][0], None, counters)):
                if x is not None:
                    ctx.upload(to, x)
            for to, x in zip(memory[1:4:2], expected):                 # what the pass leaves unwritten shows
                if x.size:
                    ctx.fill(to, np.array(np.nan, x.dtype), x.nbytes)
            args = []
            for (stored, _), src, dst, r, t in zip(operands, memory[0::2], memory[1::2], rows, transposed):
                args += [(src, None), (dst, None), (r, ctypes.c_int), (stored.shape[1], ctypes.c_longlong),
                         (k_major.flags(t, conjugated), ctypes.c_int)]
            args += [(k, ctypes.c_int), (padded, ctypes.c_int), (memory[4], None), (counters.size, ctypes.c_int)]
            grid = k_major.grid(*rows, padded, element_bytes)
            ctx.launch(function, (grid[0], 1) if looped else grid, (k_major.TILE_ROWS, k_major.ROWS_PER_PASS), args)
            got = [np.empty_like(x) for x in (*expected, counters)]
            for x, source in zip(got, (memory[1], memory[3], memory[4])):
                if x.size:
                    ctx.download(x, source)
        finally:
            for block in memory:
                block.release()
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    assert not got[2].any()


def test_the_grid_covers_both_operands_rows_and_k_in_at_most_65535_blocks_down():
    assert k_major.grid(70, 45, 80, 2) == (3 + 2, 1)
    assert k_major.grid(0, 45, 600, 4) == (2, 5)
    assert k_major.grid(0, 0, 8, 2) == (1, 1)                      # the counters alone
    assert k_major.grid(1, 1, 2**25, 2)[1] == k_major.MAX_GRID_Y
