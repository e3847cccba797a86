"""Each strategy finds the known best point of a synthetic space within its budget; the exponential
stride search finds the peak of unimodal functions; budgets and the surrogate behave."""

from __future__ import annotations

import time

import numpy as np
import pytest
from synthetic import SyntheticEvaluator, rate, synthetic_space, true_best

from autogemm.dtypes import DTYPES
from autogemm.errors import ArgumentError
from autogemm.tuning import Budget, BudgetSpent, Objective, finalists, get_strategy, scope
from autogemm.tuning.budget import Schedule
from autogemm.tuning.strategies import exponential_stride_search
from autogemm.tuning.strategies.surrogate import ExtraTrees

# (strategy, share of the space it may measure, noise on one-run probes)
CASES = [("exhaustive", None, 0.0), ("random", 1.0, 0.0), ("phased", 0.15, 0.0), ("model", 0.15, 0.0),
         ("rank-refine", 1.3, 0.08)]


@pytest.mark.parametrize("name,share,noise", CASES, ids=[c[0] for c in CASES])
def test_strategy_finds_the_known_best(name, share, noise):
    space = synthetic_space()
    best = true_best(space)
    budget = Budget() if share is None else Budget(evaluations=int(len(space) * share))
    evaluator = SyntheticEvaluator(noise=noise)
    objective = Objective(space, evaluator, None, budget, overlap=False, workers=1)
    try:
        get_strategy(name, seed=3).search(space, objective, start=space.points()[0])
    except BudgetSpent:
        pass
    assert objective.best_point == best, (
        f"{name} found {space.describe_point(objective.best_point)} at {objective.best[1].gflops:.1f}, "
        f"best is {space.describe_point(best)} at {rate(space.config(best)):.1f}")
    if budget.evaluations is not None:
        assert objective.evaluations <= budget.evaluations


def test_the_synthetic_best_is_unique():
    space = synthetic_space()
    rates = sorted((rate(space.config(p)) for p in space.points()), reverse=True)
    assert rates[0] > rates[1] * 1.001


@pytest.mark.parametrize("peak", [0, 1, 7, 31, 62, 63])
@pytest.mark.parametrize("start", [0, 20, 63])
def test_exponential_stride_finds_the_peak_of_a_unimodal_function(peak, start):
    asked: list[int] = []

    def score(i: int) -> float:
        asked.append(i)
        return -abs(i - peak) ** 1.5

    assert exponential_stride_search(score, 0, 63, start) == peak
    assert len(set(asked)) <= 32, f"{len(set(asked))} distinct evaluations of 64"


def test_budget_parse():
    assert Budget.parse("10m") == Budget(seconds=600)
    assert Budget.parse("90s") == Budget(seconds=90)
    assert Budget.parse("1.5h") == Budget(seconds=5400)
    assert Budget.parse("200") == Budget(evaluations=200)
    assert Budget.parse("10m,500") == Budget(evaluations=500, seconds=600)
    assert Budget(evaluations=10).share(0.35) == Budget(evaluations=3)
    for bad in ("", "ten", "0", "-5m", "1.5", "5x"):
        with pytest.raises(ArgumentError):
            Budget.parse(bad)


