"""``Profile``: what tuning learned about one device, as a self-contained, versioned JSON document.

A profile is data from outside (shared between users, downloaded, edited by hand), so ``from_json``
validates every field strictly: exact keys, types, ranges, and each configuration through
``params_from_dict``, whose closed lists of values and build options keep a forged field from ever
reaching the kernel source. Nothing in a profile is code."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

from ..codelets.kernel import MAX_SLICES
from ..codelets.registry import GEMM, GEMV, Params, params_from_dict
from ..codelets.stream_k import STREAM_K
from ..dtypes import DTYPES
from ..errors import AutogemmError, ProfileError
from ..runtime.backend import CUDA, OPENCL
from .thresholds import Thresholds

FORMAT = "autogemm-profile"
VERSION = 1
MAX_RANKED = 32
#: The largest rate a profile holds (GFLOP/s); a measurement past it is refused where it is read back
#: (``tuning.records``), so that no tuning run saves a profile its own reader would reject.
MAX_GFLOPS = 1e7
MAX_DIMENSION = 2**31 - 1
#: The products a batch class's entry may have been measured on together.
MAX_BATCH = 2**20
MAX_PARTS = 256
#: Per-shape entries a dtype may hold (``autogemm tune --shapes``): a program's distinct products.
MAX_SHAPES = 4096
#: The tables of size-class entries by dtype, as the JSON's sections name them: GEMM's size classes,
#: GEMV's layouts and shapes, and exact shapes tuned for (``tune --shapes``), whose entry is named by the
#: problem's stored layout: NN, NT, TN or TT for a GEMM, N or T (the codelet layout) for a GEMV, which
#: is also how a GEMM of few columns or rows runs (``blas.vectors``).
CLASSES, GEMV_CLASSES, SHAPES = "dtypes", "gemv", "shapes"
#: The GEMM size class measured where the latency of a block's K steps decides the time (a C of a few
#: blocks over a K of hundreds, on a GPU): its rates stand for products nearest to it as they are,
#: where other classes' are scaled by the compute units a product's blocks fill (``blas.selection``)
LATENCY_CLASS = "tiny"
SHAPE_LAYOUT = re.compile(r"^[NT]{2}$")
EXACT_NAME = re.compile(r"^[NT]{1,2}$")
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_FINGERPRINT = re.compile(r"^[0-9a-f]{16}$")
_FMA_KEY = re.compile(r"^[sd](1|2|4|8|16)$")
_MACS = ("fma", "mad", "mul_add")
#: The predictor's bank of kernels and the shapes it was trained on, per dtype, at most.
MAX_BANK, MAX_SAMPLES = 32, 512
#: GEMV's classes: the codelet layout, and a square A, a long one (few outputs, a long reduction) or a
#: square one with a few or more right-hand sides (the shape's third dimension)
GEMV_CLASS = re.compile(r"^[nt]-(square|long|few|vectors)$")
Entry = TypeVar("Entry")


@dataclass(frozen=True)
class Ranked:
    """A configuration and the rate it reached on the class's problem, with ``split`` K slices (or
    ``STREAM_K``) where that split was measured best for it (None: a plan decides,
    ``blas.coverage.auto_slices``)."""

    config: Params
    gflops: float
    split: int | None = None


@dataclass(frozen=True)
class SizeClassEntry:
    """The best configurations for one dtype at one problem size."""

    name: str                       # "large", "small", ...
    shape: tuple[int, int, int]     # (m, n, k) the rates were measured at
    ranked: tuple[Ranked, ...]      # best first
    strategy: str
    evaluations: int
    seconds: float
    #: the fingerprint of the device the entry was measured on where that is not the profile's own (an
    #: entry a tuned profile took over from the profile it borrowed: ``Profile.as_borrowed``)
    measured_on: str = ""
    #: the products of ``shape`` measured together in one strided call (a batch class), else 1
    batch: int = 1


@dataclass(frozen=True)
class HybridEntry:
    """A product shared with the host (``gemm(..., devices=[this device, 'host'])``), kernel and split
    co-tuned at ``shape``: ``host_parts`` of ``parts`` parts of C's rows to the host's BLAS, the rest to
    the device with ``config``; ``gflops`` is the whole call's rate, host operands to host result."""

    shape: tuple[int, int, int]
    parts: int
    host_parts: int
    config: Params
    gflops: float
    evaluations: int
    seconds: float


