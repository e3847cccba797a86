"""The product of one pair of blocks, run by a Dask worker: on the worker's device through
``autogemm.gemm``, or with numpy's BLAS where the worker has no usable device (said once per process)."""

from __future__ import annotations

import functools
import logging

import numpy as np

from ..accuracy import apply_op
from ..api import gemm
from ..errors import DeviceError
from ..runtime import Device
from ..runtime.discovery import default_device

log = logging.getLogger("autogemm.dask")


@functools.lru_cache(maxsize=1)
def worker_device() -> Device | None:
    """This process's device (``AUTOGEMM_DEVICE``, else the default one), or None where there is none;
    the reason is logged once."""
    try:
        return default_device()
    except DeviceError as exc:
        log.warning("autogemm.dask: no usable OpenCL device in this worker (%s); its block products run "
                    "on numpy's BLAS", exc)
        return None


def block_product(a: np.ndarray, b: np.ndarray, *, trans_a: str, trans_b: str, alpha: complex) -> np.ndarray:
    """``alpha`` op(A) op(B) of one pair of blocks, with a middle axis of length 1 (the K block it came
    from, summed away later)."""
    device = worker_device()
    if device is None:
        product = alpha * (apply_op(a, trans_a) @ apply_op(b, trans_b))
    else:
        product = gemm(a, b, alpha=alpha, trans_a=trans_a, trans_b=trans_b, device=device)
    return product[:, None, :]
