"""Writing generated OpenCL C: indented lines, and the element-level code every GEMM family shares
(vector types of the element, multiply-add, loads and stores of consecutive elements with or without
edge guards)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..dtypes import Dtype
from ..errors import ConfigError
from ..runtime.opencl.device import Device
from .kernel import KernelSource
from .stream_k import OWNER_FUNCTION


def hex_digit(i: int) -> str:
    return "0123456789abcdef"[i]


#: What an NVIDIA device builds the kernels that add their slices up with (``device_fence``).
NVIDIA_FENCE_OPTIONS = ("-DPTX_FENCE",)


def fence_options(device: Device) -> tuple[str, ...]:
    """The build options of a kernel that adds its slices up (``last_to_arrive``) on ``device``."""
    return NVIDIA_FENCE_OPTIONS if device.is_nvidia else ()


def last_to_arrive(first: str, tile: str) -> list[str]:
    """The lines with which a work-group that wrote its slice's partial sums of ``tile`` counts its arrival
    there (``arrivals``, its ``first`` work-item, into the ``__local int arrived``) and returns unless it
    is the last of the ``slices``; the last one goes on to read every slice's sums, ordered after the
    others' writes. It resets the count after (``if (first) arrivals[tile] = 0;``), for the next launch."""
    return [*device_fence("the sums are in memory before the count of arrivals"),
            "barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);",
            f"if ({first}) arrived = atomic_inc(&arrivals[{tile}]);",
            "barrier(CLK_LOCAL_MEM_FENCE);",
            "if (arrived != slices - 1) return;",
            *device_fence("and the other slices' sums are read after it")]


def device_fence(why: str) -> list[str]:
    """The lines of a fence that orders this work-item's memory operations for the whole device: OpenCL's
    ``mem_fence``, or where the build defines ``PTX_FENCE`` (``NVIDIA_FENCE_OPTIONS``: NVIDIA's, whose
    ``mem_fence`` orders them for the work-group alone) PTX's ``membar.gl``."""
    return [f"// {why}", "#ifdef PTX_FENCE", 'asm volatile("membar.gl;" ::: "memory");', "#else",
            "mem_fence(CLK_GLOBAL_MEM_FENCE);", "#endif"]


#: The last kernel parameters of every GEMM family: element strides between the layers of dimension 2
#: (the K slices of a split product, or the products of a strided batch; under stream-K, A's and B's
#: strides are one K step's, and the partial sums' temporary follows).
LAYER_STRIDES = "    const int a_stride, const int b_stride, const int c_stride"


