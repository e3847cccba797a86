"""Profiles: round trip, strict validation of data from outside (corrupted, truncated, forged, foreign
profiles are rejected with a clear message and the library falls back), concurrent writers, and gemm
picking its kernel from the profile by dtype and shape."""

from __future__ import annotations

import dataclasses
import importlib
import json
import multiprocessing
import warnings

import numpy as np
import pytest
from limits import set_thresholds

import autogemm
from autogemm.blas import GemmProblem, Op
from autogemm.blas.gemv import GemvProblem
from autogemm.blas.plans import gemm_plan, gemv_plan
from autogemm.blas.selection import choose_params
from autogemm.codelets.dmma import DmmaParams
from autogemm.codelets.gemv import GemvParams
from autogemm.codelets.simt import SimtParams
from autogemm.codelets.wgmma import WgmmaParams
from autogemm.errors import ProfileError
from autogemm.profiles import (
    CudaEntry,
    HybridEntry,
    Predictor,
    Profile,
    ProfileWarning,
    Ranked,
    Sample,
    SizeClassEntry,
    path_for,
    profile_for,
    read,
    save,
    store,
)

LARGE = SimtParams("NN", "consecutive", 8, 4, 2, 4, 4, 2, False, False, mac="mul_add")
SMALL = SimtParams("NT", "offset", 4, 8, 1, 2, 2, 1, True, False, mac="mul_add")   # blocks 4 x 16


@pytest.fixture(autouse=True)
def choices_as_stored(monkeypatch):
    """These tests are about which of a profile's configurations is chosen: no product here is small
    enough to take its choice in the layout it is stored in instead (``selection.read_as_stored``)."""
    set_thresholds(monkeypatch, in_place_multiply_adds=0)


GEMV_N, GEMV_T, GEMV_T_LONG = GemvParams("N", 16, 2, 2, 4, 0), GemvParams("T", 32, 4, 1, 2, 4), GemvParams("T", 64, 4)


#: The CUDA path's entries: FP16 faster there at the large class, slower at the small one.
CUDA_ENTRIES = {"h": (CudaEntry("large", (8192,) * 3, WgmmaParams("f16", 256, 2, 4, 16, out="f16"), 6.4e5, 3.1e5,
                                30, 60.0),
                      CudaEntry("small", (512,) * 3, WgmmaParams("f16", 128, 1, 3, 8, out="f16"), 9e4, 1e5, 20, 9.0)),
                "d": (CudaEntry("large", (8192,) * 3, DmmaParams("d", 2, 4, 32, 64, 3, 8, mma_k=4), 5.2e4, 4.6e4, 12,
                                30.0),)}


PREDICTORS = {"s": Predictor((LARGE, SMALL), (Sample("NT", (64, 512, 256), (((1, 10.0), (2, 14.0)), ((1, 8.0),))),
                                              Sample("NN", (300, 300, 300), (((1, 20.0),), ()))), 3.0)}


def make_profile(device, entries: dict[str, list[SizeClassEntry]] | None = None,
                 predictors: dict[str, Predictor] | None = None) -> Profile:
    entries = entries or {"s": [SizeClassEntry("large", (256, 256, 256), (Ranked(LARGE, 20.5),), "model", 30, 12.0),
                                SizeClassEntry("small", (32, 32, 32), (Ranked(SMALL, 1.5),), "model", 10, 3.0)]}
    gemv = {"d": (SizeClassEntry("n-square", (1024, 1024, 1), (Ranked(GEMV_N, 3.5),), "model", 20, 4.0),
                  SizeClassEntry("t-square", (1024, 1024, 1), (Ranked(GEMV_T, 2.5),), "model", 20, 4.0),
                  SizeClassEntry("t-long", (8192, 128, 1), (Ranked(GEMV_T_LONG, 2.0),), "model", 20, 4.0))}
    hybrid = {"s": (HybridEntry((512, 512, 512), 8, 3, LARGE, 12.0, 9, 1.5),
                    HybridEntry((4096, 4096, 4096), 8, 0, SMALL, 30.0, 9, 4.5))}
    return Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                   "2026-11-22T10:00:00+00:00", "90s", {"s4": "fma"}, {k: tuple(v) for k, v in entries.items()}, gemv,
                   hybrid, predictors=predictors or {}, cuda=CUDA_ENTRIES)


def test_round_trip(device):
    prof = make_profile(device, predictors=PREDICTORS)
    assert Profile.from_json(prof.to_json()) == prof
    without_gemv = dataclasses.replace(prof, gemv={})
    assert "gemv" not in without_gemv.to_dict()            # as profiles made before GEMV was tuned
    assert Profile.from_json(without_gemv.to_json()) == without_gemv
    assert [e.name for e in prof.gemv_entries("d", "T")] == ["t-square", "t-long"] and not prof.gemv_entries("s", "N")
    without_cuda = dataclasses.replace(prof, cuda={})
    assert "cuda" not in without_cuda.to_dict() and Profile.from_json(without_cuda.to_json()) == without_cuda


