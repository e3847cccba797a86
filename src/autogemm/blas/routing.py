"""``Routing``: how a plan computes one ``GemmProblem`` with one configuration and K split, decided from
the problem, the configuration and the device's compute units alone: which operands are packed
(transposed, padded, converted, into images), whether the kernel guards its edges, whether C goes
through a temporary and a merge, and under stream-K how the work-groups share the tiles.
``LaunchPlan`` launches what it decides; the predictor's model (``prediction``) charges the copies and
launches it implies.

Per shape the routing chooses between two ways of handling edges, both exact:
- guarded: the kernel takes any m, n, k and guards its loads and stores; operands are read in place
  unless their layout differs from the kernel's or they must be conjugated (then they are packed).
  ``edge='auto'`` guards small products, and those whose K is shorter than one K step where both
  operands can then be read in place (padding K would pack both: two launches, on a product bound by
  writing C). A small product split in K slices is added up by the kernel itself where its family
  ``sums_slices`` (``summed``): one launch, its partial sums in a temporary of the plan's, guarded unless
  every block and slice is whole (then the unguarded kernel reads A and B where they lie). A split it
  does not add up (a product of ``SPLIT_MIN_WORK`` or more, more slices than it adds up at most, or a C
  of another dtype) is guarded too where each slice is a product the device reads in place
  (``Thresholds.in_place_multiply_adds``): its slices are read where A and B lie, each into its layer
  of a temporary C that the merge adds up (``sliced``: the kernel and the merge, no padding packs);
- padded: operands are packed into zero-padded whole tiles, aligned for wide vector access, and the
  unguarded kernel runs on them; a C that is not whole is computed into a padded temporary and merged.
Operands read through images are always packed (images are filled from a packed buffer).
16-bit operands are packed into float32 for a kernel that does not read them as stored
(``Family.reads_16bit``), and such a kernel writes a 16-bit C as a float32 temporary that the merge
rounds into C; one that reads them writes C itself where it writes it at all (``c_stored``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

from ..codelets.kernel import ALIGNED_BYTES, ceil_div, round_up
from ..codelets.registry import KernelParams, family_named, kernel_dtype, writes_16bit
from ..codelets.simt.geometry import TEXEL_BYTES
from ..codelets.stream_k import STREAM_K, StreamPartition
from ..profiles import Thresholds
from .coverage import c_blocks, can_sum_slices, merges_slices, most_summed, sums_slices
from .problem import GemmProblem

#: Problems with at least this many multiply-adds are padded under ``edge='auto'`` where a routing is not
#: told otherwise (a plan is told its device's ``Thresholds.guarded_below``): the copies then
#: cost little next to the product, and the unguarded kernel is the faster one.
PAD_MIN_WORK = 128**3
#: Operands whose rows conflict in the caches are packed apart only in products of at least this many
#: multiply-adds: from there a product's operands outgrow a CPU's first-level cache, and their packs cost
#: a few per cent of it.
CONFLICT_MIN_WORK = 256**3


@dataclass(frozen=True)
class OperandRoute:
    """How one operand (A or B) reaches the kernel: in place, or packed (and maybe into an image)."""

    name: str
    packed: bool
    transpose: bool = False       # the pack transposes the stored operand
    conjugate: bool = False
    convert: bool = False         # the pack converts 16-bit storage to float32
    rows: int = 0                 # the operand in the kernel's layout, before padding
    cols: int = 0
    dst_rows: int = 0             # after padding
    dst_cols: int = 0
    dst_ld: int = 0
    image: bool = False


def _kernel_shape(problem: GemmProblem, name: str, letter: str) -> tuple[int, int]:
    """(rows, cols) of operand ``name`` in the kernel's layout ``letter`` ('N' as stored, 'T' transposed)."""
    m, n, k = problem.m, problem.n, problem.k
    if name == "A":
        return (m, k) if letter == "N" else (k, m)
    return (k, n) if letter == "N" else (n, k)


class Traffic(NamedTuple):
    """What a plan moves besides its multiply-adds: the elements its packs and merge read and write
    (kernels of their own, before and after the product), the elements the GEMM kernel itself reads
    and writes at least (each operand once as it reads it, and its C or every slice's padded C), its
    launches (the kernel's included), and the share of the kernel's K steps that is not padding."""

    copied: int
    streamed: int
    launches: int
    depth_share: float


