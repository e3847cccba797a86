"""``SearchSpace``: the points a search may visit, as a product of named knobs with a validity test.

Each family's ``space`` module builds one per device and dtype. A point is a tuple of value indices, one
per knob (compact and hashable); ``config`` turns it into the configuration an evaluator measures.
Searches see only knobs, points and ``valid``, so they work the same on every family's space and on the
synthetic spaces the tests use."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

T = TypeVar("T")
Point = tuple[int, ...]


@dataclass(frozen=True)
class Knob:
    """A named axis of a space. ``ordered`` knobs have values in a meaningful order (sizes), which the
    exponential-stride search and the surrogate model use."""

    name: str
    values: tuple
    ordered: bool = False


class SearchSpace(Generic[T]):
    """The valid points of a product of knobs."""

    def __init__(self, knobs: Sequence[Knob], make: Callable[[dict], T],
                 reject: Callable[[T], str | None] = lambda _: None, *, family: str) -> None:
        self.family = family          # the name of the kernel family whose configurations ``make`` builds
        self.knobs = tuple(knobs)
        self.names = tuple(k.name for k in self.knobs)
        self._make = make
        self._reject = reject
        self._valid: dict[Point, bool] = {}
        self._points: list[Point] | None = None
        self._indexes: dict[Callable[[T], Hashable], dict[Hashable, Point]] = {}

    # ----- points and configurations -------------------------------------------------------------
    def values(self, point: Point) -> dict:
        """The knob values of ``point`` by name."""
        return {k.name: k.values[i] for k, i in zip(self.knobs, point)}

    def config(self, point: Point) -> T:
        return self._make(self.values(point))

    def valid(self, point: Point) -> bool:
        ok = self._valid.get(point)
        if ok is None:
            ok = self._valid[point] = self._reject(self.config(point)) is None
        return ok

    def points(self) -> list[Point]:
        """Every valid point, in product order (computed once)."""
        if self._points is None:
            self._points = self.valid_between(0, self.product_size)
        return self._points

    @property
    def product_size(self) -> int:
        """How many points the product of the knobs holds, valid or not."""
        return math.prod(len(k.values) for k in self.knobs)

    def valid_between(self, start: int, stop: int) -> list[Point]:
        """The valid points among the product's ``start``-th to ``stop``-th, in product order: a part of
        ``points``' work, so that a large space can be enumerated in parts, elsewhere."""
        ranges = [range(len(k.values)) for k in self.knobs]
        return [p for p in itertools.islice(itertools.product(*ranges), start, stop) if self.valid(p)]

    def take_points(self, points: list[Point]) -> None:
        """Take ``points`` as this space's valid points: all of them, in product order, as the parts of
        ``valid_between`` found them."""
        self._points = list(points)
        self._valid.update(dict.fromkeys(self._points, True))

    def __len__(self) -> int:
        return len(self.points())

    def index(self, key: Callable[[T], Hashable]) -> dict[Hashable, Point]:
        """The first valid point (in product order) of each ``key`` of a configuration, computed once per
        key function: finding configurations in a large space is a lookup, not a pass over it."""
        if key not in self._indexes:
            found: dict[Hashable, Point] = {}
            for point in self.points():
                found.setdefault(key(self.config(point)), point)
            self._indexes[key] = found
        return self._indexes[key]

    def point_of(self, values: dict) -> Point | None:
        """The point with these knob values, or None when a value is not on its knob."""
        try:
            return tuple(k.values.index(values[k.name]) for k in self.knobs)
        except (KeyError, ValueError):
            return None

    def knob(self, name: str) -> Knob:
        return self.knobs[self.names.index(name)]

    def restricted(self, keep: Callable[[T], bool], why: str) -> SearchSpace[T]:
        """The same knobs with only the points whose configurations ``keep`` accepts valid (the others
        rejected for ``why``)."""
        def reject(config: T) -> str | None:
            return self._reject(config) or (None if keep(config) else why)

        return SearchSpace(self.knobs, self._make, reject, family=self.family)

    # ----- moving around -------------------------------------------------------------------------
    def with_values(self, point: Point, changes: dict[str, int]) -> Point:
        """``point`` with the knobs named in ``changes`` set to the given value indices."""
        out = list(point)
        for name, index in changes.items():
            out[self.names.index(name)] = index
        return tuple(out)

    def sweep(self, point: Point, names: Sequence[str]) -> Iterator[Point]:
        """The valid points that differ from ``point`` only in the knobs ``names`` (``point`` included
        when valid), every combination of their values."""
        ranges = [range(len(self.knob(n).values)) for n in names]
        for combo in itertools.product(*ranges):
            candidate = self.with_values(point, dict(zip(names, combo)))
            if self.valid(candidate):
                yield candidate

    def neighbours(self, point: Point) -> list[Point]:
        """Valid points one knob away: any other value of an unordered knob, the next value either
        side on an ordered one."""
        out = []
        for axis, knob in enumerate(self.knobs):
            if knob.ordered:
                choices = [point[axis] - 1, point[axis] + 1]
            else:
                choices = list(range(len(knob.values)))
            for index in choices:
                if index == point[axis] or not 0 <= index < len(knob.values):
                    continue
                candidate = point[:axis] + (index,) + point[axis + 1:]
                if self.valid(candidate):
                    out.append(candidate)
        return out

    def shuffled(self, rng: random.Random) -> list[Point]:
        order = list(self.points())
        rng.shuffle(order)
        return order

    # ----- for models ----------------------------------------------------------------------------
    def features(self, points: Sequence[Point]) -> np.ndarray:
        """A numeric row per point: the position on each ordered knob (0 to 1) and a one-hot of each
        unordered knob."""
        idx = np.asarray(points, dtype=np.int64).reshape(len(points), len(self.knobs))
        columns = []
        for axis, knob in enumerate(self.knobs):
            count = len(knob.values)
            if knob.ordered:
                columns.append(idx[:, axis:axis + 1] / max(1, count - 1))
            else:
                columns.append((idx[:, axis:axis + 1] == np.arange(count)).astype(float))
        return np.hstack(columns) if columns else np.zeros((len(points), 0))

    def describe_point(self, point: Point) -> str:
        return " ".join(f"{k}={v}" for k, v in self.values(point).items())
