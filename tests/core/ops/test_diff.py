"""gp.diff (Array API 2024.12) against np.diff: every numeric dtype (complex included),
axes, orders, prepend/append arrays and scalars, views; bad input answered clearly."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit import _dtypes as dt
from pygpukit.testing._strategies import random_numpy

NUMERIC = [d for d in dt.EVERY_DTYPE if d.kind in "iufc" and not d.is_float8 and d.itemsize > 2]


@settings(max_examples=40, deadline=None)
@given(
    dtype=st.sampled_from(NUMERIC),
    shape=st.lists(st.integers(0, 5), min_size=1, max_size=3),
    data=st.data(),
)
def test_matches_numpy(dtype: dt.DataType, shape: list[int], data: st.DataObject) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    host = random_numpy(rng, tuple(shape), dtype, (-20, 20))
    x = gp.asarray(host)
    if len(shape) == 2 and data.draw(st.booleans()):  # a transposed view
        host, x = host.T, x.mT
    axis = data.draw(st.integers(-host.ndim, host.ndim - 1))
    n = data.draw(st.integers(0, 3))
    extra = {}
    for side in ("prepend", "append"):
        if data.draw(st.booleans()):
            edge = list(host.shape)
            edge[axis] = data.draw(st.integers(0, 2))
            extra[side] = random_numpy(rng, tuple(edge), dtype, (-20, 20))
    got = gp.diff(x, axis=axis, n=n, **{k: gp.asarray(v) for k, v in extra.items()})
    want = np.diff(host, axis=axis, n=n, **extra)
    if n == 0:  # the standard keeps prepend/append at order 0 (M + N1 + N2 - n elements);
        # NumPy returns x untouched
        joined = (extra.get("prepend"), host, extra.get("append"))
        want = np.concatenate([v for v in joined if v is not None], axis=axis)
    assert got.dtype is dtype
    assert got.shape == want.shape
    wide = np.complex128 if dtype.is_complex else np.float64
    if dtype.is_inexact:  # one rounding per subtraction
        np.testing.assert_allclose(got.to_numpy().astype(wide), want.astype(wide),
                                   rtol=1e-5, atol=1e-5 * 2**n)  # fmt: skip
    else:  # integers wrap as NumPy's do
        np.testing.assert_array_equal(got.to_numpy(), want)


def test_scalars_bool_and_order_zero() -> None:
    a = np.array([1 + 2j, 4, -1j], dtype=np.complex64)
    x = gp.asarray(a)
    got = gp.diff(x, prepend=0, append=1.5)
    assert got.dtype is gp.complex64
    np.testing.assert_array_equal(got.to_numpy(), np.diff(a, prepend=0, append=1.5))
    flags = np.array([True, True, False, True])
    np.testing.assert_array_equal(gp.diff(gp.asarray(flags)).to_numpy(), np.diff(flags))
    assert gp.diff(x, n=0) is x
    assert gp.diff(x, n=5).shape == (0,)


def test_bad_input() -> None:
    x = gp.asarray(np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match="0-d"):
        gp.diff(gp.asarray(np.float32(1)))
    with pytest.raises(ValueError, match="n must be >= 0"):
        gp.diff(x, n=-1)
    with pytest.raises(TypeError, match="n must be an int"):
        gp.diff(x, n=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="axis must be an int"):
        gp.diff(x, axis=None)  # type: ignore[arg-type]
    with pytest.raises((ValueError, IndexError), match="axis"):
        gp.diff(x, axis=2)
    with pytest.raises(ValueError):
        gp.diff(x, axis=1, prepend=gp.asarray(np.zeros((3, 1))))  # shapes clash off the axis
    with pytest.raises(TypeError, match="prepend must be"):
        gp.diff(x, prepend=[1.0])
