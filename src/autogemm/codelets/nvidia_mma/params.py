"""``MmaParams``: a GEMM kernel whose warps multiply through the tensor cores with ``mma.sync`` (NVIDIA's
warp-level matrix multiply-accumulate, reached from OpenCL C by inline PTX), and the instruction shapes
it can use."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ...dtypes import Dtype
from ..fields import FamilyParams, choices_problem, halved_blocks
from ..simt.params import build_options_problem

WARP = 32


@dataclass(frozen=True)
class InstructionShape:
    """The geometry of one ``mma.sync`` shape: a warp computes an ``m`` x 8 block of D = A B + C over ``k``.

    The fragments are spread over the lanes as PTX defines them: with g = lane / 4 and t = lane % 4, a
    lane holds A at rows g + 8 h (h < m / 8) and columns t + 4 p (p < k / 4), B at rows t + 4 p of
    column g, and C at rows g + 8 h, columns 2 t and 2 t + 1. For 16-bit operands a column is a pair of
    consecutive k packed in one register (a lane holds k = 2 (t + 4 p) and 2 (t + 4 p) + 1).
    """

    name: str
    m: int
    k: int

    n: ClassVar[int] = 8

    @property
    def row_halves(self) -> int:
        """Rows of 8 a lane's fragments cover (1 or 2)."""
        return self.m // 8

    @property
    def k_per_lane(self) -> int:
        """Columns of A (rows of B) one lane holds per instruction."""
        return self.k // 4


SHAPES = {shape.name: shape for shape in (InstructionShape("m8n8k4", 8, 4), InstructionShape("m16n8k4", 16, 4),
                                          InstructionShape("m16n8k8", 16, 8), InstructionShape("m16n8k16", 16, 16))}


@dataclass(frozen=True)
class OperandType:
    """A type the instructions multiply (``Dtype.mma_operand`` names it), the type they accumulate in,
    and the shapes that take it with the oldest NVIDIA architecture that has each."""

    name: str                    # PTX type of A and B
    accumulator: str             # PTX type of C and D
    register: str                # inline-assembly constraint of an A or B register
    accumulator_register: str    # ... of a C or D register
    shapes: dict[str, tuple[int, int]]
    pack: int = 1                # operand values per A or B register

    @property
    def ptx_types(self) -> str:
        """The type suffix of the instruction: D, A, B, C."""
        return f"{self.accumulator}.{self.name}.{self.name}.{self.accumulator}"


OPERANDS = {
    "f64": OperandType("f64", "f64", "d", "d",
                       {"m8n8k4": (8, 0), "m16n8k4": (9, 0), "m16n8k8": (9, 0), "m16n8k16": (9, 0)}),
    "tf32": OperandType("tf32", "f32", "r", "f", {"m16n8k4": (8, 0), "m16n8k8": (8, 0)}),
    "f16": OperandType("f16", "f32", "r", "f", {"m16n8k8": (7, 5), "m16n8k16": (8, 0)}, pack=2),
    "bf16": OperandType("bf16", "f32", "r", "f", {"m16n8k8": (8, 0), "m16n8k16": (8, 0)}, pack=2),
}
LAYOUTS = ("NN", "NT", "TN", "TT")
WARPS = (1, 2, 4)
WARP_TILES = (1, 2, 4, 8)
TILE_K_SIZES = (8, 16, 32, 64)
STAGES = (1, 2, 3)
#: How a K block reaches local memory: through each work-item's registers (fetched a block ahead), or by
#: asynchronous copies (``cp.async``, no registers, as many blocks ahead as there are stages less one).
COPIES = ("registers", "async")
VECTOR_WIDTHS = (1, 2, 4, 8)
#: Bytes a lane reads from a staged row at once for its fragments: 16 (two instructions' k of 16-bit
#: operands per read) or 8 (half as many k, so a K block holds twice as many chunks to pipeline).
READ_WIDTHS = (8, 16)
#: How a warp reads its fragments from local memory: each lane its own k ("lanes": LANE_K consecutive k of
#: one row, in an order of our choosing), or ``ldmatrix`` (16-bit operands: 8 x 8 matrices whose rows the
#: lanes address, delivered in the registers the instruction takes, so no register moves are needed).
LOADS = ("lanes", "ldmatrix")
#: Fragment sets held in registers: one (a chunk's fragments are read, then multiplied), or two (the
#: next chunk's, or the next K block's first, are read while this chunk multiplies: the wait for local
#: memory, and the barrier between K blocks, overlap the tensor cores' work).
FRAGMENT_SETS = (1, 2)
#: How the instruction runs: inline PTX on NVIDIA's compiler, or emulated through local memory with the
#: same fragment layout (portable and slow: it lets any device test the kernel around the instruction).
SPELLINGS = ("ptx", "local")
#: How a complex product is made of real ones: four (re = rr - ii, im = ri + ir), or three by the 3M
#: method (re = rr - ii, im = (r + i)(r + i) - rr - ii: a quarter fewer instructions, a larger error in
#: the imaginary part where it cancels).
COMPLEX_METHODS = ("4m", "3m")


