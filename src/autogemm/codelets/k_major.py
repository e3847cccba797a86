"""``render``: the CUDA kernel that brings an operand into the layout the sm_90a families read (``wgmma``,
``dmma``): ``rows`` x ``padded`` row-major, K contiguous, zeros from K to ``padded`` (TMA reads rows a
multiple of 16 bytes apart, and the zeros add nothing to the sums). The operand is stored either as
``rows`` x K or, ``transposed``, as K x ``rows`` (its rows ``ld`` elements apart); ``conjugate`` negates
the imaginary parts of complex128.

A block lays out a tile of ``TILE_ROWS`` rows by 16-byte vectors of K for each of its ``TILE_ROWS``
threads across (``VECTOR`` elements each): it reads the tile into shared memory element by element, a
warp along whichever side of it is contiguous in the stored operand (its rows, or K where transposed),
and writes each row out in 16-byte stores. The padded layout's rows are 16-byte aligned whatever the
stored ones are, so the writes, which are as many bytes as the reads, go out whole: a pass of an
operand moves it at a large share of the memory's bandwidth, where one element a thread each way
left it at a fraction."""

from __future__ import annotations

#: Rows of a tile, and threads across a block (a warp); the block's threads are TILE_ROWS x ROWS_PER_PASS.
TILE_ROWS, ROWS_PER_PASS = 32, 8
#: The entry point of each element size in bytes.
NAMES = {2: "k_major_2", 4: "k_major_4", 8: "k_major_8", 16: "k_major_16"}
#: Bytes of the vector a thread writes (a row of the layout is a multiple of it: ``padded_k``).
VECTOR_BYTES = 16


def tile_k(element_bytes: int) -> int:
    """Elements of K in a block's tile: a 16-byte vector for each of the warp's threads."""
    return TILE_ROWS * VECTOR_BYTES // element_bytes


def render() -> str:
    """The source of every element size's kernel, each ``NAMES[bytes](src, dst, rows, k, padded, ld,
    transposed, conjugate)`` over a grid of (rows / ``TILE_ROWS``, padded / ``tile_k``) blocks of
    (``TILE_ROWS``, ``ROWS_PER_PASS``) threads (``grid``)."""
    entries = "\n".join(
        f"""extern "C" __global__ void __launch_bounds__(TILE_ROWS * ROWS_PER_PASS) {name}(
        const {kind}* __restrict__ src, {kind}* __restrict__ dst, int rows, int k, int padded, long long ld,
        int transposed, int conjugate) {{
    k_major<{kind}>(src, dst, rows, k, padded, ld, transposed, conjugate);
}}""" for name, kind in zip(NAMES.values(), ("unsigned short", "unsigned int", "unsigned long long", "double2")))
    return f"""// autogemm: an operand brought into the K-contiguous, zero-padded layout of the sm_90a families
#define TILE_ROWS {TILE_ROWS}
#define ROWS_PER_PASS {ROWS_PER_PASS}
#define VECTOR_BYTES {VECTOR_BYTES}

template <typename T> __device__ __forceinline__ T conjugated(T v, int conjugate) {{ return v; }}
template <> __device__ __forceinline__ double2 conjugated(double2 v, int conjugate) {{
    return conjugate ? make_double2(v.x, -v.y) : v;
}}

// dst[r][c] for r < rows, c < padded: src[r][c] (or src[c][r] transposed) for c < k, else 0
template <typename T>
__device__ __forceinline__ void k_major(const T* __restrict__ src, T* __restrict__ dst, int rows, int k,
                                        int padded, long long ld, int transposed, int conjugate) {{
    constexpr int VECTOR = VECTOR_BYTES / sizeof(T);     // elements a thread writes at once
    constexpr int TILE_K = TILE_ROWS * VECTOR;
    // a row of the tile an odd number of 32-bit words (for 8- and 16-byte elements, accessed a half or a
    // quarter of a warp at a time, one element) longer than its vectors: a column of it, written across
    // rows where transposed, falls on different banks
    constexpr int PAD = sizeof(T) < 4 ? 4 / sizeof(T) : 1;
    __shared__ T tile[TILE_ROWS][TILE_K + PAD];
    const int r0 = blockIdx.x * TILE_ROWS, c0 = blockIdx.y * TILE_K;     // (rows on x: there may be millions)
    const int x = threadIdx.x, y = threadIdx.y;
    const T zero = {{}};
    const int width = min(TILE_K, padded - c0);                // (a short K fills a tile's first columns)
    if (!transposed) {{
        for (int i = y; i < TILE_ROWS; i += ROWS_PER_PASS) {{      // row r0 + i, read along K
            const int r = r0 + i;
            #pragma unroll
            for (int j = x; j < width; j += TILE_ROWS) {{
                const int c = c0 + j;
                tile[i][j] = r < rows && c < k ? src[(long long)r * ld + c] : zero;
            }}
        }}
    }} else {{
        for (int j = y; j < width; j += ROWS_PER_PASS) {{          // stored row c0 + j, read along the rows
            const int c = c0 + j, r = r0 + x;
            tile[x][j] = c < k && r < rows ? src[(long long)c * ld + r] : zero;
        }}
    }}
    __syncthreads();
    const int c = c0 + x * VECTOR;
    if (c >= padded) return;                                   // (padded is a whole number of vectors)
    for (int i = y; i < TILE_ROWS; i += ROWS_PER_PASS) {{          // row r0 + i, 16 bytes a thread
        const int r = r0 + i;
        if (r >= rows) break;
        __align__(16) T out[VECTOR];
        #pragma unroll
        for (int v = 0; v < VECTOR; ++v) out[v] = conjugated(tile[i][x * VECTOR + v], conjugate);
        *reinterpret_cast<uint4*>(dst + (long long)r * padded + c) = *reinterpret_cast<const uint4*>(out);
    }}
}}

{entries}
"""


def grid(rows: int, padded: int, element_bytes: int) -> tuple[int, int]:
    """The blocks of the pass over an operand of ``rows`` rows laid out ``padded`` elements apart."""
    return -(-rows // TILE_ROWS), -(-padded // tile_k(element_bytes))


def padded_k(k: int, element_bytes: int) -> int:
    """K rounded up so that a row of the operand is a multiple of 16 bytes (TMA's rule)."""
    step = max(1, 16 // element_bytes)
    return -(-k // step) * step
