"""``render``: readable OpenCL C for one ``SimtParams`` point.

The kernel computes C = alpha op(A) op(B) + beta C on row-major matrices. A work-group of
WG_ROWS x WG_COLS work-items computes a BLOCK_ROWS x BLOCK_COLS block of C; each work-item keeps a
TILE_ROWS x TILE_COLS tile of accumulators, as vectors of VW elements along N. Per K step of TILE_K,
operands in local memory are staged cooperatively (stored k-major, so the inner loop reads vectors
along M and N), operands not in local memory are read by each work-item from global memory.

Two edge modes: ``guarded`` kernels take any M, N, K (loads outside the matrices read zero, stores
outside are skipped, vector loads need only element alignment); unguarded kernels need whole blocks,
a K that is a multiple of TILE_K, and leading dimensions and offsets that are multiples of VW, and
read and write whole aligned vectors. The plan in ``blas`` picks one and pads where needed.

Layers: work-groups along dimension 2 compute independent products, each layer's A, B and C ``*_stride``
elements after the last's. The plan uses them for split K (layer s reads the K slice from k = s * K,
through buffers, not images, into its own slice of a temporary C that a helper kernel then adds up) and
for strided batches (one product per layer). With one layer this is the plain product. Rendered for
stream-K (``codelets.stream_k``), the body runs once per unit of work a work-group takes. Rendered with
``sliced`` (not under stream-K), the layers are K slices read in place, each into its layer of a temporary
C that the merge adds up; with ``summed`` the kernel adds them up itself (``ElementCode.slice_sums``): a
split product in one launch, no temporary C, no merge.
"""

from __future__ import annotations

from functools import lru_cache

from ...dtypes import Dtype, get_dtype
from ...errors import ConfigError
from ..conversions import conversions
from ..kernel import KernelSource
from ..writer import ElementCode, refuse_stored_c
from .geometry import OperandPath, operands
from .params import WARP, SimtParams

KERNEL_NAME = "gemm"


