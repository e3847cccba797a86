"""The simt parameter space: validation of configurations from outside, and ``check``'s reasons."""

from __future__ import annotations

import dataclasses
import random

import pytest
from codelet_sample import draw

from autogemm import ConfigError, SimtParams
from autogemm.codelets.registry import SpaceFacts
from autogemm.codelets.simt import check, render
from autogemm.codelets.simt.check import register_cap
from autogemm.codelets.simt.geometry import register_estimate
from autogemm.codelets.simt.space import space as simt_space
from autogemm.dtypes import DTYPES


def test_round_trip_through_dict():
    params = SimtParams("NT", "consecutive", 4, 16, 8, 2, 16, 2, False, True, False, True, True, True, False,
                        "mad", ("-cl-mad-enable",), 8)
    assert SimtParams.from_dict(params.to_dict()) == params


@pytest.mark.parametrize("data,words", [
    ({"tile_rows": "8"}, "integer"),
    ({"tile_rows": 3}, "tile_rows"),
    ({"local_a": 1}, "true or false"),
    ({"layout": "TC"}, "layout"),
    ({"mac": "exp"}, "mac"),
    ({"evil": 1}, "unknown"),
    ({"build_options": ["-D X=1"]}, "not one autogemm allows"),
    ({"build_options": ["-cl-nv-maxrregcount=9999"]}, "not one autogemm allows"),
    ({"build_options": "-cl-mad-enable"}, "list"),
    ({"vector_width": 8, "tile_rows": 4}, "must divide"),
    ({"double_buffer": True, "local_a": False, "local_b": False}, "need an operand in local"),
    ({"warp_cols": 3}, "warp_cols"),
    ({"wg_rows": 8, "wg_cols": 8, "warp_cols": 8}, "plain arrangement"),
    ({"wg_rows": 4, "wg_cols": 4, "warp_cols": 2}, "must tile"),
    ({"wg_rows": 2, "wg_cols": 16, "warp_cols": 4}, "must tile"),
])
def test_from_dict_rejects_forged_or_invalid(data, words):
    with pytest.raises(ConfigError, match=words):
        SimtParams.from_dict(data)


def test_check_reasons(device):
    with_limits = dataclasses.replace(device, max_work_group_size=64, local_mem_bytes=4096, fp64=False,
                                      image_support=False)
    cases = [
        (SimtParams(wg_rows=16, wg_cols=16), "s", "work-group of 256"),
        (SimtParams(wg_rows=8, wg_cols=8, tile_rows=8, tile_cols=8, tile_k=16), "s", "local memory"),
        (SimtParams(), "d", "double precision"),
        (SimtParams(image_a=True, vector_width=4, tile_rows=4, tile_cols=4), "s", "no image support"),
        (SimtParams(build_options=("-cl-nv-maxrregcount=128",)), "s", "NVIDIA"),
    ]
    for params, dtype, words in cases:
        if "NVIDIA" in words and with_limits.is_nvidia:
            continue
        assert words in (check(params, with_limits, dtype) or ""), (params, words)


def test_register_budget_prunes_as_raijincl(device):
    big = SimtParams(tile_rows=8, tile_cols=8, vector_width=2, local_a=False, local_b=False)
    assert register_estimate(big, "z") > 128
    budget = dataclasses.replace(device, vendor="Other", platform_name="Other")
    assert "registers" in check(big, budget, "z")
    assert check(big, budget, "s") is None


def test_nvidia_register_caps_are_searched_and_held_to(device):
    nvidia = dataclasses.replace(device, vendor="NVIDIA Corporation", platform_name="NVIDIA CUDA", device_type="GPU",
                                 max_work_group_size=1024, local_mem_bytes=49152, fp64=True)
    big = SimtParams("NN", "offset", 16, 16, 8, 8, 8, 4, True, True, build_options=("-cl-nv-maxrregcount=128",))
    assert "over the cap of 128" in check(big, nvidia, "d")
    assert check(dataclasses.replace(big, build_options=("-cl-nv-maxrregcount=255",)), nvidia, "d") is None
    tuning_space = simt_space(SpaceFacts(nvidia, DTYPES["s"]))
    assert {register_cap(tuning_space.config(p)) for p in tuning_space.points()} == {255, 168, 128}
    own = simt_space(SpaceFacts(device, DTYPES["s"]))
    assert {register_cap(own.config(p)) for p in own.points()} == ({255, 168, 128} if device.is_nvidia else {None})


