"""Which configuration a plan is given when the caller names none: the device profile's, else the default.
One ``Selection`` for GEMM (``choose_params``) and GEMV (``choose_gemv_params``) alike: a plan never
chooses its own (``blas.plans`` makes a plan from a selection)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import NamedTuple

from ..codelets import gemv as gemv_codelet
from ..codelets.kernel import ceil_div
from ..codelets.registry import KernelParams, Params, check
from ..dtypes import Dtype
from ..profiles import Profile, Ranked, SizeClassEntry, Thresholds, profile_for, thresholds_for
from ..profiles.profile import LATENCY_CLASS, SHAPES, shape_distance
from ..runtime.backend import CUDA, OPENCL
from ..runtime.opencl.device import Device
from .coverage import planned_slices, predicted_rate
from .cuda_gemm import dense_lying, fitted, orientations, reading
from .defaults import CUDA_DEFAULTS, default_params, tensor_defaults
from .gemv import GemvProblem, default_gemv_params
from .prediction import predict, ranked
from .problem import GemmProblem, Op
from .routing import Routing
from .vectors import VectorsRoute, as_vectors
from .verified import verified_here, verified_in

#: A stored configuration that reads the operands as they are stored (no pack before the product) is
#: preferred to the fastest one when its measured rate is at least this share of the fastest's.
LAYOUT_MATCH_SHARE = 0.9
#: How the problems the tuner measures are stored: their rates already include the packs such a
#: problem needs, so for it the fastest stored configuration is simply the first.
MEASURED_LAYOUT = "NN"
#: A size class farther in shape than another is chosen only when predicted at least this much faster.
PREDICTION_MARGIN = 1.1


def working_dtype(dt: Dtype, m: int, n: int, k: int, limits: Thresholds) -> Dtype:
    """The dtype a product of ``dt`` is computed in: its own, or its storage's plain arithmetic where
    ``dt`` asks for 3xTF32 of a product with M or N under ``limits.split_min_side`` or K under
    ``limits.split_min_depth``: float32's accuracy, which 3xTF32 promises, at float32's speed, which the
    split's passes only slow there."""
    if dt.precision != "3xtf32" or (min(m, n) >= limits.split_min_side and k >= limits.split_min_depth):
        return dt
    return dt.native


class Selection(NamedTuple):
    """A configuration chosen for a problem, where it came from, the K slices measured best for it on
    that very problem (None: the plan decides; always None for GEMV, whose plan splits its reduction by
    its configuration's ``waves``; the CUDA path's plans share K by their schedule), and the backend the
    profile measured faster for it (``choose_cuda_params``; OpenCL's choices are OpenCL's)."""

    params: Params
    source: str
    split: int | None = None
    backend: str = OPENCL


class ClassChoice(NamedTuple):
    """A size class's configuration chosen for a problem, and the class's name (``class_choice``)."""

    config: KernelParams
    name: str


