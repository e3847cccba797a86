"""The thresholds that route and shape a call (``profiles.thresholds``): data in the device's profile,
validated as strictly as the rest of it, else its device class's defaults, and followed by the calls."""

import dataclasses
import json

import numpy as np
import pytest

import autogemm
from autogemm.engine import dispatch
from autogemm.errors import ProfileError
from autogemm.profiles import Profile, Thresholds, save, store, thresholds, thresholds_for
from autogemm.profiles.thresholds import device_class


def _profile(device, limits=None):
    return Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                   "2026-11-28T10:00:00+00:00", "60s", thresholds=limits)


def test_thresholds_read_back_from_a_profile_and_a_field_left_out_keeps_its_default(device):
    limits = Thresholds(stream_bytes=12345, block_tiles=0.5, cuda_min_multiply_adds=(("d", 7),),
                        numpy_on_opencl=("z",), shallow_predicted_depth=(("d", 8), ("z", 4)))
    text = _profile(device, limits).to_json()
    assert Profile.from_json(text).thresholds == limits
    assert Profile.from_json(_profile(device).to_json()).thresholds is None       # profiles without them read
    data = json.loads(text)
    data["thresholds"] = {"max_blocks": 3}
    assert Profile.from_json(json.dumps(data)).thresholds == Thresholds(max_blocks=3)


@pytest.mark.parametrize("field, value, message", [
    ("stream_bytes", -1, r"thresholds.stream_bytes must be an integer"),
    ("stream_bytes", True, r"thresholds.stream_bytes must be an integer"),
    ("block_tiles", float("nan"), r"thresholds.block_tiles must be a number"),
    ("cuda_min_multiply_adds", {"q": 1}, r"'q' is not a dtype"),
    ("numpy_on_opencl", "d", r"must be a list of dtypes"),
    ("shallow_predicted_depth", 8, r"thresholds.shallow_predicted_depth must be an object of dtypes"),
    ("threads", 4, r"unknown fields \['threads'\]")])
def test_a_forged_threshold_is_refused_naming_the_field(device, field, value, message):
    data = json.loads(_profile(device, Thresholds()).to_json())
    data["thresholds"][field] = value
    with pytest.raises(ProfileError, match=message):
        Profile.from_json(json.dumps(data))


def test_a_device_follows_its_profiles_thresholds_else_its_class_defaults(cache, device):
    assert thresholds_for(device) is thresholds.DEFAULTS[device_class(device)]
    mine = Thresholds(stream_bytes=4096)
    save(_profile(device, mine))
    store.forget()
    # the fields the profile names, over its class's defaults for the rest
    row = thresholds.DEFAULTS[device_class(device)]
    followed = thresholds_for(device)
    assert followed == dataclasses.replace(row, stream_bytes=4096) and followed.given == ("stream_bytes",)


def test_what_tune_measures_is_named_and_the_rest_follows_the_class_row():
    """A profile made before a field existed (or that leaves it out) follows the device class's row for
    it, not the field's default in code: the CPU's conflict stride reaches a CPU profile that only names
    what tune measured there."""
    cpu = Thresholds(conflict_stride_bytes=1024)
    measured = Thresholds().measured(in_place_multiply_adds=2**30, host_multiply_adds=(("s", 2**20),))
    assert measured.given == ("host_multiply_adds", "in_place_multiply_adds")
    read = Thresholds.from_dict(measured.to_dict(changed_only=True))
    assert read == measured and read.given == measured.given
    followed = read.over(cpu)
    assert followed.conflict_stride_bytes == 1024 and followed.in_place_multiply_adds == 2**30
    assert Thresholds(stream_bytes=1).over(cpu) == Thresholds(stream_bytes=1)      # whole, made in code
    # what tune measured over the row the device followed keeps only what it measured: a class default
    # changed later (the CPU's conflict stride here) still reaches the profile
    over_row = cpu.measured(in_place_multiply_adds=2**30)
    assert over_row.to_dict(changed_only=True) == {"in_place_multiply_adds": 2**30}
    assert Thresholds.from_dict(over_row.to_dict(changed_only=True)).over(
        Thresholds(conflict_stride_bytes=512)).conflict_stride_bytes == 512


