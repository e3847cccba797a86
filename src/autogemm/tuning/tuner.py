"""``tune``: search the kernel families of a device per dtype and size class, and keep the best in its profile.

For each dtype and size class (``scope``; in rounds over the dtypes, each one's first class, then each
one's next, the predictors last): the pruned space of each registered family of the
class's routine that the device can run (``codelets.<family>.space``: for GEMM simt everywhere, subgroup
where it offers a shuffle, nvidia_mma where it has tensor-core instructions for the dtype; for GEMV the
gemv codelets of the class's layout) with the multiply-add form the FMA micro-benchmark chose, an
evaluator on fresh random data of the class's shape, the checkpoint of that problem, and a strategy per
family under its share of the budget. The candidates build and run in a worker process
(``evaluation.isolated``), so that one that crashes it or never finishes is recorded as such and the
search goes on. The best correct configurations are verified on awkward shapes (and, for a GPU's large
class, ranked again on a problem twice its size: ``finalists``) and written to the device profile as each
class finishes, so an interrupted run keeps every finished class (and, in the checkpoint, every
measurement). The budget covers the whole run: the FMA benchmark and the verifications are paid from it.
On a GPU, kernels compile in worker processes."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone

from ..blas import GemmProblem, Op, default_params
from ..blas.cuda_gemm import cuda_unreachable
from ..blas.gemv import DEFAULTS as GEMV_DEFAULTS
from ..blas.selection import candidates
from ..codelets.nvidia_mma.probe import instructions_available
from ..codelets.registry import GEMM, KernelParams, Params, SpaceFacts, families
from ..codelets.space import Point, SearchSpace
from ..dtypes import Dtype, get_dtype
from ..errors import TuningError
from ..profiles import (
    CudaEntry,
    Predictor,
    Profile,
    Ranked,
    SizeClassEntry,
    own_profile,
    path_for,
    profile_at,
    profile_for,
    save,
)
from ..profiles.thresholds import HOST_DTYPES
from ..runtime.backend import CUDA
from ..runtime.opencl.device import Device
from ..version import __version__
from ..workload import ShapeRecord
from . import fma, predictor, routes
from .budget import Budget, Schedule
from .checkpoint import Checkpoint
from .cuda_classes import CUDA_SHARE, tune_cuda_class
from .enumeration import Enumerator
from .evaluation import EvaluatorSpec, IsolatedEvaluator, WorkerProcess
from .finalists import (
    CONFIRM_POOL,
    best_of_each_kind,
    confirmed,
    finalists,
    layout_and_block,
    layout_of,
    with_measured_splits,
)
from .no_slower import Kept, keep_no_slower, workload_problems
from .objective import Objective
from .records import Record
from .scope import (
    CLASS_SHARES,
    GEMV,
    PREDICTOR,
    ROUTES,
    SizeClass,
    default_budget,
    gemv_classes,
    shape_classes,
    size_classes,
    supported_dtypes,
)
from .searching import search, start_point
from .strategies import DEFAULT_STRATEGY, get_strategy

#: How many of the configurations the profile would choose for an exact shape, or a size class it lacks,
#: are measured first (its choice, then those of the plans its predictor ranks next, then the nearest
#: classes', ``selection.candidates``): the predictor is a model, and the fastest of the plans it ranks
#: best need not be its first.
EXACT_CANDIDATES = 8
#: How many of an exact shape's finalists (besides the profile's choice) are timed with each K split.
SPLIT_FINALISTS = 2


class TuneListener:
    """What a tuning run reports as it goes (the CLI draws a progress bar from it); all optional."""

    def fma_done(self, results: list[fma.FmaResult]) -> None: ...

    def class_started(self, dtype: Dtype, size: SizeClass, space: SearchSpace, objective: Objective) -> None: ...

    def record(self, objective: Objective, record: Record, fresh: bool) -> None: ...

    def confirming(self, dtype: Dtype, size: SizeClass, count: int) -> None: ...

    def skipped(self, dtype: Dtype, size: SizeClass | None) -> None:
        """A size class or exact shape (or with None, the predictor) left untuned: the run's time was
        spent before its turn."""

    def class_finished(self, dtype: Dtype, size: SizeClass, entry: SizeClassEntry | None,
                       objectives: list[Objective], rejected: list[tuple[Params, str]]) -> None: ...

    def cuda_finished(self, dtype: Dtype, size: SizeClass, entry: CudaEntry | None, objectives: list[Objective],
                      rejected: list[tuple[Params, str]]) -> None:
        """The CUDA path's search of a class ended (``cuda_classes``): ``entry`` holds its best rate and
        the class's OpenCL rate beside it."""

    def predictor_started(self, dtype: Dtype, kernels: tuple[Params, ...]) -> None: ...

    def predictor_progress(self, dtype: Dtype, samples: int, fraction: float) -> None: ...

    def predictor_finished(self, dtype: Dtype, fitted: Predictor | None, held_out: predictor.Judged | None
                           ) -> None:
        """``held_out``: ``predictor.held_out`` of ``fitted`` (the profile keeps it only where its picks
        come nearer to the best than the size classes', and no farther than the predictor it held)."""

    def host_measured(self, dtype: Dtype, timed: list[routes.HostOrDevice], bound: int | None) -> None:
        """The routes step timed ``dtype``'s squares from numpy to numpy on the device and by the host's
        BLAS (``routes``): products of fewer than ``bound`` multiply-adds now run on the host (0: none;
        None: unchanged, the host's BLAS not timed)."""

    def kept_plans(self, kept: list[Kept] | None) -> None:
        """The workload's products whose plan before the run was faster, kept (``no_slower``; None: the
        comparison lost its process)."""

    def routes_measured(self, dtype: Dtype, timed: list[routes.InPlace], bound: int | None) -> None:
        """The routes step timed ``dtype``'s squares packed and read in place (``routes``), and the
        multiply-adds below which ``dtype``'s read in place no slower (None: not measured; ``timed`` empty:
        every configuration chosen reads through images); the profile keeps the least of the dtypes'."""