def choose_params(device: Device, problem: GemmProblem) -> Selection:
    """The configuration for ``problem`` on ``device`` and where it came from. From the profile: the best
    of its entry for this very problem where ``autogemm tune --shapes`` made one (with its measured K
    slices); else, unless the product is short (under ``Thresholds.in_place_multiply_adds`` with a K of
    at most ``Thresholds.one_launch_depth``, and more than the dtype's ``shallow_predicted_depth``), the
    kernel and K slices its predictor predicts fastest (``prediction``); else, in each size class, the
    best stored configuration that passes ``check``, or one nearly as fast whose layout matches how A
    and B are stored (see ``prefer_stored_layout``); of those, the one with the highest rate predicted
    for this shape (``coverage.predicted_rate``: a narrow or small C wastes large blocks and leaves
    compute units idle), the nearer class unless a farther one is predicted ``PREDICTION_MARGIN`` times
    faster (the prediction ignores launch costs and caches), save where the nearest is the tiny class
    or, for a batch, a batch class, whose choice stands (``class_choice``). A configuration whose
    operand images exceed the device's limits is passed over; so is one of a profile borrowed from a
    related device until it passes ``verified.verified_here`` on this one (only the winner of each way
    is verified, and chosen again without it where it fails). Without a usable profile, a tensor-core
    default where the device has the instructions (also verified first), else the device class
    default. A reduced precision mode is computed by its own configurations or the native dtype's
    (which are exact), a 16-bit dtype by its own or float32's (whose kernels read its operands as
    stored), whichever are predicted faster, and a short 16-bit product by float32's. A batch, read
    through buffers, takes no configuration with images.
    A product too small for a pack's launch to pay, or whose kernel would read an operand it transposes
    too few times for the pack to pay, or whose configuration stages every layout alike (those two in a
    plan of fewer launches), takes a choice not measured on that very problem in the layout A and B are
    stored in (``read_as_stored``)."""
    dt = problem.dtype
    profile = profile_for(device)
    if profile is not None:
        layout = "NT"[problem.op_a.transposed] + "NT"[problem.op_b.transposed]
        exact = profile.entry(dt.key, layout, SHAPES, (problem.m, problem.n, problem.k)) \
            if problem.batch == 1 else None
        def fits(config: KernelParams) -> bool:
            return check(config, device, dt) is None and (
                not (config.image_a or config.image_b)
                or Routing(problem, config, 1, device.compute_units).images_fit(device.image2d_max))

        def verified(pick: Callable[[Callable[[KernelParams], bool]], Selection | None]) -> Selection | None:
            """``pick``'s choice among the configurations that fit, the first verified here (a borrowed
            profile's are verified on this device as each is first chosen, not all of them at once)."""
            failed: set[KernelParams] = set()
            while (chosen := pick(lambda config: fits(config) and config not in failed)) is not None:
                if verified_in(device, profile, chosen.params, dt):
                    return chosen
                failed.add(chosen.params)
            return None

        source = f"profile {profile.device_fingerprint}"
        predictor = profile.predictors.get(dt.key)

        def by_shape(usable: Callable[[KernelParams], bool]) -> Selection | None:
            return next((Selection(r.config, f"{source} (this shape)", r.split)
                         for r in (exact.ranked if exact else ()) if usable(r.config)), None)

        def by_prediction(usable: Callable[[KernelParams], bool]) -> Selection | None:
            predicted = predict(predictor, problem, device.compute_units, usable) if predictor else None
            return predicted and Selection(predicted.params, f"{source} (predicted)", predicted.split)

        # a product the device takes in place, of a K too short to split, runs in one launch, its time
        # the latency of its blocks' K steps, which the predictor's model of throughput and copies does
        # not see: the classes choose (but over the dtype's shallowest K, where a class's tensor-core block
        # is mostly padding and the predictor's model of C's coverage ranks kernels better); a 16-bit
        # dtype's, float32's classes (measured at such sizes, their kernels reading the 16-bit operands as
        # stored), not its own tensor-core ones, measured on large products, whose longer K steps and
        # deeper pipelines the coverage model does not charge
        limits = thresholds_for(device)
        short = (problem.m * problem.n * problem.k < limits.in_place_multiply_adds
                 and limits.shallow_predicted(dt.key) < problem.k <= limits.one_launch_depth)
        keys = (dt.compute.key,) if short and dt.half else class_keys(dt)

        def by_class(usable: Callable[[KernelParams], bool]) -> Selection | None:
            chosen = class_choice(profile, problem, device.compute_units, usable, keys)
            return chosen and Selection(chosen.config, f"{source} (class {chosen.name})")
        for pick in (by_shape, by_class) if short else (by_shape, by_prediction, by_class):
            found = verified(pick)
            if found is not None:       # one measured on this very problem stands as measured
                return found if pick is by_shape else read_as_stored(found, device, problem)
    for config in tensor_defaults(device, dt):
        if check(config, device, dt) is None and verified_here(device, config, dt, "a tensor-core default"):
            return read_as_stored(Selection(config, "default (matrix instructions)"), device, problem)
    return read_as_stored(Selection(default_params(device, dt), "default"), device, problem)


