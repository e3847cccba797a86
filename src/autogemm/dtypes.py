"""The element types autogemm computes with, named by their BLAS letters s, d, c, z."""

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

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def reals_per_element(self) -> int:
        """Real scalars per element: 2 for complex, else 1."""
        return 2 if self.is_complex else 1

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


DTYPES: dict[str, Dtype] = {
    "s": Dtype("s", np.dtype(np.float32), "float", False, 1e-5),
    "d": Dtype("d", np.dtype(np.float64), "double", False, 1e-12),
    "c": Dtype("c", np.dtype(np.complex64), "float", True, 1e-5),
    "z": Dtype("z", np.dtype(np.complex128), "double", True, 1e-12),
}


def get_dtype(value: object) -> Dtype:
    """Resolve a BLAS letter, a ``Dtype`` or anything numpy accepts as a dtype."""
    if isinstance(value, Dtype):
        return value
    if isinstance(value, str) and value.lower() in DTYPES:
        return DTYPES[value.lower()]
    try:
        np_dtype = np.dtype(value)  # type: ignore[call-overload]
    except TypeError as exc:
        raise DtypeError(f"not a dtype: {value!r}") from exc
    for dt in DTYPES.values():
        if dt.numpy == np_dtype:
            return dt
    raise DtypeError(
        f"unsupported dtype {np_dtype}; autogemm computes with float32, float64, complex64, complex128 "
        f"(BLAS letters s, d, c, z)"
    )
