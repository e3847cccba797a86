"""A plan enqueued many times: arguments set once are kept only while buffers and scalars are the same."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from autogemm.blas import LaunchPlan, GemmProblem
from autogemm.checking import random_matrix
from autogemm.dtypes import DTYPES


def test_a_reused_plan_follows_new_buffers_and_scalars(ctx):
    dt, m, n, k = DTYPES["d"], 37, 21, 45
    problem = GemmProblem(dt, m, n, k, lda=k, ldb=n, ldc=n)
    plan = LaunchPlan(ctx, problem, edge="pad")
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


def test_gemm_keeps_plans_between_calls_and_evicts_the_oldest(ctx, monkeypatch):
    import autogemm
    from autogemm.blas import plan_cache

    plan_cache.clear()
    monkeypatch.setattr(plan_cache, "CAPACITY", 2)
    rng = np.random.default_rng(9)
    made = []
    real = plan_cache.LaunchPlan
    monkeypatch.setattr(plan_cache, "LaunchPlan", lambda *args: made.append(real(*args)) or made[-1])
    for shape in ((30, 20, 10), (30, 20, 10), (31, 20, 10), (32, 20, 10), (30, 20, 10)):
        m, n, k = shape
        a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
        np.testing.assert_allclose(autogemm.gemm(a, b, device=ctx.device), a @ b, rtol=1e-12, atol=1e-12)
    assert len(made) == 4          # the second call reused the first plan; the last came after its eviction
    assert len(plan_cache._plans) == 2
    plan_cache.clear()
