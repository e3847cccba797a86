"""``autogemm bench``: shapes, the runner's checks of every result, ratios, and what it writes."""

from __future__ import annotations

import csv
import dataclasses
import json
import math

import numpy as np
import pyopencl as cl
import pytest
from click.testing import CliRunner

import autogemm
from autogemm.accuracy import Reference, random_matrix
from autogemm.bench import report
from autogemm.bench.runner import AUTOGEMM, Bench, CaseResult, Measurement
from autogemm.bench.shapes import Shape, read_shapes, square_sweep
from autogemm.bench.suites import suite
from autogemm.blas import launch_plan as plan_module
from autogemm.blas.vectors import MAX_VECTORS
from autogemm.cli import main
from autogemm.dtypes import DTYPES
from autogemm.errors import ArgumentError
from autogemm.profiles import thresholds_for


def test_the_suite_holds_the_problems_the_issue_names():
    shapes = suite()
    dims = {(s.m, s.n, s.k) for s in shapes}
    for size in (256, 512, 1024, 2048, 4096, 8192, 1000, 1023, 1025, 3000, 4097):
        assert (size, size, size) in dims
    assert {(8192, 64, 8192), (64, 8192, 8192), (4096, 4096, 64), (128, 128, 65536)} <= dims
    assert {s.layout for s in shapes} == {"NN", "NT", "TN"}
    assert len(shapes) == len(dims) * 3


def test_square_sweeps():
    assert [s.n for s in square_sweep("256:2048")] == [256, 512, 1024, 2048]
    assert [s.n for s in square_sweep("100:400:100")] == [100, 200, 300, 400]
    assert [s.n for s in square_sweep("1000, 1023,64:128:x2")] == [1000, 1023, 64, 128]
    assert square_sweep("8", "TN") == [Shape(8, 8, 8, "TN")]
    for bad in ("", "0", "a", "10:5", "5:10:0", "1:2:3:4"):
        with pytest.raises(ArgumentError):
            square_sweep(bad)


def test_shapes_files(tmp_path):
    good = tmp_path / "shapes.txt"
    good.write_text("# skinny\n8192 64 8192\n\n100 200 300 tn  # transposed A\n")
    assert read_shapes(good) == [Shape(8192, 64, 8192), Shape(100, 200, 300, "TN", "transposed A")]
    for text in ("1 2\n", "1 2 3 XY\n", "0 2 3\n", "a b c\n", "# only a comment\n"):
        bad = tmp_path / "bad.txt"
        bad.write_text(text)
        with pytest.raises(ArgumentError):
            read_shapes(bad)


@pytest.fixture(scope="module")
def bench(ctx):
    return Bench(ctx, peers=("numpy", "cublas", "clblast"), runs=2)


@pytest.mark.parametrize("letter,shape", [("s", Shape(70, 45, 33, "NT")), ("z", Shape(37, 29, 50, "TN")),
                                          ("c.3xtf32", Shape(40, 33, 21, "NN")), ("b", Shape(33, 40, 70, "TN")),
                                          ("hs", Shape(33, 40, 70, "NT"))])
def test_autogemm_and_numpy_are_timed_and_checked(bench, letter, shape):
    case = bench.run(DTYPES[letter], shape)
    ours = case.measurements[0]
    assert ours.name == AUTOGEMM and ours.correct, ours.note
    assert ours.tflops > 0 and ours.error < DTYPES[letter].tolerance
    numpy_run = next(m for m in case.measurements if m.name == "numpy")
    assert numpy_run.correct and case.ratio("numpy") == pytest.approx(ours.tflops / numpy_run.tflops)
    assert case.peak_tflops > 0 and case.config and case.dtype == letter


def test_a_wrong_autogemm_result_is_reported_not_counted(bench, monkeypatch):
    def nothing(plan, *args, **kwargs):   # C is never written
        return [cl.enqueue_marker(plan.ctx.queue)]

    monkeypatch.setattr(plan_module.LaunchPlan, "enqueue", nothing)
    case = bench.run(DTYPES["s"], Shape(20, 20, 20))
    ours = case.measurements[0]
    assert not ours.correct and ours.note == "wrong result" and case.rate(AUTOGEMM) is None
    assert case.ratio("numpy") is None