class SourceWriter:
    """Accumulates indented lines of C."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, *lines: str) -> None:
        for line in lines:
            self.lines.append(("    " * self.depth + line) if line else "")

    def open(self, line: str) -> None:
        """Open a block after ``line`` (a bare block for an empty one)."""
        self(f"{line} {{" if line else "{")
        self.depth += 1

    def close(self, suffix: str = "") -> None:
        self.depth -= 1
        self("}" + suffix)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def refuse_stored_c(dt: Dtype, stream: bool) -> None:
    """``ConfigError`` where a kernel asked to write C in 16 bits cannot: the problem's is not 16-bit, or
    under stream-K (whose shared tiles' partial sums, float32, go through C's pointer)."""
    if stream or not dt.half:
        raise ConfigError("C is written in 16 bits by a 16-bit problem's kernel, not under stream-K")


class ElementCode:
    """Code for ``dtype`` elements in vectors of ``vector_width`` (``elem`` and ``elemsN`` typedefs are the
    kernel's), with loads and stores guarded at the matrix edges when ``guarded``. Subclasses write
    kernels into ``self.out`` and record in ``self.widths`` the load widths they use.

    With ``stream`` the kernel runs the stream-K schedule (``codelets.stream_k``): the family's body, which
    computes one block of C over ``K`` from its ``tile_index``es and ``layer_offsets``, runs once per unit
    of work (a tile's K steps from ``unit_first``, ``k_step`` elements each), in a loop around it that
    declares, for that unit, the ``K``, ``alpha``, ``beta``, A, B, C and ``ldc`` the body reads.

    With ``sliced`` the layers of dimension 2 are the slices of a K split read where A and B lie
    (``depth`` elements of K each, the last one shorter): the signature names the whole K
    ``k_parameter`` and each work-group finds its slice's ``K``; each slice's product goes to its layer of
    C (a temporary that a merge adds up). With ``summed`` (which implies ``sliced``) they are added up
    inside the kernel instead: the family's epilogue calls ``slice_sums`` before it writes C (see there)."""

    def __init__(self, dtype: Dtype, vector_width: int, guarded: bool, stream: bool = False,
                 k_step: int = 1, summed: bool = False, sliced: bool = False) -> None:
        self.dt = dtype
        self.vw = vector_width
        self.rpe = dtype.reals_per_element
        if (summed or sliced) and stream:
            raise ConfigError("K slices are read in place by the kernel's tile-per-work-group form only")
        self.guarded = guarded
        self.stream = stream
        self.summed = summed
        self.sliced = sliced or summed
        self.k_step = k_step
        self.operand_scalar = "real"           # the scalar type of A's and B's buffers
        self.c_scalar = "real"                 # ... and of C's (``stores_16bit``)
        self.widths: set[int] = set()          # element counts of buffer loads used
        self.stored_widths: set[int] = set()   # ... of loads of 16-bit operand bits
        self.converted_widths: set[int] = set()   # ... of loads of 16-bit values as floats
        self.hoisted: list[str] = []           # local memory declared before the stream-K loop
        self.out = SourceWriter()

    def opening(self, family: str, params) -> None:
        """The source's first lines for a family whose kernel reads B as stored (K x N) and A as its
        ``params.layout`` says: what it computes, the configuration, how it reads A and B, its edges;
        and double precision's pragma where the dtype needs it."""
        a_read = "K x M (A transposed)" if params.layout[0] == "T" else "M x K"
        edges = "guarded (any M, N, K; loads outside read zero)" if self.guarded else "whole blocks only, aligned vectors"
        self.out(f"// autogemm {family} codelet ({self.dt.letter}gemm): C = alpha * op(A) * op(B) + beta * C, row-major",
                 f"// configuration: {params.describe()}",
                 f"// layout {params.layout}: A is read as {a_read}, B as K x N",
                 f"// edges: {edges}")
        if self.dt.needs_fp64:
            self.out("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")

    def element(self, name: str, layout: str, outer: str, k: str) -> str:
        """A C expression: operand ``name``'s element (guarded as the kernel is) at ``outer`` (A's row, B's
        column) and ``k``, A and B stored as ``layout`` says (A: N is M x K, T is K x M; B: N is K x N, T is
        N x K)."""
        self.widths.add(1)
        size = "M" if name == "A" else "N"
        k_rows = (layout[0 if name == "A" else 1] == "T") == (name == "A")
        if k_rows:
            return f"load_1({name}, ld{name.lower()}, K, {size}, {k}, {outer})"
        return f"load_1({name}, ld{name.lower()}, {size}, K, {outer}, {k})"

    # ----- small expression helpers -------------------------------------------------------------
    def vtype(self, n: int) -> str:
        return "elem" if n == 1 else f"elems{n}"

    @staticmethod
    def stored_type(n: int) -> str:
        """The type of ``n`` consecutive operand values as stored (the kernel's ``stored`` typedefs)."""
        return "stored" if n == 1 else f"stored{n}"

    def component(self, expr: str, e: int, n: int, rpe: int | None = None) -> str:
        """Element ``e`` of an ``n``-element vector expression (of ``rpe`` scalars per element, by
        default the dtype's)."""
        rpe = self.rpe if rpe is None else rpe
        if n == 1:
            return expr
        if rpe == 2:
            return f"{expr}.s{hex_digit(2 * e)}{hex_digit(2 * e + 1)}"
        return f"{expr}.s{hex_digit(e)}"

    @staticmethod
    def mul_add_define(mac: str) -> str:
        """The ``MUL_ADD(x, y, z)`` macro (x * y + z) in the form ``mac`` names."""
        form = {"fma": "fma(x, y, z)", "mad": "mad(x, y, z)", "mul_add": "((x) * (y) + (z))"}[mac]
        return f"#define MUL_ADD(x, y, z) {form}"

    def beta_is_zero(self) -> str:
        """A C expression: beta == 0 (both parts, for complex elements)."""
        return "beta.x == (real)0 && beta.y == (real)0" if self.dt.is_complex else "beta == (real)0"

    def scaled(self, scalar: str, vec: str, expr: str, onto: str | None = None) -> str:
        """A C expression: ``onto`` (by default zero) + ``scalar`` * ``expr``, vectors ``vec`` of elements.
        For complex elements a scalar of exactly 1 adds ``expr`` as it is: the product would make a zero
        part beside an infinite one NaN (inf * 0), which BLAS's and numpy's results do not."""
        product = f"mac({onto or f'({vec})(0)'}, {scalar}, {expr})"
        if not self.dt.is_complex:
            return product
        plain = expr if onto is None else f"{onto} + {expr}"
        return f"({scalar}.x == (real)1 && {scalar}.y == (real)0 ? {plain} : {product})"

    def mac_function(self) -> None:
        w = self.out
        vec = self.vtype(self.vw)
        w("// acc + a * b for a scalar element a and a vector of VW elements b")
        w.open(f"inline {vec} mac({vec} acc, elem a, {vec} b)")
        if not self.dt.is_complex:
            w(f"return MUL_ADD(({vec})(a), b, acc);")
        else:
            swap = "".join(f"{hex_digit(2 * e + 1)}{hex_digit(2 * e)}" for e in range(self.vw))
            flips = ", ".join(["flip"] * self.vw)
            w("const elem flip = (elem)(-a.y, a.y);",
              f"acc = MUL_ADD(({vec})(a.x), b, acc);                   // re(a) * (re, im)",
              f"return MUL_ADD(({vec})({flips}), b.s{swap}, acc);   // im(a) * (-im, re)")
        w.close()
        w("")

    def stores_16bit(self, storage: Dtype) -> None:
        """Read and write C in the 16-bit ``storage`` it is kept in (as floats in the kernel, rounded to
        nearest on the way out): the kernel then writes the product's C itself, where a kernel writing
        floats needs a merge to round them into C."""
        self.storage = storage
        self.c_scalar = "stored"

    def c_load(self, n: int) -> str:
        """The helper that reads ``n`` elements of C as the kernel's elements (for beta)."""
        return self.converted_load(n) if self.c_scalar == "stored" else self.load(n)

    def operand_load(self, n: int) -> str:
        """The helper that reads ``n`` elements of A or B as the kernel's elements (16-bit ones converted
        where the kernel computes them in float32)."""
        return self.converted_load(n) if self.operand_scalar == "stored" else self.load(n)

    def load(self, n: int) -> str:
        """The helper that reads ``n`` elements of a buffer of the kernel's reals."""
        self.widths.add(n)
        return f"load_{n}"

    def converted_load(self, n: int) -> str:
        """The helper that reads ``n`` 16-bit values (of ``self.storage``) as floats."""
        self.converted_widths.add(n)
        return f"load_as_real_{n}"

    def load_helpers(self) -> None:
        """``load_N`` for every width N of elements that reads used, ``load_stored_N`` for every width
        of 16-bit operand bits, and ``load_as_real_N`` for every width of 16-bit values read as floats
        (guarded: zero outside the matrix)."""
        for n in sorted(self.widths):
            self.load_helper(f"load_{n}", "real", self.vtype(n), n, self.rpe)
        for n in sorted(self.stored_widths):
            self.load_helper(f"load_stored_{n}", "stored", self.stored_type(n), n, 1)
        for n in sorted(self.converted_widths):
            # 16-bit values as floats: float16 through core OpenCL's vload_half (no half arithmetic needed),
            # bfloat16 by to_real
            vector = self.vtype(n)
            if self.storage.letter == "b":
                parts = ", ".join(f"to_real(p[i + {e}])" for e in range(n))
                whole = f"({vector})({parts})" if n > 1 else "to_real(p[i])"
            else:
                whole = f"vload_half{n if n > 1 else ''}(0, (const __global half*)(p + i))"
            self.load_helper(f"load_as_real_{n}", "stored", vector, n, 1, (whole, lambda at: f"to_real(p[{at}])"),
                             what="16-bit values, as floats,")

    def load_helper(self, name: str, scalar: str, vector: str, n: int, rpe: int,
                    converted: tuple[str, Callable[[str], str]] | None = None, what: str = "elements") -> None:
        """``name``: ``n`` consecutive elements (``vector``, of ``rpe`` reals each) of a buffer of ``scalar``
        from element ``i`` (guarded: zero outside the matrix), as they are stored, or ``converted``: the
        expressions of all ``n`` of them and of one at an index; ``what`` they are, for the comment."""
        if converted is None:
            whole, element = self.vload(n, "i", rpe), lambda at: self.vload(1, at, rpe)
            aligned = f"*(const __global {vector}*)(p + i * {rpe})" if n * rpe > 1 else "p[i]"
        else:
            (whole, element), aligned = converted, converted[0]
        w = self.out
        w(f"// {n} consecutive {what} of row r from column c of a rows x cols matrix"
          + (" (zero outside it)" if self.guarded else ""))
        w.open(f"inline {vector} {name}(const __global {scalar}* p, const int ld, const int rows, "
               f"const int cols, const int r, const int c)")
        w("const int i = r * ld + c;")
        if not self.guarded:
            w(f"return {aligned};")
        else:
            w(f"if (r < rows && c + {n} <= cols) return {whole};")
            w(f"{vector} v = ({vector})(0);")
            w.open("if (r < rows)")
            for e in range(n):
                w(f"if (c + {e} < cols) {self.component('v', e, n, rpe)} = {element(f'i + {e}')};")
            w.close()
            w("return v;")
        w.close()
        w("")

    def store_helper(self) -> None:
        w = self.out
        n = self.vw
        t = self.vtype(n)
        stored = self.c_scalar == "stored"
        w(f"// stores {n} consecutive elements at row r, column c" + (" (only those inside the matrix)" if self.guarded else "")
          + (f", rounded to {self.storage.numpy}" if stored else ""))
        w.open(f"inline void store_{n}(__global {self.c_scalar}* p, const int ld, const int rows, const int cols, "
               f"const int r, const int c, const {t} v)")
        w("const int i = r * ld + c;")
        # all n (aligned in an unguarded kernel), and one at an index
        one = self._store_converted if stored else self.vstore
        whole = one(n, "v", "i")
        aligned = whole if stored else f"*(__global {t}*)(p + i * {self.rpe}) = v;" if n * self.rpe > 1 else "p[i] = v;"
        if not self.guarded:
            w(aligned)
        else:
            w("if (r >= rows) return;")
            w.open(f"if (c + {n} <= cols)")
            w(whole)
            w("return;")
            w.close()
            for e in range(n):
                w(f"if (c + {e} < cols) {one(1, self.component('v', e, n), f'i + {e}')}")
        w.close()
        w("")

    def _store_converted(self, n: int, value: str, index: str) -> str:
        """A C statement: ``n`` floats ``value`` rounded into the 16-bit buffer ``p`` from element ``index``."""
        if n == 1:
            return f"p[{index}] = to_stored({value});"
        if self.storage.letter == "b":
            return " ".join(f"p[{index} + {e}] = to_stored({self.component(value, e, n)});" for e in range(n))
        return f"vstore_half{n}_rte({value}, 0, (__global half*)(p + {index}));"

    def vload(self, n: int, index: str, rpe: int | None = None, pointer: str = "p") -> str:
        """A C expression: ``n`` elements (of ``rpe`` reals) of ``pointer`` from element ``index``."""
        rpe = self.rpe if rpe is None else rpe
        reals = n * rpe
        if reals == 1:
            return f"{pointer}[{index}]"
        return f"vload{reals}(0, {pointer} + ({index}) * {rpe})"

    def vstore(self, n: int, value: str, index: str, pointer: str = "p") -> str:
        """A C statement: ``n`` elements ``value`` into ``pointer`` from element ``index``."""
        reals = n * self.rpe
        if reals == 1:
            return f"{pointer}[{index}] = {value};"
        return f"vstore{reals}({value}, 0, {pointer} + ({index}) * {self.rpe});"

    def buffer_kernel_source(self, name: str, attributes: str, functions: Sequence[Callable[[], None]] = ()) -> str:
        """The whole source of a family whose kernel takes buffer operands (C = alpha op(A) op(B) + beta C,
        offsets and leading dimensions in elements; A and B of scalars ``self.operand_scalar``): the subclass's
        ``body`` written first (it records the load widths the helpers must cover), then its ``header``,
        the multiply-add, ``functions``, the load and store helpers, and the kernel with ``attributes``
        around the body."""
        body = self.kernel_body(self.body)
        self.out = type(self.out)()
        self.header()
        self.mac_function()
        for function in functions:
            function()
        self.load_helpers()
        self.store_helper()
        self.out(f"__kernel {attributes}",
                 f"void {name}(const int M, const int N, const int {self.k_parameter}, const elem alpha, "
                 "const elem beta,",
                 f"    const __global {self.operand_scalar}* restrict A, const long a_offset, const int lda,",
                 f"    const __global {self.operand_scalar}* restrict B, const long b_offset, const int ldb,",
                 f"    __global {self.c_scalar}* restrict C, const long c_offset, const int ldc,",
                 self.last_parameters(),
                 "{")
        self.out.lines.extend(body)
        self.out("}")
        return self.out.text()

    @property
    def k_parameter(self) -> str:
        """The name the kernel's signature gives K: ``K_all`` where the body's ``K`` is its slice's depth."""
        return "K_all" if self.sliced else "K"

    def last_parameters(self) -> str:
        """The kernel's last parameters: the layer strides; under stream-K the partial sums; for K slices
        summed in the kernel the partial sums, the tiles' counts of arrived slices and a slice's depth; for
        K slices read in place and merged after, a slice's depth."""
        if self.stream:
            return LAYER_STRIDES + ",\n    __global real* restrict partials, const int sharing)"
        if self.summed:
            return (LAYER_STRIDES + ",\n    __global real* restrict partials, volatile __global int* restrict arrivals,"
                    " const int depth)")
        if self.sliced:
            return LAYER_STRIDES + ",\n    const int depth)"
        return LAYER_STRIDES + ")"

    def kernel_body(self, write: Callable[[], None]) -> list[str]:
        """The lines of the kernel's body, ``write`` writing the computation of one block of C (once per
        work-group, or under stream-K once per unit of work, in the loop ``stream_loop`` writes)."""
        self.out = type(self.out)()
        self.out.depth = 1
        if self.summed:
            self.out("__local int arrived;                        // slices of this tile done before this one")
        if self.sliced:
            self.out("const int K = min(depth, K_all - (int)get_group_id(2) * depth);   // this slice's depth")
        if not self.stream:
            write()
            return self.out.lines
        self.stream_loop(write)
        return self.out.lines

    def slice_sums(self, each: Callable[[Callable[[str, str], list[str]]], None], width: int | None = None) -> None:
        """Where K slices are summed in the kernel: this work-group's accumulators join its tile's partial
        sums, and the work-group that arrives last at the tile replaces its accumulators by the sum of all
        slices, in slice order (the same bits on every run, whichever arrives last); the others return.
        ``each(body)`` writes the family's loops over a work-item's accumulators, with the lines
        ``body(acc, at)`` for each vector ``acc`` of ``width`` elements (by default the kernel's vector
        width) at element ``at`` of the tile (row-major, BLOCK_COLS a row). A tile's count of arrivals is
        reset by its last work-group for the next launch (the plan zeroes them once)."""
        w, n = self.out, width or self.vw
        first = "get_local_id(0) == 0 && get_local_id(1) == 0"
        w("// split K: the work-group that arrives last at its tile adds the slices' sums up",
          "const int tile = get_group_id(1) * get_num_groups(0) + get_group_id(0);",
          "const int slices = get_num_groups(2);",
          "const long tile_size = BLOCK_ROWS * BLOCK_COLS;",
          "__global real* const sums = partials + (long)tile * slices * tile_size"
          + (f" * {self.rpe};" if self.rpe > 1 else ";"))
        each(lambda acc, at: [self.vstore(n, acc, f"layer * tile_size + {at}", pointer="sums")])
        w(*last_to_arrive(first, "tile"))
        each(lambda acc, at: [f"{acc} = {self.vload(n, at, pointer='sums')};"])
        w.open("for (int s = 1; s < slices; ++s)")
        each(lambda acc, at: [f"{acc} += {self.vload(n, f's * tile_size + {at}', pointer='sums')};"])
        w.close()
        w(f"if ({first}) arrivals[tile] = 0;         // ready for the next launch")

    def stream_loop(self, write: Callable[[], None]) -> None:
        """The stream-K loop over this work-group's units of work (see ``codelets.stream_k``), local memory
        declared before it (OpenCL wants it at the kernel's outermost scope)."""
        w, op = self.out, self.operand_scalar
        one, zero = ("(elem)(1, 0)", "(elem)(0, 0)") if self.dt.is_complex else ("(elem)1", "(elem)0")
        w("// stream-K: the first work-groups compute a whole tile each, as usual; the last `sharing` share the",
          "// K steps of the tiles after (one or two waves' worth) evenly: work-group `group` of them the steps",
          "// [at, end) of those tiles, in row-major order, tile after tile",
          "const int tiles_m = (M + BLOCK_ROWS - 1) / BLOCK_ROWS, tiles_n = (N + BLOCK_COLS - 1) / BLOCK_COLS;",
          f"const int steps = (K + {self.k_step} - 1) / {self.k_step};   // K steps per tile",
          "const int before = whole_tiles(tiles_m * tiles_n, sharing);",
          "const long total = (long)(tiles_m * tiles_n - before) * steps;",
          "const int group = get_group_id(0) - before;   // negative: a whole tile's work-group",
          "const int first_tile = group < 0 ? get_group_id(0) : before;",
          "long at = group < 0 ? 0 : group * total / sharing;",
          "const long end = group < 0 ? steps : (group + 1) * total / sharing;",
          "const int ldp = tiles_n * BLOCK_COLS;   // a shared tile's partial sums: in layer `piece` of partials",
          "const long partial_size = (long)tiles_m * BLOCK_ROWS * ldp;",
          "const int K_given = K, ldc_given = ldc;",
          "const elem alpha_given = alpha, beta_given = beta;",
          f"const __global {op}* const A_given = A;",
          f"const __global {op}* const B_given = B;",
          "__global real* const C_given = C;")
        loop = len(w.lines)
        w.open("while (at < end)")
        w("const int tile = first_tile + at / steps, unit_first = at % steps;",
          "const int unit_steps = min((long)(steps - unit_first), end - at);",
          "const int tile_row = tile / tiles_n, tile_col = tile % tiles_n;",
          "const bool whole = unit_steps == steps;      // the tile is this work-group's alone: into C",
          "const int piece = whole ? 0 : group - owner((long)(tile - before) * steps, total, sharing);",
          f"const int K = min(unit_steps * {self.k_step}, K_given - unit_first * {self.k_step});",
          f"const elem alpha = whole ? alpha_given : {one};",
          f"const elem beta = whole ? beta_given : {zero};",
          "const int ldc = whole ? ldc_given : ldp;")
        w.open("")
        write()
        w.close()
        w("at += unit_steps;",
          "barrier(CLK_LOCAL_MEM_FENCE);   // everyone is done with local memory before the next unit")
        w.close()
        w.lines[loop:loop] = ["    " + line for line in self.hoisted]

    def local_memory(self, *lines: str) -> None:
        """Declare local memory: here, or under stream-K before the loop over units."""
        if self.stream:
            self.hoisted.extend(lines)
        else:
            self.out(*lines)

    def tile_index(self, dim: int) -> str:
        """The index of the block of C the body computes, along N (``dim`` 0) or M (1)."""
        if self.stream:
            return ("tile_col", "tile_row")[dim]
        return f"get_group_id({dim})"

    def stream_functions(self) -> None:
        """``whole_tiles`` and ``owner``, where the kernel runs stream-K."""
        if self.stream:
            self.out(*OWNER_FUNCTION.splitlines(), "")

    def layer_offsets(self, names: Sequence[str]) -> None:
        """Point the buffers ``names`` (of A, B, C) at this work-group's layer: its element offset plus
        the layer's stride times its index along dimension 2, in 64 bits (a buffer may pass 2^31
        elements; the indices within one matrix are 32-bit). Under stream-K the layer is the unit's first
        K step, and C is the tile's partial sums where the tile is shared."""
        if not self.stream:
            self.out("const int layer = get_group_id(2);            // a K slice (split K) or a product of a batch")
            for name in names:
                lower = name.lower()
                self.out(f"{name} += ({lower}_offset + (long)layer * {lower}_stride) * {self.rpe};")
            return
        self.out("const int layer = unit_first;                 // the unit's first K step")
        for name in names:
            lower = name.lower()
            if name == "C":
                self.out(f"__global real* restrict C = whole ? C_given + c_offset * {self.rpe}",
                         f"                                   : partials + piece * partial_size * {self.rpe};")
            else:
                self.out(f"const __global {self.operand_scalar}* restrict {name} = "
                         f"{name}_given + ({lower}_offset + (long)layer * {lower}_stride) * {self.rpe};")

    def unrolled(self, var: str, count: str, body: str | None = None, pragma: str = "#pragma unroll") -> None:
        """Open a fully unrolled loop; with ``body``, write it and close the loop too."""
        self.out(pragma)
        self.out.open(f"for (int {var} = 0; {var} < {count}; ++{var})")
        if body is not None:
            self.out(body)
            self.out.close()


def buffer_kernel(params, write: Callable[[], str], local_size: tuple[int, int], name: str = "gemm") -> KernelSource:
    """The ``KernelSource`` of a buffer-operand family's configuration ``params``: refused where it is
    malformed, else the source ``write`` gives, with the launch geometry plans need (``local_size``
    work-items along N and M, a block of ``block_rows`` x ``block_cols`` of C, K steps of ``tile_k``)."""
    problem = params.malformed()
    if problem:
        raise ConfigError(problem)
    return KernelSource(name=name, source=write(), options=params.build_options, local_size=local_size,
                        block=(params.block_rows, params.block_cols, params.tile_k))
