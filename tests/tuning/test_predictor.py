"""The input-aware predictor: its prediction from samples (kernel, split, layout, reach), selection using
it before the size classes, its training on sampled shapes in the evaluation worker, and the evaluator
keeping one problem's operands for its several splits."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from gemm_check import run_and_check

from autogemm.blas import GemmProblem, Op
from autogemm.blas.coverage import split_counts
from autogemm.blas.plans import gemm_plan
from autogemm.blas.prediction import REACH, predict, ranked, share, terms
from autogemm.blas.routing import Routing
from autogemm.blas.vectors import MAX_VECTORS
from autogemm.codelets.simt import SimtParams
from autogemm.codelets.stream_k import STREAM_K
from autogemm.dtypes import DTYPES
from autogemm.profiles import Predictor, Profile, Ranked, Sample, SizeClassEntry, profile_for, save
from autogemm.tuning import predictor as predictor_module
from autogemm.tuning import tune
from autogemm.tuning.budget import Budget
from autogemm.tuning.evaluation import WorkerProcess
from autogemm.tuning.evaluation.gemm import GemmEvaluator, operands
from autogemm.tuning.predictor import (
    LAYOUTS,
    MIN_JUDGED,
    MIN_WORK,
    aligned,
    bank,
    calibrate,
    fit,
    held_out,
    kept,
    merged,
    sample_shapes,
)
from autogemm.workload import ShapeRecord

S = DTYPES["s"]
WIDE = SimtParams("NN", "consecutive", 8, 8, 2, 2, 4, 2, False, False, mac="mul_add")     # blocks 16 x 16
NARROW = SimtParams("NT", "offset", 4, 8, 1, 2, 2, 1, True, False, mac="mul_add")         # blocks 4 x 16


def problem(m: int, n: int, k: int, layout: str = "NN", batch: int = 1) -> GemmProblem:
    dense = GemmProblem.dense(S, m, n, k, Op.from_letter(layout[0], "layout"), Op.from_letter(layout[1], "layout"))
    return dataclasses.replace(dense, batch=batch, stride_a=m * k, stride_b=k * n, stride_c=m * n) if batch > 1 \
        else dense


def predictor(*samples: Sample) -> Predictor:
    return Predictor((WIDE, NARROW), samples, 1.0)


def usable(config) -> bool:
    return True


SKINNY_NT = Sample("NT", (64, 4096, 4096), (((1, 10.0),), ((1, 30.0),)))
SKINNY_NN = Sample("NN", (64, 4096, 4096), (((1, 35.0),), ((1, 12.0),)))
SQUARE = Sample("NN", (2048, 2048, 2048), (((1, 40.0),), ((1, 20.0),)))


def test_each_shape_takes_the_kernel_its_nearest_samples_measured_fastest():
    fitted = predictor(SKINNY_NT, SQUARE)
    assert predict(fitted, problem(60, 4000, 4000, "NT"), 8, usable).params == NARROW
    assert predict(fitted, problem(1800, 2000, 2100), 8, usable).params == WIDE
    # the layout weighs in the distance: a sample of the very shape stored otherwise counts for less
    both = predictor(SKINNY_NT, SKINNY_NN, SQUARE)
    assert predict(both, problem(64, 4096, 4096, "NN"), 8, usable).params == WIDE
    assert predict(both, problem(64, 4096, 4096, "NT"), 8, usable).params == NARROW
    # a kernel the device cannot run is never chosen
    assert predict(fitted, problem(60, 4000, 4000, "NT"), 8, lambda c: c is WIDE).params == WIDE
    assert predict(fitted, problem(60, 4000, 4000, "NT"), 8, lambda c: False) is None


def test_the_split_measured_fastest_is_chosen_and_scaled_by_coverage():
    # 32 x 512 is 64 blocks of WIDE: with 132 compute units, K = 8192 may be split up to 16 ways
    deep = Sample("NN", (32, 512, 8192), (((1, 5.0), (2, 9.0), (4, 20.0), (8, 12.0)), ()))
    found = predict(predictor(deep, SQUARE), problem(32, 512, 8000), 132, usable)
    assert (found.params, found.split) == (WIDE, 4)
    # the prediction at the sample itself is what it measured
    assert math.isclose(predict(predictor(deep), problem(32, 512, 8192), 132, usable).gflops, 20.0)


def test_the_predictor_keeps_to_its_reach_and_to_single_products():
    fitted = predictor(SQUARE)
    assert predict(fitted, problem(2048 * 2, 2048 * 2, 2048 * REACH // 2), 8, usable) is None
    assert predict(fitted, problem(2048, 2048, 2048 * REACH), 8, usable) is not None
    assert predict(fitted, problem(64, 64, 64, batch=3), 8, usable) is None


def test_sampled_shapes_cover_the_space_in_every_layout():
    shapes = sample_shapes(2**30, 2**26, seed=3)
    assert shapes == sample_shapes(2**30, 2**26, seed=3) != sample_shapes(2**30, 2**26, seed=4)
    assert [layout for layout, _ in shapes[:8]] == list(LAYOUTS) * 2
    works = [m * n * k for _, (m, n, k) in shapes]
    assert min(works) >= MIN_WORK and max(works) <= 2**30
    assert max(m * k + k * n + m * n for _, (m, n, k) in shapes) <= 2**26
    assert min(k for _, (_, _, k) in shapes) < 4                          # outer products too
    assert min(min(m, n) for _, (m, n, _) in shapes) > MAX_VECTORS      # fewer columns are GEMV's
    sides = np.log2([m for _, (m, _, _) in shapes])
    assert sides.min() < 6 and sides.max() > 11                          # skinny and large both drawn
    # every other four are whole tiles, as applications' shapes often are; the others are not
    whole = [shape for i, (_, shape) in enumerate(shapes) if i // 4 % 2]
    assert all(aligned(side) == side for shape in whole for side in shape)
    assert any(side % 8 for i, (_, shape) in enumerate(shapes) if not i // 4 % 2 for side in shape)
    assert [aligned(side) for side in (1, 3, 5, 100, 130, 200, 1000)] == [1, 4, 4, 128, 128, 256, 1024]


def make_profile(device, predictors: dict[str, Predictor]) -> Profile:
    large = SizeClassEntry("large", (256, 256, 256), (Ranked(WIDE, 20.0), Ranked(NARROW, 5.0)), "model", 3, 1.0)
    return Profile(device.fingerprint, device.name, device.vendor, device.driver_version, "0.1.0",
                   "2026-11-24T10:00:00+00:00", "90s", {}, {"s": (large,)}, predictors=predictors)


def test_selection_takes_the_predicted_kernel_and_split_and_computes_right(cache, ctx, device):
    m, n, k, split = 10, 12, 4096, 4       # one block of WIDE: K split to keep more compute units busy
    sample = Sample("TT", (m, n, k), (((1, 1.0), (split, 9.0)), ((1, 2.0),)))
    save(make_profile(device, {"s": predictor(sample)}))
    plan = gemm_plan(ctx, problem(m, n, k, "TT"))
    # (as small a product as this reads its operands as stored, its slices summed in its one launch)
    assert "(predicted)" in plan.params_source and plan.slices == split and plan.summed
    assert plan.params == dataclasses.replace(WIDE, layout="TT") and len(plan.launches()) == 1
    run_and_check(ctx, None, S, m, n, k, "T", "T", 1.5, 0.0, "auto", np.random.default_rng(5))
    # a dtype the predictor does not cover keeps to the size classes
    # (on a GPU with float64 matrix instructions, their default)
    assert gemm_plan(ctx, GemmProblem.dense(DTYPES["d"], m, n, k)).params_source.startswith("default")


def test_the_bank_holds_each_class_best_and_best_of_each_kind_and_the_large_ones_blocks_smaller(device):
    other = SimtParams("TN", "offset", 8, 8, 2, 2, 4, 2, False, False, mac="mul_add")
    small = SizeClassEntry("small", (64, 64, 64), (Ranked(NARROW, 3.0), Ranked(WIDE, 2.5), Ranked(other, 2.0)),
                           "model", 3, 1.0)
    prof = make_profile(device, {})
    prof = prof.with_entry("s", small)
    # the large class's best of each layout with smaller blocks: WIDE's vectors of 2 take no narrower
    # tile, NARROW's 4 x 16 blocks become 4 x 8 and 2 x 8
    shrunk = (dataclasses.replace(NARROW, tile_cols=1), dataclasses.replace(NARROW, tile_cols=1, wg_rows=2))
    assert WIDE.smaller_blocks() == () and NARROW.smaller_blocks() == shrunk
    assert bank(prof, S) == (WIDE, NARROW, other, *shrunk)
    assert bank(prof, DTYPES["d"]) == ()


def test_training_times_the_bank_on_sampled_shapes(ctx):
    with WorkerProcess(ctx.device) as worker:
        fitted = fit(worker, S, (WIDE, NARROW), Budget(seconds=1.0), seed=2)
    assert fitted.bank == (WIDE, NARROW) and fitted.seconds > 0
    assert [s.layout for s in fitted.samples] == [LAYOUTS[i % 4] for i in range(len(fitted.samples))]
    for sample in fitted.samples:      # the last one may be cut short by the budget, after a kernel
        complete = sample is not fitted.samples[-1] or len(fitted.samples) == 1
        assert len(sample.rates) == 2 and any(sample.rates)
        assert all((rates or not complete) and all(g > 0 for _, g in rates) for rates in sample.rates)
    text = Profile.from_json(make_profile(ctx.device, {"s": fitted}).to_json()).predictors["s"]
    assert text.bank == fitted.bank and [s.shape for s in text.samples] == [s.shape for s in fitted.samples]


def test_one_problem_timed_with_several_splits_computes_its_reference_once(ctx):
    operands.cache_clear()
    first = GemmEvaluator(ctx, S, 40, 50, 300, layout="TN", split=1, seed=7)
    second = GemmEvaluator(ctx, S, 40, 50, 300, layout="TN", split=2, seed=7)
    assert operands.cache_info().hits == 1
    for evaluator in (first, second):
        assert evaluator.evaluate(WIDE).ok
        evaluator.release()


def test_a_kernel_that_must_transpose_a_large_operand_loses_by_the_pack_it_needs():
    # measured only on operands stored as WIDE reads them, where it is a little faster
    near = Sample("NN", (32, 8192, 4096), (((1, 12.0),), ((1, 10.0),)))
    fast_memory = Predictor((WIDE, NARROW), (near,), 1.0, 0.0)
    slow_memory = Predictor((WIDE, NARROW), (near,), 1.0, 64.0)
    stored_nt = problem(32, 8192, 4096, "NT")       # B stored transposed: WIDE (NN) must pack it, NARROW need not
    assert predict(fast_memory, stored_nt, 8, usable).params == WIDE
    assert predict(slow_memory, stored_nt, 8, usable).params == NARROW
    assert predict(slow_memory, problem(32, 8192, 4096, "NN"), 8, usable).params == WIDE


def test_a_kernel_that_stages_every_layout_alike_is_predicted_reading_them_as_stored():
    """A float64 configuration of asynchronous copies runs as its twin in the layout A and B are stored in
    (``selection.read_as_stored``): measured in its own layout, it is predicted as fast on operands stored
    otherwise, no pack charged; the same tiles copied through registers must pack the operand they would
    read transposed, and are predicted slower by it."""
    from autogemm.codelets.nvidia_mma import MmaParams

    tiles = MmaParams(layout="NT", shape="m16n8k8", warps_m=2, warps_n=2, tiles_m=2, tiles_n=4, tile_k=16,
                      stages=2, mma="ptx")
    alike = dataclasses.replace(tiles, copy="async", stages=3)
    assert alike.stages_alike(DTYPES["d"]) and not tiles.stages_alike(DTYPES["d"])
    stored_nn = dataclasses.replace(problem(32, 8192, 4096, "NN"), dtype=DTYPES["d"])
    measured_nt = Sample("NT", (32, 8192, 4096), (((1, 12.0),), ((1, 10.0),)))

    def predicted(nt: MmaParams) -> float:
        slow_memory = Predictor((nt, dataclasses.replace(tiles, layout="NN")), (measured_nt,), 1.0, 64.0)
        return next(p.gflops for p in ranked(slow_memory, stored_nn, 8, usable) if p.params == nt and p.split == 1)

    assert math.isclose(predicted(alike), 12.0, rel_tol=0.05)
    assert predicted(tiles) < 12.0 / 1.5


def test_the_model_charges_what_the_plan_copies_and_launches():
    # read in place, whole tiles: the kernel's launch alone, reading A and B and writing C once
    assert Routing(problem(64, 64, 64), WIDE, 1, 8).traffic() == (0, 3 * 64 * 64, 1, 1.0)
    # B stored transposed for an NN kernel: read and written once more by a pack (guarded: no padding,
    # but the last of the 3 steps of 4 along K is partly idle)
    assert Routing(problem(30, 20, 10, "NT"), WIDE, 1, 8).traffic() == (400, 30 * 10 + 10 * 20 + 30 * 20, 2, 10 / 12)
    # split in 2 and summed in the kernel: operands in place, each slice's partial sums (padded to whole
    # blocks) written and read again, one launch; K of 100 in two slices of 52 (WIDE's 4 deep steps)
    assert Routing(problem(30, 20, 100), WIDE, 2, 8).traffic() == (
        0, 30 * 100 + 100 * 20 + 30 * 20 + 2 * 2 * 32 * 32, 1, 100 / 104)
    # padded: padded operands, every slice's padded C written by the kernel, read by the merge
    copied, streamed, launches, depth = Routing(problem(30, 20, 100), WIDE, 2, 8, "pad").traffic()
    assert launches == 4 and depth == 100 / 104
    assert copied == (30 * 100 + 32 * 104) + (100 * 20 + 104 * 32) + 2 * 32 * 32 + 30 * 20
    assert streamed == 32 * 104 + 104 * 32 + 2 * 32 * 32
    shape = ("NT", 30, 20, 10)
    plan = terms(S, WIDE, 1, shape, 8)
    assert plan.copied == 400 and plan.launches == 2 and plan.flops == 2 * 30 * 20 * 10
    assert share(plan, 0.0, 0.0) == plan.covered > share(plan, 1.0, 0.0) > share(plan, 1.0, 1e4)
    # a kernel bound by what it writes: C of an outer product costs its elements, not its flops
    outer = terms(S, WIDE, 1, ("NN", 4096, 4096, 4), 8)
    assert outer.copied == 0 and math.isclose(share(outer, 64.0, 0.0), outer.flops / (64.0 * outer.streamed))


def test_calibration_finds_the_launch_cost_the_samples_were_measured_with():
    cost = 2.0**20
    samples = tuple(Sample(layout, (m, n, k), tuple(((1, 50.0 * share(terms(S, kernel, 1, (layout, m, n, k), 8), 0.0,
                                                                       cost)),) for kernel in (WIDE, NARROW)))
                    for layout in ("NN", "NT") for m in (32, 64, 256) for n in (48, 512) for k in (16, 256))
    found = calibrate(Predictor((WIDE, NARROW), samples, 1.0), S, 8)
    assert found.launch == cost and found.balance == 0.0 and found.samples == samples


@pytest.fixture
def few_judged(monkeypatch):
    """``held_out`` judging from two samples, as these small hand-made predictors have."""
    monkeypatch.setattr(predictor_module, "MIN_JUDGED", 2)


def test_a_predictor_of_few_samples_is_not_judged_and_so_not_kept(device):
    """A DGEMM predictor of 3 samples, kept after a short tune of an H200 (judged 87% against the
    classes' 65%), picked a kernel for 4096^3 that ran at 0.6x the borrowed profile's pick."""
    samples = tuple(Sample("NN", (m, 512, 512), (((1, 10.0),), ((1, 30.0),))) for m in range(60, 60 + MIN_JUDGED - 1))
    assert held_out(Predictor((WIDE, NARROW), samples, 1.0), make_profile(device, {}), S, 8) is None
    assert not kept(None)


def test_held_out_picks_are_judged_beside_the_size_classes(device, few_judged):
    # the classes choose WIDE everywhere; every sample measured NARROW faster, which the predictor learns
    samples = tuple(Sample(layout, (m, 512, 512), (((1, 10.0),), ((1, 30.0),)))
                    for layout in ("NN", "NT") for m in (64, 128, 256))
    fitted = Predictor((WIDE, NARROW), samples, 1.0)
    judged = held_out(fitted, make_profile(device, {}), S, 8)
    assert math.isclose(judged.picks, 1.0) and math.isclose(judged.classes, 1 / 3) and judged.unseen is None
    assert held_out(Predictor((WIDE, NARROW), samples[:1], 1.0), make_profile(device, {}), S, 8) is None


def test_a_new_predictor_is_judged_beside_the_one_the_profile_held_on_shapes_it_had_not_measured(device,
                                                                                                    few_judged):
    """On the samples the profile's predictor had not measured, its picks are judged beside the new
    one's, and a new predictor whose picks come out farther from the best is not kept: a tune does not
    replace a predictor with a worse one. The samples it had measured are not judged so."""
    narrow_faster = (((1, 10.0),), ((1, 30.0),))
    wide_faster = (((1, 30.0),), ((1, 10.0),))
    older = Predictor((WIDE, NARROW), tuple(Sample("NN", (m, 4096, 4096), wide_faster) for m in (2000, 3000)), 1.0)
    new = tuple(Sample(layout, (m, 512, 512), narrow_faster) for layout in ("NN", "NT") for m in (64, 128, 256))
    fitted = Predictor((WIDE, NARROW), new + older.samples, 1.0)
    judged = held_out(fitted, make_profile(device, {}), S, 8, older)
    # the older predictor's samples say WIDE; on the six new shapes the new one learned NARROW
    assert math.isclose(judged.unseen[0], 1.0) and math.isclose(judged.unseen[1], 1 / 3) and kept(judged)
    # a kernel of the older bank only, the fastest of its samples, is no pick it can be judged by
    other = dataclasses.replace(NARROW, wg_rows=8)
    with_other = Predictor((other, WIDE, NARROW), tuple(Sample(x.layout, x.shape, (((1, 90.0),), *x.rates))
                                                         for x in older.samples), 1.0)
    assert held_out(fitted, make_profile(device, {}), S, 8, with_other).unseen == judged.unseen
    assert not kept(predictor_module.Judged(0.9, 0.6, (0.80, 0.85)))
    assert kept(predictor_module.Judged(0.9, 0.6, (0.85, 0.85))) and kept(predictor_module.Judged(0.9, 0.6))
    assert not kept(predictor_module.Judged(0.6, 0.9, (1.0, 0.5)))


def test_a_sample_that_never_timed_the_picked_split_is_not_judged(device, few_judged):
    """Samples measured before stream-K was a candidate stay neighbours, but are not judged by a split
    they never timed (they counted as rate 0, and a retrained predictor was dropped on the H100)."""
    timed = (((STREAM_K, 40.0), (1, 10.0)), ((1, 30.0),))
    samples = tuple(Sample("NN", (m, 512, 512), timed) for m in (60, 64, 70)) + \
        (Sample("NN", (66, 512, 512), (((1, 10.0),), ((1, 30.0),))),)
    assert STREAM_K in split_counts(WIDE, GemmProblem.dense(S, 64, 512, 512), 30)
    assert math.isclose(held_out(Predictor((WIDE, NARROW), samples, 1.0), make_profile(device, {}), S, 30).picks, 1.0)


def test_a_sample_without_a_rate_of_the_picked_kernel_is_not_judged(device, few_judged):
    """A rate dropped because its plan is now routed otherwise (or a kernel that failed there) leaves
    nothing to judge the pick by: scoring it 0 once sank every bundled predictor's held-out figure."""
    samples = tuple(Sample("NN", (m, 512, 512), (((1, 10.0),), ((1, 30.0),))) for m in (60, 64, 70)) + \
        (Sample("NN", (66, 512, 512), (((1, 10.0),), ((2, 25.0),))), Sample("NN", (62, 512, 512), (((1, 10.0),), ())))
    judged = held_out(Predictor((WIDE, NARROW), samples, 1.0), make_profile(device, {}), S, 8)
    assert math.isclose(judged.picks, 1.0) and math.isclose(judged.classes, 1 / 3)


def test_what_the_profile_measured_before_joins_a_new_predictor():
    other = dataclasses.replace(NARROW, wg_rows=8)                  # in the older bank only
    older = Predictor((other, NARROW, WIDE), (Sample("NN", (64, 512, 512), (((1, 9.0),), ((1, 8.0),), ((1, 7.0),))),
                                              Sample("NT", (300, 200, 100), (((1, 5.0),), (), ()))), 1.0)
    exact = (SizeClassEntry("TN", (50, 60, 70), (Ranked(NARROW, 12.0, 2), Ranked(other, 20.0)), "model", 3, 1.0),
             SizeClassEntry("NN", (40, 40, 40), (Ranked(other, 20.0),), "model", 3, 1.0))
    found = merged(predictor(SQUARE, SKINNY_NN), older, exact, S, 8)
    assert found.bank == (WIDE, NARROW)
    # the exact shape first (its split as measured), the new samples, then the older one's rebanked;
    # none twice for one shape, none without a rate of this bank
    assert [(s.layout, s.shape) for s in found.samples] == [("TN", (50, 60, 70)), ("NN", (2048, 2048, 2048)),
                                                           ("NN", (64, 4096, 4096)), ("NN", (64, 512, 512))]
    assert found.samples[0].rates == ((), ((2, 12.0),)) and found.samples[3].rates == (((1, 7.0),), ((1, 8.0),))
    # a ranked kernel without a measured split takes the one a plan would
    whole = merged(predictor(SQUARE), None, (SizeClassEntry("NN", (16, 16, 8), (Ranked(WIDE, 3.0),), "m", 1, 1.0),),
                   S, 8)
    assert whole.samples[0].rates == (((1, 3.0),), ())


def test_shapes_tuned_exactly_become_samples_of_the_profile_predictor(device, monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tmp_path))
    shape = [ShapeRecord("gemm", "s", "NT", 70, 45, 33)]
    first = tune(device, budget=Budget(evaluations=6), shapes=shape, top=3).entry("s", "NT", "shapes", (70, 45, 33))
    # a predictor whose bank holds what that run ranked: a second run starts from those and measures them again
    kernels = tuple(r.config for r in first.ranked)
    square = Sample("NN", (2048, 2048, 2048), tuple(((1, 10.0),) for _ in kernels))
    save(dataclasses.replace(profile_for(device), predictors={"s": Predictor(kernels, (square,), 1.0)}))
    profile = tune(device, budget=Budget(evaluations=6), shapes=shape, top=3)
    rates = {r.config: r.gflops for r in profile.entry("s", "NT", "shapes", (70, 45, 33)).ranked}
    fitted = profile.predictors["s"]
    sample = next(s for s in fitted.samples if s.shape == (70, 45, 33))
    timed = {config: found[0][1] for config, found in zip(fitted.bank, sample.rates) if found}
    assert sample.layout == "NT" and timed and timed == {c: g for c, g in rates.items() if c in fitted.bank}
    assert fitted.samples[-1] == square and fitted.bank == kernels