def test_a_step_gets_its_share_of_the_time_left_after_the_overheads_still_to_come(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    schedule = Schedule(Budget(evaluations=100, seconds=60), [("a", 0.7), ("b", 0.3), ("a", 1.0)], started=88.0)
    first, deadline = schedule.begin()          # 12 s gone, no overhead known yet
    assert first.seconds == pytest.approx(48 * 0.35) and first.evaluations == 35
    assert deadline == pytest.approx(100 + 48 * 0.35)
    now[0] += 20.0
    schedule.end(searched=16.0)                 # "a" costs 4 s besides its search
    assert schedule.overhead("a") == 4.0 and schedule.overhead("b") == 4.0    # unseen: the mean
    second, deadline = schedule.begin()         # 28 s left, 8 kept for the two steps to come
    assert second.seconds == pytest.approx(20 * 0.3 / 1.3) and second.evaluations == 15
    assert deadline == pytest.approx(120 + second.seconds + 4.0)
    now[0] += 27.5
    schedule.end(searched=1.0)
    assert not schedule.spent()
    last, _ = schedule.begin()                  # overspent: still a second to measure in
    assert last.seconds == 1.0 and last.evaluations == 50
    now[0] += 2.0
    schedule.end(searched=1.0)
    assert schedule.spent()
    late = Schedule(Budget(seconds=1), [("a", 1.0)], started=0.0)
    assert not late.spent()                     # a run tunes one step at least


def test_a_budget_of_evaluations_alone_is_never_spent_in_time():
    schedule = Schedule(Budget(evaluations=10), [("a", 1.0), ("b", 1.0)])
    assert schedule.begin() == (Budget(evaluations=5), None)
    schedule.end(searched=0.0)
    assert not schedule.spent()
    schedule.skip()


def test_evaluation_budget_is_honoured():
    space = synthetic_space()
    objective = Objective(space, SyntheticEvaluator(), None, Budget(evaluations=7), overlap=False, workers=1)
    with pytest.raises(BudgetSpent):
        get_strategy("random").search(space, objective)
    assert objective.evaluations == 7 and len(objective.records) == 7


def test_a_spent_budget_still_measures_one_point():
    space = synthetic_space()
    objective = Objective(space, SyntheticEvaluator(), None, Budget(seconds=0.0), overlap=False, workers=1)
    with pytest.raises(BudgetSpent):
        get_strategy("random").search(space, objective)
    assert objective.evaluations == 1 and objective.best is not None


def test_unknown_strategy():
    with pytest.raises(ArgumentError, match="unknown strategy"):
        get_strategy("annealing")


def test_surrogate_learns_an_interaction():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (300, 4))
    y = np.where(x[:, 0] > 0.5, x[:, 1], -x[:, 1]) + 0.1 * x[:, 2]
    model = ExtraTrees(seed=1).fit(x[:200], y[:200])
    mean, spread = model.predict(x[200:])
    assert np.corrcoef(mean, y[200:])[0, 1] > 0.9
    assert spread.shape == mean.shape and np.all(spread >= 0)


def test_the_search_starts_at_the_class_default(device):
    import dataclasses

    from autogemm.blas import default_params
    from autogemm.codelets.registry import SpaceFacts
    from autogemm.codelets.simt.space import space as simt_space
    from autogemm.dtypes import DTYPES
    from autogemm.tuning.searching import start_point

    gpu = dataclasses.replace(device, device_type="GPU", vendor="NVIDIA Corporation", local_mem_bytes=48 << 10,
                              max_work_group_size=1024)
    space = simt_space(SpaceFacts(gpu, DTYPES["s"], {4: "mad"}))
    default = default_params(gpu, DTYPES["s"])
    config = space.config(start_point(space, default))
    assert dataclasses.replace(config, mac="fma", build_options=()) == default
    from autogemm.codelets.nvidia_mma import MmaParams
    assert start_point(space, MmaParams()) is None      # a class won by another family: no simt start


def test_finalists_are_the_top_and_the_best_of_every_other_layout():
    space = synthetic_space()
    objective = Objective(space, SyntheticEvaluator(), None, Budget(evaluations=300), overlap=False, workers=1)
    with pytest.raises(BudgetSpent):
        get_strategy("random", seed=3).search(space, objective)
    measured = sorted(objective.records.values(), key=lambda r: r.gflops, reverse=True)
    failing = measured[0].config                                  # the fastest fails verification
    kept, rejected = finalists.finalists(lambda config: "wrong" if config == failing else None, [objective], top=3)
    passing = measured[1:]
    assert [k.config for k in kept[:3]] == [r.config for r in passing[:3]]
    best_of = {}
    for r in passing:
        best_of.setdefault(r.config.layout, r.config)
    assert {k.config for k in kept} == {r.config for r in passing[:3]} | set(best_of.values())
    rates = [k.gflops for k in kept]
    assert rates == sorted(rates, reverse=True)
    assert rejected == [(failing, "wrong")]