def test_a_cuda_entry_says_which_backend_was_faster_for_the_products_nearest_it(device):
    prof = make_profile(device)
    assert prof.cuda_entry("h", 6000, 6000, 6000).backend == "cuda"
    assert prof.cuda_entry("h", 300, 300, 300).backend == "opencl"
    assert prof.cuda_entry("d", 100, 100, 100).config == DmmaParams("d", 2, 4, 32, 64, 3, 8, mma_k=4)
    assert prof.cuda_entry("s", 300, 300, 300) is None
    retuned = CudaEntry("small", (512,) * 3, WgmmaParams("f16", 64, 1, 4, 8, out="f16"), 1.2e5, 1e5, 5, 2.0)
    newer = dataclasses.replace(make_profile(device), cuda={"h": (retuned,)})
    merged = newer.merged_into(prof)
    assert [e.name for e in merged.cuda["h"]] == ["large", "small"] and merged.cuda["h"][1] == retuned
    assert merged.cuda["d"] == prof.cuda["d"]

def test_gemv_picks_the_class_nearest_in_shape(cache, ctx, device):
    """A tall, narrow A^T x (few outputs, a long reduction) takes the long class's configuration, a square
    one the square class's (fitted to them: as they are); a dtype without entries the default. (A x of
    many short rows takes the N class's, fitted: fewer work-items a row.)"""
    save(make_profile(device))
    d = autogemm.dtypes.DTYPES["d"]
    tall = gemv_plan(ctx, GemvProblem(d, 20000, 100, Op(True), 100))
    square = gemv_plan(ctx, GemvProblem(d, 900, 1200, Op(True), 1200))
    rows = gemv_plan(ctx, GemvProblem(d, 20000, 100, Op(), 100))
    fitted_n = GEMV_N.fitted_to(20000, 100, 1, device.compute_units)
    assert fitted_n.wg_x < GEMV_N.wg_x
    assert (tall.params, square.params, rows.params) == (GEMV_T_LONG, GEMV_T, fitted_n)
    assert tall.params_source.endswith("t-long") and square.params_source.endswith("t-square")
    assert gemv_plan(ctx, GemvProblem(autogemm.dtypes.DTYPES["s"], 9, 9, Op(), 9)).params_source == "default"


def forge(data: dict, path: tuple, value) -> dict:
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


