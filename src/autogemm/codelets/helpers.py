"""Helper kernels around the GEMM codelets (after Nugteren's kernel 10): ``pack`` copies an operand into
the layout a codelet reads, transposing, conjugating and zero-padding to whole tiles in one pass;
``merge`` writes a padded or split-K result back as C = alpha sum(T) + beta C (``lanes_for`` work-items
to an element where the slices are many); ``fixup`` adds up the partial sums of the tiles a stream-K
kernel's work-groups shared (``codelets.stream_k``); ``scale`` computes C = beta C alone (the BLAS quick
return when alpha or K is zero); ``residual`` measures a result against a reference on the device (the
tuner checks every candidate so, without copying large results to the host)."""

from __future__ import annotations

from functools import cache

from ..dtypes import Dtype
from .conversions import conversions
from .kernel import KernelSource
from .stream_k import OWNER_FUNCTION

TILE = 16   # helper work-groups are TILE x TILE; pack transposes through a TILE x (TILE + 1) local tile
#: The helper kernels' parameters, one letter each as ``runtime.opencl.arguments`` reads them.
PACK_SIGNATURE = "iimlimliiiii"
MERGE_SIGNATURE = "iimiiiemlieii"
#: The fewest slices of a split reduction one work-item adds up where several share an element's (the
#: GEMV kernel's sums and ``merge``): a few slices are read in the time of one, and adding the work-items'
#: totals in local memory would cost more.
LANE_MIN_SLICES = 4
SCALE_SIGNATURE = "iimliei"
FIXUP_SIGNATURE = "iiiiiimilemlie"


def prelude(dt: Dtype) -> str:
    """Typedefs and access macros: ``real``/``elem`` the compute types, ``stored`` the scalar of C's
    (or the operands') buffers; ``LOAD``/``STORE`` access ``stored`` buffers (converting 16-bit storage),
    ``ELEM_LOAD``/``ELEM_STORE`` buffers of ``real`` (temporaries and references). Every helper and
    the GEMV codelet start with it."""
    lines = []
    if dt.needs_fp64:
        lines.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    lines += [
        f"typedef {dt.real_cl} real;",
        f"typedef {dt.cl_element} elem;",
        f"typedef {dt.stored_cl} stored;",
        f"#define TILE {TILE}",
    ]
    if dt.is_complex:
        lines += [
            "#define ELEM_LOAD(p, i) vload2(0, (p) + (i) * 2)",
            "#define ELEM_STORE(p, i, v) vstore2((v), 0, (p) + (i) * 2)",
            "#define MUL(u, v) ((elem)((u).x * (v).x - (u).y * (v).y, (u).x * (v).y + (u).y * (v).x))",
            "#define IS_ZERO(u) ((u).x == (real)0 && (u).y == (real)0)",
            # alpha or beta of exactly 1 leaves v as it is: the product would make a zero part beside an
            # infinite one NaN (inf * 0), which BLAS's and numpy's results do not
            "#define SCALE(s, v) ((s).x == (real)1 && (s).y == (real)0 ? (v) : MUL(s, v))",
        ]
    else:
        lines += [
            "#define ELEM_LOAD(p, i) (p)[i]",
            "#define ELEM_STORE(p, i, v) ((p)[i] = (v))",
            "#define MUL(u, v) ((u) * (v))",
            "#define IS_ZERO(u) ((u) == (real)0)",
            "#define SCALE(s, v) ((s) * (v))",
        ]
    if dt.half:
        lines += [conversions(dt).rstrip("\n"),
                  "#define LOAD(p, i) to_real((p)[i])",
                  "#define STORE(p, i, v) ((p)[i] = to_stored(v))"]
    else:
        lines += ["#define LOAD(p, i) ELEM_LOAD(p, i)",
                  "#define STORE(p, i, v) ELEM_STORE(p, i, v)"]
    return "\n".join(lines) + "\n"


