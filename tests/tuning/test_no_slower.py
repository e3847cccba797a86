"""A tune never makes a product slower (``tuning.no_slower``): the worker times the plans two profiles make
for a workload's products where they differ, as bench times them, and a product whose tuned plan runs
slower keeps the plan it had, as an entry of its own (a GEMM's, or its multi-vector GEMV's), the workload
compared again after."""

from __future__ import annotations

from autogemm.blas import GemmProblem, Op
from autogemm.blas.plans import choice_for
from autogemm.codelets.gemv import GemvParams
from autogemm.codelets.simt import SimtParams
from autogemm.dtypes import DTYPES
from autogemm.profiles import Ranked, SizeClassEntry, trying
from autogemm.profiles.profile import SHAPES
from autogemm.tuning import tuner
from autogemm.tuning.evaluation import WorkerProcess
from autogemm.tuning.no_slower import KEPT, Kept, keep_no_slower, workload_problems
from autogemm.workload import ShapeRecord

FAST, SLOW = SimtParams(layout="NT", tile_rows=2, tile_cols=2), SimtParams(layout="NT", wg_rows=4, wg_cols=4)


def _exact(profile, config, shape=(70, 45, 33), layout="NT"):
    return profile.with_entry("s", SizeClassEntry(layout, shape, (Ranked(config, 1.0),), "test", 1, 0.0), SHAPES)


def test_the_worker_times_the_plans_of_two_profiles_where_they_differ(device):
    base = tuner.new_profile(device, "test")
    before, after = _exact(base, FAST), _exact(base, SLOW)
    problem = GemmProblem.dense(DTYPES["s"], 70, 45, 33, Op.from_letter("N", "a"), Op.from_letter("T", "b"))
    for profile, config in ((before, FAST), (after, SLOW)):     # each profile's exact entry is its plan
        with trying(device, profile):
            assert choice_for(device, problem).selection.params == config
    with WorkerProcess(device) as worker:
        compared = worker.compare_plans((before, after), [("s", 70, 45, 33, "NT"), ("s", 20, 30, 40, "NN")], 2)
    timed, same = compared
    assert same is None                                     # no entry for it in either: the same plan
    assert [t["config"] for t in timed] == [FAST.to_dict(), SLOW.to_dict()]
    assert all(0 < t["seconds"] < 1 and t["gemv"] is None for t in timed)


class _Worker:
    """Answers each comparison from a script, and records the profiles it was asked about."""

    def __init__(self, *answers) -> None:
        self.answers, self.asked = list(answers), []

    def compare_plans(self, profiles, problems, runs):
        self.asked.append(profiles)
        return self.answers.pop(0) if self.answers else [None] * len(problems)


def _timed(seconds, config=FAST, split=None, gemv=None):
    return {"seconds": seconds, "config": config.to_dict(), "split": split, "gemv": gemv}


def test_a_product_whose_tuned_plan_runs_slower_keeps_its_plan_and_the_workload_is_compared_again(device):
    base = tuner.new_profile(device, "test")
    vectors = GemvParams(layout="T")
    problems = [("s", 70, 45, 33, "NT"), ("s", 900, 3, 500, "TN"), ("s", 64, 64, 64, "NN"), ("s", 8, 8, 8, "NN")]
    first = [[_timed(1e-5, FAST, split=2), _timed(3e-5, SLOW)],                       # slower: kept
             [_timed(2e-5, vectors, gemv=["T", 500, 900, 3]), _timed(None, SLOW)],   # failed: kept
             [_timed(4e-5, SLOW), _timed(1e-5, FAST)],                                # faster: tuned stays
             None]                                                                    # the same plan
    second = [None, None, [_timed(4e-5, SLOW), _timed(1e-5, FAST)], [_timed(1e-6, FAST), _timed(5e-6, SLOW)]]
    worker = _Worker(first, second)
    kept_profile, kept = keep_no_slower(worker, base, base, problems)
    assert kept == [Kept("s", (70, 45, 33), "NT", 1e-5, 3e-5), Kept("s", (900, 3, 500), "TN", 2e-5, None),
                    Kept("s", (8, 8, 8), "NN", 1e-6, 5e-6)]
    gemm = kept_profile.entry("s", "NT", SHAPES, (70, 45, 33))
    assert gemm.strategy == KEPT and gemm.ranked[0].config == FAST and gemm.ranked[0].split == 2
    assert gemm.ranked[0].gflops == 2 * 70 * 45 * 33 / 1e-5 / 1e9
    assert kept_profile.entry("s", "T", SHAPES, (500, 900, 3)).ranked[0].config == vectors
    assert kept_profile.entry("s", "NN", SHAPES, (64, 64, 64)) is None
    assert len(worker.asked) == 2 and worker.asked[1][1].entry("s", "NT", SHAPES, (70, 45, 33)) is not None
    assert keep_no_slower(_Worker(), base, base, problems[:1]) == (base, [])      # nothing slower: one round
    lost = _Worker()
    lost.compare_plans = lambda *args: None
    assert keep_no_slower(lost, base, base, problems) == (base, None)


def test_the_problems_compared_are_the_workloads_gemm_products_of_the_dtypes_tuned():
    records = [ShapeRecord("gemm", "s", "NT", m=5, n=6, k=7), ShapeRecord("gemm", "s", "NT", m=5, n=6, k=7),
               ShapeRecord("gemm", "d", "NN", m=5, n=6, k=7), ShapeRecord("gemv", "s", "N", m=5, n=6, k=1),
               ShapeRecord("gemm", "s", "TN", m=9, n=9, k=9, batch=4)]
    assert workload_problems(records, (DTYPES["s"],)) == [("s", 5, 6, 7, "NT")]
