"""``render``: the CUDA kernel that computes a 3xTF32 product in plain float32 where an operand holds a
value 3xTF32 cannot split into its two parts: inf or NaN (the rest of inf would be inf - inf, and
products NaN where float32's are infinite), or a value below 2^-115 but zero (its rest would lie below
float32's normal range, where TF32 keeps fewer of its bits). ``codelets.wgmma``'s split kernel flags
such a value, the tensor-core kernel then leaves the product alone, and this kernel, launched after it,
computes it; where nothing was flagged it returns at once.

It reads each operand as it lies in memory, the rows x K matrix X stored as X or, transposed, as X^T
(rows ``ld`` elements apart), and computes C = alpha A B^T + beta C (M x N, row-major; beta 0 not
reading C), each element summed in float32 by fused multiply-adds as an SGEMM does, a ``DEPTH`` of K at a
time and those sums added up, so that the error grows with K as slowly as the tensor-core kernel's
(whose tensor cores sum a tile of K before the CUDA cores add it). A block of
``THREADS`` computes a ``TILE`` x ``TILE`` tile of C, ``DEPTH`` of K staged in shared memory at a time;
the blocks step over the tiles, so that a grid of a few blocks a multiprocessor covers any C, and an
unflagged product costs one short wave."""

from __future__ import annotations

#: The entry point, a tile of C a block computes at a time (TILE x TILE), the K staged in shared memory
#: at a time, and the threads of a block (16 x 16, each TILE / 16 x TILE / 16 elements of the tile).
NAME, TILE, DEPTH, THREADS = "float32_product", 64, 16, 256


def render() -> str:
    """The source of ``NAME(unsplit, A, lda, a_transposed, B, ldb, b_transposed, C, M, N, K, alpha,
    beta)``, over any grid of ``THREADS``-thread blocks."""
    per_thread = TILE // 16
    return f"""// autogemm: C = alpha A B^T + beta C in float32, for a 3xTF32 product whose operands it cannot split
#define TILE {TILE}                                   // rows and columns of C a block computes at a time
#define DEPTH {DEPTH}                                  // K staged in shared memory at a time
#define THREADS {THREADS}                              // 16 x 16, each PER_THREAD x PER_THREAD elements of the tile
#define PER_THREAD {per_thread}                              // each 16 rows (columns) apart

// X[r][k] of an operand stored as X (rows x K) or, transposed, as X^T (K x rows), its rows ld apart
__device__ __forceinline__ float element(const float* __restrict__ x, long long ld, int transposed, int r, int k) {{
    return transposed ? x[(long long)k * ld + r] : x[(long long)r * ld + k];
}}

// tile[k][r] = X[r0 + r][k0 + k], zero beyond X's rows and K; consecutive threads read along the stored rows
__device__ __forceinline__ void stage(float (*tile)[TILE + 1], const float* __restrict__ x, long long ld,
                                      int transposed, int rows, int K, int r0, int k0) {{
    for (int i = threadIdx.x; i < DEPTH * TILE; i += THREADS) {{
        const int r = transposed ? i % TILE : i / DEPTH, k = transposed ? i / TILE : i % DEPTH;
        tile[k][r] = r0 + r < rows && k0 + k < K ? element(x, ld, transposed, r0 + r, k0 + k) : 0.0f;
    }}
}}

extern "C" __global__ void __launch_bounds__(THREADS) {NAME}(
        const unsigned* __restrict__ unsplit, const float* __restrict__ A, long long lda, int a_transposed,
        const float* __restrict__ B, long long ldb, int b_transposed, float* __restrict__ C, int M, int N, int K,
        float alpha, float beta) {{
    if (!*unsplit) return;                       // the tensor cores computed it
    __shared__ float a_tile[DEPTH][TILE + 1], b_tile[DEPTH][TILE + 1];   // + 1: a column in different banks
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int tiles_n = (N + TILE - 1) / TILE;
    const long long tiles = (long long)((M + TILE - 1) / TILE) * tiles_n;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {{
        const int m0 = (int)(t / tiles_n) * TILE, n0 = (int)(t % tiles_n) * TILE;
        float sums[PER_THREAD][PER_THREAD] = {{}};
        for (int k0 = 0; k0 < K; k0 += DEPTH) {{
            stage(a_tile, A, lda, a_transposed, M, K, m0, k0);
            stage(b_tile, B, ldb, b_transposed, N, K, n0, k0);
            __syncthreads();
            float chunk[PER_THREAD][PER_THREAD] = {{}};   // this DEPTH of K's sums, added to sums after
            #pragma unroll
            for (int k = 0; k < DEPTH; ++k)
                #pragma unroll
                for (int i = 0; i < PER_THREAD; ++i)
                    #pragma unroll
                    for (int j = 0; j < PER_THREAD; ++j)
                        chunk[i][j] = fmaf(a_tile[k][ty + 16 * i], b_tile[k][tx + 16 * j], chunk[i][j]);
            #pragma unroll
            for (int i = 0; i < PER_THREAD; ++i)
                #pragma unroll
                for (int j = 0; j < PER_THREAD; ++j)
                    sums[i][j] += chunk[i][j];
            __syncthreads();
        }}
        for (int i = 0; i < PER_THREAD; ++i)
            for (int j = 0; j < PER_THREAD; ++j) {{
                const int row = m0 + ty + 16 * i, column = n0 + tx + 16 * j;
                if (row < M && column < N) {{
                    float* c = C + (long long)row * N + column;
                    *c = beta == 0.0f ? alpha * sums[i][j] : alpha * sums[i][j] + beta * *c;
                }}
            }}
    }}
}}
"""
