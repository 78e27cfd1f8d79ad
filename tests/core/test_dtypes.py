"""DataType singletons, their NumPy twins, names and kinds."""

from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt


@pytest.mark.parametrize("d", dt.ALL_DTYPES, ids=str)
def test_round_trips(d: gp.DataType) -> None:
    assert dt.as_dtype(d.name) is d
    assert gp.DataType.from_numpy_dtype(d.to_numpy_dtype()) is d
    assert pickle.loads(pickle.dumps(d)) is d
    assert d == d.name and d.itemsize == d.to_numpy_dtype().itemsize
    assert repr(d) == f"pygpukit.{d.name}"


def test_aliases_and_python_types() -> None:
    assert dt.as_dtype(float) is gp.float32 and dt.as_dtype(int) is gp.int64
    assert dt.as_dtype(bool) is gp.bool_ and dt.as_dtype("bf16") is gp.bfloat16
    assert gp.bfloat16.to_numpy_dtype() == np.dtype(ml_dtypes.bfloat16)
    assert gp.float32 == np.float32 and gp.float32 != 1


def test_kinds() -> None:
    assert gp.float8_e4m3fn.is_float8 and gp.float8_e4m3fn not in dt.NUMERIC_DTYPES
    assert all(d.is_integer for d in dt.INTEGER_DTYPES)
    assert gp.bool_ not in dt.NUMERIC_DTYPES


@pytest.mark.parametrize("bad", ["f4x", "complex256", None, np.uint64, np.clongdouble, object])
def test_unknown_dtypes_raise(bad: object) -> None:
    with pytest.raises(TypeError):
        dt.as_dtype(bad)