def test_sampled_rows_still_see_every_element_written(ctx):
    rng = np.random.default_rng(3)
    dt = DTYPES["d"]
    a, b = random_matrix(rng, dt, (600, 30)), random_matrix(rng, dt, (30, 40))
    ref = Reference(dt, a, b, rng, rows=[300, 301, 5000])
    assert ref.rows is not None and 0 in ref.rows and 599 in ref.rows and len(ref.rows) < 600
    assert 300 in ref.rows and 301 in ref.rows            # rows asked for (5000 is beyond C)
    exact = a @ b
    assert ref.check(exact)[1]
    hole = exact.copy()
    hole[300, 7] = np.nan                      # a row the sample may not hold
    assert ref.check(hole) == (math.inf, False)
    off = exact.copy()
    off[599] *= 1.01                          # the last block is always checked
    assert not ref.check(off)[1]


def _case(dtype: str, n: int, rates: dict[str, float | None]) -> CaseResult:
    case = CaseResult(dtype, Shape(n, n, n), 10.0, "cfg")
    for name, rate in rates.items():
        case.measurements.append(Measurement(name, 1.0, rate, 0.0 if rate else None, rate is not None,
                                             "" if rate else "wrong result"))
    return case


def test_a_peer_missing_on_every_problem_takes_one_line_and_a_wrong_result_one_per_problem():
    cases = [_case("s", n, {AUTOGEMM: 2.0, "cuBLAS": None, "CLBlast": 1.0}) for n in (64, 128, 256, 512)]
    for case in cases:
        case.measurements[1].note = "not available"
    cases[1].measurements[2] = Measurement("CLBlast", 1.0, None, 0.5, False)
    assert report.failures(cases) == ["cuBLAS: not available (4 problems)",
                                      "CLBlast: wrong (relative error 0.5) (s 128x128x128 NN)"]


def test_geometric_means_pair_end_to_end_with_end_to_end():
    cases = [_case("s", 64, {AUTOGEMM: 2.0, "autogemm e2e": 1.0, "cuBLAS": 4.0, "cuBLAS e2e": 0.5}),
             _case("s", 128, {AUTOGEMM: 8.0, "autogemm e2e": 2.0, "cuBLAS": 4.0, "cuBLAS e2e": None})]
    means = report.geometric_means(cases)
    assert means[("s", "cuBLAS")] == report.Comparison(pytest.approx(1.0), 2, 0.5, "64x64x64 NN")
    assert means[("s", "cuBLAS e2e")] == report.Comparison(pytest.approx(2.0), 1, 2.0, "64x64x64 NN")
    assert ("s", "autogemm e2e") not in means


def test_numpy_is_compared_with_autogemms_own_calls_from_numpy_to_numpy_where_they_were_timed():
    """numpy's calls take host arrays and return one: its ratio is autogemm's numpy-in, numpy-out rate
    over numpy's where that was timed, the device-resident one otherwise."""
    both = _case("s", 64, {AUTOGEMM: 4.0, "autogemm e2e": 1.0, "numpy": 2.0})
    assert both.ratio("numpy") == pytest.approx(0.5)
    assert _case("s", 64, {AUTOGEMM: 4.0, "numpy": 2.0}).ratio("numpy") == pytest.approx(2.0)
    assert report.geometric_means([both])[("s", "numpy")].mean == pytest.approx(0.5)


def test_bench_on_a_device_that_shares_the_hosts_memory_times_numpy_to_numpy_by_default():
    """There a program's products go from numpy to numpy (the host's BLAS where it is faster): bench
    times those calls beside the kernels and compares them with numpy, unless told --resident."""
    if not autogemm.default_device().shares_host_memory:
        pytest.skip("the default device has memory of its own")
    out = CliRunner().invoke(main, ["bench", "--sizes", "24", "--runs", "1", "--peers", "numpy"])
    assert out.exit_code == 0 and "autogemm e2e" in out.output, out.output
    out = CliRunner().invoke(main, ["bench", "--sizes", "24", "--runs", "1", "--peers", "numpy", "--resident"])
    assert out.exit_code == 0 and "e2e" not in out.output, out.output


