"""``DmmaParams``: one configuration of the sm_90a FP64 kernel."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ...dtypes import Dtype
from ..fields import FamilyParams, choices_problem
from ..hopper import CLUSTERS, ROW_BYTES, WARPGROUP, SingleRound, shared_memory_problem

#: Tiles in flight in shared memory: TMA loads the next ones while the warps multiply the current one.
STAGES = (2, 3, 4, 6, 8)
#: Consumer warpgroups of a block (four warps each).
CONSUMERS = (1, 2)
#: Rows of warps in a block (the rest of its consumer warps side by side along N).
WARPS_M = (1, 2, 4)
#: Rows and columns of C one warp computes, in tiles of the 16 x 8 instruction.
WARP_M, WARP_N = (32, 64), (16, 32, 64)
#: Rows of blocks of C taken together (``codelets.hopper``).
GROUPS = (1, 8, 16)
#: K of one ``mma.sync`` f64 instruction (m16n8k4, k8 or k16): a larger one multiplies more per instruction.
MMA_K = (4, 8, 16)
#: float64 accumulators a thread holds at most (two registers each).
MAX_ACCUMULATORS = 64
#: float64 a consumer thread holds at most in its accumulators and fragments (``DmmaParams.held``): over
#: this ptxas spills, and over 4 fewer in clusters of blocks of two consumer warpgroups (measured over the
#: space, with NVRTC 13.0 and 13.5).
MAX_HELD = 88
#: float64 a consumer thread holds at most (``DmmaParams.held``) where blocks share the K of blocks of C
#: (stream-K: its sums' trips through memory hold registers too): compiled over the space with NVRTC 13,
#: none of the warp tiles up to 64 spilled, and a quarter to a third of those of 72 to 88 did.
SHARES_K_MAX_HELD = 64
#: The dtypes: float64, and complex128 (each product of complex fragments four real ones).
DTYPES = ("d", "z")
#: Whether the kernel reads an operand stored MN-contiguous as it lies, or it is laid out K-contiguous first
#: (``mn_major_problem``). Read so, the pass over the operand is saved: half a warp's reads of a tile
#: fall in distinct banks in either layout (``render.K_INDEX``), and the kernel that reads K-major
#: operands is the same.
READS_MN_MAJOR = (False, True)
#: Whether blocks share the K of a product's last blocks of C (``DmmaParams.sharing``).
SHARES_K = (False, True)


#: The dmma family's tiles of C, each as its warps (rows of warps, and each warp's rows and columns of C, in
#: two consumer warpgroups), with its rate on large products as a fraction of the fastest's (NN 2048^3,
#: 4096^3 and 4096 x 4096 x 1024, the median of 3 rounds). float64 128 x 64 counts 0.97 though it kept up
#: with 128 x 128 there: it reads 1.5 times as much of A and B a flop, which tells on the largest products,
#: so it is taken only where it saves more rounds than that (a product of few blocks of C). float64 64 x 64
#: counts less than it kept up there: in a single round of a deep product (one block a multiprocessor)
#: its small tile leaves the block waiting on its loads (the GEMM guide's kernels page has the rates).
TILE_RATES: dict[str, dict[tuple[int, int, int], float]] = {
    "d": {(2, 64, 32): 1.0, (4, 32, 32): 0.97, (2, 32, 32): 0.97, (2, 32, 16): 0.75},
    "z": {(2, 32, 32): 1.0, (2, 64, 16): 1.0, (2, 32, 16): 0.95, (1, 32, 16): 0.95}}


@dataclass(frozen=True)
class DmmaParams(FamilyParams):
    """C (M x N) = alpha A B^T + beta C (beta 0 not reading C), A (M x K) and B (N x K) each stored
    K-contiguous, or MN-contiguous as K x M (K x N), in float64 or complex128 (``dtype`` 'd' or 'z'), on
    the FP64 tensor cores (``mma.sync`` m16n8k``mma_k`` f64: wgmma has no FP64 form; a complex product is
    four real ones on the real and imaginary parts, which a complex's 16 bytes hold side by side). Blocks
    are persistent and warp-specialized (``codelets.hopper``): a producer warpgroup loads tiles of 128
    bytes of K (MN-contiguous: of M or N) by TMA into ``stages`` buffers, and ``consumers`` warpgroups of
    four warps each, ``warps_m`` rows of warps, compute ``warp_m`` x ``warp_n`` of C per warp from
    fragments read out of the swizzled tiles. Any M, N and K (TMA's rows 16 bytes apart: K-contiguous
    float64, K even; MN-contiguous, M (N) even)."""

    family: ClassVar[str] = "dmma"
    #: The kernel stores C as it lies: a product is never given to it swapped.
    stores_c_transposed: ClassVar[bool] = False
    #: No block of the family is narrower than its chunk of C (``WgmmaParams.narrow``).
    narrow: ClassVar[bool] = False
    #: alpha and beta reach the kernel in the operands' own type (float64, complex128).
    scalar_type: ClassVar[str] = "operands"
    #: A product of a single round of blocks shares them wherever that pays, however full the round: a
    #: deep float64 product of one round ran sooner with its K shared than in whole blocks, the sharing
    #: costing a small part of a round; each cluster takes 32 tiles of K at least (with 16 each, sharing
    #: ran slower than whole blocks of a smaller tile). The kernels page of the GEMM guide has the figures.
    single_round: ClassVar[SingleRound] = SingleRound(1.0, 0.1, 32)
    dtype: str = "d"
    consumers: int = 2
    warps_m: int = 2
    warp_m: int = 64
    warp_n: int = 32
    stages: int = 4
    group: int = 8
    cluster: int = 1
    mma_k: int = 8
    reads_mn_major: bool = False
    #: Whether blocks share the K of a product's last blocks of C (stream-K, ``sharing``).
    shares_k: bool = False
    #: Blocks a multiprocessor runs at once: one (its warp tiles take the registers of two).
    per_multiprocessor: ClassVar[int] = 1

    def tilings(self, columns: int | None = None) -> list[tuple[DmmaParams, float]]:
        """This configuration in each tile of C that ``blas.cuda_gemm.fitted`` weighs (for a product of any
        number of ``columns``), with the tile's rate (``TILE_RATES``; its own, where it is not among them,
        at the slowest one's): its own as it is, the others alone (in clusters of one), as their rates
        were measured."""
        rates = TILE_RATES[self.dtype]
        own = (self.warps_m, self.warp_m, self.warp_n)
        own_rate = rates.get(own, min(rates.values())) if self.consumers == 2 else min(rates.values())
        return [(self, own_rate)] + [(replace(self, consumers=2, warps_m=warps_m, warp_m=warp_m, warp_n=warp_n,
                                              cluster=1), rate)
                                     for (warps_m, warp_m, warp_n), rate in rates.items()]

    def dtype_problem(self, dt: Dtype) -> str | None:
        """Why this configuration does not compute ``dt``'s products, or None."""
        return None if dt.key == self.dtype else f"it multiplies {self.dtype}, not {dt.key}"


    def malformed(self) -> str | None:
        """Why this is no configuration of the family, or None."""
        why = choices_problem(self, {"dtype": DTYPES, "consumers": CONSUMERS, "warps_m": WARPS_M, "warp_m": WARP_M,
                                     "warp_n": WARP_N, "stages": STAGES, "group": GROUPS,
                                     "cluster": CLUSTERS, "mma_k": MMA_K,
                                     "reads_mn_major": READS_MN_MAJOR, "shares_k": SHARES_K})
        if why:
            return why
        if self.mma_k > self.block_k:
            return f"k{self.mma_k}: over a staged tile's K of {self.block_k}"
        if self.accumulators > MAX_ACCUMULATORS:
            return f"a warp tile of {self.warp_m} x {self.warp_n}: over {MAX_ACCUMULATORS} accumulators a thread"
        most = MAX_HELD - (4 if self.cluster > 1 and self.consumers > 1 else 0)
        if self.held > most:
            return (f"a warp tile of {self.warp_m} x {self.warp_n} at k{self.mma_k}: {self.held} float64 a thread in "
                    f"accumulators and fragments, over {most}")
        if self.shares_k and self.held > SHARES_K_MAX_HELD:
            return (f"stream-K with {self.held} float64 a thread in accumulators and fragments, over "
                    f"{SHARES_K_MAX_HELD}")
        if max(self.block_m, self.block_n) > 256:
            return f"a block of {self.block_m} x {self.block_n}: TMA copies at most 256 rows"
        return shared_memory_problem(self.shared_bytes)

    @property
    def in_flight(self) -> int:
        """Blocks of C a multiprocessor computes at once (``blas.cuda_gemm.fitted``): one."""
        return self.per_multiprocessor

    @property
    def warps(self) -> int:
        """Consumer warps of a block."""
        return 4 * self.consumers

    @property
    def block_m(self) -> int:
        return self.warp_m * self.warps_m

    @property
    def block_n(self) -> int:
        return self.warp_n * (self.warps // self.warps_m)

    @property
    def element_bytes(self) -> int:
        return 16 if self.dtype == "z" else 8

    @property
    def block_k(self) -> int:
        """K of a staged tile: 128 bytes of each row, 16 float64 or 8 complex128."""
        return ROW_BYTES // self.element_bytes

    @property
    def span(self) -> int:
        """K indices of a row each thread holds in one instruction's fragment (``mma_k`` / 4): the kernel
        chooses which (``render.K_INDEX``), as the order of K is the products' own to choose."""
        return self.mma_k // 4

    @property
    def held(self) -> int:
        """float64 a consumer thread holds at once: its accumulators, and for one instruction's K its
        fragments of every tile of B and of one tile of A (two rows); float64 holds the next ones too
        (``render.REAL_LOOP``)."""
        fragments = (self.warp_n // 8 + 2) * self.span * (self.element_bytes // 8)
        return self.accumulators + (2 * fragments if self.dtype == "d" else fragments)

    @property
    def threads(self) -> int:
        return WARPGROUP * (1 + self.consumers)

    @property
    def accumulators(self) -> int:
        """float64 accumulators a consumer thread holds: its warp's tile over 32 threads (real and
        imaginary parts for complex128)."""
        return self.warp_m * self.warp_n // 32 * (self.element_bytes // 8)

    def sharing(self, shares: bool) -> DmmaParams:
        """This configuration with its kernel sharing the K of a product's last blocks of C (stream-K,
        ``codelets.hopper``) or not, as far as it can: only where a consumer thread holds at most
        ``SHARES_K_MAX_HELD`` float64. Compiled in only where a product's schedule shares (``blas.cuda_gemm.
        fitted``): the persistent schedule that can share costs blocks computed whole their time too."""
        return replace(self, shares_k=shares and self.held <= SHARES_K_MAX_HELD)

    @property
    def teams(self) -> int:
        """Consumer threads that sum parts of C's K together (stream-K): all of a block's, one team."""
        return 1

    @property
    def sum_bytes(self) -> int:
        """Bytes of a block's sums of C, its consumers' accumulators."""
        return self.block_m * self.block_n * self.element_bytes

    @property
    def shared_bytes(self) -> int:
        """Every stage's tiles of A and B, their barriers, and room to align the tiles to 1024 bytes."""
        return self.stages * (self.block_m + self.block_n) * ROW_BYTES + 16 * self.stages + 1024

    @property
    def box_k(self) -> int:
        """K of a staged tile in the tensor maps' float64: 16."""
        return ROW_BYTES // 8

    @property
    def tensor_type(self) -> str:
        return "float64"

    def mn_major_problem(self, mn_major: tuple[bool, bool]) -> str | None:
        """Why the kernel does not read A or B MN-major (``mn_major``: A as K x M, B as K x N), or None: the
        configuration lays such operands out first (``READS_MN_MAJOR``), or the blocks of a cluster would
        share B's tile in part of a box of 128 bytes of N."""
        if any(mn_major) and not self.reads_mn_major:
            return "this configuration lays operands stored MN-major out K-major first"
        if mn_major[1] and self.block_n // (ROW_BYTES // self.element_bytes) % self.cluster:
            return f"block_n {self.block_n} in clusters of {self.cluster}: B's boxes are not shared evenly"
        return None

    @property
    def c_box(self) -> None:
        """C is stored from the registers: no box of it for TMA (``WgmmaParams.c_box``)."""
        return None

    def describe(self) -> str:
        return (f"dmma {self.dtype} m{self.block_m}n{self.block_n}k{self.block_k} mma k{self.mma_k} "
                f"warps {self.warps_m}x{self.warps // self.warps_m} of {self.warp_m}x{self.warp_n} "
                f"stages{self.stages} group{self.group}"
                + (f" cluster{self.cluster}" if self.cluster > 1 else "")
                + (" reads MN-major" if self.reads_mn_major else "") + (" stream-K" if self.shares_k else ""))