@dataclass(frozen=True)
class CudaEntry:
    """The CUDA path's best configuration for one dtype and size class (a ``codelets.wgmma`` or ``dmma``
    one, ``autogemm tune`` on a Hopper GPU), measured at ``shape`` beside the best OpenCL rate there
    (``opencl_gflops``; 0 where OpenCL has no kernels for the dtype): a product nearest to this class runs
    on the faster of the two (``backend``)."""

    name: str
    shape: tuple[int, int, int]
    config: Params
    gflops: float
    opencl_gflops: float
    evaluations: int
    seconds: float

    @property
    def backend(self) -> str:
        return CUDA if self.gflops > self.opencl_gflops else OPENCL


@dataclass(frozen=True)
class Sample:
    """A shape the predictor measured its bank on: A and B stored as ``layout`` says (NN to TT), C of
    ``shape`` (m, n, k), and for each kernel of the bank, in its order, the GFLOP/s it reached with
    each K split it was timed with: ``((split, gflops), ...)``, empty where it failed or did not run."""

    layout: str
    shape: tuple[int, int, int]
    rates: tuple[tuple[tuple[int, float], ...], ...]

    @property
    def layout_shape(self) -> tuple[str, int, int, int]:
        """(layout, m, n, k)."""
        return (self.layout, *self.shape)


@dataclass(frozen=True)
class Predictor:
    """What selection predicts the rate of a (kernel, K split) for any shape from (``blas.prediction``):
    a ``bank`` of candidate kernels and the ``samples`` they were measured on, with the ``seconds``
    that took (``autogemm tune``, ``tuning.predictor``). Data only: the model is in the code."""

    bank: tuple[Params, ...]
    samples: tuple[Sample, ...]
    seconds: float
    #: The device's rate over its memory bandwidth for the dtype, in flops per element moved (0:
    #: unknown): what a pack of an operand costs against the product
    balance: float = 0.0
    #: What one launch costs, in flops at that rate (0: nothing), fitted to the samples
    #: (``tuning.predictor.calibrate``): a pack or a merge of a short product can cost more than it
    launch: float = 0.0
    #: as ``SizeClassEntry.measured_on``
    measured_on: str = ""


