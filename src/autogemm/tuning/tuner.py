"""``tune``: search the codelet space of a device per dtype and size class, and keep the best in its profile.

For each dtype and size class: the pruned space of each registered GEMM kernel family the device can run
(``codelets.<family>.space``: simt everywhere, subgroup where it offers a shuffle, nvidia_mma where it has
tensor-core instructions for the dtype) with the multiply-add form the FMA micro-benchmark chose, an evaluator on fresh random data of the
class's shape, the checkpoint of that (device, dtype, shape), and a strategy per family under its share of
the budget. The candidates build and run in a worker process (``isolated``), so that one that crashes it
or never finishes is recorded as such and the search goes on. The best correct configurations are
verified on awkward shapes (and, for a GPU's large class, ranked again on a problem twice its size) and
written to the device profile as each class finishes, so an interrupted run keeps every finished class
(and, in the checkpoint, every measurement). Then, unless the size classes named leave it out, GEMV's
two layouts for each dtype in its own precision (``gemv_tuner``). The budget covers the whole run:
the FMA benchmark and the verifications are paid from it. On a GPU, kernels compile in worker processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone

import numpy as np

from .. import __version__
from ..blas import default_params
from ..codelets.nvidia_mma.probe import instructions_available
from ..codelets.registry import GEMM, KernelParams, SpaceFacts, families, family_named
from ..codelets.simt import SimtParams
from ..codelets.space import Point, SearchSpace
from ..dtypes import NATIVE, Dtype
from ..errors import TuningError
from ..profiles import Profile, Ranked, SizeClassEntry, profile_for, save
from ..runtime.device import Device
from . import fma
from .budget import Budget
from .checkpoint import Checkpoint
from .gemv_tuner import GEMV_SHAPES, gemv_shape, tune_gemv_class
from .isolated import IsolatedEvaluator, WorkerProcess, evaluator_spec
from .objective import Objective
from .records import Record
from .strategies import DEFAULT_STRATEGY, get_strategy


@dataclass(frozen=True)
class SizeClass:
    """A problem shape tuned for, the share of a dtype's budget it gets, and the size of the square
    problem its finalists are ranked on where that is another (``confirm``)."""

    name: str
    m: int
    n: int
    k: int
    share: float
    confirm: int | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k


#: The size classes tuned for, largest first, and the share of a dtype's budget each gets; "gemv" is
#: GEMV's two layouts and two shapes (a quarter each), tuned for the dtypes in their own precision.
CLASS_SHARES = {"large": 0.6, "medium": 0.2, "small": 0.2, "gemv": 0.2}
GEMV = "gemv"


def size_classes(device: Device, quick: bool = False) -> tuple[SizeClass, ...]:
    """A large square problem (where the rate is decided by the inner loop), a small one (where filling
    the device with work-groups matters more, so smaller blocks win) and one between them (a mid-sized
    problem is nearer to it, in log scale, than to either end)."""
    if device.is_gpu:
        sizes = (2048, 768, 256) if quick else (4096, 1536, 512)
    else:
        sizes = (256, 128, 64) if quick else (768, 320, 128)
    classes = [SizeClass(name, n, n, n, share) for (name, share), n in zip(CLASS_SHARES.items(), sizes)
               if name != GEMV]
    if device.is_gpu and not quick:
        classes[0] = replace(classes[0], confirm=CONFIRM_SCALE * classes[0].m)
    return tuple(classes)


#: A GPU's large class ranks its finalists on a problem this many times larger in each dimension: the
#: largest problems keep less of their operands in the caches, and the tile that wins at 4096 on the
#: H100 can lose at 8192 (DGEMM: 48.0 against 46.0 TFLOP/s at 4096, 41.1 against 44.6 at 8192).
CONFIRM_SCALE = 2
#: How many more verified finalists than it keeps a class with ``confirm`` times again.
CONFIRM_POOL = 2


def default_budget(device: Device, quick: bool = False) -> Budget:
    """The whole run's budget: minutes on a GPU, less for a quick look."""
    if device.is_gpu:
        return Budget(seconds=120.0 if quick else 420.0)
    return Budget(seconds=60.0 if quick else 600.0)


def supported_dtypes(device: Device) -> tuple[Dtype, ...]:
    """The dtypes a tuning run covers unless told: s, d, c, z where the device can (16-bit ones, tuned
    only for their matrix instructions, are named explicitly)."""
    return tuple(dt for dt in NATIVE if not dt.tensor_only and (device.fp64 or not dt.needs_fp64))


