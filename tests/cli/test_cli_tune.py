"""``autogemm tune`` and ``autogemm profile ...`` on the CPU device, with a small budget."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from rich.progress import Progress

from autogemm.blas import Op
from autogemm.blas.gemv import GemvProblem
from autogemm.blas.plans import gemv_plan
from autogemm.cli import main
from autogemm.cli.commands_tune import ProgressListener
from autogemm.dtypes import DTYPES
from autogemm.profiles import path_for, profile_for, read, store
from autogemm.tuning.scope import GEMV_SHAPES, SKINNY_ROWS, VECTOR_CLASSES, size_classes


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, device):
    """One quick tuning run of sgemm with 11 evaluations, shared by the tests of this module, and the
    profile the device had before it (one bundled with autogemm, or none)."""
    folder = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOGEMM_CACHE_DIR", str(folder))
        store.forget()
        before = profile_for(device)
        out = CliRunner().invoke(main, ["tune", "--quick", "--dtype", "s", "--budget", "11", "--top", "2"])
    store.forget()
    return folder, out, before


@pytest.fixture
def invoke(tuned, monkeypatch):
    monkeypatch.setenv("AUTOGEMM_CACHE_DIR", str(tuned[0]))
    store.forget()
    yield lambda *args: CliRunner().invoke(main, list(args))
    store.forget()


def test_tune_writes_a_profile_and_shows_a_table(tuned, device, invoke):
    folder, out, before = tuned
    assert out.exit_code == 0, out.output
    assert "multiply-add forms" in out.output and "s large" in out.output and "s small" in out.output
    prof = read(path_for(device.fingerprint))
    # the dtypes not tuned stay as the device's profile had them (a bundled one's, or none)
    kept_dtypes = {key: entries for key, entries in before.dtypes.items() if key != "s"} if before else {}
    assert {key: entries for key, entries in prof.dtypes.items() if key != "s"} == kept_dtypes
    assert {e.name for e in prof.dtypes["s"]} == {"large", "medium", "small", "skinny"}
    assert prof.entry("s", "skinny").shape[0] == SKINNY_ROWS < prof.entry("s", "skinny").shape[1]
    large = prof.entry("s", "large")
    assert large.ranked[0].gflops > 0 and large.evaluations == 3
    rates = [r.gflops for r in large.ranked]
    assert rates == sorted(rates, reverse=True)
    beyond_top = [r.config.layout for r in large.ranked[2:]]     # only the best of other layouts
    assert len(set(beyond_top)) == len(beyond_top)
    assert not set(beyond_top) & {r.config.layout for r in large.ranked[:2]}
    assert (folder / "checkpoints").is_dir()
    # the predictor timed the classes' kernels on sampled shapes, and was kept only if its picks beat
    # the classes' on shapes held out (here the bank is too small for that)
    line = re.search(r"sgemm predictor: (\d+) shapes, (\d+) kernels.*?(not kept|kept)", out.output, re.S)
    assert line and int(line[1]) >= 1 and int(line[2]) >= 1, out.output
    assert ("s" in prof.predictors) == (line[3] == "kept")


def test_tune_covers_gemv_and_gemv_then_uses_its_profile(tuned, device, invoke, ctx):
    out = tuned[1]
    assert "s gemv-n-square" in out.output and "s gemv-t-long" in out.output and "GB/s" in out.output, out.output
    prof = read(path_for(device.fingerprint))
    assert {e.name for e in prof.gemv["s"]} == {f"{layout}-{kind}" for layout in "nt" for kind in GEMV_SHAPES}
    for layout in "NT":
        square = next(e for e in prof.gemv_entries("s", layout) if e.name.endswith("square"))
        best = square.ranked[0]
        assert best.config.layout == layout and best.gflops > 0 and square.shape[0] == square.shape[1]
        # a product of the class's own shape takes it (a small one may lie nearer the long class: it does
        # on the H100, whose long classes are 128 x 8192 and 8192 x 128)
        side = square.shape[0]
        plan = gemv_plan(ctx, GemvProblem(DTYPES["s"], side, side, Op(layout == "T"), side))
        assert plan.params == best.config and plan.params_source.startswith("profile")
        # several right-hand sides take the class tuned with the nearest number of them
        for kind, vectors in VECTOR_CLASSES.items():
            entry = next(e for e in prof.gemv_entries("s", layout) if e.name.endswith(kind))
            assert entry.shape[2] == vectors and entry.ranked[0].config.vectors <= vectors
            problem = GemvProblem(DTYPES["s"], side, side, Op(layout == "T"), side, vectors=vectors - 1, ldx=side,
                                  ldy=side)
            plan = gemv_plan(ctx, problem)
            assert plan.params == entry.ranked[0].config and plan.params_source.endswith(kind)
    out = invoke("tune", "--quick", "--dtype", "h", "--size-class", "gemv", "--budget", "2")
    assert out.exit_code == 0, out.output      # 16-bit GEMV needs no matrix instructions
    prof = read(path_for(device.fingerprint))
    before = tuned[2]                               # a bundled profile's GEMV entries are kept
    assert set(prof.gemv) == {"s", "h"} | set(before.gemv if before else ()) and prof.entry("s", "large")
    out = invoke("profile", "show")
    assert "sgemv N square" in out.output and "hgemv T long" in out.output and "GB/s" in out.output
    out = invoke("profile", "verify", "--dtype", "h")
    assert out.exit_code == 0 and "hgemv N long" in out.output and "ok" in out.output, out.output


def test_tune_again_resumes_from_the_checkpoint(invoke):
    out = invoke("tune", "--quick", "--dtype", "s", "--budget", "6", "--top", "1")
    assert out.exit_code == 0, out.output
    # every class's search (one per family the device offers) is answered from the checkpoint alone
    rows = re.findall(r"^s (?:gemv-)?[a-z-]+ \d+ .*?(\d+) +(\d+) +(\d+) +\d+$", out.output, re.M)
    assert len(rows) == 12 and all(evals == reused != "0" and errors == "0" for evals, reused, errors in rows), \
        out.output


def test_profile_list_show_export_import_verify(invoke, device, tmp_path):
    out = invoke("profile", "list")
    assert out.exit_code == 0 and device.fingerprint in out.output
    out = invoke("profile", "show")
    assert out.exit_code == 0 and "sgemm large" in out.output and "GFLOP/s" in out.output
    assert invoke("profile", "show", "-d", device.slot).output == out.output         # as other commands take it
    out = invoke("profile", "show", device.slot, "--device", device.slot)
    assert out.exit_code != 0 and "once" in out.output
    exported = tmp_path / "mine.json"
    out = invoke("profile", "export", str(exported))
    assert out.exit_code == 0 and json.loads(exported.read_text())["device"]["fingerprint"] == device.fingerprint
    out = invoke("profile", "show", str(exported), "--json")
    assert out.exit_code == 0 and json.loads(out.output)["format"] == "autogemm-profile"
    out = invoke("profile", "import", str(exported))
    assert out.exit_code == 0 and "imported" in out.output
    out = invoke("profile", "verify", "--dtype", "s", "--runs", "2")     # (a bundled profile holds every dtype)
    assert out.exit_code == 0, out.output
    assert "drift" in out.output and "ok" in out.output


def test_profile_import_rejects_a_forged_file(invoke, tmp_path, device):
    data = json.loads(invoke("profile", "show", "--json").output)
    data["dtypes"]["s"][0]["ranked"][0]["config"]["build_options"] = ["-I/etc"]
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(data))
    out = invoke("profile", "import", str(forged))
    assert out.exit_code == 2 and "build option" in out.output


def test_run_uses_the_profile(invoke):
    out = invoke("run", "-M", "100", "-N", "90", "-K", "80", "-i", "2", "--validate")
    assert out.exit_code == 0, out.output
    assert "(profile" in out.output and "PASS" in out.output


def test_tune_rejects_bad_options(invoke):
    out = invoke("tune", "--budget", "soon")
    assert out.exit_code == 2 and "budget" in out.output
    out = invoke("tune", "--dtype", "q")
    assert out.exit_code == 2 and "dtype" in out.output
    out = invoke("tune", "--strategy", "annealing")
    assert out.exit_code == 2


def test_tuning_a_precision_mode_needs_its_instructions(invoke, device):
    if device.is_nvidia:
        pytest.skip("this device may have the instructions")
    out = invoke("tune", "--quick", "--dtype", "s.3xtf32", "--budget", "2")
    assert out.exit_code != 0 and "needs matrix instructions for tf32 operands" in out.output


def test_tuning_16_bit_dtypes_needs_their_instructions(invoke, device):
    if device.is_nvidia:
        pytest.skip("this device may have the instructions")
    out = invoke("tune", "--quick", "--dtype", "b", "--budget", "2")
    assert out.exit_code != 0 and "needs matrix instructions for bf16 operands" in out.output
    assert "sgemm kernels compute it exactly" in out.output


def test_tune_hybrid_adds_a_hybrid_entry_and_keeps_the_rest(invoke, device):
    """The co-tuned split and kernel join the tuned profile; its GEMM entries stay."""
    before = read(path_for(device.fingerprint))
    out = invoke("tune", "--hybrid", "--dtype", "s", "--hybrid-size", "128", "--parts", "2", "--kernels", "2")
    assert out.exit_code == 0, out.output
    profile = read(path_for(device.fingerprint))
    entry = profile.hybrid_entry("s", 128, 128, 128)
    assert entry.shape == (128, 128, 128) and entry.parts == 2 and 0 <= entry.host_parts <= 2
    assert 1 <= entry.evaluations <= 2 * 3 and entry.gflops > 0
    assert profile.dtypes == before.dtypes and "hybrid entries saved" in out.output
    shown = invoke("profile", "show")
    assert "shared with the host" in shown.output and "128x128x128" in shown.output
    assert "hybrid" in invoke("profile", "list").output
    bad = invoke("tune", "--hybrid", "--parts", "0")
    assert bad.exit_code != 0


def _quick_shapes(device) -> tuple[str, str]:
    """The quick small and skinny classes' problems on ``device`` as tune's log names them ('64^3',
    '64x256x256' on a CPU)."""
    classes = {c.name: c for c in size_classes(device, quick=True)}
    small, skinny = classes["small"], classes["skinny"]
    return f"{small.m}^3", f"{skinny.m}x{skinny.n}x{skinny.k}"


def test_a_class_the_device_does_not_have_is_a_clear_error(invoke, device):
    """The tiny and batch classes are a GPU's: asked of a CPU, tune says so and measures nothing."""
    if device.is_gpu:
        pytest.skip("a GPU has the tiny and batch classes")
    for name in ("tiny", "batch-16"):
        out = invoke("tune", "--quick", "--dtype", "s", "--budget", "1s", "--size-class", name)
        assert out.exit_code != 0 and f"no size class {name}" in out.output and "small" in out.output, out.output


