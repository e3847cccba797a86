"""``render``: the CUDA kernel that brings a product's operands into the layout the sm_90a families read
(``wgmma``, ``dmma``): each ``rows`` x ``padded`` row-major, K contiguous, zeros from K to ``padded``
(TMA reads rows a multiple of 16 bytes apart, and the zeros add nothing to the sums). An operand is
stored either as ``rows`` x K or, transposed, as K x ``rows`` (its rows ``ld`` elements apart); a
conjugated one (complex128) has its imaginary parts negated.

One launch lays out both operands that need it (A's tiles first, then B's: they share K), and zeroes
the counters of the product kernel's stream-K parts on the way, so that a product takes two launches
at most (3xTF32 more: the split into planes, its flag's memset and the float32 fallback). A block lays
out a tile of ``TILE_ROWS`` rows by a 16-byte vector of K for each of a warp's threads: it reads the
tile into shared memory element by element, a warp along whichever side of it is contiguous in the
stored operand (its rows, or K where transposed), and writes each row out in 16-byte stores, which the
padded layout's aligned rows allow whatever the stored ones are."""

from __future__ import annotations

#: Rows of a tile, and threads across a block (a warp); the block's threads are TILE_ROWS x ROWS_PER_PASS.
TILE_ROWS, ROWS_PER_PASS = 32, 8
#: The entry point of each element size in bytes.
NAMES = {2: "k_major_2", 4: "k_major_4", 8: "k_major_8", 16: "k_major_16"}
#: Bytes of the vector a thread writes (a row of the layout is a multiple of it: ``padded_k``).
VECTOR_BYTES = 16
#: The most blocks a grid has down its second dimension (the kernel's blocks then take several tiles of K).
MAX_GRID_Y = 65535
#: An operand's flags (``render``): stored transposed (K x rows), and conjugated.
TRANSPOSED, CONJUGATED = 1, 2


def tile_k(element_bytes: int) -> int:
    """Elements of K in a block's tile: a 16-byte vector for each of the warp's threads."""
    return TILE_ROWS * VECTOR_BYTES // element_bytes


