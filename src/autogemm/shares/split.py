"""How the rows of C are shared among several targets (GPUs, and the host's own BLAS): RaijinCL's hybrid
split, M rows in P parts with p_g of them on the GPU and the rest on the CPU, for any number of targets."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ArgumentError

#: The seed's number of parts: a balance between the split's granularity and the time to tune it.
DEFAULT_PARTS = 8
#: Share boundaries fall on multiples of this many rows where C is tall enough: whole tiles on the GPUs.
ROW_ALIGNMENT = 64


@dataclass(frozen=True)
class Split:
    """``parts`` (P) equal parts of C's rows; target i computes ``shares[i]`` of them, the targets in
    order down the rows (with two targets, GPU then host, ``shares`` is (p_g, P - p_g))."""

    parts: int
    shares: tuple[int, ...]

    def __post_init__(self) -> None:
        if isinstance(self.parts, bool) or not isinstance(self.parts, int) or self.parts < 1:
            raise ArgumentError(f"parts must be a positive integer, not {self.parts!r}")
        if not self.shares or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in self.shares):
            raise ArgumentError(f"shares must be non-negative integers, one per target, not {self.shares!r}")
        if sum(self.shares) != self.parts:
            raise ArgumentError(f"shares {self.shares} add up to {sum(self.shares)}, not the {self.parts} parts")

    @classmethod
    def even(cls, targets: int, parts: int = DEFAULT_PARTS) -> Split:
        """The parts dealt as evenly as they go over ``targets`` targets (the first ones get any extra)."""
        if isinstance(targets, bool) or not isinstance(targets, int) or targets < 1:
            raise ArgumentError(f"targets must be a positive integer, not {targets!r}")
        parts = max(parts, targets)
        return cls(parts, tuple(parts // targets + (i < parts % targets) for i in range(targets)))

    @classmethod
    def only(cls, target: int, targets: int, parts: int = DEFAULT_PARTS) -> Split:
        """Every part to target ``target`` of ``targets``."""
        return cls(parts, tuple(parts if i == target else 0 for i in range(targets)))

    def rows(self, m: int, align: int = ROW_ALIGNMENT) -> list[tuple[int, int]]:
        """The rows [start, stop) of an m-row C that each target computes: part boundaries at m i / P,
        moved to the nearest multiple of ``align`` rows while C has at least ``align`` rows per part
        (so that every share but the last is whole tiles). A target with no parts gets no rows."""
        if m < align * self.parts:
            align = 1
        bounds, done = [0], 0
        for share in self.shares:
            done += share
            bound = m if done == self.parts else align * round(m * done / (self.parts * align))
            bounds.append(min(max(bound, bounds[-1]), m))
        return list(zip(bounds, bounds[1:]))

    def describe(self, names: list[str]) -> str:
        """'gpu 5/8, host 3/8' for the targets' ``names``."""
        return ", ".join(f"{name} {share}/{self.parts}" for name, share in zip(names, self.shares))