def test_a_gpu_tunes_a_tiny_class_in_the_narrow_blocks_space_and_a_cpu_does_not(device):
    """A GPU's tiny class: C of a few blocks over a long K, searched with the skinny spaces' narrow blocks
    (where its time is the latency of its K steps, more compute units matter)."""
    import dataclasses

    gpu = dataclasses.replace(device, device_type="GPU", global_mem_bytes=80 << 30, max_mem_alloc_bytes=20 << 30)
    for quick in (False, True):
        tiny = {c.name: c for c in scope.size_classes(gpu, quick=quick)}["tiny"]
        assert tiny.skinny and tiny.k > 2 * max(tiny.m, tiny.n) and tiny.share == scope.CLASS_SHARES["tiny"]
    cpu = dataclasses.replace(device, device_type="CPU")
    assert "tiny" not in {c.name for c in scope.size_classes(cpu)}


def test_a_gpu_tunes_batch_classes_on_strided_batches_and_a_cpu_does_not(device):
    """A GPU's batch classes: square products measured many at once (half as many with --quick), their
    entries kept apart from the single products' classes."""
    import dataclasses

    gpu = dataclasses.replace(device, device_type="GPU", global_mem_bytes=80 << 30, max_mem_alloc_bytes=20 << 30)
    for quick in (False, True):
        classes = {c.name: c for c in scope.size_classes(gpu, quick=quick)}
        for name, side, count in scope.BATCH_CLASSES:
            size = classes[name]
            assert size.shape == (side,) * 3 and size.batch == count // (1 + quick) > 1
    assert all(c.batch == 1 for c in scope.size_classes(gpu) if c.name not in dict(
        (name, side) for name, side, _ in scope.BATCH_CLASSES))
    cpu = dataclasses.replace(device, device_type="CPU")
    assert all(c.batch == 1 for c in scope.size_classes(cpu))


def test_a_gpus_large_class_ranks_its_finalists_again_on_a_larger_problem(device, monkeypatch):
    import dataclasses

    from autogemm.profiles import Ranked
    from autogemm.tuning.records import Outcome, Record

    gpu = dataclasses.replace(device, device_type="GPU", global_mem_bytes=80 << 30, max_mem_alloc_bytes=20 << 30)
    large, *others = scope.size_classes(gpu)
    assert large.confirm == 2 * large.m and not any(c.confirm for c in others)
    cpu = dataclasses.replace(device, device_type="CPU")
    assert not any(c.confirm for c in scope.size_classes(gpu, quick=True) + scope.size_classes(cpu))

    space = synthetic_space()
    configs = [space.config(p) for p in list(space.points())[:40]]
    at_4096 = [Ranked(c, 1000.0 - i) for i, c in enumerate(configs)]          # the order the search found
    truth = {c: (0.0 if i == 39 else rate(c)) for i, c in enumerate(configs)}  # the last computes wrongly
    shapes = []

    class Timed:
        def __init__(self, worker, spec, **options):
            assert spec.full                                        # every finalist timed in full
            shapes.append(spec.shape)

        def evaluate(self, config):
            ok = truth[config] > 0
            return Record(config, Outcome.OK if ok else Outcome.WRONG, truth[config] if ok else 0.0)

        def release(self):
            pass

    monkeypatch.setattr(finalists, "IsolatedEvaluator", Timed)
    worker = type("Worker", (), {"device": gpu})()
    again = finalists.confirmed(worker, DTYPES["d"], 8192, at_4096, top=3)
    assert shapes == [(8192, 8192, 8192)]
    want = finalists.best_of_each_kind([Ranked(c, r) for c, r in truth.items() if r > 0], 3)
    assert again == want and [r.gflops for r in again] == [truth[r.config] for r in again]
    assert configs[39] not in {r.config for r in again} and again != at_4096[:len(again)]
    small = dataclasses.replace(gpu, global_mem_bytes=4 << 30)               # 8192^2 doubles x 4 > a quarter
    assert finalists.confirmed(type("Worker", (), {"device": small})(), DTYPES["d"], 8192, at_4096, top=3) is None
    assert len(shapes) == 1


