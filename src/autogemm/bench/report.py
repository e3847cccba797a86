"""What a benchmark run shows and writes: a terminal table, geometric-mean ratios, JSON, CSV and a plot; and
a run read back from its JSON (``read_json``), to show or plot it again."""

from __future__ import annotations

import csv
import functools
import gzip
import hashlib
import io
import json
import math
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.table import Table

from ..dtypes import get_dtype
from ..errors import ArgumentError
from ..tables import plain_table
from .peaks import MEASURED_FMA
from .programs import KINDS, shape_kind
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
                "layout": case.shape.layout, "name": case.shape.name, "kind": shape_kind(case.shape),
                "held_out": case.shape.held_out, "implementation": m.name, "seconds": m.seconds,
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


def geometric_means(cases: Sequence[CaseResult], group: Callable[[CaseResult], str] | None = None
                    ) -> dict[tuple[str, ...], Comparison]:
    """(dtype, peer) -> how autogemm compares with the peer over the cases both ran correctly; with
    ``group`` (a case's group: ``kind_of``, ``part_of``), (dtype, peer, group) -> the same over each
    group's cases."""
    ratios: dict[tuple[str, ...], list[tuple[float, str]]] = {}
    for case in cases:
        for m in case.measurements:
            ratio = case.ratio(m.name)
            if ratio:
                key = (case.dtype, m.name) + ((group(case),) if group else ())
                ratios.setdefault(key, []).append((ratio, case.shape.label))
    return {key: Comparison(math.exp(sum(math.log(r) for r, _ in found) / len(found)), len(found),
                            *min(found)) for key, found in ratios.items()}


def kind_of(case: CaseResult) -> str:
    """A case's shape kind (``programs.shape_kind``)."""
    return shape_kind(case.shape)


#: The two parts of a suite that holds products out of tuning.
TUNED_FOR, HELD_OUT = "tuned for", "held out"


def part_of(case: CaseResult) -> str:
    """Whether a case's product is one its suite lets ``tune`` see, or one held out of it."""
    return HELD_OUT if case.shape.held_out else TUNED_FOR


def holds_out(cases: Sequence[CaseResult]) -> bool:
    """True where some of the cases' products are held out of tuning (the ``programs`` suite)."""
    return any(case.shape.held_out for case in cases)


def kinds_table(cases: Sequence[CaseResult]) -> Table:
    """autogemm against each peer by shape kind (and, where the suite holds products out of tuning, over
    each part): the problems, the geometric mean and the worst ratio."""
    groups: dict[str, Callable[[CaseResult], str]] = {"kind": kind_of}
    if holds_out(cases):
        groups["part"] = part_of
    peers = [n for n in implementations(cases) if not n.startswith(AUTOGEMM)]
    dtypes = list(dict.fromkeys(case.dtype for case in cases))
    out = plain_table("autogemm / peer by kind: geometric mean (worst)", ("dtype", "kind", "problems", *peers),
                      right=("problems", *peers))
    order = {name: i for i, name in enumerate((*KINDS, TUNED_FOR, HELD_OUT))}
    for group in groups.values():
        means = geometric_means(cases, group)
        for dtype in dtypes:
            names = sorted({g for d, _, g in means if d == dtype}, key=order.__getitem__)
            for name in names:
                found = {peer: means.get((dtype, peer, name)) for peer in peers}
                count = max((c.count for c in found.values() if c), default=0)
                out.add_row(dtype, name, str(count), *(f"{c.mean:.2f} ({c.worst:.2f})" if c else "" for c in
                                                       found.values()))
        out.add_section()
    return out


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
    """Every result, the geometric means (overall, by shape kind, by part where the suite holds some out)
    and ``meta``, as JSON; gzip-compressed where ``path`` ends in ``.gz`` (a suite of hundreds of
    problems is a tenth the size)."""
    def means(group: Callable[[CaseResult], str] | None = None) -> list[dict]:
        return [{"dtype": key[0], "peer": key[1], **({"group": key[2]} if group else {}),
                 "geomean_autogemm_over_peer": c.mean, "cases": c.count, "worst_autogemm_over_peer": c.worst,
                 "worst_problem": c.worst_problem} for key, c in sorted(geometric_means(cases, group).items())]

    groups = {"by_kind": means(kind_of), **({"by_part": means(part_of)} if holds_out(cases) else {})}
    text = json.dumps({**meta, "results": flat_rows(cases), "geometric_means": means(), **groups}, indent=1)
    if str(path).endswith(".gz"):
        Path(path).write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    else:
        Path(path).write_text(text, encoding="utf-8")


