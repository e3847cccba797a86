"""``autogemm tune``: search the codelet space of a device and keep the best in its profile."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click
import numpy as np
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..codelets.registry import KernelParams
from ..codelets.space import SearchSpace
from ..dtypes import Dtype, get_dtype
from ..errors import ArgumentError, AutogemmError
from ..profiles import CudaEntry, Predictor, SizeClassEntry, path_for
from ..runtime import context_for
from ..shares.split import DEFAULT_PARTS
from ..tables import plain_table
from ..tuning import (
    DEFAULT_STRATEGY,
    STRATEGIES,
    Budget,
    Objective,
    Record,
    SizeClass,
    TuneListener,
    default_budget,
    tune,
)
from ..tuning.checkpoint import Checkpoint
from ..tuning.cotune import HybridPoint, tune_hybrid
from ..tuning.fma import FmaResult
from ..tuning.no_slower import Kept
from ..tuning.predictor import Judged, kept
from ..tuning.replay import replay
from ..tuning.routes import EVERY_PRODUCT, HostOrDevice, InPlace
from ..tuning.scope import CLASS_SHARES, EXACT_MAX_WORK, GEMV, bandwidth, exact_class
from ..workload import read_workload
from .common import console, fail, json_file, select_device, write_results
from .group import main


class ProgressListener(TuneListener):
    """A progress bar per dtype, size class and family searched (budget used, best rate, evaluations,
    errors) and a line for each class as it ends. Each family's search has its bar (a class searches its
    families one after another, and a search that runs out of candidates stops short of its budget): the
    class's end fills them all, so that none stays open, its clock running, until the run ends."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.predictor_task: TaskID | None = None
        self.searches: dict[int, TaskID] = {}           # id of each family's objective: its bar
        self.rows: list[tuple] = []
        self.cuda_rows: list[tuple[Dtype, SizeClass, CudaEntry | None]] = []
        self.not_tuned: list[tuple[Dtype, SizeClass | None]] = []      # (None: the dtype's predictor)
        self.kept_before: list[Kept] | None = None     # (None: not compared)
        self.compared = False

    def fma_done(self, results: list[FmaResult]) -> None:
        chosen = ", ".join(f"{'float' if r.real == 's' else 'double'}{r.vector_width if r.vector_width > 1 else ''}:"
                           f"{r.best}" for r in results)
        self.progress.console.print(f"multiply-add forms (FMA micro-benchmark): {chosen}", highlight=False)

    def class_started(self, dtype: Dtype, size: SizeClass, space: SearchSpace, objective: Objective) -> None:
        family = "" if space.family in ("simt", "gemv") else f" {space.family}"
        self.searches[id(objective)] = self.progress.add_task(f"{_label(dtype, size)} {_shape(size)}{family}",
                                                              total=1.0, status=f"{len(space)} configurations")

    def record(self, objective: Objective, record: Record, fresh: bool) -> None:
        best = objective.best[1].gflops if objective.best else 0.0
        status = (f"best {best:.0f} GFLOP/s, {objective.evaluations} done"
                  + (f", {objective.reused} reused" if objective.reused else "")
                  + (f", {objective.failures} failed" if objective.failures else ""))
        self.progress.update(self.searches[id(objective)], completed=objective.clock.fraction(), status=status)

    def confirming(self, dtype: Dtype, size: SizeClass, count: int) -> None:
        self.progress.console.print(f"{_label(dtype, size)}: timing its {count} best again at "
                                    f"{size.confirm}^3, which decides their order",
                                    highlight=False)

    def skipped(self, dtype: Dtype, size: SizeClass | None) -> None:
        self.not_tuned.append((dtype, size))

    def kept_plans(self, kept: list[Kept] | None) -> None:
        self.kept_before, self.compared = kept, True

    def _searches_ended(self, objectives: list[Objective]) -> None:
        for objective in objectives:
            task = self.searches.pop(id(objective), None)
            if task is not None:
                self.progress.update(task, completed=1.0)

    def class_finished(self, dtype: Dtype, size: SizeClass, entry: SizeClassEntry | None,
                       objectives: list[Objective], rejected: list[tuple[KernelParams, str]]) -> None:
        self._searches_ended(objectives)
        for config, why in rejected:
            self.progress.console.print(f"[yellow]rejected by verification:[/yellow] {config.describe()}: {why}",
                                        highlight=False)
        self.rows.append((dtype, size, entry, sum(o.evaluations for o in objectives),
                          sum(o.reused for o in objectives), sum(o.failures for o in objectives),
                          sum(o.clock.elapsed for o in objectives)))

    def cuda_finished(self, dtype: Dtype, size: SizeClass, entry: CudaEntry | None, objectives: list[Objective],
                      rejected: list[tuple[KernelParams, str]]) -> None:
        self._searches_ended(objectives)
        for config, why in rejected:
            self.progress.console.print(f"[yellow]rejected by verification:[/yellow] {config.describe()}: {why}",
                                        highlight=False)
        self.cuda_rows.append((dtype, size, entry))

    def predictor_started(self, dtype: Dtype, kernels: tuple[KernelParams, ...]) -> None:
        self.predictor_task = self.progress.add_task(f"{dtype.routine} predictor", total=1.0,
                                                     status=f"{len(kernels)} kernels on sampled shapes")

    def predictor_progress(self, dtype: Dtype, samples: int, fraction: float) -> None:
        self.progress.update(self.predictor_task, completed=fraction, status=f"{samples} shapes measured")

    def predictor_finished(self, dtype: Dtype, fitted: Predictor | None, held_out: Judged | None) -> None:
        self.progress.update(self.predictor_task, completed=1.0)
        what = (f"{len(fitted.samples)} shapes, {len(fitted.bank)} kernels, {fitted.seconds:.0f} s" if fitted
                else "no shape measured")
        if held_out is not None:
            verdict = "kept" if kept(held_out) else "not kept"
            what += (f"; on shapes held out its picks ran at {held_out.picks:.0%} of the best measured, the "
                     f"size classes' at {held_out.classes:.0%}")
            if held_out.unseen is not None:
                what += (f"; on shapes the profile's predictor had not measured, {held_out.unseen[0]:.0%} "
                         f"against its {held_out.unseen[1]:.0%}")
            what += f": {verdict}"
        elif fitted:
            what += "; too few shapes to judge it: not kept"
        self.progress.console.print(f"{dtype.routine} predictor: {what}", highlight=False)


    def routes_measured(self, dtype: Dtype, timed: list[InPlace], bound: int | None) -> None:
        console = self.progress.console
        if not timed:
            console.print(f"{dtype.routine} routes: not measured (every configuration reads through images); "
                          f"products read in place as before", highlight=False)
            return
        table = plain_table(f"{dtype.routine}: packed against read in place, us a product back to back",
                            ("n", "stored", "packed", "in place", "configuration"),
                            right=("n", "packed", "in place"), fold=("configuration",))
        for t in timed:
            table.add_row(str(t.side), t.layout,
                          *("-" if s is None else f"{s * 1e6:.1f}" for s in (t.packed, t.in_place)),
                          t.config.describe())
        console.print(table)
        if bound is not None:
            side = round(bound ** (1 / 3))
            square = f"below a {side}^3 square" if side**3 == bound else f"a {side}^3 square too"
            console.print(f"{dtype.routine} read A and B where they lie no slower below {bound:,} multiply-adds "
                          f"({square}); the profile keeps the least of the dtypes measured", highlight=False)


    def host_measured(self, dtype: Dtype, timed: list[HostOrDevice], bound: int | None) -> None:
        table = plain_table(f"{dtype.routine} numpy to numpy, us a product", ("n", "device", "host BLAS"),
                            right=("n", "device", "host BLAS"))
        for t in timed:
            table.add_row(str(t.side), *("-" if s is None else f"{s * 1e6:.1f}" for s in (t.device, t.host)))
        self.progress.console.print(table)
        if bound == EVERY_PRODUCT:
            what = "every product runs on the host's BLAS (the device was slower on every square)"
        elif bound:
            side = round(bound ** (1 / 3))
            square = (f"below a {side}^3 square" if side**3 == bound
                      else f"a {side}^3 square too; larger ones stay on the device")
            what = f"products of fewer than {bound:,} multiply-adds ({square}) run on the host's BLAS"
        else:
            what = "every product runs on the device"
        self.progress.console.print(f"{dtype.routine} from numpy to numpy: {what}", highlight=False)


