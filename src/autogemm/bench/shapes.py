"""The problems a benchmark runs: square sweeps, shapes files, and the suites shipped with autogemm."""

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


#: The suite (``autogemm bench --suite``): square powers of two, sizes that are not multiples of any tile,
#: and skinny or deep products, each in three layouts.
SUITE_SQUARES = (256, 512, 1024, 2048, 4096, 8192)
SUITE_ODD = (1000, 1023, 1025, 3000, 4097)
SUITE_SKINNY = ((8192, 64, 8192), (64, 8192, 8192), (4096, 4096, 64), (128, 128, 65536))
SUITE_LAYOUTS = ("NN", "NT", "TN")


def suite() -> list[Shape]:
    sizes = [(s, s, s) for s in SUITE_SQUARES + SUITE_ODD] + list(SUITE_SKINNY)
    return [Shape(m, n, k, layout) for m, n, k in sizes for layout in SUITE_LAYOUTS]


#: The linear layers of a Llama-3-8B class model (hidden 4096, keys and values 1024, MLP 14336, vocabulary
#: 128256) and of BERT-large (hidden 1024, MLP 4096): (name, outputs, inputs) of each distinct weight.
LLAMA_LAYERS = (("q_proj", 4096, 4096), ("kv_proj", 1024, 4096), ("up_proj", 14336, 4096),
                ("down_proj", 4096, 14336), ("lm_head", 128256, 4096))
BERT_LAYERS = (("bert_attn", 1024, 1024), ("bert_up", 4096, 1024), ("bert_down", 1024, 4096))
LLAMA_TOKENS = (1, 8, 32, 128, 512, 2048, 8192)
BERT_TOKENS = (128, 2048)


def llm_suite() -> list[Shape]:
    """The products of those layers at each number of tokens T: the forward product y = x W^T (x of T x
    inputs, W of outputs x inputs: layout NT) and the weight gradient dW = dy^T x (outputs x inputs, a
    reduction over T: layout TN)."""
    shapes = []
    for layers, tokens in ((LLAMA_LAYERS, LLAMA_TOKENS), (BERT_LAYERS, BERT_TOKENS)):
        for t in tokens:
            for name, outputs, inputs in layers:
                shapes.append(Shape(t, outputs, inputs, "NT", f"{name} T={t}"))
                shapes.append(Shape(outputs, inputs, t, "TN", f"{name} dW T={t}"))
    return shapes


#: ``autogemm bench --suite NAME``: the problems of each suite shipped.
SUITES = {"standard": suite, "llm": llm_suite}


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
