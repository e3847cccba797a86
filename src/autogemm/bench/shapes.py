"""The problems a benchmark runs: a product's shape, square sweeps and shapes files (the suites shipped
with autogemm are in ``suites``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ArgumentError

LAYOUTS = ("NN", "NT", "TN", "TT")


@dataclass(frozen=True)
class Shape:
    """C (m x n) = op(A) (m x k) op(B) (k x n), with op given by the layout letters."""

    m: int
    n: int
    k: int
    layout: str = "NN"
    name: str = ""            # what the problem is in an application ("q_proj T=8"), where it is one
    held_out: bool = False    # kept out of every tuning run of its suite, and reported apart

    @property
    def trans_a(self) -> str:
        return self.layout[0]

    @property
    def trans_b(self) -> str:
        return self.layout[1]

    @property
    def square(self) -> bool:
        return self.m == self.n == self.k

    @property
    def label(self) -> str:
        return f"{self.m}x{self.n}x{self.k} {self.layout}" + (f" {self.name}" if self.name else "")


_RANGE = re.compile(r"^(\d+):(\d+)(?::(\d+|x2))?$")


def square_sweep(spec: str, layout: str = "NN") -> list[Shape]:
    """Square problems from ``1024,2048`` (a list), ``256:4096`` (doubling), ``256:4096:256`` (a step)
    or ``256:4096:x2`` (doubling)."""
    sizes: list[int] = []
    for term in (t.strip() for t in spec.split(",") if t.strip()):
        match = _RANGE.match(term)
        if match:
            start, stop, step = int(match[1]), int(match[2]), match[3] or "x2"
            if start < 1 or stop < start or step == "0":
                raise ArgumentError(f"size range {term!r} must run upwards from 1")
            size = start
            while size <= stop:
                sizes.append(size)
                size = size * 2 if step == "x2" else size + int(step)
        elif term.isdigit() and int(term) > 0:
            sizes.append(int(term))
        else:
            raise ArgumentError(f"size {term!r}: expected N, START:STOP, START:STOP:STEP or START:STOP:x2")
    if not sizes:
        raise ArgumentError("no sizes given")
    return [Shape(s, s, s, layout) for s in sizes]


def read_shapes(path: Path) -> list[Shape]:
    """Shapes from a text file: one ``M N K [LAYOUT]`` per line (LAYOUT such as NT; NN by default), a
    ``#`` comment after a shape its name in the tables (``4096 14336 128 TN # down_proj dW``), blank lines
    and lines of comment alone ignored."""
    shapes = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        text, _, comment = line.partition("#")
        fields = text.split()
        if not fields:
            continue
        layout = fields[3].upper() if len(fields) == 4 else "NN"
        if len(fields) not in (3, 4) or not all(f.isdigit() for f in fields[:3]) or layout not in LAYOUTS:
            raise ArgumentError(f"{path}:{number}: expected 'M N K [LAYOUT]' with LAYOUT one of "
                                f"{', '.join(LAYOUTS)}, not {line.strip()!r}")
        m, n, k = (int(f) for f in fields[:3])
        if min(m, n, k) < 1:
            raise ArgumentError(f"{path}:{number}: sizes must be at least 1")
        shapes.append(Shape(m, n, k, layout, comment.strip()))
    if not shapes:
        raise ArgumentError(f"{path} holds no shapes")
    return shapes


def write_shapes(shapes: list[Shape], path: Path) -> None:
    """Write ``shapes`` as ``read_shapes`` (and ``tune --shapes``) reads them, a name as its comment."""
    lines = [f"{s.m} {s.n} {s.k} {s.layout}" + (f"  # {s.name}" if s.name else "") for s in shapes]
    Path(path).write_text("\n".join(lines) + "\n")
