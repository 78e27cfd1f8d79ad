"""Data type functions (finfo, iinfo, isdtype, can_cast, result_type) against NumPy."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit import _dtypes as dt

FLOATS = tuple(d for d in dt.ALL_DTYPES if d.is_floating)
INTS = dt.INTEGER_DTYPES
STANDARD = tuple(d for d in dt.ALL_DTYPES if d.name not in ("bfloat16",) and not d.is_float8)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_finfo_matches_ml_dtypes(dtype: dt.DataType) -> None:
    want = ml_dtypes.finfo(dtype.to_numpy_dtype())
    got = gp.finfo(dtype)
    assert got.dtype is dtype
    assert got.bits == want.bits == 8 * dtype.itemsize
    for name in ("eps", "max", "min", "smallest_normal"):
        value = getattr(got, name)
        assert type(value) is float, name
        assert value == float(getattr(want, name)), name
    assert got.tiny == got.smallest_normal
    assert got.min == -got.max
    assert gp.finfo(gp.zeros((2,), dtype=dtype)) == got  # arrays are accepted too
    assert gp.finfo(dtype.name) == got


def test_finfo_known_values() -> None:
    assert gp.finfo(gp.bfloat16).eps == 2.0**-7
    assert gp.finfo(gp.float8_e4m3fn).max == 448.0
    assert gp.finfo(gp.float8_e5m2).max == 57344.0
    assert gp.finfo(gp.float32).eps == float(np.finfo(np.float32).eps)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_iinfo_matches_numpy(dtype: dt.DataType) -> None:
    want = np.iinfo(dtype.to_numpy_dtype())
    got = gp.iinfo(dtype)
    assert (got.bits, got.min, got.max, got.dtype) == (want.bits, want.min, want.max, dtype)
    assert type(got.max) is int and type(got.min) is int


def test_info_errors() -> None:
    with pytest.raises(TypeError, match="finfo wants a floating dtype, got int32"):
        gp.finfo(gp.int32)
    with pytest.raises(TypeError, match="iinfo wants an integer dtype, got float32"):
        gp.iinfo(gp.float32)
    with pytest.raises(TypeError, match="finfo wants a dtype or a GPUArray"):
        gp.finfo(object())
    with pytest.raises(TypeError, match="iinfo wants an integer dtype, got bool"):
        gp.iinfo(gp.bool)


KIND_OF_NUMPY = {
    "bool": lambda d: d.kind == "b",
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: d.kind == "f" or d.name.startswith(("bfloat16", "float8")),
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iufc" or d.name.startswith(("bfloat16", "float8")),
}


@pytest.mark.parametrize("dtype", dt.ALL_DTYPES, ids=str)
def test_isdtype_kinds_match_numpy_kinds(dtype: dt.DataType) -> None:
    np_dtype = dtype.to_numpy_dtype()
    for kind, rule in KIND_OF_NUMPY.items():
        assert gp.isdtype(dtype, kind) is rule(np_dtype), kind
    assert gp.isdtype(dtype, dtype)
    assert gp.isdtype(dtype, ("complex floating", dtype))
    assert not gp.isdtype(dtype, ())


def test_isdtype_errors() -> None:
    with pytest.raises(ValueError, match="unknown kind 'integer'"):
        gp.isdtype(gp.int8, "integer")
    with pytest.raises(TypeError, match="wants a dtype as its first argument"):
        gp.isdtype("int8", "integral")
    with pytest.raises(TypeError, match="kind must be a dtype, a kind name or a tuple"):
        gp.isdtype(gp.int8, 3)  # type: ignore[arg-type]


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(dt.ALL_DTYPES), st.sampled_from(dt.ALL_DTYPES))
def test_can_cast_follows_promotion(a: dt.DataType, b: dt.DataType) -> None:
    got = gp.can_cast(a, b)
    if a.is_float8 or b.is_float8:
        want = a is b or (a.is_float8 and b.is_floating and not b.is_float8)
    else:
        want = gp.result_type(a, b) is b
    assert got is want
    assert gp.can_cast(gp.zeros((1,), dtype=a), b) is got


def test_can_cast_agrees_with_numpy_within_a_kind() -> None:
    for a, b in itertools.product(STANDARD, STANDARD):
        if a.kind == b.kind or (a.kind in "iu" and b.kind in "iu"):
            want = np.can_cast(a.to_numpy_dtype(), b.to_numpy_dtype(), "safe")
            assert gp.can_cast(a, b) is bool(want), (a, b)
    assert not gp.can_cast(gp.float32, gp.int64)
    assert not gp.can_cast(gp.float16, gp.bfloat16)
    assert not gp.can_cast(gp.int64, gp.uint8)
    assert gp.can_cast(gp.bool, gp.float32)
    assert not gp.can_cast(gp.float32, gp.float8_e4m3fn)


def test_result_type_is_the_promotion_function() -> None:
    assert gp.result_type(gp.int8, gp.uint8) is gp.int16
    assert gp.result_type(gp.zeros((1,), dtype=gp.float16), 1.0) is gp.float16
    assert gp.result_type(gp.int32, gp.float16) is gp.float16
    with pytest.raises(TypeError, match="storage type"):
        gp.result_type(gp.float8_e5m2, gp.float32)