def test_a_run_past_its_time_skips_the_classes_still_to_come_and_says_so(invoke, device):
    """On the H100 the default tune ran past 10 minutes: the last dtype's classes each took their second of
    search and their finishing on top of a spent budget."""
    out = invoke("tune", "--quick", "--dtype", "s", "--budget", "1s", "--size-class", "small",
                 "--size-class", "skinny", "--size-class", "predictor")
    assert out.exit_code == 0, out.output
    skipped = " ".join(out.output.partition("a longer --budget would also tune")[2].split())
    assert f"gemm skinny {_quick_shapes(device)[1]}, predictor (s)" in skipped, out.output
    assert "s small" in out.output.partition("a longer --budget")[0]     # the first, whatever the budget


def test_the_classes_run_in_rounds_over_the_dtypes(invoke, device, tmp_path):
    """Every dtype's first class before any dtype's second: with a budget spent after the first step,
    the rest are left in that order (d's first class before s's second), and the log names each class
    once with its dtypes."""
    out = invoke("tune", "--quick", "--dtype", "s,d", "--budget", "1s", "--size-class", "small",
                 "--size-class", "skinny", "--json", str(tmp_path / "tune.json"))
    assert out.exit_code == 0, out.output
    small, skinny = _quick_shapes(device)
    assert json.loads((tmp_path / "tune.json").read_text())["not_tuned"] == [
        f"dgemm small {small}", f"sgemm skinny {skinny}", f"dgemm skinny {skinny}"]
    skipped = " ".join(out.output.partition("a longer --budget would also tune")[2].split())
    assert f"gemm small {small} (d); gemm skinny {skinny} (s, d)" in skipped, out.output