@cache
def pack(dt: Dtype, transpose: bool, conjugate: bool, to_compute: bool = False) -> KernelSource:
    """dst[r][c] = op(src)[r][c] for r < rows, c < cols, and zero on the rest of dst_rows x dst_cols.
    op is a transpose when ``transpose`` (src is then stored cols x rows) and conjugates when asked.
    src is in ``dt``'s storage; dst too, or with ``to_compute`` in its compute type (16-bit values
    converted exactly to float). Work-groups along dimension 2 pack the layers of a strided batch, each
    ``src_stride`` and ``dst_stride`` elements after the last. ``transpose`` (the public routine) is a
    pack without padding."""
    dst_type, store = ("real", "ELEM_STORE") if to_compute else ("stored", "STORE")
    conj = "(elem)(v.x, -v.y)" if conjugate else "v"
    if transpose:
        read = """    // src is stored cols x rows: read a tile of it along its rows (coalesced), write it transposed
    __local elem tile[TILE][TILE + 1];
    const int src_row = c0 + ty, src_col = r0 + tx;
    tile[ty][tx] = (src_row < cols && src_col < rows) ? LOAD(src, src_row * src_ld + src_col) : (elem)(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    const elem v = tile[tx][ty];"""
    else:
        read = "    const elem v = (r < rows && c < cols) ? LOAD(src, r * src_ld + c) : (elem)(0);"
    source = prelude(dt) + f"""
// autogemm pack: dst = {'conj(' if conjugate else ''}{'src^T' if transpose else 'src'}{')' if conjugate else ''}, zero-padded to dst_rows x dst_cols
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void pack(const int rows, const int cols,
          const __global stored* src, const long src_offset, const int src_ld,
          __global {dst_type}* dst, const long dst_offset, const int dst_rows, const int dst_cols, const int dst_ld,
          const int src_stride, const int dst_stride)
{{
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int r0 = get_group_id(1) * TILE, c0 = get_group_id(0) * TILE;
    const int r = r0 + ty, c = c0 + tx;
    const int layer = get_group_id(2);
    src += (src_offset + (long)layer * src_stride) * {dt.reals_per_element};
    dst += (dst_offset + (long)layer * dst_stride) * {dt.reals_per_element};
{read}
    if (r < dst_rows && c < dst_cols) {store}(dst, r * dst_ld + c, {conj});
}}
"""
    return KernelSource("pack", source, (), (TILE, TILE), (TILE, TILE, 1))


@cache
def epilogues(dt: Dtype) -> KernelSource:
    """Three kernels on an m x n C stored as ``dt``: ``merge`` (C = alpha (T_0 + ... + T_S-1) + beta C, the
    T_s computed elsewhere, in the compute type: one padded product, the K slices of a split one, or a
    product whose C is 16-bit), ``scale`` (C = beta C), and ``fixup`` (C = alpha (P_0 + ... ) + beta C
    on the tiles a stream-K kernel's work-groups shared, from their partial sums P, C in the compute
    type). With beta == 0 none reads C, so NaN in an uninitialised C does not leak. Work-groups along
    dimension 2 of ``merge`` and ``scale`` treat the layers of a strided batch: layer z's C is
    ``c_stride`` elements after the last's, and its slices of T follow those of layer z - 1. ``merge``
    takes ``lanes`` work-items to an element (the GEMV plan's ``lanes_for(slices, TILE)``, 1 elsewhere):
    its NDRange's dimension 1 covers m x lanes."""
    source = prelude(dt) + f"""
// autogemm merge: C = alpha * (T_0 + ... + T_(slices-1)) + beta * C for the m x n C, where the T_s are
// slices (t_slice elements apart) of a temporary holding op(A) op(B), possibly padded and split along K.
// `lanes` consecutive work-items along dimension 1 (a power of two up to TILE: one work-group's) share an
// element, lane l adding slices l, l + lanes, ... (loads in flight at once, where one work-item would
// wait on each in turn), and their totals are added in local memory, in a fixed order.
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void merge(const int m, const int n, const __global real* T, const int t_ld, const int t_slice,
           const int slices, const elem alpha, __global stored* C, const long c_offset, const int ldc,
           const elem beta, const int c_stride, const int lanes)
{{
    const int r = get_global_id(1) / lanes, lane = get_global_id(1) % lanes, c = get_global_id(0);
    const int layer = get_group_id(2), tx = get_local_id(0), ty = get_local_id(1);
    const bool inside = r < m && c < n;
    __local elem totals[TILE][TILE];
    T += layer * slices * t_slice * {dt.reals_per_element};
    C += (c_offset + (long)layer * c_stride) * {dt.reals_per_element};
    elem t = (elem)(0);           // a lane's first slice read, not added to 0: a sum of -0 stays -0
    if (inside && lane < slices) {{
        t = ELEM_LOAD(T, lane * t_slice + r * t_ld + c);
        for (int s = lane + lanes; s < slices; s += lanes) t += ELEM_LOAD(T, s * t_slice + r * t_ld + c);
    }}
    if (lanes > 1) {{
        totals[ty][tx] = t;
        for (int width = lanes / 2; width > 0; width /= 2) {{
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lane < width) totals[ty][tx] += totals[ty + width][tx];
        }}
        t = totals[ty][tx];
    }}
    if (!inside || lane != 0) return;
    t = SCALE(alpha, t);
    STORE(C, r * ldc + c, IS_ZERO(beta) ? t : t + SCALE(beta, LOAD(C, r * ldc + c)));
}}

// autogemm scale: C = beta * C for the m x n C
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void scale(const int m, const int n, __global stored* C, const long c_offset, const int ldc, const elem beta,
           const int c_stride)
{{
    const int r = get_global_id(1), c = get_global_id(0), layer = get_group_id(2);
    if (r >= m || c >= n) return;
    C += (c_offset + (long)layer * c_stride) * {dt.reals_per_element};
    STORE(C, r * ldc + c, IS_ZERO(beta) ? (elem)(0) : SCALE(beta, LOAD(C, r * ldc + c)));
}}

{OWNER_FUNCTION}
// autogemm fixup: C = alpha * (P_0 + ... + P_(pieces-1)) + beta * C on each tile of block_rows x
// block_cols that the `groups` work-groups of a stream-K kernel shared (`steps` K steps per tile), where
// P_p is layer p (p_layer elements apart) of their partial sums; the other tiles are left as they are
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))
void fixup(const int m, const int n, const int block_rows, const int block_cols, const int steps,
           const int groups, const __global real* P, const int p_ld, const long p_layer,
           const elem alpha, __global real* C, const long c_offset, const int ldc, const elem beta)
{{
    const int r = get_global_id(1), c = get_global_id(0);
    if (r >= m || c >= n) return;
    const int tiles_n = (n + block_cols - 1) / block_cols, tiles = (m + block_rows - 1) / block_rows * tiles_n;
    const int before = whole_tiles(tiles, groups);
    const int tile = r / block_rows * tiles_n + c / block_cols;
    if (tile < before) return;                    // computed whole in the waves before: in C already
    const long total = (long)(tiles - before) * steps, first = (long)(tile - before) * steps;
    const int pieces = owner(first + steps - 1, total, groups) - owner(first, total, groups) + 1;
    if (pieces == 1) return;                      // one work-group's alone: it wrote C
    C += c_offset * {dt.reals_per_element};
    elem t = ELEM_LOAD(P, r * p_ld + c);
    for (int p = 1; p < pieces; ++p) t += ELEM_LOAD(P, p * p_layer + r * p_ld + c);
    t = SCALE(alpha, t);
    ELEM_STORE(C, r * ldc + c, IS_ZERO(beta) ? t : t + SCALE(beta, ELEM_LOAD(C, r * ldc + c)));
}}
"""
    return KernelSource("merge", source, (), (TILE, TILE), (TILE, TILE, 1))


