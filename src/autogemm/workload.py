"""A program's workload: the shapes of the products it runs, recorded as it runs and read back to tune for
exactly them (``autogemm tune --shapes FILE``).

With ``AUTOGEMM_RECORD=FILE`` set, every GEMM (``gemm``, ``matmul``, ``gemm_batched``) and GEMV the
program runs is counted by shape, as the kernels see it: the routine, the dtype, how A and B are stored
(``layout``: N as they are, T transposed, in row-major terms; GEMV's: how A is read), M, N, K (GEMV's A as
M x N, K 1) and the batch. A shape is appended to FILE, one JSON object a line, when the program first
runs it, and the rest of its count when the program ends; several processes may append to one file at
once (each line is written whole, under a file lock). A file written by hand may also hold lines of
``M N K [LAYOUT]`` (GEMM, layout NN by default, the dtype given where it is read).

Reading a file back validates every line as data from outside: a line that is not one of these forms, or
holds a value out of range, is reported and skipped, never executed."""

from __future__ import annotations

import atexit
import json
import os
import re
import threading
import warnings
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from .cache_dir import file_lock
from .dtypes import DTYPES
from .errors import ArgumentError

#: The environment variable naming the file a program records its shapes to.
RECORD_ENV = "AUTOGEMM_RECORD"
ROUTINES = ("gemm", "gemv")
MAX_DIMENSION = 2**31 - 1
_LAYOUT = {"gemm": re.compile(r"^[NT]{2}$"), "gemv": re.compile(r"^[NT]$")}
_FIELDS = ("routine", "dtype", "layout", "m", "n", "k", "batch", "count")


@dataclass(frozen=True)
class ShapeRecord:
    """One shape of a workload and how many times it ran."""

    routine: str
    dtype: str
    layout: str
    m: int
    n: int
    k: int
    batch: int = 1
    count: int = 1

    @property
    def key(self) -> tuple:
        """Everything but the count: what makes two records one shape."""
        return self.routine, self.dtype, self.layout, self.m, self.n, self.k, self.batch

    def describe(self) -> str:
        batch = f" x{self.batch}" if self.batch > 1 else ""
        return f"{self.dtype}{self.routine} {self.layout} {self.m}x{self.n}x{self.k}{batch}"


def validated(data: object) -> ShapeRecord:
    """A record from the JSON object of a line, every field checked; ``ArgumentError`` says what is wrong."""
    if not isinstance(data, dict) or set(data) != set(_FIELDS):
        raise ArgumentError(f"a shape record is a JSON object with the fields {', '.join(_FIELDS)}")
    routine, dtype, layout = data["routine"], data["dtype"], data["layout"]
    if routine not in ROUTINES:
        raise ArgumentError(f"routine must be one of {', '.join(ROUTINES)}, not {routine!r}")
    if dtype not in DTYPES:
        raise ArgumentError(f"unknown dtype {dtype!r}")
    if not isinstance(layout, str) or not _LAYOUT[routine].match(layout):
        raise ArgumentError(f"layout {layout!r} is not one of {routine}'s")
    numbers = {name: data[name] for name in ("m", "n", "k", "batch", "count")}
    for name, value in numbers.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIMENSION:
            raise ArgumentError(f"{name} must be an integer from 1 to {MAX_DIMENSION}, not {value!r}")
    if routine == "gemv" and (numbers["k"] != 1 or numbers["batch"] != 1):
        raise ArgumentError("a GEMV's k and batch are 1")
    return ShapeRecord(routine, dtype, layout, **numbers)


