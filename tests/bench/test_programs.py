"""The ``programs`` suite (a fixed sample and seven kinds of model, a quarter held out of tuning), the
shape kinds, and how a run over it is reported: by kind, by part, as JSON and as a plot."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from autogemm.bench import report
from autogemm.bench.programs import (
    HELD_OUT_EVERY,
    KINDS,
    MAX_MULTIPLY_ADDS,
    MAX_OPERAND_ELEMENTS,
    model_products,
    programs_suite,
    sampled_products,
    shape_kind,
)
from autogemm.bench.runner import AUTOGEMM, CaseResult, Measurement
from autogemm.bench.shapes import LAYOUTS, Shape, read_shapes
from autogemm.bench.suites import SUITES
from autogemm.cli import main
from autogemm.errors import ArgumentError
from autogemm.workload import read_workload


def test_the_sample_is_fixed_spans_the_range_in_every_layout_and_meets_its_caps():
    sample = sampled_products()
    assert sample == sampled_products() and len(sample) == 200
    assert {s.layout for s in sample} == set(LAYOUTS)
    sides = [x for s in sample for x in (s.m, s.n, s.k)]
    assert min(sides) <= 2 and max(sides) >= 2**14 and len(set(sides)) > 300
    assert all(s.m * s.n * s.k <= MAX_MULTIPLY_ADDS for s in sample)
    assert all(max(s.m * s.k, s.k * s.n, s.m * s.n) <= MAX_OPERAND_ELEMENTS for s in sample)
    assert sampled_products(seed=1) != sample


def test_the_suite_holds_seven_kinds_of_model_and_a_quarter_of_each_part_out_of_tuning():
    shapes = SUITES["programs"]()
    models = model_products()
    assert {s.name.split()[0] for s in models} == {"resnet50", "attention", "moe", "dlrm", "rnn", "vit", "science"}
    assert len(shapes) == 200 + len(models) and len(set(shapes)) == len(shapes)
    for part in (shapes[:200], shapes[200:]):
        assert sum(s.held_out for s in part) == len(part) // HELD_OUT_EVERY
    assert {shape_kind(s) for s in shapes} == set(KINDS)
    assert programs_suite() == shapes


@pytest.mark.parametrize("shape, kind", [
    ((1, 4096, 4096), "gemv-like"), ((4096, 1, 64), "gemv-like"), ((64, 64, 64), "tiny"),
    ((8, 5000, 5000), "few-column"), ((64, 4096, 4096), "skinny"), ((32, 32, 10**6), "deep"),
    ((512, 512, 512), "small"), ((4096, 4096, 4096), "large"), ((100, 100, 64), "small")])
def test_a_product_is_of_the_kind_its_shape_says(shape, kind):
    assert shape_kind(Shape(*shape)) == kind


def test_write_shapes_leaves_the_held_out_products_out_and_tune_reads_what_it_wrote(tmp_path):
    path = tmp_path / "tune.shapes"
    out = CliRunner().invoke(main, ["bench", "--suite", "programs", "--write-shapes", str(path)])
    assert out.exit_code == 0, out.output
    assert "wrote 200 problems (66 held out of tuning left out)" in " ".join(out.output.split())
    tunable = [s for s in programs_suite() if not s.held_out]
    assert [(s.m, s.n, s.k, s.layout, s.name) for s in read_shapes(path)] == [
        (s.m, s.n, s.k, s.layout, s.name) for s in tunable]
    records, skipped = read_workload(path, ("s",))
    assert not skipped and len(records) == len(set((s.m, s.n, s.k, s.layout) for s in tunable))


def _cases(ratios: dict[Shape, float]) -> list[CaseResult]:
    cases = []
    for shape, ratio in ratios.items():
        case = CaseResult("s", shape, 50.0, "cfg")
        case.measurements += [Measurement(AUTOGEMM, 1e-3, 10.0 * ratio, 1e-7, True, ""),
                              Measurement("cuBLAS", 1e-3, 10.0, 1e-7, True, "")]
        cases.append(case)
    return cases


def test_a_run_is_reported_by_kind_and_by_part_in_the_table_and_the_json(tmp_path):
    cases = _cases({Shape(1, 512, 512): 0.5, Shape(1, 600, 512, held_out=True): 2.0,
                    Shape(4096, 4096, 4096): 0.9, Shape(512, 512, 512): 0.25, Shape(600, 600, 600, held_out=True): 1.0})
    by_kind = report.geometric_means(cases, report.kind_of)
    assert by_kind[("s", "cuBLAS", "gemv-like")] == report.Comparison(pytest.approx(1.0), 2, 0.5, "1x512x512 NN")
    assert by_kind[("s", "cuBLAS", "small")].mean == pytest.approx(0.5)
    by_part = report.geometric_means(cases, report.part_of)
    assert by_part[("s", "cuBLAS", report.HELD_OUT)].mean == pytest.approx(2.0 ** 0.5)
    assert by_part[("s", "cuBLAS", report.TUNED_FOR)].mean == pytest.approx((0.5 * 0.9 * 0.25) ** (1 / 3))

    from autogemm.cli.commands_bench import _report
    from autogemm.cli.common import console
    with console.capture() as captured:
        _report(cases, "TFLOP/s", tmp_path / "r.json", None, None, {})
    text = captured.get()
    assert max(map(len, text.splitlines())) <= 80
    assert "gemv-like" in text and "held out" in text and "1.41 (1.00)" in text
    data = json.loads((tmp_path / "r.json").read_text())
    assert {m["group"] for m in data["by_part"]} == {report.HELD_OUT, report.TUNED_FOR}
    assert {r["kind"] for r in data["results"]} == {"gemv-like", "large", "small"}
    _, again = report.read_json(tmp_path / "r.json")
    assert [c.shape for c in again] == [c.shape for c in cases]
    report.write_json(cases, tmp_path / "r.json.gz", {"device": "a GPU"})    # compressed by its name
    assert (tmp_path / "r.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    meta, again = report.read_json(tmp_path / "r.json.gz")
    assert meta["device"] == "a GPU" and [c.shape for c in again] == [c.shape for c in cases]
    (tmp_path / "cut.json.gz").write_bytes((tmp_path / "r.json.gz").read_bytes()[:40])
    with pytest.raises(ArgumentError, match="not a JSON file of autogemm bench"):
        report.read_json(tmp_path / "cut.json.gz")


def test_a_plot_of_the_whole_suite_shows_the_ratios_by_kind(tmp_path, monkeypatch):
    """Past ``MANY_PROBLEMS`` problems the plot draws each product's ratio in its kind's column (held-out
    ones hollow), not a label per product."""
    from PIL import Image

    drawn = []
    monkeypatch.setattr(report, "_ratios_by_kind", lambda ax, cases, peers: drawn.append((len(cases), peers)))
    cases = _cases({s: 0.5 + (i % 5) / 4 for i, s in enumerate(programs_suite())})
    report.plot(cases, tmp_path / "p.png", "programs")
    assert drawn == [(len(cases), ["cuBLAS"])]
    monkeypatch.undo()
    report.plot(cases, tmp_path / "p.png", "programs")
    image = Image.open(tmp_path / "p.png")
    assert image.width <= report.PLOT_WIDTH and (tmp_path / "p.png").stat().st_size < 150_000