def lanes_for(slices: int, most: int) -> int:
    """Work-items that share an element's ``slices`` partial sums (the GEMV kernel's
    ``GemvParams.summing_lanes``, ``merge``'s with ``most`` = ``TILE``): a power of two up to ``most``,
    each adding at least ``LANE_MIN_SLICES`` of them (one where there are fewer)."""
    share = max(1, min(most, slices // LANE_MIN_SLICES))
    return 1 << (share.bit_length() - 1)


RESIDUAL_GROUP = 256   # work-items per residual work-group (a power of two, for the tree reduction)


@cache
def residual(dt: Dtype) -> KernelSource:
    """Per work-group partial sums of |C - R|^2 over n elements, and counts of non-finite elements of C
    (unwritten outputs poisoned with NaN show up there), for C stored as ``dt`` and R in its compute
    type. The host adds the partials in double."""
    square = "dot(d, d)" if dt.is_complex else "d * d"
    finite = "isfinite(v.x) && isfinite(v.y)" if dt.is_complex else "isfinite(v)"
    source = prelude(dt) + f"""
#define GROUP {RESIDUAL_GROUP}
// autogemm residual: partial[g] = sum |C - R|^2 and bad[g] = count of non-finite C over group g's share
__kernel __attribute__((reqd_work_group_size(GROUP, 1, 1)))
void residual(const int n, const __global stored* C, const __global real* R,
              __global real* partial, __global int* bad)
{{
    __local real sums[GROUP];
    __local int counts[GROUP];
    const int lid = get_local_id(0);
    real sum = 0;
    int count = 0;
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) {{
        const elem v = LOAD(C, i);
        if ({finite}) {{
            const elem d = v - ELEM_LOAD(R, i);
            sum += {square};
        }} else {{
            count += 1;
        }}
    }}
    sums[lid] = sum;
    counts[lid] = count;
    for (int step = GROUP / 2; step > 0; step /= 2) {{
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < step) {{
            sums[lid] += sums[lid + step];
            counts[lid] += counts[lid + step];
        }}
    }}
    if (lid == 0) {{
        partial[get_group_id(0)] = sums[0];
        bad[get_group_id(0)] = counts[0];
    }}
}}
"""
    return KernelSource("residual", source, (), (RESIDUAL_GROUP, 1), (RESIDUAL_GROUP, 1, 1))
