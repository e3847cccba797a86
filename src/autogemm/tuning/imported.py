"""A profile brought from elsewhere, measured here before it counts: every configuration of its entries
built, checked and timed on the device it claims to be for, so that its rates are this device's, as a
profile's own must be (a forged or mistaken file cannot then claim a slow configuration the fastest)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..codelets.registry import GEMV
from ..dtypes import Dtype, get_dtype
from ..profiles import Profile, SizeClassEntry
from ..profiles.profile import SHAPES, routine_of
from .evaluation import EvaluatorSpec, IsolatedEvaluator, WorkerProcess


def entry_spec(section: str, dt: Dtype, entry: SizeClassEntry) -> EvaluatorSpec:
    """The measurement of a profile entry's configurations: its problem, whole (every element checked)."""
    if routine_of(section, entry.name) == GEMV:
        return EvaluatorSpec.gemv(dt, entry.shape, entry.ranked[0].config.layout, full=True)
    return EvaluatorSpec.gemm(dt, entry.shape, full=True, layout=entry.name if section == SHAPES else "NN",
                              batch=entry.batch)


def timed_here(profile: Profile, worker: WorkerProcess, runs: int = 3,
               say: Callable[[str], None] = lambda line: None) -> Profile:
    """``profile`` (claiming to be the device's of ``worker``) with each GEMM and GEMV entry's
    configurations measured there (in the worker's process: one that crashes costs it, not this one),
    ranked by the rates measured; its best is also checked on awkward shapes. A configuration that fails,
    and an entry none of whose do, are left out; ``say`` gets a line for each entry. The CUDA path's and
    the hybrid entries are kept as they are."""
    timed = replace(profile, dtypes={}, gemv={}, shapes={})
    for section, letter, entry in profile.every_entry():
        dt = get_dtype(letter)
        evaluator = IsolatedEvaluator(worker, entry_spec(section, dt, entry), runs=runs)
        evaluator.evaluate(entry.ranked[0].config)      # a warm-up: a worker's first runs read slow
        failed, measured = [], []
        for ranked in entry.ranked:
            record = evaluator.evaluate(ranked.config)
            if record.ok:
                measured.append(replace(ranked, gflops=record.gflops))
            else:
                failed.append(f"{ranked.config.describe()}: {record.outcome.value}")
        measured.sort(key=lambda r: -r.gflops)
        while measured and (problem := worker.verify(measured[0].config, dt)):
            failed.append(f"{measured.pop(0).config.describe()}: {problem}")
        label = f"{letter} {entry.name} {'x'.join(map(str, entry.shape))}"
        if not measured:
            say(f"{label}: left out, no configuration computes right here ({'; '.join(failed)})")
            continue
        timed = timed.with_entry(letter, replace(entry, ranked=tuple(measured)), section)
        claimed = entry.ranked[0].gflops
        say(f"{label}: {len(measured)} of {len(entry.ranked)} timed, best {measured[0].gflops:.1f} GFLOP/s "
            f"here (the file claimed {claimed:.1f})" + (f"; left out {'; '.join(failed)}" if failed else ""))
    return timed


def same_classes(profile: Profile, like: Profile) -> Profile:
    """``profile`` with only its GEMM and GEMV entries of the dtypes and classes (and exact shapes) that
    ``like`` holds."""
    kept = replace(profile, dtypes={}, gemv={}, shapes={})
    for section, letter, entry in like.every_entry():
        own = _entry_like(profile, section, letter, entry)
        if own is not None:
            kept = kept.with_entry(letter, own, section)
    return kept


def faster_over(older: Profile, newer: Profile, older_now: Profile) -> Profile:
    """``newer`` laid over ``older``: each GEMM and GEMV entry of ``newer`` where ``older`` has none of its
    dtype and class, or where its best ran faster than ``older``'s best as ``older_now`` measured it in
    the same session (an entry ``older_now`` lacks failed there); ``older`` keeps the rest, and its CUDA
    path's and hybrid entries."""
    out = older.merged_into(newer)
    for section, letter, entry in newer.every_entry():
        if _entry_like(older, section, letter, entry) is None:
            continue                     # (the merge took it)
        now = _entry_like(older_now, section, letter, entry)
        if now is None or entry.ranked[0].gflops > now.ranked[0].gflops:
            out = out.with_entry(letter, entry, section)
    return out


def _entry_like(profile: Profile, section: str, letter: str, entry: SizeClassEntry) -> SizeClassEntry | None:
    return profile.entry(letter, entry.name, section, entry.shape if section == SHAPES else None)