def tuned(rows: list[tuple]) -> list[dict]:
    """What a run tuned (``ProgressListener.rows``), a record per class: the problem, its best rate
    (and bandwidth, for GEMV) and configuration, the evaluations (and of them those read back from the
    checkpoint), failed kernels and seconds."""
    records = []
    for dtype, size, entry, evaluations, reused, failures, seconds in rows:
        best = entry.ranked[0] if entry else None
        ranked_at = "x".join(map(str, size.shape)) if size.exact else entry.shape[0] if entry else size.m
        name = size.name if size.routine != GEMV else f"{GEMV}-{size.name}"
        records.append({"problem": f"{dtype.key} {name} {ranked_at}", "dtype": dtype.key, "class": size.name,
                        "routine": size.routine, "shape": list(entry.shape if entry else size.shape),
                        "batch": size.batch,
                        "gflops": best.gflops if best else None,
                        "gbs": bandwidth(dtype, entry.shape, best.gflops) if best and _is_gemv(size) else None,
                        "config": best.config.describe() if best else None, "split": best.split if best else None,
                        "evaluations": evaluations, "reused": reused, "errors": failures, "seconds": seconds})
    return records


def cuda_tuned(rows: list[tuple[Dtype, SizeClass, CudaEntry | None]]) -> list[dict]:
    """What a run measured on the CUDA path (``ProgressListener.cuda_rows``), a record per class: its
    best CUDA rate and configuration beside the class's OpenCL rate, and the backend that was faster."""
    return [{"problem": f"{dtype.key} {size.name} {entry.shape[0] if entry else size.m}", "dtype": dtype.key,
             "class": size.name, "gflops": entry.gflops if entry else None,
             "opencl_gflops": entry.opencl_gflops if entry else None,
             "config": entry.config.describe() if entry else None, "backend": entry.backend if entry else "opencl"}
            for dtype, size, entry in rows]


