"""``WgmmaParams``: one configuration of the sm_90a kernel."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ...dtypes import Dtype
from ..fields import FamilyParams, choices_problem
from ..hopper import CLUSTERS, ROW_BYTES, SINGLE_ROUND, WARPGROUP, SingleRound, shared_memory_problem

#: The operands' types and the bytes of one element: wgmma's multiplicand types (tf32 reads float32's,
#: its low mantissa bits dropped), and 3xtf32: float32 operands each split into a tf32 part and the tf32
#: of what it left (``render.split``), multiplied as big x big + big x small + small x big, which keeps
#: float32's accuracy at three tf32 products' cost.
OPERANDS = {"f16": 2, "bf16": 2, "tf32": 4, "3xtf32": 4}
#: Tiles in flight in shared memory: TMA loads the next ones while wgmma multiplies the current one.
STAGES = (2, 3, 4, 5, 6, 7, 8)
#: The stages a tile of C takes for a product (``tilings``), or as many as fit under them in shared
#: memory: a small tile's loads of a long K keep more in flight so (FP16 4096 x 128 x 4096 in 64 x 64 on
#: an H200: 4 stages 0.54x cuBLAS, 8 0.67x, 10 and 12 no faster).
DEEPEST_STAGES = 8
#: The columns of C one block computes: N of one ``m64nNkK`` instruction.
BLOCK_N = (64, 128, 256)
#: Narrower blocks of C, for products of few columns: B read K-major alone (an MN-major tile of B is
#: boxes of 128 bytes), no cluster; those of fewer columns than a chunk of C that TMA stores (``narrow``:
#: both for a 16-bit C, 16 for a float32 one) store C from the registers, and only those are in the tile
#: model (``NARROW_RATES``). Not in the tuning space.
NARROW_N = (16, 32)
#: Consumer warpgroups of a block, each computing 64 rows of C with the block's tile of B.
CONSUMERS = (1, 2)
#: Rows of blocks of C taken together, down the rows first, by the blocks working at once: their tiles
#: of B stay in L2 while the group's blocks read them.
GROUPS = (1, 8, 16)
#: Rows of C one consumer warpgroup computes: M of the instruction.
WARPGROUP_M = 64
#: Blocks a multiprocessor runs at once: one, or two of one consumer each (while one block's consumer
#: stores a block of C or waits for its tiles, the other's multiplies).
PER_MULTIPROCESSOR = (1, 2)
#: Registers a thread of a block may hold where two blocks share a multiprocessor (65536 over 2 x 256).
TWO_BLOCK_REGISTERS = 128
#: Shared memory of a multiprocessor, of which each block also takes 1 KB for the system.
MULTIPROCESSOR_SHARED_BYTES = 228 * 1024
#: C's element types: float32, or the 16-bit type of 16-bit operands (the sums are float32 still).
OUTPUTS = ("f32", "f16", "bf16")
#: The operand and C types the family multiplies each dtype in (by its key): 16-bit operands into their
#: own type or float32, float32 in TF32 or 3xTF32.
DTYPE_TYPES = {"h": ("f16", "f16"), "hs": ("f16", "f32"), "b": ("bf16", "bf16"), "bs": ("bf16", "f32"),
               "s.tf32": ("tf32", "f32"), "s.3xtf32": ("3xtf32", "f32")}
#: The tiles of C (block_m x block_n, and blocks a multiprocessor) of the wgmma family, each with its
#: rate on large products as a fraction of the fastest tile's, a block's (where two share a
#: multiprocessor, half of what the two compute), for operands of one plane and for 3xtf32's two (NT,
#: 4096^3 and 8192 x 8192 x 2048, the median of 3 rounds; alike for FP16, BF16 and TF32; two blocks of
#: 64 x 64 a multiprocessor: FP16 NN 4096 x 1024 x 1024, 1.33x one block's rate, and 0.26 at NT 4096^3 on
#: an H200). Two blocks of 64 x 128 a multiprocessor are none of them:
#: two ping-pong consumers in blocks of 64 x 128 (``PING_PONG_RATES``) ran 1.05x to 1.1x as fast
#: wherever both were measured (FP16 batches of 64 to 256 on a side, H200).
TILE_RATES: dict[int, dict[tuple[int, int, int], float]] = {
    1: {(128, 256, 1): 1.0, (128, 128, 1): 0.92, (64, 256, 1): 0.86, (64, 128, 1): 0.6, (128, 64, 1): 0.57,
        (64, 64, 1): 0.37, (64, 64, 2): 0.25},
    2: {(128, 128, 1): 1.0, (128, 64, 1): 0.71, (64, 128, 1): 0.51, (64, 64, 1): 0.37}}
#: The tiles of C (block_m x block_n) of two ping-pong consumers (``ping_pong``), each
#: with its rate as in ``TILE_RATES`` (a block of C's: half what the multiprocessor's two in flight
#: compute; FP16 NT 4096^3 and 8192 x 8192 x 2048 against 128 x 256, H200), for 16-bit operands (TF32's
#: ran correct in K-major layouts, but its other readings are not yet checked on a GPU).
PING_PONG_RATES: dict[tuple[int, int], float] = {(64, 256): 0.46, (64, 128): 0.325, (64, 64): 0.19}
#: The narrow tiles of C (block_m x ``NARROW_N``, one block a multiprocessor), each with its rate as in
#: ``TILE_RATES``, for 16-bit operands: fitted to FP16 NT products of 8 to 32 columns (26904 x 8 x 768,
#: 280 x 24 x 4712, 4096 x 32 x 4096, every tile at 4 to 8 stages, H200), where a block of 64 columns
#: or more multiplies mostly columns that are not there.
NARROW_RATES: dict[tuple[int, int], float] = {(128, 32): 0.33, (64, 32): 0.25, (128, 16): 0.2, (64, 16): 0.13}
#: CUDA's names of the operands' and C's element types in a tensor map (``runtime.cuda.tensor_map``).
TENSOR_TYPES = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32", "3xtf32": "float32", "f32": "float32"}


@dataclass(frozen=True)
class WgmmaParams(FamilyParams):
    """C (M x N) = alpha A B^T + beta C, A (M x K) and B (N x K) both K-contiguous ("NT", x @ W^T), of
    ``operand`` elements, C of ``out`` (float32, or the operands' own 16-bit type; the sums are float32),
    beta 0 not reading C. Each block computes ``block_m`` x ``block_n`` of C: a producer warpgroup loads
    tiles of A and B (128 bytes of K) by TMA into ``stages`` buffers of shared memory, and ``consumers``
    warpgroups multiply them with wgmma as they arrive, each 64 rows of C. Blocks are persistent,
    ``per_multiprocessor`` on each multiprocessor (two only of one consumer each; ``blas.cuda_gemm.fitted``
    chooses it with the tile, which a stored configuration's does not bind), each taking blocks of C
    in turn in groups of ``group`` rows of blocks (the producer loads the next one's tiles while the
    consumers store the last); in clusters of ``cluster`` blocks along M, which share each tile of B
    (``codelets.hopper``). The consumers write C into shared memory, which TMA stores while they go on to
    their next block of C (where C's rows are 16-byte aligned; else from their registers, the tensor
    cores idle meanwhile). Any M, N and K, the rows of A and B a multiple of 16 bytes apart (TMA's rule: K
    a multiple of 8 for 16-bit types, 4 for the others)."""

    family: ClassVar[str] = "wgmma"
    #: The kernel can store C transposed, so a product may be given to it swapped (C^T = B^T A^T).
    stores_c_transposed: ClassVar[bool] = True
    #: alpha and beta reach the kernel as float32 (its sums are float32).
    scalar_type: ClassVar[str] = "float32"
    #: A product of a single round of blocks shares them as the last round behind whole ones is shared.
    single_round: ClassVar[SingleRound] = SINGLE_ROUND
    operand: str = "f16"
    block_n: int = 256
    consumers: int = 2
    stages: int = 3
    group: int = 8
    out: str = "f32"
    cluster: int = 1
    per_multiprocessor: int = 1
    #: Whether the two consumers "ping-pong": each computes blocks of C of 64 rows whole, alternately,
    #: one storing its last block while the other multiplies, rather than both computing each block
    #: together (``codelets.hopper.PING_PONG_BLOCKS``): a block then computes two blocks of C at once.
    ping_pong: bool = False

    def dtype_problem(self, dt: Dtype) -> str | None:
        """Why this configuration does not compute ``dt``'s products, or None."""
        if DTYPE_TYPES.get(dt.key) != (self.operand, self.out):
            return f"it multiplies {self.operand} into {self.out}, not {dt.key}"
        return None


    def malformed(self) -> str | None:
        """Why this is no configuration of the family, or None."""
        why = choices_problem(self, {"operand": tuple(OPERANDS), "block_n": BLOCK_N + NARROW_N, "consumers": CONSUMERS,
                                     "stages": STAGES, "group": GROUPS, "out": OUTPUTS,
                                     "cluster": CLUSTERS, "per_multiprocessor": PER_MULTIPROCESSOR,
                                     "ping_pong": (False, True)})
        if why:
            return why
        if self.out not in ("f32", self.operand):
            return f"out {self.out}: C is float32 or of the operands' own 16-bit type"
        if self.planes == 2 and self.block_n > 128:
            return f"block_n {self.block_n}: 3xtf32 holds two sets of accumulators, at most 64 x 128 a consumer"
        if self.block_n in NARROW_N and self.cluster > 1:
            return f"block_n {self.block_n} in clusters: a cluster shares whole boxes of B"
        if self.ping_pong and (self.consumers, self.per_multiprocessor, self.cluster, self.planes) != (2, 1, 1, 1):
            return "ping-pong consumers: two consumers, one block a multiprocessor, no cluster, one plane"
        if self.per_multiprocessor > 1:
            if self.consumers > 1:
                return "two blocks a multiprocessor have one consumer each (setmaxnreg moves registers within one)"
            if self.accumulators * self.planes > TWO_BLOCK_REGISTERS // 2:
                return (f"block_n {self.block_n}: two blocks a multiprocessor hold at most "
                        f"{TWO_BLOCK_REGISTERS} registers a thread")
            if self._overfills_multiprocessor():
                return (f"{self.per_multiprocessor} blocks of {self.shared_bytes} bytes of shared memory "
                        f"a multiprocessor")
        return shared_memory_problem(self.shared_bytes)

    def mn_major_problem(self, mn_major: tuple[bool, bool]) -> str | None:
        """Why the kernel cannot read A or B MN-major (``mn_major``: A as K x M, B as K x N), or None: wgmma
        transposes 16-bit operands alone; tf32's A is read into the registers instead
        (``reads_a_from_registers``), its B K-major; blocks of a cluster share B's tile in whole boxes."""
        if not any(mn_major):
            return None
        if self.planes != 1:
            return f"wgmma reads {self.operand} operands K-major alone"
        if self.instruction_type == "tf32" and mn_major[1]:
            return "wgmma reads a tf32 B K-major alone (an MN-major A through the registers)"
        if mn_major[1] and self.block_n < ROW_BYTES // OPERANDS[self.operand]:
            return f"block_n {self.block_n}: an MN-major tile of B is boxes of {ROW_BYTES} bytes of N"
        if mn_major[1] and self.block_n // (ROW_BYTES // OPERANDS[self.operand]) % self.cluster:
            return f"block_n {self.block_n} in clusters of {self.cluster}: B's boxes are not shared evenly"
        return None

    def reads_a_from_registers(self, mn_major: tuple[bool, bool]) -> bool:
        """Whether the consumers read A from its tiles into their registers for wgmma: a tf32 A stored
        MN-major, which wgmma cannot transpose (a pass that laid it out K-major first cost a sizeable
        share of the product's time)."""
        return self.instruction_type == "tf32" and self.planes == 1 and mn_major[0]

    @property
    def block_m(self) -> int:
        """Rows of a block of C: its consumers', each consumer's own where they ping-pong."""
        return WARPGROUP_M if self.ping_pong else WARPGROUP_M * self.consumers

    @property
    def block_k(self) -> int:
        """K of a staged tile: 128 bytes of each row (64 of a 16-bit type, 32 of tf32)."""
        return ROW_BYTES // OPERANDS[self.operand]

    def tilings(self, columns: int | None = None) -> list[tuple[WgmmaParams, float]]:
        """This configuration in each tile of C that ``blas.cuda_gemm.fitted`` weighs for a product of
        ``columns`` columns, with the tile's rate (``TILE_RATES``, ``PING_PONG_RATES``; ``NARROW_RATES``
        where one narrow block holds all the product's columns, as in the products those rates were
        fitted to: several narrow blocks each read the block's rows of A, and ran slower than one wide
        block): its own tile as it is (a tuned configuration keeps the stages and cluster it was measured
        in), the others alone, as their rates were measured, in ``DEEPEST_STAGES`` stages or as many as
        fit in shared memory (where two blocks share a multiprocessor, both)."""
        tiles = [(replace(self, consumers=block_m // WARPGROUP_M, block_n=block_n, per_multiprocessor=blocks,
                          cluster=1, ping_pong=False), rate)
                 for (block_m, block_n, blocks), rate in TILE_RATES[self.planes].items()]
        if OPERANDS[self.operand] == 2:         # (measured on the GPU for 16-bit operands alone)
            tiles += [(replace(self, consumers=2, block_n=block_n, per_multiprocessor=1, cluster=1, ping_pong=True),
                       rate) for (_, block_n), rate in PING_PONG_RATES.items()]
            if columns is not None and columns <= NARROW_N[-1]:
                narrow = [(replace(self, consumers=block_m // WARPGROUP_M, block_n=block_n, per_multiprocessor=1,
                                   cluster=1, ping_pong=False), rate)
                          for (block_m, block_n), rate in NARROW_RATES.items()]
                tiles += [(config, rate) for config, rate in narrow if config.narrow]   # (a float32 C: 16)
        return [(self if replace(config, stages=self.stages, cluster=self.cluster) == self else config._deepest(), rate)
                for config, rate in tiles]

    def _deepest(self) -> WgmmaParams:
        """This tile in the most stages up to ``DEEPEST_STAGES`` that fit in shared memory."""
        config = replace(self, stages=DEEPEST_STAGES)
        while config.stages > STAGES[0] and (config.malformed() is not None or config._overfills_multiprocessor()):
            config = replace(config, stages=config.stages - 1)
        return config

    def _overfills_multiprocessor(self) -> bool:
        """Whether ``per_multiprocessor`` blocks need more shared memory than a multiprocessor has."""
        return self.per_multiprocessor * (self.shared_bytes + 1024) > MULTIPROCESSOR_SHARED_BYTES

    @property
    def in_flight(self) -> int:
        """Blocks of C a multiprocessor computes at once: its blocks', or two where its consumers ping-pong
        (``blas.cuda_gemm.fitted``: one stores C while the other's products run)."""
        return 2 if self.ping_pong else self.per_multiprocessor

    @property
    def planes(self) -> int:
        """Tiles of each operand a stage holds: the big and small parts of 3xtf32's, else one."""
        return 2 if self.operand == "3xtf32" else 1

    @property
    def box_k(self) -> int:
        """K of a staged tile in the tensor maps' elements: the same."""
        return self.block_k

    @property
    def tensor_type(self) -> str:
        """The element type of A's and B's tensor maps."""
        return TENSOR_TYPES[self.operand]

    @property
    def c_box(self) -> tuple[int, int]:
        """The box of C that TMA stores (rows, columns): a consumer's rows, 128 bytes of them."""
        return WARPGROUP_M, self.chunk_n

    @property
    def c_type(self) -> str:
        """The element type of C's tensor map."""
        return TENSOR_TYPES[self.out]

    @property
    def instruction_type(self) -> str:
        """The multiplicand type of the wgmma instruction."""
        return "tf32" if self.operand == "3xtf32" else self.operand

    @property
    def threads(self) -> int:
        """The producer warpgroup and the consumers."""
        return WARPGROUP * (1 + self.consumers)

    @property
    def instruction_k(self) -> int:
        """K of one instruction: 32 bytes of each operand (16 for 16-bit types, 8 for tf32)."""
        return 32 // OPERANDS[self.operand]

    @property
    def accumulators(self) -> int:
        """float32 accumulators a consumer thread holds: 64 x block_n over 128 threads."""
        return WARPGROUP_M * self.block_n // WARPGROUP

    @property
    def shares_k(self) -> bool:
        """Whether blocks share the K of blocks of C where that pays (stream-K, ``codelets.hopper``): not
        where consumers ping-pong (a part's sums are a team's, which would differ by block)."""
        return not self.ping_pong

    def sharing(self, shares: bool) -> WgmmaParams:
        """This configuration, whose kernel can always share K (``shares_k``): a product's schedule
        shares its last blocks of C only where that pays (``codelets.hopper.shared_out``)."""
        return self

    @property
    def teams(self) -> int:
        """Consumer threads that sum parts of C's K together (``codelets.hopper``, stream-K): a
        warpgroup, each its own 64 rows."""
        return self.consumers

    @property
    def sum_bytes(self) -> int:
        """Bytes of a block's float32 sums of C, its consumers' accumulators."""
        return self.block_m * self.block_n * 4

    @property
    def shared_bytes(self) -> int:
        """Shared memory: every stage's tiles of A and B (each of their planes), the two chunks of C each
        consumer stages for TMA to store, their barriers, and room to align the tiles to 1024 bytes (the
        128-byte swizzle's period)."""
        return ((self.stages * self.planes * (self.block_m + self.block_n) + self.staged_rows_of_c) * ROW_BYTES
                + 16 * self.stages + (16 if self.ping_pong else 0) + 1024)

    @property
    def staged_rows_of_c(self) -> int:
        """Rows of 128 bytes of C in shared memory: two chunks of each consumer's 64 rows, for TMA (none
        for a narrow block, stored from the registers)."""
        return 0 if self.narrow else 2 * WARPGROUP_M * self.consumers

    @property
    def narrow(self) -> bool:
        """Whether a block computes fewer columns of C than a chunk TMA stores (``NARROW_N``), and so
        stores its C from the registers."""
        return self.block_n < self.chunk_n

    @property
    def out_bytes(self) -> int:
        """Bytes of an element of C."""
        return 4 if self.out == "f32" else 2

    @property
    def chunk_n(self) -> int:
        """Columns of C in a chunk TMA stores: 128 bytes of each row."""
        return ROW_BYTES // self.out_bytes

    def describe(self) -> str:
        return (f"wgmma m{self.block_m}n{self.block_n}k{self.block_k} {self.operand} stages{self.stages} "
                f"group{self.group}" + (f" out {self.out}" if self.out != "f32" else "")
                + (f" cluster{self.cluster}" if self.cluster > 1 else "")
                + (f" x{self.per_multiprocessor} a multiprocessor" if self.per_multiprocessor > 1 else "")
                + (" ping-pong" if self.ping_pong else ""))