class TuneListener:
    """What a tuning run reports as it goes (the CLI draws a progress bar from it); all optional."""

    def fma_done(self, results: list[fma.FmaResult]) -> None: ...

    def class_started(self, dtype: Dtype, size: SizeClass, space: SearchSpace, objective: Objective) -> None: ...

    def record(self, objective: Objective, record: Record, fresh: bool) -> None: ...

    def confirming(self, dtype: Dtype, size: SizeClass, count: int) -> None: ...

    def class_finished(self, dtype: Dtype, size: SizeClass, entry: SizeClassEntry | None,
                       objectives: list[Objective], rejected: list[tuple[KernelParams, str]]) -> None: ...


def known_points(space: SearchSpace, configs: list[KernelParams]) -> list[Point]:
    """The points of ``space`` whose configurations are among ``configs`` up to the multiply-add form
    (which the space sets from this run's FMA benchmark), in the order of ``configs``."""
    def key(config: KernelParams) -> KernelParams:
        return replace(config, mac="fma") if hasattr(config, "mac") else config

    order = {key(c): i for i, c in reversed(list(enumerate(configs))) if c.family == space.family}
    if not order:
        return []
    keyed = ((order.get(key(space.config(p))), p) for p in space.points())
    return [p for _, p in sorted((i, p) for i, p in keyed if i is not None)]


def start_point(space: SearchSpace, params: KernelParams) -> Point | None:
    """The point of the simt ``space`` whose configuration is ``params`` up to the multiply-add form and
    build options (which the space sets itself), to start local searches from; None when it is not in
    it (or is of another family)."""
    def key(config: SimtParams) -> SimtParams:
        return replace(config, mac="fma", build_options=())

    if params.family != space.family:
        return None
    wanted = key(params)
    return next((p for p in space.points() if key(space.config(p)) == wanted), None)


def finalists(check: Callable[[KernelParams], str | None], objectives: list[Objective], top: int
              ) -> tuple[list[Ranked], list[tuple[KernelParams, str]]]:
    """Over the measurements of ``objectives`` (one per family searched): the ``top`` best correct
    configurations that also pass ``check`` (the verification: what goes wrong, or None; see
    ``best_of_each_layout``); and those rejected by it."""
    ok = [Ranked(r.config, r.gflops) for o in objectives for r in o.records.values() if o.complete(r)]
    rejected: list[tuple[KernelParams, str]] = []

    def verified(ranked: Ranked) -> bool:
        problem = check(ranked.config)
        if problem:
            rejected.append((ranked.config, problem))
        return not problem

    return best_of_each_layout(ok, top, verified), rejected


def best_of_each_layout(candidates: list[Ranked], top: int, accept: Callable[[Ranked], bool] = lambda r: True
                        ) -> list[Ranked]:
    """The ``top`` fastest of ``candidates`` that ``accept`` takes, then the fastest accepted one of each
    codelet layout not among them (so that a problem stored in that layout can be computed without a
    transposing pack, see ``blas.selection``), best first. ``accept`` is asked only as far as needed."""
    ordered = sorted(candidates, key=lambda r: r.gflops, reverse=True)
    kept: list[Ranked] = []
    layouts: set[str] = set()
    all_layouts = {r.config.layout for r in ordered}
    for ranked in ordered:
        if len(kept) >= top and ranked.config.layout in layouts:
            continue
        if accept(ranked):
            kept.append(ranked)
            layouts.add(ranked.config.layout)
        if len(kept) >= top and layouts >= all_layouts:
            break
    return kept


def confirmed(worker: WorkerProcess, dtype: Dtype, size: int, ranked: list[Ranked], top: int) -> list[Ranked] | None:
    """``ranked`` timed again, in full, on the square problem of ``size`` in ``worker`` and kept as
    ``best_of_each_layout`` keeps them; None where that problem would take more than a quarter of the
    device's memory (operands, C and the float64 reference) or none of them computes it right."""
    device = worker.device
    reference_itemsize = np.dtype(dtype.reference_numpy).itemsize
    needed = size * size * (2 * dtype.itemsize + dtype.output.itemsize + reference_itemsize)
    if 4 * needed > device.global_mem_bytes or size * size * reference_itemsize > device.max_mem_alloc_bytes:
        return None
    evaluator = IsolatedEvaluator(worker, evaluator_spec(dtype, (size,) * 3, full=True))
    records = [evaluator.evaluate(r.config) for r in ranked]
    timed = [Ranked(record.config, record.gflops) for record in records if record.ok]
    return best_of_each_layout(timed, top) or None


