"""``render`` for the nvidia_mma family: readable OpenCL C for one ``MmaParams`` point.

Same kernel interface as ``simt`` (C = alpha op(A) op(B) + beta C on row-major matrices, guarded or
whole-block edges, split K along NDRange dimension 2), so plans run every family alike.

Work-item (lx, ly) of a work-group is lane lx % 32 of warp (ly, lx / 32). The operands of a K block are
staged in local memory as rows of k (A as BLOCK_ROWS x TILE_K, B as BLOCK_COLS x TILE_K); the 16-byte
chunks of a row are permuted by an XOR with a function of the row (the swizzle), so that the rows a warp
reads at once fall in distinct banks without padding. Where asynchronous copies read a 32- or 64-bit
operand whose rows or columns are consecutive in memory (A in T, B in N), they stage it as it lies,
TILE_K rows of the block's extent, its 16-byte chunks permuted by a function of k (``mn_swizzle``) so
that the rows of k a warp reads at once fall in distinct banks where each row spans a line. Complex
operands are kept as separate real and imaginary arrays, and their product is four real products. 16-bit
operands travel as their bits (two to a register, as the instruction takes them) and are never
converted; their products are accumulated in float, and C is rounded to 16 bits where it is stored so:
by the kernel (``stored_c``), or by the merge where the plan computes C into a float32 temporary. The instruction's fragments take k in an order of our choosing: a lane reads LANE_K
consecutive k at once (a vector load of 8, 16 or more bytes) and gives them to one or more instructions,
so that lane t of a group of four holds k = CHUNK * c + LANE_K * t + (0 .. LANE_K - 1); A and B use the
same order, so the sum over k is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ...dtypes import Dtype, get_dtype
from ...errors import ConfigError
from ..conversions import conversions
from ..kernel import ALIGNED_BYTES, KernelSource, ceil_div
from ..writer import ElementCode, hex_digit, refuse_stored_c
from .params import OPERANDS, WARP, InstructionShape, MmaParams

KERNEL_NAME = "gemm"
#: Local memory is 32 banks of 4 bytes: one pass serves 128 bytes, e.g. 16 bytes each to 8 lanes.
BANK_BYTES = 128
#: The unit the swizzle moves: a row's k are kept in 16-byte chunks, each whole (a vector, a 16-byte copy).
CHUNK_BYTES = 16


@dataclass(frozen=True)
class Swizzle:
    """Where a staged row keeps its chunks: chunk q of row r lies at place q XOR ``xor(r)``, with
    ``xor(r) = (r / rows) % variants * step``."""

    rows: int        # consecutive rows that share a permutation
    variants: int    # permutations, in turn
    step: int        # chunks between permutations

    def xor(self, row: int) -> int:
        return row // self.rows % self.variants * self.step


def swizzle(params: MmaParams, dtype: Dtype) -> Swizzle:
    """The permutation that makes a warp's fragment reads free of bank conflicts.

    ``ldmatrix`` reads the 16-byte rows of an 8 x 8 matrix, 8 consecutive rows at one chunk, in a pass:
    their places must differ modulo a line. Otherwise a lane reads ``span`` bytes at a time (in 16-byte pieces where wider). One pass of local memory serves
    ``rows_read`` fragment rows: four lanes each, at one offset. Rows of ``row_chunks`` chunks lie
    ``rows_per_line`` to a 128-byte line; the rows of a pass that share a line's place need distinct
    permutations, which move their reads ``step`` chunks apart (a lane group's chunks; with 32-byte reads,
    whose pieces lie on every other chunk, from even chunks to odd ones)."""
    span = params.lane_k(dtype) * dtype.real_bytes
    row_chunks = params.tile_k * dtype.real_bytes // CHUNK_BYTES
    if params.loads == "ldmatrix":      # a pass reads one matrix: 16 bytes of 8 consecutive rows, one chunk each
        rows_per_line = max(1, BANK_BYTES // CHUNK_BYTES // row_chunks)
        return Swizzle(rows_per_line, BANK_BYTES // CHUNK_BYTES // rows_per_line, 1)
    rows_read = BANK_BYTES // min(span, CHUNK_BYTES) // 4
    rows_per_line = max(1, BANK_BYTES // CHUNK_BYTES // row_chunks)
    step = 4 * span // CHUNK_BYTES if span <= CHUNK_BYTES else 1
    return Swizzle(rows_per_line, max(1, rows_read // rows_per_line), step)


def scratch_reals(shape: InstructionShape) -> int:
    """Reals of local memory one warp's emulated instruction exchanges its fragments through."""
    return shape.m * shape.k + shape.k * shape.n


def staged_by_k(params: MmaParams, op: str) -> bool:
    """Whether operand ``op`` is staged as rows of k: read so (A in N, B in T), or stored otherwise and
    rearranged on its way through registers; else asynchronous copies stage it as it lies."""
    k_contiguous = params.layout[0] == "N" if op == "A" else params.layout[1] == "T"
    return k_contiguous or params.copy == "registers"