def test_a_wide_comparison_reads_at_80_columns_without_cut_cells():
    """Three autogemm paths against a peer's three (the end-to-end run beside torch): too wide for one
    table at 80 columns, the ratios go to a table of their own rather than headers cut short."""
    from autogemm.cli.commands_bench import _report
    from autogemm.cli.common import console

    rates = {AUTOGEMM: 48.5, "autogemm e2e": 38.6, "autogemm+host e2e": 32.9, "cuBLAS": 54.2, "cuBLAS e2e": 6.4,
             "cuBLAS pinned e2e": 34.5}
    cases = [_case("s", n, rates) for n in (1024, 16384)]
    with console.capture() as captured:
        _report(cases, "TFLOP/s on a GPU (median of 7)", None, None, None, {})
    text = captured.get()
    assert max(map(len, text.splitlines())) <= 80 and "…" not in text
    assert "autogemm+host e2e" in text and "/ cuBLAS pinned e2e" in text and "autogemm / peer" in text


def test_bench_command_writes_table_json_csv_and_plot(tmp_path):
    out = CliRunner().invoke(main, [
        "bench", "--dtype", "s,c", "--sizes", "24,40", "--peers", "numpy", "--runs", "2", "--end-to-end",
        "--json", str(tmp_path / "b.json"), "--csv", str(tmp_path / "b.csv"), "--plot", str(tmp_path / "b.png")])
    assert out.exit_code == 0, out.output
    assert "geometric mean" in out.output
    data = json.loads((tmp_path / "b.json").read_text())
    shares = autogemm.default_device().shares_host_memory         # PoCL's CPU: nothing to copy
    assert (data["host_copies"] is None) == shares and ("host copies" in out.output) != shares
    rows = data["results"]
    assert {(r["m"], r["n"], r["k"], r["layout"]) for r in rows} == {(24, 24, 24, "NN"), (40, 40, 40, "NN")}
    assert {r["implementation"] for r in rows} == {"autogemm", "autogemm e2e", "autogemm+host e2e", "numpy"}
    assert all(r["correct"] for r in rows)
    assert {(m["dtype"], m["peer"]) for m in data["geometric_means"]} == {("s", "numpy"), ("c", "numpy")}
    assert all(m["worst_autogemm_over_peer"] <= m["geomean_autogemm_over_peer"] for m in data["geometric_means"])
    assert "worst" in out.output
    with open(tmp_path / "b.csv") as f:
        assert len(list(csv.DictReader(f))) == len(rows)
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"


def test_a_result_names_its_source_by_a_digest_of_the_files(tmp_path):
    """provenance carries a digest of autogemm's Python and C files: another byte, file or name gives
    another; the same files in another folder, the same."""
    assert len(report.provenance()["source"]) == 12
    for folder in ("one", "two"):
        (tmp_path / folder / "api").mkdir(parents=True)
        (tmp_path / folder / "api" / "gemm.py").write_text("x = 1\n")
        (tmp_path / folder / "copier.c").write_text("int x;\n")
        (tmp_path / folder / "notes.txt").write_text(folder)                    # not source
    one, two = tmp_path / "one", tmp_path / "two"
    assert report.source_digest(one) == report.source_digest(two)
    seen = {report.source_digest(one)}
    (two / "api" / "gemm.py").write_text("x = 2\n")
    seen.add(report.source_digest(two))
    (one / "api" / "gemm.py").rename(one / "api" / "plan.py")
    seen.add(report.source_digest(one))
    (one / "extra.py").write_text("")
    seen.add(report.source_digest(one))
    assert len(seen) == 4


def test_bench_command_rejects_bad_options(tmp_path):
    runner = CliRunner()
    for args, message in ((["--sizes", "64", "--suite"], "choose one of"), (["--peers", "mkl"], "unknown mkl"),
                          (["--sizes", "x"], "size 'x'")):
        out = runner.invoke(main, ["bench", *args])
        assert out.exit_code == 2 and message in out.output, out.output