CONFIG = ("dtypes", "s", 0, "ranked", 0, "config")
FORGERIES = [
    ((CONFIG + ("build_options",)), ["-DTILE_ROWS=1); evil(); //"], "build option"),
    ((CONFIG + ("layout",)), "TN\n#define mac(a,b,c) 0", "layout"),
    ((CONFIG + ("tile_rows",)), 3, "tile_rows"),
    ((CONFIG + ("tile_rows",)), "8", "tile_rows must be an integer"),
    ((CONFIG + ("source",)), "__kernel void gemm() {}", "unknown simt parameter"),
    (("dtypes", "s", 0, "ranked", 0, "gflops"), float("nan"), "gflops"),
    (("dtypes", "s", 0, "ranked", 0, "gflops"), -1, "gflops"),
    (("dtypes", "s", 0, "shape"), [256, 256], "shape"),
    (("dtypes", "s", 0, "shape"), [256, 256, 2**40], "shape"),
    (("dtypes", "s", 0, "class"), "Large Class!", "class"),
    (("dtypes", "q"), [], "unknown dtype"),
    (("device", "fingerprint"), "not-hex", "fingerprint"),
    (("version",), 2, "newer autogemm"),
    (("format",), "something else", "format"),
    (("created",), "yesterday", "ISO 8601"),
    (("fma", "s4"), "system('x')", "fma"),
    (("budget",), KeyError, "missing budget"),
    (("extra",), 1, "unexpected extra"),
    (("gemv", "d", 0, "ranked", 0, "config", "family"), "simt", "unknown kernel family 'simt'"),
    (("gemv", "d", 0, "ranked", 0, "config", "wg_x"), 3, "wg_x=3"),
    (("gemv", "d", 0, "ranked", 0, "config", "build_options"), ["-D x=1"], "build option"),
    (("gemv", "d", 0, "ranked", 0, "config", "layout"), "T", "must be a layout and a shape"),
    (("gemv", "d", 1, "class"), "large", "must be a layout and a shape"),
    (("gemv", "d", 1, "class"), "n-long", "hold configurations of that layout"),
    (CONFIG, GEMV_N.to_dict(), "unknown kernel family 'gemv'"),
    (("hybrid", "s", 0, "host_parts"), 9, "host_parts must be an integer in 0..8"),
    (("hybrid", "s", 0, "parts"), 0, "parts must be an integer in 1..256"),
    (("hybrid", "s", 0, "config", "build_options"), ["-D x=1"], "build option"),
    (("hybrid", "s", 0, "shell"), "rm -rf /", "unexpected shell"),
    (("hybrid", "s", 1, "shape"), [512, 512, 512], "shapes repeat"),
    (("hybrid", "q"), [], "unknown dtype"),
    (("predictor", "s", "bank", 0, "build_options"), ["-D x=1"], "build option"),
    (("predictor", "s", "bank", 0, "source"), "__kernel void gemm() {}", "unknown simt parameter"),
    (("predictor", "s", "bank"), [], "bank must be a list of 1 to"),
    (("predictor", "s", "bank", 1), LARGE.to_dict(), "configurations repeat"),
    (("predictor", "s", "samples"), [], "samples must be a list of 1 to"),
    (("predictor", "s", "samples", 0, "rates"), [[]], "must be a list of 2 lists"),
    (("predictor", "s", "samples", 0, "rates", 0, 0), [1], r"rates\[0\]\[0\] must be \[split, gflops\]"),
    (("predictor", "s", "samples", 0, "rates", 0, 0, 0), -1, "split must be an integer in 0.."),
    (("predictor", "s", "samples", 0, "rates", 0, 0, 0), "2", "split must be an integer"),
    (("predictor", "s", "samples", 0, "rates", 0, 0, 1), float("inf"), "gflops must be a number"),
    (("predictor", "s", "samples", 0, "rates", 0, 1, 0), 1, "splits repeat"),
    (("predictor", "s", "samples", 0, "layout"), "N;", "layout 'N;' is not of the expected form"),
    (("predictor", "s", "samples", 1, "shape"), [0, 300, 300], "shape must be an integer in 1.."),
    (("predictor", "s", "samples", 1, "code"), "import os", "unexpected code"),
    (("predictor", "s", "seconds"), -1, "seconds must be a number"),
    (("predictor", "s", "launch"), "1e9", "launch must be a number"),
    (("predictor", "s", "model"), "lambda: 0", "unexpected model"),
    (("predictor", "q"), {}, "unknown dtype"),
    (("cuda", "h", 0, "config", "stages"), 9, "stages=9"),
    (("cuda", "h", 0, "config", "out"), "bf16", "out bf16"),
    (("cuda", "d", 0, "config"), DmmaParams("z", 2, 4, 32, 32, 6, 8).to_dict(), "it multiplies z, not d"),
    (("cuda", "h", 0, "config"), DmmaParams("d").to_dict(), "it multiplies d, not h"),
    (("cuda", "d", 0, "config"), LARGE.to_dict(), "unknown kernel family 'simt'"),
    (CONFIG, DmmaParams().to_dict(), "unknown kernel family 'dmma'"),
    (("cuda", "h", 1, "class"), "large", "size classes repeat"),
    (("cuda", "h", 0, "opencl_gflops"), -1, "opencl_gflops"),
    (("cuda", "h", 0, "kernel"), "__global__ void f() {}", "unexpected kernel"),
    (("cuda", "q"), [], "unknown dtype"),
]