@dataclass(frozen=True)
class Profile:
    device_fingerprint: str
    device_name: str
    device_vendor: str
    driver_version: str
    autogemm_version: str
    created: str                    # ISO 8601, UTC
    budget: str
    fma: dict[str, str] = field(default_factory=dict)                    # "s4" -> "fma"
    dtypes: dict[str, tuple[SizeClassEntry, ...]] = field(default_factory=dict)
    #: GEMV's best configurations per dtype: entries per codelet layout and shape class, named
    #: "n-square", "n-long", "n-vectors", "t-square", ... (``GEMV_CLASS``)
    gemv: dict[str, tuple[SizeClassEntry, ...]] = field(default_factory=dict)
    #: Products shared with the host, per dtype: one co-tuned entry per shape (``autogemm tune --hybrid``)
    hybrid: dict[str, tuple[HybridEntry, ...]] = field(default_factory=dict)
    #: Exact shapes tuned for, per dtype (``autogemm tune --shapes``): an entry per stored layout and
    #: (m, n, k), used for that very problem; a GEMV's (``EXACT_NAME`` N or T) is of A's rows and columns
    #: and the right-hand sides
    shapes: dict[str, tuple[SizeClassEntry, ...]] = field(default_factory=dict)
    #: The rate predictor of each dtype tuned with one (``Predictor``)
    predictors: dict[str, Predictor] = field(default_factory=dict)
    #: ``Device.architecture`` of the device (empty in profiles made before it was recorded)
    device_architecture: str = ""
    #: The CUDA path's entries per dtype, one per size class (``CudaEntry``), on a GPU that has it
    cuda: dict[str, tuple[CudaEntry, ...]] = field(default_factory=dict)
    #: What routes and shapes a call on this device, where the profile holds its own (else its class's)
    thresholds: Thresholds | None = None

    # ----- use ------------------------------------------------------------------------------------
    def table(self, section: str) -> dict[str, tuple[SizeClassEntry, ...]]:
        """The entries by dtype of ``section`` (``CLASSES``, ``GEMV_CLASSES`` or ``SHAPES``)."""
        return {CLASSES: self.dtypes, GEMV_CLASSES: self.gemv, SHAPES: self.shapes}[section]

    def every_entry(self) -> list[tuple[str, str, SizeClassEntry]]:
        """(section, dtype, entry) for every GEMM and GEMV entry: GEMM's size classes, GEMV's, then the
        exact shapes."""
        return [(section, key, entry) for section in (CLASSES, GEMV_CLASSES, SHAPES)
                for key, entries in self.table(section).items() for entry in entries]

    def entry(self, dtype: str, name: str, section: str = CLASSES,
              shape: tuple[int, int, int] | None = None) -> SizeClassEntry | None:
        """The entry of ``dtype``'s class ``name`` in ``section`` (and of ``shape`` where given), if tuned."""
        return next((e for e in self.table(section).get(dtype, ())
                     if e.name == name and (shape is None or e.shape == tuple(shape))), None)

    def nearest(self, dtypes: tuple[str, ...], m: int, n: int, k: int, batched: bool = False
                ) -> list[SizeClassEntry]:
        """The size-class entries of ``dtypes`` measured on single products (``batched``: on strided
        batches), the one nearest to (m, n, k) first (nearest in log scale, so 3000 is near 4096 and
        100 near 256; at equal distances in the order of ``dtypes``)."""
        entries = [e for key in dtypes for e in self.dtypes.get(key, ()) if (e.batch > 1) == batched]
        return sorted(entries, key=lambda e: shape_distance(e.shape, (m, n, k)))

    def gemv_entries(self, dtype: str, layout: str) -> list[SizeClassEntry]:
        """GEMV's entries for ``dtype`` and codelet ``layout`` ('N' or 'T'): one per shape class tuned, and
        the exact shapes tuned of that layout."""
        return [e for e in self.gemv.get(dtype, ()) if e.name[0] == layout.lower()] + \
            [e for e in self.shapes.get(dtype, ()) if e.name == layout.upper()]

    def hybrid_entry(self, dtype: str, m: int, n: int, k: int) -> HybridEntry | None:
        """The hybrid entry of ``dtype`` nearest in shape to (m, n, k) (log scale), if any."""
        return _nearest(self.hybrid.get(dtype, ()), (m, n, k))

    def with_hybrid(self, dtype: str, entry: HybridEntry) -> Profile:
        """A copy with ``entry`` added or replacing ``dtype``'s entry of the same shape."""
        kept = tuple(e for e in self.hybrid.get(dtype, ()) if e.shape != entry.shape)
        return replace(self, hybrid={**self.hybrid, dtype: kept + (entry,)})

    def with_entry(self, dtype: str, entry: SizeClassEntry, section: str = CLASSES) -> Profile:
        """A copy with ``entry`` added to ``section``, replacing the entry of the same dtype and class
        (and, among exact shapes, of the same shape)."""
        table = self.table(section)
        same = (lambda e: e.name == entry.name and e.shape == entry.shape) if section == SHAPES else \
            (lambda e: e.name == entry.name)
        kept = tuple(e for e in table.get(dtype, ()) if not same(e))
        return replace(self, **{section: {**table, dtype: kept + (entry,)}})

    def cuda_entry(self, dtype: str, m: int, n: int, k: int) -> CudaEntry | None:
        """The CUDA entry of ``dtype`` nearest in shape to (m, n, k) (log scale), if any."""
        return _nearest(self.cuda.get(dtype, ()), (m, n, k))

    def with_cuda(self, dtype: str, entry: CudaEntry) -> Profile:
        """A copy with ``entry`` added or replacing ``dtype``'s CUDA entry of the same class."""
        kept = tuple(e for e in self.cuda.get(dtype, ()) if e.name != entry.name)
        return replace(self, cuda={**self.cuda, dtype: kept + (entry,)})

    def with_predictor(self, dtype: str, predictor: Predictor) -> Profile:
        """A copy with ``predictor`` as ``dtype``'s."""
        return replace(self, predictors={**self.predictors, dtype: predictor})

    def as_borrowed(self) -> Profile:
        """This profile's entries and predictors, each marked as measured on its device (``measured_on``),
        without what only its device's host measured (hybrid entries): what a tuning run on a related device
        that has no profile of its own starts from, its configurations still verified there before their
        first use (``blas.verified.verified_in``)."""
        def marked(table: dict[str, tuple[SizeClassEntry, ...]]) -> dict[str, tuple[SizeClassEntry, ...]]:
            return {key: tuple(replace(e, measured_on=e.measured_on or self.device_fingerprint) for e in entries)
                    for key, entries in table.items()}

        return replace(self, dtypes=marked(self.dtypes), gemv=marked(self.gemv), shapes=marked(self.shapes),
                       hybrid={}, predictors={key: replace(p, measured_on=p.measured_on or self.device_fingerprint)
                                              for key, p in self.predictors.items()})

    def borrows(self) -> bool:
        """Whether some of this profile's entries or predictors were measured on another device."""
        return any(e.measured_on for section in (self.dtypes, self.gemv, self.shapes) for entries in section.values()
                   for e in entries) or any(p.measured_on for p in self.predictors.values())

    def measured_on(self, config: Params) -> str:
        """The fingerprint of the device ``config`` was measured on: this profile's where one of its own
        entries or predictors holds it (or none does), else that of the borrowed entries holding it."""
        found = [e.measured_on for section in (self.dtypes, self.gemv, self.shapes) for entries in section.values()
                 for e in entries if any(r.config == config for r in e.ranked)]
        found += [p.measured_on for p in self.predictors.values() if config in p.bank]
        borrowed = [origin for origin in found if origin]
        return borrowed[0] if found and len(borrowed) == len(found) else self.device_fingerprint

    def merged_into(self, older: Profile) -> Profile:
        """This profile's entries laid over ``older``'s (what two tuners writing one file keep)."""
        out = replace(self, dtypes=dict(older.dtypes), gemv=dict(older.gemv), hybrid=dict(older.hybrid),
                      shapes=dict(older.shapes), cuda=dict(older.cuda), fma={**older.fma, **self.fma},
                      predictors={**older.predictors, **self.predictors},
                      thresholds=self.thresholds if self.thresholds is not None else older.thresholds)
        for section in (CLASSES, GEMV_CLASSES, SHAPES):
            for letter, entries in self.table(section).items():
                for entry in entries:
                    out = out.with_entry(letter, entry, section)
        for letter, hybrids in self.hybrid.items():
            for hybrid in hybrids:
                out = out.with_hybrid(letter, hybrid)
        for letter, cudas in self.cuda.items():
            for entry in cudas:
                out = out.with_cuda(letter, entry)
        return out

    # ----- JSON -----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        out = {
            "format": FORMAT, "version": VERSION, "autogemm": self.autogemm_version, "created": self.created,
            "device": {"fingerprint": self.device_fingerprint, "name": self.device_name,
                       "vendor": self.device_vendor, "driver_version": self.driver_version,
                       **({"architecture": self.device_architecture} if self.device_architecture else {})},
            "budget": self.budget, "fma": dict(sorted(self.fma.items())), "dtypes": _entries_to_dict(self.dtypes),
        }
        if self.gemv:        # written only once tuned, so profiles without GEMV read as before
            out["gemv"] = _entries_to_dict(self.gemv)
        if self.shapes:
            out["shapes"] = _entries_to_dict(self.shapes)
        if self.predictors:
            out["predictor"] = {letter: _predictor_to_dict(p) for letter, p in sorted(self.predictors.items())}
        if self.hybrid:
            out["hybrid"] = {letter: [{"shape": list(e.shape), "parts": e.parts, "host_parts": e.host_parts,
                                       "config": e.config.to_dict(), "gflops": round(e.gflops, 3),
                                       "evaluations": e.evaluations, "seconds": round(e.seconds, 3)}
                                      for e in entries]
                             for letter, entries in sorted(self.hybrid.items())}
        if self.thresholds is not None:
            out["thresholds"] = self.thresholds.to_dict(changed_only=True)
        if self.cuda:
            out["cuda"] = {letter: [{"class": e.name, "shape": list(e.shape), "config": e.config.to_dict(),
                                     "gflops": round(e.gflops, 3), "opencl_gflops": round(e.opencl_gflops, 3),
                                     "evaluations": e.evaluations, "seconds": round(e.seconds, 3)}
                                    for e in entries]
                           for letter, entries in sorted(self.cuda.items())}
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "profile") -> Profile:
        """Parse and validate; ``ProfileError`` says what is wrong and where."""
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ProfileError(f"{source}: not valid JSON ({exc})") from None
        try:
            return _parse(data)
        except ProfileError as exc:
            raise ProfileError(f"{source}: {exc}") from None