def test_clblast_tuner_results_are_read_per_precision(tmp_path):
    from autogemm.bench.peers import clblast_tuned_from

    def result(time, mwg):
        return {"time": time, "parameters": {"MWG": mwg, "NWG": 64, "PRECISION": 32}}

    (tmp_path / "clblast_xgemm_1_32.json").write_text(json.dumps({"results": [result(2.0, 32), result(1.5, 64)]}))
    (tmp_path / "clblast_xgemm_2_32.json").write_text(json.dumps({"results": [result(1.7, 128)]}))
    (tmp_path / "clblast_xgemm_1_64.json").write_text(json.dumps({"results": [result(0.1, 16)]}))
    assert clblast_tuned_from(tmp_path, "s") == {"MWG": 64, "NWG": 64}
    assert clblast_tuned_from(tmp_path, "c") is None


def test_bench_batch_times_checks_and_compares(tmp_path):
    out = CliRunner().invoke(main, ["bench-batch", "--dtype", "s", "--batches", "12x8", "--runs", "2",
                                    "--overhead-size", "16", "--reuse", "24x8x40", "--reuse-products", "3",
                                    "--json", str(tmp_path / "b.json")])
    assert out.exit_code == 0, out.output
    data = json.loads((tmp_path / "b.json").read_text())
    case = data["cases"][0]
    timed = {m["name"]: m for m in case["measurements"]}
    assert timed["autogemm strided"]["correct"] and timed["autogemm loop"]["correct"]
    assert timed["autogemm strided"]["tflops"] > 0 and case["batch"] == 12 and case["n"] == 8
    assert data["overhead"]["call_seconds"] > 0 and data["overhead"]["call_done_seconds"] > 0
    reuse = data["reuse"][0]
    assert reuse["reused_seconds"] > 0 and (reuse["m"], reuse["n"], reuse["k"], reuse["products"]) == (24, 8, 40, 3)
    # the case the plan is for: A stored as the configuration packs it, where one of N and T does
    plans = [autogemm.GemmPlan(autogemm.default_device(), np.float32, 24, 8, 40, trans_a) for trans_a in "NT"]
    packs = any(plan.launch_plan.staging["A"].packed for plan in plans)
    for plan in plans:
        plan.release()
    assert 0 < reuse["reused_busy"] <= 1.01 and reuse["a_packed"] == packs
    assert ("read in place" in out.output) != packs
    assert "(one launch)" in out.output and "copying A once" in out.output
    bad = CliRunner().invoke(main, ["bench-batch", "--batches", "12by8"])
    assert bad.exit_code != 0 and "not 2 positive numbers" in bad.output
    bad = CliRunner().invoke(main, ["bench-batch", "--reuse", "24x8"])
    assert bad.exit_code != 0 and "not 3 positive numbers" in bad.output


def test_bench_routines_checks_gemv_and_transpose(tmp_path):
    """Every implementation's result checked: autogemm's and numpy's right (torch's absent on CPU-only
    machines), rates and ratios in the table and the JSON."""
    out = CliRunner().invoke(main, ["bench-routines", "--dtype", "c,b", "--sizes", "33x70", "--runs", "2",
                                    "--json", str(tmp_path / "r.json")])
    assert out.exit_code == 0, out.output
    cases = json.loads((tmp_path / "r.json").read_text())["cases"]
    routines = ("gemv N", "gemv T", "transpose")
    assert [(c["routine"], c["dtype"]) for c in cases] == [(r, d) for d in "cb" for r in routines]
    for case in cases:
        timed = {t["name"]: t for t in case["timings"]}
        assert timed["autogemm"]["correct"] and timed["numpy"]["correct"] and timed["autogemm"]["seconds"] > 0
        assert case["bytes"] > 33 * 70 * 2
    assert "GB/s" in out.output and "/ numpy" in out.output and max(map(len, out.output.splitlines())) <= 80