def tune(device: Device, dtypes: tuple[Dtype, ...] | None = None, budget: Budget | None = None,
         strategy: str = DEFAULT_STRATEGY, quick: bool = False, fresh: bool = False, top: int = 5,
         listener: TuneListener | None = None, seed: int = 0, write: bool = True,
         classes: tuple[str, ...] | None = None, shapes: list[ShapeRecord] | None = None) -> Profile:
    """Tune ``device`` and return its profile (also saved to the user's cache when ``write``);
    ``classes`` limits the run to some size classes (by name; "gemv" is GEMV's). With ``shapes`` (a
    workload, ``autogemm.workload``) it tunes instead exactly those GEMM shapes of ``dtypes`` (default: the
    workload's), each into an entry of its own that serves that very problem, as many as the budget's time
    allows (the rest keep what the profile chose for them, ``TuneListener.skipped``), and then, past the
    budget, keeps for each product of the workload the plan the profile made before the run where that runs
    faster than the new profile's (``no_slower``). Unless ``fresh``, each class
    first measures the configurations the device's existing profile ranks for it (for an exact shape,
    also those it would choose for it), so that a re-tune (a larger space, a new driver) starts from what
    was best before and cannot end below it."""
    prior = None if fresh else profile_for(device)
    listener = listener or TuneListener()
    if shapes is not None and classes:
        raise TuningError("tune either size classes or a workload's shapes, not both")
    if shapes is not None and not dtypes:
        dtypes = tuple(get_dtype(key) for key in dict.fromkeys(r.dtype for r in shapes if r.routine == GEMM))
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
        absent = set(classes) - {c.name for c in sizes} - {GEMV, PREDICTOR, ROUTES}
        if absent:
            raise TuningError(f"{device.name.strip()} has no size class {', '.join(sorted(absent))} "
                              f"(its classes: {', '.join(c.name for c in sizes)}; tiny and the batch classes "
                              "are a GPU's)")
        sizes = tuple(c for c in sizes if c.name in classes)
    started = time.monotonic()
    with WorkerProcess(device) as worker, Enumerator() as enumerator:   # every kernel is built and run there
        widths = (1, 2, 4) if device.is_gpu else (1, 2, 4, 8)
        instructions = (instructions_available(device, lambda dt, shape: IsolatedEvaluator(
            worker, EvaluatorSpec.gemm(dt, shape), runs=1)) if any(dt.mma_operand for dt in dtypes) else {})
        for dt in dtypes if sizes else ():
            if dt.tensor_only and dt.mma_operand not in instructions:
                exact = dt.native if dt.precision else dt.compute
                raise TuningError(f"{dt.routine} needs matrix instructions for {dt.mma_operand} operands, which "
                                  f"{device.name.strip()} lacks (its {exact.routine} kernels compute it exactly)")
        reals = tuple(sorted({"d" if dt.needs_fp64 else "s" for dt in dtypes}))
        if write:
            profile_at(path_for(device.fingerprint))    # a file there it cannot replace: refused before measuring
        results = fma.measured(device, worker.fma, reals, widths, fresh)
        listener.fma_done(results)
        macs = fma.mac_table(results)
        # every entry this run does not tune stays as the device's profile had it (a bundled one too: the
        # profile saved in the user's cache replaces it for this device)
        profile = new_profile(device, budget.describe(), macs)
        existing = own_profile(device)
        if existing is not None:
            profile = profile.merged_into(existing)
        elif prior is not None:
            # a profile borrowed from a related device: the new one starts from its entries (each still
            # verified here before its first use), so that what this run does not tune keeps its choice
            profile = profile.merged_into(prior.as_borrowed())
        if shapes is not None:
            plan = {dt: shape_classes(shapes, dt, device) for dt in dtypes}
            if not any(plan.values()):
                raise TuningError("the workload holds no shape to tune exactly of a dtype tuned (batches, GEMV "
                                  "and the largest products are tuned by their classes)")
        else:
            plan = {dt: sizes + (gemv_classes(device, dt, quick) if with_gemv and dt is dt.native else ())
                    for dt in dtypes}
        with_predictor = shapes is None and (not classes or PREDICTOR in classes)
        with_routes = shapes is None and (not classes or ROUTES in classes)
        cuda = {dt: cuda_unreachable(device, dt) is None for dt in dtypes}    # (its searches run in the worker)
        order = _breadth_first(plan)
        # what the profile chose for each new size class's problem before this run: asked as each class
        # begins, a class tuned earlier in the run would answer for a later one (a batch class for the
        # next); an exact shape's entry answers for that shape alone, so exact shapes are asked in turn
        chosen_before = {(dt, size): candidates(device, _problem(dt, size), EXACT_CANDIDATES)
                         for dt, size in order if prior is not None and size.routine == GEMM
                         and not size.exact and _prior_entry(prior, dt, size) is None}
        schedule = Schedule(budget, [step for dt, size in order for step in _steps(size, cuda[dt])]
                            + [((PREDICTOR, False), CLASS_SHARES[PREDICTOR]) for _ in plan if with_predictor]
                            + [((ROUTES, False), CLASS_SHARES[ROUTES])] * with_routes, started)
        facts = {dt: SpaceFacts(device, dt, {w: macs.get(f"{'d' if dt.needs_fp64 else 's'}{w}", "fma")
                                             for w in widths}, instructions) for dt in plan}
        gemm_spaces: dict[Dtype, list] = {dt: [] for dt in plan}       # each dtype's, made once
        skinny_spaces: dict[Dtype, list] = {dt: [] for dt in plan}
        for dt, size in order:
            on_cuda = cuda[dt] and _on_cuda(size)
            if schedule.spent():
                schedule.skip()
                listener.skipped(dt, size)
                if on_cuda:
                    schedule.skip()
                continue
            share, deadline = schedule.begin()
            if size.skinny:
                skinny_spaces[dt] = skinny_spaces[dt] or searched_spaces(replace(facts[dt], skinny=True), GEMM,
                                                                         default_params(device, dt), enumerator)
                spaces = skinny_spaces[dt]
            elif size.routine == GEMM:
                gemm_spaces[dt] = gemm_spaces[dt] or searched_spaces(facts[dt], GEMM, default_params(device, dt),
                                                                     enumerator)
                spaces = gemm_spaces[dt]
            else:
                spaces = searched_spaces(replace(facts[dt], layout=size.layout, vectors=size.k), GEMV,
                                         replace(GEMV_DEFAULTS[size.layout], vectors=size.k), enumerator)
            before = _prior_entry(prior, dt, size) if prior else None
            known = [r.config for r in before.ranked] if before else []
            if prior is not None and (size.exact or before is None):
                # and what the profile would choose for it: a new class starts from no worse
                if size.routine != GEMM:
                    chosen = [e.ranked[0].config for e in prior.gemv_entries(dt.key, size.layout)]
                elif (dt, size) in chosen_before:
                    chosen = chosen_before[dt, size]
                else:
                    chosen = candidates(device, _problem(dt, size), EXACT_CANDIDATES)
                known += [c for c in chosen if c not in known]
            entry, searched = _tune_class(worker, dt, size, spaces, share, deadline, strategy, fresh, top,
                                          listener, seed, known)
            if entry is not None:
                profile = profile.with_entry(dt.key, entry, size.section)
                if write:
                    save(profile)
                if size.routine == GEMM and not size.skinny:   # searches with a start begin the next class here
                    best = entry.ranked[0].config
                    gemm_spaces[dt] = [(space, start if start is None else start_point(space, best) or start)
                                       for space, start in gemm_spaces[dt]]
            schedule.end(searched)
            if on_cuda:
                profile = _tune_on_cuda(worker, dt, size, profile, prior, schedule, strategy, seed,
                                        fresh, listener, write)
        for dt in plan:
            if shapes is not None and dt.key in profile.predictors:
                # the shapes tuned exactly are samples for the rest too
                profile = profile.with_predictor(dt.key, predictor.merged(
                    profile.predictors[dt.key], None, profile.shapes.get(dt.key, ()), dt, device.compute_units))
                if write:
                    save(profile)
            if with_predictor:
                kernels = predictor.bank(profile, dt)
                if schedule.spent() or not kernels:
                    schedule.skip()
                    if kernels:
                        listener.skipped(dt, None)
                    continue
                share, _ = schedule.begin()
                listener.predictor_started(dt, kernels)
                fitting = time.monotonic()
                fitted = predictor.fit(worker, dt, kernels, share, quick, seed, predictor.balance(profile, dt),
                                       lambda done, fraction, dt=dt: listener.predictor_progress(dt, done, fraction))
                searched = time.monotonic() - fitting
                older = profile.predictors.get(dt.key)
                fitted = fitted and predictor.merged(fitted, older, profile.shapes.get(dt.key, ()), dt,
                                                     device.compute_units)
                quality = fitted and predictor.held_out(fitted, profile, dt, device.compute_units, older)
                listener.predictor_finished(dt, fitted, quality)
                if fitted is not None and predictor.kept(quality):
                    profile = profile.with_predictor(dt.key, fitted)
                    if write:
                        save(profile)
                schedule.end(searched)
        if with_routes:
            profile = _measure_routes(worker, dtypes, profile, schedule, listener, write)
        if shapes is not None and prior is not None:
            profile, kept = keep_no_slower(worker, prior, profile, workload_problems(shapes, tuple(plan)))
            listener.kept_plans(kept)
            if kept and write:
                save(profile)
    return profile


