"""The accuracy harness of float32 products (``bench.accuracy_harness``, ``autogemm bench-accuracy``): TF32
rounding and the emulated 3xTF32 as the CUDA path computes them, the componentwise error and the count of
non-finite mismatches, and the command's tables, JSON and plot."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from autogemm.bench import accuracy_harness as harness
from autogemm.cli import main


def test_tf32_rounds_half_away_from_zero_and_keeps_what_is_not_finite():
    x = np.array([1 + 2.0**-11, 1 + 2.0**-12, -(1 + 2.0**-11), 1 + 3 * 2.0**-11, np.inf, -np.inf,
                  np.finfo(np.float32).max], np.float32)
    assert harness.to_tf32(x).tolist() == [1 + 2.0**-10, 1.0, -(1 + 2.0**-10), 1 + 2 * 2.0**-10, np.inf, -np.inf,
                                           np.inf]
    assert np.isnan(harness.to_tf32(np.array([np.nan], np.float32))[0])
    assert harness.truncated_tf32(np.array([1 + 2.0**-11 + 2.0**-20], np.float32))[0] == 1.0


def test_emulated_3xtf32_is_about_as_accurate_as_fp32_on_normal_values():
    rng = np.random.default_rng(1)
    a, b = harness.operands("normal", rng, 32, 32, 256)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    fp32, tf32x3 = harness.errors(a @ b, exact, scale), harness.errors(harness.emulated_3xtf32(a, b), exact, scale)
    one = harness.errors(harness.to_tf32(a) @ harness.to_tf32(b), exact, scale)      # 1xTF32: far worse
    assert tf32x3.largest < 4 * fp32.largest < one.largest and tf32x3.mismatches == fp32.mismatches == 0


def test_errors_count_every_element_that_is_not_the_exact_non_finite_value():
    exact = np.array([1.0, np.inf, -np.inf, np.nan, 2.0])
    scale = np.ones(5)
    assert harness.errors(exact.astype(np.float32), exact, scale) == harness.Errors(0.0, 0.0, 0)
    wrong = np.array([1.5, np.nan, np.inf, 0.0, np.inf], np.float32)     # all but the first differ
    found = harness.errors(wrong, exact, scale)
    assert found.mismatches == 4 and found.largest == pytest.approx(0.5)


@pytest.mark.parametrize("name", harness.NAMES)
def test_every_distribution_draws_float32_operands_of_the_shapes_asked(name):
    a, b = harness.operands(name, np.random.default_rng(0), 5, 7, 6)
    assert a.shape == (5, 6) and b.shape == (6, 7) and a.dtype == b.dtype == np.float32


def _unguarded_3xtf32(a, b):
    """3xTF32 as a split without the CUDA path's guards makes it: every value split into its nearest tf32
    and the rest."""
    big_a, big_b = harness.to_tf32(a), harness.to_tf32(b)
    with np.errstate(invalid="ignore", over="ignore"):
        small_a, small_b = harness.truncated_tf32(a - big_a), harness.truncated_tf32(b - big_b)
        return (small_a @ big_b + big_a @ small_b + big_a @ big_b).astype(np.float32)


def test_the_harness_finds_where_a_split_into_tf32_parts_loses_float32s_semantics():
    """An unguarded split turns an infinite operand into inf - inf (NaN) and rounds an operand near
    float32's largest up to inf: the harness counts both, where numpy's SGEMM has none; it loses most of
    the bits of tiny operands, whose rest TF32 holds only in part."""
    rng = np.random.default_rng(2)
    implementations = {"fp32": lambda a, b: a @ b, "3xtf32": _unguarded_3xtf32}
    for name in ("inf and NaN", harness.LARGEST_OPERANDS):
        case = harness.measure(name, 16, 64, implementations, rng)
        assert case.errors["fp32"].mismatches == 0 < case.errors["3xtf32"].mismatches, name
    for name in harness.TINY_SCALES:
        case = harness.measure(name, 16, 64, implementations, rng)
        assert case.errors["3xtf32"].largest > 20 * case.errors["fp32"].largest, name


@pytest.mark.parametrize("name", harness.NAMES)
def test_3xtf32_as_the_cuda_path_computes_it_is_float32s_equal_on_every_distribution(name):
    """The guarded split (near float32's largest rounded toward zero, what it cannot split left to
    float32): no mismatch anywhere; at a short K within eight times SGEMM's largest error (each term's
    parts lose about 2^-22 of it, where float32 rounds once, 2^-24), at a long K within two."""
    rng = np.random.default_rng(3)
    implementations = {"fp32": lambda a, b: a @ b, "3xtf32": harness.emulated_3xtf32}
    for k in (3, 700):
        case = harness.measure(name, 24, k, implementations, rng)
        fp32, split = case.errors["fp32"], case.errors["3xtf32"]
        assert split.mismatches == fp32.mismatches == 0, k
        assert split.largest <= (8 if k < 16 else 2) * max(fp32.largest, 2.0**-24), k


@pytest.mark.parametrize("name", harness.NAMES)
def test_a_split_into_three_tf32_parts_closes_3xtf32s_short_k_error(name):
    """Six products of three TF32 parts each (about 33 bits of a float32's 24): at K = 1 every product of
    parts reaching float32's last place is exact, so C has float32's one rounding, where 3xTF32's two
    parts lose about 2^-22 of each term; at a long K it is within float32's accumulation, its largest
    error a few times float32's at most (its partial sums are rounded apart), its median no larger."""
    rng = np.random.default_rng(4)
    implementations = {"fp32": lambda a, b: a @ b, "3xtf32": harness.emulated_3xtf32,
                       "6xtf32": harness.emulated_6xtf32}
    short = harness.measure(name, 24, 1, implementations, rng)
    fp32, six = short.errors["fp32"], short.errors["6xtf32"]
    assert six.mismatches == fp32.mismatches == 0
    assert six.largest <= 1.01 * max(fp32.largest, 2.0**-24) and six.median <= 1.01 * max(fp32.median, 2.0**-25)
    if name in ("uniform [-1, 1)", "normal", harness.CANCELLING):
        assert short.errors["3xtf32"].largest > 2 * six.largest          # what it closes
    long = harness.measure(name, 24, 700, implementations, rng)      # (its three sums add roundings of their own)
    fp32, six = long.errors["fp32"], long.errors["6xtf32"]
    assert six.largest <= 3 * max(fp32.largest, 2.0**-24) and six.median <= 1.2 * max(fp32.median, 2.0**-25)


def test_the_command_prints_its_tables_and_writes_json_and_a_plot(tmp_path):
    out = CliRunner().invoke(main, ["bench-accuracy", "--size", "8", "--depths", "1,16", "--json",
                                    str(tmp_path / "a.json"), "--plot", str(tmp_path / "a.png")])
    assert out.exit_code == 0, out.output
    assert "largest error" in out.output and "median error" in out.output and "cancelling" in out.output
    assert "emulated on the host" in out.output and "computed by the device" in out.output
    data = json.loads((tmp_path / "a.json").read_text())
    assert {"numpy fp32", "3xtf32 emulated", "6xtf32 emulated", "autogemm"} <= set(data["cases"][0]["errors"])
    assert len(data["cases"]) == 2 * len(harness.NAMES) and (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"
    assert CliRunner().invoke(main, ["bench-accuracy", "--depths", "0"]).exit_code == 2
