"""How the sm_90a families' persistent blocks share out a product (``codelets.hopper``): blocks of C whole
in rounds, and stream-K over the K of the last round where it would leave multiprocessors idle. Runs
without a GPU; the kernels' sums over shared K are checked on one in the families' tests."""

from __future__ import annotations

import pytest

from autogemm.blas.cuda_gemm import fitted
from autogemm.codelets.dmma import DmmaParams
from autogemm.codelets.dmma import render as render_dmma
from autogemm.codelets.hopper import MIN_SHARE, SHARE_COST, SingleRound, rounds, shared_out
from autogemm.codelets.wgmma import WgmmaParams
from autogemm.codelets.wgmma import render as render_wgmma


def test_whole_rounds_stay_whole_and_a_last_round_of_few_blocks_is_shared():
    assert shared_out(264, 132, 256) == (264, 132)           # two whole rounds: nothing idles
    assert shared_out(288, 132, 128) == (264, 132)           # 2 rounds and 24 blocks: those shared
    assert shared_out(1024, 132, 256) == (1024, 132)         # 7 rounds and 100: most would work anyway
    assert shared_out(16, 132, 224) == (0, 128)              # one round of 16 blocks: 8 clusters each
    assert shared_out(72, 132, 256) == (72, 72)
    assert rounds(288, 132, 128) == pytest.approx(2 + 24 / 132 + SHARE_COST)
    assert rounds(1024, 132, 256) == 8