def render() -> str:
    """The source of every element size's kernel, each ``NAMES[bytes](src_a, dst_a, rows_a, ld_a,
    flags_a, src_b, dst_b, rows_b, ld_b, flags_b, k, padded, zeroed, zero_count)`` over ``grid``'s blocks
    of (``TILE_ROWS``, ``ROWS_PER_PASS``) threads: an operand of 0 rows is left as it is; ``flags`` are
    ``TRANSPOSED`` and ``CONJUGATED``; the first ``zero_count`` ints at ``zeroed`` are set to 0."""
    entries = "\n".join(
        f"""extern "C" __global__ void __launch_bounds__(TILE_ROWS * ROWS_PER_PASS) {name}(
        const {kind}* __restrict__ src_a, {kind}* __restrict__ dst_a, int rows_a, long long ld_a, int flags_a,
        const {kind}* __restrict__ src_b, {kind}* __restrict__ dst_b, int rows_b, long long ld_b, int flags_b,
        int k, int padded, int* __restrict__ zeroed, int zero_count) {{
    const int tiles_a = (rows_a + TILE_ROWS - 1) / TILE_ROWS;
    if (blockIdx.x == 0 && blockIdx.y == 0)
        for (int i = threadIdx.y * TILE_ROWS + threadIdx.x; i < zero_count; i += TILE_ROWS * ROWS_PER_PASS)
            zeroed[i] = 0;
    if ((int)blockIdx.x < tiles_a)
        k_major<{kind}>(src_a, dst_a, rows_a, k, padded, ld_a, flags_a, blockIdx.x * TILE_ROWS);
    else
        k_major<{kind}>(src_b, dst_b, rows_b, k, padded, ld_b, flags_b, (blockIdx.x - tiles_a) * TILE_ROWS);
}}""" for name, kind in zip(NAMES.values(), ("unsigned short", "unsigned int", "unsigned long long", "double2")))
    return f"""// autogemm: operands brought into the K-contiguous, zero-padded layout of the sm_90a families
#define TILE_ROWS {TILE_ROWS}
#define ROWS_PER_PASS {ROWS_PER_PASS}
#define VECTOR_BYTES {VECTOR_BYTES}
#define TRANSPOSED {TRANSPOSED}
#define CONJUGATED {CONJUGATED}

template <typename T> __device__ __forceinline__ T conjugated(T v, bool conjugate) {{ return v; }}
template <> __device__ __forceinline__ double2 conjugated(double2 v, bool conjugate) {{
    return conjugate ? make_double2(v.x, -v.y) : v;
}}

// dst[r][c] for r0 <= r < r0 + TILE_ROWS, r < rows, and the block's columns c < padded: src[r][c] (or
// src[c][r] transposed) for c < k, else 0
template <typename T>
__device__ __forceinline__ void k_major(const T* __restrict__ src, T* __restrict__ dst, int rows, int k,
                                        int padded, long long ld, int flags, int r0) {{
    constexpr int VECTOR = VECTOR_BYTES / sizeof(T);     // elements a thread writes at once
    constexpr int TILE_K = TILE_ROWS * VECTOR;
    // a row of the tile an odd number of 32-bit words (for 8- and 16-byte elements, accessed a half or a
    // quarter of a warp at a time, one element) longer than its vectors: a column of it, written across
    // rows where transposed, falls on different banks
    constexpr int PAD = sizeof(T) < 4 ? 4 / sizeof(T) : 1;
    __shared__ T tile[TILE_ROWS][TILE_K + PAD];
    const int x = threadIdx.x, y = threadIdx.y;
    const T zero = {{}};
    const bool conjugate = flags & CONJUGATED;
    // the block's tiles of K: every gridDim.y-th (a grid has at most 65535 blocks down it)
    for (int c0 = blockIdx.y * TILE_K; c0 < padded; c0 += gridDim.y * TILE_K) {{
        const int width = min(TILE_K, padded - c0);            // (a short K fills a tile's first columns)
        if (!(flags & TRANSPOSED)) {{
            for (int i = y; i < TILE_ROWS; i += ROWS_PER_PASS) {{  // row r0 + i, read along K
                const int r = r0 + i;
                #pragma unroll
                for (int j = x; j < width; j += TILE_ROWS) {{
                    const int c = c0 + j;
                    tile[i][j] = r < rows && c < k ? src[(long long)r * ld + c] : zero;
                }}
            }}
        }} else {{
            for (int j = y; j < width; j += ROWS_PER_PASS) {{      // stored row c0 + j, read along the rows
                const int c = c0 + j, r = r0 + x;
                tile[x][j] = c < k && r < rows ? src[(long long)c * ld + r] : zero;
            }}
        }}
        __syncthreads();
        const int c = c0 + x * VECTOR;
        for (int i = y; c < padded && i < TILE_ROWS && r0 + i < rows; i += ROWS_PER_PASS) {{
            __align__(16) T out[VECTOR];                       // row r0 + i, 16 bytes a thread
            #pragma unroll
            for (int v = 0; v < VECTOR; ++v) out[v] = conjugated(tile[i][x * VECTOR + v], conjugate);
            *reinterpret_cast<uint4*>(dst + (long long)(r0 + i) * padded + c) =
                *reinterpret_cast<const uint4*>(out);
        }}
        __syncthreads();                                       // (before the tile is filled again)
    }}
}}

{entries}
"""


def grid(rows_a: int, rows_b: int, padded: int, element_bytes: int) -> tuple[int, int]:
    """The blocks of the pass over operands of ``rows_a`` and ``rows_b`` rows (0: one left as it lies),
    laid out ``padded`` elements apart; at least one, which zeroes the counters."""
    row_tiles = -(-rows_a // TILE_ROWS) - (-rows_b // TILE_ROWS)
    return max(1, row_tiles), max(1, min(MAX_GRID_Y, -(-padded // tile_k(element_bytes))))


def flags(transposed: bool, conjugated: bool) -> int:
    """An operand's ``flags`` argument."""
    return TRANSPOSED * transposed | CONJUGATED * conjugated


def padded_k(k: int, element_bytes: int) -> int:
    """K rounded up so that a row of the operand is a multiple of 16 bytes (TMA's rule)."""
    step = max(1, 16 // element_bytes)
    return -(-k // step) * step
