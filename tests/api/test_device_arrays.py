"""``gemm`` and ``matmul`` on pyopencl arrays: enqueued on the arrays' queue, returning at once with the
result on the device and its completion in the result's events; mixed host and device operands; numpy's
matmul rules for 1-D and stacked operands; errors raised before anything is enqueued."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import autogemm
from autogemm.accuracy import apply_op, random_matrix, relative_error, tolerance
from autogemm.dtypes import DTYPES, get_dtype

RNG = np.random.default_rng()


@pytest.fixture(scope="module")
def queue(ctx):
    """A queue of the caller's own context, as an application that made its arrays would have (which
    keeps its context too: Intel's CPU runtime invalidates a context whose last handle is gone, even with
    a queue of it left)."""
    context = cl.Context([ctx.device.cl_device])
    yield cl.CommandQueue(context)
    del context


def _want(a, b, c, alpha, beta, ta, tb, dt):
    ref = alpha * (apply_op(a.astype(dt.reference_numpy), ta) @ apply_op(b.astype(dt.reference_numpy), tb))
    return ref + beta * c.astype(dt.reference_numpy) if beta != 0 else ref


@pytest.mark.parametrize("letter", "sdcz")
@pytest.mark.parametrize("layout", ["C", "F", "offset views"])
def test_device_operands_give_a_device_result_in_place(queue, letter, layout):
    dt = DTYPES[letter]
    m, n, k = 37, 29, 45
    a, b, c = (random_matrix(RNG, dt, s) for s in ((k, m), (k, n), (m, n)))      # op(A) = A^T (or A^H)
    ta = "C" if dt.is_complex else "T"
    if layout == "F":
        da, db, dc = (cl_array.to_device(queue, np.asfortranarray(x)) for x in (a, b, c))
    elif layout == "offset views":      # views into larger device arrays: offsets and leading dimensions
        wide = [random_matrix(RNG, dt, (x.shape[0] + 3, x.shape[1] + 5)) for x in (a, b, c)]
        for w, x in zip(wide, (a, b, c)):
            w[3:, 2:2 + x.shape[1]] = x
        whole = [cl_array.to_device(queue, w) for w in wide]
        da, db, dc = (d[3:, 2:2 + x.shape[1]] for d, x in zip(whole, (a, b, c)))
    else:
        da, db, dc = (cl_array.to_device(queue, x) for x in (a, b, c))
    alpha, beta = (0.5 - 1j, 1.5) if dt.is_complex else (0.5, 1.5)
    result = autogemm.gemm(da, db, dc, alpha=alpha, beta=beta, trans_a=ta)
    assert result is dc and dc.events
    cl.wait_for_events(dc.events)
    got = whole[2].get() if layout == "offset views" else dc.get()
    if layout == "offset views":        # nothing outside the view was written
        assert np.array_equal(got[:3], wide[2][:3]) and np.array_equal(got[3:, :2], wide[2][3:, :2])
        assert np.array_equal(got[3:, 2 + n:], wide[2][3:, 2 + n:])
        got = got[3:, 2:2 + n]
    assert relative_error(got, _want(a, b, c, alpha, beta, ta, "N", dt)) < tolerance(dt, k)


def test_the_call_returns_before_the_product_runs(queue):
    """Gated on a user event, the product cannot have run when the call returns: the call enqueued it."""
    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (40, 30)), random_matrix(RNG, dt, (30, 20))
    da, db = cl_array.to_device(queue, a), cl_array.to_device(queue, b)
    gate = cl.UserEvent(queue.context)
    c = autogemm.gemm(da, db, wait_for=[gate])
    assert isinstance(c, cl_array.Array) and c.shape == (40, 20)
    assert c.events[-1].command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    assert relative_error(c.get(), a.astype(np.float64) @ b) < dt.tolerance


def test_a_call_waits_for_what_a_call_on_another_queue_did_to_its_c(queue):
    """C lies on one queue; a first product into it runs on another (its first operand's), held back by a
    user event; a second, on C's own queue, adds to it and must wait for the first (whose event C
    carries), or the first's beta = 0 would overwrite it."""
    dt = DTYPES["d"]
    other = cl.CommandQueue(queue.context, queue.device)
    a, b = random_matrix(RNG, dt, (33, 20)), random_matrix(RNG, dt, (20, 17))
    x, y = random_matrix(RNG, dt, (33, 9)), random_matrix(RNG, dt, (9, 17))
    c = cl_array.empty(queue, (33, 17), dt.numpy)
    gate = cl.UserEvent(queue.context)
    autogemm.gemm(cl_array.to_device(other, a), cl_array.to_device(other, b), c, wait_for=[gate])
    autogemm.gemm(cl_array.to_device(queue, x), cl_array.to_device(queue, y), c, beta=1.0)
    gate.set_status(cl.command_execution_status.COMPLETE)
    assert relative_error(c.get(), a @ b + x @ y) < dt.tolerance