def _entries_to_dict(table: dict[str, tuple[SizeClassEntry, ...]]) -> dict:
    return {letter: [{"class": e.name, "shape": list(e.shape), **({"batch": e.batch} if e.batch > 1 else {}),
                      "strategy": e.strategy,
                      "evaluations": e.evaluations, "seconds": round(e.seconds, 3),
                      **({"measured_on": e.measured_on} if e.measured_on else {}),
                      "ranked": [{"gflops": round(r.gflops, 3), "config": r.config.to_dict(),
                                  **({"split": r.split} if r.split is not None else {})} for r in e.ranked]}
                     for e in entries]
            for letter, entries in sorted(table.items())}


def _predictor_to_dict(predictor: Predictor) -> dict:
    return {"bank": [config.to_dict() for config in predictor.bank], "seconds": round(predictor.seconds, 3),
            "balance": round(predictor.balance, 3), "launch": round(predictor.launch),
            **({"measured_on": predictor.measured_on} if predictor.measured_on else {}),
            "samples": [{"layout": s.layout, "shape": list(s.shape),
                         "rates": [[[split, round(gflops, 3)] for split, gflops in rates] for rates in s.rates]}
                        for s in predictor.samples]}


def _nearest(entries: tuple[Entry, ...], shape: tuple[int, int, int]) -> Entry | None:
    """The entry nearest in shape to ``shape`` (``shape_distance``), or None where there are none."""
    return min(entries, key=lambda e: shape_distance(e.shape, shape)) if entries else None


