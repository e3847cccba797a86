"""Stream-K (Osama, Merrill, Cecka, Garland and Owens, PPoPP 2023): one wave of persistent work-groups
shares the K steps of the tiles of C evenly, so that no wave is left part empty.

In their hybrid form: the first ``whole_tiles`` tiles (all but the last one or two waves' worth) get a
work-group each, as usual; G work-groups after them share the K steps of the rest: work-group g of
them takes the steps [g * total / G, (g + 1) * total / G) of their ``total`` = tiles x steps, in
row-major order, tile after tile. (Persistent work-groups that also computed the whole tiles, in a
loop, ran those slower: the device no longer overlaps one work-group's start with another's end.) A
tile a sharing work-group covers whole it writes into C (alpha and beta applied); of a tile several
share, each writes its partial sum into its own layer of a temporary (its piece: g minus the tile's
first owner), and a fix-up kernel adds the pieces in that order and writes C. No atomics: the same bits
on every run.

The schedule is named by the split value ``STREAM_K`` wherever a K split is (profiles, plans, the
predictor): 1 to ``MAX_SLICES`` count K slices, ``STREAM_K`` is this schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

#: The split value that names the stream-K schedule.
STREAM_K = 0
#: Persistent work-groups per compute unit: two keep a unit busy while the other waits on memory, and
#: a device that holds only one at a time runs two equal waves.
GROUPS_PER_UNIT = 2

#: OpenCL C shared by the stream-K kernels and their fix-up: how many tiles are computed whole first,
#: and which work-group's share of the rest's steps holds ``step``.
OWNER_FUNCTION = """// the tiles computed whole, a work-group each, before those `groups` work-groups share
inline int whole_tiles(const int tiles, const int groups)
{
    return max(tiles / groups - 1, 0) * groups;
}

// the work-group whose share of the `total` steps of the shared tiles holds step `step` of them
inline int owner(const long step, const long total, const int groups)
{
    return (int)(((step + 1) * groups - 1) / total);
}
"""


def split_name(split: int | None) -> str:
    """How tables and messages name a K split: its count of slices, ``stream-K``, or ``auto`` (None: the
    plan decides)."""
    return "auto" if split is None else "stream-K" if split == STREAM_K else str(split)


@dataclass(frozen=True)
class StreamPartition:
    """How ``groups`` work-groups share the last tiles (after ``whole_tiles``) of ``tiles`` tiles of
    ``steps`` K steps each."""

    tiles: int
    steps: int
    groups: int

    @classmethod
    def of(cls, tiles: int, steps: int, compute_units: int) -> StreamPartition:
        """The partition a plan launches: ``GROUPS_PER_UNIT`` work-groups per compute unit, no more than
        there are steps."""
        return cls(tiles, steps, max(1, min(tiles * steps, GROUPS_PER_UNIT * compute_units)))

    @property
    def whole_tiles(self) -> int:
        """The tiles computed whole, a work-group each, before the shared ones (the kernels'
        ``whole_tiles``)."""
        return max(self.tiles // self.groups - 1, 0) * self.groups

    @property
    def total(self) -> int:
        """The steps the work-groups share evenly: those of the tiles after ``whole_tiles``."""
        return (self.tiles - self.whole_tiles) * self.steps

    @property
    def launched(self) -> int:
        """The work-groups the kernel runs: one per whole tile, and those that share the rest."""
        return self.whole_tiles + self.groups

    @lru_cache(maxsize=256)        # noqa: B019 - partitions are few, small and immutable; plans ask at every call
    def shared(self) -> dict[int, int]:
        """The tiles that several work-groups share, and into how many pieces (kept: a plan asks at
        every launch; do not change the dict)."""
        starts = np.arange(1, self.groups, dtype=np.int64) * self.total // self.groups
        tiles, inner = np.unique(starts[starts % self.steps != 0] // self.steps, return_counts=True)
        return dict(zip((tiles + self.whole_tiles).tolist(), (inner + 1).tolist()))

    def most_pieces(self) -> int:
        """The layers the partial sums need: the most pieces of one tile (0 when no tile is shared)."""
        return max(self.shared().values(), default=0)