def read_as_stored(chosen: Selection, device: Device, problem: GemmProblem) -> Selection:
    """``chosen``, or its tiles in the layout A and B are stored in (``in_layout``; or, where its family
    has no such layout, in one that reads one more of them as stored), so that the kernel reads them
    where they lie: for a product of fewer multiply-adds than the device's
    ``Thresholds.in_place_multiply_adds`` (it takes the device less time than the host takes to launch a
    pack, and the device idles through the pack's launch), or whose kernel would read an operand it
    transposes fewer than ``Thresholds.pack_min_passes`` times (``read_too_few_times``), where the twin
    reads that operand as stored in a plan of fewer launches; and at any size where the twin's kernel
    stages every layout alike (``stages_alike``: the packs are then all the plan would save), in a plan of
    fewer launches. Kept where that configuration does not fit the device, reads through images (packed
    anyway), or is one of a profile borrowed from another device and fails its verification here."""
    params, dt = chosen.params, problem.dtype
    stored = stored_layout(problem)
    work = problem.m * problem.n * problem.k * problem.batch
    limits = thresholds_for(device)
    small = work < limits.in_place_multiply_adds
    passes = limits.pack_min_passes
    if (params.layout == stored or params.image_a or params.image_b
            or not (small or params.stages_alike(dt) or read_too_few_times(params, problem, stored, passes))):
        return chosen
    now = operands_as_stored(params.layout, stored)
    chosen_launches = None if small else plan_launches(device, chosen, params, problem, limits)
    # the stored layout itself, else (a family without it) one that reads one more operand as stored
    for layout in sorted(("NN", "NT", "TN", "TT"), key=lambda x: -operands_as_stored(x, stored)):
        if operands_as_stored(layout, stored) <= now:
            break
        twin = params.in_layout(layout, dt)
        # (a larger product: only a twin that reads the operand in question where it lies, in a plan of
        # fewer launches; one that pads its operands packs them in any layout)
        if (check(twin, device, dt) is None
                and (small or ((twin.stages_alike(dt) or not read_too_few_times(twin, problem, stored, passes))
                               and plan_launches(device, chosen, twin, problem, limits) < chosen_launches))
                and _usable_twin(device, chosen, twin, dt)):
            return chosen._replace(params=twin, source=f"{chosen.source}, read as stored")
    return chosen


def read_too_few_times(params: KernelParams, problem: GemmProblem, stored: str, passes: int) -> bool:
    """Whether the kernel of ``params`` reads an operand its layout would transpose (from the ``stored``
    layout) fewer than ``passes`` times: A once per block of C's columns, B once per block of its rows
    (an operand a batch shares, once per product besides). A pack reads and writes such an operand once
    each, more traffic than the kernel's reads of it, which is most of a skinny or deep product's time."""
    reads = [ceil_div(problem.n, params.block_cols), ceil_div(problem.m, params.block_rows)]
    for i, name in enumerate("AB"):
        if problem.batch > 1 and problem.stride(name) == 0:
            reads[i] *= problem.batch
    return any(params.layout[i] != stored[i] and reads[i] < passes for i in (0, 1))


def planned_split(chosen: Selection, params: KernelParams, problem: GemmProblem, device: Device,
                  limits: Thresholds) -> int:
    """The K split a plan of ``params`` takes for ``chosen``: the one measured for the problem (stream-K
    included), else ``coverage.planned_slices``."""
    return chosen.split if chosen.split is not None else planned_slices(params, problem, device, limits)


def plan_launches(device: Device, chosen: Selection, params: KernelParams, problem: GemmProblem,
                  limits: Thresholds) -> int:
    """The launches of the plan of ``params`` (``chosen``'s or a twin) for ``problem``."""
    split = planned_split(chosen, params, problem, device, limits)
    return Routing(problem, params, split, device.compute_units, limits=limits).traffic().launches


def _usable_twin(device: Device, chosen: Selection, twin: KernelParams, dt: Dtype) -> bool:
    """Whether ``chosen``'s configuration in another layout, ``twin``, may run here: verified like its
    profile's (a borrowed profile's are verified on this device first) where it came from one; the
    class default is the codelet's own; a tensor-core default is verified like its twin."""
    profile = profile_for(device)
    if profile is not None and chosen.source.startswith("profile"):
        return verified_in(device, profile, twin, dt, made_from=chosen.params)
    return chosen.source == "default" or verified_here(device, twin, dt, "a tensor-core default")


def vectors_route(device: Device, problem: GemmProblem) -> VectorsRoute | None:
    """The multi-vector GEMV a product of few columns or rows runs as on ``device`` (``vectors.as_vectors``),
    or None where a GEMM kernel runs it: several vectors over a K shorter than the device's
    ``Thresholds.vectors_min_depth`` (C, not the matrix, is then most of what moves, and the kernel's
    tiles write it faster than the GEMV's reduction per output), or in fewer multiply-adds than its
    ``vectors_min_multiply_adds`` where the GEMV packs X first (launches are then what counts), where the
    GEMM plan chosen for it runs in one launch (no pack, no merge: else the GEMV's is ahead). A GEMV that
    needs no pack of X takes any small product of a K from ``vectors_min_depth``: it splits that K over
    work-groups (added up in its one launch, but for more partial sums than ``blas.gemv.SUMMED_MAX_READS``
    allows), where a GEMM kernel's one block of C would step through it alone."""
    return routed(device, problem)[0]