def cuda_summary(records: list[dict]) -> tuple[Table, list[str]]:
    """The table of ``cuda_tuned``'s records and a line per class with its CUDA configuration."""
    table = plain_table("CUDA path against OpenCL (GFLOP/s on the class's problem; the faster runs it)",
                        ("problem", "CUDA", "OpenCL", "ratio", "runs on"), right=("CUDA", "OpenCL", "ratio"))
    for r in records:
        ratio = r["gflops"] / r["opencl_gflops"] if r["gflops"] and r["opencl_gflops"] else None
        table.add_row(r["problem"], f"{r['gflops']:.1f}" if r["gflops"] else "-",
                      f"{r['opencl_gflops']:.1f}" if r["opencl_gflops"] else "-",
                      f"{ratio:.2f}" if ratio else "", r["backend"])
    return table, [f"{r['problem']} on CUDA: {r['config'] or 'no correct kernel'}" for r in records]


def summary(records: list[dict]) -> tuple[Table, list[str]]:
    """The table of ``tuned``'s records (a row per class: its best rate, evaluations, those of them read
    from the checkpoint, failures, seconds) and a line per class with its best configuration, printed
    above the table (they are too long for a cell of a table 80 columns wide)."""
    table = plain_table("best per class (evals: configurations measured; reused: of them, read back from "
                        "an earlier run's checkpoint)",
                        ("problem", "GFLOP/s", "GB/s", "evals", "reused", "errors", "s"),
                        right=("GFLOP/s", "GB/s", "evals", "reused", "errors", "s"))
    for r in records:
        table.add_row(r["problem"], f"{r['gflops']:.1f}" if r["gflops"] else "-",
                      f"{r['gbs']:.0f}" if r["gbs"] else "", str(r["evaluations"]), str(r["reused"]),
                      str(r["errors"]), f"{r['seconds']:.0f}")
    return table, [f"{r['problem']}: {r['config'] or 'no correct kernel'}" for r in records]


def _is_gemv(size: SizeClass) -> bool:
    return size.routine == GEMV


def _not_tuned_label(dtype: Dtype, size: SizeClass | None) -> str:
    """A class not tuned, with its dtype: 'sgemm large 4096', 'sgemv N square 1024', 'sgemm predictor'."""
    return f"{dtype.routine} predictor" if size is None else f"{_label(dtype, size)} {_shape(size)}"


