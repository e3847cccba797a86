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
from autogemm.profiles import Thresholds

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


def test_operands_whose_rows_conflict_in_the_caches_are_packed_apart():
    """On a CPU, rows 4 KiB apart fall on the same cache sets (SGEMM 1024^3 ran at 0.08 TFLOP/s read in
    place, 0.19 packed 128 bytes longer): with the device's conflict stride, such operands are packed at a
    skewed leading dimension; others, and products too small to outgrow the caches, are read in place."""
    def staged(m, n, k, stride, ld_a=None):
        problem = GemmProblem(S, m, n, k, lda=ld_a or k, ldb=n, ldc=n)
        return Routing(problem, NN, 1, 8, limits=Thresholds(guard_multiply_adds=PAD_MIN_WORK,
                                                            conflict_stride_bytes=stride)).staging

    packed = staged(256, 256, 256, 1024)                  # rows of 256 floats: 1 KiB apart
    assert all(st.packed and st.dst_ld == 256 + 32 for st in packed.values())
    assert not any(st.packed for st in staged(256, 256, 256, 0).values())          # (a GPU's: never)
    assert not staged(256, 264, 256, 1024, ld_a=264)["A"].packed                    # 1056 bytes apart
    assert not any(st.packed for st in staged(64, 64, 64, 1024).values())           # under 256^3


@pytest.mark.parametrize("letter", ["s", "z"])
def test_operands_packed_apart_compute_right(ctx, monkeypatch, letter):
    from limits import set_thresholds

    from autogemm.blas.plans import gemm_plan

    set_thresholds(monkeypatch, conflict_stride_bytes=256, guard_multiply_adds=0)
    dt = DTYPES[letter]
    m = n = k = 256
    extra = 256 // dt.itemsize                  # every leading dimension a whole number of 256 bytes
    plan = gemm_plan(ctx, GemmProblem(dt, m, n, k, Op(), Op(transposed=True), lda=k + extra, ldb=k + extra,
                                      ldc=n + extra))
    assert plan.staging["A"].packed and plan.staging["A"].dst_ld * dt.itemsize % 256
    run_and_check(ctx, None, dt, m, n, k, "N", "T", 1.5, 0.5, "auto", np.random.default_rng(4), extra_ld=extra)


def test_edges_are_guarded_below_the_devices_guard_bound_whatever_the_layout():
    """``Thresholds.guard_multiply_adds``: below it a product whose blocks are cut by its edges runs the
    guarded kernel (an operand in another layout than the kernel's packed as it is, unpadded; C written
    in place), from it the operands are padded and C merged; a product read in place is guarded too."""
    m, n, k = 300, 200, 100
    assert Thresholds(guard_multiply_adds=5, in_place_multiply_adds=7).guarded_below == 7
    limits = Thresholds(guard_multiply_adds=m * n * k + 1, in_place_multiply_adds=0)
    guarded = Routing(GemmProblem.dense(S, m, n, k, Op(), Op(transposed=True)), NN, 1, 8, limits=limits)
    assert guarded.guarded and not guarded.c_temp
    b = guarded.staging["B"]
    assert b.packed and b.transpose and (b.dst_rows, b.dst_cols) == (k, n) and not guarded.staging["A"].packed
    padded = Routing(GemmProblem.dense(S, m, n, k, Op(), Op(transposed=True)), NN, 1, 8,
                     limits=Thresholds(guard_multiply_adds=m * n * k, in_place_multiply_adds=0))
    assert not padded.guarded and padded.c_temp and padded.staging["A"].packed