@pytest.mark.parametrize("path,value,message", FORGERIES, ids=[f"{'.'.join(map(str, f[0]))}" for f in FORGERIES])
def test_a_forged_field_is_rejected(device, path, value, message):
    data = forge(json.loads(make_profile(device, predictors=PREDICTORS).to_json()), path, value)
    with pytest.raises(ProfileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Profile.from_json(json.dumps(data), source="forged.json")


@pytest.mark.parametrize("cut", [0, 1, 100, -2])
def test_a_truncated_or_corrupted_profile_is_rejected(device, cut):
    text = make_profile(device).to_json()
    with pytest.raises(ProfileError, match="forged.json"):
        Profile.from_json(text[:cut] if cut else "\x00garbage{", source="forged.json")


def test_gemm_picks_the_configuration_predicted_fastest_for_the_shape(cache, ctx, device):
    large = SizeClassEntry("large", (256, 256, 256), (Ranked(LARGE, 20.5),), "model", 30, 12.0)
    save(make_profile(device, {"s": [large, SizeClassEntry("small", (32, 32, 32), (Ranked(SMALL, 15.0),),
                                                           "model", 10, 3.0)]}))
    s = autogemm.dtypes.DTYPES["s"]
    big = gemm_plan(ctx, GemmProblem(s, 300, 200, 250, lda=250, ldb=200, ldc=200))
    small = gemm_plan(ctx, GemmProblem(s, 20, 30, 40, lda=40, ldb=30, ldc=30))
    narrow = gemm_plan(ctx, GemmProblem(s, 4, 600, 600, lda=600, ldb=600, ldc=600))   # nearer to the large class
    assert big.params == LARGE and small.params == SMALL and narrow.params == SMALL
    assert "profile" in big.describe()
    other = gemm_plan(ctx, GemmProblem(autogemm.dtypes.DTYPES["d"], 300, 200, 250, lda=250, ldb=200, ldc=200))
    assert other.params_source.startswith("default")     # no d entry: a default (tensor cores' on NVIDIA)
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, (300, 250)).astype(np.float32), rng.uniform(-1, 1, (250, 200)).astype(np.float32)
    np.testing.assert_allclose(autogemm.gemm(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_a_precision_mode_uses_its_entries_or_the_native_ones_whichever_is_faster(cache, ctx, device):
    from autogemm.codelets.nvidia_mma import MmaParams

    tensor = MmaParams(layout="NN", shape="m16n8k8", warps_m=1, warps_n=2, tiles_m=1, tiles_n=1, tile_k=16,
                       vector_width=1)
    native = SizeClassEntry("large", (256, 256, 256), (Ranked(LARGE, 20.5),), "model", 30, 12.0)
    fast = SizeClassEntry("large", (256, 256, 256), (Ranked(tensor, 90.0),), "model", 30, 12.0)
    slow = SizeClassEntry("large", (256, 256, 256), (Ranked(tensor, 10.0),), "model", 30, 12.0)
    dtypes = autogemm.dtypes.DTYPES
    problem = GemmProblem(dtypes["s.tf32"], 300, 200, 250, lda=250, ldb=200, ldc=200)
    for entries, expected in (({"s": [native]}, LARGE), ({"s": [native], "s.tf32": [fast]}, tensor),
                              ({"s": [native], "s.tf32": [slow]}, LARGE), ({"s.tf32": [fast]}, tensor)):
        store.forget()
        save(make_profile(device, entries))
        assert choose_params(device, problem)[0] == expected, entries
    data = json.loads(read(path_for(device.fingerprint)).to_json())
    assert "s.tf32" in data["dtypes"]
    data["dtypes"]["s.fp8"] = data["dtypes"].pop("s.tf32")
    with pytest.raises(ProfileError, match="unknown dtype 's.fp8'"):
        Profile.from_json(json.dumps(data))


def test_a_configuration_in_the_stored_layout_is_preferred_when_nearly_as_fast(cache, ctx, device):
    tn = dataclasses.replace(LARGE, layout="TN")
    nt = dataclasses.replace(LARGE, layout="NT")
    ranked = (Ranked(LARGE, 20.0), Ranked(tn, 19.0), Ranked(nt, 15.0))
    save(make_profile(device, {"s": [SizeClassEntry("large", (256, 256, 256), ranked, "model", 30, 12.0)],
                               "c": [SizeClassEntry("large", (256, 256, 256), ranked, "model", 30, 12.0)]}))
    s, c = autogemm.dtypes.DTYPES["s"], autogemm.dtypes.DTYPES["c"]

    def chosen(dt, ta: str, tb: str) -> SimtParams:
        op_a, op_b = Op.from_letter(ta, "a"), Op.from_letter(tb, "b")
        problem = GemmProblem(dt, 300, 200, 250, op_a, op_b, lda=300 if op_a.transposed else 250,
                              ldb=250 if op_b.transposed else 200, ldc=200)
        return gemm_plan(ctx, problem).params

    assert chosen(s, "N", "N") == LARGE
    assert chosen(s, "T", "N") == tn          # 19 >= 0.9 x 20: no pack of A
    assert chosen(s, "N", "T") == LARGE       # 15 < 0.9 x 20: packing B is the better deal
    assert chosen(s, "T", "T") == tn          # no TT kernel: one pack rather than two
    assert chosen(c, "C", "N") == LARGE       # conjugation needs a pack whatever the layout


def test_a_small_product_runs_in_one_launch_reading_its_operands_as_stored(cache, ctx, device, monkeypatch):
    """Under ``in_place_multiply_adds``, a product of a short K takes the size classes' choice (not the
    predictor's, which may split K and pack) in its stored layout, guarded: one launch, no pack. A deep
    K keeps the predictor's choice, and so does a K no deeper than the dtype's ``shallow_predicted_depth``."""
    set_thresholds(monkeypatch, in_place_multiply_adds=2**27, one_launch_depth=1024,
                   shallow_predicted_depth=(("s", 8),))
    save(make_profile(device, predictors=PREDICTORS))
    s = autogemm.dtypes.DTYPES["s"]

    def plan(m: int, n: int, k: int, layout: str):
        op_a, op_b = Op.from_letter(layout[0], "a"), Op.from_letter(layout[1], "b")
        return gemm_plan(ctx, GemmProblem.dense(s, m, n, k, op_a, op_b))

    for layout in ("NN", "NT", "TN", "TT"):
        one = plan(300, 200, 250, layout)
        assert one.params.layout == layout and one.guarded and one.launches() == [one.launches()[0]]
        assert "(predicted)" not in one.params_source
    assert "(predicted)" in plan(64, 512, 2048, "NT").params_source
    assert "(predicted)" in plan(3000, 2000, 8, "NN").params_source
    assert "(predicted)" not in plan(3000, 2000, 9, "NN").params_source


@pytest.mark.parametrize("damage", ["foreign", "forged", "truncated"])
def test_a_bad_profile_in_the_cache_is_skipped_with_a_warning(cache, ctx, device, damage):
    path = path_for(device.fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    prof = make_profile(device)
    if damage == "foreign":
        text = Profile.from_json(prof.to_json().replace(device.fingerprint, "0123456789abcdef")).to_json()
        expected = "made for"
    elif damage == "forged":
        text = prof.to_json().replace('"mac": "mul_add"', '"mac": "asm(\\"trap;\\")"')
        expected = "mac"
    else:
        text = prof.to_json()[:-40]
        expected = "not valid JSON"
    path.write_text(text)
    with pytest.warns(ProfileWarning, match=expected):
        found = profile_for(device)
    plan = gemm_plan(ctx, GemmProblem(autogemm.dtypes.DTYPES["s"], 300, 200, 250, lda=250, ldb=200, ldc=200))
    if damage == "foreign":       # of this model under another driver: borrowed, not its own
        assert found.device_fingerprint == "0123456789abcdef" and "0123456789abcdef" in plan.params_source
    else:
        assert found is None and plan.params_source == "default"


def test_a_bundled_profile_is_the_fallback(cache, device, monkeypatch):
    prof = make_profile(device)
    monkeypatch.setattr(store, "bundled", lambda: [("bundled/x.json", prof)])
    assert profile_for(device) == prof


def _writer(folder: str, fingerprint_source: dict, letter: str, rounds: int) -> None:
    import os
    os.environ["AUTOGEMM_CACHE_DIR"] = folder
    prof = Profile.from_json(json.dumps(fingerprint_source))
    entry = prof.dtypes["s"][0]
    for i in range(rounds):
        save(prof.with_entry(letter, SizeClassEntry(f"class{i % 3}", entry.shape, entry.ranked, "model", i, 1.0)))


def test_two_tuners_writing_one_profile_leave_a_valid_file_with_both(cache, device):
    data = json.loads(make_profile(device).to_json())
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(cache), data, letter, 15)) for letter in "dc"]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    merged = read(path_for(device.fingerprint))
    assert set(merged.dtypes) == {"s", "d", "c"}
    assert {e.name for e in merged.dtypes["d"]} == {"class0", "class1", "class2"}
    assert not list(cache.glob("profiles/*.tmp"))