def test_an_imported_profile_is_timed_here_and_replaces_only_what_it_beats_unasked(invoke, tmp_path, device):
    """Issue 57 D15: a forged file for this device (every class's best replaced by a slow configuration
    claiming 9,999,999 GFLOP/s) was merged over the tuned entries, with no backup and nothing checked.
    Now its configurations are timed here first (a configuration that fails is left out: see
    tests/tuning/test_imported.py), an entry replaces the profile's own only where it measured faster
    unless --replace, and the file before is kept as .json.bak."""
    import shutil

    from autogemm import SimtParams

    path = path_for(device.fingerprint)
    original = tmp_path / "original.json"
    shutil.copyfile(path, original)
    before = read(path)
    slow = SimtParams("NN", "consecutive", 1, 1, 1, 1, 1, 1, False, False)
    data = json.loads(path.read_text())
    for entry in data["dtypes"]["s"]:
        entry["ranked"] = [{"gflops": 9999999, "config": slow.to_dict()}]
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(data))
    try:
        out = invoke("profile", "import", str(forged))
        assert out.exit_code == 0 and ".json.bak" in out.output, out.output
        assert out.output.count("(the file claimed 9999999.0)") == len(data["dtypes"]["s"]), out.output
        assert read(path.with_name(path.name + ".bak")) == before
        assert "timing the profile's own entries of the same classes" in out.output
        for entry in read(path).dtypes["s"]:        # the own as it was, or the file's where it ran faster
            assert entry == before.entry("s", entry.name) or entry.ranked[0].gflops < 9999999, entry.name
        out = invoke("profile", "import", "--replace", str(forged))
        assert out.exit_code == 0, out.output
        assert all(entry.ranked[0].config == slow and entry.ranked[0].gflops < 9999999
                   for entry in read(path).dtypes["s"])
    finally:
        shutil.copyfile(original, path)
        store.forget()


