"""``render``: the CUDA kernels that bring complex64 operands into the real form the CUDA path multiplies
them in (``blas.complex_embedding``). A product's A (``rows`` x K complex) becomes ``rows`` x 2K float32,
each element's real and imaginary parts side by side (complex64's own storage, conjugated where the op
says); its B, seen as op(B)^T (``rows`` = N), becomes 2N x 2K float32, each element x = alpha b a pair of
rows: (re x, -im x) and (im x, re x), the real embedding transposed. Both come out K-contiguous and
dense, as the real kernels read them in place. A third kernel scales C by a complex beta first (the real
kernels take a real one).

A thread writes one element's parts (two floats, or four in two rows), reading the stored operand as it
lies (K x rows where it is stored transposed)."""

from __future__ import annotations

#: The entry points: the operand's real form, and C scaled in place.
EMBED, SCALE = "embed_complex64", "scale_complex64"
#: Threads a block.
THREADS = 256


def render() -> str:
    """The source of ``EMBED(src, ld, transposed, conjugated, rows, k, alpha_re, alpha_im, doubled, dst)``
    (``doubled``: B's form, two rows an element, else A's) and ``SCALE(c, count, beta_re, beta_im)``, each
    over a grid of blocks of ``THREADS`` threads that strides over its elements."""
    return f"""// autogemm: complex64 operands in the real form of their product (blas.complex_embedding)
extern "C" __global__ void __launch_bounds__({THREADS}) {EMBED}(
        const float2* __restrict__ src, long long ld, int transposed, int conjugated, int rows, int k,
        float alpha_re, float alpha_im, int doubled, float* __restrict__ dst) {{
    const long long count = (long long)rows * k;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
         i += (long long)gridDim.x * blockDim.x) {{
        const long long r = i / k, l = i % k;         // the element of row r, column l of K
        float2 v = transposed ? src[l * ld + r] : src[r * ld + l];
        if (conjugated) v.y = -v.y;
        // (a real alpha multiplies each part alone: 0 times an infinite part would make a NaN)
        const float re = alpha_im == 0.f ? alpha_re * v.x : alpha_re * v.x - alpha_im * v.y;
        const float im = alpha_im == 0.f ? alpha_re * v.y : alpha_re * v.y + alpha_im * v.x;
        if (doubled) {{                                // rows 2r and 2r + 1 of 2k floats each
            float2* pair = (float2*)dst;
            pair[(2 * r) * k + l] = make_float2(re, -im);
            pair[(2 * r + 1) * k + l] = make_float2(im, re);
        }} else {{
            ((float2*)dst)[r * k + l] = make_float2(re, im);
        }}
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
    """Blocks for ``count`` elements: one a ``THREADS`` of them, at most eight a multiprocessor (the
    kernels stride over the rest)."""
    return (max(1, min(-(-count // THREADS), 8 * multiprocessors)),)
