"""``accuracy``: the error measures every check uses."""

from __future__ import annotations

import math

import numpy as np

from autogemm.accuracy import relative_error, relative_error_where_finite


def test_the_error_where_finite_asks_nan_and_inf_where_the_reference_has_them():
    want = np.array([1.0, np.nan, np.inf, -np.inf, 2.0])
    assert relative_error_where_finite(want.copy(), want) == 0
    assert relative_error_where_finite(np.array([1.0, np.nan, np.inf, -np.inf, 2.0 + 1e-9]), want) < 1e-9
    for wrong in ([1.0, 0.0, np.inf, -np.inf, 2.0], [1.0, np.nan, -np.inf, -np.inf, 2.0],
                  [1.0, np.nan, np.inf, -np.inf, np.nan], [1.0, np.nan, np.nan, -np.inf, 2.0]):
        assert relative_error_where_finite(np.array(wrong), want) == math.inf, wrong
    assert relative_error(want.copy(), want) == math.inf       # the plain measure takes no special value


def test_a_complex_element_infinite_in_one_part_matches_in_that_part_alone():
    want = np.array([complex(np.inf, 1.0), 2 + 3j])
    assert relative_error_where_finite(np.array([complex(np.inf, 1.0 + 1e-12), 2 + 3j]), want) == 0
    assert relative_error_where_finite(np.array([complex(-np.inf, 1.0), 2 + 3j]), want) == math.inf
    assert relative_error_where_finite(np.array([complex(np.inf, np.inf), 2 + 3j]), want) == math.inf