def test_saving_merges_with_what_is_there(cache, device):
    prof = make_profile(device)
    save(prof)
    entry = SizeClassEntry("large", (128, 128, 128), (Ranked(SMALL, 3.0),), "phased", 5, 1.0)
    save(make_profile(device, {"c": [entry]}))
    merged = read(path_for(device.fingerprint))
    assert set(merged.dtypes) == {"s", "c"} and merged.entry("c", "large") == entry
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert profile_for(device) == merged


def test_devices_with_the_host_take_the_co_tuned_split_and_kernel(cache, ctx, device, monkeypatch):
    """gemm(devices=[device, 'host']) shares C as the profile's hybrid entry nearest in shape says, with
    its kernel on the device; without the host among the targets, or given a split, the entry is not used
    (and where the device computes every row, the call is a plain one on it)."""
    from autogemm.shares import Split
    hybrid_api = importlib.import_module("autogemm.engine.routes.targets")
    save(make_profile(device))
    calls = []
    real = hybrid_api.run_split
    monkeypatch.setattr(hybrid_api, "run_split", lambda targets, split, gemm, configs, edge: (
        calls.append((split, configs)), real(targets, split, gemm, configs, edge)))
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-1, 1, (600, 300)).astype(np.float32), rng.uniform(-1, 1, (300, 500)).astype(np.float32)
    for devices in ([device, "host"], ["host", device], [device]):
        np.testing.assert_allclose(autogemm.gemm(a, b, devices=devices), a @ b, rtol=1e-4, atol=1e-4)
    assert calls[0] == (Split(8, (5, 3)), [LARGE, None])       # the 512^3 entry: 3 of 8 parts to the host
    assert calls[1] == (Split(8, (3, 5)), [None, LARGE])
    autogemm.gemm(a, b, devices=[device, "host"], split=Split(4, (3, 1)))
    assert calls[2:] == [(Split(4, (3, 1)), [None, None])]


def test_a_configuration_reading_an_operand_too_large_for_an_image_is_passed_over(cache, ctx, device):
    """The H100's CGEMM of 128256 x 4096 x 128 (a language model's output layer's weight gradient)
    failed: the profile's choice read A through an image of 128256 rows, over the device's 32768."""
    from autogemm.codelets.registry import check

    image = dataclasses.replace(LARGE, layout="TN", image_a=True, tile_rows=4, vector_width=4)
    assert check(image, device, autogemm.dtypes.DTYPES["s"]) is None
    ranked = (Ranked(image, 30.0), Ranked(LARGE, 20.0))
    save(make_profile(device, {"s": [SizeClassEntry("large", (256, 256, 256), ranked, "model", 30, 12.0)]}))
    s = autogemm.dtypes.DTYPES["s"]
    rows = device.image2d_max[1]      # A is read as K x M (layout T): a texel row per element of K
    assert choose_params(device, GemmProblem.dense(s, 64, 64, rows)).params == image
    assert choose_params(device, GemmProblem.dense(s, 64, 64, rows + 1)).params == LARGE