def _by_dtypes(not_tuned: list[tuple[Dtype, SizeClass | None]]) -> str:
    """Classes not tuned and their dtypes, those of the same dtypes together in one group: 'gemv T square,
    gemv T long (s, d, c, z); predictor (s, d)'."""
    classes: dict[str, list[str]] = {}
    for dtype, size in not_tuned:
        kind = "predictor" if size is None else _gemv_class(size) if _is_gemv(size) else \
            f"gemm {size.name} {_shape(size)}"
        classes.setdefault(kind, []).append(dtype.key)
    groups: list[tuple[list[str], list[str]]] = []
    for kind, keys in classes.items():
        if groups and groups[-1][1] == keys:
            groups[-1][0].append(kind)
        else:
            groups.append(([kind], keys))
    return "; ".join(f"{', '.join(kinds)} ({', '.join(keys)})" for kinds, keys in groups)


def _label(dtype: Dtype, size: SizeClass) -> str:
    """'sgemm large', 'sgemv N square', 'sgemm NT' and 'sgemv N' (exact shapes)."""
    if not _is_gemv(size):
        return f"{dtype.routine} {size.name}"
    return f"{dtype.letter}{_gemv_class(size)}"


def _gemv_class(size: SizeClass) -> str:
    """A GEMV class whatever its dtype: 'gemv N square', 'gemv N' (an exact shape)."""
    kind = size.name.partition("-")[2]
    return f"gemv {size.layout}{f' {kind}' if kind else ''}"


def _shape(size: SizeClass) -> str:
    """'4096^3' for a cube (it keeps a progress line within 80 columns), else 'MxNxK', a batch class's
    '2048 x 32^3', GEMV's 'MxN', and with several right-hand sides 'MxN x16'."""
    if not _is_gemv(size):
        batch = f"{size.batch} x " if size.batch > 1 else ""
        return batch + (f"{size.m}^3" if size.m == size.n == size.k else f"{size.m}x{size.n}x{size.k}")
    return f"{size.m}x{size.n}{f' x{size.k}' if size.k > 1 else ''}"


@main.command("tune")
@click.option("-d", "--device", help="Device: P:D, index, gpu, cpu or part of its name (default: the default).")
@click.option("--dtype", "dtypes", default=None,
              help="Comma-separated dtypes, e.g. s,d, s.tf32 or h,b (default: s, d, c, z where the device can).")
@click.option("--budget", default=None,
              help="Wall time (10m, 90s, 1h), evaluations (500) or both (10m,500) for the whole run "
                   "[default: 9m on a GPU, 10m on a CPU; with --quick 2m and 1m].")
@click.option("--strategy", type=click.Choice(list(STRATEGIES)), default=None,
              help=f"The search strategy [default: {DEFAULT_STRATEGY}; with --replay, every one].")
@click.option("--quick", is_flag=True, help="Smaller problems and budget: a first profile in a minute or two.")
@click.option("--fresh", is_flag=True, help="Measure again instead of resuming from earlier measurements.")
@click.option("--top", type=click.IntRange(1, 30), default=5, show_default=True,
              help="Configurations kept per dtype and size class (and the best of each other layout).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the search's random choices.")
@click.option("--size-class", "classes", multiple=True, type=click.Choice(list(CLASS_SHARES)),
              help="Tune only this size class (repeatable; default: all); gemv is GEMV's classes, "
                   "predictor times the classes' best kernels on sampled shapes, routes the product size "
                   "below which a call reads its operands in place.")
@click.option("--hybrid", is_flag=True,
              help="Instead, co-tune the kernel and the split of products shared with the host's BLAS "
                   "(gemm(..., devices=[device, 'host'])), from the profile's kernels.")
@click.option("--hybrid-size", type=click.IntRange(64, 65536), default=8192, show_default=True,
              help="n of the n^3 product --hybrid times.")
@click.option("--parts", type=click.IntRange(1, 256), default=DEFAULT_PARTS, show_default=True,
              help="P: the parts of C's rows --hybrid deals out.")
@click.option("--kernels", type=click.IntRange(1, 16), default=3, show_default=True,
              help="Candidate kernels --hybrid tries (the profile's, best first).")
