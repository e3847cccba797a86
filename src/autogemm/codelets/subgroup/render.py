"""``render`` for the subgroup family: readable OpenCL C for one ``SubgroupParams`` point.

Same kernel interface as ``simt`` (C = alpha op(A) op(B) + beta C on row-major matrices, guarded or
whole-block edges, split K along NDRange dimension 2), so plans run either family alike. Work-item
(lane, sg) of a work-group computes rows block_row + sg * TILE_ROWS + i (i < TILE_ROWS) and columns
block_col + lane * VW .. + VW of C. Per K step of SUBGROUP, lane l reads A at k0 + l for its rows, then
for each kk the subgroup passes lane kk's values of A around (the shuffle) while every lane reads its own
vector of B at row k0 + kk.
"""

from __future__ import annotations

from functools import lru_cache

from ...dtypes import Dtype, get_dtype
from ..kernel import KernelSource
from ..writer import ElementCode, buffer_kernel
from .params import SubgroupParams

KERNEL_NAME = "gemm"

#: Per spelling: the pragma it needs, and the shuffle of one 32-bit-or-wider real ``x`` from lane ``l``.
_SHUFFLE_REAL = {
    "intel": ("#pragma OPENCL EXTENSION cl_intel_subgroups : enable", "intel_sub_group_shuffle(x, l)"),
    "khr": ("#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable", "sub_group_shuffle(x, l)"),
}


