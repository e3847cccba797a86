"""A plan enqueued many times: arguments set once are kept only while buffers and scalars are the same."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from autogemm.blas import GemmPlan, GemmProblem
from autogemm.checking import random_matrix
from autogemm.dtypes import DTYPES


def test_a_reused_plan_follows_new_buffers_and_scalars(ctx):
    dt, m, n, k = DTYPES["d"], 37, 21, 45
    problem = GemmProblem(dt, m, n, k, lda=k, ldb=n, ldc=n)
    plan = GemmPlan(ctx, problem, edge="pad")
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
