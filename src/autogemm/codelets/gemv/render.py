"""``render``: the OpenCL source of one GEMV configuration.

One kernel per layout. Both take A as row-major storage of ``rows`` x ``cols`` (leading dimension
``lda``, element offsets in 64-bit so that A may exceed 2^31 elements), x and y with their increments,
and the slice of the reduction each work-group covers (``chunk``). With ``slices`` 1 the kernel writes
y = alpha op(A) x + beta y itself (with beta 0 it never reads y); otherwise each slice's partial sums go
to ``partial`` (``slices`` vectors of the outputs, in the compute type) and the ``merge`` helper adds
them into y.
"""

from __future__ import annotations

from functools import cache

from ...dtypes import Dtype
from ..helpers import prelude
from ..kernel import KernelSource
from .params import GemvParams

_SIGNATURE = """(const int rows, const int cols, const int chunk, const int slices,
          const __global stored* A, const long a_offset, const int lda,
          const __global stored* x, const long x_offset, const int incx,
          __global stored* y, const long y_offset, const int incy,
          __global real* partial, const elem alpha, const elem beta)"""

#: The end of both kernels: output ``index`` of ``outputs`` gets ``sum``, into y or this slice's partial.
_WRITE = """#define WRITE(index, outputs, sum) do { \\
        if (slices == 1) { \\
            const long at = (long)(index) * incy; \\
            const elem scaled = MUL(alpha, (sum)); \\
            STORE(y, at, IS_ZERO(beta) ? scaled : scaled + MUL(beta, LOAD(y, at))); \\
        } else { \\
            ELEM_STORE(partial, (long)slice * (outputs) + (index), (sum)); \\
        } \\
    } while (0)"""

_ROWS = """
// y_r = sum_j op(A)[r][j] x_j: a row of the work-group reads a stored row's consecutive elements
__kernel __attribute__((reqd_work_group_size(WG_X, WG_Y, 1)))
void gemv{signature}
{{
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int slice = get_group_id(0);
    const int begin = slice * chunk, end = min(begin + chunk, cols);
    const int first_row = get_group_id(1) * (WG_Y * PER_ITEM) + ty * PER_ITEM;
    A += a_offset * {rpe};
    x += x_offset * {rpe};
    y += y_offset * {rpe};
    long row_start[PER_ITEM];
    elem sum[PER_ITEM];
    #pragma unroll
    for (int p = 0; p < PER_ITEM; ++p) {{
        // rows past the last compute a copy of it, never written
        row_start[p] = (long)min(first_row + p, rows - 1) * lda;
        sum[p] = (elem)(0);
    }}
    for (int j0 = begin + tx; j0 < end; j0 += WG_X * UNROLL) {{
        #pragma unroll
        for (int u = 0; u < UNROLL; ++u) {{
            const int j = j0 + u * WG_X;
            if (j < end) {{
                const elem xj = LOAD(x, (long)j * incx);
                #pragma unroll
                for (int p = 0; p < PER_ITEM; ++p) sum[p] += MUL(OP_A(LOAD(A, row_start[p] + j)), xj);
            }}
        }}
    }}
    // the WG_X partial sums of each row, added in local memory
    __local elem sums[WG_Y * PER_ITEM][WG_X];
    #pragma unroll
    for (int p = 0; p < PER_ITEM; ++p) sums[ty * PER_ITEM + p][tx] = sum[p];
    for (int width = WG_X / 2; width > 0; width /= 2) {{
        barrier(CLK_LOCAL_MEM_FENCE);
        if (tx < width) {{
            #pragma unroll
            for (int p = 0; p < PER_ITEM; ++p) sums[ty * PER_ITEM + p][tx] += sums[ty * PER_ITEM + p][tx + width];
        }}
    }}
    if (tx == 0) {{
        #pragma unroll
        for (int p = 0; p < PER_ITEM; ++p) {{
            if (first_row + p < rows) WRITE(first_row + p, rows, sums[ty * PER_ITEM + p][0]);
        }}
    }}
}}
"""