def test_once_a_class_is_late_only_the_best_of_each_kind_is_verified():
    """Verifying each finalist costs about a second: on PoCL a 60 s tune spent 20 s on it. Past the
    class's time, the best and the best of each other layout are still verified (what selection needs),
    no more."""
    import dataclasses

    from autogemm.codelets.simt import SimtParams
    from autogemm.profiles import Ranked

    configs = [SimtParams(layout, "offset", 8, 8, 2, 2, 2, 1, False, False, mac="mul_add") for layout in ("NN", "NT")]
    candidates = [Ranked(dataclasses.replace(configs[i % 2], tile_k=2 ** (i // 2 % 3 + 1), wg_rows=4 * (1 + i // 6)),
                         100.0 - i) for i in range(10)]
    asked = []

    def accept(ranked):
        asked.append(ranked)
        return ranked.gflops != 100.0          # the fastest fails its verification

    kept = finalists.best_of_each_kind(candidates, 5, accept, late=lambda: True)
    assert [r.gflops for r in kept] == [99.0, 98.0] and {r.config.layout for r in kept} == {"NN", "NT"}
    assert asked == candidates[:3]
    assert len(finalists.best_of_each_kind(candidates, 5, accept)) == 5


def test_a_batch_class_keeps_the_best_of_each_block_in_its_measured_layout():
    """A batch class serves smaller and larger matrices than its own, for which smaller or larger blocks
    win: beside its top configurations it keeps the best of each block shape of the layout it measured,
    and of each other layout only the best."""
    import dataclasses

    from autogemm.codelets.simt import SimtParams
    from autogemm.profiles import Ranked

    base = SimtParams("NN", "offset", 8, 8, 2, 2, 2, 1, False, False, mac="mul_add")
    blocks = [dataclasses.replace(base, tile_rows=rows, tile_cols=cols) for rows in (1, 2, 4) for cols in (2, 4)]
    candidates = [Ranked(dataclasses.replace(config, tile_k=tile_k), 100.0 - 10 * i - tile_k)
                  for i, config in enumerate(blocks) for tile_k in (2, 4)]
    candidates += [Ranked(dataclasses.replace(config, layout="NT"), 5.0 - i) for i, config in enumerate(blocks)]
    by_layout = finalists.best_of_each_kind(candidates, 2)
    assert len(by_layout) == 3 and by_layout[-1].config.layout == "NT"
    kept = finalists.best_of_each_kind(candidates, 2, kind=finalists.layout_and_block("NN"))
    shapes = [(r.config.block_rows, r.config.block_cols) for r in kept if r.config.layout == "NN"]
    assert sorted(set(shapes)) == sorted({(c.block_rows, c.block_cols) for c in blocks})
    assert len(shapes) == len(blocks) + 1 and [r.config.layout for r in kept].count("NT") == 1  # top 2: one block
    assert [r.gflops for r in kept] == sorted((r.gflops for r in kept), reverse=True)


def test_a_batch_class_with_more_blocks_than_it_keeps_still_keeps_each_layouts_best():
    import dataclasses

    from autogemm.codelets.simt import SimtParams
    from autogemm.profiles import Ranked
    from autogemm.profiles.profile import MAX_RANKED

    base = SimtParams("NN", "offset", 8, 8, 2, 2, 2, 1, False, False, mac="mul_add")
    many = [Ranked(dataclasses.replace(base, wg_rows=rows, tile_rows=tile), 1000.0 - rows - tile)
            for rows in range(1, 17) for tile in (1, 2, 4)]                  # 48 block shapes in NN
    others = [Ranked(dataclasses.replace(base, layout=layout), 1.0) for layout in ("NT", "TN", "TT")]
    kind = finalists.layout_and_block("NN")
    kept = finalists.best_of_each_kind(many + others, 3, kind=kind)
    assert len(kept) == MAX_RANKED and {r.config.layout for r in kept} == {"NN", "NT", "TN", "TT"}
    late = finalists.best_of_each_kind(many + others, 3, kind=kind, late=lambda: True)
    assert [r.config.layout for r in late] == ["NN", "NT", "TN", "TT"]
