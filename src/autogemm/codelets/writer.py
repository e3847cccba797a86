"""Writing generated OpenCL C: indented lines, and the element-level code every GEMM family shares
(vector types of the element, multiply-add, loads and stores of consecutive elements with or without
edge guards)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..dtypes import Dtype


def hex_digit(i: int) -> str:
    return "0123456789abcdef"[i]


#: The last kernel parameters of every GEMM family: element strides between the layers of dimension 2
#: (the K slices of a split product, or the products of a strided batch).
LAYER_STRIDES = "    const int a_stride, const int b_stride, const int c_stride)"


class SourceWriter:
    """Accumulates indented lines of C."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, *lines: str) -> None:
        for line in lines:
            self.lines.append(("    " * self.depth + line) if line else "")

    def open(self, line: str) -> None:
        self(line + " {")
        self.depth += 1

    def close(self, suffix: str = "") -> None:
        self.depth -= 1
        self("}" + suffix)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class ElementCode:
    """Code for ``dtype`` elements in vectors of ``vector_width`` (``elem`` and ``elemsN`` typedefs are the
    kernel's), with loads and stores guarded at the matrix edges when ``guarded``. Subclasses write
    kernels into ``self.out`` and record in ``self.widths`` the load widths they use."""

    def __init__(self, dtype: Dtype, vector_width: int, guarded: bool) -> None:
        self.dt = dtype
        self.vw = vector_width
        self.rpe = dtype.reals_per_element
        self.guarded = guarded
        self.widths: set[int] = set()          # element counts of buffer loads used
        self.stored_widths: set[int] = set()   # ... of loads of 16-bit operand bits
        self.out = SourceWriter()

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

    def load_helpers(self) -> None:
        """``load_N`` for every width N of elements that reads used, and ``load_stored_N`` for every width
        of 16-bit operand bits (guarded: zero outside the matrix)."""
        for n in sorted(self.widths):
            self.load_helper(f"load_{n}", "real", self.vtype(n), n, self.rpe)
        for n in sorted(self.stored_widths):
            self.load_helper(f"load_stored_{n}", "stored", self.stored_type(n), n, 1)

    def load_helper(self, name: str, scalar: str, vector: str, n: int, rpe: int) -> None:
        """``name``: ``n`` consecutive elements (``vector``, of ``rpe`` ``scalar`` each) of a buffer."""
        w = self.out
        w(f"// {n} consecutive elements of row r from column c of a rows x cols matrix"
          + (" (zero outside it)" if self.guarded else ""))
        w.open(f"inline {vector} {name}(const __global {scalar}* p, const int ld, const int rows, "
               f"const int cols, const int r, const int c)")
        w("const int i = r * ld + c;")
        if not self.guarded:
            w(f"return *(const __global {vector}*)(p + i * {rpe});" if n * rpe > 1 else "return p[i];")
        else:
            w(f"if (r < rows && c + {n} <= cols) return {self.vload(n, 'i', rpe)};")
            w(f"{vector} v = ({vector})(0);")
            w.open("if (r < rows)")
            for e in range(n):
                w(f"if (c + {e} < cols) {self.component('v', e, n, rpe)} = {self.vload(1, f'i + {e}', rpe)};")
            w.close()
            w("return v;")
        w.close()
        w("")

    def store_helper(self) -> None:
        w = self.out
        n = self.vw
        t = self.vtype(n)
        w(f"// stores {n} consecutive elements at row r, column c" + (" (only those inside the matrix)" if self.guarded else ""))
        w.open(f"inline void store_{n}(__global real* p, const int ld, const int rows, const int cols, "
               f"const int r, const int c, const {t} v)")
        w("const int i = r * ld + c;")
        if not self.guarded:
            w(f"*(__global {t}*)(p + i * {self.rpe}) = v;" if n * self.rpe > 1 else "p[i] = v;")
        else:
            w("if (r >= rows) return;")
            w.open(f"if (c + {n} <= cols)")
            w(self.vstore(n, "v", "i"))
            w("return;")
            w.close()
            for e in range(n):
                w(f"if (c + {e} < cols) {self.vstore(1, self.component('v', e, n), f'i + {e}')}")
        w.close()
        w("")

    def vload(self, n: int, index: str, rpe: int | None = None) -> str:
        rpe = self.rpe if rpe is None else rpe
        reals = n * rpe
        if reals == 1:
            return f"p[{index}]"
        return f"vload{reals}(0, p + ({index}) * {rpe})"

    def vstore(self, n: int, value: str, index: str) -> str:
        reals = n * self.rpe
        if reals == 1:
            return f"p[{index}] = {value};"
        return f"vstore{reals}({value}, 0, p + ({index}) * {self.rpe});"

    def buffer_kernel_source(self, name: str, attributes: str, functions: Sequence[Callable[[], None]] = (),
                             operand: str = "real") -> str:
        """The whole source of a family whose kernel takes buffer operands (C = alpha op(A) op(B) + beta C,
        offsets and leading dimensions in elements; A and B of scalars ``operand``): the subclass's
        ``body`` written first (it records the load widths the helpers must cover), then its ``header``,
        the multiply-add, ``functions``, the load and store helpers, and the kernel with ``attributes``
        around the body."""
        self.out.depth = 1
        self.body()
        body = self.out.lines
        self.out = type(self.out)()
        self.header()
        self.mac_function()
        for function in functions:
            function()
        self.load_helpers()
        self.store_helper()
        self.out(f"__kernel {attributes}",
                 f"void {name}(const int M, const int N, const int K, const elem alpha, const elem beta,",
                 f"    const __global {operand}* restrict A, const long a_offset, const int lda,",
                 f"    const __global {operand}* restrict B, const long b_offset, const int ldb,",
                 "    __global real* restrict C, const long c_offset, const int ldc,",
                 LAYER_STRIDES,
                 "{")
        self.out.lines.extend(body)
        self.out("}")
        return self.out.text()

    def layer_offsets(self, names: Sequence[str]) -> None:
        """Point the buffers ``names`` (of A, B, C) at this work-group's layer: its element offset plus
        the layer's stride times its index along dimension 2, in 64 bits (a buffer may pass 2^31
        elements; the indices within one matrix are 32-bit)."""
        self.out("const int layer = get_group_id(2);            // a K slice (split K) or a product of a batch")
        for name in names:
            lower = name.lower()
            self.out(f"{name} += ({lower}_offset + (long)layer * {lower}_stride) * {self.rpe};")

    def unrolled(self, var: str, count: str, body: str | None = None, pragma: str = "#pragma unroll") -> None:
        """Open a fully unrolled loop; with ``body``, write it and close the loop too."""
        self.out(pragma)
        self.out.open(f"for (int {var} = 0; {var} < {count}; ++{var})")
        if body is not None:
            self.out(body)
            self.out.close()