_COLS = """
// y_c = sum_i op(A)[i][c] x_i: a row of the work-group reads consecutive columns of a stored row, the
// rows of the work-group take the stored rows in turn
__kernel __attribute__((reqd_work_group_size(WG_X, WG_Y, 1)))
void gemv{signature}
{{
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int slice = get_group_id(1);
    const int begin = slice * chunk, end = min(begin + chunk, rows);
    const int first_col = get_group_id(0) * (WG_X * PER_ITEM) + tx;
    A += a_offset * {rpe};
    x += x_offset * {rpe};
    y += y_offset * {rpe};
    int col[PER_ITEM];
    elem sum[PER_ITEM];
    #pragma unroll
    for (int p = 0; p < PER_ITEM; ++p) {{
        // columns past the last compute a copy of it, never written
        col[p] = min(first_col + p * WG_X, cols - 1);
        sum[p] = (elem)(0);
    }}
    for (int i0 = begin + ty; i0 < end; i0 += WG_Y * UNROLL) {{
        #pragma unroll
        for (int u = 0; u < UNROLL; ++u) {{
            const int i = i0 + u * WG_Y;
            if (i < end) {{
                const elem xi = LOAD(x, (long)i * incx);
                const long row_start = (long)i * lda;
                #pragma unroll
                for (int p = 0; p < PER_ITEM; ++p) sum[p] += MUL(OP_A(LOAD(A, row_start + col[p])), xi);
            }}
        }}
    }}
    // the WG_Y partial sums of each column, added in local memory
    __local elem sums[WG_Y][WG_X * PER_ITEM];
    #pragma unroll
    for (int p = 0; p < PER_ITEM; ++p) sums[ty][tx + p * WG_X] = sum[p];
    for (int width = WG_Y / 2; width > 0; width /= 2) {{
        barrier(CLK_LOCAL_MEM_FENCE);
        if (ty < width) {{
            #pragma unroll
            for (int p = 0; p < PER_ITEM; ++p) sums[ty][tx + p * WG_X] += sums[ty + width][tx + p * WG_X];
        }}
    }}
    if (ty == 0) {{
        #pragma unroll
        for (int p = 0; p < PER_ITEM; ++p) {{
            if (first_col + p * WG_X < cols) WRITE(first_col + p * WG_X, cols, sums[0][tx + p * WG_X]);
        }}
    }}
}}
"""


@cache
def render(params: GemvParams, dt: Dtype, conjugate: bool = False) -> KernelSource:
    """The GEMV kernel of ``params`` for A, x and y stored as ``dt`` (16-bit storage computed in float32),
    conjugating A's elements when asked (op 'C' of complex A). Its ``block`` is (outputs per work-group,
    1, reduction step)."""
    p = params
    conj = "(elem)((v).x, -(v).y)" if conjugate and dt.is_complex else "(v)"
    body = _ROWS if p.layout == "N" else _COLS
    op = "conj(A)" if conjugate and dt.is_complex else "A"
    what = f"y = alpha {op}{'' if p.layout == 'N' else '^T'} x + beta y"
    source = "\n".join([
        prelude(dt).rstrip("\n"),
        f"// autogemm gemv: {what} [{p.describe()}]",
        f"#define WG_X {p.wg_x}        // work-items along a stored row",
        f"#define WG_Y {p.wg_y}        // work-items along a stored column",
        f"#define PER_ITEM {p.per_item}    // outputs per work-item",
        f"#define UNROLL {p.unroll}      // reduction steps per iteration",
        f"#define OP_A(v) {conj}",
        _WRITE,
        body.format(signature=_SIGNATURE, rpe=dt.reals_per_element),
    ])
    return KernelSource("gemv", source, p.build_options, (p.wg_x, p.wg_y), (p.outputs_per_group, 1, p.reduction_step))