def tune(device: Device, dtypes: tuple[Dtype, ...] | None = None, budget: Budget | None = None,
         strategy: str = DEFAULT_STRATEGY, quick: bool = False, fresh: bool = False, top: int = 5,
         listener: TuneListener | None = None, seed: int = 0, write: bool = True,
         classes: tuple[str, ...] | None = None) -> Profile:
    """Tune ``device`` and return its profile (also saved to the user's cache when ``write``);
    ``classes`` limits the run to some size classes (by name). Unless ``fresh``, each class first measures
    the configurations the device's existing profile ranks for it, so that a re-tune (a larger space, a
    new driver) starts from what was best before and cannot end below it."""
    prior = None if fresh else profile_for(device)
    listener = listener or TuneListener()
    dtypes = dtypes or supported_dtypes(device)
    for dt in dtypes:
        if dt.needs_fp64 and not device.fp64:
            raise TuningError(f"{dt.routine} needs double precision, which {device.name.strip()} lacks")
    budget = budget or default_budget(device, quick)
    get_strategy(strategy)   # an unknown name fails before any work
    sizes = size_classes(device, quick)
    with_gemv = not classes or GEMV in classes
    if classes:
        unknown = set(classes) - set(CLASS_SHARES)
        if unknown:
            raise TuningError(f"unknown size class {', '.join(sorted(unknown))}; "
                              f"choose from {', '.join(CLASS_SHARES)}")
        sizes = tuple(c for c in sizes if c.name in classes)
    started = time.monotonic()
    with WorkerProcess(device) as worker:       # every kernel of the run is built and run there
        widths = (1, 2, 4) if device.is_gpu else (1, 2, 4, 8)
        instructions = (instructions_available(device, lambda dt, shape: IsolatedEvaluator(
            worker, evaluator_spec(dt, shape), runs=1)) if any(dt.mma_operand for dt in dtypes) else {})
        for dt in dtypes if sizes else ():
            if dt.tensor_only and dt.mma_operand not in instructions:
                exact = dt.native if dt.precision else dt.compute
                raise TuningError(f"{dt.routine} needs matrix instructions for {dt.mma_operand} operands, which "
                                  f"{device.name.strip()} lacks (its {exact.routine} kernels compute it exactly)")
        reals = tuple(sorted({"d" if dt.needs_fp64 else "s" for dt in dtypes}))
        results = fma.measured(device, worker.fma, reals, widths, fresh)
        listener.fma_done(results)
        macs = fma.mac_table(results)
        profile = new_profile(device, budget.describe(), macs)
        gemv_dtypes = [dt for dt in dtypes if with_gemv and dt is dt.native]
        gemv_share = CLASS_SHARES[GEMV] / (2 * len(GEMV_SHAPES))
        weights = [share for dt in dtypes for share in [size.share for size in sizes]
                   + ([gemv_share] * 2 * len(GEMV_SHAPES) if dt in gemv_dtypes else [])]
        total_weight = sum(weights)

        def next_budget() -> Budget:
            share = class_budget(budget, time.monotonic() - started, weights[0], sum(weights), total_weight)
            weights.pop(0)
            return share

        for dt in dtypes:
            real = "d" if dt.needs_fp64 else "s"
            facts = SpaceFacts(device, dt, {w: macs.get(f"{real}{w}", "fma") for w in widths}, instructions)
            spaces = _spaces(facts) if sizes else []
            for size in sizes:
                share = next_budget()
                before = prior.entry(dt.key, size.name) if prior else None
                known = [r.config for r in before.ranked] if before else []
                entry = _tune_class(worker, dt, size, spaces, share, strategy, fresh, top, listener, seed, known)
                if entry is not None:
                    profile = profile.with_entry(dt.key, entry)
                    if write:
                        save(profile)
                    best = entry.ranked[0].config      # where the searches with a start begin the next class
                    spaces = [(space, start if start is None else start_point(space, best) or start)
                              for space, start in spaces]
            for layout, kind in [(x, k) for x in "NT" for k in GEMV_SHAPES] if dt in gemv_dtypes else ():
                entry = _tune_gemv(worker, dt, layout, kind, quick, next_budget(), strategy, fresh, top, listener,
                                   seed, prior)
                if entry is not None:
                    profile = profile.with_entry(dt.key, entry, GEMV)
                    if write:
                        save(profile)
    return profile


def new_profile(device: Device, budget: str, macs: dict[str, str] | None = None) -> Profile:
    """An empty profile of ``device``, made now by this autogemm (entries are added as they are tuned)."""
    return Profile(device.fingerprint, device.name.strip(), device.vendor.strip(), device.driver_version.strip(),
                   __version__, datetime.now(timezone.utc).isoformat(timespec="seconds"), budget, macs or {})