def read_workload(path: Path, dtypes: tuple[str, ...] = ("s",)) -> tuple[list[ShapeRecord], list[str]]:
    """The shapes of a workload file, each once with its counts added up (in the order first seen), and
    what was skipped (a message per line that failed validation). Hand-written ``M N K [LAYOUT]`` lines
    stand for a GEMM of each of ``dtypes``; ``ArgumentError`` when the file cannot be read or holds no
    shape at all."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ArgumentError(f"cannot read {path}: {exc}") from None
    counts: Counter = Counter()
    first: dict[tuple, ShapeRecord] = {}
    skipped = []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            records = [validated(json.loads(text))] if text.startswith("{") else _hand_written(text, dtypes)
        except (ArgumentError, ValueError, RecursionError) as exc:
            skipped.append(f"{path}:{number}: {str(exc)[:200]}")
            continue
        for record in records:
            first.setdefault(record.key, record)
            counts[record.key] += record.count
    if not first:
        raise ArgumentError(f"{path} holds no shape" + (f" ({len(skipped)} lines skipped)" if skipped else ""))
    return [ShapeRecord(*key, count=counts[key]) for key in first], skipped


def _hand_written(text: str, dtypes: tuple[str, ...]) -> list[ShapeRecord]:
    fields = text.split()
    layout = fields[3].upper() if len(fields) == 4 else "NN"
    if len(fields) not in (3, 4) or not all(f.isascii() and f.isdigit() for f in fields[:3]):
        raise ArgumentError(f"expected 'M N K [LAYOUT]' or a JSON shape record, not {text[:80]!r}")
    m, n, k = (int(f) for f in fields[:3])
    return [validated({"routine": "gemm", "dtype": dt, "layout": layout, "m": m, "n": n, "k": k, "batch": 1,
                       "count": 1}) for dt in dtypes]


class Recorder:
    """Counts a program's shapes and appends them to ``path`` (see the module's doc); ``record`` is safe
    from several threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.lock = file_lock(self.path)
        self._counts: Counter = Counter()
        self._written: Counter = Counter()
        self._threads = threading.Lock()
        self.failed: str | None = None   # why recording stopped (a write failed), or None
        self._append([])                 # the file is made (or found writable) now, not at the first call

    def record(self, routine: str, dtype: str, layout: str, m: int, n: int, k: int, batch: int = 1) -> None:
        key = (routine, dtype, layout, m, n, k, batch)
        with self._threads:
            self._counts[key] += 1
            first = self._counts[key] == 1
            if first:
                self._written[key] = 1
        if first:
            self._keep([ShapeRecord(*key)])

    def flush(self) -> None:
        """Append the counts not written yet (at the program's end)."""
        with self._threads:
            rest = [ShapeRecord(*key, count=count - self._written[key])
                    for key, count in self._counts.items() if count > self._written[key]]
            self._written.update({record.key: record.count for record in rest})
        self._keep(rest)

    def _keep(self, records: list[ShapeRecord]) -> None:
        """``_append``, unless a write failed before: a diagnostic recorder never fails a product. The
        first failure (a full disk, a file made read-only) stops it with one warning."""
        if self.failed is not None:
            return
        try:
            self._append(records)
        except OSError as exc:
            self.failed = exc.strerror or str(exc)
            warnings.warn(f"{RECORD_ENV}: cannot write {self.path} ({self.failed}); shapes are no longer recorded",
                          RuntimeWarning, stacklevel=3)

    def _append(self, records: list[ShapeRecord]) -> None:
        text = "".join(json.dumps(asdict(r), separators=(",", ":")) + "\n" for r in records)
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(text)


def _from_environment() -> Recorder | None:
    """The recorder ``AUTOGEMM_RECORD`` asks for, flushed at exit; None where it is not set."""
    path = os.environ.get(RECORD_ENV)
    if not path:
        return None
    try:
        recorder = Recorder(Path(path))
    except OSError as exc:
        raise ArgumentError(f"{RECORD_ENV}={path!r} cannot be written: {exc.strerror or exc}") from None
    atexit.register(recorder.flush)
    return recorder


#: The recorder of this process (None unless ``AUTOGEMM_RECORD`` is set when autogemm is imported).
RECORDER = _from_environment()