class _Generator(ElementCode):
    """Writes the kernel for one (params, dtype, edge mode)."""

    def __init__(self, params: SimtParams, dtype: Dtype, guarded: bool, stream: bool, summed: bool,
                 sliced: bool, stored_c: bool) -> None:
        # 16-bit operands are read as they are stored and computed in float32 (the local memory holds floats)
        super().__init__(dtype.compute, params.vector_width, guarded, stream, params.tile_k, summed, sliced)
        self.storage = dtype
        if dtype.half:
            self.operand_scalar = "stored"
        if stored_c:
            self.stores_16bit(dtype)
        self.p = params
        self.a, self.b = operands(params, dtype)
        self.any_local = params.local_a or params.local_b
        self.read_widths: set[int] = set()     # element counts of image reads used
        # the work-item's place in the work-group's grid of tiles (along N, along M)
        self.position = ("wx", "wy") if params.warp_cols else ("lx", "ly")

    def outer_index(self, op: OperandPath, group: str) -> str:
        """Offset within the block of the work-item's vector group ``group`` along M (A) or N (B)."""
        if op.name == "A":
            local_id, wg, tile = self.position[1], "WG_ROWS", "TILE_ROWS"
        else:
            local_id, wg, tile = self.position[0], "WG_COLS", "TILE_COLS"
        if self.p.assignment == "consecutive":
            return f"{local_id} * {tile} + {group} * VW"
        return f"({local_id} + {group} * {wg}) * VW"

    def stored(self, op: OperandPath, outer: str, k: str) -> tuple[str, str, str, str, str, str]:
        """(pointer, ld, rows, cols, r, c): where element (outer, k) of an operand lives in memory."""
        block = "block_row" if op.name == "A" else "block_col"
        extent = "M" if op.name == "A" else "N"
        ptr, ld = (op.name, "lda" if op.name == "A" else "ldb")
        outer_expr = f"{block} + {outer}"
        if op.outer_contiguous:
            return ptr, ld, "K", extent, k, outer_expr
        return ptr, ld, extent, "K", outer_expr, k

    def read(self, op: OperandPath, n: int, outer: str, k: str) -> str:
        """Expression reading ``n`` consecutive stored elements of ``op`` at (outer, k)."""
        ptr, ld, rows, cols, r, c = self.stored(op, outer, k)
        if op.image:
            self.read_widths.add(n)
            return f"read_{n}({ptr}, {r}, {c})"
        return f"{self.operand_load(n)}({ptr}, {ld}, {rows}, {cols}, {r}, {c})"

    # ----- sections ----------------------------------------------------------------------------
    def header(self) -> None:
        p, dt = self.p, self.dt
        w = self.out
        w(f"// autogemm simt codelet ({self.storage.letter}gemm): C = alpha * op(A) * op(B) + beta * C, row-major",
          f"// configuration: {p.describe()}",
          f"// layout {p.layout}: A is read as {'K x M (A transposed)' if self.a.outer_contiguous else 'M x K'}, "
          f"B as {'K x N' if self.b.outer_contiguous else 'N x K (B transposed)'}",
          f"// edges: {'guarded (any M, N, K; loads outside read zero)' if self.guarded else 'whole blocks only, aligned vectors'}")
        if dt.needs_fp64:
            w("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
        w("",
          f"#define WG_ROWS {p.wg_rows}          // work-items along M (local dimension 1)",
          f"#define WG_COLS {p.wg_cols}          // work-items along N (local dimension 0)",
          f"#define TILE_ROWS {p.tile_rows}        // rows of C per work-item",
          f"#define TILE_COLS {p.tile_cols}        // columns of C per work-item",
          f"#define TILE_K {p.tile_k}           // K step",
          f"#define VW {self.vw}               // vector width, in elements",
          *([f"#define WARP_COLS {p.warp_cols}        // work-items along N in each warp's patch",
             f"#define WARP_ROWS {WARP // p.warp_cols}        // work-items along M in each warp's patch"]
            if p.warp_cols else []),
          "#define WG_SIZE (WG_ROWS * WG_COLS)",
          "#define BLOCK_ROWS (WG_ROWS * TILE_ROWS)",
          "#define BLOCK_COLS (WG_COLS * TILE_COLS)",
          f"#define NBUF {2 if p.double_buffer else 1}             // local buffers per operand",
          "")
        kind = "complex (re, im) pairs" if dt.is_complex else "reals"
        w(f"typedef {dt.real_cl} real;",
          f"typedef {dt.cl_element} elem;          // one element: {kind}")
        if self.storage.half:
            w(f"typedef {self.storage.stored_cl} stored;          // the bits of a {self.storage.numpy} value in memory",
              conversions(self.storage).rstrip("\n"))
        for n in sorted({self.vw, self.a.load_width, self.b.load_width} - {1}):
            w(f"typedef {dt.cl_vector(n)} elems{n};        // {n} consecutive elements")
        for op in (self.a, self.b):
            if op.local:
                self.stage_defines(op)
        w(self.mul_add_define(p.mac), "")

    def image_helpers(self) -> None:
        w = self.out
        if self.read_widths:
            ept = self.a.elements_per_texel
            fetch = ("as_double2(read_imageui(img, SAMPLER, (int2)(x, y)))" if self.dt.needs_fp64
                     else "read_imagef(img, SAMPLER, (int2)(x, y))")
            w("__constant sampler_t SAMPLER = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;",
              f"#define TEXEL(img, x, y) {fetch}   // {ept} element(s) per RGBA texel", "")
            for n in sorted(self.read_widths):
                t = self.vtype(n)
                texels = ", ".join(f"TEXEL(img, c / {ept} + {i}, r)" for i in range(n // ept))
                w(f"// {n} consecutive elements of row r from column c of an image (c a multiple of {ept})")
                w.open(f"inline {t} read_{n}(__read_only image2d_t img, const int r, const int c)")
                w(f"return ({t})({texels});" if n > ept else f"return {texels};")
                w.close()
                w("")


    # ----- the kernel --------------------------------------------------------------------------
    def signature(self) -> None:
        w = self.out
        operand_args = []
        for op in (self.a, self.b):
            lower = op.name.lower()
            arg = (f"__read_only image2d_t {op.name}" if op.image
                   else f"const __global {self.operand_scalar}* restrict {op.name}")
            operand_args.append(f"    {arg}, const long {lower}_offset, const int ld{lower},")
        w("__kernel __attribute__((reqd_work_group_size(WG_COLS, WG_ROWS, 1)))",
          f"void {KERNEL_NAME}(const int M, const int N, const int {self.k_parameter}, const elem alpha, "
          "const elem beta,",
          *operand_args,
          f"    __global {self.c_scalar}* restrict C, const long c_offset, const int ldc,",
          self.last_parameters(),
          "{")

    def prologue(self) -> None:
        w = self.out
        w("const int lx = get_local_id(0);             // position along N in the work-group",
          "const int ly = get_local_id(1);             // position along M")
        if self.any_local or self.p.warp_cols:
            w("const int tid = ly * WG_COLS + lx;")
        if self.p.warp_cols:
            w(f"const int warp = tid / {WARP}, lane = tid % {WARP};",
              "const int wx = (warp % (WG_COLS / WARP_COLS)) * WARP_COLS + lane % WARP_COLS;   // tile column",
              "const int wy = (warp / (WG_COLS / WARP_COLS)) * WARP_ROWS + lane / WARP_COLS;   // tile row")
        w(f"const int block_row = {self.tile_index(1)} * BLOCK_ROWS;",
          f"const int block_col = {self.tile_index(0)} * BLOCK_COLS;")
        self.layer_offsets([op.name for op in (self.a, self.b) if not op.image] + ["C"])
        w("")
        for op in (self.a, self.b):
            if op.local:
                align = self.vw * self.dt.itemsize
                self.local_memory(f"__local elem {op.name}_local[NBUF][TILE_K][{op.local_row}] "
                                  f"__attribute__((aligned({align})));")
        vec = self.vtype(self.vw)
        w(f"{vec} acc[TILE_ROWS][TILE_COLS / VW];")
        self.unrolled("i", "TILE_ROWS")
        self.unrolled("j", "TILE_COLS / VW", f"acc[i][j] = ({vec})(0);")
        self.out.close()
        w("")

    def stage_defines(self, op: OperandPath) -> None:
        rows, cols = op.stored_shape
        n = op.name
        self.out(f"#define {n}_LOAD_WIDTH {op.load_width}",
                 f"#define {n}_VECTORS_PER_ROW {cols // op.load_width}   // stored block: {rows} x {cols}",
                 f"#define {n}_VECTORS {op.vectors}",
                 f"#define {n}_LOADS {op.loads_per_item}             // per work-item")

    def stage_loop(self, op: OperandPath, body: list[str]) -> None:
        """A loop over this work-item's share of the staging reads of one block; ``body`` sees r, c, l."""
        w = self.out
        n = op.name
        self.unrolled("l", f"{n}_LOADS")
        w("const int v = tid + l * WG_SIZE;")
        uneven = op.vectors % op.work_group_size != 0
        if uneven:
            w.open(f"if (v < {n}_VECTORS)")
        w(f"const int r = v / {n}_VECTORS_PER_ROW;",
          f"const int c = (v % {n}_VECTORS_PER_ROW) * {n}_LOAD_WIDTH;")
        w(*body)
        if uneven:
            w.close()
        w.close()

    def stage_load(self, op: OperandPath, k0: str) -> None:
        """Read this work-item's share of the block at K offset ``k0`` into registers."""
        if op.outer_contiguous:
            src = self.read(op, op.load_width, "c", f"{k0} + r")
        else:
            src = self.read(op, op.load_width, "r", f"{k0} + c")
        self.stage_loop(op, [f"{op.name.lower()}_stage[l] = {src};"])

    def stage_store(self, op: OperandPath, buf: str) -> None:
        """Write the staged registers into local buffer ``buf`` (k-major: row k holds the block's M or N)."""
        reg = f"{op.name.lower()}_stage[l]"
        local = f"{op.name}_local[{buf}]"
        if op.outer_contiguous:
            t = self.vtype(op.load_width)
            body = ([f"*(__local {t}*)&{local}[r][c] = {reg};"] if op.load_width > 1
                    else [f"{local}[r][c] = {reg};"])
        else:
            body = [f"{local}[c + {e}][r] = {self.component(reg, e, op.load_width)};"
                    for e in range(op.load_width)]
        self.stage_loop(op, body)

    def stage(self, what: str, arg: str) -> None:
        for op in (self.a, self.b):
            if op.local:
                (self.stage_load if what == "load" else self.stage_store)(op, arg)

    def fragment_a(self, buf: str) -> None:
        w, op = self.out, self.a
        if op.local or op.outer_contiguous:
            vec = self.vtype(self.vw)
            self.unrolled("iv", "TILE_ROWS / VW")
            row = self.outer_index(op, "iv")
            src = (f"*(__local {vec}*)&A_local[{buf}][kk][{row}]" if op.local
                   else self.read(op, self.vw, row, "k0 + kk"))
            w(f"const {vec} t = {src};")
            for e in range(self.vw):
                w(f"a[iv * VW + {e}] = {self.component('t', e, self.vw)};")
            w.close()
        else:
            row = f"{self.outer_index(op, 'i / VW')} + i % VW"
            self.unrolled("i", "TILE_ROWS", f"a[i] = {self.read(op, 1, row, 'k0 + kk')};")

    def fragment_b(self, buf: str) -> None:
        w, op = self.out, self.b
        vec = self.vtype(self.vw)
        col = self.outer_index(op, "j")
        if op.local:
            self.unrolled("j", "TILE_COLS / VW", f"b[j] = *(__local {vec}*)&B_local[{buf}][kk][{col}];")
        elif op.outer_contiguous:
            self.unrolled("j", "TILE_COLS / VW", f"b[j] = {self.read(op, self.vw, col, 'k0 + kk')};")
        else:
            self.unrolled("j", "TILE_COLS / VW")
            for e in range(self.vw):
                w(f"{self.component('b[j]', e, self.vw)} = {self.read(op, 1, f'{col} + {e}', 'k0 + kk')};")
            w.close()

    def compute(self, buf: str) -> None:
        w = self.out
        w("// TILE_K rank-1 updates of the work-item's tile")
        self.unrolled("kk", "TILE_K", pragma="#pragma unroll" if self.p.unroll_k else "#pragma unroll 1")
        w("elem a[TILE_ROWS];", f"{self.vtype(self.vw)} b[TILE_COLS / VW];")
        self.fragment_a(buf)
        self.fragment_b(buf)
        self.unrolled("i", "TILE_ROWS")
        self.unrolled("j", "TILE_COLS / VW", "acc[i][j] = mac(acc[i][j], a[i], b[j]);")
        w.close()
        w.close()

    def main_loop(self) -> None:
        w = self.out
        for op in (self.a, self.b):
            if op.local:
                w(f"{self.vtype(op.load_width)} {op.name.lower()}_stage[{op.name}_LOADS];   // staging registers")
        if not self.any_local:
            w.open("for (int k0 = 0; k0 < K; k0 += TILE_K)")
            self.compute("0")
            w.close()
        elif self.p.double_buffer:
            w("// double buffering: the next block is read from global memory while this one is used")
            w("int buf = 0;")
            self.stage("load", "0")
            self.stage("store", "0")
            w("barrier(CLK_LOCAL_MEM_FENCE);")
            w.open("for (int k0 = 0; k0 < K; k0 += TILE_K)")
            w("const int k_next = k0 + TILE_K;")
            w.open("if (k_next < K)")
            self.stage("load", "k_next")
            w.close()
            self.compute("buf")
            w.open("if (k_next < K)")
            self.stage("store", "buf ^ 1")
            w.close()
            w("barrier(CLK_LOCAL_MEM_FENCE);", "buf ^= 1;")
            w.close()
        else:
            w.open("for (int k0 = 0; k0 < K; k0 += TILE_K)")
            self.stage("load", "k0")
            self.stage("store", "0")
            w("barrier(CLK_LOCAL_MEM_FENCE);")
            self.compute("0")
            w("barrier(CLK_LOCAL_MEM_FENCE);")
            w.close()
        w("")

    def each_accumulator(self, body) -> None:
        """The loops over the work-item's accumulator vectors, ``body(acc, at)`` in them (``at``: the
        vector's element in the block, row-major); ``ElementCode.slice_sums`` writes through it."""
        self.unrolled("i", "TILE_ROWS")
        self.unrolled("j", "TILE_COLS / VW")
        self.out(*body("acc[i][j]", f"({self.outer_index(self.a, 'i / VW')} + i % VW) * BLOCK_COLS + "
                                    f"{self.outer_index(self.b, 'j')}"))
        self.out.close()
        self.out.close()

    def epilogue(self) -> None:
        w = self.out
        vec = self.vtype(self.vw)
        self.widths.add(self.vw)
        if self.summed:
            self.slice_sums(self.each_accumulator)
        w("// C = alpha * acc + beta * C; with beta == 0, C is not read",
          f"const bool beta_zero = {self.beta_is_zero()};")
        self.unrolled("i", "TILE_ROWS")
        w(f"const int row = block_row + {self.outer_index(self.a, 'i / VW')} + i % VW;")
        self.unrolled("j", "TILE_COLS / VW")
        w(f"const int col = block_col + {self.outer_index(self.b, 'j')};",
          f"{vec} value = {self.scaled('alpha', vec, 'acc[i][j]')};",
          f"if (!beta_zero) value = {self.scaled('beta', vec, f'{self.c_load(self.vw)}(C, ldc, M, N, row, col)', 'value')};",
          f"store_{self.vw}(C, ldc, M, N, row, col, value);")
        w.close()
        w.close()

    def block(self) -> None:
        """The computation of one block of C."""
        self.prologue()
        self.main_loop()
        self.epilogue()

    def generate(self) -> str:
        kernel_body = self.kernel_body(self.block)
        self.out = type(self.out)()
        self.header()
        self.mac_function()
        self.stream_functions()
        self.load_helpers()
        self.image_helpers()
        self.store_helper()
        self.signature()
        self.out.lines.extend(kernel_body)
        self.out("}")
        return self.out.text()


@lru_cache(maxsize=1024)
def render(params: SimtParams, dtype: Dtype | str, guarded: bool = True, stream: bool = False,
           summed: bool = False, sliced: bool = False, stored_c: bool = False) -> KernelSource:
    """The OpenCL source of ``params`` for ``dtype``; ``guarded`` selects any-size edges, ``stream`` the
    stream-K schedule, ``summed`` K slices added up in the kernel, ``sliced`` K slices read in place, each
    into its layer of C (see module doc). A 16-bit dtype's operands are read as they are stored, where
    the configuration stages both in local memory from buffers (``SimtParams.reads_16bit``; the others
    take the float32 problem), and with ``stored_c`` so is C. Remembered: plans ask for the same kernels
    again and again."""
    dt = get_dtype(dtype)
    problem = params.malformed()
    if problem:
        raise ConfigError(problem)
    if stream and (params.image_a or params.image_b):
        raise ConfigError("stream-K reads its operands from buffers; this configuration uses images")
    if dt.half and not params.reads_16bit():
        raise ConfigError("a configuration that reads an operand through an image or without staging it in "
                          "local memory takes 16-bit operands packed as floats (the float32 problem)")
    if stored_c:
        refuse_stored_c(dt, stream)
    source = _Generator(params, dt, guarded, stream, summed, sliced, stored_c).generate()
    return KernelSource(
        name=KERNEL_NAME,
        source=source,
        options=params.build_options,
        local_size=(params.wg_cols, params.wg_rows),
        block=(params.block_rows, params.block_cols, params.tile_k),
    )