def mn_swizzle(outer: int, dtype: Dtype) -> int:
    """Permutations of a stage staged as it lies (``staged_by_k`` false), rows of ``outer``: one pass of
    a warp's fragment read (the warp's for 32-bit elements, each half warp's for 64-bit ones) takes
    from each of four rows of k (a lane group's, LANE_K apart) 32 consecutive bytes, two chunks; chunk q
    of row k lies at q XOR 2 (k / LANE_K % variants), so that where rows span a 128-byte line or more
    the four rows' chunks fill its 8 chunk places. Shorter rows (narrow blocks of 16 or 8 floats) share
    lines: two or four rows of a pass then meet in the same banks."""
    row_chunks = outer * dtype.real_bytes // CHUNK_BYTES
    return max(1, min(4, row_chunks // 2))


def local_bytes(params: MmaParams, dtype: Dtype) -> int:
    """Local memory one work-group uses: staged operands, and the emulation's scratch if any."""
    staged = params.stages * (params.block_rows + params.block_cols) * params.tile_k * dtype.itemsize
    scratch = params.warps_m * params.warps_n * scratch_reals(params.geometry) * dtype.compute.real_bytes
    return staged + (scratch if params.mma == "local" else 0)


class _Generator(ElementCode):
    def __init__(self, params: MmaParams, dtype: Dtype, guarded: bool, stream: bool, summed: bool,
                 sliced: bool, aligned: bool, stored_c: bool) -> None:
        super().__init__(dtype, min(params.vector_width, 2), guarded, stream, params.tile_k, summed, sliced)
        self.aligned = aligned and params.copy == "async"     # (only its asynchronous copies use it)
        self.operand_scalar = "stored"
        if stored_c:
            self.stores_16bit(dtype)
        self.p = params
        self.shape = params.geometry
        self.operand = OPERANDS[dtype.mma_operand]
        self.lane_k, self.steps = params.lane_k(dtype), params.steps(dtype)
        self.read_pieces = max(1, self.lane_k * dtype.real_bytes // CHUNK_BYTES)   # 16-byte reads a lane's read takes
        self.matrices = params.loads == "ldmatrix"
        self.registers = self.shape.k_per_lane // self.operand.pack    # per row of 8, per instruction
        self.parts = ("re", "im") if dtype.is_complex else ("",)
        #: 3xTF32: each operand value split into two TF32 parts (some cannot be: ``float32_redo``)
        self.splits = self.operand.name == "tf32" and dtype.operand_splits == 2
        self.threads = params.work_group_size

    # ----- names -------------------------------------------------------------------------------
    @staticmethod
    def local_name(op: str, part: str) -> str:
        return f"{op.lower()}_{part or 'local'}"

    @staticmethod
    def operand_names(op: str) -> tuple[str, str, str, str]:
        """(pointer, leading dimension, extent along M or N, block start) of operand ``op`` in the kernel."""
        return ("A", "lda", "M", "block_row") if op == "A" else ("B", "ldb", "N", "block_col")

    def k_contiguous(self, op: str) -> bool:
        """True when operand ``op`` as the kernel reads it has consecutive k in memory."""
        return self.p.layout[0] == "N" if op == "A" else self.p.layout[1] == "T"

    # ----- sections ----------------------------------------------------------------------------
    def header(self) -> None:
        p, dt, inst, w = self.p, self.dt, self.shape, self.out
        a_read = "M x K" if self.k_contiguous("A") else "K x M (A transposed)"
        b_read = "N x K (B transposed)" if self.k_contiguous("B") else "K x N"
        w(f"// autogemm nvidia_mma codelet ({dt.routine}): C = alpha * op(A) * op(B) + beta * C, row-major",
          f"// configuration: {p.describe()}",
          f"// layout {p.layout}: A is read as {a_read}, B as {b_read}",
          f"// instruction: mma.sync {inst.name} {self.operand.ptx_types} "
          f"({'inline PTX' if p.mma == 'ptx' else 'emulated through local memory'})"
          + (("; complex products as three real ones (3M: re = rr - ii, im = (r + i)(r + i) - rr - ii)"
              if self.three_m else "; complex products as four real ones") if dt.is_complex else ""),
          f"// precision: {self.precision_note()}",
          f"// edges: {self.edges()}")
        if dt.needs_fp64:
            w("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
        sw = swizzle(p, dt)
        w("",
          f"#define WARPS_M {p.warps_m}           // warps per work-group along M (local dimension 1)",
          f"#define WARPS_N {p.warps_n}           // warps per work-group along N (local dimension 0, 32 lanes each)",
          f"#define TILES_M {p.tiles_m}           // instruction tiles per warp along M",
          f"#define TILES_N {p.tiles_n}           // instruction tiles per warp along N",
          f"#define MMA_M {inst.m}             // rows of C per instruction",
          f"#define MMA_N {inst.n}             // columns of C per instruction",
          f"#define MMA_K {inst.k}             // k per instruction",
          f"#define TILE_K {p.tile_k}           // k per block staged in local memory",
          f"#define STAGES {p.stages}            // local buffers",
          f"#define LANE_K {self.lane_k}            // consecutive k a lane reads at once, for {self.steps} instruction(s)",
          "#define CHUNK (4 * LANE_K)       // k the four lanes of a group read at once",
          f"#define CHUNK_ELEMS {CHUNK_BYTES // dt.real_bytes}       // reals of a 16-byte chunk of a staged row",
          f"#define SWIZZLE(row) ((row) / {sw.rows} % {sw.variants} * {sw.step})   "
          "// the XOR that places a row's chunks (reads of a warp in distinct banks)",
          "#define AT(row, k) ((row) * TILE_K + (((k) / CHUNK_ELEMS) ^ SWIZZLE(row)) * CHUNK_ELEMS + (k) % CHUNK_ELEMS)",
          "#define THREADS (32 * WARPS_M * WARPS_N)",
          "#define BLOCK_ROWS (WARPS_M * TILES_M * MMA_M)",
          "#define BLOCK_COLS (WARPS_N * TILES_N * MMA_N)",
          *(self.stage_defines("A", "BLOCK_ROWS") + self.stage_defines("B", "BLOCK_COLS")),
          *([f"#define SCRATCH {scratch_reals(inst)}          // reals of local memory per warp for the emulated instruction"]
            if p.mma == "local" else []),
          "",
          f"typedef {dt.real_cl} real;",
          f"typedef {dt.cl_element} elem;",
          f"typedef {dt.stored_cl} stored;            // A's and B's elements in memory")
        if self.matrices:
            w("typedef uint4 a_read;          // one A fragment: 16 rows x 16 k as ldmatrix delivers it (two values a register)",
              "typedef uint2 b_read;          // one B fragment: 8 columns x 16 k")
        elif dt.half:
            w(f"typedef uint{self.lane_k // 2} lane_read;          // LANE_K consecutive k of one staged row, two per register")
        else:
            w(f"typedef {dt.real_cl}{self.lane_k} lane_read;        // LANE_K consecutive k of one staged row")
        if self.read_pieces > 1:
            w(f"typedef {dt.real_cl}{self.lane_k // self.read_pieces} lane_piece;       "
              "// one 16-byte chunk of a lane's read (the swizzle may part the chunks)")
        for n in sorted(self.widths | {self.vw}):
            if n > 1:
                w(f"typedef {dt.cl_vector(n)} elems{n};")
        for n in sorted(self.stored_widths):
            if n > 1:
                w(f"typedef {dt.stored_cl}{n} {self.stored_type(n)};")
        w(self.mul_add_define("fma"))
        if self.operand.name == "tf32":
            w("// TF32 keeps 10 of float's 23 mantissa bits: the nearest such values (ties away from zero), as floats",
              f"#define TF32(x) as_float{self.lane_k}((as_uint{self.lane_k}(x) + 0x1000u) & 0xffffe000u)")
            if self.splits:
                k = self.lane_k
                w(f"typedef uint{k} lane_bits;",
                  "// 3xTF32's high part: the nearest TF32 value, but toward zero where the nearest is past float's",
                  "// largest (so that a finite product stays finite); MAGNITUDE is the value's bits less the sign",
                  f"#define TF32_HIGH(x, magnitude) as_float{k}((as_uint{k}(x) + (as_uint{k}((magnitude) < 0x7f7ff000u) & 0x1000u)) & 0xffffe000u)",
                  "// the bits of 2^-115: a nonzero value below it leaves a remainder below float's normal range,",
                  "// where TF32 keeps fewer of its bits than float does",
                  "#define SPLIT_SMALLEST_BITS 0x06000000u",
                  "#define FLOAT_LARGEST_BITS 0x7f7fffffu")
        if dt.half and (p.mma == "local" or self.c_scalar == "stored"):
            w(conversions(dt).rstrip("\n"))
        w("")

    def stage_defines(self, op: str, outer: str) -> list[str]:
        """The size of a local stage of ``op``, and where staged as it lies, the place of its elements."""
        lines = [f"#define {op}_STAGE ({outer} * TILE_K)"]
        if not staged_by_k(self.p, op):
            variants = mn_swizzle(self.p.block_rows if op == "A" else self.p.block_cols, self.dt)
            lines.append(f"#define {op}_AT(k, o) ((k) * {outer} + ((((o) / CHUNK_ELEMS) ^ ((k) / LANE_K % {variants} * 2)) "
                         f"* CHUNK_ELEMS) + (o) % CHUNK_ELEMS)   // {op} staged as it lies: rows of k, chunks swizzled")
        return lines

    def precision_note(self) -> str:
        """What the products are exact to, for the kernel's header."""
        if self.dt.half:
            return f"exact products of {self.operand.name} operands, accumulated and written in FP32"
        if self.operand.name != "tf32":
            return f"exact {self.operand.name} products"
        if self.dt.operand_splits == 1:
            return "operands rounded to TF32, products accumulated in FP32"
        return ("each operand split into a TF32 high part and a TF32 remainder; hi hi + hi lo + lo hi "
                "accumulated in FP32")

    def instruction_function(self) -> None:
        """``mma(c, a..., b...)``: c += a b for one instruction tile, in the configured spelling."""
        inst, w, operand = self.shape, self.out, self.operand
        a_regs = [f"a{r}" for r in range(inst.row_halves * self.registers)]
        b_regs = [f"b{p}" for p in range(self.registers)]
        c_count = 2 * inst.row_halves
        args = ", ".join(f"const {'uint' if self.dt.half else 'real'} {x}" for x in a_regs + b_regs)
        bits = "as_uint" if operand.register == "r" and not self.dt.half else ""   # 32-bit floats go in as their bits
        columns = "pairs of columns 2 (t + 4 p) and 2 (t + 4 p) + 1" if self.dt.half else "columns t + 4 p"
        w(f"// c += a b on one {inst.m} x {inst.n} x {inst.k} tile; lane (g, t) = (lane / 4, lane % 4) holds A at rows",
          f"// g + 8 h, {columns} (register h + (MMA_M / 8) p), B at the same rows of column g, C at rows",
          "// g + 8 h, columns 2 t and 2 t + 1 (registers 2 h and 2 h + 1)")
        if self.p.mma == "ptx":
            w.open(f"inline void mma(real* c, {args})")
            c_list = ", ".join(f"%{i}" for i in range(c_count))
            a_list = ", ".join(f"%{c_count + i}" for i in range(len(a_regs)))
            b_list = ", ".join(f"%{c_count + len(a_regs) + i}" for i in range(len(b_regs)))
            outputs = ", ".join(f'"+{operand.accumulator_register}"(c[{i}])' for i in range(c_count))
            inputs = ", ".join(f'"{operand.register}"({bits}({x}))' for x in a_regs + b_regs)
            w(f'asm("mma.sync.aligned.{inst.name}.row.col.{operand.ptx_types} {{{c_list}}}, {{{a_list}}}, {{{b_list}}}, {{{c_list}}};"',
              f"    : {outputs}", f"    : {inputs});")
            w.close()
        else:
            w.open(f"inline void mma(real* c, {args}, __local real* scratch, const int lane)")
            w("__local real* a = scratch;                 // MMA_M x MMA_K",
              "__local real* b = scratch + MMA_M * MMA_K;  // MMA_K x MMA_N",
              "const int g = lane >> 2, t = lane & 3;")
            pack = operand.pack
            for r, reg in enumerate(a_regs):
                h, p = r % inst.row_halves, r // inst.row_halves
                for e in range(pack):
                    w(f"a[(g + {8 * h}) * MMA_K + {pack} * (t + {4 * p}) + {e}] = {self.unpacked(reg, e)};")
            for p, reg in enumerate(b_regs):
                for e in range(pack):
                    w(f"b[({pack} * (t + {4 * p}) + {e}) * MMA_N + g] = {self.unpacked(reg, e)};")
            w("barrier(CLK_LOCAL_MEM_FENCE);")
            for i in range(c_count):
                h, j = i // 2, i % 2
                w(f"for (int k = 0; k < MMA_K; ++k) c[{i}] = fma(a[(g + {8 * h}) * MMA_K + k], "
                  f"b[k * MMA_N + 2 * t + {j}], c[{i}]);")
            w("barrier(CLK_LOCAL_MEM_FENCE);")
            w.close()
        w("")

    def unpacked(self, register: str, e: int) -> str:
        """Value ``e`` of a register: the register itself, or one of the two 16-bit values it packs."""
        if self.operand.pack == 1:
            return register
        return f"to_real((ushort)({register} >> {16 * e}))"

    # ----- staging -------------------------------------------------------------------------------
    def operand_vector(self, n: int) -> tuple[str, str]:
        """(load helper, type) of ``n`` consecutive operand values fetched from global memory: their bits
        for 16-bit operands, else elements; records the width for the helpers."""
        if self.dt.half:
            self.stored_widths.add(n)
            return f"load_stored_{n}", self.stored_type(n)
        self.widths.add(n)
        return f"load_{n}", self.vtype(n)

    def staging_width(self) -> int:
        """Elements of one staging vector: ``vector_width``, or, for asynchronous copies of rows that
        start at 16-byte boundaries (``aligned``), at least the 16 bytes of one copy."""
        return max(self.p.vector_width, self.copy_unit()) if self.p.copy == "async" else self.p.vector_width

    def staging_geometry(self, op: str) -> tuple[int, int]:
        """(vectors of a K block, vectors per work-item) of operand ``op``."""
        outer = self.p.block_rows if op == "A" else self.p.block_cols
        count = outer * self.p.tile_k // self.staging_width()
        return count, ceil_div(count, self.threads)

    def staging_position(self, op: str, idx: str) -> tuple[str, str]:
        """C expressions (outer, k) of the first element of staging vector ``idx`` in the K block."""
        vw = self.staging_width()
        outer = "BLOCK_ROWS" if op == "A" else "BLOCK_COLS"
        if self.k_contiguous(op):
            return f"({idx}) / (TILE_K / {vw})", f"({idx}) % (TILE_K / {vw}) * {vw}"
        return f"({idx}) % ({outer} / {vw}) * {vw}", f"({idx}) / ({outer} / {vw})"

    def staging_loop(self, op: str, body: list[str]) -> None:
        """Loop over this work-item's staging vectors of ``op`` (idx, o, kk defined), writing ``body``."""
        count, per_item = self.staging_geometry(op)
        w = self.out
        self.unrolled("s", str(per_item))
        w("const int idx = tid + s * THREADS;")
        if count % self.threads:
            w(f"if (idx >= {count}) break;")
        o, kk = self.staging_position(op, "idx")
        w(f"const int o = {o}, kk = {kk};")
        w(*body)
        w.close()

    def fetch(self, op: str, k0: str) -> None:
        """Read operand ``op``'s K block at ``k0`` from global memory into ``{op}_next``."""
        load, _ = self.operand_vector(self.p.vector_width)
        ptr, ld, extent, block = self.operand_names(op)
        if self.k_contiguous(op):
            read = f"{load}({ptr}, {ld}, {extent}, K, {block} + o, {k0} + kk)"
        else:
            read = f"{load}({ptr}, {ld}, K, {extent}, {k0} + kk, {block} + o)"
        self.staging_loop(op, [f"{op.lower()}_next[s] = {read};"])

    def stash(self, op: str, stage: str) -> None:
        """Write ``{op}_next`` into local stage ``stage``, one real (or imaginary) part per array: a vector
        store per part where the vector's k are consecutive (they lie in one chunk), else element by element."""
        vw, dt = self.p.vector_width, self.dt
        source = f"{op.lower()}_next[s]"
        lines = []
        for part in self.parts:
            local = f"{self.local_name(op, part)} + ({stage}) * {op}_STAGE"
            values = [f"{self.component(source, e, vw)}.{'x' if part == 're' else 'y'}" if dt.is_complex
                      else self.component(source, e, vw) for e in range(vw)]
            if self.k_contiguous(op) and vw > 1:
                vector = f"{dt.stored_cl}{vw}"
                value = f"({vector})({', '.join(values)})" if dt.is_complex else source
                lines.append(f"*(__local {vector}*)({local} + AT(o, kk)) = {value};")
            else:
                lines += [f"({local})[AT(o + {e}, kk)] = {value};" for e, value in enumerate(values)]
        self.staging_loop(op, lines)

    # ----- the product -------------------------------------------------------------------------
    def pieces(self) -> tuple[str, ...]:
        """Name suffixes of the fragment sets each read becomes: the read itself, or (3xTF32) its TF32
        high part and remainder."""
        return ("_hi", "_lo") if self.dt.operand_splits == 2 else ("",)

    def fragment_set(self, target: str, value: str) -> None:
        """Set fragment ``target`` (indexed, without the piece suffix) to ``value``, rounded to TF32 or
        split into TF32 parts where the instruction takes TF32."""
        w = self.out
        name, index = target.split("[", 1)
        if self.operand.name != "tf32":
            w(f"{target} = {value};")
        elif self.dt.operand_splits == 1:
            w(f"{target} = TF32({value});")
        else:
            w("{", f"    const lane_read x = {value};",
              f"    const lane_bits magnitude = as_uint{self.lane_k}(x) & 0x7fffffffu;",
              f"    {name}_hi[{index} = TF32_HIGH(x, magnitude);",
              f"    {name}_lo[{index} = TF32(x - {name}_hi[{index});",
              "    seen_least = min(seen_least, magnitude - 1u);     // (zero wraps to the largest: not seen)",
              "    seen_most = max(seen_most, magnitude);",
              "}")

    def fragment_value(self, target: str) -> str:
        """The value fragment ``target`` holds (its pieces summed)."""
        name, index = target.split("[", 1)
        return " + ".join(f"{name}{piece}[{index}" for piece in self.pieces())

    def fragment_reads(self, op: str, index: str, row: str, chunk: int) -> None:
        """Read operand ``op``'s fragments ``[index]`` of each part at row ``row`` of the staged block,
        chunk ``chunk``, and with the 3M method the sum of the two parts."""
        letter = op.lower()
        first = self.first_piece(chunk)
        if not staged_by_k(self.p, op):         # (a real: one part) a column of the stage's rows of k
            stage = f"{self.local_name(op, '')} + stage * {op}_STAGE"
            values = ", ".join(f"({stage})[{op}_AT({chunk} * CHUNK + t * LANE_K + {e}, {row})]" for e in range(self.lane_k))
            self.fragment_set(f"{letter}_frag{index}", f"(lane_read)({values})")
            return
        for part in self.parts:
            suffix = f"_{part}" if part else ""
            row_start = f"{self.local_name(op, part)} + stage * {op}_STAGE + ({row}) * TILE_K"
            places = [f"({first} ^ lane_chunk{f' ^ {q}' if q else ''}) * CHUNK_ELEMS + lane_in_chunk"
                      for q in range(self.read_pieces)]
            if self.read_pieces == 1:
                value = f"*(const __local lane_read*)({row_start} + {places[0]})"
            else:
                value = "(lane_read)(" + ", ".join(f"*(const __local lane_piece*)({row_start} + {place})"
                                                   for place in places) + ")"
            self.fragment_set(f"{letter}_frag{suffix}{index}", value)
        if self.three_m:
            self.fragment_set(f"{letter}_frag_sum{index}", f"({self.fragment_value(f'{letter}_frag_re{index}')}) + "
                                                          f"({self.fragment_value(f'{letter}_frag_im{index}')})")

    @property
    def three_m(self) -> bool:
        return self.dt.is_complex and self.p.complex_method == "3m"

    def terms(self) -> list[tuple[str, str, str, str]]:
        """(accumulator, part of A, part of B, sign) of each real product of the product of tiles."""
        if not self.dt.is_complex:
            return [("acc", "", "", "")]
        if self.three_m:       # re = rr - ii, im = ss - rr - ii
            return [("acc_rr", "_re", "_re", ""), ("acc_ii", "_im", "_im", ""), ("acc_ss", "_sum", "_sum", "")]
        # re += a_re b_re - a_im b_im, im += a_re b_im + a_im b_re
        return [("acc_re", "_re", "_re", ""), ("acc_re", "_im", "_im", "-"),
                ("acc_im", "_re", "_im", ""), ("acc_im", "_im", "_re", "")]

    def accumulators(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(acc for acc, *_ in self.terms()))

    def fragment_sets(self) -> None:
        """Declare the fragment registers: per part (and TF32 piece), ``fragment_sets`` sets of one chunk."""
        w = self.out
        if self.matrices:
            w(f"a_read a_frag[{self.p.fragment_sets}][TILES_M];", f"b_read b_frag[{self.p.fragment_sets}][TILES_N];")
            return
        for part in self.parts + (("sum",) if self.three_m else ()):
            for piece in self.pieces():
                suffix = (f"_{part}" if part else "") + piece
                w(f"lane_read a_frag{suffix}[{self.p.fragment_sets}][TILES_M][MMA_M / 8], "
                  f"b_frag{suffix}[{self.p.fragment_sets}][TILES_N];")

    def read_chunk(self, chunk: int, into: int) -> None:
        """Read the fragments of chunk ``chunk`` of the block in ``stage`` into fragment set ``into``."""
        w = self.out
        if self.matrices:
            self.matrix_reads(chunk, into)
            return
        self.unrolled("i", "TILES_M")
        self.unrolled("h", "MMA_M / 8")
        self.fragment_reads("A", f"[{into}][i][h]", "warp_row + i * MMA_M + 8 * h + g", chunk)
        w.close()
        w.close()
        self.unrolled("j", "TILES_N")
        self.fragment_reads("B", f"[{into}][j]", "warp_col + j * MMA_N + g", chunk)
        w.close()

    def matrix_reads(self, chunk: int, into: int) -> None:
        """Read chunk ``chunk`` (16 k: two 16-byte chunks of each row) as 8 x 8 matrices. Register m of an
        A fragment is matrix m: rows 8 (m % 2) .. + 7 of the tile at k chunk m / 2, so registers 0..3 are
        the instruction's a0..a3; a B fragment's registers are its two k chunks. With ldmatrix, lane l
        addresses row l % 8 of matrix l / 8; emulated, each lane reads its own two values of each."""
        w, first = self.out, self.first_piece(chunk)
        a_start = "a_local + stage * A_STAGE + (warp_row + i * MMA_M"
        b_start = "b_local + stage * B_STAGE + (warp_col + j * MMA_N"
        self.unrolled("i", "TILES_M")
        if self.p.mma == "ptx":
            w(f"a_frag[{into}][i] = load_matrices_x4({a_start} + a_row) * TILE_K + ({first} ^ a_chunk) * CHUNK_ELEMS);")
        else:
            words = [self.word(f"warp_row + i * MMA_M + g + {8 * (m % 2)}", "a", first + m // 2) for m in range(4)]
            w(f"a_frag[{into}][i] = (a_read)({', '.join(words)});")
        w.close()
        if self.p.mma == "ptx":
            pairs, single = divmod(self.p.tiles_n, 2)
            if pairs:
                w("#pragma unroll")
                w.open("for (int j = 0; j < TILES_N - 1; j += 2)")
                w(f"const uint4 pair = load_matrices_x4({b_start} + b_row) * TILE_K + ({first} ^ b_chunk) * CHUNK_ELEMS);",
                  f"b_frag[{into}][j] = pair.s01;", f"b_frag[{into}][j + 1] = pair.s23;")
                w.close()
            if single:
                w("{", "    const int j = TILES_N - 1;",
                  f"    b_frag[{into}][j] = load_matrices_x2({b_start} + b_row) * TILE_K + ({first} ^ b_chunk) * CHUNK_ELEMS);",
                  "}")
        else:
            self.unrolled("j", "TILES_N")
            words = [self.word("warp_col + j * MMA_N + g", "b", first + m) for m in range(2)]
            w(f"b_frag[{into}][j] = (b_read)({', '.join(words)});")
            w.close()

    @staticmethod
    def word(row: str, op: str, chunk: int) -> str:
        """The two 16-bit values lane (g, t) takes from row ``row``, 16-byte chunk ``chunk`` of a matrix."""
        return f"*(const __local uint*)({op}_local + stage * {op.upper()}_STAGE + AT({row}, {chunk} * CHUNK_ELEMS + 2 * t))"

    def first_piece(self, chunk: int) -> int:
        """The 16-byte chunk of a staged row where chunk ``chunk`` (CHUNK k) of the K block starts."""
        return chunk * 4 * self.lane_k * self.dt.real_bytes // CHUNK_BYTES

    def matrix_functions(self) -> None:
        """``load_matrices_x4`` and ``_x2``: ldmatrix, for the lanes' row addresses."""
        w = self.out
        w("// 8 x 8 matrices of 16-bit values from local memory: lane l gives the address of row l % 8 of matrix",
          "// l / 8; register m of lane (g, t) receives values 2 t and 2 t + 1 of row g of matrix m")
        for count in (4, 2):
            registers = ", ".join(f"%{r}" for r in range(count))
            outputs = ", ".join(f'"=r"(r{r})' for r in range(count))
            w.open(f"inline uint{count} load_matrices_x{count}(const __local stored* row)")
            w(f"uint {', '.join(f'r{r}' for r in range(count))};",
              f'asm volatile("ldmatrix.sync.aligned.m8n8.x{count}.shared.b16 {{{registers}}}, [%{count}];"',
              f'    : {outputs} : "r"((uint)(ulong)row));',
              f"return (uint{count})({', '.join(f'r{r}' for r in range(count))});")
            w.close()
        w("")

    def multiply(self, fragments: int) -> None:
        """Multiply fragment set ``fragments`` (one chunk) into the accumulators."""
        p, inst, w = self.p, self.shape, self.out
        terms = self.terms()
        # 3xTF32: the two small cross products first, then the large one
        products = [("_lo", "_hi"), ("_hi", "_lo"), ("_hi", "_hi")] if self.dt.operand_splits == 2 else [("", "")]
        extra = ", scratch + warp * SCRATCH, lane" if p.mma == "local" else ""

        regs = self.registers

        def call(acc: str, step: int, a_name: str, b_name: str, sign: str) -> str:
            a_count = inst.row_halves * regs
            if self.matrices:      # registers in the instruction's order already
                a_args = [f"{a_name}[i].s{hex_digit(step * a_count + r)}" for r in range(a_count)]
            else:
                a_args = [f"{sign}{a_name}[i][{r % inst.row_halves}].s{hex_digit(step * regs + r // inst.row_halves)}"
                          for r in range(a_count)]
            b_args = [f"{b_name}[j].s{hex_digit(step * regs + q)}" for q in range(regs)]
            return f"mma({acc}, {', '.join(a_args + b_args)}{extra});"

        if self.dt.operand_splits == 1:
            for step in range(self.steps):
                w(f"// instruction {step + 1} of {self.steps} on this chunk: components {step * regs}.."
                  f"{(step + 1) * regs - 1} of each lane's reads")
                for acc, a_part, b_part, sign in terms:
                    self.unrolled("i", "TILES_M")
                    self.unrolled("j", "TILES_N")
                    w(call(f"{acc}[i][j]", step, f"a_frag{a_part}[{fragments}]", f"b_frag{b_part}[{fragments}]", sign))
                    w.close()
                    w.close()
        else:
            w("// the tensor cores add in FP32 rounding toward zero, an error that grows with K: each tile's",
              "// products of this chunk are summed there, and the chunk's sum added here, rounding to nearest")
            self.unrolled("i", "TILES_M")
            self.unrolled("j", "TILES_N")
            sums = self.accumulators()
            w(" ".join(f"real {acc}_chunk[2 * MMA_M / 8] = {{0}};" for acc in sums))
            for step in range(self.steps):
                for acc, a_part, b_part, sign in terms:
                    for a_piece, b_piece in products:
                        w(call(f"{acc}_chunk", step, f"a_frag{a_part}{a_piece}[{fragments}]",
                               f"b_frag{b_part}{b_piece}[{fragments}]", sign))
            self.unrolled("r", "2 * MMA_M / 8", " ".join(f"{acc}[i][j][r] += {acc}_chunk[r];" for acc in sums))
            w.close()
            w.close()

    def each_accumulator(self, body) -> None:
        """The loops over the work-item's elements of C, ``body(acc, at)`` in them (``acc``: the element,
        ``at``: its place in the block, row-major); ``ElementCode.slice_sums`` writes through it. A
        complex element is held in a variable of its own while the body runs, then put back into its
        accumulators (with the 3M method as rr, ii = 0 and ss, whose re and im are the element's)."""
        w = self.out
        self.unrolled("i", "TILES_M")
        self.unrolled("j", "TILES_N")
        self.unrolled("h", "MMA_M / 8")
        self.unrolled("c", "2")
        w("const int r = 2 * h + c;",
          "const int at = (warp_row + i * MMA_M + 8 * h + g) * BLOCK_COLS + warp_col + j * MMA_N + 2 * t + c;")
        if not self.dt.is_complex:
            w(*body("acc[i][j][r]", "at"))
        elif self.three_m:
            w("elem v = (elem)(acc_rr[i][j][r] - acc_ii[i][j][r], acc_ss[i][j][r] - acc_rr[i][j][r] - acc_ii[i][j][r]);",
              *body("v", "at"),
              "// (put back as rr - ii and ss - rr - ii: the imaginary part rounded once more)",
              "acc_rr[i][j][r] = v.x;",
              "acc_ii[i][j][r] = 0;",
              "acc_ss[i][j][r] = v.x + v.y;")
        else:
            w("elem v = (elem)(acc_re[i][j][r], acc_im[i][j][r]);", *body("v", "at"),
              "acc_re[i][j][r] = v.x;", "acc_im[i][j][r] = v.y;")
        for _ in range(4):
            w.close()

    def float32_redo(self) -> None:
        """3xTF32 cannot split an infinite value (its remainder, inf - inf, would make NaN where a float32
        product is infinite), NaN, nor a nonzero value below 2^-115: where a work-item's splits met one
        (``seen_least``, ``seen_most``; then ``unsplit``), the block is computed again in float32, a dot
        product per element over the block's K, so that it propagates inf and NaN as float32 does (the
        CUDA path runs such products on its float32 kernel, ``codelets.float32_product``)."""
        w = self.out
        complex_ = self.dt.is_complex
        step = ("sum += (elem)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);" if complex_
                else "sum = fma(a, b, sum);")
        w("// FLOAT32_REDO: an operand value 3xTF32 cannot split (inf, NaN, nonzero below 2^-115): this",
          "// block in float32 instead, as a float32 product propagates them",
          "if (any(seen_least < SPLIT_SMALLEST_BITS - 1u) | any(seen_most > FLOAT_LARGEST_BITS)) unsplit = 1;",
          "barrier(CLK_LOCAL_MEM_FENCE);",
          "const int redo = unsplit;",
          "barrier(CLK_LOCAL_MEM_FENCE);             // (read by every work-item before a next unit resets it)")
        w.open("if (redo)")
        self.each_accumulator(lambda acc, at: [
            "{",
            f"    const int row = block_row + {at} / BLOCK_COLS, col = block_col + {at} % BLOCK_COLS;",
            "    elem sum = (elem)(0);",
            "    for (int k = 0; k < K; ++k) {",
            f"        const elem a = {self.element('A', self.p.layout, 'row', 'k')}, "
            f"b = {self.element('B', self.p.layout, 'col', 'k')};",
            f"        {step}",
            "    }",
            f"    {acc} = sum;",
            "}"])
        w.close()

    def epilogue(self) -> None:
        dt, w = self.dt, self.out
        sw = self.vw
        vec = self.vtype(sw)
        self.widths.add(sw)
        if self.summed:
            self.slice_sums(self.each_accumulator, width=1)
        w("// C = alpha * acc + beta * C; with beta == 0, C is not read",
          f"const bool beta_zero = {self.beta_is_zero()};")
        self.unrolled("i", "TILES_M")
        self.unrolled("j", "TILES_N")
        self.unrolled("h", "MMA_M / 8")
        w("const int row = block_row + warp_row + i * MMA_M + 8 * h + g;")
        for first in range(0, 2, sw):
            cols = [f"2 * h + {first + e}" for e in range(sw)]
            if self.three_m:
                parts = ", ".join(f"acc_rr[i][j][{c}] - acc_ii[i][j][{c}], "
                                  f"acc_ss[i][j][{c}] - acc_rr[i][j][{c}] - acc_ii[i][j][{c}]" for c in cols)
            elif dt.is_complex:
                parts = ", ".join(f"acc_re[i][j][{c}], acc_im[i][j][{c}]" for c in cols)
            else:
                parts = ", ".join(f"acc[i][j][{c}]" for c in cols)
            w("{",
              f"    const int col = block_col + warp_col + j * MMA_N + 2 * t + {first};",
              f"    {vec} value = {self.scaled('alpha', vec, f'({vec})({parts})')};",
              f"    if (!beta_zero) value = {self.scaled('beta', vec, f'{self.c_load(sw)}(C, ldc, M, N, row, col)', 'value')};",
              f"    store_{sw}(C, ldc, M, N, row, col, value);",
              "}")
        w.close()
        w.close()
        w.close()

    def body(self) -> None:
        p, w = self.p, self.out
        w("const int lane = get_local_id(0) & 31;",
          "const int warp_n = get_local_id(0) >> 5, warp_m = get_local_id(1);",
          "const int warp = warp_m * WARPS_N + warp_n;",
          "const int tid = get_local_id(1) * get_local_size(0) + get_local_id(0);",
          "const int g = lane >> 2, t = lane & 3;       // the lane's group of four, and place in it")
        self.layer_offsets("ABC")
        w(f"const int block_row = {self.tile_index(1)} * BLOCK_ROWS, block_col = {self.tile_index(0)} * BLOCK_COLS;",
          "const int warp_row = warp_m * TILES_M * MMA_M, warp_col = warp_n * TILES_N * MMA_N;",
          "")
        for part in self.parts:
            self.local_memory(f"__local stored {self.local_name('A', part)}[STAGES * A_STAGE] __attribute__((aligned(16)));",
                              f"__local stored {self.local_name('B', part)}[STAGES * B_STAGE] __attribute__((aligned(16)));")
        if p.mma == "local":
            self.local_memory("__local real scratch[WARPS_M * WARPS_N * SCRATCH];   // the emulated instruction's exchange")
        if self.splits:
            self.local_memory("__local int unsplit;          // an operand value of the block 3xTF32 cannot split")
            w("if (tid == 0) unsplit = 0;      // (ordered before FLOAT32_REDO sets it by the main loop's barriers)",
              "// the least magnitude less one and the largest magnitude the work-item's splits met, as bits",
              "lane_bits seen_least = (lane_bits)(0xffffffffu), seen_most = (lane_bits)(0);")
        accs = self.accumulators()
        for acc in accs:
            w(f"real {acc}[TILES_M][TILES_N][2 * MMA_M / 8];")
        self.unrolled("i", "TILES_M")
        self.unrolled("j", "TILES_N")
        self.unrolled("r", "2 * MMA_M / 8", " ".join(f"{acc}[i][j][r] = 0;" for acc in accs))
        w.close()
        w.close()
        self.main_loop()
        w("")
        if self.splits:
            self.float32_redo()
        self.epilogue()

    def main_loop(self) -> None:
        """The loop over K blocks: each block's chunks multiplied from fragments read out of local memory
        (with two fragment sets, each chunk's read while the one before multiplies, and the next block's
        first while this block's last multiplies), and the next blocks staged meanwhile."""
        p, w = self.p, self.out
        chunks, sets = p.chunks(self.dt), p.fragment_sets
        if not self.matrices:
            if staged_by_k(p, "A") or staged_by_k(p, "B"):
                w("const int lane_chunk = (t * LANE_K / CHUNK_ELEMS) ^ SWIZZLE(g);   // the chunk a lane's reads start in,",
                  "const int lane_in_chunk = t * LANE_K % CHUNK_ELEMS;                // ... XOR the chunk's place in the block")
        elif p.mma == "ptx":
            w("// the row this lane addresses for ldmatrix (of the 16 of an A tile, of two B tiles), and which",
              "// 16-byte chunk of a chunk of 16 k, XOR the row's swizzle (the rows are lane % 8 modulo 8)",
              "const int a_row = lane % 16, a_chunk = (lane / 16) ^ SWIZZLE(lane % 8);",
              "const int b_row = lane / 16 * 8 + lane % 8, b_chunk = (lane / 8 % 2) ^ SWIZZLE(lane % 8);")
        self.fragment_sets()
        if p.copy == "async":
            self.async_prologue()
        else:
            self.register_prologue()
        if sets == 2:
            self.read_chunk(0, 0)
        w.open("for (int k0 = 0; k0 < K; k0 += TILE_K)")
        w("const bool more = k0 + TILE_K < K;")
        if p.copy == "registers":
            w.open("if (more)")
            self.fetch("A", "k0 + TILE_K")
            self.fetch("B", "k0 + TILE_K")
            w.close()
        width = 4 * self.lane_k
        for chunk in range(chunks):
            w(f"// chunk {chunk + 1} of {chunks} (k {chunk * width}..{(chunk + 1) * width - 1} of the block)"
              + ("" if sets == 1 else " multiplies while the next chunk's fragments are read"))
            if sets == 1:
                self.read_chunk(chunk, 0)
            elif chunk + 1 < chunks:
                self.read_chunk(chunk + 1, (chunk + 1) % 2)
            else:
                self.advance()
                w.open("if (more)")
                self.read_chunk(0, 0)
                w.close()
            self.multiply(chunk % sets)
        if sets == 1:
            self.advance()
        w.close()

    def register_prologue(self) -> None:
        """Stage the first K block through this work-item's registers."""
        p, w = self.p, self.out
        for op in ("A", "B"):
            w(f"{self.operand_vector(p.vector_width)[1]} {op.lower()}_next[{self.staging_geometry(op)[1]}];"
              "   // this work-item's share of the next K block")
        self.fetch("A", "0")
        self.fetch("B", "0")
        self.stash("A", "0")
        self.stash("B", "0")
        w("barrier(CLK_LOCAL_MEM_FENCE);", "int stage = 0;")

    def async_prologue(self) -> None:
        """Start the copies of the first STAGES K blocks, and wait for the first."""
        p, w = self.p, self.out
        for s in range(p.stages):
            w.open(f"if ({s} * TILE_K < K)")
            self.issue("A", f"{s} * TILE_K", str(s))
            self.issue("B", f"{s} * TILE_K", str(s))
            w.close()
            w("copy_commit();")
        w(f"copy_wait({p.stages - 1});                                // this work-item's copies of block 0 are in",
          "barrier(CLK_LOCAL_MEM_FENCE);                 // everyone's are", "int stage = 0;")

    def advance(self) -> None:
        """Once every warp holds the fragments of this block's last chunk: make the next block the one
        in ``stage``, and refill this one's stage."""
        p, w = self.p, self.out
        if p.copy == "async":
            w(f"copy_wait({p.stages - 2});                            // this work-item's copies of the next block are in",
              "barrier(CLK_LOCAL_MEM_FENCE);             // everyone's are, and every warp is done with this block")
            w.open("if (k0 + STAGES * TILE_K < K)")
            self.issue("A", "k0 + STAGES * TILE_K", "stage")
            self.issue("B", "k0 + STAGES * TILE_K", "stage")
            w.close()
            w("copy_commit();", "stage = (stage + 1) % STAGES;")
            return
        next_stage = "stage ^ 1" if p.stages == 2 else "0"
        if p.stages == 1:
            w("barrier(CLK_LOCAL_MEM_FENCE);             // every warp is done with the only stage")
        w.open("if (more)")
        self.stash("A", next_stage)
        self.stash("B", next_stage)
        w.close()
        w("barrier(CLK_LOCAL_MEM_FENCE);")
        if p.stages == 2:
            w("stage ^= 1;")

    def edges(self) -> str:
        edges = "guarded (any M, N, K; loads outside read zero)" if self.guarded else "whole blocks only, aligned vectors"
        return edges + (f"; rows of A and B start at {ALIGNED_BYTES}-byte boundaries" if self.aligned else "")

    def copy_unit(self) -> int:
        """Elements per asynchronous copy: 16 bytes where the rows of A and B start at 16-byte
        boundaries (``aligned``: a copy at an edge of a guarded kernel then takes the elements inside and
        zeros for the rest); else, in an unguarded kernel, a whole vector up to 16 bytes (its rows start
        at multiples of the vector width), in a guarded one a single element."""
        if self.aligned:
            return ALIGNED_BYTES // self.dt.itemsize
        return 1 if self.guarded else min(self.p.vector_width, ALIGNED_BYTES // self.dt.itemsize)

    def copy_functions(self) -> None:
        """``copy_async`` (the first ``count`` of COPY elements from global to local memory, the rest zero),
        ``copy_commit`` and ``copy_wait``: cp.async in PTX, or plain copies where the instruction is emulated
        or the copies are narrower than cp.async's 4 bytes (one 16-bit element: guarded kernels)."""
        w, unit = self.out, self.copy_unit()
        size = unit * self.dt.itemsize
        hardware = self.p.mma == "ptx" and size >= 4
        w(f"#define COPY {unit}   // elements per asynchronous copy")
        w.open("inline void copy_async(__local stored* dst, const __global stored* src, const int count)")
        if hardware:
            # .ca: cached in L1 too, where the work-groups of a multiprocessor share operand rows, so their
            # 16-byte copies are served by L1 where .cg goes to L2 (docs/guide/kernels.md)
            w(f'asm volatile("cp.async.ca.shared.global [%0], [%1], {size}, %2;"',
              f'    :: "r"((uint)(ulong)dst), "l"(src), "r"(count * {self.dt.itemsize}) : "memory");')
        else:
            w("for (int e = 0; e < COPY; ++e) dst[e] = e < count ? src[e] : (stored)0;")
        w.close()
        if hardware:
            w('#define copy_commit() asm volatile("cp.async.commit_group;" ::: "memory")',
              '#define copy_wait(pending) asm volatile("cp.async.wait_group " #pending ";" ::: "memory")'
              "   // all but the last `pending` groups are in")
        else:
            w("#define copy_commit()", "#define copy_wait(pending)")
        w("")

    def issue(self, op: str, k0: str, stage: str) -> None:
        """Start the copies of operand ``op``'s K block at ``k0`` into local stage ``stage``: along the
        lines of memory it is stored in (rows of its M or N, or rows of k where ``staged_by_k`` is false),
        guarded where the line or its end lies outside the matrix."""
        unit = self.copy_unit()
        ptr, ld, extent, block = self.operand_names(op)
        by_k = staged_by_k(self.p, op)
        lines = [f"const int r = {block} + o;"]
        for e in range(0, self.staging_width(), unit):
            if by_k:
                line, along, lines_end, along_end, place = "r", f"{k0} + kk + {e}", extent, "K", f"AT(o, kk + {e})"
            else:
                line, along, lines_end, along_end, place = f"{k0} + kk", f"r + {e}", "K", extent, f"{op}_AT(kk, o + {e})"
            if self.guarded:
                lines.append(f"const int count{e} = {line} < {lines_end} ? clamp({along_end} - ({along}), 0, COPY) : 0;")
                source = f"count{e} ? {ptr} + ({line}) * {ld} + {along} : {ptr}"
            else:
                lines.append(f"const int count{e} = COPY;")
                source = f"{ptr} + ({line}) * {ld} + {along}"
            lines.append(f"copy_async({self.local_name(op, '')} + ({stage}) * {op}_STAGE + {place}, {source}, count{e});")
        self.staging_loop(op, lines)

    def generate(self) -> str:
        functions = ([self.instruction_function] + ([self.copy_functions] if self.p.copy == "async" else [])
                     + ([self.matrix_functions] if self.matrices and self.p.mma == "ptx" else [])
                     + [self.stream_functions])
        return self.buffer_kernel_source(KERNEL_NAME, "__attribute__((reqd_work_group_size(32 * WARPS_N, WARPS_M, 1)))",
                                         functions)


@lru_cache(maxsize=256)
def render(params: MmaParams, dtype: Dtype | str, guarded: bool = True, stream: bool = False,
           summed: bool = False, sliced: bool = False, aligned: bool = False, stored_c: bool = False
           ) -> KernelSource:
    """The OpenCL source of ``params`` for ``dtype``; ``guarded`` selects any-size edges, ``stream`` the
    stream-K schedule, ``summed`` K slices added up in the kernel, ``sliced`` K slices read in place,
    each into its layer of C (neither under stream-K); ``aligned`` that A's and B's rows start at
    ``ALIGNED_BYTES`` boundaries (asynchronous copies then take that many bytes at once); ``stored_c``
    that a 16-bit problem's C is written in its 16 bits."""
    dt = get_dtype(dtype)
    problem = params.malformed()
    if problem:
        raise ConfigError(problem)
    problem = params.dtype_problem(dt)
    if problem:
        raise ConfigError(problem)
    if stored_c:
        refuse_stored_c(dt, stream)
    generator = _Generator(params, dt, guarded, stream, summed, sliced, aligned, stored_c)
    return KernelSource(name=KERNEL_NAME, source=generator.generate(),
                        options=params.build_options, local_size=(WARP * params.warps_n, params.warps_m),
                        block=(params.block_rows, params.block_cols, params.tile_k))