def _measure_routes(worker: WorkerProcess, dtypes: tuple[Dtype, ...], profile: Profile, schedule: Schedule,
                    listener: TuneListener, write: bool) -> Profile:
    """The routes step (``routes``), with the configurations ``profile`` ranks: the profile with the
    multiply-adds below which products read in place (the least of those measured on float32's and
    float64's squares, or the first dtype's: one bound serves every dtype, and float32's alone made
    float64's products slower), and for each native dtype of ``dtypes`` below which products from numpy
    to numpy run on the host's BLAS, measured (saved where ``write``). It takes seconds, and runs even
    where the run's time is spent: the bounds it measures hold for every product the device runs."""
    schedule.begin()
    started = time.monotonic()
    device = worker.device
    bounds = []
    for dt in [d for d in dtypes if d.key in ("s", "d")] or dtypes[:1]:
        timed = routes.measure_in_place(worker, profile, dt, routes.GPU_SIDES if device.is_gpu else routes.CPU_SIDES)
        bound = routes.in_place_bound(timed)
        listener.routes_measured(dt, timed, bound)
        bounds += [bound] if bound is not None else []
    if bounds:
        profile = routes.with_in_place_bound(profile, device, min(bounds))
    for dt in (d for d in dtypes if d.key in HOST_DTYPES):
        host = routes.measure_host(worker, dt, routes.host_sides(device))
        bound = routes.host_bound(host, device.shares_host_memory)
        listener.host_measured(dt, host, bound)
        if bound is not None:
            profile = routes.with_host_bound(profile, device, dt, bound)
    if write:
        save(profile)
    schedule.end(time.monotonic() - started)
    return profile


