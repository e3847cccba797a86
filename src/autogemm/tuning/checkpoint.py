"""``Checkpoint``: every measurement of a (device, dtype, problem size) on disk the moment it is taken.

A JSON-lines file: a header line naming what was measured (and the device's facts, so that a search can
be replayed on its records elsewhere: ``evaluation.simulated``), then one ``Record`` per line, appended
and flushed to disk under a file lock. Reading it back skips a line cut short by a kill and any line that
fails validation, so an interrupted run resumes with everything it finished. Measurements do not depend on
the strategy that asked for them, so every strategy shares them."""

from __future__ import annotations

import gzip
import json
import os
from contextlib import nullcontext
from pathlib import Path

from ..cache_dir import cache_subdir, file_lock, open_for_appending, read_regular
from ..dtypes import Dtype
from ..errors import AutogemmError, TuningError
from ..runtime.opencl.device import Device
from .records import Record, config_key

FORMAT = "autogemm-checkpoint"
VERSION = 1
#: The header's keys that say what was measured: a file whose header differs in one of them is another
#: problem's (the device's facts ride along for replays, and do not count).
IDENTITY = ("format", "version", "device", "device_name", "dtype", "shape", "routine", "batch")


class Checkpoint:
    """The measurements of one device, dtype and problem shape, as a dict from config key to record."""

    def __init__(self, path: Path, header: dict, writable: bool = True) -> None:
        self.path = path
        self.header = header
        # a checkpoint only read (a replay) takes no lock: it leaves no lock file beside a file it only reads
        self.lock = file_lock(path) if writable else nullcontext()
        self.writable = writable
        self.records: dict[str, Record] = {}
        self.skipped = 0
        self._load()

    @classmethod
    def for_problem(cls, device: Device, dtype: Dtype, shape: tuple[int, int, int],
                    directory: Path | None = None, routine: str = "gemm", layout: str | None = None,
                    batch: int = 1) -> Checkpoint:
        """The checkpoint of a GEMM of ``shape`` (m, n, k) with A and B stored as ``layout`` says (None:
        NN), or of a GEMV (``routine`` 'gemv') of that layout on A of (m, n), named in the header and the
        file name ('gemv-n' for GEMV of layout N, 'gemm-nt' for a GEMM of layout NT; a strided batch of
        GEMMs ends in its count, '-b1024')."""
        m, n, k = shape
        folder = directory or cache_subdir("checkpoints")
        header = {"format": FORMAT, "version": VERSION, "device": device.fingerprint,
                  "device_name": device.name.strip(), "dtype": dtype.key, "shape": [m, n, k]}
        prefix = ""
        if routine != "gemm" or layout not in (None, "NN"):  # NN GEMM's names stay those made before
            named = f"{routine}-{layout.lower()}"
            header["routine"], prefix = named, f"{named}-"
        suffix = ""
        if batch > 1:
            header["batch"], suffix = batch, f"-b{batch}"
        header["device_facts"] = device.facts()
        return cls(folder / f"{prefix}{device.fingerprint}-{dtype.key}-{m}x{n}x{k}{suffix}.jsonl", header)

    @classmethod
    def read(cls, path: Path) -> Checkpoint:
        """A checkpoint file as it is, or gzip-compressed (``.gz``), to replay searches on its records;
        ``TuningError`` when it is not one."""
        try:
            with (gzip.open if Path(path).suffix == ".gz" else open)(path, "rb") as f:
                header = _header_of(f.readline())
        except (OSError, EOFError) as exc:
            raise TuningError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
        if header is None or header.get("format") != FORMAT or header.get("version") != VERSION:
            raise TuningError(f"{path} is not an autogemm checkpoint (format {FORMAT}, version {VERSION})")
        return cls(Path(path), header, writable=False)

    @property
    def problem(self) -> tuple[str, str | None]:
        """The routine measured ('gemm' or 'gemv') and its layout (None: a GEMM stored NN)."""
        routine = self.header.get("routine")
        if not isinstance(routine, str) or routine.count("-") != 1:
            return "gemm", None
        name, layout = routine.split("-")
        return name, layout.upper()

    def _load(self) -> None:
        if not self.path.exists():
            return
        with self.lock:
            # read as bytes: a line of invalid UTF-8 (a damaged or planted file) is skipped like any other
            # line that fails validation, not the end of the run
            raw = read_regular(self.path)          # (no FIFO, no link: ``cache_dir.read_regular``)
            lines = (gzip.decompress(raw) if self.path.suffix == ".gz" else raw).splitlines()
            if not lines or not _same_problem(_header_of(lines[0]), self.header):
                self.skipped = len(lines)
                self.path.unlink()   # a file of another format or problem: start over
                return
        for line in lines[1:]:
            try:
                record = Record.from_dict(json.loads(line))
            except (ValueError, AutogemmError):
                self.skipped += 1
                continue
            self._keep(record)

    def _keep(self, record: Record) -> None:
        old = self.records.get(record.key)
        if old is None or record.runs >= old.runs:
            self.records[record.key] = record

    def get(self, key: str, min_runs: int = 0) -> Record | None:
        """The stored record for ``key`` if it was timed with at least ``min_runs`` runs (a probe does
        not stand in for a full measurement; a failure stands for anything)."""
        record = self.records.get(key)
        if record is None or (record.ok and record.runs < min_runs):
            return None
        return record

    def add(self, record: Record) -> None:
        """Keep ``record`` and append it to the file, on disk before this returns."""
        if not self.writable:
            raise TuningError(f"{self.path} was opened to be read only")
        self._keep(record)
        line = json.dumps(record.to_dict(), separators=(",", ":")) + "\n"
        with self.lock:
            fresh = not self.path.exists() or self.path.stat().st_size == 0
            with open_for_appending(self.path) as f:
                if fresh:
                    f.write(json.dumps(self.header) + "\n")
                f.write(line)
                f.flush()
                os.fsync(f.fileno())

    def clear(self) -> None:
        """Forget every measurement (``autogemm tune --fresh``)."""
        if not self.writable:
            raise TuningError(f"{self.path} was opened to be read only")
        with self.lock:
            self.path.unlink(missing_ok=True)
        self.records.clear()

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def __len__(self) -> int:
        return len(self.records)


def _same_problem(found: dict | None, wanted: dict) -> bool:
    return found is not None and all(found.get(key) == wanted.get(key) for key in IDENTITY)


def _header_of(line: str | bytes) -> dict | None:
    try:
        data = json.loads(line)         # (bytes are decoded as UTF-8: invalid ones raise a ValueError)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


__all__ = ["Checkpoint", "config_key"]
