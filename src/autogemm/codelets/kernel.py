"""``KernelSource``: generated OpenCL C with the launch geometry it was written for."""

from __future__ import annotations

from dataclasses import dataclass

#: The most K slices one launch computes side by side (split K), each a layer of work-groups.
MAX_SLICES = 64
#: A plan whose A and B rows (as its kernel reads them) all start at multiples of this many bytes tells
#: the kernel so (``aligned``): the widest single copy a GPU makes, which it may then use at any edge
ALIGNED_BYTES = 16
#: The parameters of every GEMM kernel of the OpenCL path, one letter each (``runtime.opencl.arguments``):
#: M, N, K, alpha, beta; A, B and C each as memory, offset, leading dimension; the layer strides of A, B, C.
GEMM_SIGNATURE = "iiiee" + "mli" * 3 + "iii"
#: What a stream-K kernel takes after them: its partial sums and how many work-groups share the tiles.
STREAM_K_SIGNATURE = "mi"
#: What a kernel that adds its K slices up takes after them: the partial sums, the tiles' arrivals and a
#: slice's depth.
SUMMED_SIGNATURE = "mmi"
#: What a kernel that reads its K slices where A and B lie, each into its layer of C, takes after them: a
#: slice's depth.
SLICED_SIGNATURE = "i"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    return ceil_div(a, b) * b


@dataclass(frozen=True)
class KernelSource:
    """One kernel: its source, entry point, build options, and the C block one work-group computes."""

    name: str
    source: str
    options: tuple[str, ...]
    local_size: tuple[int, int]        # (work-items along N, along M): OpenCL dimensions 0 and 1
    block: tuple[int, int, int]        # (rows of C, columns of C, K step) per work-group

    def global_size(self, m: int, n: int) -> tuple[int, int]:
        """NDRange covering an m x n C with whole work-groups."""
        rows, cols, _ = self.block
        return (ceil_div(n, cols) * self.local_size[0], ceil_div(m, rows) * self.local_size[1])