def test_a_device_c_with_beta_0_is_not_read(queue):
    dt = DTYPES["d"]
    a, b = random_matrix(RNG, dt, (33, 17)), random_matrix(RNG, dt, (17, 21))
    dc = cl_array.to_device(queue, np.full((33, 21), np.nan))
    autogemm.gemm(cl_array.to_device(queue, a), b, dc)
    assert relative_error(dc.get(), a @ b) < dt.tolerance


def test_host_and_device_operands_mix(queue):
    dt = DTYPES["c"]
    a, b, c = random_matrix(RNG, dt, (25, 19)), random_matrix(RNG, dt, (19, 31)), random_matrix(RNG, dt, (25, 31))
    want = _want(a, b, c, 2.0, -1.0, "N", "N", dt)
    on_device = autogemm.gemm(a, cl_array.to_device(queue, b), cl_array.to_device(queue, c), alpha=2.0, beta=-1.0)
    assert relative_error(on_device.get(), want) < dt.tolerance
    host_c = np.asfortranarray(c)                     # the result goes where C is: here, to the host
    assert autogemm.gemm(cl_array.to_device(queue, a), b, host_c, alpha=2.0, beta=-1.0) is host_c
    assert relative_error(host_c, want) < dt.tolerance
    fresh = autogemm.gemm(cl_array.to_device(queue, a), b)
    assert isinstance(fresh, cl_array.Array) and relative_error(fresh.get(), a.astype(np.complex128) @ b) < dt.tolerance


def test_device_errors_are_raised_before_anything_runs(queue, ctx):
    a = cl_array.to_device(queue, random_matrix(RNG, DTYPES["s"], (8, 8)))
    c = cl_array.to_device(queue, np.full((8, 8), 7.0, np.float32))
    other_context = cl.Context([ctx.device.cl_device])
    other = cl.CommandQueue(other_context)
    with pytest.raises(autogemm.ArgumentError, match="b and a are device arrays of different OpenCL contexts"):
        autogemm.gemm(a, cl_array.to_device(other, np.ones((8, 8), np.float32)), c)
    wide = cl_array.to_device(queue, np.ones((16, 16), np.float32))
    with pytest.raises(autogemm.ShapeError, match=r"b: a device array with strides \(128, 8\)"):
        autogemm.gemm(a, wide[::2, ::2], c)
    done = cl.UserEvent(queue.context)         # complete: NVIDIA's driver waits at exit for one left open
    done.set_status(cl.command_execution_status.COMPLETE)
    with pytest.raises(autogemm.ArgumentError, match="wait_for is for calls on device arrays"):
        autogemm.gemm(np.ones((2, 2)), np.ones((2, 2)), wait_for=[done])
    with pytest.raises(autogemm.ArgumentError, match="wait_for must be a list of pyopencl events"):
        autogemm.gemm(a, a, wait_for=[1])
    with pytest.raises(autogemm.ShapeError, match="c has shape"):
        autogemm.gemm(a, a, cl_array.to_device(queue, np.zeros((8, 7), np.float32)))
    unordered = cl.CommandQueue(queue.context, properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE) \
        if queue.device.queue_properties & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE else None
    if unordered is not None:
        with pytest.raises(autogemm.ArgumentError, match="out of order"):
            autogemm.gemm(cl_array.to_device(unordered, np.ones((4, 4), np.float32)), np.ones((4, 4), np.float32))
    assert np.all(c.get() == 7.0)


