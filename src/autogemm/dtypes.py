"""The element types autogemm computes with, named by their BLAS letters s, d, c, z; the reduced
precision modes of single and single-complex ("s.tf32", "s.3xtf32", "c.tf32", "c.3xtf32": the same
storage, multiplied on tensor cores whose operands have TF32's 10-bit mantissa); and the half precisions
"h" (float16) and "b" (bfloat16, from ml_dtypes), stored in 16 bits and computed in float32, with C in
their own type or, as "hs" and "bs", in float32."""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .errors import DtypeError


@dataclass(frozen=True)
class Dtype:
    """One BLAS element type and the facts the code generators and checks need about it."""

    letter: str
    numpy: np.dtype
    real_cl: str          # OpenCL name of the real scalar ("float" or "double")
    is_complex: bool
    tolerance: float      # bound on ||C - C_ref|| / ||C_ref|| for a correct kernel
    precision: str = ""   # "" (the storage's own), or a reduced mode of PRECISIONS
    mma_operand: str | None = None   # the matrix instructions' operand type that multiplies it, if any
    float32_output: bool = False     # C is float32 although A and B are 16-bit

    @property
    def key(self) -> str:
        """The name profiles, checkpoints and the command line use: the letter, with the precision mode
        ("s.tf32") or the float32 output ("hs")."""
        if self.precision:
            return f"{self.letter}.{self.precision}"
        return self.letter + ("s" if self.float32_output else "")

    @property
    def routine(self) -> str:
        """How messages name the product, e.g. "sgemm", "sgemm (3xtf32)" or "hgemm (float32 C)"."""
        mode = self.precision or ("float32 C" if self.float32_output else "")
        return f"{self.letter}gemm" + (f" ({mode})" if mode else "")

    @property
    def native(self) -> Dtype:
        """The same operands at their own precision, with C in their own type."""
        return DTYPES[self.letter]

    @property
    def half(self) -> bool:
        """True for the 16-bit storages, whose elements OpenCL kernels move as ``ushort`` bits."""
        return self.itemsize == 2

    @property
    def stored_cl(self) -> str:
        """OpenCL scalar type of A's and B's buffers (the bits of a 16-bit value, else ``real_cl``)."""
        return "ushort" if self.half else self.real_cl

    @property
    def compute(self) -> Dtype:
        """The dtype a kernel computes this one in when it does not read the 16-bit storage itself
        (float32: the operands are converted exactly before the product); itself otherwise."""
        return DTYPES["s"] if self.half else self

    @property
    def output(self) -> Dtype:
        """The dtype C is stored in."""
        return DTYPES["s"] if self.float32_output else self

    @property
    def scalar_numpy(self) -> np.dtype:
        """The numpy type of the kernels' scalars (alpha, beta) and of products before they are stored."""
        return self.compute.numpy

    @property
    def tensor_only(self) -> bool:
        """True when only matrix instructions multiply this dtype in its own right (elsewhere its
        products are those of ``native`` or ``compute``, which are tuned in their own right)."""
        return bool(self.precision) or self.half

    @property
    def operand_splits(self) -> int:
        """Parts each operand is split into before the products (3xTF32: a TF32 high part and a TF32
        remainder, whose three significant cross products are summed)."""
        return PRECISIONS.get(self.precision, 1)

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def reals_per_element(self) -> int:
        """Real scalars per element: 2 for complex, else 1."""
        return 2 if self.is_complex else 1

    @property
    def real_bytes(self) -> int:
        """Bytes of one real part."""
        return self.itemsize // self.reals_per_element

    @property
    def registers_per_element(self) -> int:
        """32-bit registers that one element occupies."""
        return self.itemsize // 4

    @property
    def needs_fp64(self) -> bool:
        return self.real_cl == "double"

    @property
    def real_numpy(self) -> np.dtype:
        """The numpy type of one real part as the kernels compute it."""
        return np.dtype(np.float64 if self.needs_fp64 else np.float32)

    @property
    def reference_numpy(self) -> np.dtype:
        """The higher-precision type references are computed in."""
        return np.dtype(np.complex128 if self.is_complex else np.float64)

    def cl_vector(self, elements: int) -> str:
        """OpenCL type holding ``elements`` consecutive elements (complex ones interleaved)."""
        reals = elements * self.reals_per_element
        return self.real_cl if reals == 1 else f"{self.real_cl}{reals}"

    @property
    def cl_element(self) -> str:
        return self.cl_vector(1)


