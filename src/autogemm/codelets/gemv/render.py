"""``render``: the OpenCL source of one GEMV configuration.

One kernel per layout. Both take A as row-major storage of ``rows`` x ``cols`` (leading dimension
``lda``, element offsets in 64-bit so that A may exceed 2^31 elements), ``vectors`` right-hand sides x
(``ldx`` elements apart, each element ``incx`` after the last) and as many results y (``ldy`` and
``incy``), and the slice of the reduction each work-group covers (``chunk``). With ``slices`` 1 the
kernel writes Y = alpha op(A) X + beta Y itself (with beta 0 it never reads Y); otherwise each slice's
partial sums go to ``partial`` (per slice, the outputs x vectors laid out by ``partial_o`` and
``partial_v``, in the compute type). With ``sums_slices`` the work-group that arrives last at its
outputs (``arrivals`` counts them) adds the slices up into Y, in the same launch; without, the ``merge``
helper does, in a launch of its own.
"""

from __future__ import annotations

from functools import cache

from ...dtypes import Dtype
from ..helpers import prelude
from ..kernel import KernelSource
from ..writer import last_to_arrive
from .params import GemvParams

#: ``_SIGNATURE``'s parameters, one letter each as ``runtime.opencl.arguments`` reads them.
GEMV_SIGNATURE = "iiiii" + "mli" + "mlii" * 2 + "miimi" + "ee"
_SIGNATURE = """(const int rows, const int cols, const int chunk, const int slices, const int vectors,
          const __global stored* A, const long a_offset, const int lda,
          const __global stored* x, const long x_offset, const int incx, const int ldx,
          __global stored* y, const long y_offset, const int incy, const int ldy,
          __global real* partial, const int partial_o, const int partial_v, volatile __global int* arrivals,
          const int sums_slices, const elem alpha, const elem beta)"""

#: Output ``index`` of vector ``v`` gets ``sum``: y = alpha sum + beta y (with beta 0, y is not read); and
#: where that output's sum is in slice ``s``'s partial sums (``outputs`` x vectors of them a slice).
_WRITES = """#define WRITE(index, v, sum) do { \\
        const long at = (long)(index) * incy + (long)(v) * ldy; \\
        const elem scaled = SCALE(alpha, (sum)); \\
        STORE(y, at, IS_ZERO(beta) ? scaled : scaled + SCALE(beta, LOAD(y, at))); \\
    } while (0)
#define PARTIAL_AT(s, outputs, index, v) \\
    ((long)(s) * (outputs) * vectors + (long)(index) * partial_o + (long)(v) * partial_v)"""

#: Both kernels' start: this work-group's vectors (the last group's extra ones copy the last vector, never
#: written) and their offsets in x.
_VECTORS = """    const int first_vector = get_group_id(2) * VECTORS;
    A += a_offset * {rpe};
    x += x_offset * {rpe};
    y += y_offset * {rpe};
    long x_start[VECTORS];
    #pragma unroll
    for (int v = 0; v < VECTORS; ++v) x_start[v] = (long)min(first_vector + v, vectors - 1) * ldx;"""