class _Generator(ElementCode):
    def __init__(self, params: SubgroupParams, dtype: Dtype, guarded: bool, stream: bool, summed: bool,
                 sliced: bool) -> None:
        super().__init__(dtype, params.vector_width, guarded, stream, params.tile_k, summed, sliced)
        self.p = params

    def header(self) -> None:
        p, dt, w = self.p, self.dt, self.out
        self.opening("subgroup", p)
        if p.shuffle in _SHUFFLE_REAL:
            w(_SHUFFLE_REAL[p.shuffle][0])
        w("",
          f"#define SUBGROUP {p.subgroup}         // work-items of a subgroup, along N (local dimension 0)",
          f"#define WG_ROWS {p.wg_rows}           // subgroups per work-group, along M (local dimension 1)",
          f"#define TILE_ROWS {p.tile_rows}         // rows of C per work-item",
          f"#define VW {self.vw}                // columns of C per work-item (one vector)",
          "#define BLOCK_ROWS (WG_ROWS * TILE_ROWS)",
          "#define BLOCK_COLS (SUBGROUP * VW)",
          "",
          f"typedef {dt.real_cl} real;",
          f"typedef {dt.cl_element} elem;")
        if self.vw > 1:
            w(f"typedef {dt.cl_vector(self.vw)} elems{self.vw};")
        w(self.mul_add_define(p.mac), "")

    def shuffle_function(self) -> None:
        """``shuffle(x, l)``: lane l's value of the element x, for the spellings that have one."""
        p, dt, w = self.p, self.dt, self.out
        if p.shuffle == "local":
            return
        w("// lane l's value of x in this subgroup")
        w.open("inline real shuffle_real(real x, int l)")
        if p.shuffle == "ptx":
            if dt.needs_fp64:
                w("uint lo = as_uint2(x).x, hi = as_uint2(x).y;     // shfl moves 32 bits",
                  'asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, 0xffffffff;" : "+r"(lo) : "r"(l));',
                  'asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, 0xffffffff;" : "+r"(hi) : "r"(l));',
                  "return as_double((uint2)(lo, hi));")
            else:
                w("uint v = as_uint(x);",
                  'asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, 0xffffffff;" : "+r"(v) : "r"(l));',
                  "return as_float(v);")
        else:
            w(f"return {_SHUFFLE_REAL[p.shuffle][1]};")
        w.close()
        w.open("inline elem shuffle(elem x, int l)")
        w("return (elem)(shuffle_real(x.x, l), shuffle_real(x.y, l));" if dt.is_complex
          else "return shuffle_real(x, l);")
        w.close()
        w("")

    def body(self) -> None:
        p, w = self.p, self.out
        vec = self.vtype(self.vw)
        self.widths.add(self.vw)
        w("const int lane = get_local_id(0);            // position in the subgroup, along N",
          "const int sg = get_local_id(1);              // subgroup in the work-group, along M")
        self.layer_offsets("ABC")
        w(f"const int row0 = {self.tile_index(1)} * BLOCK_ROWS + sg * TILE_ROWS;",
          f"const int col = {self.tile_index(0)} * BLOCK_COLS + lane * VW;",
          "")
        if p.shuffle == "local":
            self.local_memory("__local elem exchange[WG_ROWS][TILE_ROWS][SUBGROUP];   // shuffles through local memory")
        w(f"{vec} acc[TILE_ROWS];")
        self.unrolled("i", "TILE_ROWS", f"acc[i] = ({vec})(0);")
        w("")
        w.open("for (int k0 = 0; k0 < K; k0 += SUBGROUP)")
        w("elem a_own[TILE_ROWS];                        // A at column k0 + lane, for this work-item's rows")
        self.unrolled("i", "TILE_ROWS", f"a_own[i] = {self.element('A', p.layout, 'row0 + i', 'k0 + lane')};")
        if p.shuffle == "local":
            self.unrolled("i", "TILE_ROWS", "exchange[sg][i][lane] = a_own[i];")
            w("barrier(CLK_LOCAL_MEM_FENCE);")
        self.unrolled("kk", "SUBGROUP")
        w(f"const {vec} b = load_{self.vw}(B, ldb, K, N, k0 + kk, col);")
        share = "exchange[sg][i][kk]" if p.shuffle == "local" else "shuffle(a_own[i], kk)"
        self.unrolled("i", "TILE_ROWS", f"acc[i] = mac(acc[i], {share}, b);")
        w.close()
        if p.shuffle == "local":
            w("barrier(CLK_LOCAL_MEM_FENCE);")
        w.close()
        w("")
        if self.summed:
            self.slice_sums(self.each_accumulator)
        w("// C = alpha * acc + beta * C; with beta == 0, C is not read",
          f"const bool beta_zero = {self.beta_is_zero()};")
        self.unrolled("i", "TILE_ROWS")
        w(f"{vec} value = {self.scaled('alpha', vec, 'acc[i]')};",
          f"if (!beta_zero) value = {self.scaled('beta', vec, f'load_{self.vw}(C, ldc, M, N, row0 + i, col)', 'value')};",
          f"store_{self.vw}(C, ldc, M, N, row0 + i, col, value);")
        w.close()

    def each_accumulator(self, body) -> None:
        """The loop over the work-item's accumulator vectors, ``body(acc, at)`` in it (``at``: the vector's
        element in the block, row-major); ``ElementCode.slice_sums`` writes through it."""
        self.unrolled("i", "TILE_ROWS")
        self.out(*body("acc[i]", "(sg * TILE_ROWS + i) * BLOCK_COLS + lane * VW"))
        self.out.close()

    def generate(self) -> str:
        # Intel GPUs choose a subgroup size per kernel unless told: the lanes must be the SUBGROUP
        # work-items along dimension 0.
        required = " __attribute__((intel_reqd_sub_group_size(SUBGROUP)))" if self.p.shuffle == "intel" else ""
        return self.buffer_kernel_source(KERNEL_NAME, f"__attribute__((reqd_work_group_size(SUBGROUP, WG_ROWS, 1))){required}",
                                         [self.shuffle_function, self.stream_functions])


@lru_cache(maxsize=256)
def render(params: SubgroupParams, dtype: Dtype | str, guarded: bool = True, stream: bool = False,
           summed: bool = False, sliced: bool = False) -> KernelSource:
    """The OpenCL source of ``params`` for ``dtype``; ``guarded`` selects any-size edges, ``stream`` the
    stream-K schedule, ``summed`` K slices added up in the kernel, ``sliced`` K slices read in place,
    each into its layer of C (neither under stream-K)."""
    return buffer_kernel(params, lambda: _Generator(params, get_dtype(dtype), guarded, stream, summed, sliced).generate(),
                         (params.subgroup, params.wg_rows), KERNEL_NAME)
