"""What routes and shapes a call on a device, kept as data (``Thresholds``): when numpy operands stream
through the device, cross through page-locked memory or run in row blocks, and which products of numpy
operands the CUDA path takes. A device's profile may hold its own (``Profile.thresholds``); otherwise its
class's row of ``DEFAULTS`` holds (``store.thresholds_for``). The figures behind the defaults are in the
GEMM guide ("Routes and their thresholds")."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from ..dtypes import DTYPES
from ..errors import ProfileError
from ..runtime.opencl.device import Device

#: The dtypes the host's BLAS (numpy's) computes in their own precision: those ``host_multiply_adds``
#: may name.
HOST_DTYPES = ("s", "d", "c", "z")


@dataclass(frozen=True)
class Thresholds:
    """The thresholds of one device (bytes and elements are of a whole call)."""

    #: numpy operands (A, B and a given C) of at least this many bytes stream through the device tile by
    #: tile, as a share of it, instead of crossing whole
    stream_bytes: int = 1536 * 2**20
    #: host operands and result of this many bytes and more, up to ``pinned_max_bytes``, cross through
    #: page-locked memory kept between calls; smaller ones are copied from their arrays as they are
    pinned_min_bytes: int = 256 * 2**10
    pinned_max_bytes: int = 2 * 2**30
    #: ... and where the operands staged there take this many bytes or more (or the call runs in
    #: several blocks), each piece's upload starts as soon as that piece is copied; a smaller call copies
    #: them all before its first upload (dense arrays in one block, with fewer bytes with their result,
    #: cross whole: copied at once, then their commands, with none of the blocks' bookkeeping)
    overlap_min_bytes: int = 20 * 2**20
    #: a new result of at least this many bytes (up to ``pinned_max_bytes``) is page-locked memory itself
    result_min_bytes: int = 64 * 2**10
    #: on a device that shares the host's memory (nothing crosses through page-locked memory there),
    #: dense numpy operands and result of fewer bytes are copied whole into buffers their call's route
    #: keeps (on one of memory of its own, those under ``pinned_min_bytes``)
    shared_resident_bytes: int = 2 * 2**20
    #: a product of host operands runs in blocks of C's rows of about this many 128 x 128 tiles per
    #: compute unit, at most ``max_blocks``, each a multiple of ``block_rows`` rows, and in two at least
    #: from ``pipelined_elements`` elements of C: the uploads and downloads of one block overlap the
    #: kernels of another
    block_tiles: float = 1.0
    max_blocks: int = 8
    block_rows: int = 128
    pipelined_elements: int = 2**20
    #: products of fewer multiply-adds read A and B where they lie, the chosen configuration in their
    #: stored layout (the device finishes such a product before the host would have launched a pack); so
    #: does a K split merged after (not added up by its kernel) whose slices are each such a product
    in_place_multiply_adds: int = 2**24
    #: ... and so do larger ones where the chosen layout would transpose an operand that its kernel reads
    #: fewer than this many times (once per block of C along the other side; 0: never): a pack reads and
    #: writes it once each, more than the kernel's own reads of it
    pack_min_passes: int = 0
    #: products of fewer multiply-adds, and those read in place (``in_place_multiply_adds``), guard their
    #: edges instead of padding them (no pack of an operand read in place, no merge of C; a K split, where
    #: it pays, added up by the kernel)
    guard_multiply_adds: int = 2**24
    #: of those, a product of a K of at most this many runs the size classes' choice without a K split
    #: (deeper ones, a small C over a long K, take the predictor's choice, which may split K)
    one_launch_depth: int = 1024
    #: a product whose C has 2 to ``blas.vectors.MAX_VECTORS`` columns (or rows) runs as a multi-vector
    #: GEMV from a K of this many; over a shorter K a GEMM kernel, where it runs in one launch (C, not the
    #: matrix, is then most of what moves)
    vectors_min_depth: int = 128
    #: ... and, where the GEMV packs X first (``blas.gemv.GemvProblem.packs_x``), of at least this many
    #: multiply-adds: a smaller such product runs a GEMM kernel wherever it takes it in one launch (the
    #: pack would be a launch more than the product)
    vectors_min_multiply_adds: int = 2**16
    #: an operand whose rows lie a multiple of this many bytes apart (0: never), in a product of at least
    #: ``blas.routing.CONFLICT_MIN_WORK``, is packed at a leading dimension an eighth of it longer: its rows
    #: fell on the same cache sets (a CPU's)
    conflict_stride_bytes: int = 0
    #: a product of at least ``blas.coverage.SPLIT_MIN_WORK`` multiply-adds whose K is longer than this
    #: (0: none) computes K in slices of at most this many, added up after: the rows of A and B a
    #: work-group reads then stay in its core's cache (a CPU's)
    slice_depth: int = 0
    #: the fields a profile names (read from its JSON, or measured by ``tune``): the others follow the
    #: device class's row of ``DEFAULTS`` (``over``); empty for thresholds made whole in code
    given: tuple[str, ...] = field(default=(), compare=False)
    #: by dtype key, products of numpy operands of at least this many multiply-adds run on the CUDA path
    #: (where it has kernels for the dtype); a dtype not named has no lower bound
    cuda_min_multiply_adds: tuple[tuple[str, int], ...] = (("d", 2048**3), ("z", 2048**3))
    #: ... and of them, those whose operands the CUDA path lays out first (``blas.cuda_gemm.reads_in_place``:
    #: TMA reads rows 16-byte aligned) from this many: a smaller one finishes sooner in OpenCL's one launch
    cuda_laid_out_min_multiply_adds: tuple[tuple[str, int], ...] = (("h", 2**22), ("hs", 2**22), ("b", 2**22),
                                                                    ("bs", 2**22))
    #: ... and of those, the ones of a K of at most ``cuda_shallow_depth`` from this many (a dtype not named:
    #: no more than the bound above): over so short a K the tensor cores have next to nothing to multiply,
    #: the product is the writing of C, and the layout passes are most of the CUDA path's time; only a C
    #: large enough for wgmma's stores to outrun OpenCL's kernel pays for them
    cuda_shallow_laid_out_multiply_adds: tuple[tuple[str, int], ...] = (("h", 2**28), ("hs", 2**28), ("b", 2**28),
                                                                        ("bs", 2**28))
    #: the K of ``cuda_shallow_laid_out_multiply_adds``: that of one wgmma instruction of 16-bit operands
    cuda_shallow_depth: int = 16
    #: by dtype key, products whose C has 2 to ``blas.vectors.MAX_VECTORS`` rows or columns run on the
    #: CUDA path from this many multiply-adds (others stay with OpenCL's multi-vector GEMV)
    cuda_few_rows_multiply_adds: tuple[tuple[str, int], ...] = (("h", 2**27), ("hs", 2**27), ("b", 2**27),
                                                                ("bs", 2**27))
    #: by dtype key, products of at least this many rows or columns of C (and at most
    #: ``blas.vectors.MAX_VECTORS``) are not held to ``cuda_few_rows_multiply_adds`` but to the bounds of
    #: every other product: the CUDA path's narrow blocks compute them sooner than the multi-vector GEMV
    #: (a dtype not named: always held to it)
    cuda_many_vectors: tuple[tuple[str, int], ...] = (("h", 12), ("hs", 12), ("b", 12), ("bs", 12))
    #: by dtype key, of the products under ``in_place_multiply_adds`` of a K of at most ``one_launch_depth``,
    #: one of a K of at most this many takes the predictor's choice after all: its model counts how well a
    #: kernel's blocks cover a large C in a few steps of K, where a size class's tensor-core block spends
    #: most of its depth on padding (a dtype not named: none)
    shallow_predicted_depth: tuple[tuple[str, int], ...] = ()
    #: by dtype key, strided batches of numpy stacks whose C's matrices have at least this many rows and
    #: columns run on the CUDA path (a dtype not named: none; smaller matrices fill few of the CUDA
    #: kernels' blocks of 64 x 64, where OpenCL's small work-groups waste little)
    cuda_batch_min_side: tuple[tuple[str, int], ...] = (("h", 48), ("hs", 48), ("b", 48), ("bs", 48),
                                                        ("d", 48), ("z", 32), ("s.tf32", 64))
    #: the dtypes whose products of numpy operands stay on OpenCL, where their row blocks' copies overlap
    #: the kernels (complex64 in TF32 too: end to end its CUDA path, copies, then embedding and product,
    #: was no faster)
    numpy_on_opencl: tuple[str, ...] = ("d", "z", "c.tf32", "c.3xtf32")
    #: precision '3xtf32' splits the operands of products whose M and N are each at least
    #: ``split_min_side`` and whose K is at least ``split_min_depth`` onto the tensor cores; another runs in
    #: plain float32 (complex64's own), which is float32's accuracy itself: such a product is bound by
    #: memory or launches, where the tensor cores gain nothing and the split's passes cost
    #: (docs/guide/gemm.md gives the figures)
    split_min_side: int = 256
    split_min_depth: int = 128
    #: by dtype key, products of numpy operands of fewer multiply-adds run on the host's BLAS (numpy's),
    #: which finished them sooner than the device (measured by ``tune``; a dtype not named: none)
    host_multiply_adds: tuple[tuple[str, int], ...] = ()

    @property
    def guarded_below(self) -> int:
        """The multiply-adds below which edges are guarded: ``guard_multiply_adds``, or the in-place bound
        where that is higher (padding a product read in place would pack it after all)."""
        return max(self.guard_multiply_adds, self.in_place_multiply_adds)

    def cuda_min(self, key: str) -> int:
        """``cuda_min_multiply_adds`` of the dtype ``key`` (0 where it names none)."""
        return dict(self.cuda_min_multiply_adds).get(key, 0)

    def cuda_laid_out_min(self, key: str) -> int:
        """``cuda_laid_out_min_multiply_adds`` of the dtype ``key`` (0 where it names none)."""
        return dict(self.cuda_laid_out_min_multiply_adds).get(key, 0)

    def host_below(self, key: str) -> int:
        """``host_multiply_adds`` of the dtype ``key`` (0 where it names none: the device runs them all)."""
        return dict(self.host_multiply_adds).get(key, 0)

    def shallow_predicted(self, key: str) -> int:
        """``shallow_predicted_depth`` of the dtype ``key`` (0 where it names none)."""
        return dict(self.shallow_predicted_depth).get(key, 0)

    def cuda_laid_out_below(self, key: str, k: int) -> int:
        """The multiply-adds below which a product of ``key`` over a K of ``k`` stays on OpenCL where the
        CUDA path would lay an operand out (``cuda_laid_out_min_multiply_adds``, and over a K of at most
        ``cuda_shallow_depth`` ``cuda_shallow_laid_out_multiply_adds``, the larger)."""
        shallow = dict(self.cuda_shallow_laid_out_multiply_adds).get(key, 0) if k <= self.cuda_shallow_depth else 0
        return max(self.cuda_laid_out_min(key), shallow)

    def cuda_batch_min(self, key: str) -> float:
        """``cuda_batch_min_side`` of the dtype ``key`` (infinite where it names none: never)."""
        return dict(self.cuda_batch_min_side).get(key, float("inf"))

    def cuda_few_rows(self, key: str) -> float:
        """``cuda_few_rows_multiply_adds`` of the dtype ``key`` (infinite where it names none: never)."""
        return dict(self.cuda_few_rows_multiply_adds).get(key, float("inf"))

    def cuda_vectors(self, key: str) -> float:
        """``cuda_many_vectors`` of the dtype ``key`` (infinite where it names none: never)."""
        return dict(self.cuda_many_vectors).get(key, float("inf"))

    def to_dict(self, changed_only: bool = False) -> dict:
        """Every field as JSON data, or with ``changed_only`` what a profile keeps: the fields ``given``
        (measured or set for its device; the rest follow the device class's defaults of the autogemm
        reading it, so that a default changed later reaches the profile), or for thresholds made whole in
        code, those that differ from the defaults."""
        default = Thresholds()

        def kept(name: str) -> bool:
            if not changed_only:
                return True
            return name in self.given if self.given else getattr(self, name) != getattr(default, name)

        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "given" and kept(f.name)}
        for name in BY_DTYPE:
            if name in out:
                out[name] = dict(out[name])
        if "numpy_on_opencl" in out:
            out["numpy_on_opencl"] = list(self.numpy_on_opencl)
        return out

    @classmethod
    def from_dict(cls, value: object, where: str = "thresholds") -> Thresholds:
        """The thresholds a profile's JSON holds, every field validated (``ProfileError`` names the one
        that is wrong); a field left out keeps its default, and is not ``given``."""
        if not isinstance(value, dict):
            raise ProfileError(f"{where} must be an object")
        names = {f.name for f in fields(cls)} - {"given"}
        unknown = set(value) - names
        if unknown:
            raise ProfileError(f"{where}: unknown fields {sorted(unknown)}")
        found = {}
        for name, item in value.items():
            at = f"{where}.{name}"
            if name == "block_tiles":
                if isinstance(item, bool) or not isinstance(item, (int, float)) or not 1e-6 <= item <= 1e6:
                    raise ProfileError(f"{at} must be a number in 1e-06..1e+06")
                found[name] = float(item)
            elif name in BY_DTYPE:
                if not isinstance(item, dict):
                    raise ProfileError(f"{at} must be an object of dtypes")
                found[name] = tuple((_dtype(key, at), _count(count, f"{at}.{key}")) for key, count in item.items())
            elif name == "numpy_on_opencl":
                if not isinstance(item, list):
                    raise ProfileError(f"{at} must be a list of dtypes")
                found[name] = tuple(_dtype(key, at) for key in item)
            else:
                found[name] = _count(item, at)
        return cls(**found, given=tuple(sorted(found)))

    def measured(self, **values: object) -> Thresholds:
        """These thresholds with ``values`` set and ``given``, as ``tune`` sets what it measured."""
        return replace(self, **values, given=tuple(sorted({*self.given, *values})))

    def over(self, row: Thresholds) -> Thresholds:
        """The thresholds a device follows: where these name their fields (``given``), those over its
        class's ``row``; thresholds made whole in code (none given) as they are."""
        if not self.given:
            return self
        return replace(row, **{name: getattr(self, name) for name in self.given}, given=self.given)


