"""How a plan handles edges under ``edge='auto'`` (``blas.routing``), and that what it chooses is exact."""

from __future__ import annotations

import numpy as np
import pytest
from gemm_check import run_and_check

from autogemm.blas import GemmProblem, Op
from autogemm.blas.routing import PAD_MIN_WORK, Routing
from autogemm.codelets.nvidia_mma import MmaParams
from autogemm.codelets.simt import SimtParams
from autogemm.dtypes import DTYPES

S = DTYPES["s"]
#: reads A transposed and B as stored, K steps of 4, blocks of 16 x 16
TN = SimtParams("TN", "offset", 8, 8, 2, 2, 4, 2, False, False, mac="mul_add")
NN = SimtParams("NN", "offset", 8, 8, 2, 2, 4, 2, False, False, mac="mul_add")
MMA = MmaParams(layout="TN", warps_m=2, warps_n=1, tiles_m=1, tiles_n=2, tile_k=8, stages=2)


def routing(m: int, n: int, k: int, layout: str, params) -> Routing:
    problem = GemmProblem.dense(S, m, n, k, Op.from_letter(layout[0], "l"), Op.from_letter(layout[1], "l"))
    return Routing(problem, params, 1, 8)


def test_a_short_k_is_guarded_where_both_operands_are_then_read_in_place():
    m = n = 1024
    assert m * n * 3 >= PAD_MIN_WORK
    short = routing(m, n, 3, "TN", TN)
    assert short.guarded and not any(st.packed for st in short.staging.values())
    assert short.traffic().launches == 1
    # a K of one whole step or more, a layout the kernel packs anyway, or a family whose guarded
    # kernels are slow: padded as before
    assert not routing(m, n, 3 + TN.tile_k, "TN", TN).guarded
    assert not routing(m, n, 3, "NN", TN).guarded
    assert not routing(m, n, 3, "TN", MMA).guarded
    assert routing(m, n, 3, "TN", NN).staging["A"].packed


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_a_short_k_guarded_in_place_is_exact(ctx, k, beta):
    m, n = 1031, 1029
    assert routing(m, n, k, "TN", TN).guarded
    run_and_check(ctx, TN, S, m, n, k, "T", "N", 1.5, beta, "auto", np.random.default_rng(k))
