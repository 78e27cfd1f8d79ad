"""sort and argsort: NumPy's stable order ascending, a stable descending order, NaN last."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit._dispatch import kernel_for
from test_statistical_strategies import Case, cases, plain_signature, to_float64

FAST = settings(max_examples=50, deadline=None)


def ranks(host: np.ndarray) -> np.ndarray:
    """Each element's rank among the distinct values of host: NaN highest, -0.0 == 0.0."""
    flat = to_float64(host)
    _, inverse = np.unique(flat, return_inverse=True)  # NaNs collapse into the top rank
    return inverse.reshape(flat.shape)


def reference_order(host: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable order built from ranks, independent of the sort under test's reversal trick."""
    r = ranks(host)
    return np.argsort(-r if descending else r, axis=axis, kind="stable")


def same_values(got: np.ndarray, want: np.ndarray) -> None:
    """Bit-for-bit equal, so -0.0 vs 0.0 and NaN placement both count."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@FAST
@given(st.data(), cases(min_dims=1, styles=("ties", "nan")), st.booleans())
def test_argsort_is_stable_in_both_directions(data: st.DataObject, c: Case, desc: bool) -> None:
    axis = data.draw(st.integers(-c.x.ndim, c.x.ndim - 1))
    got = gp.argsort(c.x, axis=axis, descending=desc)
    want = reference_order(c.host, axis, desc)
    np.testing.assert_array_equal(got.to_numpy(), want.astype(np.int64), strict=True)


@FAST
@given(st.data(), cases(min_dims=1, styles=("ties", "nan")), st.booleans())
def test_sort_gathers_the_original_elements(data: st.DataObject, c: Case, desc: bool) -> None:
    axis = data.draw(st.integers(-c.x.ndim, c.x.ndim - 1))
    got = gp.sort(c.x, axis=axis, descending=desc, stable=data.draw(st.booleans()))
    assert got.dtype == c.x.dtype
    want = np.take_along_axis(c.host, reference_order(c.host, axis, desc), axis)
    same_values(got.to_numpy(), np.ascontiguousarray(want))


@FAST
@given(cases(min_dims=1, styles=("plain", "nan")))
def test_ascending_sort_matches_numpy(c: Case) -> None:
    got = to_float64(gp.sort(c.x).to_numpy())
    np.testing.assert_array_equal(got, np.sort(to_float64(c.host)))  # NaN last in both


def test_descending_keeps_ties_in_original_order() -> None:
    x = gp.asarray([2.0, 1.0, 2.0, float("nan"), 1.0, float("nan"), 3.0])
    assert gp.argsort(x, descending=True).tolist() == [3, 5, 6, 0, 2, 1, 4]
    assert gp.argsort(x).tolist() == [1, 4, 0, 2, 6, 3, 5]
    zeros = gp.asarray([0.0, -0.0, 1.0])  # equal values: original order, each way
    assert gp.argsort(zeros, descending=True).tolist() == [2, 0, 1]
    assert np.signbit(gp.sort(zeros, descending=True).to_numpy()).tolist() == [False, False, True]
    b = gp.asarray([True, False, True])
    assert gp.argsort(b, descending=True).tolist() == [0, 2, 1]


@pytest.mark.parametrize("op", ["sort", "argsort"])
@pytest.mark.parametrize("descending", [False, True])
def test_kernels_write_every_output_element(op: str, descending: bool) -> None:
    x = gp.asarray(np.arange(24, dtype=np.float32).reshape(4, 6) % 5)[::-1].transpose()
    fn = kernel_for(op, x.device, (x.dtype,)).fn
    dtype = "int64" if op == "argsort" else "float32"
    results = []
    for poison in (-1, 99):
        out = gp.full(x.shape, poison, dtype=dtype)
        fn(x, out, 0, descending, True)
        results.append(out.tolist())
    assert results[0] == results[1]
    assert results[0] == getattr(gp, op)(x, axis=0, descending=descending).tolist()


@pytest.mark.parametrize("op", ["sort", "argsort"])
def test_errors_name_the_problem(op: str) -> None:
    fn = getattr(gp, op)
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        fn(gp.ones(3).astype("float8_e4m3fn"))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        fn(gp.ones((2, 3)), axis=2)
    with pytest.raises(TypeError, match="axis must be an int, got None"):
        fn(gp.ones(3), axis=None)
    with pytest.raises(ValueError, match="0-d"):
        fn(gp.asarray(1.0))
    with pytest.raises(TypeError, match="descending must be a bool"):
        fn(gp.ones(3), descending=1)
    with pytest.raises(TypeError, match="GPUArray"):
        fn(np.ones(3))


@pytest.mark.parametrize("name", ["sort", "argsort"])
def test_array_api_signature(name: str) -> None:
    fn = getattr(gp, name)
    want = "(x, /, *, axis=-1, descending=False, stable=True, backend=None)"
    assert plain_signature(fn) == want
    x = gp.asarray([3, 1, 2])
    assert fn(x, backend="cpu").tolist() == fn(x).tolist()
