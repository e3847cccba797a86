"""A plan enqueued many times: arguments set once are kept only while buffers and scalars are the same."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from autogemm.accuracy import random_matrix
from autogemm.blas import GemmProblem
from autogemm.blas.plans import gemm_plan
from autogemm.dtypes import DTYPES


def test_a_reused_plan_follows_new_buffers_and_scalars(ctx):
    dt, m, n, k = DTYPES["d"], 37, 21, 45
    problem = GemmProblem(dt, m, n, k, lda=k, ldb=n, ldc=n)
    plan = gemm_plan(ctx, problem, edge="pad")
    rng = np.random.default_rng(4)
    mf = cl.mem_flags
    for alpha in (1.0, 1.0, -2.0, -2.0):
        a, b = random_matrix(rng, dt, (m, k)), random_matrix(rng, dt, (k, n))
        bufs = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x)
                for x in (a, b, np.full((m, n), np.nan))]
        plan.enqueue(*bufs, alpha=alpha)
        got = np.empty((m, n))
        cl.enqueue_copy(ctx.queue, got, bufs[2]).wait()
        assert np.allclose(got, alpha * (a @ b), rtol=1e-12, atol=1e-12)
        for buf in bufs:
            buf.release()
        plan.release()     # temporaries are made again at the next enqueue


def test_a_repeated_enqueue_launches_again_as_it_was_until_anything_sets_other_arguments(ctx):
    """A repeat of the last ``enqueue`` (same memory, offsets and scalars) enqueues its launches as they
    were, computing on the memory's new contents; after the four-step calls set the kernels' arguments to
    other operands, or after other scalars, the next repeat sets them again."""
    dt, m, n, k = DTYPES["d"], 29, 23, 31
    problem = GemmProblem(dt, m, n, k, lda=k, ldb=n, ldc=n)
    plan = gemm_plan(ctx, problem, edge="pad")            # packs: kernels with arguments of their own
    rng = np.random.default_rng(6)
    mf = cl.mem_flags
    a, other, b = random_matrix(rng, dt, (m, k)), random_matrix(rng, dt, (m, k)), random_matrix(rng, dt, (k, n))
    bufs = [cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b, np.zeros((m, n)))]
    other_buf = cl.Buffer(ctx.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=other)

    def product(alpha: float = 1.0) -> np.ndarray:
        got = np.full((m, n), np.nan)
        plan.enqueue(*bufs, alpha=alpha)
        cl.enqueue_copy(ctx.queue, got, bufs[2]).wait()
        return got

    assert np.allclose(product(), a @ b)
    a = -a
    cl.enqueue_copy(ctx.queue, bufs[0], a).wait()               # new contents, the same memory
    assert np.allclose(product(), a @ b)
    _, staged_a = plan.enqueue_copy("A", other_buf)
    _, staged_b = plan.enqueue_copy("B", bufs[1])
    plan.enqueue_product({"A": staged_a, "B": staged_b}, bufs[2])
    assert np.allclose(product(), a @ b)                        # the kernels set to other operands meanwhile
    assert np.allclose(product(0.5), 0.5 * (a @ b))
    plan.release()
    assert np.allclose(product(0.5), 0.5 * (a @ b))              # temporaries made again
    for buf in (*bufs, other_buf):
        buf.release()
    plan.release()


def test_gemm_keeps_plans_between_calls_and_evicts_the_oldest(ctx, monkeypatch):
    import autogemm
    from autogemm.blas import plan_cache

    plan_cache.clear()
    monkeypatch.setattr(plan_cache, "CAPACITY", 2)
    rng = np.random.default_rng(9)
    made = []
    real = plan_cache.plan_for
    monkeypatch.setattr(plan_cache, "plan_for", lambda *args: made.append(real(*args)) or made[-1])
    for shape in ((30, 20, 10), (30, 20, 10), (31, 20, 10), (32, 20, 10), (30, 20, 10)):
        m, n, k = shape
        a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
        np.testing.assert_allclose(autogemm.gemm(a, b, device=ctx.device), a @ b, rtol=1e-12, atol=1e-12)
    assert len(made) == 4          # the second call reused the first plan; the last came after its eviction
    assert len(plan_cache._plans) == 2
    plan_cache.clear()


def test_a_repeated_device_call_holds_its_plan_only_while_the_cache_does(ctx, monkeypatch):
    """Calls on device arrays keep the plan they ran on and skip its lookup; a plan the cache dropped,
    or made under a profile since replaced, is not used again: the call gets a new one."""
    from types import SimpleNamespace

    import pyopencl.array as cl_array

    import autogemm
    from autogemm.blas import plan_cache
    from autogemm.profiles import store

    plan_cache.clear()
    monkeypatch.setattr(plan_cache, "CAPACITY", 1)
    made = []
    real = plan_cache.plan_for
    monkeypatch.setattr(plan_cache, "plan_for", lambda *args: made.append(real(*args)) or made[-1])
    rng = np.random.default_rng(10)
    host = {m: (rng.uniform(-1, 1, (m, 9)), rng.uniform(-1, 1, (9, 5))) for m in (6, 7)}
    arrays = {m: [cl_array.to_device(ctx.queue, x) for x in pair] for m, pair in host.items()}

    def call(m: int) -> None:
        a, b = host[m]
        got = autogemm.gemm(*arrays[m]).get()
        np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-12)

    for m in (6, 6, 7, 6):
        call(m)
    assert len(made) == 3          # the second call ran on the first's plan; the last came after its eviction
    stale = made[-1]
    for module in (plan_cache, store):                                       # a new profile each lookup
        monkeypatch.setattr(module, "profile_for", lambda device: SimpleNamespace(thresholds=None))
    store.forget()                                                           # as a save does
    call(6)
    assert len(made) == 4 and not plan_cache.is_current(stale)   # forgotten; freed once nothing holds it
    plan_cache.clear()
