"""Every case of the seeded codelet sample builds and computes the right result on this device."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from codelet_sample import axes, build_sample, requirements
from gemm_check import run_and_check

import autogemm
from autogemm.dtypes import DTYPES

CASES = build_sample(autogemm.default_device())


def test_sample_is_large_and_distinct():
    pairs = {(c.params, c.dtype) for c in CASES}
    assert len(pairs) == len(CASES) >= 180


def test_sample_covers_every_value_codelet_and_dtype(device):
    for fixed in requirements(device):
        assert any(all(_value(c.params, k) == v for k, v in fixed.items()) for c in CASES), fixed
    expected = {d for d in "sdcz" if device.fp64 or not DTYPES[d].needs_fp64}
    assert {c.dtype for c in CASES} == expected
    assert {c.trans for c in CASES} == {a + b for a in "NTC" for b in "NTC"}
    for dim in ("m", "n", "k"):
        assert {1, 7, 33, 127} <= {getattr(c, dim) for c in CASES}
    assert {c.edge for c in CASES} == {"guard", "pad"}
    assert any(c.beta == 0 for c in CASES) and any(c.beta != 0 for c in CASES)
    assert any(c.offset and c.extra_ld for c in CASES)


def _value(params, name):
    if name == "shape":
        return (params.wg_rows, params.wg_cols)
    return getattr(params, name)


def test_axes_match_dataclass(device):
    names = set(axes(device)) - {"shape"} | {"wg_rows", "wg_cols"}
    assert names == {f.name for f in dataclasses.fields(autogemm.SimtParams)}


@pytest.mark.parametrize("case", CASES, ids=[f"{i:03d}-{c.id}" for i, c in enumerate(CASES)])
def test_case(ctx, case):
    rng = np.random.default_rng(abs(hash((case.id, case.params))) % 2**32)
    run_and_check(ctx, case.params, DTYPES[case.dtype], case.m, case.n, case.k, case.trans[0], case.trans[1],
                  case.alpha, case.beta, case.edge, rng, extra_ld=case.extra_ld, offset=case.offset)
