"""Stream-K: persistent work-groups share the K steps of all tiles; shared tiles are fixed up in order."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from gemm_check import run_and_check, two_runs

from autogemm.accuracy import random_matrix
from autogemm.blas import GemmProblem
from autogemm.blas.coverage import split_counts
from autogemm.blas.plans import gemm_plan
from autogemm.codelets import stream_k
from autogemm.codelets.nvidia_mma import MmaParams
from autogemm.codelets.simt import SimtParams
from autogemm.codelets.stream_k import STREAM_K, StreamPartition
from autogemm.codelets.subgroup import SubgroupParams
from autogemm.dtypes import DTYPES
from autogemm.errors import ArgumentError, ConfigError

SIMT = SimtParams("NN", "offset", 4, 8, 2, 4, 4, 2, True, True, double_buffer=True, mac="mul_add")
SUBGROUP = SubgroupParams(layout="NN", subgroup=8, wg_rows=2, tile_rows=2, vector_width=2, shuffle="local",
                          mac="mul_add")
MMA = MmaParams(layout="NT", warps_m=2, warps_n=1, tiles_m=1, tiles_n=2, tile_k=8, stages=3, vector_width=1,
                mma="local", copy="async")
#: (m, n, k): tiles fewer than the work-groups (every tile shared), more (some shared, some whole), one
#: step per tile (none shared), C of one element with a deep K, and (with few work-groups) waves of whole
#: tiles before the shared ones
SHAPES = ((33, 17, 301), (70, 40, 29), (45, 30, 5), (1, 1, 257), (150, 100, 75))


@pytest.fixture(params=[1, 3, 8], ids=lambda g: f"{g}-per-unit")
def groups_per_unit(request, monkeypatch):
    monkeypatch.setattr(stream_k, "GROUPS_PER_UNIT", request.param)
    return request.param


@pytest.mark.parametrize("params,letter,ta,tb", [
    (SIMT, "s", "N", "T"), (SIMT, "z", "C", "N"), (dataclasses.replace(SIMT, layout="TN"), "d", "T", "N"),
    (SUBGROUP, "s", "N", "N"), (SUBGROUP, "c", "T", "C"),
    (MMA, "d", "N", "T"), (dataclasses.replace(MMA, shape="m16n8k8", tile_k=32, vector_width=2), "h", "T", "N")])
@pytest.mark.parametrize("edge", ["guard", "pad"])
def test_stream_k_is_right(ctx, groups_per_unit, params, letter, ta, tb, edge):
    """Every family and dtype, both edge modes, offsets and wide leading dimensions, beta 0 (C poisoned
    with NaN: an unwritten element or a read of C fails) and not."""
    rng = np.random.default_rng(groups_per_unit)
    for i, (m, n, k) in enumerate(SHAPES):
        run_and_check(ctx, params, DTYPES[letter], m, n, k, ta, tb, 1.5, 0.0 if i % 2 else -0.5, edge, rng,
                      extra_ld=3, offset=5, split_k=STREAM_K)


@pytest.mark.parametrize("letter", "sz")
def test_stream_k_gives_the_same_bits_on_every_run(ctx, monkeypatch, letter):
    """The shared tiles' pieces are added in the order of their work-groups, never by atomics."""
    monkeypatch.setattr(stream_k, "GROUPS_PER_UNIT", 5)
    dt, rng = DTYPES[letter], np.random.default_rng(7)
    m, n, k = 2 * SIMT.block_rows + 1, SIMT.block_cols + 3, 37 * SIMT.tile_k + 5
    plan = gemm_plan(ctx, GemmProblem.dense(dt, m, n, k), SIMT, split_k=STREAM_K)
    assert plan.partition.shared() and "stream-K" in plan.describe() and "fix up" in plan.describe()
    a, b = random_matrix(rng, dt, (m, k)), random_matrix(rng, dt, (k, n))
    results = two_runs(ctx, plan, a, b, 0.5)
    assert np.all(np.isfinite(results[0])) and results[0].tobytes() == results[1].tobytes()
    reference = 0.5 * (a.astype(dt.reference_numpy) @ b.astype(dt.reference_numpy))
    assert np.abs(results[0] - reference).max() < 1e-3 * np.abs(reference).max()


