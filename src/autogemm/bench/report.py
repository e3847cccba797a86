"""What a benchmark run shows and writes: a terminal table, geometric-mean ratios, JSON, CSV and a plot; and
a run read back from its JSON (``read_json``), to show or plot it again."""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import math
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from ..dtypes import get_dtype
from ..errors import ArgumentError
from ..tables import plain_table
from .peaks import MEASURED_FMA
from .runner import AUTOGEMM, CaseResult, Measurement
from .shapes import Shape


def implementations(cases: Sequence[CaseResult]) -> list[str]:
    """Every implementation that ran somewhere (not those not installed), autogemm first."""
    names = [AUTOGEMM]
    for case in cases:
        names += [m.name for m in case.measurements if m.name not in names and m.note != "not available"]
    return names


def flat_rows(cases: Sequence[CaseResult]) -> list[dict]:
    """One row per (case, implementation), for JSON and CSV."""
    rows = []
    for case in cases:
        for m in case.measurements:
            rows.append({
                "dtype": case.dtype, "m": case.shape.m, "n": case.shape.n, "k": case.shape.k,
                "layout": case.shape.layout, "name": case.shape.name, "implementation": m.name, "seconds": m.seconds,
                "tflops": m.tflops, "peak_tflops": case.peak_tflops, "peak": case.peak,
                "fraction_of_peak": m.tflops / case.peak_tflops if m.tflops and case.peak_tflops else None,
                "error": m.error, "correct": m.correct, "autogemm_over_this": case.ratio(m.name),
                "autogemm_config": case.config, "note": m.note,
            })
    return rows


@dataclass(frozen=True)
class Comparison:
    """autogemm against one peer over the cases of one dtype both ran correctly: the geometric mean of
    autogemm / peer, how many cases, and the worst case's ratio and problem."""

    mean: float
    count: int
    worst: float
    worst_problem: str


def geometric_means(cases: Sequence[CaseResult]) -> dict[tuple[str, str], Comparison]:
    """(dtype, peer) -> how autogemm compares with the peer over the cases both ran correctly."""
    ratios: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for case in cases:
        for m in case.measurements:
            ratio = case.ratio(m.name)
            if ratio:
                ratios.setdefault((case.dtype, m.name), []).append((ratio, case.shape.label))
    return {key: Comparison(math.exp(sum(math.log(r) for r, _ in found) / len(found)), len(found),
                            *min(found)) for key, found in ratios.items()}


def table(cases: Sequence[CaseResult], title: str, peer_rates: bool = True, rates: bool = True,
          ratios: bool = True) -> Table:
    """TFLOP/s per implementation (a wrong or failed one marked so, ``failures`` says why), autogemm's
    share of the peak (``peak_note`` says which), and autogemm's ratio to each peer (end to end against
    end to end); without ``peer_rates``, the peers' own TFLOP/s left out (the ratios give them); without
    ``rates``, the ratios alone, without ``ratios`` the rates alone."""
    every = implementations(cases)
    peers = [n for n in every if not n.startswith(AUTOGEMM)] if ratios else []
    names = (every if peer_rates else [n for n in every if n.startswith(AUTOGEMM)]) if rates else []
    peak = ["% peak"] if rates else []
    ratio_columns = [f"/ {peer}" for peer in peers]
    dtypes = list(dict.fromkeys(case.dtype for case in cases))
    several = len(dtypes) > 1            # else the title names the dtype, and the problems have the room
    if not several and dtypes:
        title = f"{get_dtype(dtypes[0]).routine}: {title}"
    out = plain_table(title, ("dtype", "problem")[not several:] + (*names, *peak, *ratio_columns),
                      right=(*names, *peak, *ratio_columns))
    for case in cases:
        by_name = {m.name: m for m in case.measurements}
        cells = []
        for name in names:
            m = by_name.get(name)
            if m is None:
                cells.append("")
            elif m.correct:
                cells.append(f"{m.tflops:.2f}" if m.tflops >= 1 else f"{m.tflops:.3g}")
            else:
                cells.append(f"[red]{'failed' if m.note else 'wrong'}[/red]")
        ours = case.rate(AUTOGEMM)
        if rates:
            cells.append(f"{100 * ours / case.peak_tflops:.0f}%" if ours and case.peak_tflops else "")
        for peer in peers:
            ratio = case.ratio(peer)
            cells.append(f"{ratio:.2f}" if ratio else "")
        out.add_row(*(case.dtype,)[:several], case.shape.label, *cells)
    return out


def peak_note(cases: Sequence[CaseResult]) -> str:
    """Which peak the table's '% peak' is of, per dtype: 'of the tensor-core peak (NVIDIA's, dense): h
    989 TFLOP/s, d 66.9; of the FMA peak (measured): s 59.1'."""
    peaks: dict[str, dict[str, float]] = {}
    for case in cases:
        if case.peak_tflops:
            peaks.setdefault(case.peak, {})[case.dtype] = case.peak_tflops
    return "% peak: " + "; ".join(
        f"of the {kind}: " + ", ".join(f"{dtype} {tflops:.3g}" for dtype, tflops in found.items()) + " TFLOP/s"
        for kind, found in peaks.items())


def failures(cases: Sequence[CaseResult]) -> list[str]:
    """A line per implementation and reason that it failed or computed a wrong result (the table says
    which only): the implementation, why, and the problems (their count past three), so that a peer
    missing on this machine takes one line, not one per problem."""
    found: dict[tuple[str, str], list[str]] = {}
    for case in cases:
        for m in case.measurements:
            if not m.correct:
                why = m.note or f"wrong (relative error {m.error:.2g})"
                found.setdefault((m.name, why), []).append(f"{case.dtype} {case.shape.label}")
    return [f"{name}: {why} ({', '.join(problems) if len(problems) <= 3 else f'{len(problems)} problems'})"
            for (name, why), problems in found.items()]