def routed(device: Device, problem: GemmProblem) -> tuple[VectorsRoute | None, Selection | None]:
    """``vectors_route``, and the GEMM selection it made on the way (None where it made none), which a
    product that runs a GEMM kernel then takes as it is."""
    route = as_vectors(problem)
    limits = thresholds_for(device)
    if (route is None or route.gemv.vectors == 1 or
            (problem.k >= limits.vectors_min_depth
             and (problem.m * problem.n * problem.k >= limits.vectors_min_multiply_adds
                  or not route.gemv.packs_x))):
        return route, None
    chosen = choose_params(device, problem)
    return (None, chosen) if plan_launches(device, chosen, chosen.params, problem, limits) == 1 else (route, None)


def choose_gemv_params(device: Device, problem: GemvProblem) -> Selection:
    """The configuration for ``problem`` on ``device`` and where it came from: from the device's profile,
    the best one that passes ``check`` of the class of the problem's layout nearest to it in shape
    (outputs, reduction length and right-hand sides, in log scale; a class's third dimension is its
    vectors), among those tuned with several vectors for a problem of several, ``fitted`` to the problem
    unless measured on that very shape (where the fitted one does not pass, as it is); for a 16-bit
    dtype without classes of its own, float32's; else the default."""
    dt, layout = problem.dtype, problem.layout
    profile = profile_for(device)
    if profile is not None:
        def distance(entry) -> float:
            rows, cols, vectors = (*entry.shape[:2], max(1, entry.shape[2]))
            tuned = (cols, rows) if layout == "T" else (rows, cols)
            return sum(abs(math.log(max(a, 1)) - math.log(max(b, 1)))
                       for a, b in zip((*tuned, vectors), (problem.outputs, problem.reduction, problem.vectors)))

        # a problem of several vectors takes a class tuned with several first, one of one vector the others;
        # a 16-bit dtype without classes of its own takes float32's (its kernels read 16 bits as stored)
        own = profile.gemv_entries(dt.key, layout) or profile.gemv_entries(dt.compute.key, layout)
        entries = sorted(own,
                         key=lambda e: ((e.shape[2] > 1) != (problem.vectors > 1), distance(e)))
        for entry in entries:
            measured_here = distance(entry) == 0        # (``tune --shapes`` measured it on this very shape)
            for ranked in entry.ranked:
                fitted = ranked.config if measured_here else \
                    ranked.config.fitted_to(problem.outputs, problem.reduction, problem.vectors,
                                            device.compute_units)
                for config in dict.fromkeys((fitted, ranked.config)):
                    if (gemv_codelet.check(config, device, dt) is None
                            and verified_in(device, profile, config, dt, made_from=ranked.config)):
                        return Selection(config, f"profile {profile.device_fingerprint} {entry.name}")
    return Selection(default_gemv_params(device, dt, layout, problem.vectors), "default")


def choose_cuda_params(device: Device | None, dt: Dtype, m: int, n: int, k: int, multiprocessors: int,
                       layers: int = 1, ops: tuple[Op, Op] = (Op(), Op(transposed=True))) -> Selection:
    """The CUDA configuration for an m x n x k product of ``dt`` (or a strided batch of ``layers``), its
    dense row-major operands stored as ``ops`` say (by default NT), and the backend it runs on by the
    profile of the OpenCL ``device`` (its CUDA entry nearest in shape: the backend measured faster there,
    with its configuration); with no such entry, CUDA and the dtype's ``CUDA_DEFAULTS``. The
    configuration's tile is ``cuda_gemm.fitted`` to the product its kernel computes (all the batch's
    blocks of C; C^T = B^T A^T where the kernel reads the operands so, ``reading``) on a GPU of
    ``multiprocessors``; a product of fewer rows than columns computes C^T where that reads its operands
    as cheaply and its few rows then take a narrow block (``WgmmaParams.narrow``)."""
    profile = profile_for(device) if device is not None else None
    entry = profile.cuda_entry(dt.key, m, n, k) if profile is not None else None
    if entry is None:
        params, source, backend = CUDA_DEFAULTS[dt.key], "default", CUDA
    else:
        params, source, backend = entry.config, f"profile {profile.device_fingerprint} {entry.name}", entry.backend
    lying = dense_lying(dt, m, n, k, *ops)
    mn_major, swapped = reading(params, lying)
    rows, columns = (n, m) if swapped else (m, n)
    tiled = fitted(params, rows, columns, k, multiprocessors, layers, mn_major)
    ways = orientations(params, lying)
    if not swapped and m < n and True in ways and ways[True][0] == ways[False][0]:
        across = fitted(params, n, m, k, multiprocessors, layers, ways[True][1])     # C^T, read as cheaply
        tiled = across if across.narrow else tiled
    return Selection(tiled, source, backend=backend)


