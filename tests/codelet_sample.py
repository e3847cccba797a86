"""A seeded sample of (configuration, dtype, problem) cases covering the whole simt space: every
codelet, every value of every parameter, every dtype; and across the cases every trans pair, odd sizes
in each dimension, both edge modes, offsets and wide leading dimensions, and alpha/beta including beta=0
over a NaN-filled C."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from autogemm.codelets.simt import SimtParams, check
from autogemm.codelets.simt.params import (
    ASSIGNMENTS,
    LAYOUTS,
    MACS,
    PORTABLE_OPTIONS,
    TILE_K_SIZES,
    TILE_SIZES,
    VECTOR_WIDTHS,
    WARP_COLS,
    WORK_GROUP_DIMS,
    WORK_GROUP_SIZES,
)
from autogemm.dtypes import DTYPES

SEED = 20261122
SIZES = (1, 7, 33, 127, 50, 64)
TRANS = tuple(a + b for a, b in itertools.product("NTC", repeat=2))
SCALARS = ((1.0, 0.0), (0.5 - 0.25j, 0.0), (-1.5, 0.75), (2.0, 1.0 + 0.5j))


@dataclass(frozen=True)
class Case:
    params: SimtParams
    dtype: str
    m: int
    n: int
    k: int
    trans: str
    alpha: complex
    beta: complex
    edge: str
    extra_ld: int
    offset: int

    @property
    def id(self) -> str:
        return f"{self.dtype}-{self.trans}-{self.m}x{self.n}x{self.k}-{self.edge}"


def axes(device) -> dict[str, list]:
    """Every value of every simt parameter (the whole codelet space, not the tuner's pruned one), with
    the work-group as one axis of (rows, cols) shapes of 32 to 256 work-items and the build option sets
    worth trying on ``device``."""
    shapes = [(r, c) for r in WORK_GROUP_DIMS for c in WORK_GROUP_DIMS if r * c in WORK_GROUP_SIZES]
    options: list[tuple[str, ...]] = [()] + [(o,) for o in PORTABLE_OPTIONS]
    if device.is_nvidia:
        options += [(f"-cl-nv-maxrregcount={n}",) for n in (128, 255)]
    return {
        "layout": list(LAYOUTS), "assignment": list(ASSIGNMENTS), "shape": shapes,
        "tile_rows": list(TILE_SIZES), "tile_cols": list(TILE_SIZES), "tile_k": list(TILE_K_SIZES),
        "vector_width": list(VECTOR_WIDTHS), "local_a": [True, False], "local_b": [True, False],
        "image_a": [False, True], "image_b": [False, True], "double_buffer": [False, True],
        "local_pad": [False, True], "unroll_k": [True, False], "mac": list(MACS), "warp_cols": list(WARP_COLS),
        "build_options": options,
    }


def make(point: dict) -> SimtParams:
    """The configuration of a point of ``axes``."""
    values = dict(point)
    values["wg_rows"], values["wg_cols"] = values.pop("shape")
    return SimtParams(**values)


def draw(device, dtype: str, rng: random.Random, fixed: dict) -> SimtParams | None:
    """A configuration valid on ``device`` for ``dtype``, each parameter drawn uniformly except ``fixed``
    (None when none is found: some values fit only some dtypes)."""
    axes_of_device = axes(device)
    for _ in range(20000):
        point = {name: rng.choice(values) for name, values in axes_of_device.items()}
        point.update(fixed)
        params = make(point)
        if check(params, device, dtype) is None:
            return params
    return None


def requirements(device) -> list[dict]:
    """One fixed assignment per parameter value and per codelet (layout x assignment)."""
    needs = [{name: value} for name, values in axes(device).items() for value in values]
    needs += [{"layout": lay, "assignment": asg} for lay in ("NN", "NT", "TN") for asg in ("consecutive", "offset")]
    return needs


def build_sample(device, count: int = 180, seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    letters = [d for d in "sdcz" if device.fp64 or not DTYPES[d].needs_fp64]
    pairs: dict[tuple[SimtParams, str], None] = {}
    for i, fixed in enumerate(requirements(device)):
        dtype = letters[i % len(letters)]
        for attempt in range(len(letters)):       # some values fit only some dtypes (images, registers)
            params = draw(device, letters[(i + attempt) % len(letters)], rng, fixed)
            if params is not None:
                pairs[(params, letters[(i + attempt) % len(letters)])] = None
                break
    i = 0
    while len(pairs) < count:
        dtype = letters[i % len(letters)]
        params = draw(device, dtype, rng, {})
        if params is not None:
            pairs[(params, dtype)] = None
        i += 1
    cases = []
    for i, (params, dtype) in enumerate(pairs):
        alpha, beta = SCALARS[i % len(SCALARS)]
        if not DTYPES[dtype].is_complex:
            alpha, beta = (x.real if isinstance(x, complex) else x for x in (alpha, beta))
        cases.append(Case(
            params=params, dtype=dtype,
            m=SIZES[i % len(SIZES)], n=SIZES[(i // 2 + 1) % len(SIZES)], k=SIZES[(i // 3 + 2) % len(SIZES)],
            trans=TRANS[i % len(TRANS)], alpha=alpha, beta=beta,
            edge=("guard", "pad")[i % 2], extra_ld=(0, 3)[(i // 2) % 2], offset=(0, 5)[(i // 4) % 2],
        ))
    return cases