def _breadth_first(plan: dict[Dtype, tuple[SizeClass, ...]]) -> list[tuple[Dtype, SizeClass]]:
    """The classes of ``plan`` (each dtype's, most used first) in rounds: every dtype's first class, then
    every dtype's second, and so on, so that a budget spent before the end (a quick tune of a small CPU)
    has left each dtype's most used classes tuned rather than some dtypes none."""
    rounds = max((len(sizes) for sizes in plan.values()), default=0)
    return [(dt, sizes[r]) for r in range(rounds) for dt, sizes in plan.items() if r < len(sizes)]


def _steps(size: SizeClass, cuda: bool) -> list[tuple[tuple[str, bool], float]]:
    """A class's steps in the run's schedule, each its kind and weight: its search, then the CUDA path's
    where the dtype has one on the device (``cuda``) and the class is searched there."""
    search = [((size.routine, size.confirm is not None), size.share)]
    return search + [((CUDA, False), size.share * CUDA_SHARE)] if cuda and _on_cuda(size) else search


def _on_cuda(size: SizeClass) -> bool:
    """Whether a class is searched on the CUDA path too (where the dtype has it): GEMM's size classes of
    single products."""
    return size.routine == GEMM and not size.exact and size.batch == 1


def _tune_on_cuda(worker: WorkerProcess, dt: Dtype, size: SizeClass, profile: Profile, prior: Profile | None,
                  schedule: Schedule, strategy: str, seed: int, fresh: bool, listener: TuneListener, write: bool
                  ) -> Profile:
    """The CUDA path's step of a class (``cuda_classes``), after its OpenCL one: ``profile`` with its
    entry, compared with the class's OpenCL entry (saved where ``write``)."""
    if schedule.spent():
        schedule.skip()
        listener.skipped(dt, size)
        return profile
    share, _ = schedule.begin()
    entry, rejected, objectives, searched = tune_cuda_class(worker, dt, size, profile.entry(dt.key, size.name), share,
                                                            strategy, seed, fresh, prior, listener)
    listener.cuda_finished(dt, size, entry, objectives, rejected)
    if entry is not None:
        profile = profile.with_cuda(dt.key, entry)
        if write:
            save(profile)
    schedule.end(searched)
    return profile


