"""The subgroup family: A shared among a subgroup's work-items by shuffles. Every spelling renders; the
portable one (local memory) runs here through plans like any family; the real shuffles run wherever the
device offers them (cl_intel_subgroups, cl_khr_subgroup_shuffle, NVIDIA's PTX)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from gemm_check import run_and_check

from autogemm.codelets.registry import check, params_from_dict, render
from autogemm.codelets.subgroup import SubgroupParams, shuffles_available
from autogemm.dtypes import DTYPES
from autogemm.errors import ConfigError

PORTABLE = SubgroupParams(layout="NN", subgroup=8, wg_rows=2, tile_rows=2, vector_width=2, shuffle="local",
                          mac="mul_add")


@pytest.mark.parametrize("letter", "sdcz")
@pytest.mark.parametrize("layout,ta,tb", [("NN", "N", "N"), ("TN", "T", "N"), ("TN", "C", "N"), ("NN", "N", "T")])
@pytest.mark.parametrize("edge", ["guard", "pad"])
def test_the_portable_spelling_is_exact(ctx, letter, layout, ta, tb, edge):
    params = dataclasses.replace(PORTABLE, layout=layout)
    rng = np.random.default_rng(2)
    for m, n, k, alpha, beta in ((37, 29, 21, 1.0, 0.0), (16, 32, 48, -0.5, 2.0)):
        run_and_check(ctx, params, DTYPES[letter], m, n, k, ta, tb, alpha, beta, edge, rng, extra_ld=2, offset=3)


@pytest.mark.parametrize("letter", "sz")
@pytest.mark.parametrize("edge", ["guard", "pad"])
def test_split_k_works_for_the_family_too(ctx, letter, edge):
    """Summed in the kernel (guarded: one launch) or merged (padded)."""
    from autogemm.blas import GemmProblem
    from autogemm.blas.plans import gemm_plan

    run_and_check(ctx, PORTABLE, DTYPES[letter], 20, 33, 300, "N", "N", 1.5, 0.5, edge, np.random.default_rng(3),
                  extra_ld=2, offset=1, split_k=3)
    plan = gemm_plan(ctx, GemmProblem.dense(DTYPES[letter], 20, 33, 300), PORTABLE, edge, 3)
    assert plan.summed == (edge == "guard") and (len(plan.launches()) == 1) == (edge == "guard")


@pytest.mark.parametrize("shuffle", ["intel", "khr", "ptx", "local"])
@pytest.mark.parametrize("letter", "sz")
def test_every_spelling_renders_its_shuffle(shuffle, letter):
    params = dataclasses.replace(PORTABLE, shuffle=shuffle, subgroup=32 if shuffle == "ptx" else 8)
    source = render(params, letter).source
    marker = {"intel": "intel_sub_group_shuffle(", "khr": "sub_group_shuffle(", "ptx": "shfl.sync.idx.b32",
              "local": "exchange[sg][i][kk]"}[shuffle]
    assert marker in source and "configuration: subgroup NN sg" in source
    assert ("intel_reqd_sub_group_size" in source) == (shuffle == "intel")


def test_check_offers_only_the_shuffles_a_device_has(device):
    offered = shuffles_available(device)
    for shuffle in ("intel", "khr", "ptx"):
        params = dataclasses.replace(PORTABLE, shuffle=shuffle, subgroup=32 if shuffle == "ptx" else 8)
        reason = check(params, device, "s")
        assert (reason is None) == (shuffle in offered), reason
    assert check(PORTABLE, device, "s") is None
    nvidia = dataclasses.replace(device, vendor="NVIDIA Corporation", platform_name="NVIDIA CUDA")
    assert "subgroup must be 32" in check(dataclasses.replace(PORTABLE, shuffle="ptx"), nvidia, "s")


def test_configurations_round_trip_and_forged_ones_fail():
    data = json.loads(json.dumps(PORTABLE.to_dict()))
    assert data["family"] == "subgroup" and params_from_dict(data) == PORTABLE
    for bad, words in (({**data, "shuffle": "magic"}, "shuffle="),
                       ({**data, "family": "tensor"}, "unknown kernel family"),
                       ({**data, "subgroup": 12}, "subgroup=12"), ({**data, "extra": 1}, "unknown subgroup parameter")):
        with pytest.raises(ConfigError, match=words):
            params_from_dict(bad)


@pytest.mark.parametrize("letter", "sdcz")
def test_the_device_shuffles_are_exact_where_offered(ctx, device, letter):
    offered = shuffles_available(device)
    if not offered:
        pytest.skip(f"{device.name.strip()} offers no subgroup shuffle")
    for shuffle in offered:
        params = dataclasses.replace(PORTABLE, shuffle=shuffle, subgroup=32 if shuffle == "ptx" else 8, wg_rows=1)
        if check(params, device, letter) is None:
            run_and_check(ctx, params, DTYPES[letter], 45, 70, 50, "N", "N", 1.0, 0.5, "guard",
                          np.random.default_rng(5))


def test_the_tuning_space_follows_the_shuffles_offered(device):
    from autogemm.codelets.registry import SpaceFacts
    from autogemm.codelets.subgroup.space import space as subgroup_space

    bare = dataclasses.replace(device, extensions=(), vendor="Other", platform_name="Other")
    assert subgroup_space(SpaceFacts(bare, DTYPES["s"])) is None
    khr = dataclasses.replace(bare, extensions=("cl_khr_subgroup_shuffle",))
    space = subgroup_space(SpaceFacts(khr, DTYPES["s"]))
    configs = [space.config(p) for p in space.points()]
    assert configs and {c.shuffle for c in configs} == {"khr"} and {c.subgroup for c in configs} <= {8, 16, 32}
    assert all(check(c, khr, "s") is None for c in configs)
    nvidia = dataclasses.replace(bare, vendor="NVIDIA Corporation", platform_name="NVIDIA CUDA")
    nvidia_space = subgroup_space(SpaceFacts(nvidia, DTYPES["s"]))
    assert {nvidia_space.config(p).subgroup for p in nvidia_space.points()} == {32}


def test_the_tuner_searches_every_family_offered_into_one_profile(ctx, monkeypatch, tmp_path):
    from autogemm.codelets import registry, subgroup
    from autogemm.codelets.subgroup.space import space as subgroup_space
    from autogemm.tuning import Budget, TuneListener, tune

    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    portable = dataclasses.replace(subgroup.FAMILY, space=lambda facts: subgroup_space(facts, shuffles=("local",)))
    monkeypatch.setitem(registry._FAMILIES, "subgroup", portable)
    families = []

    class Listener(TuneListener):
        def class_started(self, dtype, size, space, objective):
            families.append(space.family)

    profile = tune(ctx.device, (DTYPES["s"],), Budget(evaluations=20), quick=True, top=2, listener=Listener(),
                   write=False, classes=("small",))
    # the family of the class default first (simt on a GPU, the CPU's own family on a CPU), then the
    # others in the registry's order (the tensor-core one on an NVIDIA GPU last)
    assert families[0] == ("simt" if ctx.device.is_gpu else "cpu") and len(set(families)) == len(families)
    assert families.index("simt") < families.index("subgroup") and ("cpu" in families) == (not ctx.device.is_gpu)
    entry = profile.entry("s", "small")
    assert entry.evaluations >= 3 and entry.ranked
    checkpoint = next((tmp_path / "checkpoints").glob("*-s-*.jsonl")).read_text()
    assert '"family":"subgroup"' in checkpoint


def test_a_retune_measures_the_profiles_configurations_first(ctx, monkeypatch, tmp_path):
    from autogemm.blas import default_params
    from autogemm.profiles import profile_for
    from autogemm.tuning import Budget, TuneListener, tune

    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    first = tune(ctx.device, (DTYPES["s"],), Budget(evaluations=6), quick=True, top=3, classes=("small",))
    stored = profile_for(ctx.device).entry("s", "small").ranked
    assert [r.config for r in stored] == [r.config for r in first.entry("s", "small").ranked]
    wanted = [dataclasses.replace(r.config, mac="fma") for r in stored]
    measured = []

    class Listener(TuneListener):
        def record(self, objective, record, fresh):
            measured.append(dataclasses.replace(record.config, mac="fma"))

    tune(ctx.device, (DTYPES["s"],), Budget(evaluations=len(wanted) + 2), quick=True, fresh=True, listener=Listener(),
         classes=("small",), write=False)
    # a fresh run starts from the class default, not from the profile (whose ranking may begin with it too),
    # with the build options the space gives every point (on NVIDIA a register cap)
    assert dataclasses.replace(measured[0], build_options=()) == dataclasses.replace(
        default_params(ctx.device, DTYPES["s"]), mac="fma")
    measured.clear()
    tune(ctx.device, (DTYPES["s"],), Budget(evaluations=len(wanted) + 2), quick=True, listener=Listener(),
         classes=("small",), write=False)
    # each family's search measures that family's configurations of the profile first (as far as its share
    # of the budget goes), in any order: measure_many reports those the checkpoint answers before those it
    # measures anew, and on Debian's PoCL which ones it measured anew varied from run to run
    searched: dict[str, list] = {}
    for config in measured:
        searched.setdefault(config.family, []).append(config)
    assert {c.family for c in wanted} <= set(searched)
    for family, configs in searched.items():
        known = {c for c in wanted if c.family == family}
        if len(configs) >= len(known):
            assert set(configs[:len(known)]) == known, family
        else:
            assert set(configs) <= known, family
