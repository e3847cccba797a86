"""``autogemm explain``: a product's route, plan and launches, timed and checked, read at 80 columns."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from autogemm.bench import explain as explaining
from autogemm.bench.shapes import Shape
from autogemm.cli import main
from autogemm.dtypes import DTYPES
from autogemm.engine.dispatch import CUDA_PATH, HOST_BLAS, OPENCL_PLAN, STREAMED
from autogemm.runtime import context_for


@pytest.mark.parametrize("letter, shape", [("s", Shape(70, 9, 33, "TN")), ("z", Shape(45, 61, 37, "NT")),
                                           ("d", Shape(130, 140, 150, "TT"))])
def test_explain_times_each_launch_of_the_plan_and_checks_the_result(letter, shape):
    found = explaining.explain(context_for(), DTYPES[letter], shape, runs=3)
    assert found.route in (HOST_BLAS, CUDA_PATH, STREAMED, OPENCL_PLAN)
    assert len(found.launches) == len(found.plan.split(" ; ")) >= 1
    assert found.launches[0].gap_before == 0 and all(launch.seconds > 0 for launch in found.launches)
    # the span from the first start to the last end holds every launch
    assert found.device_seconds >= max(launch.seconds for launch in found.launches)
    assert found.work_groups >= 1 and found.error < DTYPES[letter].tolerance
    lines = explaining.describe(found)
    assert max(map(len, lines)) <= 80
    assert found.plan.split(" ; ")[0][:20] in "\n".join(lines)


def test_explain_refuses_to_time_a_wrong_result(monkeypatch):
    """A plan that writes nothing leaves C poisoned: explain says so instead of reporting a time."""
    from autogemm.blas.launch_plan import LaunchPlan

    monkeypatch.setattr(LaunchPlan, "enqueue", lambda self, *args, **kwargs: [])
    with pytest.raises(AssertionError, match="wrong result"):
        explaining.explain(context_for(), DTYPES["s"], Shape(300, 200, 100), runs=1)


def test_the_explain_command_prints_and_writes_what_it_found(tmp_path):
    out = CliRunner().invoke(main, ["explain", "40", "50", "60", "--layout", "tn", "--dtype", "d", "--runs", "2",
                                    "--json", str(tmp_path / "e.json")])
    assert out.exit_code == 0, out.output
    assert "launches (device us, idle us before)" in out.output and "numpy operands run on" in out.output
    data = json.loads((tmp_path / "e.json").read_text())
    assert data["shape"] == "40x50x60 TN" and data["dt"] == "d" and data["launches"]
    assert np.isfinite(data["device_seconds"]) and "commit" in data
    bad = CliRunner().invoke(main, ["explain", "0", "5", "5"])
    assert bad.exit_code == 2 and "0 is not in the range" in bad.output


def test_explain_times_a_strided_batch_and_checks_every_product(monkeypatch):
    """With a batch, the plan is gemm_batched's (one launch for all) and every product is checked: a plan
    of the first product alone leaves the others poisoned."""
    import dataclasses

    found = explaining.explain(context_for(), DTYPES["s"], Shape(20, 12, 9, "NT"), runs=2, batch=6)
    assert found.batch == 6 and found.error < DTYPES["s"].tolerance and len(found.launches) >= 1
    lines = explaining.describe(found)
    assert "a strided batch of 6 x 20 x 12 x 9 NT" in lines[0] and max(map(len, lines)) <= 80
    single = dataclasses.replace(found, batch=1)
    assert found.tflops == pytest.approx(6 * single.tflops)
    plan_for = explaining.plan_for
    monkeypatch.setattr(explaining, "plan_for", lambda ctx, problem: plan_for(ctx, dataclasses.replace(problem,
                                                                                                       batch=1)))
    with pytest.raises(AssertionError, match="wrong result"):
        explaining.explain(context_for(), DTYPES["s"], Shape(20, 12, 9, "NT"), runs=1, batch=6)


@pytest.mark.gpu
@pytest.mark.cuda
def test_explain_times_the_cuda_paths_launches_where_numpy_operands_take_it(ctx, hopper, monkeypatch):
    """FP16 of a K whose rows TMA cannot read as they lie: the layout pass and the kernel, each timed on
    the CUDA stream, the result checked; a plan that writes nothing is refused."""
    from autogemm.blas.cuda_gemm import CudaGemm

    found = explaining.explain(ctx, DTYPES["h"], Shape(300, 200, 1001, "NT"), runs=3)
    assert found.route == CUDA_PATH and found.on_cuda and found.backend == "cuda"
    names = [launch.name for launch in found.launches]
    assert names[0] == "k_major_2" and names[1].startswith("wgmma") and len(names) == 2   # both laid out at once
    assert all(launch.seconds > 0 for launch in found.launches) and found.launches[0].gap_before == 0
    assert found.device_seconds >= max(launch.seconds for launch in found.launches)
    assert found.error < DTYPES["h"].tolerance and found.work_groups >= 1
    lines = explaining.describe(found)
    assert max(map(len, lines)) <= 80 and "device arrays" not in "\n".join(lines)
    monkeypatch.setattr(CudaGemm, "enqueue", lambda self, *args, **kwargs: None)
    with pytest.raises(AssertionError, match="wrong result"):
        explaining.explain(ctx, DTYPES["h"], Shape(300, 200, 1001, "NT"), runs=1)


def test_explain_says_how_the_cuda_kernel_shares_out_the_blocks_of_c():
    """Whole blocks of C in rounds, or a few whose K many blocks share (stream-K), as the schedule has it."""
    from autogemm.codelets.wgmma import WgmmaParams, render

    params = WgmmaParams("f16", 64, 1, 4, group=16, out="f16")
    deep = render(params).schedule(40, 173, 31562, 132)
    assert explaining._sharing(params, deep) == "3 blocks of C of 64 x 64, the K of 3 shared by 90 blocks (stream-K)"
    square = render(params).schedule(4096, 4096, 4096, 132)
    assert explaining._sharing(params, square) == "4096 blocks of C of 64 x 64"