def test_bench_hybrid_reports_the_four_strategies(tmp_path):
    """One co-tuning sweep gives all four strategies, each checked; the resident rate beside them."""
    out = CliRunner().invoke(main, ["bench-hybrid", "-d", "cpu", "--dtype", "d", "--sizes", "96", "--parts", "2",
                                    "--kernels", "2", "--runs", "1", "--json", str(tmp_path / "h.json")])
    assert out.exit_code == 0, out.output
    case = json.loads((tmp_path / "h.json").read_text())["cases"][0]
    rates = {s["name"]: s["tflops"] for s in case["strategies"]}
    assert set(rates) == {"CPU only", "GPU only", "CPU+GPU, tuned split", "CPU+GPU, co-tuned"}
    assert all(r > 0 for r in rates.values()) and case["resident_tflops"] > 0
    # each the best of a superset of the one before's points
    assert rates["CPU+GPU, co-tuned"] >= rates["CPU+GPU, tuned split"] >= rates["GPU only"]
    assert 2 <= case["points"] <= 2 * 3                                   # kernels x (P + 1) splits at most
    bad = CliRunner().invoke(main, ["bench-hybrid", "-d", "cpu", "--sizes", "96x96"])
    assert bad.exit_code != 0 and "not a positive number" in bad.output


def test_the_llm_suite_holds_forward_and_weight_gradient_products_of_each_layer():
    from autogemm.bench.suites import SUITES, llm_suite

    shapes = llm_suite()
    assert SUITES["llm"] is llm_suite and len(shapes) == len(set(shapes)) == 2 * (5 * 7 + 3 * 2)
    forward = {s.name: s for s in shapes if s.layout == "NT"}
    assert forward["lm_head T=1"] == Shape(1, 128256, 4096, "NT", "lm_head T=1")
    assert forward["kv_proj T=8192"] == Shape(8192, 1024, 4096, "NT", "kv_proj T=8192")
    gradient = {s.name: s for s in shapes if s.layout == "TN"}
    assert gradient["down_proj dW T=512"] == Shape(4096, 14336, 512, "TN", "down_proj dW T=512")
    assert gradient["bert_up dW T=128"].k == 128 and "T=2048" in forward["bert_down T=2048"].label


def test_a_run_stopped_early_keeps_in_its_json_what_it_measured(tmp_path, monkeypatch):
    measure = Bench.run

    def third_fails(self, dt, shape):
        if shape.m == 56:
            raise SystemExit(124)         # as a time limit stops a run: no report, no table
        return measure(self, dt, shape)

    monkeypatch.setattr(Bench, "run", third_fails)
    out = CliRunner().invoke(main, ["bench", "--dtype", "s", "--sizes", "24,40,56", "--peers", "numpy", "--runs", "1",
                                    "--json", str(tmp_path / "b.json")])
    assert out.exit_code == 124 and "geometric mean" not in out.output
    rows = json.loads((tmp_path / "b.json").read_text())["results"]
    assert {r["m"] for r in rows} == {24, 40} and all(r["correct"] for r in rows)


def test_a_named_shape_survives_the_json_and_the_cli_takes_a_suite_by_name(tmp_path):
    case = _case("s", 32, {AUTOGEMM: 2.0, "cuBLAS": 4.0})
    case.shape = Shape(32, 32, 32, "NT", "q_proj T=32")
    report.write_json([case], tmp_path / "r.json", {})
    _, (again,) = report.read_json(tmp_path / "r.json")
    assert again.shape == case.shape and again.rate("cuBLAS") == 4.0
    out = CliRunner().invoke(main, ["bench", "--suite", "nonsense", "--peers", "none"])
    assert out.exit_code == 2 and "llm" in out.output