_ROWS = """
// y_r = sum_j op(A)[r][j] x_j: a row of the work-group reads a stored row's consecutive elements
__kernel __attribute__((reqd_work_group_size(WG_X, WG_Y, 1)))
void gemv{signature}
{{
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int slice = get_group_id(0);
    const int begin = slice * chunk, end = min(begin + chunk, cols);
    const int first_row = get_group_id(1) * (WG_Y * PER_ITEM) + ty * PER_ITEM;
{vectors}
    long row_start[PER_ITEM];
    elem sum[PER_ITEM][VECTORS];
    #pragma unroll
    for (int p = 0; p < PER_ITEM; ++p) {{
        // rows past the last compute a copy of it, never written
        row_start[p] = (long)min(first_row + p, rows - 1) * lda;
        #pragma unroll
        for (int v = 0; v < VECTORS; ++v) sum[p][v] = (elem)(0);
    }}
    for (int j0 = begin + tx; j0 < end; j0 += WG_X * UNROLL) {{
        #pragma unroll
        for (int u = 0; u < UNROLL; ++u) {{
            const int j = j0 + u * WG_X;
            if (j < end) {{
                elem xj[VECTORS];
                #pragma unroll
                for (int v = 0; v < VECTORS; ++v) xj[v] = OP_X(LOAD(x, x_start[v] + X_INDEX(j)));
                #pragma unroll
                for (int p = 0; p < PER_ITEM; ++p) {{
                    const elem a = OP_A(LOAD(A, row_start[p] + j));
                    #pragma unroll
                    for (int v = 0; v < VECTORS; ++v) sum[p][v] += MUL(a, xj[v]);
                }}
            }}
        }}
    }}
    // the WG_X partial sums of each row and vector, added in local memory
    __local elem sums[WG_Y * PER_ITEM * VECTORS][WG_X];
    #pragma unroll
    for (int p = 0; p < PER_ITEM; ++p) {{
        #pragma unroll
        for (int v = 0; v < VECTORS; ++v) sums[(ty * PER_ITEM + p) * VECTORS + v][tx] = sum[p][v];
    }}
    for (int width = WG_X / 2; width > 0; width /= 2) {{
        barrier(CLK_LOCAL_MEM_FENCE);
        if (tx < width) {{
            #pragma unroll
            for (int s = 0; s < PER_ITEM * VECTORS; ++s) {{
                const int q = ty * PER_ITEM * VECTORS + s;
                sums[q][tx] += sums[q][tx + width];
            }}
        }}
    }}
{finish}
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
{vectors}
    int col[PER_ITEM];
    elem sum[PER_ITEM][VECTORS];
    #pragma unroll
    for (int p = 0; p < PER_ITEM; ++p) {{
        // columns past the last compute a copy of it, never written
        col[p] = min(first_col + p * WG_X, cols - 1);
        #pragma unroll
        for (int v = 0; v < VECTORS; ++v) sum[p][v] = (elem)(0);
    }}
    for (int i0 = begin + ty; i0 < end; i0 += WG_Y * UNROLL) {{
        #pragma unroll
        for (int u = 0; u < UNROLL; ++u) {{
            const int i = i0 + u * WG_Y;
            if (i < end) {{
                elem xi[VECTORS];
                #pragma unroll
                for (int v = 0; v < VECTORS; ++v) xi[v] = OP_X(LOAD(x, x_start[v] + X_INDEX(i)));
                const long row_start = (long)i * lda;
                #pragma unroll
                for (int p = 0; p < PER_ITEM; ++p) {{
                    const elem a = OP_A(LOAD(A, row_start + col[p]));
                    #pragma unroll
                    for (int v = 0; v < VECTORS; ++v) sum[p][v] += MUL(a, xi[v]);
                }}
            }}
        }}
    }}
    // the WG_Y partial sums of each column and vector, added in local memory
    __local elem sums[WG_Y][WG_X * PER_ITEM * VECTORS];
    #pragma unroll
    for (int p = 0; p < PER_ITEM; ++p) {{
        #pragma unroll
        for (int v = 0; v < VECTORS; ++v) sums[ty][(p * VECTORS + v) * WG_X + tx] = sum[p][v];
    }}
    for (int width = WG_Y / 2; width > 0; width /= 2) {{
        barrier(CLK_LOCAL_MEM_FENCE);
        if (ty < width) {{
            #pragma unroll
            for (int s = 0; s < PER_ITEM * VECTORS; ++s) sums[ty][s * WG_X + tx] += sums[ty + width][s * WG_X + tx];
        }}
    }}
{finish}
}}
"""


def _finish(owner: str, output: str, outputs: str, total: str, axis: int, per_group: str) -> str:
    """The end of a kernel: the work-items where ``owner`` holds, each with the ``total`` of outputs
    ``output`` (of ``outputs``) for each vector, write them to y; or where the reduction is split, to this
    slice's partial sums. With ``sums_slices`` the work-group that arrives last at its outputs (the
    ``per_group`` outputs of group ``get_group_id(axis)``, for its vectors) then adds the slices up, its
    work-items ``LANES`` to an element (``GemvParams.summing_lanes``), in an order fixed by the
    kernel (the same bits whichever arrives last), writes y,
    and resets its count of arrivals for the next launch (the plan zeroes them once); without, the merge
    helper adds them up after."""
    def each_output(*body: str) -> list[str]:
        return [f"    if ({owner}) {{",
                "        #pragma unroll",
                "        for (int p = 0; p < PER_ITEM; ++p) {",
                "            #pragma unroll",
                "            for (int v = 0; v < VECTORS; ++v) {",
                f"                if ({output} < {outputs} && first_vector + v < vectors) {{",
                *(f"                    {line}" for line in body),
                "                }",
                "            }",
                "        }",
                "    }"]

    at = f"{outputs}, index, v"
    first = "tx == 0 && ty == 0"
    return "\n".join([
        "    if (slices == 1) {",
        *("    " + line for line in each_output(f"WRITE({output}, first_vector + v, {total});")),
        "        return;",
        "    }",
        "    // a split reduction: this slice's sums join the others' ...",
        *each_output(f"ELEM_STORE(partial, PARTIAL_AT(slice, {outputs}, {output}, first_vector + v), {total});"),
        "    if (!sums_slices) return;",
        "    // ... and the last work-group to arrive at these outputs adds them up",
        "    __local int arrived;           // slices at these outputs before this one",
        f"    const int tile = get_group_id(2) * get_num_groups({axis}) + get_group_id({axis});",
        *("    " + line for line in last_to_arrive(first, "tile")),
        "    const bool by_output = partial_o == 1;",
        "#if LANES == 1",
        "    // consecutive work-items take consecutive elements of the partial sums",
        f"    for (int e = ty * WG_X + tx; e < {per_group} * VECTORS; e += WG_X * WG_Y) {{",
        f"        const int index = get_group_id({axis}) * {per_group} + (by_output ? e % {per_group} : e / VECTORS);",
        f"        const int v = first_vector + (by_output ? e / {per_group} : e % VECTORS);",
        f"        if (index < {outputs} && v < vectors) {{",
        f"            elem total = ELEM_LOAD(partial, PARTIAL_AT(0, {at}));",
        f"            for (int s = 1; s < slices; ++s) total += ELEM_LOAD(partial, PARTIAL_AT(s, {at}));",
        "            WRITE(index, v, total);",
        "        }",
        "    }",
        "#else",
        "    // LANES work-items take each element (the work-group's SPAN x LANES cover them all at once), SPAN",
        "    // consecutive ones consecutive elements of a slice: lane l adds slices l, l + LANES, ... (one load",
        "    // after another would wait on each); the lanes' totals are then added in local memory, whose",
        "    // partial sums the last barrier left free",
        "    const int t = ty * WG_X + tx, lane = t / SPAN, e = t % SPAN;",
        "    __local elem* const lane_totals = (__local elem*)sums;",
        f"    const int index = get_group_id({axis}) * {per_group} + (by_output ? e % {per_group} : e / VECTORS);",
        f"    const int v = first_vector + (by_output ? e / {per_group} : e % VECTORS);",
        f"    const bool owned = e < {per_group} * VECTORS && index < {outputs} && v < vectors;",
        "    elem total = (elem)(0);",
        f"    if (owned) for (int s = lane; s < slices; s += LANES) total += ELEM_LOAD(partial, PARTIAL_AT(s, {at}));",
        "    lane_totals[t] = total;",
        "    for (int width = LANES / 2; width > 0; width /= 2) {",
        "        barrier(CLK_LOCAL_MEM_FENCE);",
        "        if (lane < width) lane_totals[t] += lane_totals[t + width * SPAN];",
        "    }",
        "    if (owned && lane == 0) WRITE(index, v, lane_totals[t]);",
        "#endif",
        f"    if ({first}) arrivals[tile] = 0;     // ready for the next launch",
    ])