@pytest.mark.parametrize("shapes", [((7, 5), (5, 3)), ((5,), (5, 3)), ((7, 5), (5,)), ((5,), (5,)),
                                    ((2, 3, 7, 5), (5, 4)), ((3, 1, 7, 5), (1, 4, 5, 6)), ((6,), (2, 6, 3))])
def test_matmul_follows_numpy(shapes):
    dt = DTYPES["d"]
    a, b = random_matrix(RNG, dt, shapes[0]), random_matrix(RNG, dt, shapes[1])
    want = np.matmul(a, b)
    got = autogemm.matmul(a, b)
    assert np.shape(got) == want.shape and relative_error(np.asarray(got), want) < dt.tolerance


@pytest.mark.parametrize("a,b", [([[0.5, -1.25, 2.0], [3.0, 0.25, -0.75]], ([1.5, -2.0, 0.5])),
                                 (np.array([[0.5, 2.0], [1.0, -3.0]], np.float32), [[1.25], [-0.5]]),
                                 (((1.5, 2.5),), np.array([[1 + 2j], [3 - 1j]], np.complex64)),
                                 (np.arange(6, dtype=np.float32).reshape(2, 3) + 0.5,
                                  np.arange(12, dtype=np.float64).reshape(3, 4) - 5.5),
                                 (np.arange(6, dtype=">f4").reshape(2, 3) - 2.5,
                                  np.arange(12, dtype=">c16").reshape(3, 4) * (1 - 0.5j))])
def test_matmul_takes_what_numpy_matmul_takes(a, b):
    """Lists and tuples, and host operands of two dtypes, as numpy converts them: the same result,
    of the same dtype and shape (a line written for numpy runs unchanged)."""
    want = np.matmul(a, b)
    got = autogemm.matmul(a, b)
    assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape
    exact = np.matmul(np.asarray(a, np.complex128), np.asarray(b, np.complex128))
    assert relative_error(got, exact) < get_dtype(want.dtype).tolerance


def test_matmul_refuses_what_numpy_refuses_and_names_the_fix():
    with pytest.raises(autogemm.ShapeError, match="a is a scalar"):
        autogemm.matmul(2.0, [[1.0], [2.0]])
    with pytest.raises(autogemm.DtypeError, match=r"astype\(np.float64\)"):
        autogemm.matmul([[1, 2]], [[3], [4]])
    big_endian = np.ones((2, 2), ">f8")
    with pytest.raises(autogemm.DtypeError, match=r"float64 stored in the other byte order .*newbyteorder"):
        autogemm.gemm(big_endian, big_endian)


def test_matmul_on_device_stacks(queue):
    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (4, 9, 13)), random_matrix(RNG, dt, (13, 6))
    got = autogemm.matmul(cl_array.to_device(queue, a), b)
    assert isinstance(got, cl_array.Array) and got.events
    assert relative_error(got.get(), a.astype(np.float64) @ b) < dt.tolerance
    out = np.full((4, 9, 6), np.nan, np.float32)[:, :, ::-1]      # a host out no view can reshape
    assert autogemm.matmul(a, cl_array.to_device(queue, b), out=out) is out
    assert relative_error(out, a.astype(np.float64) @ b) < dt.tolerance


def test_matmul_of_device_arrays_into_a_host_out_of_either_dtype(queue):
    """A host ``out`` takes the product of device operands (the call blocks), cast where it is of another
    dtype numpy's rule allows; stacks too."""
    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (2, 5, 4)), random_matrix(RNG, dt, (4, 3))
    da, db = cl_array.to_device(queue, a), cl_array.to_device(queue, b)
    for kind in (np.float32, np.float64):
        out = np.full((2, 5, 3), np.nan, kind)
        assert autogemm.matmul(da, db, out) is out
        assert relative_error(out, a.astype(np.float64) @ b) < dt.tolerance
        flat = np.full((5, 3), np.nan, kind)
        assert autogemm.matmul(da[0], db, flat) is flat
        assert relative_error(flat, a[0].astype(np.float64) @ b) < dt.tolerance