def _owner(step: int, total: int, groups: int) -> int:
    """The kernels' ``owner``, in Python."""
    return ((step + 1) * groups - 1) // total


@pytest.mark.parametrize("tiles,steps,groups", [(5, 76, 16), (18, 3, 16), (1, 13, 13), (7, 1, 7), (264, 9, 264),
                                                (3, 100, 7), (40, 40, 264), (1000, 7, 96), (2 * 264 + 5, 16, 264)])
def test_partition_agrees_with_the_kernels_arithmetic(tiles, steps, groups):
    """The tiles before the last one or two waves' worth are whole, in waves; every step of the rest is
    owned by exactly one work-group, in order and in even shares; ``shared`` counts the pieces the fix-up
    adds (the work-groups whose shares meet each tile) and only those."""
    part = StreamPartition(tiles, steps, groups)
    before = part.whole_tiles
    assert before % groups == 0 and groups <= tiles - before < 2 * groups or (before == 0 and tiles < 2 * groups)
    total = part.total
    assert total == (tiles - before) * steps
    starts = [g * total // groups for g in range(groups + 1)]
    assert all(_owner(s, total, groups) == g for g in range(groups) for s in range(starts[g], starts[g + 1]))
    assert max(np.diff(starts)) - min(np.diff(starts)) <= 1
    pieces = {t: _owner((t - before) * steps + steps - 1, total, groups) - _owner((t - before) * steps, total, groups)
              + 1 for t in range(before, tiles)}
    assert part.shared() == {t: p for t, p in pieces.items() if p > 1}
    assert part.most_pieces() == max(pieces.values()) - (max(pieces.values()) == 1)


def test_partition_has_no_more_work_groups_than_steps():
    assert StreamPartition.of(tiles=2, steps=3, compute_units=132).groups == 6
    assert StreamPartition.of(tiles=200, steps=64, compute_units=132).groups == stream_k.GROUPS_PER_UNIT * 132


def test_stream_k_is_a_candidate_where_the_last_wave_is_part_empty():
    dt = DTYPES["s"]
    rows, cols = SIMT.block_rows, SIMT.block_cols
    half_wave = GemmProblem.dense(dt, 6 * rows, 11 * cols, 4096)          # 66 tiles on 132 units
    assert STREAM_K in split_counts(SIMT, half_wave, 132) and 2 in split_counts(SIMT, half_wave, 132)
    tail = GemmProblem.dense(dt, 20 * rows, 10 * cols, 4096)              # 200 tiles: 1.5 waves
    assert split_counts(SIMT, tail, 132) == [1, STREAM_K]
    assert split_counts(SIMT, GemmProblem.dense(dt, 24 * rows, 11 * cols, 4096), 132) == []    # 2 full waves
    assert split_counts(SIMT, GemmProblem.dense(dt, 6 * rows, 11 * cols, SIMT.tile_k), 132) == []   # one K step
    batch = dataclasses.replace(half_wave, batch=2, stride_a=half_wave.m * 4096, stride_b=4096 * half_wave.n,
                                stride_c=half_wave.m * half_wave.n)
    assert split_counts(SIMT, batch, 132) == []


def test_stream_k_refuses_batches_and_images(ctx):
    problem = GemmProblem(DTYPES["s"], 16, 16, 64, lda=64, ldb=16, ldc=16, batch=2, stride_a=16 * 64,
                          stride_b=64 * 16, stride_c=256)
    with pytest.raises(ArgumentError, match="stream-K"):
        gemm_plan(ctx, problem, SIMT, split_k=STREAM_K)
    with pytest.raises(ConfigError, match="stream-K"):
        gemm_plan(ctx, GemmProblem.dense(DTYPES["s"], 16, 16, 64),
                   SimtParams("TN", "offset", 4, 4, 4, 4, 4, 4, False, False, image_a=True), split_k=STREAM_K)
    with pytest.raises(ArgumentError, match="split_k"):
        gemm_plan(ctx, GemmProblem.dense(DTYPES["s"], 16, 16, 64), SIMT, split_k=-1)