_FINISH = {
    "N": _finish("tx == 0", "first_row + p", "rows", "sums[(ty * PER_ITEM + p) * VECTORS + v][0]", 1,
                 "(WG_Y * PER_ITEM)"),
    "T": _finish("ty == 0", "first_col + p * WG_X", "cols", "sums[0][(p * VECTORS + v) * WG_X + tx]", 0,
                 "(WG_X * PER_ITEM)"),
}


@cache
def render(params: GemvParams, dt: Dtype, conjugate: bool = False, *, conjugate_x: bool = False,
           vectors: int = 1, unit_x: bool = False, lanes: int = 1) -> KernelSource:
    """The GEMV kernel of ``params`` for A, x and y stored as ``dt`` (16-bit storage computed in float32),
    conjugating A's elements when asked (op 'C' of complex A), and x's with ``conjugate_x``; with
    ``unit_x`` for x's increment 1 only (no multiplication in its addresses). Each
    work-group multiplies by ``vectors`` right-hand sides at once (at most ``params.vectors``; a problem of
    more takes groups of them along the third NDRange dimension); ``lanes`` work-items add up each
    output's slices where the kernel adds up a split reduction. Its ``block`` is (outputs per
    work-group, 1, reduction step)."""
    p = params
    block = max(1, min(vectors, p.vectors))
    if lanes < 1 or lanes & (lanes - 1) or lanes > max(1, p.work_group_size // (p.outputs_per_group * block)):
        raise ValueError(f"{lanes} work-items an output of {p.describe()}: a power of two, its work-group's "
                         f"{p.work_group_size} covering {p.outputs_per_group * block} outputs that many times")
    complex_ = dt.is_complex
    conj = "(elem)((v).x, -(v).y)"
    body = _ROWS if p.layout == "N" else _COLS
    op = "conj(A)" if conjugate and complex_ else "A"
    rhs = "conj(X)" if conjugate_x and complex_ else "X"
    what = f"Y = alpha {op}{'' if p.layout == 'N' else '^T'} {rhs} + beta Y"
    source = "\n".join([
        prelude(dt).rstrip("\n"),
        f"// autogemm gemv: {what} [{p.describe()}]",
        f"#define WG_X {p.wg_x}        // work-items along a stored row",
        f"#define WG_Y {p.wg_y}        // work-items along a stored column",
        f"#define PER_ITEM {p.per_item}    // outputs per work-item",
        f"#define UNROLL {p.unroll}      // reduction steps per iteration",
        f"#define VECTORS {block}     // right-hand sides per work-item",
        f"#define LANES {lanes}       // work-items adding up each output's slices of a split reduction",
        f"#define SPAN {p.work_group_size // lanes}       // elements of the slices' sums added at once",
        f"#define OP_A(v) {conj if conjugate and complex_ else '(v)'}",
        f"#define OP_X(v) {conj if conjugate_x and complex_ else '(v)'}",
        f"#define X_INDEX(j) {'((long)(j))' if unit_x else '((long)(j) * incx)'}   // x's element j",
        _WRITES,
        body.format(signature=_SIGNATURE, vectors=_VECTORS.format(rpe=dt.reals_per_element),
                    finish=_FINISH[p.layout]),
    ])
    return KernelSource("gemv", source, p.build_options, (p.wg_x, p.wg_y), (p.outputs_per_group, 1, p.reduction_step))