def new_profile(device: Device, budget: str, macs: dict[str, str] | None = None) -> Profile:
    """An empty profile of ``device``, made now by this autogemm (entries are added as they are tuned)."""
    return Profile(device.fingerprint, device.name.strip(), device.vendor.strip(), device.driver_version.strip(),
                   __version__, datetime.now(timezone.utc).isoformat(timespec="seconds"), budget, macs or {},
                   device_architecture=device.architecture)


def searched_spaces(facts: SpaceFacts, routine: str, default: Params, enumerator: Enumerator | None = None
                    ) -> list[tuple[SearchSpace, Point | None]]:
    """The spaces a class of ``routine`` for ``facts.dtype`` searches, each with the point to start from
    where it holds ``default`` (the device class's default configuration): the space holding it first
    (a fresh run measures the default before anything else), then the others in the families' order. A
    family that does not apply returns no space: for a reduced precision mode or a 16-bit dtype only the
    matrix instructions' remain (the others are those of the native dtype or of float32, exact, and tuned
    there). The spaces' points are found by ``enumerator`` where given (large ones in parallel)."""
    built = [space for family in families(routine) if (space := family.space(facts)) is not None]
    if enumerator is not None:
        enumerator.enumerate(facts, built)
    spaces = [space for space in built if len(space)]
    if not spaces:
        raise TuningError(f"no configuration of the {facts.dtype.key} {routine} space fits "
                          f"{facts.device.name.strip()}")
    started = [(space, start_point(space, default)) for space in spaces]
    return sorted(started, key=lambda pair: pair[1] is None)