@dataclass(frozen=True)
class MmaParams(FamilyParams):
    """One configuration of the ``nvidia_mma`` family.

    A work-group is ``warps_m`` x ``warps_n`` warps; each warp computes ``tiles_m`` x ``tiles_n``
    instruction tiles of C (of ``shape``'s m x 8 each). Per K block of ``tile_k``, the work-group stages
    both operands through local memory. With ``copy`` "async" (no complex dtypes; layout NT for 16-bit
    ones, ``async_problem``), blocks are copied straight to local memory ``stages`` - 1 blocks ahead of
    the one multiplied. With "registers",
    each work-item fetches the next block from global memory into registers (``vector_width`` elements
    per load) while this one is multiplied, and stores it to local memory after: to the other of two
    ``stages``, or, with one, once every warp is done with it. Warps read their fragments from local
    memory ``read_width`` bytes a lane at a time (or as 8 x 8 matrices: ``loads``), into one or two
    ``fragment_sets``. ``layout`` says how
    the kernel reads its operands, as in ``simt``: N = as stored (A is M x K, B is K x N), T = transposed.
    """

    family: ClassVar[str] = "nvidia_mma"

    layout: str = "NT"
    shape: str = "m8n8k4"
    warps_m: int = 2
    warps_n: int = 2
    tiles_m: int = 2
    tiles_n: int = 2
    tile_k: int = 16
    stages: int = 2
    vector_width: int = 1
    mma: str = "local"
    build_options: tuple[str, ...] = ()
    copy: str = "registers"
    complex_method: str = "4m"
    read_width: int = 16
    fragment_sets: int = 1
    loads: str = "lanes"

    # ----- what plans ask of every family ---------------------------------------------------------
    image_a: ClassVar[bool] = False
    image_b: ClassVar[bool] = False

    @property
    def geometry(self) -> InstructionShape:
        return SHAPES[self.shape]

    @property
    def block_rows(self) -> int:
        return self.warps_m * self.tiles_m * self.geometry.m

    @property
    def block_cols(self) -> int:
        return self.warps_n * self.tiles_n * self.geometry.n

    @property
    def work_group_size(self) -> int:
        return WARP * self.warps_m * self.warps_n

    def smaller_blocks(self) -> tuple[MmaParams, ...]:
        """Blocks of a half, a quarter and a sixteenth of this one's (``halved_blocks``: each warp's tiles
        along N, then the work-group's rows of warps, then its columns and the warp's rows of tiles)."""
        return halved_blocks(self, "tiles_n", "warps_m", "warps_n", "tiles_m")

    def malformed(self) -> str | None:
        """Why this point lies outside the family's space regardless of device, or None."""
        choices = {"layout": LAYOUTS, "shape": tuple(SHAPES), "warps_m": WARPS, "warps_n": WARPS,
                   "tiles_m": WARP_TILES, "tiles_n": WARP_TILES, "tile_k": TILE_K_SIZES, "stages": STAGES,
                   "vector_width": VECTOR_WIDTHS, "mma": SPELLINGS, "copy": COPIES,
                   "complex_method": COMPLEX_METHODS, "read_width": READ_WIDTHS, "fragment_sets": FRAGMENT_SETS,
                   "loads": LOADS}
        problem = choices_problem(self, choices) or build_options_problem(self.build_options)
        if problem:
            return problem
        if self.copy == "async" and self.stages < 2:
            return "copy 'async' copies blocks ahead: stages 2 or 3"
        if self.copy == "registers" and self.stages > 2:
            return "copy 'registers' fetches one block ahead: stages 1 or 2"
        return None

    def in_layout(self, layout: str, dt: Dtype) -> MmaParams:
        """This configuration reading ``layout`` for ``dt``: where asynchronous copies cannot read that
        layout in ``dt`` (``async_problem``), its blocks come through registers, in two stages."""
        twin = replace(self, layout=layout)
        if twin.async_problem(dt):
            return replace(twin, copy="registers", stages=2)
        return twin

    def stages_alike(self, dt: Dtype) -> bool:
        """Asynchronous copies of float64 read every layout through the same pipeline (a lane's fragment
        of an operand staged as it lies is two 8-byte reads instead of one of 16 bytes), measured as fast
        as NT behind packs or faster. 32-bit operands staged as they lie take four 4-byte reads a
        fragment instead of one: not measured, so their packs stay where the size calls for them."""
        return self.copy == "async" and dt.real_bytes == 8 and not dt.is_complex

    def async_problem(self, dt: Dtype) -> str | None:
        """Why asynchronous copies cannot stage this configuration's operands of ``dt``, or None. They
        copy elements whole, as they lie: an operand read with consecutive k (A in N, B in T) is staged
        as rows of k, any dtype but complex (whose parts are staged apart); one read with consecutive
        rows or columns is staged so, 32- and 64-bit operands only (a lane's fragment then gathers its k
        one element at a time; 16-bit k travel in pairs per register)."""
        if self.copy != "async":
            return None
        if dt.is_complex:
            return "copy 'async' copies elements whole; complex operands are staged as separate parts"
        if self.layout != "NT" and dt.real_bytes not in (4, 8):
            return (f"copy 'async' stages {dt.routine}'s 16-bit operands as rows of k (layout NT); only 32- "
                    f"and 64-bit ones may lie otherwise (layout {self.layout})")
        return None

    def dtype_problem(self, dt: Dtype) -> str | None:
        """Why this point cannot multiply ``dt`` on any device, or None."""
        operand = OPERANDS.get(dt.mma_operand or "")
        if operand is None:
            return (f"{dt.routine} has no matrix instruction (precision 'tf32' or '3xtf32' multiplies "
                    "float32 on tensor cores)")
        if self.shape not in operand.shapes:
            return f"mma.sync has no {self.shape} shape for {operand.name} operands ({dt.routine})"
        if self.tile_k % (4 * self.lane_k(dt)):
            return (f"tile_k {self.tile_k} must be a multiple of {4 * self.lane_k(dt)} "
                    f"(the k a warp's lanes read at once)")
        if self.complex_method == "3m" and not dt.is_complex:
            return f"complex_method '3m' makes complex products; {dt.routine} is real"
        problem = self.async_problem(dt)
        if problem:
            return problem
        if self.vector_width == 8 and not dt.half:
            return f"vector_width 8 is for 16-bit elements (16 bytes at once); {dt.routine}'s are wider"
        if self.read_width == 8 and dt.real_bytes == 8:
            return f"read_width 8 holds one {dt.real_cl}: {dt.routine} reads 16 bytes a lane"
        if self.loads == "ldmatrix" and not (dt.half and self.read_width == 8):
            return (f"loads 'ldmatrix' reads 16-bit operands (two 16-byte rows of 8 x 8 matrices for 16 k: "
                    f"read_width 8); {dt.routine} has {dt.real_bytes * 8}-bit operands, read_width {self.read_width}")
        if self.fragment_sets == 2 and self.chunks(dt) % 2:
            return (f"fragment_sets 2 alternates between two sets over an even number of chunks per K block; "
                    f"tile_k {self.tile_k} holds {self.chunks(dt)} of {4 * self.lane_k(dt)} k")
        return None

    def fitted(self, dt: Dtype) -> MmaParams:
        """This configuration with a shape that multiplies ``dt`` (its operand's largest, where this one
        does not) and a K block of at least one chunk of its lanes' reads."""
        operand = OPERANDS.get(dt.mma_operand or "")
        params = self
        if operand is not None and self.shape not in operand.shapes:
            params = replace(params, shape=list(operand.shapes)[-1])
        return replace(params, tile_k=max(params.tile_k, 4 * params.lane_k(dt)))

    def lane_k(self, dt: Dtype) -> int:
        """Consecutive k one lane reads from local memory at once (``read_width`` bytes, or more where one
        instruction takes more): its columns (or pairs of columns) of one or more instructions."""
        return max(self.geometry.k_per_lane, self.read_width // dt.real_bytes)

    def chunks(self, dt: Dtype) -> int:
        """Chunks of a K block: the k a warp's lanes read at once (four lanes of LANE_K k each)."""
        return self.tile_k // (4 * self.lane_k(dt))

    def steps(self, dt: Dtype) -> int:
        """Instructions that share one read of LANE_K k per lane."""
        return self.lane_k(dt) // self.geometry.k_per_lane

    def describe(self) -> str:
        """A one-line summary, e.g. ``mma m8n8k4 NT warps2x2 tiles2x2x16 v1 stages2 ptx``."""
        parts = ["mma", self.shape, self.layout, f"warps{self.warps_m}x{self.warps_n}",
                 f"tiles{self.tiles_m}x{self.tiles_n}x{self.tile_k}", f"v{self.vector_width}",
                 f"stages{self.stages}" + ("/async" if self.copy == "async" else ""), self.mma,
                 *(["3m"] if self.complex_method == "3m" else []),
                 *([f"read{self.read_width}"] if self.read_width != 16 else []),
                 *(["prefetch"] if self.fragment_sets == 2 else []),
                 *(["ldmatrix"] if self.loads == "ldmatrix" else []),
                 *self.build_options]
        return " ".join(parts)
