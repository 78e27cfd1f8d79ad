"""Copies and casts vs NumPy/ml_dtypes for every dtype pair, contiguous(), in-place
operators (overlapping source and target included), and cross-device assignment."""

from __future__ import annotations

import itertools
from typing import Any

import ml_dtypes
import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit._array import GPUArray
from pygpukit._dtypes import ALL_DTYPES, DataType
from pygpukit.testing import assert_allclose, tolerance

FAST = settings(max_examples=40, deadline=None)
PAIRS = list(itertools.product(ALL_DTYPES, ALL_DTYPES))


def _source(d: DataType, target: DataType, shape: tuple[int, ...]) -> np.ndarray:
    """Values every target holds: whole numbers in [0, 15] (halves too for float pairs)."""
    rng = np.random.default_rng(len(d.name) * 31 + len(target.name))
    values: np.ndarray = rng.integers(0, 16, size=shape).astype(np.float64)
    if d.is_floating and target.is_floating:
        values += rng.integers(0, 2, size=shape) * 0.5
    if d.kind == "b":
        values = values > 7
    return np.asarray(values).astype(d.to_numpy_dtype())


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=lambda d: d.name)
def test_astype_every_pair_from_a_strided_source(src: DataType, dst: DataType) -> None:
    host = _source(src, dst, (4, 6))
    x = gp.asarray(host)[::-1, ::2]
    got = x.astype(dst)
    want = host[::-1, ::2].astype(dst.to_numpy_dtype())  # NumPy/ml_dtypes conversion
    assert got.dtype is dst and got.is_contiguous
    assert got.buffer is not x.buffer
    assert_allclose(got, want, dst, op_kind="exact" if not dst.is_floating else "elementwise")
    back = gp.copy(got)
    np.testing.assert_array_equal(back.to_numpy().astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d.is_floating], ids=str)
def test_float_casts_keep_nan_inf_and_signed_zero(dtype: DataType) -> None:
    values = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5], dtype=np.float32)
    got = gp.asarray(values).astype(dtype).to_numpy().astype(np.float64)
    want = values.astype(dtype.to_numpy_dtype()).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


@pytest.mark.parametrize(
    ("name", "value", "stored"),
    [("bfloat16", 1.00390625, 1.0), ("float8_e4m3fn", 0.3, 0.3125), ("float8_e5m2", 0.3, 0.3125),
     ("float16", 65520.0, np.inf)],
)  # fmt: skip
def test_narrow_float_rounding_matches_ml_dtypes(name: str, value: float, stored: float) -> None:
    got = gp.asarray(np.array([value])).astype(name).to_numpy()
    ref = np.array([value]).astype(getattr(ml_dtypes, name, np.float16))
    assert float(got[0]) == float(ref[0]) == stored


def test_float_to_int_truncates_and_to_bool_is_nonzero() -> None:
    x = gp.asarray(np.array([-2.7, -0.5, 0.0, 0.5, 2.7]))
    np.testing.assert_array_equal(x.astype("int8").to_numpy(), [-2, 0, 0, 0, 2])
    np.testing.assert_array_equal(x.astype("bool").to_numpy(), [True, True, False, True, True])


@FAST
@given(st.sampled_from(ALL_DTYPES), st.lists(st.integers(0, 4), max_size=3))
def test_contiguous_returns_self_or_a_contiguous_copy(dtype: DataType, shape: list[int]) -> None:
    host = _source(dtype, dtype, tuple(shape))
    x = gp.asarray(host)
    assert x.contiguous() is x
    if host.ndim:
        v = x[..., ::-1]
        c = v.contiguous()
        if v.is_contiguous:
            assert c is v
        else:
            assert c is not v and c.is_contiguous and c.buffer is not x.buffer
        np.testing.assert_array_equal(
            c.to_numpy().astype(np.float64), host[..., ::-1].astype(float)
        )


INPLACE = {
    "+=": (lambda a, b: a.__iadd__(b), np.add),
    "-=": (lambda a, b: a.__isub__(b), np.subtract),
    "*=": (lambda a, b: a.__imul__(b), np.multiply),
    "/=": (lambda a, b: a.__itruediv__(b), np.divide),
    "&=": (lambda a, b: a.__iand__(b), np.bitwise_and),
}


def _apply(op: str, target: GPUArray, other: Any) -> None:
    result = INPLACE[op][0](target, other)
    assert result is target or result.buffer is target.buffer


@pytest.mark.parametrize("op", list(INPLACE))
@pytest.mark.parametrize(
    ("target", "source"),
    [
        ((slice(1, None),), (slice(None, -1),)),  # shifted by one, forward
        ((slice(None, -1),), (slice(1, None),)),  # shifted by one, backward
        ((slice(None, None, -1),), (slice(None),)),  # reversed onto itself
        ((slice(None), slice(None, None, 2)), (slice(None), slice(1, None, 2))),  # interleaved
    ],
    ids=["forward", "backward", "reversed", "interleaved"],
)
def test_inplace_with_overlapping_source(op: str, target: Any, source: Any) -> None:
    dtype = np.float64 if op == "/=" else np.int64
    host = (np.arange(1, 25).reshape(6, 4) % 7 + 1).astype(dtype)
    x = gp.asarray(host)
    _apply(op, x[target], x[source])
    want = host.copy()
    want[target] = INPLACE[op][1](host[target], host[source])  # NumPy's result as if copied
    np.testing.assert_array_equal(x.to_numpy(), want)


@FAST
@given(st.sampled_from(["float32", "int16", "float16"]), st.data())
def test_inplace_on_views_with_broadcast_and_scalars(dtype: str, data: Any) -> None:
    host = np.arange(24, dtype=np.float64).reshape(4, 6).astype(dtype) % 9
    x = gp.asarray(host)
    view, hview = x[1:, ::-2], host[1:, ::-2].copy()
    row = np.arange(1, 4).astype(dtype)
    use_scalar = data.draw(st.booleans())
    other: Any = 3 if use_scalar else gp.asarray(row)
    view += other
    view *= 2
    hview = (hview + (3 if use_scalar else row)) * 2
    want = host.copy()
    want[1:, ::-2] = hview
    rtol, atol = tolerance(dtype)
    np.testing.assert_allclose(x.to_numpy().astype(float), want.astype(float), rtol=rtol, atol=atol)


def test_inplace_refuses_a_result_of_another_dtype_or_shape() -> None:
    x = gp.zeros((3,), dtype="int8")
    with pytest.raises(ValueError, match="int8"):
        x += 1.5
    with pytest.raises(ValueError):
        x += gp.zeros((2, 3), dtype="int8")
    np.testing.assert_array_equal(x.to_numpy(), [0, 0, 0])


def _on_other_device(x: GPUArray) -> GPUArray:
    """The same memory labelled as a second CPU device (assignment must look at devices)."""
    return GPUArray(x.buffer, x.shape, x.dtype, gp.Device("cpu", 1))


def test_assign_between_devices_is_refused() -> None:
    x = gp.zeros((2, 3))
    y = _on_other_device(gp.ones((2, 3)))
    with pytest.raises(ValueError, match=r"cpu:1.*to_device"):
        x[...] = y
    with pytest.raises(ValueError, match="different devices"):
        x += y
    with pytest.raises(ValueError, match="different devices"):
        gp.add(x, y)
    np.testing.assert_array_equal(x.to_numpy(), np.zeros((2, 3)))


def test_assign_refuses_host_arrays() -> None:
    x = gp.zeros((2,))
    with pytest.raises(TypeError, match="asarray"):
        x[...] = np.ones(2)
