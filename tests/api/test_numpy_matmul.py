"""numpy's own tests of ``matmul`` run against ``autogemm.matmul``: the installed numpy's ``MatmulCommon``
and ``TestMatmul`` classes, imported and subclassed (not copied), over the dtypes autogemm computes. A
test that reaches an operand of a dtype autogemm documents as unsupported (bool, integers, objects) is
skipped there, after its checks of the dtypes before it ran."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import autogemm


def _numpy_tests():
    for name in ("numpy._core.tests.test_multiarray", "numpy.core.tests.test_multiarray"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    pytest.skip("the installed numpy ships without its tests", allow_module_level=True)


numpy_tests = _numpy_tests()
#: numpy's type codes of the dtypes autogemm computes.
COMPUTED = "efdFD"


def _matmul(*args, **kwargs):
    """``autogemm.matmul``; where an operand is of a dtype autogemm does not compute, the test is skipped."""
    try:
        return autogemm.matmul(*args, **kwargs)
    except autogemm.DtypeError:
        kinds = sorted({np.asarray(x).dtype.char for x in args[:2]} - set(COMPUTED))
        if kinds:
            pytest.skip(f"autogemm does not compute dtype {', '.join(map(repr, kinds))} (documented)")
        raise


class TestMatmulOfNumpy(numpy_tests.TestMatmul):
    """numpy's ``TestMatmul`` (with the ``MatmulCommon`` tests it inherits)."""

    types = COMPUTED
    matmul = staticmethod(_matmul)
