"""The element types autogemm computes with, named by their BLAS letters s, d, c, z, and the reduced
precision modes of single and single-complex ("s.tf32", "s.3xtf32", "c.tf32", "c.3xtf32"): the same
storage, multiplied on tensor cores whose operands have TF32's 10-bit mantissa."""

from __future__ import annotations

from dataclasses import dataclass

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

    @property
    def key(self) -> str:
        """The name profiles, checkpoints and the command line use: the letter, with the precision mode."""
        return f"{self.letter}.{self.precision}" if self.precision else self.letter

    @property
    def routine(self) -> str:
        """How messages name the product, e.g. "sgemm" or "sgemm (3xtf32)"."""
        return f"{self.letter}gemm" + (f" ({self.precision})" if self.precision else "")

    @property
    def native(self) -> "Dtype":
        """The same storage at its own precision."""
        return DTYPES[self.letter]

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


def _single(letter: str, numpy: type, is_complex: bool) -> tuple[Dtype, ...]:
    """Single (or single complex) storage at its own precision and in each reduced mode."""
    return (Dtype(letter, np.dtype(numpy), "float", is_complex, 1e-5),
            *(Dtype(letter, np.dtype(numpy), "float", is_complex, TF32_TOLERANCE if splits == 1 else 1e-5,
                    precision, "tf32") for precision, splits in PRECISIONS.items()))


DTYPES: dict[str, Dtype] = {dt.key: dt for dt in (
    *_single("s", np.float32, False),
    Dtype("d", np.dtype(np.float64), "double", False, 1e-12, mma_operand="f64"),
    *_single("c", np.complex64, True),
    Dtype("z", np.dtype(np.complex128), "double", True, 1e-12, mma_operand="f64"),
)}
NATIVE: tuple[Dtype, ...] = tuple(dt for dt in DTYPES.values() if not dt.precision)


def get_dtype(value: object) -> Dtype:
    """Resolve a BLAS letter, a ``Dtype`` or anything numpy accepts as a dtype."""
    if isinstance(value, Dtype):
        return value
    if isinstance(value, str) and value.lower() in DTYPES:
        return DTYPES[value.lower()]
    if isinstance(value, str) and "." in value:
        raise DtypeError(f"unknown dtype {value!r}; autogemm knows {', '.join(DTYPES)}")
    try:
        np_dtype = np.dtype(value)  # type: ignore[call-overload]
    except TypeError as exc:
        raise DtypeError(f"not a dtype: {value!r}") from exc
    for dt in NATIVE:
        if dt.numpy == np_dtype:
            return dt
    raise DtypeError(
        f"unsupported dtype {np_dtype}; autogemm computes with float32, float64, complex64, complex128 "
        f"(BLAS letters s, d, c, z)"
    )


def with_precision(dt: Dtype, precision: str | None) -> Dtype:
    """``dt`` in the precision mode ``precision`` (None: its own)."""
    if precision is None or precision == dt.precision:
        return dt
    key = f"{dt.letter}.{precision}"
    if key not in DTYPES:
        modes = ", ".join(repr(p) for p in PRECISIONS)
        raise DtypeError(f"precision {precision!r} is not a mode of {dt.numpy}; float32 and complex64 have {modes}")
    return DTYPES[key]
