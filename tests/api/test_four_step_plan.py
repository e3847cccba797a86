"""``GemmPlan``, the four-step low-level API: allocate once, copy operands, compute many times, release;
A copied once serves several products; errors before anything is enqueued."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import autogemm
from autogemm.accuracy import apply_op, random_matrix, relative_error, tolerance
from autogemm.codelets.simt import SimtParams
from autogemm.dtypes import DTYPES

RNG = np.random.default_rng()
PACKING = SimtParams("TN", "offset", 4, 4, 2, 2, 4, 2, True, False)     # packs an A stored as is


@pytest.mark.parametrize("letter", "sz")
@pytest.mark.parametrize("edge", ["guard", "pad"])
def test_one_copy_of_a_serves_several_products(ctx, letter, edge):
    dt = DTYPES[letter]
    m, n, k = 23, 17, 19
    ta = "C" if dt.is_complex else "N"          # the codelet reads A transposed: either is packed
    a = random_matrix(RNG, dt, (k, m) if dt.is_complex else (m, k))
    bs = [random_matrix(RNG, dt, (k, n)) for _ in range(3)]
    with autogemm.GemmPlan(ctx.device, dt.numpy, m, n, k, ta, "N", config=PACKING, edge=edge) as plan:
        queue = plan.queue
        da = cl_array.to_device(queue, a)
        assert plan.copy_a(da)                    # packed: the pack's events
        results = []
        for b in bs:
            c = cl_array.to_device(queue, np.full((m, n), np.nan, dt.numpy))
            plan.copy_b(cl_array.to_device(queue, b))
            plan.compute(c, alpha=2.0)
            results.append(c)
        da.fill(0)                                # A was packed: changing it now changes nothing
        c = results[0].copy()
        plan.compute(c, alpha=1.0, beta=-1.0)     # again on the last B, reading c
        for b, got in zip(bs, results):
            want = 2.0 * (apply_op(a.astype(dt.reference_numpy), ta) @ b)
            assert relative_error(got.get(), want) < tolerance(dt, k)
        op_a = apply_op(a.astype(dt.reference_numpy), ta)
        want = (op_a @ bs[-1]) - 2.0 * (op_a @ bs[0])
        assert relative_error(c.get(), want) < tolerance(dt, k)
    assert not plan.launch_plan.allocated                # released on leaving the block


def test_buffers_with_offsets_and_leading_dimensions(ctx):
    dt = DTYPES["d"]
    m, n, k = 9, 6, 5
    plan = autogemm.GemmPlan(None, "d", m, n, k, lda=8, ldb=7, ldc=10)
    a, b = random_matrix(RNG, dt, (m, 8)), random_matrix(RNG, dt, (k, 7))
    c = np.full(3 + m * 10, np.nan)
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b, c)]
    plan.copy_a(bufs[0])
    plan.copy_b(bufs[1])
    plan.compute(bufs[2], offset=3)
    cl.enqueue_copy(plan.queue, c, bufs[2])
    got = c[3:].reshape(m, 10)[:, :n]
    assert relative_error(got, a[:, :k] @ b[:, :n]) < dt.tolerance
    assert np.isnan(c[:3]).all() and np.isnan(c[3:].reshape(m, 10)[:, n:]).all()
    plan.release()


def test_a_plan_that_reads_an_operand_in_16_byte_pieces_refuses_an_offset_it_was_not_made_for(ctx):
    """A tensor-core kernel (emulated here) that copies A and B 16 bytes at a time where they lie holds for
    offsets of the alignment class it was made for (``offset_a``, ``offset_b``): another offset of A is
    refused before anything is enqueued, and a plan made for it computes right."""
    from autogemm.codelets.nvidia_mma import MmaParams

    dt = DTYPES["d"]
    m, n, k = 20, 24, 30
    config = MmaParams(layout="NN", warps_m=2, warps_n=1, tiles_m=1, tiles_n=2, tile_k=8, stages=3, vector_width=1,
                       mma="local", copy="async")
    a, b = random_matrix(RNG, dt, (1 + m * 32,)), random_matrix(RNG, dt, (k, n))
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b)]
    plan = autogemm.GemmPlan(None, "d", m, n, k, lda=32, config=config, edge="guard")
    assert plan.launch_plan.copies_aligned
    with pytest.raises(autogemm.ArgumentError, match="offset 1: this plan reads A where it lies in pieces of 2"):
        plan.copy_a(bufs[0], offset=1)
    plan.release()
    plan = autogemm.GemmPlan(None, "d", m, n, k, lda=32, config=config, edge="guard", offset_a=1)
    assert not plan.launch_plan.copies_aligned
    c = cl_array.zeros(plan.queue, (m, n), np.float64)
    plan.copy_a(bufs[0], offset=1)
    plan.copy_b(bufs[1])
    plan.compute(c)
    assert relative_error(c.get(), a[1:].reshape(m, 32)[:, :k] @ b) < dt.tolerance
    plan.release()


def test_errors_are_raised_before_anything_is_enqueued(ctx):
    plan = autogemm.GemmPlan(None, "s", 8, 4, 6)
    queue = plan.queue
    c = cl_array.to_device(queue, np.full((8, 4), 5.0, np.float32))
    with pytest.raises(autogemm.ArgumentError, match="copy A and B before compute"):
        plan.compute(c)
    with pytest.raises(autogemm.ShapeError, match="a has shape \\(6, 8\\).*the plan's A is 8x6"):
        plan.copy_a(cl_array.to_device(queue, np.ones((6, 8), np.float32)))
    with pytest.raises(autogemm.ArgumentError, match="b is float64; the plan's B is float32"):
        plan.copy_b(cl_array.to_device(queue, np.ones((6, 4))))
    with pytest.raises(autogemm.ShapeError, match="needs 192"):
        plan.copy_a(cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 64))
    with pytest.raises(autogemm.ArgumentError, match="must be a pyopencl array or buffer"):
        plan.copy_b(np.ones((6, 4), np.float32))
    plan.copy_a(cl_array.to_device(queue, np.ones((8, 6), np.float32)))
    plan.copy_b(cl_array.to_device(queue, np.ones((6, 4), np.float32)))
    with pytest.raises(autogemm.DtypeError, match="complex"):
        plan.compute(c, alpha=1j)
    assert np.all(c.get() == 5.0)
    plan.compute(c, alpha=0.0, beta=2.0)          # no product: C scaled
    assert np.all(c.get() == 10.0)
    plan.release()