def test_matmul_errors():
    a = np.ones((3, 4))
    with pytest.raises(autogemm.ShapeError, match="a has 4 columns but b has 5 rows"):
        autogemm.matmul(a, np.ones((5, 2)))
    with pytest.raises(autogemm.ShapeError, match="do not broadcast"):
        autogemm.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 2)))
    with pytest.raises(autogemm.ShapeError, match="b is a scalar"):
        autogemm.matmul(a, np.array(2.0))
    with pytest.raises(autogemm.ShapeError, match=r"of shape \(2, 3\), where the result's is \(3, 2\)"):
        autogemm.matmul(a, np.ones((4, 2)), out=np.ones((2, 3)))
    with pytest.raises(autogemm.DtypeError, match="Cannot cast ufunc 'matmul' output from float64 to int32"):
        autogemm.matmul(a, np.ones((4, 2)), np.zeros((3, 2), np.int32))
    narrow = np.full((3, 2), np.nan, np.float32)                  # numpy's same_kind rule: cast
    assert autogemm.matmul(a, np.ones((4, 2)), narrow) is narrow and (narrow == 4.0).all()
    assert type(autogemm.matmul(np.ones(3), np.ones(3))) is np.float64


def test_a_product_larger_than_the_device_says_how_much_it_needs(ctx, monkeypatch):
    import dataclasses

    small = dataclasses.replace(ctx.device, global_mem_bytes=3 << 20, max_mem_alloc_bytes=1 << 20)
    monkeypatch.setattr(ctx.for_calls, "device", small)          # where calls on numpy arrays run
    fits = np.ones((256, 256), np.float32)             # 0.25 MiB an operand
    assert np.allclose(autogemm.gemm(fits, fits), 256.0)
    under_1_mib = np.ones((500, 500), np.float32)      # 0.95 MiB each, over 3 MiB with C and the packs
    c = np.full((500, 500), 5.0, np.float32)
    packing = autogemm.SimtParams("TN", "offset", 4, 4, 2, 2, 4, 2, True, False)   # the same on every device
    with pytest.raises(autogemm.DeviceError, match=r"needs \d+ MiB on .*, 1 MiB in one buffer; the device has 3 MiB "
                                                   r"and allocates at most 1 MiB at once"):
        autogemm.gemm(under_1_mib, under_1_mib, c, config=packing)
    big = np.ones((1024, 1024), np.float32)
    with pytest.raises(autogemm.DeviceError, match="4 MiB in one buffer"):
        autogemm.gemm(big, big, config=packing)
    assert np.all(c == 5.0)


def test_a_device_out_of_memory_at_the_first_launch_says_so_and_the_next_call_runs(queue, monkeypatch):
    """Drivers allocate a buffer at its first use: a device whose memory is full fails the launch. The
    caller gets a DeviceError that says what to do, C is not written, and a later call computes."""
    from autogemm.blas import launch_plan as plan_module

    a = random_matrix(RNG, DTYPES["s"], (70, 50))
    da, dc = cl_array.to_device(queue, a), cl_array.to_device(queue, np.full((70, 70), 3.0, np.float32))
    real = plan_module.ocl.launch

    def full(*args, **kwargs):
        raise cl.MemoryError("clEnqueueNDRangeKernel failed: MEM_OBJECT_ALLOCATION_FAILURE")

    monkeypatch.setattr(plan_module.ocl, "launch", full)
    with pytest.raises(autogemm.DeviceError, match="no memory left for this call .*: free device arrays"):
        autogemm.gemm(da, da, dc, trans_b="T", edge="pad")
    assert np.all(dc.get() == 3.0)
    monkeypatch.setattr(plan_module.ocl, "launch", real)
    autogemm.gemm(da, da, dc, trans_b="T", edge="pad")
    assert relative_error(dc.get(), a.astype(np.float64) @ a.T) < DTYPES["s"].tolerance