def test_a_product_with_no_multiply_add_has_no_rate_and_no_warning():
    """A K of 0 gives the model a share of 0: its logarithm is -inf (no rate), without the numpy
    RuntimeWarning that a property test met on the H200."""
    import warnings

    from autogemm.blas.prediction import corrected

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert corrected(0.0, np.array([0.5]), np.array([1.0]), np.array([1.0])) == -math.inf
        got = corrected(np.array([0.0, 0.25]), np.array([[0.5], [0.5]]), np.array([[1.0], [1.0]]),
                        np.array([[1.0], [1.0]]))
        assert got[0] == -math.inf and math.isfinite(got[1])


def test_explain_times_the_plans_the_predictor_ranks_next(cache, ctx, device):
    """``explain --alternatives``: the predictor's pairs after the plan's own, fastest predicted first,
    each built, checked against float64 and timed; none of them the plan's; a line each at 80 columns."""
    from autogemm.bench import explain as explaining
    from autogemm.bench.shapes import Shape
    from autogemm.blas.prediction import ranked

    m, n, k = 40, 48, 4096          # (more columns and rows than the multi-vector GEMV takes)
    sample = Sample("TT", (m, n, k), (((1, 1.0),), ((1, 2.0),)))
    save(make_profile(device, {"s": predictor(sample)}))
    fitted = profile_for(device).predictors["s"]
    pairs = ranked(fitted, problem(m, n, k, "TT"), device.compute_units, usable)
    assert [(p.params, p.split) for p in pairs] == [(NARROW, 1), (WIDE, 1)]
    assert pairs == sorted(pairs, key=lambda p: -p.gflops)
    assert predict(fitted, problem(m, n, k, "TT"), device.compute_units, usable) == pairs[0]
    found = explaining.explain(ctx, S, Shape(m, n, k, "TT"), runs=2, alternatives=5)
    assert "(predicted)" in found.choice
    # NARROW is the plan's (read as stored, TT); WIDE follows as the selection would take it, in TT too
    assert [(a.config, a.split) for a in found.alternatives] == [(dataclasses.replace(WIDE, layout="TT").describe(), 1)]
    assert all(a.seconds > 0 and a.predicted_gflops > 0 for a in found.alternatives)
    lines = explaining.describe(found)
    assert max(map(len, lines)) <= 80 and any("the predictor's next plans" in line for line in lines)
    assert explaining.explain(ctx, S, Shape(m, n, k, "TT"), runs=1).alternatives == []
    few = explaining.explain(ctx, S, Shape(10, 12, k, "TT"), runs=1, alternatives=3)     # a multi-vector GEMV's
    assert "as GEMV right-hand sides" in few.plan and few.alternatives == []
    # one that cannot be built (or computes wrongly) is reported as such, the rest of the explanation kept
    from autogemm.errors import ConfigError

    def refused(*args, **kwargs):
        raise ConfigError("not on this device\nsecond line")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(explaining, "LaunchPlan", refused)
        failed = explaining.explain(ctx, S, Shape(m, n, k, "TT"), runs=1, alternatives=5)
    assert [(a.seconds, a.failure) for a in failed.alternatives] == [(None, "not on this device")]
    lines = explaining.describe(failed)
    assert any("failed" in line for line in lines) and max(map(len, lines)) <= 80