def test_a_product_of_few_columns_or_rows_is_timed_as_the_gemv_gemm_runs(ctx):
    bench = Bench(ctx, peers=(), runs=2)
    deep = thresholds_for(ctx.device).vectors_min_depth + 12       # several vectors need this K for the GEMV
    for shape in (Shape(1, 70, 40, "NT"), Shape(70, 1, 40, "TN"), Shape(1, 30, 20, "NN"),
                  Shape(MAX_VECTORS, 70, deep, "NT"), Shape(700, 3, deep, "TT"), Shape(70, 3, deep, "TT")):
        case = bench.run(DTYPES["s"], shape)
        assert case.config.startswith("gemv") and case.measurements[0].correct, (shape, case.measurements)
    # (few columns over a short K, or in few multiply-adds where the GEMV would pack X first, run a GEMM
    # where its plan is one launch: operands stored as the default configuration reads them)
    for gemm in (Shape(MAX_VECTORS + 1, MAX_VECTORS + 1, 10), Shape(70, 3, 40, "NN"), Shape(70, 3, deep, "NN")):
        assert not bench.run(DTYPES["s"], gemm).config.startswith("gemv")


def test_the_bench_looks_up_no_cuda_target_for_a_product_the_cuda_path_would_not_take(ctx, monkeypatch):
    """DGEMM under 2048^3 runs on OpenCL: timing it makes no CUDA context, which would stay in the process
    beside the OpenCL one for the numpy-in, numpy-out calls after it."""
    from autogemm.bench import runner

    monkeypatch.setattr(runner, "cuda_target", lambda *args: pytest.fail("looked up the CUDA target"))
    case = Bench(ctx, peers=(), runs=2).run(DTYPES["d"], Shape(64, 48, 40))
    assert case.measurements[0].correct


def test_autogemm_end_to_end_runs_in_a_process_of_its_own(ctx, monkeypatch):
    """The numpy-in, numpy-out calls run where the bench's own timings leave nothing behind (a CUDA
    context made there slows OpenCL's in its process): none of them in the bench's process, each right."""
    import os

    from autogemm.bench import peers, runner

    monkeypatch.setattr(runner, "gemm", lambda *args, **kwargs: pytest.fail("an end-to-end call here"))
    case = Bench(ctx, peers=(), runs=2, end_to_end=True).run(DTYPES["d"], Shape(40, 24, 32))
    names = {m.name: m for m in case.measurements}
    assert names["autogemm e2e"].correct and names["autogemm+host e2e"].correct
    assert peers.in_process(runner.AUTOGEMM, os.getpid) != os.getpid()


def test_a_process_that_dies_fails_its_call_and_the_next_call_gets_a_new_one():
    """A driver that crashes the end-to-end process (PoCL once did) costs that row, not the run."""
    import os
    from concurrent.futures.process import BrokenProcessPool

    from autogemm.bench import peers

    first = peers.in_process("crashing", os.getpid)
    with pytest.raises(BrokenProcessPool):
        peers.in_process("crashing", os._exit, 3)
    again = peers.in_process("crashing", os.getpid)
    assert again not in (first, os.getpid())


def test_a_peer_runs_in_a_process_of_its_own_and_gives_its_result_back():
    import os

    from autogemm.bench import peers

    a, b = np.arange(12.0).reshape(3, 4), np.arange(8.0).reshape(4, 2)
    got = peers.in_own_process(peers.numpy_gemm, a, b, 1)
    assert got.name == "numpy" and np.array_equal(got.result, a @ b) and got.seconds > 0
    assert peers.in_own_process(os.getpid) != os.getpid()                 # not this process


def test_wall_clock_timings_warm_up_until_the_first_slow_calls_are_over(monkeypatch):
    """A peer whose first calls are slow (torch's page-locked allocator growing) is timed on the calls
    after them; without warming up it is timed as it is."""
    import time

    from autogemm.bench import peers
    monkeypatch.setattr(peers, "WARMUP_SECONDS", 0.1)
    made = []

    def call():
        made.append(1)
        if len(made) <= 4:
            time.sleep(0.03)
        return np.zeros(1)

    seconds, _ = peers.wall_median(call, 3)
    assert seconds < 0.01 and len(made) >= 7
    made.clear()
    assert peers.wall_median(call, 3, warmup=False)[0] >= 0.03 and len(made) == 3


