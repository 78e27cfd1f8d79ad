"""argmax, argmin, count_nonzero, nonzero and searchsorted against NumPy."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit._dispatch import kernel_for
from test_statistical_strategies import (
    DTYPES,
    NUMERIC,
    Case,
    as_axes,
    axes_for,
    cases,
    plain_signature,
    to_float64,
)

FAST = settings(max_examples=50, deadline=None)


def comparable(host: np.ndarray) -> np.ndarray:
    """Values NumPy orders exactly like PyGPUkit (bool stays bool; the rest as float64)."""
    return host if host.dtype == np.bool_ else to_float64(host)


@FAST
@given(st.data(), cases(), st.sampled_from(["argmax", "argmin"]), st.booleans())
def test_argmax_argmin_match_numpy(data: st.DataObject, c: Case, op: str, keepdims: bool) -> None:
    ndim = c.x.ndim
    axis = data.draw(st.none() | st.integers(-ndim, ndim - 1)) if ndim else None
    reduced = range(ndim) if axis is None else [axis % ndim]
    if any(c.host.shape[a] == 0 for a in reduced):
        with pytest.raises(ValueError, match=rf"{op}: cannot reduce over axis \d"):
            getattr(gp, op)(c.x, axis=axis, keepdims=keepdims)
        return
    got = getattr(gp, op)(c.x, axis=axis, keepdims=keepdims)
    # NumPy: the first occurrence wins, and the first NaN wins for both ops
    want = getattr(np, op)(comparable(c.host), axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(got.to_numpy(), np.asarray(want, np.int64), strict=True)


def test_argmax_takes_the_first_nan_and_the_first_tie() -> None:
    x = gp.asarray([[1.0, 7.0, 7.0, float("nan"), float("nan")], [5.0, 5.0, 1.0, 1.0, 5.0]])
    assert gp.argmax(x, axis=1).tolist() == [3, 0]
    assert gp.argmin(x, axis=1).tolist() == [3, 2]
    assert gp.argmax(x).item() == 3 and gp.argmax(x, keepdims=True).shape == (1, 1)
    assert gp.argmax(gp.asarray(2.0)).item() == 0


@FAST
@given(st.data(), cases())
def test_count_nonzero_matches_numpy(data: st.DataObject, c: Case) -> None:
    axis = data.draw(axes_for(c.x.ndim))
    keepdims = data.draw(st.booleans())
    got = gp.count_nonzero(c.x, axis=axis, keepdims=keepdims)
    want = np.count_nonzero(
        comparable(c.host), axis=as_axes(axis, c.x.ndim), keepdims=keepdims
    )  # NaN is nonzero
    np.testing.assert_array_equal(got.to_numpy(), np.asarray(want, np.int64), strict=True)


@FAST
@given(cases(min_dims=1))
def test_nonzero_matches_numpy(c: Case) -> None:
    got = gp.nonzero(c.x)
    want = np.nonzero(comparable(c.host))
    assert isinstance(got, tuple) and len(got) == len(want) == c.x.ndim
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.to_numpy(), w.astype(np.int64), strict=True)


@FAST
@given(
    cases(min_dims=1, max_dims=1, max_side=8, styles=("ties", "nan")),
    cases(max_dims=2, styles=("ties", "nan")),
    st.sampled_from(["left", "right"]),
    st.booleans(),
)
def test_searchsorted_matches_numpy(
    haystack: Case, needles: Case, side: str, use_sorter: bool
) -> None:
    # any pair of dtypes: both sides are compared in their promoted type
    host = comparable(haystack.host)
    if use_sorter:
        order = np.argsort(host, kind="stable").astype(np.int64)
        sorter = gp.asarray(order[::-1].copy())[::-1]  # a negative-stride sorter
        x1 = haystack.x
    else:
        order = None
        sorter = None
        x1 = gp.sort(haystack.x)
        host = np.sort(host)
    got = gp.searchsorted(x1, needles.x, side=side, sorter=sorter)
    want = np.searchsorted(host, comparable(needles.host), side=side, sorter=order)
    np.testing.assert_array_equal(got.to_numpy(), np.asarray(want, np.int64), strict=True)


def test_searchsorted_scalars_and_nan() -> None:
    x1 = gp.asarray([1.0, 2.0, 2.0, float("nan")])
    assert gp.searchsorted(x1, 2.0).item() == 1
    assert gp.searchsorted(x1, 2.0, side="right").item() == 3
    assert gp.searchsorted(x1, gp.asarray([float("nan"), 9.0])).tolist() == [3, 3]
    assert gp.searchsorted(gp.asarray([1, 5, 9]), gp.asarray([[0, 5], [6, 10]])).tolist() == [
        [0, 1],
        [2, 3],
    ]


def test_kernels_write_every_output_element() -> None:
    x = gp.asarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 5)[:, ::-1]
    for op, args in (("argmax", (1,)), ("argmin", (None,)), ("count_nonzero", ((0, 2),))):
        shape = gp.max(x, axis=args[0], keepdims=True).shape
        fn = kernel_for(op, x.device, (x.dtype,)).fn
        results = []
        for poison in (-1, 7):
            out = gp.full(shape, poison, dtype="int64")
            fn(x, out, *args)
            results.append(out.tolist())
        assert results[0] == results[1], op


@pytest.mark.parametrize("op", ["argmax", "argmin", "count_nonzero", "nonzero"])
def test_float8_and_bad_axes_are_refused(op: str) -> None:
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        getattr(gp, op)(gp.ones((2, 3)).astype("float8_e4m3fn"))
    with pytest.raises(TypeError, match="GPUArray"):
        getattr(gp, op)([1, 2])
    if op != "nonzero":
        with pytest.raises(ValueError, match="axis 2 is out of range"):
            getattr(gp, op)(gp.ones((2, 3)), axis=2)


def test_nonzero_and_searchsorted_errors() -> None:
    with pytest.raises(ValueError, match="0-d"):
        gp.nonzero(gp.asarray(1.0))
    x1 = gp.asarray([1.0, 2.0])
    with pytest.raises(ValueError, match="x1 must be 1-D"):
        gp.searchsorted(gp.ones((2, 2)), x1)
    with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
        gp.searchsorted(x1, x1, side="middle")
    with pytest.raises(ValueError, match=r"sorter must have x1's shape \(2,\)"):
        gp.searchsorted(x1, x1, sorter=gp.asarray([0, 1, 2]))
    with pytest.raises(TypeError, match="sorter must have an integer dtype"):
        gp.searchsorted(x1, x1, sorter=gp.asarray([0.0, 1.0]))
    with pytest.raises(TypeError, match="float8_e5m2"):
        gp.searchsorted(x1, x1.astype("float8_e5m2"))
    with pytest.raises(TypeError, match="host"):
        gp.searchsorted(x1, np.ones(2))


@pytest.mark.parametrize("name", NUMERIC)
def test_argsort_then_searchsorted_round_trip(name: str) -> None:
    rng = np.random.default_rng(3)
    host = (rng.standard_normal(9) * 4).astype(DTYPES[name].to_numpy_dtype())
    x = gp.sort(gp.from_numpy(host))
    pos = gp.searchsorted(x, x).to_numpy()
    np.testing.assert_array_equal(
        pos, np.searchsorted(np.sort(to_float64(host)), np.sort(to_float64(host)))
    )


SIGNATURES = {
    "argmax": "(x, /, *, axis=None, keepdims=False, backend=None)",
    "argmin": "(x, /, *, axis=None, keepdims=False, backend=None)",
    "count_nonzero": "(x, /, *, axis=None, keepdims=False, backend=None)",
    "nonzero": "(x, /, *, backend=None)",
    "searchsorted": "(x1, x2, /, *, side='left', sorter=None, backend=None)",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_array_api_signatures(name: str) -> None:
    fn = getattr(gp, name)
    assert plain_signature(fn) == SIGNATURES[name]
    assert fn.__doc__ and "\n" not in fn.__doc__.strip()
    assert fn in (getattr(gp, n) for n in dir(gp))  # re-exported by the package