def test_a_device_without_a_profile_borrows_a_related_one_verifying_each_configuration_first(
        cache, device, monkeypatch):
    """An untuned H200 ran DGEMM at 0.29x cuBLAS on the class default while the H100's profile (the same
    architecture) was bundled. A related device's profile is borrowed now, each configuration verified on
    this device before its first use: one that fails here is passed over, never used unchecked."""
    from autogemm.blas import verification, verified
    from autogemm.profiles import own_profile, profile_origin

    ranked = (Ranked(LARGE, 20.5), Ranked(SMALL, 15.0))
    other = dataclasses.replace(
        make_profile(device, {"s": [SizeClassEntry("large", (256, 256, 256), ranked, "model", 30, 12.0)]}),
        device_fingerprint="0123456789abcdef", device_name="another model", device_architecture=device.architecture)
    save(other)
    assert profile_for(device) == other and own_profile(device) is None
    assert "borrowed from another model" in profile_origin(device, other)
    assert "the same architecture" in profile_origin(device, other)
    checked = []
    real = verification.verify

    def verify(ctx, config, dtype):
        checked.append(config)
        return "forged failure" if config == LARGE else real(ctx, config, dtype)

    monkeypatch.setattr(verification, "verify", verify)
    problem = GemmProblem.dense(autogemm.dtypes.DTYPES["s"], 300, 200, 250)
    with pytest.warns(autogemm.profiles.ProfileWarning, match="forged failure"):
        assert choose_params(device, problem).params == SMALL
    assert checked == [LARGE, SMALL]
    verified._verdicts.clear()                      # another process: the verdicts are read back
    assert choose_params(device, problem).params == SMALL and checked == [LARGE, SMALL]
    a, b = np.random.rand(300, 250).astype(np.float32), np.random.rand(250, 200).astype(np.float32)
    np.testing.assert_allclose(autogemm.gemm(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    # a device of another architecture borrows nothing
    store.forget()
    save(dataclasses.replace(other, device_architecture=f"not {device.architecture}"))
    assert profile_for(device) is None and "none" in profile_origin(device, None)


def test_a_tuning_run_on_a_device_that_borrows_starts_from_the_borrowed_profile(cache, device, monkeypatch):
    """On an H200 that borrowed the H100's profile, a tune of a few products replaced the borrowed profile
    and left the products it did not reach slower. The tuned profile starts from the borrowed one: what
    the run does not tune (here all of float32: it tunes float64) keeps the borrowed entries and
    predictor, marked as measured on the other device, and their configurations are still verified here
    before their first use."""
    from autogemm.blas import verification
    from autogemm.profiles import profile_origin
    from autogemm.tuning import Budget, tune

    ranked = (Ranked(LARGE, 20.5), Ranked(SMALL, 15.0))
    other = dataclasses.replace(
        make_profile(device, {"s": [SizeClassEntry("large", (256, 256, 256), ranked, "model", 30, 12.0)]},
                     predictors=PREDICTORS),
        device_fingerprint="0123456789abcdef", device_name="another model", device_architecture=device.architecture)
    save(other)
    s, d = autogemm.dtypes.DTYPES["s"], autogemm.dtypes.DTYPES["d"]
    tuned = tune(device, (d,), budget=Budget(evaluations=3), classes=("small",), top=1)
    saved = profile_for(device)
    assert tuned.device_fingerprint == saved.device_fingerprint == device.fingerprint
    assert saved.entry("s", "large", "dtypes", None).measured_on == "0123456789abcdef"
    large = tuned.entry("s", "large", "dtypes", None)
    assert large.ranked == ranked and large.measured_on == "0123456789abcdef"
    assert tuned.predictors["s"].measured_on == "0123456789abcdef" and not tuned.hybrid
    assert tuned.entry("d", "small", "dtypes", None).measured_on == ""
    assert tuned.measured_on(LARGE) == "0123456789abcdef"
    assert tuned.measured_on(tuned.entry("d", "small", "dtypes", None).ranked[0].config) == device.fingerprint
    assert Profile.from_json(tuned.to_json()).to_json() == tuned.to_json()        # measured_on kept
    assert tuned.borrows() and not other.borrows()
    assert "took over from a related device" in profile_origin(device, saved)
    checked = []
    monkeypatch.setattr(verification, "verify",
                        lambda ctx, config, dtype: checked.append(config) or ("forged failure" if config == LARGE
                                                                              else ""))
    with pytest.warns(autogemm.profiles.ProfileWarning, match="forged failure"):
        chosen = choose_params(device, GemmProblem.dense(s, 256, 256, 256))
    assert LARGE in checked and chosen.params != LARGE


def test_each_new_class_starts_from_what_the_profile_chose_before_the_run(cache, device, monkeypatch):
    """A class the profile lacks starts its search from the configurations the profile chose for its
    problem. Asked as each class began, a class tuned earlier in the same run answered for the next: on
    the H200 the first batch class's 32 x 32 block was the second's start, not the 64 x 128 block batches
    had run, and the second class ended slower than batches had been without it."""
    from autogemm.blas.selection import candidates
    from autogemm.tuning import Budget, scope, tune, tuner

    save(make_profile(device, {"s": [SizeClassEntry("small", (64, 64, 64), (Ranked(LARGE, 20.0), Ranked(SMALL, 15.0)),
                                                    "model", 2, 1.0)]}))
    first, second = scope.SizeClass("batch-a", 8, 8, 8, 0.1, batch=16), scope.SizeClass("batch-b", 16, 16, 16, 0.1,
                                                                                        batch=8)
    monkeypatch.setattr(tuner, "size_classes", lambda device, quick=False: (first, second))
    monkeypatch.setitem(scope.CLASS_SHARES, "batch-a", 0.1)
    monkeypatch.setitem(scope.CLASS_SHARES, "batch-b", 0.1)
    s = autogemm.dtypes.DTYPES["s"]
    before = candidates(device, tuner._problem(s, second), tuner.EXACT_CANDIDATES)
    found = dataclasses.replace(SMALL, tile_k=4, wg_rows=2)
    assert found not in before
    starts = {}

    def searched(worker, dt, size, *args):
        starts[size.name] = list(args[-1])
        return SizeClassEntry(size.name, size.shape, (Ranked(found, 99.0),), "model", 1, 0.1, batch=size.batch), 0.0

    monkeypatch.setattr(tuner, "_tune_class", searched)
    tuned = tune(device, (s,), budget=Budget(evaluations=50), classes=("batch-a", "batch-b"), top=1)
    assert tuned.entry("s", "batch-a").batch == 16
    assert starts["batch-b"] == before and found not in starts["batch-b"]
    assert candidates(device, tuner._problem(s, second), tuner.EXACT_CANDIDATES)[0] == found   # what it would be now


def test_a_tensor_core_default_is_verified_on_the_device_before_its_first_use(cache, device, monkeypatch):
    """Without a profile, DGEMM on an NVIDIA GPU tries the tensor-core default first (the plain one ran at
    0.29x cuBLAS on an untuned H200), once verified there; one that fails falls back to the plain default."""
    from autogemm.blas import selection, verification

    monkeypatch.setattr(selection, "tensor_defaults", lambda device, dt: (SMALL,))
    problem = GemmProblem.dense(autogemm.dtypes.DTYPES["s"], 300, 200, 250)
    chosen = choose_params(device, problem)
    assert chosen.params == SMALL and "matrix instructions" in chosen.source
    monkeypatch.setattr(selection, "tensor_defaults", lambda device, dt: (LARGE,))
    monkeypatch.setattr(verification, "verify", lambda ctx, config, dtype: "forged failure")
    with pytest.warns(autogemm.profiles.ProfileWarning, match="tensor-core default"):
        assert choose_params(device, problem).source == "default"


def test_profile_verify_times_a_borrowed_profile_on_this_device(cache, device):
    """A borrowed profile's stored best are what this device would run: `profile verify` checks and times
    them here, against the rates of the device they were measured on."""
    from click.testing import CliRunner

    from autogemm.cli import main

    save(dataclasses.replace(make_profile(device), device_fingerprint="0123456789abcdef", device_name="another model",
                             device_architecture=device.architecture))
    out = CliRunner().invoke(main, ["profile", "verify", "--dtype", "s", "--runs", "1", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert {r["entry"] for r in rows} == {"sgemm large", "sgemm small"} and all(r["gflops"] > 0 for r in rows)


def test_a_profile_another_process_writes_is_used_within_the_recheck_time(cache, device, monkeypatch):
    """Lookups read the file's time stamp at most once per ``RECHECK_SECONDS`` (a call's lookup must cost
    little); one this process saves is used at once."""
    clock = [1000.0]
    monkeypatch.setattr(store.time, "monotonic", lambda: clock[0])
    assert profile_for(device) is None
    path = path_for(device.fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(make_profile(device).to_json())          # as another process would
    clock[0] += store.RECHECK_SECONDS / 2
    assert profile_for(device) is None
    clock[0] += store.RECHECK_SECONDS
    assert profile_for(device) == read(path)
    entry = SizeClassEntry("large", (128, 128, 128), (Ranked(SMALL, 3.0),), "phased", 5, 1.0)
    save(make_profile(device, {"c": [entry]}))
    assert profile_for(device).entry("c", "large") == entry


def test_a_fifo_or_a_link_at_the_profiles_path_is_refused_not_waited_on(cache, device, tmp_path):
    """Issue 57 D14 and D7: a FIFO at the profile's path hung every ``gemm`` and ``profile list``; a link
    there led reads (and a checkpoint's link, writes) out of the cache. Neither is a regular file: the
    profile is skipped with a warning, and the products run."""
    import os
    import threading

    path = path_for(device.fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    found = []
    with pytest.warns(ProfileWarning, match="not a regular file"):
        worker = threading.Thread(target=lambda: found.append(profile_for(device)), daemon=True)
        worker.start()
        worker.join(20)
    assert not worker.is_alive() and found == [None]
    path.unlink()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(make_profile(device).to_json())
    path.symlink_to(elsewhere)
    store.forget()
    with pytest.warns(ProfileWarning, match="Too many levels of symbolic links|symbolic link"):
        assert profile_for(device) is None
    a = np.random.default_rng(3).random((9, 7)).astype(np.float32)
    np.testing.assert_allclose(autogemm.gemm(a, a.T), a.astype(np.float64) @ a.T, rtol=1e-5)


def test_a_profile_that_cannot_be_read_is_never_replaced_unasked(cache, device):
    """Issue 57 D9: `tune` on a device whose profile was of a newer format (or unreadable) overwrote it
    with only what that run tuned. Saving over such a file is refused, naming it, and `tune` refuses
    before it measures anything; the file stays as it was."""
    from autogemm.tuning import Budget, tune

    path = path_for(device.fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    newer = json.loads(make_profile(device).to_json())
    newer["version"] = 99
    text = json.dumps(newer)
    path.write_text(text)
    with pytest.raises(ProfileError, match="leaves that file as it is"):
        save(make_profile(device))
    with pytest.raises(ProfileError, match="leaves that file as it is"), \
            pytest.warns(ProfileWarning, match="version 99"):
        tune(device, dtypes=(autogemm.dtypes.DTYPES["s"],), budget=Budget(evaluations=2), quick=True)
    assert path.read_text() == text
    assert not list((cache / "checkpoints").glob("*.jsonl"))          # nothing measured


def test_a_cache_this_user_cannot_write_still_serves_products_of_a_borrowed_profile(cache, device, monkeypatch):
    """Issue 57 D11: in a cache readable by all and writable by one, 19 of 20 `gemm` calls raised
    `PermissionError: '<cache>/verified'`. The verdicts of a borrowed profile's verification are kept in
    memory where they cannot be written, with one warning; and one that failed for want of memory is not
    written at all (it may pass once the device has it)."""
    from autogemm.blas import verification, verified
    from autogemm.blas.defaults import default_params

    s = autogemm.dtypes.DTYPES["s"]
    fits = default_params(device, s)                                     # a configuration any device takes
    other = dataclasses.replace(make_profile(device, {"s": [SizeClassEntry("small", (32, 32, 32),
                                                                           (Ranked(fits, 15.0),), "model", 3, 1.0)]}),
                                device_fingerprint="0123456789abcdef", device_name="another model",
                                device_architecture=device.architecture)
    save(other)
    monkeypatch.setattr(verified, "_verdicts", {})
    monkeypatch.setattr(verified, "_unwritable", set())

    def read_only(path, text, mode=0o644):
        raise PermissionError(13, "Permission denied", str(path))

    writable = verified.write_atomically
    monkeypatch.setattr(verified, "write_atomically", read_only)
    with pytest.warns(ProfileWarning, match="hold for this process only") as caught:
        assert verified.verified_in(device, other, fits, s) and verified.verified_in(device, other, fits, s)
    assert len([w for w in caught if "this process only" in str(w.message)]) == 1
    rng = np.random.default_rng(11)
    a, b = rng.random((40, 30)).astype(np.float32), rng.random((30, 40)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProfileWarning)
        for _ in range(20):                                             # none fails for want of the cache
            np.testing.assert_allclose(autogemm.gemm(a, b, device=device), a.astype(np.float64) @ b, rtol=1e-5)

    monkeypatch.setattr(verified, "write_atomically", writable)     # (the test's cache stays its own)
    save(other)
    verified._verdicts.clear()
    monkeypatch.setattr(verification, "verify", lambda ctx, config, dtype: "MemoryError: clEnqueueNDRangeKernel "
                                                                          "failed: MEM_OBJECT_ALLOCATION_FAILURE")
    with pytest.warns(ProfileWarning, match="MEM_OBJECT_ALLOCATION_FAILURE"):
        assert not verified.verified_in(device, other, fits, s)
    kept = cache / verified.VERIFIED / f"{device.fingerprint}.json"
    assert not kept.exists() or "MEM_OBJECT" not in kept.read_text()


def test_only_gemms_size_classes_hold_batches(device):
    """An exact shape's or a GEMV class's entry is of single products: a "batch" there is refused where
    the profile is read, not taken for a single product's measurement."""
    batch = SizeClassEntry("batch-16", (16, 16, 16), (Ranked(SMALL, 5.0),), "model", 1, 1.0, batch=64)
    fine = make_profile(device, {"s": [batch]})
    assert Profile.from_json(fine.to_json()).entry("s", "batch-16").batch == 64
    exact = dataclasses.replace(fine, dtypes={}, shapes={"s": (dataclasses.replace(batch, name="NN"),)})
    with pytest.raises(ProfileError, match="batch"):
        Profile.from_json(exact.to_json())