def test_a_single_round_is_shared_among_a_multiple_of_its_blocks_of_c():
    """Each block of C's K cut at the same tiles of K: its clusters read the same rows of A and B together."""
    for tiles in (1, 5, 7, 16, 33, 44):
        whole, working = shared_out(tiles, 132, 10**4)
        assert whole == 0 and working % tiles == 0 and 132 - tiles < working <= 132
        assert rounds(tiles, 132, 10**4) == pytest.approx(1 / (working // tiles) + SHARE_COST)


def test_a_round_whose_k_is_too_short_for_every_cluster_is_shared_by_fewer():
    assert shared_out(16, 132, -(-MIN_SHARE * 132 // 16)) == (0, 128)
    assert shared_out(16, 132, 4 * MIN_SHARE) == (0, 64)      # 64 clusters, each its least share
    assert rounds(16, 132, 4 * MIN_SHARE) == pytest.approx(16 / 64 + SHARE_COST)
    assert shared_out(3, 132, 493) == (0, 90)                 # 3 blocks of a deep product
    # too few clusters for the round to end sooner shared
    assert shared_out(16, 132, 3 * MIN_SHARE // 2) == (16, 16)
    assert rounds(16, 132, 3 * MIN_SHARE // 2) == 1
    assert rounds(16, 132, 2 * MIN_SHARE) == pytest.approx(16 / 32 + SHARE_COST)
    assert shared_out(7, 132, 0) == (7, 7)                    # K = 0: C = beta C, whole


def test_a_family_shares_fuller_single_rounds_where_its_kernels_gained_from_it():
    """dmma shares a deep single round filling half the clusters (wgmma's kernels keep it whole), at its
    own cost in rounds; the round filling every cluster, or a multiple of its blocks no larger, stays
    whole."""
    dmma = DmmaParams.single_round
    assert WgmmaParams.single_round == SingleRound(1 / 3, SHARE_COST)
    assert shared_out(64, 132, 1250) == (64, 64)
    assert shared_out(64, 132, 1250, dmma) == (0, 128)
    assert rounds(64, 132, 1250, dmma) == pytest.approx(64 / 128 + dmma.cost)
    assert shared_out(132, 132, 1250, dmma) == (132, 132)
    assert shared_out(100, 132, 1250, dmma) == (100, 100)
    assert shared_out(200, 132, 1250, dmma) == (200, 132)     # the last round of 68: fuller than a third
    assert shared_out(64, 132, 32, dmma) == (64, 64)          # two clusters a block: 16 tiles of K each
    assert shared_out(64, 132, 32) == (64, 64)


@pytest.mark.parametrize(("m", "n", "k", "block", "shares"), [
    (512, 512, 20000, (128, 64), True),         # 32 blocks of C, 4 clusters each
    (768, 256, 30000, (128, 64), True),
    (1024, 1024, 8192, (128, 64), False),       # 128 blocks: a round of all but 4 multiprocessors
    (50000, 16, 2000, (128, 64), False),        # 391 blocks in rounds
    (2048, 256, 512, (64, 64), False)])         # a K too short to share: 128 blocks whole
def test_dmma_fits_deep_products_of_few_blocks_a_larger_tile_with_its_k_shared(m, n, k, block, shares):
    tiled = fitted(DmmaParams("d", 2, 2, 64, 32, 4, 8, mma_k=8), m, n, k, 132)
    assert ((tiled.block_m, tiled.block_n), tiled.shares_k) == (block, shares)


def test_a_last_round_behind_whole_ones_is_shared_by_every_cluster_or_none():
    assert shared_out(140, 132, MIN_SHARE * 132 // 8 - 1) == (140, 132)
    assert shared_out(140, 132, MIN_SHARE * 132 // 8) == (132, 132)


@pytest.mark.parametrize("rendered", [render_wgmma(WgmmaParams("f16", 256, 2)),
                                      render_wgmma(WgmmaParams("bf16", 128, 2, cluster=2))],
                         ids=lambda r: r.params.describe())
def test_a_schedule_gives_its_grid_and_the_memory_shared_k_takes(rendered):
    p = rendered.params
    long_k = 1024 * p.block_k
    # 5 rows of blocks of C, 3 columns, K of one tile: in clusters of two the fifth row's second block
    # computes nothing
    tiles = -(-5 // p.cluster) * 3                          # blocks of C in clusters
    few = rendered.schedule(4 * p.block_m + 1, 3 * p.block_n, p.block_k, 132)
    assert few.grid == (15 if p.cluster == 1 else 18,) and few.whole == tiles and few.arrivals == 0
    # over a K too short for every block of the GPU, some of them share it, each its least share
    some = rendered.schedule(4 * p.block_m + 1, 3 * p.block_n, 4 * MIN_SHARE * p.block_k, 132)
    working = min(132 // p.cluster, tiles * 4)
    assert some.grid == (working * p.cluster,) and some.whole == 0
    assert some.partial_bytes == 2 * working * p.cluster * p.block_m * p.block_n * 4
    # those blocks over a long K: as many clusters as the GPU runs, less a few (a multiple of the blocks),
    # take a share of their K
    shared = rendered.schedule(4 * p.block_m + 1, 3 * p.block_n, long_k, 132)
    working = 132 // p.cluster - 132 // p.cluster % tiles        # a multiple of the blocks of C
    assert shared.grid == (working * p.cluster,) and shared.whole == 0
    assert shared.partial_bytes == 2 * working * p.cluster * p.block_m * p.block_n * 4
    assert shared.arrivals == (tiles + working) * p.cluster * p.consumers     # a counter a pair
    # 2 rounds of clusters and a few blocks more: those few shared
    clusters = 132 // p.cluster
    many = rendered.schedule((2 * clusters + 3) * p.cluster * p.block_m, p.block_n, long_k, 132)
    assert many.grid == (132,) and many.whole == 2 * clusters
    assert many.arrivals == (3 + clusters) * p.cluster * p.consumers


def test_the_dmma_family_keeps_every_block_of_c_whole():
    """Its consumers hold as many float64 as ptxas keeps in registers: no room for stream-K's state."""
    rendered = render_dmma(DmmaParams("d", cluster=2))
    p = rendered.params
    schedule = rendered.schedule(4 * p.block_m + 1, 3 * p.block_n, 64 * p.block_k, 132)
    assert schedule.grid == (18,) and not schedule.shares_k and schedule.arrivals == 0