def test_the_explain_command_times_alternatives_or_says_why_there_are_none(cache, device):
    from click.testing import CliRunner

    from autogemm.cli import main

    command = ["explain", "40", "48", "300", "--layout", "tt", "--runs", "1", "--alternatives", "2",
               "-d", f"{device.platform_index}:{device.device_index}"]
    save(make_profile(device, {}))
    out = CliRunner().invoke(main, command)
    assert out.exit_code == 0, out.output
    assert "no other plan to time" in out.output and "next plans" not in out.output
    save(make_profile(device, {"s": predictor(Sample("TT", (40, 48, 300), (((1, 1.0),), ((1, 2.0),))))}))
    out = CliRunner().invoke(main, command)
    assert out.exit_code == 0, out.output
    assert "the predictor's next plans" in out.output and "no other plan" not in out.output


def test_an_exact_shape_starts_from_the_plans_the_predictor_ranks_next(cache, device):
    """``candidates``: the profile's choice, then the configurations of the predictor's next pairs (as the
    selection would take them: read as stored), then the nearest size classes' own, each once."""
    from autogemm.blas.selection import candidates

    shape = problem(40, 48, 4096, "TT")
    save(make_profile(device, {}))
    without = candidates(device, shape, 8)
    save(make_profile(device, {"s": predictor(Sample("TT", (40, 48, 4096), (((1, 1.0),), ((1, 2.0),))))}))
    tt = [dataclasses.replace(config, layout="TT") for config in (NARROW, WIDE)]
    assert candidates(device, shape, 8) == [*tt, WIDE, NARROW] and candidates(device, shape, 2) == tt
    assert without == [tt[1], WIDE, NARROW]        # the class's choice read as stored, then the class's own