def test_a_profile_that_lowers_stream_bytes_streams_the_product(cache, device, monkeypatch):
    """The route follows the data: numpy operands past the profile's ``stream_bytes`` run as a share of
    the device, below it as one product."""
    save(_profile(device, Thresholds(stream_bytes=40000)))
    store.forget()
    streamed = []
    real = dispatch.run_on_targets
    monkeypatch.setattr(dispatch, "run_on_targets", lambda call, *rest: streamed.append(call.m) or real(call, *rest))
    rng = np.random.default_rng(3)
    for m in (20, 120):                                   # 20 x 60 x 60 float32: 24 KB; 120 rows: 72 KB
        a, b = rng.random((m, 60)).astype(np.float32), rng.random((60, 60)).astype(np.float32)
        got = autogemm.gemm(a, b, device=device)
        assert np.allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-5)
    assert streamed == [120]


def test_profile_show_says_which_thresholds_a_device_follows(device, tmp_path):
    from click.testing import CliRunner

    from autogemm.cli import main

    path = tmp_path / "mine.json"
    path.write_text(_profile(device, Thresholds(stream_bytes=3 * 2**30, max_blocks=4)).to_json())
    out = CliRunner().invoke(main, ["profile", "show", str(path)])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "the profile's own over its device class's defaults" in text
    stream = next(line for line in out.output.splitlines() if line.startswith("stream_bytes"))
    assert stream.split()[1:] == ["3", "GiB", "1.5", "GiB"]
    # a field the profile does not name shows what the device follows: its class's default
    cells = next(line for line in out.output.splitlines() if line.startswith("conflict_stride_bytes")).split()[1:]
    assert cells[:len(cells) // 2] == cells[len(cells) // 2:]
    path.write_text(_profile(device).to_json())
    out = CliRunner().invoke(main, ["profile", "show", str(path)])
    assert "its device class's defaults (the profile holds none)" in " ".join(out.output.split())


@pytest.mark.parametrize("trans_a, trans_b", [("N", "N"), ("T", "N"), ("N", "T")])     # the simt family's layouts
def test_a_small_product_reads_its_operands_as_stored_and_a_larger_one_as_chosen(cache, ctx, device, trans_a,
                                                                                 trans_b):
    """Below ``in_place_multiply_adds`` the chosen configuration runs in the operands' stored layout: one
    launch, no pack (where its family has that layout: the cpu family, a CPU's default, reads B only as
    stored, so B^T is packed and A read as stored); from it, as chosen. Either way the product is right."""
    from autogemm.blas import GemmProblem, Op
    from autogemm.blas.plans import gemm_plan

    s = autogemm.dtypes.DTYPES["s"]
    problem = GemmProblem.dense(s, 33, 47, 29, Op.from_letter(trans_a, "a"), Op.from_letter(trans_b, "b"))
    chosen = gemm_plan(ctx, problem)
    stored = trans_a + trans_b
    if dataclasses.replace(chosen.params, layout=stored).malformed() is None:
        assert chosen.params.layout == stored and chosen.launches()[0].startswith("gemm"), chosen.describe()
    else:
        assert chosen.params.layout[0] == trans_a and chosen.launches()[0].startswith("pack B"), chosen.describe()
    save(_profile(device, Thresholds(in_place_multiply_adds=33 * 47 * 29)))
    store.forget()
    as_chosen = gemm_plan(ctx, problem)
    assert as_chosen.params == dataclasses.replace(chosen.params, layout=as_chosen.params.layout)
    if as_chosen.params.layout != stored:
        assert "pack" in as_chosen.describe()
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (29, 33) if trans_a == "T" else (33, 29)).astype(np.float32)
    b = rng.uniform(-1, 1, (47, 29) if trans_b == "T" else (29, 47)).astype(np.float32)
    want = (a.T if trans_a == "T" else a).astype(np.float64) @ (b.T if trans_b == "T" else b)
    for limits in (Thresholds(), Thresholds(in_place_multiply_adds=0)):
        save(_profile(device, limits))
        store.forget()
        autogemm.clear_plans()
        got = autogemm.gemm(a, b, trans_a=trans_a, trans_b=trans_b, device=device)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