def _spaces(facts: SpaceFacts) -> list[tuple[SearchSpace, Point | None]]:
    """The spaces a class of ``facts.dtype`` searches, in the families' order, each with the point to
    start from where it holds the device class's default (simt's). A family that does not apply returns
    no space: for a reduced precision mode or a 16-bit dtype only the matrix instructions' remain (the
    others are those of the native dtype or of float32, exact, and tuned there)."""
    spaces = [space for family in families(GEMM) if (space := family.space(facts)) is not None and len(space)]
    if not spaces:
        raise TuningError(f"no configuration of the {facts.dtype.key} space fits {facts.device.name.strip()}")
    default = default_params(facts.device, facts.dtype)
    return [(space, start_point(space, default)) for space in spaces]


def class_budget(budget: Budget, elapsed: float, weight: float, remaining_weight: float,
                 total_weight: float) -> Budget:
    """The budget of the next size class: its weight's part of the evaluations, and of the time left
    after ``elapsed`` seconds of the run (so the FMA benchmark and the verification of earlier classes
    are paid from the whole run's time). At least a second, so that every class measures something."""
    seconds = None
    if budget.seconds is not None:
        seconds = max(1.0, (budget.seconds - elapsed) * weight / remaining_weight)
    return Budget(budget.share(weight / total_weight).evaluations, seconds)


def _tune_class(worker: WorkerProcess, dt: Dtype, size: SizeClass,
                spaces: list[tuple[SearchSpace, Point | None]], budget: Budget, strategy: str, fresh: bool, top: int,
                listener: TuneListener, seed: int, known: list[KernelParams] = ()) -> SizeClassEntry | None:
    """Search each family's space (simt first, with its start point) under its share of ``budget``,
    all into one checkpoint, and keep the finalists of all of them. The candidates run in ``worker``'s
    process. The ``known`` configurations of each family are measured first, and the best of them is the
    search's start when it beats the given one."""
    checkpoint = Checkpoint.for_problem(worker.device, dt, size.shape)
    if fresh:
        checkpoint.clear()
    evaluator = IsolatedEvaluator(worker, evaluator_spec(dt, size.shape))
    weights = [family_named(space.family).weight for space, _ in spaces]
    shares = [weight / sum(weights) for weight in weights]
    objectives = []
    started = time.monotonic()
    try:
        for (space, start), share in zip(spaces, shares):
            objective = Objective(space, evaluator, checkpoint, budget.share(share), overlap=worker.device.is_gpu,
                                  on_record=listener.record)
            objectives.append(objective)
            listener.class_started(dt, size, space, objective)
            get_strategy(strategy, seed).run(space, objective, start, known_points(space, list(known)))
    finally:
        evaluator.release()
    ranked, rejected = finalists(lambda config: worker.verify(config, dt), objectives,
                                 top * CONFIRM_POOL if size.confirm else top)
    shape = size.shape
    if ranked and size.confirm:
        listener.confirming(dt, size, len(ranked))
        again = confirmed(worker, dt, size.confirm, ranked, top)
        if again:
            shape, ranked = (size.confirm,) * 3, again
        else:
            ranked = best_of_each_layout(ranked, top)
    entry = None
    if ranked:
        entry = SizeClassEntry(size.name, shape, tuple(ranked), strategy,
                               sum(o.evaluations for o in objectives), time.monotonic() - started)
    listener.class_finished(dt, size, entry, objectives, rejected)
    return entry


def _tune_gemv(worker: WorkerProcess, dt: Dtype, layout: str, kind: str, quick: bool,
               budget: Budget, strategy: str, fresh: bool, top: int, listener: TuneListener, seed: int,
               prior: Profile | None) -> SizeClassEntry | None:
    """GEMV's search of ``layout`` and shape ``kind`` for ``dt``, reported to ``listener`` as a class
    named gemv-n-square and so on, starting from the configurations the device's profile ranked before."""
    rows, cols = gemv_shape(worker.device, dt, layout, kind, quick)
    name = f"{layout.lower()}-{kind}"
    size = SizeClass(f"{GEMV}-{name}", rows, cols, 1, CLASS_SHARES[GEMV] / (2 * len(GEMV_SHAPES)))
    before = next((e for e in prior.gemv_entries(dt.key, layout) if e.name == name), None) if prior else None
    known = [r.config for r in before.ranked] if before else []

    def started(space: SearchSpace, objective: Objective) -> None:
        listener.class_started(dt, size, space, objective)

    entry, objective, rejected = tune_gemv_class(worker, dt, layout, kind, (rows, cols), budget, strategy, fresh, top,
                                                 seed, known, on_record=listener.record, on_start=started)
    listener.class_finished(dt, size, entry, [objective], rejected)
    return entry