def test_short_wall_clock_timings_are_repeated_until_they_take_a_while(monkeypatch):
    """A call of a millisecond is timed over ``TIMED_SECONDS`` of calls (its median over 5 varied by a
    quarter from run to run), at most ``MAX_TIMED_CALLS``; a long one over ``runs`` calls alone."""
    import time

    from autogemm.bench import peers
    monkeypatch.setattr(peers, "WARMUP_SECONDS", 0.0)
    monkeypatch.setattr(peers, "TIMED_SECONDS", 0.05)
    made = []

    def call(pause: float):
        made.append(1)
        time.sleep(pause)
        return np.zeros(1)

    peers.wall_median(lambda: call(0.001), 5)
    assert 25 <= len(made) <= 52                       # a warm-up call, then 0.05 s of calls
    made.clear()
    monkeypatch.setattr(peers, "MAX_TIMED_CALLS", 10)
    peers.wall_median(lambda: call(0.0), 5)
    assert len(made) == 11
    made.clear()
    peers.wall_median(lambda: call(0.02), 3)
    assert len(made) == 4


def test_a_dtype_on_tensor_cores_is_a_share_of_their_peak_and_the_line_under_the_table_says_which(
        ctx, tmp_path):
    """On an H100 tensor cores run FP16 at 989 TFLOP/s (dense) and FP64 at 66.9, 15 and 2 times the FMA
    peak: a share of that peak read over 100% (the CUDA path's FP16 at 8192^3 showed 1133%)."""
    from autogemm.bench.peaks import MEASURED_FMA, TENSOR, tensor_peak_tflops
    from autogemm.cli.commands_bench import _report
    from autogemm.cli.common import console

    h100 = dataclasses.replace(ctx.device, name="NVIDIA H100 80GB HBM3 ")
    assert tensor_peak_tflops(h100, DTYPES["h"]) == 989.4 and tensor_peak_tflops(h100, DTYPES["d"]) == 66.9
    assert tensor_peak_tflops(h100, DTYPES["s.3xtf32"]) == pytest.approx(494.7 / 3)
    assert tensor_peak_tflops(h100, DTYPES["s"]) is None                   # float32 has no tensor format
    assert tensor_peak_tflops(dataclasses.replace(ctx.device, name="another GPU"), DTYPES["h"]) is None
    on_tensor_cores = _case("h", 64, {AUTOGEMM: 742.0, "cuBLAS": 750.0})
    on_tensor_cores.peak_tflops, on_tensor_cores.peak = 989.4, TENSOR
    measured = _case("s", 64, {AUTOGEMM: 5.0})
    with console.capture() as captured:
        _report([on_tensor_cores, measured], "TFLOP/s", None, None, None, {})
    text = captured.get()
    assert "% peak" in text and "75%" in text and "50%" in text       # 742 / 989.4 and 5 / 10
    note = report.peak_note([on_tensor_cores, measured])
    assert note == f"% peak: of the {TENSOR}: h 989 TFLOP/s; of the {MEASURED_FMA}: s 10 TFLOP/s"
    assert note in " ".join(text.split()) and max(map(len, text.splitlines())) <= 80
    report.write_json([on_tensor_cores], tmp_path / "r.json", {})
    _, (again,) = report.read_json(tmp_path / "r.json")
    assert again.peak == TENSOR and again.peak_tflops == 989.4


def test_a_plot_of_many_problems_stays_within_its_width_in_256_colours(tmp_path):
    """A suite's plot (the 82 problems of the LLM suite, two dtypes) is drawn at most ``PLOT_WIDTH``
    pixels wide, as a palette PNG of a few tens of KB."""
    from PIL import Image

    from autogemm.bench.suites import llm_suite

    cases = []
    for dtype in ("s", "d"):
        for i, shape in enumerate(llm_suite()):
            case = CaseResult(dtype, shape, 60.0, "simt")
            case.measurements += [Measurement(AUTOGEMM, 1e-3, 10.0 + i % 7, 1e-7, True, ""),
                                  Measurement("cuBLAS", 1e-3, 12.0 + i % 5, 1e-7, True, "")]
            cases.append(case)
    report.plot(cases, tmp_path / "p.png", "a suite")
    image = Image.open(tmp_path / "p.png")
    assert image.width <= report.PLOT_WIDTH and image.mode == "P"
    assert (tmp_path / "p.png").stat().st_size < 200_000