class Routing:
    """The launches' plan for ``problem`` with ``params`` and K ``split`` (1 to ``MAX_SLICES`` slices, or
    ``STREAM_K``) on a device of ``compute_units``, edges handled as ``edge`` says ('auto': padded from
    the device's ``Thresholds.guarded_below`` unless everything is whole already; a split merged after,
    padded from a slice of its ``Thresholds.in_place_multiply_adds``), operands whose rows conflict in its
    caches packed apart (``Thresholds.conflict_stride_bytes``). Without the device's ``limits`` (the
    predictor's model of plans measured anywhere): padded from ``PAD_MIN_WORK`` (a product, or a slice
    of a split merged after), no conflicts; so the model charges packs to a device's merged splits of
    slices between that and the device's bound, which it runs in place."""

    def __init__(self, problem: GemmProblem, params: KernelParams, split: int, compute_units: int,
                 edge: str = "auto", limits: Thresholds | None = None) -> None:
        self.pad_from = limits.guarded_below if limits is not None else PAD_MIN_WORK
        self.in_place_below = limits.in_place_multiply_adds if limits is not None else PAD_MIN_WORK
        self.conflict_stride = limits.conflict_stride_bytes if limits is not None else 0
        self.problem = problem
        self.params = params
        self.dtype = problem.dtype
        self.kernel_dtype = kernel_dtype(params, self.dtype)
        self.split = split
        self.stream = split == STREAM_K
        self.slices = 1 if self.stream else split
        self.k_step = params.tile_k * self.slices
        # a kernel that reads 16-bit operands as stored writes such a C itself (but under stream-K, whose
        # shared tiles' float32 partial sums go through C's pointer); the others write C in the compute
        # type, which the merge rounds into a C stored otherwise
        c_16bit = writes_16bit(params, self.dtype) and not self.stream
        self.c_converted = self.dtype.output.numpy != self.dtype.scalar_numpy and not c_16bit
        #: the slices of a split are added up by the kernel, not by a merge into C
        self.summed = self.slices > 1 and can_sum_slices(params, problem) and self._choose_summed(edge)
        self.guarded = self._choose_guarded(edge)
        #: the kernel finds its K slice itself (guarded, or summed: A and B read in place unless an
        #: operand must be transposed, conjugated or converted first)
        self.sliced = self.summed or (self.slices > 1 and self.guarded)
        self.padded_m, self.padded_n, self.padded_k = self._padded_sizes()
        self.staging = {name: self._route(name) for name in ("A", "B")}
        #: every row of A and B the kernel reads starts at a multiple of ``ALIGNED_BYTES`` (packed so, or
        #: stored so), and so does each K block's depth (a slice's or a K step's is whole blocks): its
        #: copies may take that many at once
        self.aligned = params.tile_k % self._aligned_elements == 0 and all(
            self.staging[name].packed or self._rows_aligned(name, self._aligned_elements) for name in ("A", "B"))
        self.c_temp = self.c_converted or (self.slices > 1 and not self.summed) or (
            not self.guarded and not self._in_place_whole("C"))
        #: the kernel writes C in its 16-bit storage (not into a float32 temporary)
        self.c_stored = c_16bit and not self.c_temp
        self.partition = (StreamPartition.of(self.padded_m // params.block_rows * (self.padded_n // params.block_cols),
                                             self.padded_k // params.tile_k, compute_units)
                          if self.stream else None)

    @property
    def slice_k(self) -> int:
        """The K of one slice (all of the padded K for a product in one slice)."""
        return self.padded_k // self.slices

    def _letter(self, name: str) -> str:
        return self.params.layout[0 if name == "A" else 1]

    def _stored_letter(self, name: str) -> str:
        op = self.problem.op_a if name == "A" else self.problem.op_b
        return "T" if op.transposed else "N"

    def _through_image(self, name: str) -> bool:
        return self.params.image_a if name == "A" else self.params.image_b

    def _conjugated(self, name: str) -> bool:
        """Conjugation matters for complex dtypes only ('C' on real data is 'T')."""
        op = self.problem.op_a if name == "A" else self.problem.op_b
        return op.conjugated and self.dtype.is_complex

    def _converted(self) -> bool:
        """True when the kernel reads its operands in another type than they are stored in."""
        return self.kernel_dtype.numpy != self.dtype.numpy

    def _readable_in_place(self, name: str) -> bool:
        return (self._stored_letter(name) == self._letter(name) and not self._conjugated(name)
                and not self._through_image(name) and not self._converted())

    @functools.cached_property
    def _aligned_elements(self) -> int:
        """The elements of ``ALIGNED_BYTES`` of the kernel's operands."""
        return max(1, ALIGNED_BYTES // self.kernel_dtype.itemsize)

    def _rows_aligned(self, name: str, elements: int) -> bool:
        """True when every row of operand ``name`` as stored (of every product of a batch) starts at a
        multiple of ``elements``."""
        pr = self.problem
        return not (pr.ld(name) % elements or pr.offset(name) % elements or pr.stride(name) % elements)

    def _in_place_whole(self, name: str) -> bool:
        """True when operand ``name`` meets the unguarded kernel's needs as it is stored."""
        p, pr = self.params, self.problem
        if not self._rows_aligned(name, p.vector_width):
            return False
        if name == "C":
            return pr.m % p.block_rows == 0 and pr.n % p.block_cols == 0
        outer = pr.m % p.block_rows if name == "A" else pr.n % p.block_cols
        return self._readable_in_place(name) and outer == 0 and pr.k % self.k_step == 0

    def _choose_summed(self, edge: str) -> bool:
        """Whether the kernel adds the slices up (where its family can): guarded, always; padded, never;
        by default, as ``sums_slices`` says, in as many slices as it adds up at most."""
        if edge != "auto":
            return edge == "guard"
        return sums_slices(self.params, self.problem) and self.slices <= most_summed(self.params, self.problem)

    def _choose_guarded(self, edge: str) -> bool:
        if self.slices > 1 and not self.summed and not merges_slices(self.params, self.problem):
            return False        # (the kernel reads whole slices of padded operands)
        if edge != "auto":
            return edge == "guard"
        if all(self._in_place_whole(x) for x in ("A", "B", "C")):
            return False        # (summed slices too: whole ones, unguarded)
        if self.summed:         # (the slices of a product read where it lies)
            return True
        pr = self.problem
        if self.slices > 1:     # (merged after: each slice a product of its own, read in place if small)
            return pr.m * pr.n * ceil_div(pr.k, self.slices) < self.in_place_below
        if pr.m * pr.n * pr.k < self.pad_from:
            return True
        return (pr.k < self.params.tile_k and family_named(self.params.family).short_k_guards
                and self._readable_in_place("A") and self._readable_in_place("B"))

    def _padded_sizes(self) -> tuple[int, int, int]:
        p, pr = self.params, self.problem
        return (round_up(max(pr.m, 1), p.block_rows), round_up(max(pr.n, 1), p.block_cols),
                round_up(max(pr.k, 1), self.k_step))

    def _conflicting(self, ld_bytes: int) -> bool:
        """Whether rows ``ld_bytes`` apart fall on the same cache sets of the device
        (``conflict_stride``, its ``Thresholds.conflict_stride_bytes``; 0: never), in a product of at least
        ``CONFLICT_MIN_WORK`` multiply-adds (a smaller one's operands stay in the caches)."""
        pr = self.problem
        return (self.conflict_stride > 0 and ld_bytes % self.conflict_stride == 0
                and pr.m * pr.n * pr.k >= CONFLICT_MIN_WORK)

    def _skewed(self, ld: int, itemsize: int) -> int:
        """``ld`` elements, or past it by an eighth of the conflict stride where its rows would conflict
        (a whole number of vector widths, and of ``ALIGNED_BYTES``)."""
        if not self._conflicting(ld * itemsize):
            return ld
        return ld + round_up(max(self.conflict_stride // 8 // itemsize, 1),
                             max(self.params.vector_width, self._aligned_elements))

    def _route(self, name: str) -> OperandRoute:
        image = self._through_image(name)
        pad = image or not self.guarded
        in_place = self._in_place_whole(name) if not self.guarded else self._readable_in_place(name)
        if in_place and not self._conflicting(self.problem.ld(name) * self.dtype.itemsize):
            return OperandRoute(name, packed=False)
        letter = self._letter(name)
        rows, cols = _kernel_shape(self.problem, name, letter)
        outer = self.padded_m if name == "A" else self.padded_n
        if pad:
            dst_rows, dst_cols = (outer, self.padded_k) if (letter == "N") == (name == "A") else (self.padded_k, outer)
        else:
            dst_rows, dst_cols = rows, cols
        texel = max(1, TEXEL_BYTES // self.kernel_dtype.itemsize) if image else 1
        dst_ld = round_up(max(dst_cols, 1), max(self.params.vector_width, texel, self._aligned_elements))
        if not image:           # (an image's rows are its own)
            dst_ld = self._skewed(dst_ld, self.kernel_dtype.itemsize)
        return OperandRoute(name, packed=True, transpose=self._stored_letter(name) != letter,
                       conjugate=self._conjugated(name), convert=self._converted(), rows=rows, cols=cols,
                       dst_rows=dst_rows, dst_cols=dst_cols, dst_ld=dst_ld, image=image)

    def image_texels(self, st: OperandRoute) -> tuple[int, int]:
        """(width, height) in texels of operand route ``st`` (one read through an image)."""
        return st.dst_ld // max(1, TEXEL_BYTES // self.kernel_dtype.itemsize), st.dst_rows

    def images_fit(self, limits: tuple[int, int]) -> bool:
        """Whether each operand read through an image fits a device's largest 2D image, ``limits``
        (width, height in texels)."""
        return all(w <= limits[0] and h <= limits[1] for w, h in
                   (self.image_texels(st) for st in self.staging.values() if st.image))

    def _packed_layers(self, name: str) -> int:
        """How many copies of operand ``name`` its pack writes: one per product, or one that every
        product of a batch shares (stride 0)."""
        return self.problem.batch if self.problem.stride(name) else 1

    def temporary_bytes(self) -> dict[str, int]:
        """The bytes of each temporary buffer ``enqueue`` allocates: packed A and B, C's temporary
        (images, filled from the packed buffers, add as much again)."""
        sizes = {name: self._packed_layers(name) * st.dst_rows * st.dst_ld * self.kernel_dtype.itemsize
                 for name, st in self.staging.items() if st.packed}
        if self.c_temp:
            sizes["C"] = (self.problem.batch * self.slices * self.padded_m * self.padded_n
                          * self.dtype.scalar_numpy.itemsize)
        if self.partition and self.partition.most_pieces():
            sizes["partials"] = (self.partition.most_pieces() * self.padded_m * self.padded_n
                                 * self.dtype.scalar_numpy.itemsize)
        if self.summed:
            sizes["partials"] = self.slices * self.padded_m * self.padded_n * self.dtype.scalar_numpy.itemsize
            sizes["arrivals"] = 4 * c_blocks(self.params, self.problem.m, self.problem.n)
        return sizes

    def traffic(self) -> Traffic:
        """The elements the plan moves and its launches (``Traffic``), for the predictor's model."""
        pr = self.problem
        copied, launches = 0, 1
        streamed = {}
        for name, st in self.staging.items():
            rows, cols = _kernel_shape(pr, name, self._letter(name))
            if st.packed:
                copied += self._packed_layers(name) * (st.rows * st.cols + st.dst_rows * st.dst_ld)
                launches += 2 if st.image else 1
                rows, cols = st.dst_rows, st.dst_cols
            streamed[name] = pr.batch * rows * cols
        if self.c_temp:
            written = pr.batch * self.slices * self.padded_m * self.padded_n
            copied += written + pr.batch * pr.m * pr.n
            launches += 1
        else:
            written = pr.batch * pr.m * pr.n
        if self.summed:         # each slice's partial sums written, and read by the tile's last
            written += 2 * self.slices * self.padded_m * self.padded_n
        if self.partition:
            shared = self.partition.shared()
            if shared:
                tile = self.params.block_rows * self.params.block_cols
                written += sum(shared.values()) * tile
                copied += (sum(shared.values()) + 2 * len(shared)) * tile     # the fix-up reads them, and C
                launches += 1
        return Traffic(copied, streamed["A"] + streamed["B"] + written, launches, pr.k / self.padded_k)