def test_a_link_planted_at_a_lock_path_is_refused_in_one_line(invoke, tmp_path, device):
    """Issue 57 D8: a link planted where a lock file goes (a loop, or one leading outside the cache) ended
    ``tune`` in an OSError traceback; every lock is refused there with one line naming the fix, and
    nothing is written through it."""
    exported = tmp_path / "mine.json"
    assert invoke("profile", "export", str(exported)).exit_code == 0
    lock = path_for(device.fingerprint).with_name(path_for(device.fingerprint).name + ".lock")
    lock.unlink(missing_ok=True)
    outside = tmp_path / "outside"
    lock.symlink_to(outside)
    try:
        out = invoke("profile", "import", "--replace", str(exported))
        assert out.exit_code == 2 and "Traceback" not in out.output, out.output
        assert "a link lies where autogemm keeps a lock" in out.output.strip().splitlines()[-1], out.output
        assert not outside.exists()
    finally:
        lock.unlink()


class _Space(list):
    family = "simt"


def test_each_family_s_bar_ends_with_its_class(device):
    """A class searches its families one after another, each with a bar of its own: one whose search ran
    out of candidates short of its budget is not left open (its clock running to the end of the run) when
    the class ends, nor are its records drawn on the next family's bar."""
    listener = ProgressListener(Progress(disable=True))
    size = size_classes(device)[0]
    objectives = [SimpleNamespace(best=None, evaluations=3, reused=0, failures=0,
                                  clock=SimpleNamespace(fraction=lambda f=f: f, elapsed=1.0)) for f in (0.4, 0.1)]
    for family, objective in zip(("simt", "subgroup"), objectives):
        space = _Space(range(5))
        space.family = family
        listener.class_started(DTYPES["s"], size, space, objective)
    listener.record(objectives[0], None, True)
    tasks = listener.progress.tasks
    assert [task.completed for task in tasks] == [0.4, 0] and tasks[1].description.endswith(" subgroup")
    listener.class_finished(DTYPES["s"], size, None, objectives, [])
    assert all(task.finished for task in tasks) and not listener.searches