def test_image_texel_rules(device):
    img = dataclasses.replace(device, image_support=True)
    assert "multiple" in check(SimtParams(image_a=True, vector_width=2, tile_rows=2, tile_cols=2), img, "s")
    direct_k = SimtParams(layout="NN", image_a=True, local_a=False, vector_width=4, tile_rows=4, tile_cols=4)
    assert "layout" in check(direct_k, img, "s")


def test_the_tuning_space_and_draws_from_the_codelet_space_are_valid(device):
    space = simt_space(SpaceFacts(device, DTYPES["s"]))
    assert len(space) and all(check(space.config(p), device, "s") is None for p in space.points()[:200])
    rng = random.Random(3)
    drawn = {draw(device, "c", rng, {}) for _ in range(50)}
    assert len(drawn) > 40 and all(check(p, device, "c") is None for p in drawn)


def test_generated_source_names_its_parameters():
    params = SimtParams("NN", "consecutive", 4, 8, 2, 4, 8, 2, True, False, double_buffer=True, local_pad=True)
    src = render(params, "z").source
    for name, value in [("WG_ROWS", 4), ("WG_COLS", 8), ("TILE_ROWS", 2), ("TILE_COLS", 4), ("TILE_K", 8),
                        ("VW", 2), ("NBUF", 2)]:
        assert f"#define {name} {value}" in src
    assert "layout NN" in src and "double buffering" in src and "cl_khr_fp64" in src
    whole = render(params, "z", guarded=False).source
    assert "zero outside" not in whole and "zero outside" in src


def test_a_large_space_enumerated_in_processes_finds_the_same_points(device, monkeypatch):
    from autogemm.tuning import enumeration

    monkeypatch.setattr(enumeration, "PARALLEL_FROM", 1000)
    facts = SpaceFacts(device, DTYPES["c"], skinny=True)
    parallel, alone = simt_space(facts), simt_space(facts)
    assert parallel.product_size >= 1000
    with enumeration.Enumerator(processes=2) as enumerator:
        enumerator.enumerate(facts, [parallel])
        assert parallel._points is not None        # found by the processes, not on asking
    assert parallel.points() == alone.points() and len(alone) > 0
    assert all(parallel.valid(p) for p in alone.points()[:50])


def test_smaller_blocks_halve_the_block_keeping_each_work_items_share_longest():
    large = SimtParams("NN", "offset", 16, 16, 8, 8, 8, 4, True, True, double_buffer=True,
                       build_options=("-cl-nv-maxrregcount=168",), warp_cols=8)
    blocks = [(c.block_rows, c.block_cols, c.wg_rows, c.wg_cols, c.tile_rows, c.tile_cols, c.warp_cols)
              for c in large.smaller_blocks()]
    # 4 x 8 patches of a warp still tile the 8 x 16 work-group, not the 8 x 8 one (its rows as they come)
    assert blocks == [(128, 64, 16, 16, 8, 4, 8), (64, 64, 8, 16, 8, 4, 8), (32, 32, 8, 8, 4, 4, 0)]
    assert all(c.malformed() is None and dataclasses.replace(c, wg_rows=0, wg_cols=0, tile_rows=0, tile_cols=0,
                                                             warp_cols=0)
               == dataclasses.replace(large, wg_rows=0, wg_cols=0, tile_rows=0, tile_cols=0, warp_cols=0)
               for c in large.smaller_blocks())
    # a tile as narrow as its vectors halves no further: no smaller block
    assert SimtParams("NN", "offset", 8, 8, 4, 4, 8, 4).smaller_blocks() == ()
