"""``transpose``: out of place, every dtype, conjugating, matrices and stacks in any layout, host and device
arrays; the result exact (a transpose moves bits), everything around it unchanged; its errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pyopencl.array as cl_array
import pytest

import autogemm
from autogemm.accuracy import random_matrix
from autogemm.dtypes import DTYPES
from autogemm.errors import ArgumentError, DtypeError, ShapeError

RNG = np.random.default_rng()


@pytest.mark.parametrize("letter", ["s", "d", "c", "z", "h", "b"])
@pytest.mark.parametrize("a_order,out_order", [("C", "C"), ("F", "C"), ("C", "F"), ("F", "F")])
def test_transpose_every_dtype_and_layout(letter, a_order, out_order):
    dt = DTYPES[letter]
    a = np.asarray(random_matrix(RNG, dt, (37, 53)), order=a_order)
    for conjugate in (False, True):
        want = a.T.conj() if conjugate else a.T
        out = np.asarray(np.full((53, 37), np.nan, dt.numpy), order=out_order)
        assert autogemm.transpose(a, out, conjugate=conjugate) is out
        assert np.array_equal(out, want)
        got = autogemm.transpose(a, conjugate=conjugate)
        assert got.flags.c_contiguous and np.array_equal(got, want)


def test_transpose_stacks_and_views():
    a = random_matrix(RNG, DTYPES["c"], (4, 19, 33))
    assert np.array_equal(autogemm.transpose(a, conjugate=True), a.conj().transpose(0, 2, 1))
    view = a[::2, 1:18, 3:30:3]                                   # strided on every axis
    out = np.full((2, 9, 17), 5.0 + 5j, np.complex64)
    wide = np.full((2, 9, 40), 5.0 + 5j, np.complex64)
    autogemm.transpose(view, wide[:, :, 2:19])                    # into a window of a wider array
    assert np.array_equal(wide[:, :, 2:19], view.transpose(0, 2, 1))
    assert np.all(wide[:, :, :2] == 5 + 5j) and np.all(wide[:, :, 19:] == 5 + 5j)
    assert np.array_equal(autogemm.transpose(view, out), view.transpose(0, 2, 1))


def test_transpose_on_device_arrays(ctx):
    queue = ctx.queue
    host = random_matrix(RNG, DTYPES["d"], (50, 30))
    a = cl_array.to_device(queue, host)[7:40]                     # an offset into its buffer
    got = autogemm.transpose(a)
    assert isinstance(got, cl_array.Array) and got.events
    assert np.array_equal(got.get(), host[7:40].T)
    target = cl_array.to_device(queue, np.zeros((40, 30)))
    again = autogemm.transpose(got, target[5:38], wait_for=list(got.events))
    assert np.array_equal(again.get(), host[7:40])
    assert np.all(target.get()[:5] == 0) and np.all(target.get()[38:] == 0)
    mixed = autogemm.transpose(host.astype(ml_dtypes.bfloat16), cl_array.empty(queue, (30, 50), ml_dtypes.bfloat16))
    assert np.array_equal(mixed.get(), host.astype(ml_dtypes.bfloat16).T)


def test_transpose_errors():
    a = np.ones((3, 4), np.float32)
    out = np.zeros((4, 3), np.float32)
    cases = [
        (dict(a=a, out=np.zeros((3, 4), np.float32)), ShapeError, r"transpose of a \(3, 4\) array is \(4, 3\)"),
        (dict(a=a, out=np.zeros((4, 3))), DtypeError, "out is float64"),
        (dict(a=a[0], out=None), ShapeError, "2-D or 3-D"),
        (dict(a=a, out=out, conjugate="yes"), ArgumentError, "conjugate must be"),
        (dict(a=np.ones((4, 4), np.float32), out=None, wait_for=[1]), ArgumentError, "wait_for"),
        (dict(a=a.astype(np.int32), out=None), DtypeError, "int32"),
    ]
    for kwargs, error, words in cases:
        with pytest.raises(error, match=words):
            autogemm.transpose(**kwargs)
        assert np.all(out == 0)
    square = np.ones((4, 4), np.float32)
    with pytest.raises(ArgumentError, match="overlaps"):
        autogemm.transpose(square, square)