@click.option("--shapes", "shapes_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Tune exactly the GEMM shapes of this workload file (recorded by a program run with "
                   "AUTOGEMM_RECORD=FILE, or lines of 'M N K [LAYOUT]' of --dtype, default s), each into an "
                   "entry used for that very shape, the shapes of most multiply-adds over the workload first.")
@click.option("--replay", "replayed", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Instead, replay the strategies on this checkpoint's measurements (no device needed): "
                   "the best found after a share of --budget evaluations (default 200).")
@click.option("--seeds", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="Seeds each strategy is replayed with (--replay).")
@click.option("--cold", is_flag=True, help="Replay without starting at the device class's default (--replay).")
@json_file("Also write what was tuned as JSON: each class's best rate and configuration.")
def tune_command(device, dtypes, budget, strategy, quick, fresh, top, seed, classes, hybrid, hybrid_size, parts,
                 kernels, shapes_file, replayed, seeds, cold, json_path) -> None:
    """Tune the GEMM and GEMV kernels of a device and save its profile.

    Every measurement is written to a checkpoint as it is taken: after Ctrl-C or a crash, the same
    command resumes without measuring anything twice. With --hybrid, co-tune instead the kernel and the
    split of products shared with the host (every candidate kernel with every host share, each a whole
    call from numpy in to numpy out) and save the best as the profile's hybrid entry. With --shapes, tune
    exactly a workload's shapes. With --replay, search a finished checkpoint again with each strategy,
    every measurement answered from it."""
    if replayed:
        _replay(replayed, budget, [strategy] if strategy else list(STRATEGIES), seeds, cold)
        return
    strategy = strategy or DEFAULT_STRATEGY
    dev = select_device(None, device)
    letters = tuple(get_dtype(x.strip()) for x in dtypes.split(",") if x.strip()) if dtypes else None
    limit = Budget.parse(budget) if budget else default_budget(dev, quick)
    shapes = None
    if shapes_file:
        shapes, skipped = read_workload(shapes_file, tuple(dt.key for dt in letters or (get_dtype("s"),)))
        for line in skipped:
            console.print(f"[yellow]skipped[/yellow] {line}", highlight=False)
        others = [r.describe() for r in shapes if exact_class(r, dev) is None]
        if others:
            console.print(f"left to the size classes (batches, over {EXACT_MAX_WORK:.1e} multiply-adds): "
                          f"{', '.join(others)}", highlight=False)
    if hybrid:
        letters = letters or tuple(get_dtype(x) for x in ("s", "d") if x == "s" or dev.fp64)
        _tune_hybrid(context_for(dev), letters, hybrid_size, parts, kernels, seed)
        return
    console.print(f"tuning {dev.label}", highlight=False)      # (a long name on a line of its own)
    console.print(f"strategy {strategy}, budget {limit.describe()}{' (quick)' if quick else ''}", highlight=False)
    columns = (TextColumn("{task.description}"), BarColumn(bar_width=10), TextColumn("{task.fields[status]}"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        listener = ProgressListener(progress)
        try:
            tune(dev, letters, limit, strategy, quick=quick, fresh=fresh, top=top, listener=listener, seed=seed,
                 classes=classes or None, shapes=shapes)
        except KeyboardInterrupt:
            progress.stop()
            console.print("[yellow]interrupted[/yellow]: every measurement so far is in the checkpoint, and "
                          "finished classes are in the profile; run the same command to resume.")
            sys.exit(130)
        except AutogemmError as exc:
            progress.stop()
            fail(str(exc))
    records = tuned(listener.rows)
    if records:             # (a run of the routes step alone tunes no class)
        table, configurations = summary(records)
        console.print("best configurations:\n" + "\n".join(f"  {line}" for line in configurations), highlight=False)
        console.print(table)
    on_cuda = cuda_tuned(listener.cuda_rows)
    if on_cuda:
        table, configurations = cuda_summary(on_cuda)
        console.print("\n".join(f"  {line}" for line in configurations), highlight=False)
        console.print(table)
    if listener.not_tuned:
        console.print(f"a longer --budget would also tune {_by_dtypes(listener.not_tuned)}; until then they "
                      f"keep what the profile chose for them (what this run measured is kept and reused)",
                      highlight=False)
    if listener.compared:
        console.print(_kept_line(listener.kept_before), highlight=False)
    console.print(f"profile: {path_for(dev.fingerprint)}", highlight=False)
    write_results(json_path, {"device": dev.name.strip(), "fingerprint": dev.fingerprint, "budget": limit.describe(),
                              "profile": str(path_for(dev.fingerprint)), "tuned": records, "cuda": on_cuda,
                              "not_tuned": [_not_tuned_label(*skipped) for skipped in listener.not_tuned],
                              "kept_before": [dataclasses.asdict(k) for k in listener.kept_before or ()]})


def _kept_line(kept: list[Kept] | None) -> str:
    """What the run's comparison of the workload's plans before and after it found (``no_slower``)."""
    if kept is None:
        return "the workload's plans before and after this run could not be compared: the process was lost"
    if not kept:
        return "no product of the workload runs slower than before this run (each plan timed as bench times it)"
    listed = ", ".join(f"{k.dtype} {k.layout} {'x'.join(map(str, k.shape))} ({k.before * 1e6:.1f} us, tuned "
                       + ("failed" if k.after is None else f"{k.after * 1e6:.1f}") + ")" for k in kept)
    return (f"{len(kept)} products of the workload keep the plan they had before this run, which ran faster "
            f"than the tuned one (as bench times them): {listed}")


def _replay(path: Path, budget: str | None, strategies: list[str], seeds: int, cold: bool) -> None:
    """``tune --replay``: each strategy's best after 1/8, 1/4, 1/2 and all of the budget, in % of the
    checkpoint's best."""
    limit = Budget.parse(budget) if budget else Budget(evaluations=200)
    if limit.evaluations is None:
        raise ArgumentError("--replay counts evaluations: give --budget as a number of them, e.g. 200")
    checkpoint = Checkpoint.read(path)
    with console.status("replaying"):
        found = replay(checkpoint, strategies, limit.evaluations, seeds, cold)
    marks = sorted({max(1, limit.evaluations * i // 8) for i in (1, 2, 4, 8)})
    console.print(f"{found.description}: {found.held} of {found.points} configurations measured, best "
                  f"{found.best_gflops:.1f} GFLOP/s; {'cold start' if cold else 'from the class default'}; "
                  f"median (worst) of {seeds} seeds, % of the best", highlight=False)
    columns = [f"{mark} evals" for mark in marks]
    table = plain_table(None, ["strategy", *columns], right=columns)
    for name in strategies:
        table.add_row(name, *(f"{median:.1f} ({worst:.1f})" for median, worst in
                              (found.quality(name, mark) for mark in marks)))
    console.print(table)


def _tune_hybrid(ctx, letters: tuple[Dtype, ...], n: int, parts: int, kernels: int, seed: int) -> None:
    """``tune --hybrid``: co-tune each dtype, a status line per point timed, then the table of the entries."""
    console.print(f"co-tuning {ctx.device.label} and the host: {n}^3, P = {parts}, {kernels} candidate kernels",
                  highlight=False)
    table = plain_table("hybrid entries saved (GFLOP/s: numpy in, numpy out)",
                        ("dtype", "n", "host share", "GFLOP/s", "kernel", "points", "s"),
                        right=("n", "host share", "GFLOP/s", "points", "s"), fold=("kernel",))
    rng = np.random.default_rng(seed)
    with console.status("co-tuning") as status:
        for dt in letters:
            def progress(point: HybridPoint, dt: Dtype = dt) -> None:
                took = f"{point.seconds * 1e3:.1f} ms" if point.seconds else point.note
                status.update(f"{dt.routine} {n}^3: host {point.split.shares[1]}/{parts}, "
                              f"{point.config.describe()}: {took}")
            entry = tune_hybrid(ctx, dt, n, parts, kernels, rng=rng, progress=progress)
            table.add_row(dt.key, str(n), f"{entry.host_parts}/{entry.parts}", f"{entry.gflops:.1f}",
                          entry.config.describe(), str(entry.evaluations), f"{entry.seconds:.0f}")
    console.print(table)
    console.print(f"profile: {path_for(ctx.device.fingerprint)}", highlight=False)
