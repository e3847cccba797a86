"""``WgmmaParams``: one configuration of the sm_90a kernel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

#: wgmma's multiplicand types and the bytes of one element (tf32 reads float32's, its low mantissa bits
#: dropped).
OPERANDS = {"f16": 2, "bf16": 2, "tf32": 4}
#: Tiles in flight: the next ones load (cp.async) while wgmma multiplies the current one.
STAGES = (1, 2, 3)
#: Shared memory a block of sm_90 may use (dynamic, asked for at launch).
MAX_SHARED_BYTES = 227 * 1024
#: The columns of C one block computes: N of one ``m64nNkK`` instruction.
BLOCK_N = (64, 128, 256)
#: K staged in shared memory per step (four k16 instructions for 64 of a 16-bit type).
BLOCK_K = (32, 64)
#: Rows of C one block (one warpgroup) computes: M of the instruction.
BLOCK_M = 64
#: Threads of a warpgroup.
WARPGROUP = 128


@dataclass(frozen=True)
class WgmmaParams:
    """C (float32, M x N) = A (M x K) B^T (B: N x K), both K-contiguous ("NT", x @ W^T), of ``operand``
    elements; each block of one warpgroup computes ``BLOCK_M`` x ``block_n`` of C, staging ``block_k`` of
    K at a time. M, N and K must be multiples of the block (plans pad the rest). ``stages`` tiles of A and B
    are in shared memory at once, the next ones loading while the current one is multiplied."""

    family: ClassVar[str] = "wgmma"
    operand: str = "f16"
    block_n: int = 128
    block_k: int = 64
    stages: int = 2

    def malformed(self) -> str | None:
        """Why this is no configuration of the family, or None."""
        if self.operand not in OPERANDS:
            return f"operand {self.operand!r}: expected one of {', '.join(OPERANDS)}"
        if self.block_n not in BLOCK_N:
            return f"block_n {self.block_n}: expected one of {BLOCK_N}"
        if self.block_k not in BLOCK_K:
            return f"block_k {self.block_k}: expected one of {BLOCK_K}"
        if self.stages not in STAGES:
            return f"stages {self.stages}: expected one of {STAGES}"
        if self.shared_bytes > MAX_SHARED_BYTES:
            return f"tiles of {self.shared_bytes} bytes, over the {MAX_SHARED_BYTES} of shared memory of a block"
        return None

    @property
    def instruction_k(self) -> int:
        """K of one instruction: 32 bytes of each operand (16 for 16-bit types, 8 for tf32)."""
        return 32 // OPERANDS[self.operand]

    @property
    def accumulators(self) -> int:
        """float32 accumulators a thread holds: 64 x block_n over 128 threads."""
        return BLOCK_M * self.block_n // WARPGROUP

    @property
    def shared_bytes(self) -> int:
        """Shared memory of the staged tiles of A and B, every stage's."""
        return self.stages * (BLOCK_M + self.block_n) * self.block_k * OPERANDS[self.operand]

    def describe(self) -> str:
        return f"wgmma m64n{self.block_n}k{self.instruction_k} {self.operand} bk{self.block_k} stages{self.stages}"
