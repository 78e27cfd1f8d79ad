"""cumulative_sum and cumulative_prod against NumPy's cumsum/cumprod."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_statistical_strategies import FLOATS, Case, assert_close, cases, to_float64

FAST = settings(max_examples=50, deadline=None)
NUMPY = {"cumulative_sum": (np.cumsum, 0), "cumulative_prod": (np.cumprod, 1)}


@FAST
@given(
    st.data(),
    cases(min_dims=1, styles=("near_one", "ties", "nan")),
    st.sampled_from(sorted(NUMPY)),
    st.booleans(),
)
def test_cumulative_matches_numpy(
    data: st.DataObject, c: Case, op: str, include_initial: bool
) -> None:
    ndim = c.x.ndim
    axis = (
        data.draw(st.integers(-ndim, ndim - 1) | st.none())
        if ndim == 1
        else (data.draw(st.integers(-ndim, ndim - 1)))
    )
    got = getattr(gp, op)(c.x, axis=axis, include_initial=include_initial)
    fn, initial = NUMPY[op]
    a = 0 if axis is None else axis % ndim
    is_float = c.dtype in FLOATS
    host = to_float64(c.host) if is_float else c.host.astype(np.int64)
    want = fn(host, axis=a)
    if include_initial:
        shape = list(host.shape)
        shape[a] = 1
        want = np.concatenate([np.full(shape, initial, host.dtype), want], axis=a)
    assert got.dtype.name == (c.dtype if is_float else "int64")
    if is_float:
        scale = fn(np.abs(host), axis=a)
        if include_initial:
            scale = np.concatenate([np.ones(shape), scale], axis=a)
        assert_close(got, want, c.dtype, scale, ulps=4)
    else:
        np.testing.assert_array_equal(got.to_numpy(), want, strict=True)


def test_dtype_argument_and_initial_values() -> None:
    x = gp.asarray([1, 2, 3], dtype="int8")
    got = gp.cumulative_sum(x, dtype="float64", include_initial=True)
    assert got.dtype == gp.float64 and got.tolist() == [0.0, 1.0, 3.0, 6.0]
    assert gp.cumulative_prod(x, include_initial=True).tolist() == [1, 1, 2, 6]
    assert gp.cumulative_sum(gp.zeros((2, 0)), axis=1, include_initial=True).shape == (2, 1)


def test_cumulative_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="axis must be given for a 2-D array"):
        gp.cumulative_sum(gp.ones((2, 3)))
    with pytest.raises(ValueError, match="at least one dimension"):
        gp.cumulative_prod(gp.asarray(1.0))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        gp.cumulative_sum(gp.ones((2, 3)), axis=2)
    with pytest.raises(TypeError, match="include_initial must be a bool"):
        gp.cumulative_sum(gp.ones(3), include_initial=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="float8_e5m2"):
        gp.cumulative_sum(gp.ones(3).astype("float8_e5m2"))