def class_keys(dt: Dtype) -> tuple[str, ...]:
    """The dtypes whose size classes a ``dt`` problem draws on: its own, its native precision's (which
    is exact) and its compute type's (for 16 bits, float32's: its kernels read them as stored)."""
    return tuple(dict.fromkeys((dt.key, dt.native.key, dt.compute.key)))


def class_choice(profile: Profile, problem: GemmProblem, compute_units: int,
                 usable: Callable[[KernelParams], bool], keys: tuple[str, ...] | None = None) -> ClassChoice | None:
    """Of the ``usable`` configurations of the profile's size classes of the dtypes ``keys`` (by default
    ``class_keys``; for a batch, none with images, and those of its batch classes first,
    ``class_entries``), the one ``choose_params`` takes from them for
    ``problem``; None where the profile has none. Each class
    offers its best (or one nearly as fast in the stored layout, ``prefer_stored_layout``); for a batch,
    whose many work-groups keep the device busy whatever the block, so that the share of each block that
    is C decides (a class's best block can be many times its small matrices), the one of its
    configurations reading as many operands as stored that is predicted fastest, a lower-ranked one
    where ``PREDICTION_MARGIN`` times faster. Of the classes' offers, the nearest class's unless a farther
    one is predicted that much faster (each class's rates were measured on its own problem). The nearest
    class's offer stands where it was measured as the product runs: a batch class's for a batch (a
    class of larger matrices reads faster for their longer K and fewer edges, which the prediction does
    not see), and the ``LATENCY_CLASS``'s for a single product: the prediction counts the compute units
    a product's blocks fill, not the latency of their K steps, which decides the time there and is
    slower for the larger blocks other classes measured best."""
    keys = keys or class_keys(problem.dtype)
    stored = stored_layout(problem)
    for entries in class_entries(profile, keys, problem):
        offers: list[tuple[Ranked, str]] = []
        for entry in entries:
            fit = [r for r in entry.ranked if usable(r.config)
                   and (problem.batch == 1 or not (r.config.image_a or r.config.image_b))]
            if not fit:
                continue
            first = prefer_stored_layout(fit, problem)
            if problem.batch > 1:
                as_stored = operands_as_stored(first.config.layout, stored)
                first = _predicted_best([first, *(r for r in fit if r is not first
                                                  and operands_as_stored(r.config.layout, stored) >= as_stored)],
                                        problem, compute_units)
            if entry is entries[0] and (entry.batch > 1 or entry.name == LATENCY_CLASS and problem.batch == 1):
                return ClassChoice(first.config, entry.name)
            offers.append((first, entry.name))
        if offers:
            best = _predicted_best([offer for offer, _ in offers], problem, compute_units)
            return next(ClassChoice(offer.config, name) for offer, name in offers if offer is best)
    return None


def class_entries(profile: Profile, keys: tuple[str, ...], problem: GemmProblem) -> list[list[SizeClassEntry]]:
    """The size-class entries of dtypes ``keys`` that a choice for ``problem`` draws on, in turn, each
    list nearest first: for a batch, its batch classes where the nearest of them is as near its matrices'
    shape as the nearest class of single products (else a class of single products measured blocks nearer
    that size), then the classes of single products (where no batch class's configuration is usable)."""
    shape = (problem.m, problem.n, problem.k)
    singles = profile.nearest(keys, *shape)
    batched = profile.nearest(keys, *shape, batched=True) if problem.batch > 1 else []
    if batched and singles and shape_distance(batched[0].shape, shape) > shape_distance(singles[0].shape, shape):
        batched = []
    return [batched, singles] if batched else [singles]