def provenance() -> dict:
    """What made a result: the command line, the git commit of autogemm's source where it runs from a
    checkout ("-dirty" after it where the source differs from it; None elsewhere: an installed package
    knows only its version), and the digest of the source itself (``source_digest``)."""
    return {"command": shlex.join(["autogemm", *sys.argv[1:]]), **_code()}


#: The folder of autogemm's own source files.
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=1)
def _code() -> dict:
    """autogemm's commit and ``source_digest``, found once a process: a bench writes its JSON after every
    problem, and the code it runs does not change meanwhile."""
    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=Path(__file__).parent,
                                capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"commit": commit, "source": source_digest()}


def source_digest(root: Path = PACKAGE_ROOT) -> str:
    """A digest of the Python and C files under ``root`` (their paths and bytes), 12 hex digits: it names
    the code that made a result where the commit cannot (an installed package; a copy of a checkout whose
    git metadata is older than its files, as on a machine a checkout is sent to)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".c") and p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def write_json(cases: Sequence[CaseResult], path: Path, meta: dict) -> None:
    means = [{"dtype": d, "peer": p, "geomean_autogemm_over_peer": c.mean, "cases": c.count,
              "worst_autogemm_over_peer": c.worst, "worst_problem": c.worst_problem}
             for (d, p), c in sorted(geometric_means(cases).items())]
    Path(path).write_text(json.dumps({**meta, "results": flat_rows(cases), "geometric_means": means}, indent=1))


def read_json(path: Path) -> tuple[dict, list[CaseResult]]:
    """(the run's facts, its cases) from a JSON file ``write_json`` wrote; ``ArgumentError`` when the file
    is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        meta = {key: value for key, value in data.items() if key not in ("results", "geometric_means")}
        cases: dict[tuple, CaseResult] = {}
        for row in data["results"]:
            shape = Shape(int(row["m"]), int(row["n"]), int(row["k"]), str(row["layout"]), str(row.get("name", "")))
            key = (row["dtype"], shape)
            if key not in cases:
                cases[key] = CaseResult(str(row["dtype"]), shape, row["peak_tflops"], str(row["autogemm_config"]),
                                        peak=str(row.get("peak", MEASURED_FMA)))
            cases[key].measurements.append(Measurement(str(row["implementation"]), row["seconds"], row["tflops"],
                                                       row["error"], bool(row["correct"]), str(row["note"])))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ArgumentError(f"{path} is not a JSON file of autogemm bench: {exc}") from None
    return meta, list(cases.values())


def write_csv(cases: Sequence[CaseResult], path: Path) -> None:
    rows = flat_rows(cases)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["dtype"])
        writer.writeheader()
        writer.writerows(rows)


#: A plot is drawn at ``PLOT_DPI``, or fewer dots an inch where that would make it wider than ``PLOT_WIDTH``
#: pixels (a suite of many problems), and kept in 256 colours: a few tens of KB, every label still legible.
PLOT_DPI, PLOT_WIDTH = 120, 1200


def plot(cases: Sequence[CaseResult], path: Path, title: str) -> None:
    """Rate against problem size per implementation, one panel per dtype: a line over n where every
    problem is square in one layout, else points over the problems in order."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ArgumentError("--plot needs matplotlib: pip install 'autogemm[plot]'") from exc
    dtypes = list(dict.fromkeys(c.dtype for c in cases))
    names = implementations(cases)
    widest = max(sum(1 for c in cases if c.dtype == dtype) for dtype in dtypes)    # problems in one panel
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(max(10, 0.2 * widest), 3.6 * len(dtypes) + 0.02 * widest),
                             squeeze=False, layout="constrained")
    for ax, dtype in zip(axes[:, 0], dtypes):
        mine = [c for c in cases if c.dtype == dtype]
        sweep = all(c.shape.square for c in mine) and len({c.shape.layout for c in mine}) == 1
        xs = [c.shape.n for c in mine] if sweep else list(range(len(mine)))
        for name in names:
            ys = [c.rate(name) if c.rate(name) is not None else math.nan for c in mine]
            if all(math.isnan(y) for y in ys):
                continue
            ax.plot(xs, ys, marker="o", linestyle="-" if sweep else "none", label=name,
                    linewidth=2.5 if name == AUTOGEMM else 1.5)
        if mine and mine[0].peak_tflops:
            ax.axhline(mine[0].peak_tflops, color="grey", linestyle=":", linewidth=1, label=mine[0].peak)
        if sweep:
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [str(x) for x in xs], fontsize=8)
            ax.minorticks_off()
            ax.set_xlabel("n (m = n = k)")
        else:
            ax.set_xticks(xs, [c.shape.label for c in mine], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("TFLOP/s")
        ax.set_title(get_dtype(dtype).routine)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)  # beside the points
    fig.suptitle(title)
    drawn = io.BytesIO()
    fig.savefig(drawn, format="png", dpi=min(PLOT_DPI, PLOT_WIDTH / fig.get_figwidth()))
    plt.close(fig)
    from PIL import Image  # matplotlib's own dependency

    image = Image.open(drawn).convert("RGB")
    image.quantize(256, method=Image.Quantize.MAXCOVERAGE, dither=Image.Dither.NONE).save(path, optimize=True)