def _prior_entry(prior: Profile, dt: Dtype, size: SizeClass) -> SizeClassEntry | None:
    """The class's entry in the profile the run started from, if it has one."""
    return prior.entry(dt.key, size.name, size.section, size.shape if size.exact else None)


def _evaluator_spec(dt: Dtype, size: SizeClass) -> EvaluatorSpec:
    if size.routine == GEMM:
        return EvaluatorSpec.gemm(dt, size.shape, layout=size.layout or "NN", batch=size.batch)
    return EvaluatorSpec.gemv(dt, size.shape, size.layout)


def _problem(dt: Dtype, size: SizeClass) -> GemmProblem:
    """The GEMM problem of a class, its operands stored as its layout says."""
    layout = size.layout or "NN"
    return GemmProblem.dense(dt, *size.shape, Op.from_letter(layout[0], "layout"), Op.from_letter(layout[1], "layout"),
                             size.batch)


def _tune_class(worker: WorkerProcess, dt: Dtype, size: SizeClass,
                spaces: list[tuple[SearchSpace, Point | None]], budget: Budget, deadline: float | None,
                strategy: str, fresh: bool, top: int, listener: TuneListener, seed: int,
                known: list[KernelParams] = ()) -> tuple[SizeClassEntry | None, float]:
    """Search each family's space (in order, each from its start point) under its share of ``budget``,
    all into one checkpoint, and keep the finalists of all of them. The candidates run in ``worker``'s
    process. The ``known`` configurations of each family are measured first, and the best of them is the
    search's start when it beats the given one. Past ``deadline`` (``time.monotonic``), only the best
    finalist of each layout is verified (``finalists.best_of_each_kind``).
    The entry (None when nothing was correct), and the seconds the search took."""
    checkpoint = Checkpoint.for_problem(worker.device, dt, size.shape, routine=size.routine, layout=size.layout,
                                        batch=size.batch)
    if fresh:
        checkpoint.clear()
    evaluator = IsolatedEvaluator(worker, _evaluator_spec(dt, size))
    started = time.monotonic()
    try:
        objectives = search(spaces, evaluator, checkpoint, budget, strategy, seed, known,
                            overlap=worker.device.is_gpu, on_record=listener.record,
                            on_start=lambda space, objective: listener.class_started(dt, size, space, objective))
    finally:
        evaluator.release()
    searched = time.monotonic()
    ranked, rejected = finalists(lambda config: worker.verify(config, dt), objectives,
                                 top * CONFIRM_POOL if size.confirm else top,
                                 lambda: deadline is not None and time.monotonic() > deadline,
                                 layout_and_block(size.layout or "NN") if size.batch > 1 else layout_of)
    shape = size.shape
    if ranked and size.exact and size.routine == GEMM:
        # the profile's own choice (``known``'s first) is timed with its splits too: the search timed it
        # with the plan's split alone, where the predicted one can run twice as fast
        chosen = [Ranked(config, 0.0) for config in known[:1] if all(r.config != config for r in ranked)]
        ranked = [r for r in with_measured_splits(worker, _problem(dt, size), chosen + ranked,
                                                  len(chosen) + SPLIT_FINALISTS) if r.gflops]
    if ranked and size.confirm:
        listener.confirming(dt, size, len(ranked))
        again = confirmed(worker, dt, size.confirm, ranked, top)
        if again:
            shape, ranked = (size.confirm,) * 3, again
        else:
            ranked = best_of_each_kind(ranked, top)
    entry = None
    if ranked:
        entry = SizeClassEntry(size.name, shape, tuple(ranked), strategy,
                               sum(o.evaluations for o in objectives), time.monotonic() - started, batch=size.batch)
    listener.class_finished(dt, size, entry, objectives, rejected)
    return entry, searched - started