#: Reduced precision modes of float32 storage, and the parts each operand is split into. TF32 keeps 10
#: of float32's 23 mantissa bits: a product's relative error is about 5e-4, against 6e-8 in float32.
PRECISIONS = {"tf32": 1, "3xtf32": 2}
#: Bound on the relative error of a TF32 product: uniform random data measure about 3e-4.
TF32_TOLERANCE = 2e-3
#: Bounds on the relative error of 16-bit products, dominated by rounding C to its 16 bits (float16 keeps
#: 10 mantissa bits, bfloat16 7); with C in float32, by the sums (the tensor cores round them toward zero).
HALF_TOLERANCE = {"h": 1e-3, "b": 6e-3}
HALF_FLOAT32_TOLERANCE = 1e-4


def _single(letter: str, numpy: type, is_complex: bool) -> tuple[Dtype, ...]:
    """Single (or single complex) storage at its own precision and in each reduced mode."""
    return (Dtype(letter, np.dtype(numpy), "float", is_complex, 1e-5),
            *(Dtype(letter, np.dtype(numpy), "float", is_complex, TF32_TOLERANCE if splits == 1 else 1e-5,
                    precision, "tf32") for precision, splits in PRECISIONS.items()))


def _half(letter: str, numpy: type, operand: str) -> tuple[Dtype, ...]:
    """16-bit storage computed in float32, with C in the same 16 bits and in float32."""
    return (Dtype(letter, np.dtype(numpy), "float", False, HALF_TOLERANCE[letter], mma_operand=operand),
            Dtype(letter, np.dtype(numpy), "float", False, HALF_FLOAT32_TOLERANCE, mma_operand=operand,
                  float32_output=True))


DTYPES: dict[str, Dtype] = {dt.key: dt for dt in (
    *_single("s", np.float32, False),
    Dtype("d", np.dtype(np.float64), "double", False, 1e-12, mma_operand="f64"),
    *_single("c", np.complex64, True),
    Dtype("z", np.dtype(np.complex128), "double", True, 1e-12, mma_operand="f64"),
    *_half("h", np.float16, "f16"),
    *_half("b", ml_dtypes.bfloat16, "bf16"),
)}
NATIVE: tuple[Dtype, ...] = tuple(dt for dt in DTYPES.values() if not dt.precision and not dt.float32_output)


def get_dtype(value: object) -> Dtype:
    """Resolve a BLAS letter, a ``Dtype`` or anything numpy accepts as a dtype."""
    if isinstance(value, Dtype):
        return value
    if isinstance(value, str) and value.lower() in DTYPES:
        return DTYPES[value.lower()]
    if isinstance(value, str) and ("." in value or len(value) == 1):   # not numpy's one-letter codes ('q')
        raise DtypeError(f"unknown dtype {value!r}; autogemm knows {', '.join(DTYPES)}")
    try:
        np_dtype = np.dtype(value)  # type: ignore[call-overload]
    except TypeError as exc:
        raise DtypeError(f"not a dtype: {value!r}") from exc
    for dt in NATIVE:
        if dt.numpy == np_dtype:
            return dt
    if not np_dtype.isnative and np_dtype.newbyteorder("=") in (dt.numpy for dt in NATIVE):
        raise DtypeError(f"{np_dtype.newbyteorder('=')} stored in the other byte order ({np_dtype.str}) is not "
                         f"computed on; convert it with .astype(x.dtype.newbyteorder('='))")
    hint = ("; convert integers with .astype(np.float64), exact while every sum stays below 2**53"
            if np_dtype.kind in "biu" else "")
    raise DtypeError(
        f"unsupported dtype {np_dtype}; autogemm computes with float32, float64, complex64, complex128 "
        f"(BLAS letters s, d, c, z), float16 (h) and bfloat16 (b){hint}"
    )


def with_output(dt: Dtype, output: object) -> Dtype:
    """``dt`` with C stored as ``output``: None or C's present type leave it unchanged; float32 or their
    own type for 16-bit operands."""
    if output is None:
        return dt
    out = get_dtype(output)
    if out.numpy == dt.output.numpy:
        return dt
    if dt.half and out.numpy in (dt.numpy, np.dtype(np.float32)):
        return DTYPES[dt.letter + ("s" if out.key == "s" else "")]
    allowed = f"{dt.numpy} or float32" if dt.half else str(dt.numpy)
    raise DtypeError(f"C of {dt.numpy} operands must be {allowed}, not {out.numpy}")


def with_precision(dt: Dtype, precision: str | None) -> Dtype:
    """``dt`` in the precision mode ``precision`` (None: its own)."""
    if precision is None or precision == dt.precision:
        return dt
    key = f"{dt.letter}.{precision}"
    if key not in DTYPES:
        modes = ", ".join(repr(p) for p in PRECISIONS)
        raise DtypeError(f"precision {precision!r} is not a mode of {dt.numpy}; float32 and complex64 have {modes}")
    return DTYPES[key]
