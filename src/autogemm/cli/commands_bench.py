"""``autogemm bench``: autogemm and its peers on the same problems in one run, checked, as a table,
JSON, CSV and a plot."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..bench.report import (
    failures,
    geometric_means,
    holds_out,
    kind_of,
    kinds_table,
    peak_note,
    plot,
    provenance,
    read_json,
    table,
    write_csv,
    write_json,
)
from ..bench.runner import AUTOGEMM, PEERS, Bench
from ..bench.shapes import LAYOUTS, read_shapes, square_sweep, write_shapes
from ..bench.suites import SUITES
from ..dtypes import get_dtype
from ..errors import ArgumentError, AutogemmError
from ..profiles import profile_for, profile_origin
from ..runtime import Device, context_for
from ..shares.copying import copy_threads
from ..version import __version__
from .common import console, fail, json_file, select_device
from .group import main


def _peers(text: str) -> tuple[str, ...]:
    if text.strip().lower() == "none":
        return ()
    names = tuple(p.strip().lower() for p in text.split(",") if p.strip())
    unknown = set(names) - set(PEERS)
    if unknown:
        raise ArgumentError(f"--peers: unknown {', '.join(sorted(unknown))}; choose from {', '.join(PEERS)} or none")
    return names


@main.command("bench")
@click.option("-d", "--device", help="Device: P:D, index, gpu, cpu or part of its name (default: the default).")
@click.option("--dtype", "dtypes", default="s", show_default=True,
              help="Comma-separated dtypes, e.g. s,d,c,z, s.tf32,s.3xtf32 or h,b.")
@click.option("--sizes", help="Square sizes: 1024,2048 or 256:8192 (doubling) or 256:4096:256 "
                              "[default: 256:8192 on a GPU, 64:1024 on a CPU].")
@click.option("--layout", type=click.Choice(LAYOUTS, case_sensitive=False), default="NN", show_default=True,
              help="Transposes of A and B for --sizes.")
@click.option("--shapes", "shapes_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A file of problems, one 'M N K [LAYOUT] [# name]' per line.")
@click.option("--suite", "use_suite", type=click.Choice(list(SUITES)), is_flag=False, flag_value="standard",
              default=None, help="A shipped suite: 'standard' (alone: --suite), squares, odd sizes and skinny "
                                 "shapes in NN, NT and TN; 'llm', the linear layers of Llama-3-8B and "
                                 "BERT-large at 1 to 8192 tokens, forward (NT) and weight gradients (TN); or "
                                 "'programs', 200 products drawn log-uniform over [1, 65536] in every layout "
                                 "and 66 of seven other kinds of model, a quarter held out of tuning.")
@click.option("--peers", "peer_text", default=",".join(PEERS), show_default=True,
              help="Peers to run beside autogemm (those not installed are skipped), or none.")
@click.option("--runs", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="Timed runs per implementation (the median is reported).")
@click.option("--clblast-tuned", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A directory of clblast_tuner_xgemm results: CLBlast runs with its tuner's best parameters.")
@click.option("--end-to-end/--resident", "end_to_end", default=None,
              help="Also time numpy-in, numpy-out calls, copies included, and compare those with numpy "
                   "[default: on a device that shares the host's memory, where that is what a program runs].")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random operands.")
@json_file("Write every result as JSON (with the command and commit that made it), after each problem: "
           "a run stopped early keeps what it measured.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), help="Write every result as CSV.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a PNG of rate against problem, per dtype.")
@click.option("--write-shapes", "shapes_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Measure nothing: write the problems as a shapes file for 'tune --shapes', those a suite "
                   "holds out of tuning left out.")
@click.option("--from-json", "from_json", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Measure nothing: show a run that --json wrote (its table, means, --csv and --plot) again.")
def bench_command(device, dtypes, sizes, layout, shapes_file, use_suite, peer_text, runs, clblast_tuned, end_to_end,
                  seed, json_path, csv_path, plot_path, shapes_out, from_json) -> None:
    """Time autogemm (with the device's profile) and its peers on the same problems in one run.

    Every result is checked against a float64 reference; a wrong one is shown, never counted. Rates are
    TFLOP/s; '% peak' is autogemm's share of the tensor cores' dense peak for a dtype they multiply, where
    NVIDIA publishes it for the device, else of the multiply-add peak measured in the same run (the line
    under the table says which); '/ peer' is autogemm's rate over the peer's: end to end against numpy and
    the peers timed end to end where autogemm's numpy-in, numpy-out calls were timed, else
    device-resident."""
    if from_json:
        meta, cases = read_json(from_json)
        console.print(f"{from_json}: {meta.get('date')}, {meta.get('command') or 'command not recorded'}",
                      highlight=False)
        _report(cases, f"TFLOP/s on {meta.get('device')} (median of {meta.get('runs')}; autogemm "
                       f"{meta.get('autogemm')})", None, csv_path, plot_path, {})
        return
    if sum(bool(x) for x in (sizes, shapes_file, use_suite)) > 1:
        raise ArgumentError("choose one of --sizes, --shapes and --suite")
    dev = select_device(None, device)
    letters = [get_dtype(x.strip()) for x in dtypes.split(",") if x.strip()]
    if use_suite:
        shapes = SUITES[use_suite]()
    elif shapes_file:
        shapes = read_shapes(shapes_file)
    else:
        shapes = square_sweep(sizes or ("256:8192" if dev.is_gpu else "64:1024"), layout.upper())
    if shapes_out:
        tunable = [shape for shape in shapes if not shape.held_out]
        _write(lambda: write_shapes(tunable, shapes_out))
        held_out = len(shapes) - len(tunable)
        console.print(f"wrote {len(tunable)} problems" + (f" ({held_out} held out of tuning left out)" if held_out
                                                           else "") + f" to {shapes_out}", highlight=False)
        return
    for dt in letters:
        if dt.needs_fp64 and not dev.fp64:
            raise ArgumentError(f"{dt.routine} needs double precision, which {dev.name.strip()} lacks")
    if end_to_end is None:
        end_to_end = dev.shares_host_memory
    runner = Bench(context_for(dev), _peers(peer_text), runs, end_to_end, seed, clblast_tuned)
    profile = profile_for(dev)
    origin = profile_origin(dev, profile)
    console.print(f"bench on {dev.label}", highlight=False)      # (a long name on a line of its own)
    console.print(f"profile: {origin}", highlight=False)
    meta = {"device": dev.name.strip(), "driver": dev.driver_version.strip(), "fingerprint": dev.fingerprint,
            "autogemm": __version__, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "runs": runs, "profile": profile.created if profile else None, "profile_origin": origin,
            "host_copies": _host_copies(dev), **provenance()}
    if end_to_end and meta["host_copies"]:
        console.print(f"host copies into page-locked memory: {meta['host_copies']}", highlight=False)
    cases = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task("bench", total=len(letters) * len(shapes))
            for dt in letters:
                for shape in shapes:
                    progress.update(task, description=f"{dt.routine} {shape.label}")
                    cases.append(runner.run(dt, shape))
                    if json_path:      # kept as it grows: a run stopped early keeps what it measured
                        _write(lambda: write_json(cases, json_path, meta))
                    progress.advance(task)
                    if not console.is_terminal:     # a log gets a line per problem instead of the bar
                        rate = cases[-1].rate(AUTOGEMM)
                        console.print(f"[{len(cases)}/{len(letters) * len(shapes)}] {dt.routine} {shape.label}: "
                                      f"{f'{rate:.3g} TFLOP/s' if rate else 'failed'}", highlight=False)
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted[/yellow] after {len(cases)} problems; showing those")
    _report(cases, f"TFLOP/s on {dev.name.strip()} (median of {runs}; autogemm {__version__})", json_path,
            csv_path, plot_path, meta)
    if any(not m.correct and m.note == "wrong result" for c in cases for m in c.measurements):
        sys.exit(1)


def _write(writer: Callable[[], None]) -> None:
    """Run ``writer``; a file that cannot be written ends the command with its reason."""
    try:
        writer()
    except (AutogemmError, OSError) as exc:
        fail(str(exc))


def _host_copies(dev: Device) -> str | None:
    """Which threads copy numpy operands into page-locked memory on ``dev`` (None: it shares the host's
    memory, and nothing is copied)."""
    if dev.shares_host_memory:
        return None
    return copy_threads()


def _report(cases: list, title: str, json_path: Path | None, csv_path: Path | None, plot_path: Path | None,
            meta: dict) -> None:
    """The table and geometric means of ``cases``, and the files asked for."""
    def too_wide(shown: object) -> bool:
        return console.measure(shown, options=console.options.update_width(10**4)).maximum > console.width

    shown = [table(cases, title)]                 # rather than cut short: without the peers' rates, then
    if too_wide(shown[0]):                        # the ratios in a table of their own
        shown = [table(cases, title + "; peers as autogemm / peer", peer_rates=False)]
    if too_wide(shown[0]):
        shown = [table(cases, title, peer_rates=False, ratios=False), table(cases, "autogemm / peer", rates=False)]
    for part in shown:
        console.print(part)
    if any(case.peak_tflops for case in cases):
        console.print(peak_note(cases), highlight=False)
    for line in failures(cases):
        console.print(f"[red]not counted:[/red] {line}", highlight=False)
    for (dtype, peer), found in sorted(geometric_means(cases).items()):
        console.print(f"{get_dtype(dtype).routine}: autogemm / {peer}, geometric mean over {found.count} problems: "
                      f"{found.mean:.2f}; worst {found.worst:.2f} ({found.worst_problem})", highlight=False)
    if len({kind_of(case) for case in cases}) > 1 or holds_out(cases):
        console.print(kinds_table(cases))
    if json_path:
        _write(lambda: write_json(cases, json_path, meta))
    if csv_path:
        _write(lambda: write_csv(cases, csv_path))
    if plot_path:
        _write(lambda: plot(cases, plot_path, title))
    for path in (json_path, csv_path, plot_path):
        if path:
            console.print(f"wrote {path}", highlight=False)