def test_repeated_calls_and_loops_over_views_reuse_their_resolution_and_plan(queue, monkeypatch):
    """A call repeated on device arrays skips its checks, and views at offsets of the same alignment share
    a plan; each still computes with its own memory and offsets."""
    from autogemm.blas import plan_cache
    from autogemm.engine import dispatch
    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (20, 9, 7)), random_matrix(RNG, dt, (20, 7, 5))
    da, db = cl_array.to_device(queue, a), cl_array.to_device(queue, b)
    dc = cl_array.to_device(queue, np.full((20, 9, 5), np.nan, np.float32))
    plan_cache.clear()
    resolved = []
    real = dispatch.OpenCLRoute
    monkeypatch.setattr(dispatch, "OpenCLRoute", lambda call: resolved.append(real(call)) or resolved[-1])
    for i in range(20):
        autogemm.gemm(da[i], db[i], dc[i])
    assert len(plan_cache._plans) == 6     # offsets 63 i, 35 i, 45 i: i's alignment (0, 1, 2, 4, 8 or 16)
    assert len(resolved) == 6              # views at offsets of one class share a resolution
    assert relative_error(dc.get(), a.astype(np.float64) @ b) < dt.tolerance
    same = cl_array.to_device(queue, a[3])
    for scale in (1.0, -2.0):
        same.set((scale * a[3]).astype(np.float32))
        got = autogemm.gemm(same, db[3], alpha=0.5)
        assert relative_error(got.get(), 0.5 * scale * (a[3].astype(np.float64) @ b[3])) < dt.tolerance
    with pytest.raises(autogemm.ArgumentError, match="beta is not 0"):
        autogemm.gemm(same, db[3], beta=1.0)         # checked on a repeated call too


def test_a_loop_on_one_c_knows_the_queue_of_its_last_event(queue):
    """The event a call leaves on C has its queue noted, so the next call on C does not ask the driver for
    it (an answer the driver makes a queue object for, on every call of the loop)."""
    from autogemm.engine import operands
    dt = DTYPES["s"]
    a, b = random_matrix(RNG, dt, (9, 7)), random_matrix(RNG, dt, (7, 5))
    da, db = cl_array.to_device(queue, a), cl_array.to_device(queue, b)
    dc = cl_array.empty(queue, (9, 5), np.float32)
    for _ in range(3):
        autogemm.gemm(da, db, dc)
        assert len(dc.events) == 1
        assert operands._QUEUES[id(dc.events[0])] == (dc.events[0], queue.int_ptr)
    assert relative_error(dc.get(), a.astype(np.float64) @ b) < dt.tolerance


def test_views_far_into_their_buffer_reuse_the_call_with_their_own_offsets(queue, monkeypatch):
    """Offsets are 64-bit: views sharing a resolved call's key run in one launch each, with their own
    offsets, however far into the buffer they begin (the limit on the kernels' indices is lowered here)."""
    from autogemm.blas import index_blocks
    host = random_matrix(RNG, DTYPES["s"], (8, 4, 4))
    stack = cl_array.to_device(queue, host)
    b_host = random_matrix(RNG, DTYPES["s"], (4, 4))
    b = cl_array.to_device(queue, b_host)
    c = cl_array.to_device(queue, np.full((4, 4), np.nan, np.float32))
    autogemm.gemm(stack[0], b, c)
    monkeypatch.setattr(index_blocks, "INDEX_LIMIT", 16 * 5)
    monkeypatch.setattr(index_blocks, "enqueue_blocks", lambda *args: pytest.fail("blocked"))
    for layer in (4, 6, 7):                                  # offsets 64, 96 and 112: the key of 0 too
        autogemm.gemm(stack[layer], b, c)
        assert relative_error(c.get(), host[layer].astype(np.float64) @ b_host) < DTYPES["s"].tolerance


def test_clear_plans_lets_go_of_the_last_operands_a_plan_kept(queue):
    """A cached plan keeps its last call's memory objects (a repeated call then sets no argument again),
    so a device array the caller dropped stays allocated; ``clear_plans`` lets go of it."""
    import gc
    import sys

    a = cl_array.to_device(queue, random_matrix(RNG, DTYPES["s"], (37, 29)))
    memory = a.base_data
    alone = sys.getrefcount(memory)                  # (counted outside asserts, which keep their operands)
    c = autogemm.gemm(a, a, trans_b="T")
    c.finish()
    held = sys.getrefcount(memory)                   # by the plan's kernel arguments
    autogemm.clear_plans()
    gc.collect()
    after = sys.getrefcount(memory)
    assert held > alone and after == alone
    again = autogemm.gemm(a, a, trans_b="T")                   # and calls go on, with plans made anew
    assert relative_error(again.get(), c.get().astype(np.float64)) < DTYPES["s"].tolerance