#: The fields that hold a number for each dtype key (a JSON object of them in a profile).
BY_DTYPE = ("cuda_min_multiply_adds", "cuda_laid_out_min_multiply_adds", "cuda_shallow_laid_out_multiply_adds",
            "cuda_few_rows_multiply_adds", "cuda_many_vectors", "cuda_batch_min_side", "host_multiply_adds",
            "shallow_predicted_depth")


def _count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**62:
        raise ProfileError(f"{where} must be an integer in 0..2^62")
    return value


def _dtype(key: object, where: str) -> str:
    if key not in DTYPES:
        raise ProfileError(f"{where}: {key!r} is not a dtype")
    return key


#: A ``host_multiply_adds`` bound that sends every product to the host's BLAS.
EVERY_PRODUCT = 2**62

#: The thresholds of each device class until a profile holds the device's own. The GPU's were measured
#: on an H100 and an H200 (the GEMM guide gives the figures; the host's BLAS bound is set below where a
#: host of a few cores still finishes first); a CPU device shares the host's memory, so nothing crosses in
#: row blocks or through page-locked memory there, and it takes the same figures for the rest but one: its
#: products from numpy to numpy run on the host's BLAS, which computes them on the same cores (faster on
#: every square ``tune`` timed on the CPU machines measured so far; a tune measures the device's own).
DEFAULTS = {"gpu": Thresholds(in_place_multiply_adds=2**27, guard_multiply_adds=2**31, pack_min_passes=3,
                              shallow_predicted_depth=(("d", 8),),
                              host_multiply_adds=(("s", 2**24), ("d", 2**24), ("c", 2**22), ("z", 2**22))),
            "cpu": Thresholds(conflict_stride_bytes=1024, slice_depth=512,
                              host_multiply_adds=tuple((key, EVERY_PRODUCT) for key in HOST_DTYPES))}


def device_class(device: Device) -> str:
    """The row of ``DEFAULTS`` a device takes."""
    return "gpu" if device.is_gpu else "cpu"