def _predicted_best(ranked: list[Ranked], problem: GemmProblem, compute_units: int) -> Ranked:
    """Of ``ranked`` (in order of preference), the first unless a later one is predicted
    ``PREDICTION_MARGIN`` times faster for ``problem`` (``coverage.predicted_rate``), and so on."""
    rates = [predicted_rate(r.config, r.gflops, problem, compute_units) for r in ranked]
    best = 0
    for i in range(1, len(ranked)):
        if rates[i] > PREDICTION_MARGIN * rates[best]:
            best = i
    return ranked[best]


def prefer_stored_layout(ranked: list[Ranked], problem: GemmProblem) -> Ranked:
    """The first of ``ranked`` (best first), unless the problem is stored otherwise than the tuner's
    (whose rates include the packs), or is a batch, and one within ``LAYOUT_MATCH_SHARE`` of it reads
    more operands as they are stored (``operands_as_stored``: fewer transposing packs), the first of those
    that read most. (A batch packs every matrix: the rates of its class, which included the packs at the
    class's own size, where layouts so near one another tied, do not tell what the packs cost at
    another.)"""
    if (problem.op_a.conjugated or problem.op_b.conjugated) and problem.dtype.is_complex:
        return ranked[0]          # a conjugating pack is needed whatever the layout
    stored = stored_layout(problem)
    if stored == MEASURED_LAYOUT and problem.batch == 1:
        return ranked[0]
    near = [r for r in ranked if r.gflops >= LAYOUT_MATCH_SHARE * ranked[0].gflops]
    return max(near, key=lambda r: operands_as_stored(r.config.layout, stored))


def stored_layout(problem: GemmProblem) -> str:
    """How A and B are stored, as a layout: 'N' for an operand stored as op() reads it, 'T' transposed."""
    return ("T" if problem.op_a.transposed else "N") + ("T" if problem.op_b.transposed else "N")


def operands_as_stored(layout: str, stored: str) -> int:
    """How many of A and B a kernel of ``layout`` reads as they are ``stored`` (0 to 2)."""
    return sum(kernel == as_stored for kernel, as_stored in zip(layout, stored))


def candidates(device: Device, problem: GemmProblem, count: int) -> list[KernelParams]:
    """Up to ``count`` configurations worth trying for ``problem`` on ``device``: ``choose_params``'s
    first, then those of the pairs the profile's predictor ranks fastest for it (``predicted_plans``),
    then the other usable ones the profile ranks for the dtype in the size classes nearest in shape (the
    hybrid tuner's candidates: the kernel best alone is not always best beside the host; an exact
    shape's tuning starts from them)."""
    found = [choose_params(device, problem).params]
    profile = profile_for(device)
    if profile is not None:
        predicted = (chosen.params for chosen, _ in predicted_plans(device, problem))
        classed = (ranked.config for entries in class_entries(profile, (problem.dtype.key,), problem)
                   for entry in entries for ranked in entry.ranked)
        for config in itertools.chain(predicted, classed):
            if len(found) == count:
                break
            if config not in found and check(config, device, problem.dtype) is None:
                found.append(config)
    return found[:count]


def predicted_plans(device: Device, problem: GemmProblem) -> Iterator[tuple[Selection, float]]:
    """The (configuration, K split) pairs the device's profile's predictor ranks for ``problem``, fastest
    first, each as the selection would take it (``read_as_stored``) and once, with its predicted GFLOP/s,
    as they are asked for; configurations the device cannot build, or that read through images, left out.
    Nothing without a predictor of the problem's dtype (or for a batch, or beyond its reach)."""
    profile = profile_for(device)
    predictor = profile.predictors.get(problem.dtype.key) if profile is not None else None
    if predictor is None:
        return

    def usable(config: KernelParams) -> bool:
        return check(config, device, problem.dtype) is None and not (config.image_a or config.image_b)

    seen = set()
    for pair in ranked(predictor, problem, device.compute_units, usable):
        chosen = read_as_stored(Selection(pair.params, f"profile {profile.device_fingerprint} (predicted)",
                                          pair.split), device, problem)
        if (chosen.params, chosen.split) not in seen:
            seen.add((chosen.params, chosen.split))
            yield chosen, pair.gflops
