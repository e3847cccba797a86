"""``render`` for the cpu family: readable OpenCL C for one ``CpuParams`` point.

Same kernel interface as ``simt`` (C = alpha op(A) op(B) + beta C on row-major matrices, guarded or
whole-block edges, split K along NDRange dimension 2, stream-K), so plans run every family alike. The
work-groups, numbered along NDRange dimension 0 first, take C's blocks down each column in turn (a CPU
runs them in that order); a work-item computes rows row0 + r (r < TILE_ROWS) and columns
col0 + v * VW .. + VW (v < VECTORS) of C, in accumulators named by row and vector, written out one by one
so that the compiler keeps each in a vector register.
"""

from __future__ import annotations

from functools import lru_cache

from ...dtypes import Dtype, get_dtype
from ..kernel import KernelSource
from ..writer import ElementCode, buffer_kernel
from .params import CpuParams

KERNEL_NAME = "gemm"


class _Generator(ElementCode):
    def __init__(self, params: CpuParams, dtype: Dtype, guarded: bool, stream: bool) -> None:
        super().__init__(dtype, params.vector_width, guarded, stream, params.tile_k)
        self.p = params

    def header(self) -> None:
        p, dt, w = self.p, self.dt, self.out
        self.opening("cpu", p)
        w("",
          f"#define TILE_ROWS {p.tile_rows}         // rows of C of the work-item (its work-group)",
          f"#define VECTORS {p.vectors}           // vectors of C's row it holds",
          f"#define VW {self.vw}                // elements of a vector",
          f"#define UNROLL {p.unroll}            // steps of K a pass of the loop",
          "#define BLOCK_ROWS TILE_ROWS",
          "#define BLOCK_COLS (VECTORS * VW)",
          "",
          f"typedef {dt.real_cl} real;",
          f"typedef {dt.cl_element} elem;",
          f"typedef {dt.cl_vector(self.vw)} elems{self.vw};",
          self.mul_add_define(p.mac), "")

    def body(self) -> None:
        p, w = self.p, self.out
        vec = self.vtype(self.vw)
        self.widths.add(self.vw)
        rows, vectors = range(p.tile_rows), range(p.vectors)
        self.layer_offsets("ABC")
        if self.stream:
            w(f"const int row0 = {self.tile_index(1)} * BLOCK_ROWS;",
              f"const int col0 = {self.tile_index(0)} * BLOCK_COLS;")
        else:           # blocks taken down each column of C in turn: those running one after the other
            # on a core share B's columns, which stay in its cache, while A's few rows stream past
            w("const int linear = get_group_id(0) + get_num_groups(0) * get_group_id(1);",
              "const int row0 = linear % get_num_groups(1) * BLOCK_ROWS;",
              "const int col0 = linear / get_num_groups(1) * BLOCK_COLS;")
        w("")
        w("// acc_r_v: row row0 + r, columns col0 + v * VW .. + VW of C")
        for r in rows:
            w(" ".join(f"{vec} acc_{r}_{v} = ({vec})(0);" for v in vectors))
        first = "0"
        if self.guarded:
            w("// a block inside C reads its whole steps of K unguarded (the guards' branches would keep the",
              "// compiler from vectorizing the loop); the rest, and the blocks on C's edges, guarded",
              "const int whole_k = row0 + BLOCK_ROWS <= M && col0 + BLOCK_COLS <= N ? K / UNROLL * UNROLL : 0;")
            self.k_loop("0", "whole_k", guarded=False)
            first = "whole_k"
        self.k_loop(first, "K", guarded=self.guarded)
        w("")
        w("// C = alpha * acc + beta * C; with beta == 0, C is not read",
          f"const bool beta_zero = {self.beta_is_zero()};")
        for r in rows:
            for v in vectors:
                at = f"row0 + {r}, col0 + {v} * VW"
                w(f"{{ {vec} value = {self.scaled('alpha', vec, f'acc_{r}_{v}')};",
                  f"  if (!beta_zero) value = {self.scaled('beta', vec, f'load_{self.vw}(C, ldc, M, N, {at})', 'value')};",
                  f"  store_{self.vw}(C, ldc, M, N, {at}, value); }}")

    def k_loop(self, start: str, end: str, guarded: bool) -> None:
        """The loop over K from ``start`` to ``end``, each step's vectors of B and values of A read through
        the load helpers (``guarded``: zero outside the matrices) or straight from memory."""
        p, w = self.p, self.out
        vec, rows, vectors = self.vtype(self.vw), range(p.tile_rows), range(p.vectors)
        w.open(f"for (int k0 = {start}; k0 < {end}; k0 += UNROLL)")
        self.unrolled("kk", "UNROLL")
        w("const int k = k0 + kk;")
        for v in vectors:
            column = f"col0 + {v} * VW"
            w(f"const {vec} b_{v} = " + (f"load_{self.vw}(B, ldb, K, N, k, {column});" if guarded
                                        else self.vload(self.vw, f"k * ldb + {column}", pointer="B") + ";"))
        for r in rows:
            a = self.element("A", p.layout, f"row0 + {r}", "k") if guarded else self.vload(1, self.a_index(f"row0 + {r}", "k"), pointer="A")
            w(f"{{ const elem a = {a}; " + " ".join(f"acc_{r}_{v} = mac(acc_{r}_{v}, a, b_{v});" for v in vectors)
              + " }")
        w.close()
        w.close()

    def a_index(self, row: str, k: str) -> str:
        """The index of A's element at ``row`` and ``k`` in its buffer, as the layout stores A."""
        return f"{k} * lda + {row}" if self.p.layout[0] == "T" else f"({row}) * lda + {k}"


    def generate(self) -> str:
        return self.buffer_kernel_source(KERNEL_NAME, "__attribute__((reqd_work_group_size(1, 1, 1)))",
                                         [self.stream_functions])


@lru_cache(maxsize=256)
def render(params: CpuParams, dtype: Dtype | str, guarded: bool = True, stream: bool = False) -> KernelSource:
    """The OpenCL source of ``params`` for ``dtype``; ``guarded`` selects any-size edges, ``stream`` the
    stream-K schedule."""
    return buffer_kernel(params, lambda: _Generator(params, get_dtype(dtype), guarded, stream).generate(),
                         (1, 1), KERNEL_NAME)