def read_json(path: Path) -> tuple[dict, list[CaseResult]]:
    """(the run's facts, its cases) from a JSON file ``write_json`` wrote (gzip-compressed where its name
    ends in ``.gz``); ``ArgumentError`` when the file is not one."""
    try:
        raw = Path(path).read_bytes()
        data = json.loads(gzip.decompress(raw) if str(path).endswith(".gz") else raw)
        meta = {key: value for key, value in data.items()
                if key not in ("results", "geometric_means", "by_kind", "by_part")}
        cases: dict[tuple, CaseResult] = {}
        for row in data["results"]:
            shape = Shape(int(row["m"]), int(row["n"]), int(row["k"]), str(row["layout"]), str(row.get("name", "")),
                          bool(row.get("held_out", False)))
            key = (row["dtype"], shape)
            if key not in cases:
                cases[key] = CaseResult(str(row["dtype"]), shape, row["peak_tflops"], str(row["autogemm_config"]),
                                        peak=str(row.get("peak", MEASURED_FMA)))
            cases[key].measurements.append(Measurement(str(row["implementation"]), row["seconds"], row["tflops"],
                                                       row["error"], bool(row["correct"]), str(row["note"])))
    except (OSError, EOFError, ValueError, KeyError, TypeError) as exc:
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


#: Past this many problems in a panel, a plot shows autogemm's ratio to each peer by shape kind instead of
#: every problem's rate (their labels would not be read).
MANY_PROBLEMS = 100


def plot(cases: Sequence[CaseResult], path: Path, title: str) -> None:
    """Rate against problem size per implementation, one panel per dtype: a line over n where every
    problem is square in one layout, else points over the problems in order; a panel of more than
    ``MANY_PROBLEMS`` with peers shows instead autogemm / peer of each problem by shape kind."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ArgumentError("--plot needs matplotlib: pip install 'autogemm[plot]'") from exc
    dtypes = list(dict.fromkeys(c.dtype for c in cases))
    names = implementations(cases)
    widest = max(sum(1 for c in cases if c.dtype == dtype) for dtype in dtypes)    # problems in one panel
    peers = [n for n in names if not n.startswith(AUTOGEMM)]
    by_kind = widest > MANY_PROBLEMS and bool(peers)
    widest = len(KINDS) * 3 if by_kind else widest
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(max(10, 0.2 * widest), 3.6 * len(dtypes) + 0.02 * widest),
                             squeeze=False, layout="constrained")
    for ax, dtype in zip(axes[:, 0], dtypes):
        mine = [c for c in cases if c.dtype == dtype]
        if by_kind:
            _ratios_by_kind(ax, mine, peers)
            ax.set_title(get_dtype(dtype).routine)
            continue
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
    save_figure(fig, path)


def save_figure(fig, path: Path) -> None:
    """Write a matplotlib figure as a PNG of at most ``PLOT_WIDTH`` pixels across in 256 colours (a plot's
    few colours lose nothing, and the file is a fraction of the size), and close it."""
    import matplotlib.pyplot as plt

    drawn = io.BytesIO()
    fig.savefig(drawn, format="png", dpi=min(PLOT_DPI, PLOT_WIDTH / fig.get_figwidth()))
    plt.close(fig)
    from PIL import Image  # matplotlib's own dependency

    image = Image.open(drawn).convert("RGB")
    image.quantize(256, method=Image.Quantize.MAXCOVERAGE, dither=Image.Dither.NONE).save(path, optimize=True)


def _ratios_by_kind(ax, cases: Sequence[CaseResult], peers: Sequence[str]) -> None:
    """autogemm / peer of every problem, in a column per shape kind and peer (held-out products hollow),
    on a log scale with parity marked."""
    kinds = [kind for kind in KINDS if any(kind_of(c) == kind for c in cases)]
    width = 0.8 / len(peers)
    spread = np.random.default_rng(0)             # jitter within a column, the same on every drawing
    for j, peer in enumerate(peers):
        colour = f"C{j + 1}"
        for part, filled in ((TUNED_FOR, True), (HELD_OUT, False)):
            xs, ys = [], []
            for i, kind in enumerate(kinds):
                found = [c.ratio(peer) for c in cases if kind_of(c) == kind and part_of(c) == part]
                found = [r for r in found if r]
                xs += list(i + (j - (len(peers) - 1) / 2) * width + spread.uniform(-0.3, 0.3, len(found)) * width)
                ys += found
            label = f"/ {peer}" + (f" ({part})" if holds_out(cases) else "")
            if ys:
                ax.scatter(xs, ys, s=14, label=label, edgecolors=colour,
                           facecolors=colour if filled else "none", linewidths=0.8)
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(lambda y, _: f"{y:g}")
    ax.minorticks_off()
    counts = {kind: sum(1 for c in cases if kind_of(c) == kind) for kind in kinds}
    ax.set_xticks(range(len(kinds)), [f"{kind}\n({counts[kind]})" for kind in kinds], fontsize=8)
    ax.set_ylabel("autogemm / peer")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