def shape_distance(a: ArrayLike, b: ArrayLike) -> float | np.ndarray:
    """How far apart two shapes (m, n, k) are: the sum of the distances of their dimensions in log scale
    (for rows of shapes, as numpy arrays, each row's distance)."""
    return np.abs(np.log(np.maximum(a, 1)) - np.log(np.maximum(b, 1))).sum(-1)


# ----- validation -------------------------------------------------------------------------------
def _object(value: object, where: str, keys: set[str], optional: set[str] = frozenset()) -> dict:
    if not isinstance(value, dict):
        raise ProfileError(f"{where} must be a JSON object")
    if not keys <= set(value) <= keys | optional:
        missing, extra = keys - set(value), set(value) - keys - optional
        parts = ([f"missing {', '.join(sorted(missing))}"] if missing else []) + \
                ([f"unexpected {', '.join(sorted(map(str, extra)))}"] if extra else [])
        raise ProfileError(f"{where}: {'; '.join(parts)}")
    return value


def _text(value: object, where: str, limit: int = 200, pattern: re.Pattern | None = None) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise ProfileError(f"{where} must be a string of at most {limit} characters")
    if pattern is not None and not pattern.match(value):
        raise ProfileError(f"{where} {value!r} is not of the expected form")
    return value


def _integer(value: object, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ProfileError(f"{where} must be an integer in {low}..{high}, not {value!r}")
    return value


def _number(value: object, where: str, high: float, digits: int = 3) -> float:
    """A number in 0..``high`` as the profile's writer keeps it (``digits`` decimals), so that a profile
    read writes back as it reads."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not (math.isfinite(value) and 0 <= value <= high):
        raise ProfileError(f"{where} must be a number in 0..{high:g}, not {value!r}")
    return float(round(value, digits))


def _parse(data: object) -> Profile:
    required = {"format", "version", "autogemm", "created", "device", "budget", "fma", "dtypes"}
    top = _object(data, "the profile", required, {"gemv", "hybrid", "shapes", "predictor", "cuda", "thresholds"})
    if top["format"] != FORMAT:
        raise ProfileError(f"format is {top['format']!r}, not {FORMAT!r}")
    version = _integer(top["version"], "version", 1, 10**6)
    if version != VERSION:
        raise ProfileError(f"version {version} is not {VERSION}, the version this autogemm reads"
                           + (" (made by a newer autogemm: upgrade)" if version > VERSION else ""))
    created = _text(top["created"], "created", 40)
    try:
        datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        raise ProfileError(f"created {created!r} is not an ISO 8601 date") from None
    dev = _object(top["device"], "device", {"fingerprint", "name", "vendor", "driver_version"}, {"architecture"})
    fma = top["fma"]
    if not isinstance(fma, dict):
        raise ProfileError("fma must be a JSON object")
    for key, mac in fma.items():
        _text(key, "an fma key", 3, _FMA_KEY)
        if mac not in _MACS:
            raise ProfileError(f"fma[{key}] must be one of {_MACS}, not {mac!r}")
    parsed = _table(top["dtypes"], "dtypes", GEMM, batched=True)
    gemv = _table(top.get("gemv", {}), "gemv", GEMV)
    for letter, entries in gemv.items():
        for entry in entries:
            if not GEMV_CLASS.match(entry.name) or any(r.config.layout.lower() != entry.name[0] for r in entry.ranked):
                raise ProfileError(f"gemv[{letter}]: class {entry.name!r} must be a layout and a shape "
                                   "(n-square, n-long, n-few, n-vectors, t-square, ...) and hold "
                                   "configurations of that layout")
    return Profile(
        device_fingerprint=_text(dev["fingerprint"], "device.fingerprint", 16, _FINGERPRINT),
        device_name=_text(dev["name"], "device.name"), device_vendor=_text(dev["vendor"], "device.vendor"),
        driver_version=_text(dev["driver_version"], "device.driver_version"),
        autogemm_version=_text(top["autogemm"], "autogemm", 40), created=created,
        budget=_text(top["budget"], "budget", 40), fma=dict(fma), dtypes=parsed, gemv=gemv,
        hybrid=_hybrid_table(top.get("hybrid", {})), shapes=_shape_table(top.get("shapes", {})),
        predictors=_predictors(top.get("predictor", {})), cuda=_cuda_table(top.get("cuda", {})),
        device_architecture=_text(dev.get("architecture", ""), "device.architecture", 120),
        thresholds=Thresholds.from_dict(top["thresholds"]) if "thresholds" in top else None)


def _by_dtype(value: object, where: str, parse: Callable[[object, str], Entry], key: Callable[[Entry], object],
              repeated: str, most: int = 16) -> dict[str, tuple[Entry, ...]]:
    """A section of entries by dtype: 1 to ``most`` per dtype, each read by ``parse``, none sharing a
    ``key``."""
    if not isinstance(value, dict):
        raise ProfileError(f"{where} must be a JSON object")
    parsed: dict[str, tuple[Entry, ...]] = {}
    for letter, entries in value.items():
        if letter not in DTYPES:
            raise ProfileError(f"{where}: unknown dtype {letter!r}")
        if not isinstance(entries, list) or not 1 <= len(entries) <= most:
            raise ProfileError(f"{where}[{letter}] must be a list of 1 to {most} entries")
        parsed[letter] = tuple(parse(e, f"{where}[{letter}][{i}]") for i, e in enumerate(entries))
        keys = [key(e) for e in parsed[letter]]
        if len(set(keys)) != len(keys):
            raise ProfileError(f"{where}[{letter}]: {repeated} repeat")
    return parsed


def _table(value: object, where: str, routine: str, batched: bool = False) -> dict[str, tuple[SizeClassEntry, ...]]:
    """The size-class entries by dtype of one routine, their configurations of its families (and, where
    ``batched``, of batch classes among them)."""
    return _by_dtype(value, where, lambda e, at: _entry(e, at, routine, batched=batched), lambda e: e.name,
                     "size classes")


def _shape_table(value: object) -> dict[str, tuple[SizeClassEntry, ...]]:
    """The entries of exact shapes by dtype: each named by its stored layout, of distinct shapes."""
    def parse(entry: object, where: str) -> SizeClassEntry:
        name = entry.get("class") if isinstance(entry, dict) else None
        return _entry(entry, where, routine_of(SHAPES, name) if isinstance(name, str) else GEMM, EXACT_NAME)

    return _by_dtype(value, SHAPES, parse, lambda e: (e.name, e.shape), "shapes", MAX_SHAPES)


def routine_of(section: str, name: str) -> str:
    """The routine (GEMM or GEMV) of the entry named ``name`` in ``section``."""
    return GEMV if section == GEMV_CLASSES or (section == SHAPES and len(name) == 1) else GEMM


def _entry(value: object, where: str, routine: str, name: re.Pattern = _NAME, batched: bool = False
           ) -> SizeClassEntry:
    """A size-class entry; a "batch" only where ``batched`` (GEMM's size classes: exact shapes and GEMV's
    classes are of single products)."""
    e = _object(value, where, {"class", "shape", "strategy", "evaluations", "seconds", "ranked"},
                {"measured_on", "batch"} if batched else {"measured_on"})
    ranked = e["ranked"]
    if not isinstance(ranked, list) or not 1 <= len(ranked) <= MAX_RANKED:
        raise ProfileError(f"{where}.ranked must be a list of 1 to {MAX_RANKED} configurations")
    items = []
    for i, r in enumerate(ranked):
        at = f"{where}.ranked[{i}]"
        r = _object(r, at, {"gflops", "config"}, {"split"})
        split = _integer(r["split"], f"{at}.split", STREAM_K, MAX_SLICES) if "split" in r else None
        items.append(Ranked(_config(r["config"], f"{at}.config", routine),
                            _number(r["gflops"], f"{at}.gflops", MAX_GFLOPS), split))
    return SizeClassEntry(_text(e["class"], f"{where}.class", 32, name), _shape(e["shape"], where), tuple(items),
                          _text(e["strategy"], f"{where}.strategy", 40),
                          _integer(e["evaluations"], f"{where}.evaluations", 0, 10**9),
                          _number(e["seconds"], f"{where}.seconds", 1e8), _measured_on(e, where),
                          _integer(e.get("batch", 1), f"{where}.batch", 1, MAX_BATCH))


def _shape(value: object, where: str) -> tuple[int, int, int]:
    if not isinstance(value, list) or len(value) != 3:
        raise ProfileError(f"{where}.shape must be [m, n, k]")
    return tuple(_integer(x, f"{where}.shape", 1, MAX_DIMENSION) for x in value)  # type: ignore[return-value]


def _config(value: object, where: str, routine: str, backend: str = OPENCL) -> Params:
    try:
        return params_from_dict(value, routine, backend)
    except AutogemmError as exc:
        raise ProfileError(f"{where}: {exc}") from None


def _hybrid_table(value: object) -> dict[str, tuple[HybridEntry, ...]]:
    """The hybrid entries by dtype, of distinct shapes."""
    return _by_dtype(value, "hybrid", _hybrid_entry, lambda e: e.shape, "shapes")


def _hybrid_entry(value: object, where: str) -> HybridEntry:
    e = _object(value, where, {"shape", "parts", "host_parts", "config", "gflops", "evaluations", "seconds"})
    parts = _integer(e["parts"], f"{where}.parts", 1, MAX_PARTS)
    return HybridEntry(_shape(e["shape"], where), parts, _integer(e["host_parts"], f"{where}.host_parts", 0, parts),
                       _config(e["config"], f"{where}.config", GEMM),
                       _number(e["gflops"], f"{where}.gflops", MAX_GFLOPS),
                       _integer(e["evaluations"], f"{where}.evaluations", 0, 10**9),
                       _number(e["seconds"], f"{where}.seconds", 1e8))


def _cuda_table(value: object) -> dict[str, tuple[CudaEntry, ...]]:
    """The CUDA path's entries by dtype, of distinct classes, each of a CUDA family computing that dtype."""
    table = _by_dtype(value, "cuda", _cuda_entry, lambda e: e.name, "size classes")
    for letter, entries in table.items():
        for entry in entries:
            why = entry.config.dtype_problem(DTYPES[letter])
            if why:
                raise ProfileError(f"cuda[{letter}] class {entry.name}: {why}")
    return table


def _cuda_entry(value: object, where: str) -> CudaEntry:
    e = _object(value, where, {"class", "shape", "config", "gflops", "opencl_gflops", "evaluations", "seconds"})
    return CudaEntry(_text(e["class"], f"{where}.class", 32, _NAME), _shape(e["shape"], where),
                     _config(e["config"], f"{where}.config", GEMM, CUDA),
                     _number(e["gflops"], f"{where}.gflops", MAX_GFLOPS),
                     _number(e["opencl_gflops"], f"{where}.opencl_gflops", MAX_GFLOPS),
                     _integer(e["evaluations"], f"{where}.evaluations", 0, 10**9),
                     _number(e["seconds"], f"{where}.seconds", 1e8))


def _predictors(value: object) -> dict[str, Predictor]:
    """The predictors by dtype, each checked field by field."""
    if not isinstance(value, dict):
        raise ProfileError("predictor must be a JSON object")
    out = {}
    for letter, item in value.items():
        if letter not in DTYPES:
            raise ProfileError(f"predictor: unknown dtype {letter!r}")
        out[letter] = _predictor(item, f"predictor[{letter}]")
    return out


def _predictor(value: object, where: str) -> Predictor:
    p = _object(value, where, {"bank", "samples", "seconds", "balance"}, {"launch", "measured_on"})
    bank, samples = p["bank"], p["samples"]
    if not isinstance(bank, list) or not 1 <= len(bank) <= MAX_BANK:
        raise ProfileError(f"{where}.bank must be a list of 1 to {MAX_BANK} configurations")
    configs = tuple(_config(c, f"{where}.bank[{i}]", GEMM) for i, c in enumerate(bank))
    if len(set(configs)) != len(configs):
        raise ProfileError(f"{where}.bank: configurations repeat")
    if not isinstance(samples, list) or not 1 <= len(samples) <= MAX_SAMPLES:
        raise ProfileError(f"{where}.samples must be a list of 1 to {MAX_SAMPLES} samples")
    parsed = tuple(_sample(s, f"{where}.samples[{i}]", len(configs)) for i, s in enumerate(samples))
    return Predictor(configs, parsed, _number(p["seconds"], f"{where}.seconds", 1e8),
                     _number(p["balance"], f"{where}.balance", 1e4),
                     _number(p.get("launch", 0), f"{where}.launch", 1e15, digits=0), _measured_on(p, where))


def _measured_on(item: dict, where: str) -> str:
    """An entry's or a predictor's ``measured_on``: a device fingerprint, or '' where it is not given."""
    return _text(item["measured_on"], f"{where}.measured_on", 16, _FINGERPRINT) if "measured_on" in item else ""


def _sample(value: object, where: str, bank: int) -> Sample:
    s = _object(value, where, {"layout", "shape", "rates"})
    rates = s["rates"]
    if not isinstance(rates, list) or len(rates) != bank:
        raise ProfileError(f"{where}.rates must be a list of {bank} lists, one per kernel of the bank")
    parsed = []
    for i, timed in enumerate(rates):
        at = f"{where}.rates[{i}]"
        if not isinstance(timed, list) or len(timed) > MAX_SLICES + 1:
            raise ProfileError(f"{at} must be a list of at most {MAX_SLICES + 1} [split, gflops] pairs")
        pairs = []
        for j, pair in enumerate(timed):
            if not isinstance(pair, list) or len(pair) != 2:
                raise ProfileError(f"{at}[{j}] must be [split, gflops]")
            pairs.append((_integer(pair[0], f"{at}[{j}] split", STREAM_K, MAX_SLICES),
                          _number(pair[1], f"{at}[{j}] gflops", MAX_GFLOPS)))
        if len({split for split, _ in pairs}) != len(pairs):
            raise ProfileError(f"{at}: splits repeat")
        parsed.append(tuple(pairs))
    return Sample(_text(s["layout"], f"{where}.layout", 2, SHAPE_LAYOUT), _shape(s["shape"], where), tuple(parsed))