def test_wall_medians_time_their_calls_in_turn_so_a_slow_spell_slows_each_alike(monkeypatch):
    """Two calls of the same cost, and a spell of the machine's that slows whatever runs during it: timed
    one after the other, the spell fell on one of them alone; timed in turn, on both, and their medians
    agree."""
    import time

    from autogemm.bench import peers
    monkeypatch.setattr(peers, "WARMUP_SECONDS", 0.0)
    monkeypatch.setattr(peers, "TIMED_SECONDS", 0.0)
    order = []

    def call(name: str):
        def run():
            order.append(name)
            time.sleep(0.008 if 3 <= len(order) <= 10 else 0.001)   # the spell: calls 3 to 10
            return np.zeros(1)
        return run

    (first, _), (second, _) = peers.wall_medians([call("a"), call("b")], 7)
    assert order[:6] == ["a", "b"] * 3 and len(order) == 2 + 2 * 7       # a warm-up round, then in turn
    assert abs(first - second) < 0.003
    order.clear()
    alone = [peers.wall_median(call("a"), 7)[0], peers.wall_median(call("b"), 7)[0]]
    assert alone[0] > alone[1] + 0.004                                   # the spell on the first alone


def test_numpy_is_timed_in_turn_with_autogemms_numpy_call_and_once_after_it_where_large(monkeypatch):
    from autogemm.bench import peers, runner

    monkeypatch.setattr(runner, "HOST_SETTLE_SECONDS", 0.0)
    monkeypatch.setattr(peers, "WARMUP_SECONDS", 0.0)
    monkeypatch.setattr(peers, "TIMED_SECONDS", 0.0)
    a = np.random.default_rng(3).random((20, 30))
    product, small = peers.numpy_product(a, a.T.copy())
    made = []

    def counted(large: bool):
        def numpy_product(*args):
            return (lambda: made.append(1) or product()), not large
        return numpy_product

    for large, numpy_calls in ((False, 1 + 3), (True, 1)):
        made.clear()
        monkeypatch.setattr(peers, "numpy_product", counted(large))
        mine, theirs = runner.end_to_end("cpu", "d", a, a.T.copy(), "N", "N", False, 3, beside_numpy=True)
        assert mine.name == "autogemm e2e" and theirs.name == "numpy" and len(made) == numpy_calls
        assert np.allclose(mine.result, theirs.result) and theirs.seconds > 0
    assert len(runner.end_to_end("cpu", "d", a, a.T.copy(), "N", "N", False, 3)) == 1


def test_numpy_is_timed_apart_from_a_call_that_runs_on_a_devices_own_memory(ctx, discrete, monkeypatch):
    """On a device of memory of its own numpy's product is timed after autogemm's call, not in turn with
    it (numpy's BLAS threads spin on after its calls, on the cores the copy threads need); where the
    device's profile sends the call to the host's BLAS, both run there, in turn."""
    from limits import set_thresholds

    from autogemm.bench import peers, runner
    from autogemm.profiles.thresholds import EVERY_PRODUCT

    monkeypatch.setattr(runner, "HOST_SETTLE_SECONDS", 0.0)
    monkeypatch.setattr(peers, "WARMUP_SECONDS", 0.0)
    monkeypatch.setattr(peers, "TIMED_SECONDS", 0.0)
    timed, real = [], runner.wall_medians
    monkeypatch.setattr(runner, "wall_medians", lambda calls, *args: timed.append(len(calls)) or real(calls, *args))
    a = np.random.default_rng(4).random((20, 30))
    for host_below, together in ((0, 1), (EVERY_PRODUCT, 2)):
        set_thresholds(monkeypatch, host_multiply_adds=(("d", host_below),))
        timed.clear()
        mine, theirs = runner.end_to_end("cpu", "d", a, a.T.copy(), "N", "N", False, 3, beside_numpy=True)
        assert timed == [together] and theirs.name == "numpy" and theirs.seconds > 0
        assert np.allclose(mine.result, a @ a.T) and np.allclose(theirs.result, a @ a.T)
