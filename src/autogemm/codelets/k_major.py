"""``render``: the CUDA kernel that brings an operand into the layout the sm_90a families read (``wgmma``,
``dmma``): ``rows`` x ``padded`` row-major, K contiguous, zeros from K to ``padded`` (TMA reads rows a
multiple of 16 bytes apart, and the zeros add nothing to the sums). The operand is stored either as
``rows`` x K or, ``transposed``, as K x ``rows`` (its rows ``ld`` elements apart); ``conjugate`` negates
the imaginary parts of complex128. A transposed operand goes through a 32 x 32 tile of shared memory, so
that both the reads and the writes of a warp are contiguous."""

from __future__ import annotations

#: Threads of a block: 32 columns of the tile by this many rows, each thread taking every this-many-th row.
TILE, ROWS_PER_PASS = 32, 8
#: The entry point of each element size in bytes.
NAMES = {2: "k_major_2", 4: "k_major_4", 8: "k_major_8", 16: "k_major_16"}


def render() -> str:
    """The source of every element size's kernel, each ``NAMES[bytes](src, dst, rows, k, padded, ld,
    transposed, conjugate)`` over a grid of (padded / 32, rows / 32) blocks of (32, 8) threads."""
    entries = "\n".join(
        f"""extern "C" __global__ void __launch_bounds__(TILE * ROWS_PER_PASS) {name}(
        const {kind}* __restrict__ src, {kind}* __restrict__ dst, int rows, int k, int padded, long long ld,
        int transposed, int conjugate) {{
    k_major<{kind}>(src, dst, rows, k, padded, ld, transposed, conjugate);
}}""" for name, kind in zip(NAMES.values(), ("unsigned short", "unsigned int", "unsigned long long", "double2")))
    return f"""// autogemm: an operand brought into the K-contiguous, zero-padded layout of the sm_90a families
#define TILE {TILE}
#define ROWS_PER_PASS {ROWS_PER_PASS}

template <typename T> __device__ __forceinline__ T conjugated(T v, int conjugate) {{ return v; }}
template <> __device__ __forceinline__ double2 conjugated(double2 v, int conjugate) {{
    return conjugate ? make_double2(v.x, -v.y) : v;
}}

// dst[r][c] for r < rows, c < padded: src[r][c] (or src[c][r] transposed) for c < k, else 0
template <typename T>
__device__ __forceinline__ void k_major(const T* __restrict__ src, T* __restrict__ dst, int rows, int k,
                                        int padded, long long ld, int transposed, int conjugate) {{
    __shared__ T tile[TILE][TILE + 1];                   // + 1: a column's elements in different banks
    const int c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;
    const int x = threadIdx.x, y = threadIdx.y;
    const T zero = {{}};
    if (!transposed) {{
        for (int i = y; i < TILE; i += ROWS_PER_PASS) {{
            const int r = r0 + i, c = c0 + x;
            if (r < rows && c < padded)
                dst[(long long)r * padded + c] = c < k ? conjugated(src[(long long)r * ld + c], conjugate) : zero;
        }}
        return;
    }}
    for (int i = y; i < TILE; i += ROWS_PER_PASS) {{      // rows c0 + i of the stored K x rows, read along
        const int c = c0 + i, r = r0 + x;
        tile[i][x] = c < k && r < rows ? src[(long long)c * ld + r] : zero;
    }}
    __syncthreads();
    for (int i = y; i < TILE; i += ROWS_PER_PASS) {{      // written along K
        const int r = r0 + i, c = c0 + x;
        if (r < rows && c < padded) dst[(long long)r * padded + c] = conjugated(tile[x][i], conjugate);
    }}
}}

{entries}
"""


def padded_k(k: int, element_bytes: int) -> int:
    """K rounded up so that a row of the operand is a multiple of 16 bytes (TMA's rule)."""
    step = max(1, 16 // element_bytes)
    return -(-k // step) * step
