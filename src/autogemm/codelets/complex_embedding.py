"""``render``: the CUDA kernels that bring complex64 operands into the real form the CUDA path multiplies
them in (``blas.complex_embedding``). A product's A (``rows`` x K complex) becomes ``rows`` x 2 ``depth``
float32, each element's real and imaginary parts side by side (complex64's own storage, conjugated where
the op says); its B, seen as op(B)^T (``rows`` = N), becomes 2 ``rows`` x 2 ``depth`` float32, each element
x = alpha b a pair of rows: (re x, -im x) and (im x, re x), the real embedding transposed. Both come out
K-contiguous and dense, as the real kernels read them in place, their K made ``depth`` (even) by zeros. A
third kernel scales C by a complex beta first (the real kernels take a real one).

The embedding kernel takes ``TILE`` x ``TILE`` tiles of (rows, K) in turn: its threads read a tile with
consecutive threads along the operand's stored rows (K where it is stored as it is, rows where it is
stored transposed), each row of threads ``ROWS_PER_PASS`` apart, into shared memory, then write the
form's rows with consecutive threads along K: both sides of every tile are read and written whole
sectors at a time, however the operand lies."""

from __future__ import annotations

#: The entry points: the operand's real form, and C scaled in place.
EMBED, SCALE = "embed_complex64", "scale_complex64"
#: The embedding's tiles of (rows, K), and the rows of threads of its blocks (TILE threads each).
TILE, ROWS_PER_PASS = 32, 8
#: Threads a block of the scaling kernel.
THREADS = 256


def render() -> str:
    """The source of ``EMBED(src, ld, transposed, conjugated, rows, k, depth, alpha_re, alpha_im, doubled,
    dst)`` (``doubled``: B's form, two rows an element, else A's; K columns of ``src`` read, ``depth``
    written), over a grid of blocks of ``TILE`` x ``ROWS_PER_PASS`` threads that strides over its tiles,
    and ``SCALE(c, count, beta_re, beta_im)``, over a grid of blocks of ``THREADS`` that strides over C."""
    return f"""// autogemm: complex64 operands in the real form of their product (blas.complex_embedding)
#define TILE {TILE}                                     // a tile of (rows, K) a block takes at a time
#define ROWS_PER_PASS {ROWS_PER_PASS}                              // rows of threads, TILE threads each

extern "C" __global__ void __launch_bounds__(TILE * ROWS_PER_PASS) {EMBED}(
        const float2* __restrict__ src, long long ld, int transposed, int conjugated, int rows, int k,
        int depth, float alpha_re, float alpha_im, int doubled, float* __restrict__ dst) {{
    __shared__ float2 tile[TILE][TILE + 1];          // [row][K] of the tile (+ 1: a column in other banks)
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tiles_k = (depth + TILE - 1) / TILE;
    const long long tiles = (long long)((rows + TILE - 1) / TILE) * tiles_k;
    float2* pair = (float2*)dst;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {{
        const int r0 = (int)(t / tiles_k) * TILE, l0 = (int)(t % tiles_k) * TILE;
        for (int p = ty; p < TILE; p += ROWS_PER_PASS) {{    // read along the stored rows
            const int i = transposed ? p : tx, j = transposed ? tx : p;      // (K, row) within the tile
            const int r = r0 + j, l = l0 + i;
            float2 e = make_float2(0.f, 0.f);     // (K past k: the padding's zeros, never scaled by alpha)
            if (r < rows && l < k) {{
                float2 v = transposed ? src[(long long)l * ld + r] : src[(long long)r * ld + l];
                if (conjugated) v.y = -v.y;
                // (a real alpha multiplies each part alone: 0 times an infinite part would make a NaN)
                e.x = alpha_im == 0.f ? alpha_re * v.x : alpha_re * v.x - alpha_im * v.y;
                e.y = alpha_im == 0.f ? alpha_re * v.y : alpha_re * v.y + alpha_im * v.x;
            }}
            tile[j][i] = e;
        }}
        __syncthreads();
        for (int p = ty; p < TILE; p += ROWS_PER_PASS) {{    // write along K
            const int r = r0 + p, l = l0 + tx;
            if (r < rows && l < depth) {{
                const float2 v = tile[p][tx];
                if (doubled) {{                            // rows 2r and 2r + 1 of 2 depth floats each
                    pair[(long long)(2 * r) * depth + l] = make_float2(v.x, -v.y);
                    pair[(long long)(2 * r + 1) * depth + l] = make_float2(v.y, v.x);
                }} else {{
                    pair[(long long)r * depth + l] = v;
                }}
            }}
        }}
        __syncthreads();                              // (the tile is read before the next one is written)
    }}
}}

extern "C" __global__ void __launch_bounds__({THREADS}) {SCALE}(
        float2* __restrict__ c, long long count, float beta_re, float beta_im) {{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {{
        const float2 v = c[i];
        c[i] = make_float2(beta_re * v.x - beta_im * v.y, beta_re * v.y + beta_im * v.x);
    }}
}}
"""


def grid(count: int, multiprocessors: int) -> tuple[int]:
    """Blocks for ``count`` blocks' worth of work (``SCALE``'s, from ``scale_grid``) or tiles (``EMBED``):
    one each, at most eight a multiprocessor (the kernels stride over the rest)."""
    return (max(1, min(count, 8 * multiprocessors)),)


def scale_grid(count: int, multiprocessors: int) -> tuple[int]:
    """``SCALE``'s blocks for ``count`` elements of C (``THREADS`` each)."""
    return grid(-(-count // THREADS), multiprocessors)


def embed_grid(rows: int, depth: int, multiprocessors: int) -> tuple[int]:
    """``EMBED``'s blocks for a form of ``rows`` x ``depth`` complex elements (a ``TILE`` x ``TILE`` tile
    each)."""
    return grid(-(-rows // TILE) * -(-depth // TILE), multiprocessors)
