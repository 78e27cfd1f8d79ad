"""Reductions (sum, prod, mean, var, std, max, min, all, any) against NumPy float64 references."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit._dispatch import kernel_for
from test_statistical_strategies import (
    DTYPES,
    FLOATS,
    NUMERIC,
    Case,
    as_axes,
    assert_close,
    axes_for,
    cases,
    plain_signature,
    to_float64,
)

FAST = settings(max_examples=50, deadline=None)


def sum_dtype(name: str) -> str:
    return name if name in FLOATS else "int64"


def mean_dtype(name: str) -> str:
    return name if name in FLOATS else "float32"


def reduced(c: Case, axis: Any, keepdims: bool, fn: Any, **kw: Any) -> Any:
    return fn(c.host, axis=as_axes(axis, c.host.ndim), keepdims=keepdims, **kw)


def sum_of_abs(c: Case, axis: Any, keepdims: bool) -> np.ndarray:
    return reduced(c, axis, keepdims, np.sum, dtype=np.float64) if c.host.size else 0.0


def check_sum_like(c: Case, axis: Any, keepdims: bool, op: str) -> None:
    fn = {"sum": np.sum, "prod": np.prod}[op]
    got = getattr(gp, op)(c.x, axis=axis, keepdims=keepdims)
    assert got.dtype.name == sum_dtype(c.dtype)
    axes = as_axes(axis, c.host.ndim)
    if c.dtype in FLOATS:
        want = fn(to_float64(c.host), axis=axes, keepdims=keepdims)
        scale = np.sum(np.abs(to_float64(c.host)), axis=axes, keepdims=keepdims)
        if op == "prod":
            scale = np.abs(want) * max(1, math.prod(c.host.shape[a] for a in axes))
        assert_close(got, want, got.dtype.name, scale)
    else:  # exact, with the same int64 wrap-around
        want = fn(c.host.astype(np.int64), axis=axes, keepdims=keepdims)
        np.testing.assert_array_equal(got.to_numpy(), want, strict=True)


@FAST
@given(st.data(), cases())
def test_sum_matches_numpy(data: st.DataObject, c: Case) -> None:
    check_sum_like(c, data.draw(axes_for(c.x.ndim)), data.draw(st.booleans()), "sum")


@FAST
@given(st.data(), cases(styles=("near_one", "ties"), max_side=3))
def test_prod_matches_numpy(data: st.DataObject, c: Case) -> None:
    check_sum_like(c, data.draw(axes_for(c.x.ndim)), data.draw(st.booleans()), "prod")


@FAST
@given(st.data(), cases(dtypes=NUMERIC, styles=("plain",)), st.sampled_from(NUMERIC))
def test_sum_dtype_argument_casts_first(data: st.DataObject, c: Case, target: str) -> None:
    axis = data.draw(axes_for(c.x.ndim))
    got = gp.sum(c.x, axis=axis, dtype=target)
    assert got.dtype.name == target
    host = c.host.astype(DTYPES[target].to_numpy_dtype())
    axes = as_axes(axis, c.host.ndim)
    if target in FLOATS:
        want = np.sum(to_float64(host), axis=axes)
        assert_close(got, want, target, np.sum(np.abs(to_float64(host)), axis=axes))
    else:
        want = np.sum(host.astype(np.int64), axis=axes).astype(host.dtype)  # wraps like the type
        np.testing.assert_array_equal(got.to_numpy(), want, strict=True)


@FAST
@given(st.data(), cases(), st.sampled_from(["mean", "var", "std"]))
def test_mean_var_std_match_numpy(data: st.DataObject, c: Case, op: str) -> None:
    axis = data.draw(axes_for(c.x.ndim))
    keepdims = data.draw(st.booleans())
    correction = data.draw(st.sampled_from([0, 1, 0.5, 2.0])) if op != "mean" else 0
    kw = {} if op == "mean" else {"correction": correction}
    got = getattr(gp, op)(c.x, axis=axis, keepdims=keepdims, **kw)
    assert got.dtype.name == mean_dtype(c.dtype)
    axes = as_axes(axis, c.host.ndim)
    host = to_float64(c.host)
    n = math.prod(c.host.shape[a] for a in axes)
    with np.errstate(all="ignore"):
        mean = np.sum(host, axis=axes, keepdims=True) / n
        ss = np.sum((host - mean) ** 2, axis=axes, keepdims=keepdims)
        if op == "mean":
            want = np.sum(host, axis=axes, keepdims=keepdims) / n
            scale = np.sum(np.abs(host), axis=axes, keepdims=keepdims) / max(n, 1)
        else:
            want = ss / (n - correction) if n - correction > 0 else np.full_like(ss, np.nan)
            if op == "std":
                want = np.sqrt(want)
            # two-pass variance in the compute dtype: error ~ eps * (sum of squares) / (n - c)
            spread = np.sum(host**2, axis=axes, keepdims=keepdims) / max(n - correction, 1)
            scale = np.sqrt(spread) if op == "std" else spread
    assert_close(got, want, got.dtype.name, scale, ulps=4)


@FAST
@given(st.data(), cases(), st.sampled_from(["max", "min"]))
def test_max_min_match_numpy_with_nan(data: st.DataObject, c: Case, op: str) -> None:
    axis = data.draw(axes_for(c.x.ndim))
    keepdims = data.draw(st.booleans())
    axes = as_axes(axis, c.host.ndim)
    if any(c.host.shape[a] == 0 for a in axes):
        with pytest.raises(ValueError, match=r"axis \d+ of length 0"):
            getattr(gp, op)(c.x, axis=axis, keepdims=keepdims)
        return
    got = getattr(gp, op)(c.x, axis=axis, keepdims=keepdims)
    assert got.dtype == c.x.dtype
    host = c.host if c.dtype == "bool" else to_float64(c.host)
    want = {"max": np.max, "min": np.min}[op](host, axis=axes, keepdims=keepdims)
    np.testing.assert_array_equal(got.to_numpy().astype(host.dtype), want)  # NaN == NaN here


@FAST
@given(st.data(), cases(), st.sampled_from(["all", "any"]))
def test_all_any_match_numpy(data: st.DataObject, c: Case, op: str) -> None:
    axis = data.draw(axes_for(c.x.ndim))
    keepdims = data.draw(st.booleans())
    got = getattr(gp, op)(c.x, axis=axis, keepdims=keepdims)
    truth = to_float64(c.host) != 0  # NaN is true
    want = {"all": np.all, "any": np.any}[op](truth, axis=as_axes(axis, c.host.ndim),
                                              keepdims=keepdims)  # fmt: skip
    np.testing.assert_array_equal(got.to_numpy(), want, strict=True)


@FAST
@given(st.data(), cases(min_dims=1, max_dims=2))
def test_sum_axis_is_sum_over_one_axis(data: st.DataObject, c: Case) -> None:
    axis = data.draw(st.integers(-c.x.ndim, c.x.ndim - 1))
    got = gp.sum_axis(c.x, axis)
    want = gp.sum(c.x, axis=axis)
    assert got.shape == c.host.shape[: axis % c.x.ndim] + c.host.shape[axis % c.x.ndim + 1 :]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(to_float64(got.to_numpy()), to_float64(want.to_numpy()))


def test_half_sums_accumulate_in_float32() -> None:
    # 4096 * 1.0 + 1.0 ... in float16 arithmetic the running sum stalls at 2048
    x = gp.ones((4096,), dtype="float16")
    assert gp.sum(x).item() == 4096.0
    assert gp.mean(x).item() == 1.0
    b = gp.ones((3000,), dtype="bfloat16")  # bfloat16 running sums stall at 256
    assert abs(gp.sum(b).item() - 3000) <= 8  # one bfloat16 rounding of the exact 3000


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_half_reductions_of_moderate_length_within_dtype_tolerance(name: str, op: str) -> None:
    rng = np.random.default_rng(11)
    host = rng.uniform(0.0, 2.0, (8, 1000)).astype(DTYPES[name].to_numpy_dtype())
    got = getattr(gp, op)(gp.from_numpy(host)[:, ::-1], axis=1)
    want = getattr(np, op)(to_float64(host), axis=1)
    assert got.dtype.name == name
    np.testing.assert_allclose(
        to_float64(got.to_numpy()), want, rtol=1e-2 if name == "bfloat16" else 1e-3
    )


def test_empty_reductions_follow_the_standard() -> None:
    x = gp.zeros((0, 3))
    np.testing.assert_array_equal(gp.sum(x, axis=0).to_numpy(), np.zeros(3, np.float32))
    np.testing.assert_array_equal(gp.prod(x, axis=0).to_numpy(), np.ones(3, np.float32))
    assert np.isnan(gp.mean(x).item()) and np.isnan(gp.var(x, axis=0).to_numpy()).all()
    assert gp.all(x).item() is True and gp.any(x).item() is False
    assert gp.max(x, axis=1).shape == (0,)  # reducing a non-empty axis of an empty array
    with pytest.raises(ValueError, match=r"max: cannot reduce over axis 0 .*axis=None"):
        gp.max(x)
    with pytest.raises(ValueError, match=r"min: cannot reduce over axis 0 .*axis=-2"):
        gp.min(x, axis=-2)


def test_var_is_nan_where_n_minus_correction_is_not_positive() -> None:
    x = gp.asarray([[1.0, 2.0], [3.0, 5.0]])
    assert np.isnan(gp.var(x, axis=1, correction=2).to_numpy()).all()
    assert np.isnan(gp.std(x, axis=0, correction=3).to_numpy()).all()
    np.testing.assert_allclose(gp.var(x, axis=1, correction=1).to_numpy(), [0.5, 2.0])


def test_nan_propagates_through_max_and_sum() -> None:
    x = gp.asarray([[1.0, float("nan")], [3.0, 4.0]])
    np.testing.assert_array_equal(gp.max(x, axis=1).to_numpy(), [np.nan, 4.0])
    np.testing.assert_array_equal(gp.min(x, axis=0).to_numpy(), [1.0, np.nan])
    assert np.isnan(gp.sum(x).item())


def test_zero_d_reductions() -> None:
    x = gp.asarray(2.5)
    for op in ("sum", "prod", "mean", "max", "min"):
        got = getattr(gp, op)(x)
        assert got.shape == () and got.item() == 2.5, op
    assert gp.var(x).item() == 0.0 and gp.sum(x, axis=(), keepdims=True).shape == ()
    assert gp.sum(gp.asarray(3, dtype="int8"), axis=0).dtype == gp.int64


# -- kernels fill every element of their output --------------------------------------
REDUCTION_OPS = ("sum", "prod", "mean", "var", "std", "max", "min", "all", "any")


@pytest.mark.parametrize("op", REDUCTION_OPS)
@pytest.mark.parametrize("dtype", ["int16", "bfloat16", "float32", "bool"])
def test_reduction_kernels_write_every_output_element(op: str, dtype: str) -> None:
    rng = np.random.default_rng(7)
    host = (rng.standard_normal((3, 4, 5)) * 4).astype(DTYPES[dtype].to_numpy_dtype())
    x = gp.from_numpy(host)[:, ::-1].transpose()
    want = getattr(gp, op)(x, axis=(0, 2), keepdims=True).to_numpy()
    out_dtype = gp.asarray(want).dtype
    fn = kernel_for(op, x.device, (x.dtype,)).fn
    params = {"correction": 0.0} if op in ("var", "std") else {}
    for poison in (0, 1):  # two different fills: an element left unwritten shows up
        out = gp.full(want.shape, poison, dtype=out_dtype)
        fn(x, out, (0, 2), **params)
        np.testing.assert_array_equal(out.to_numpy(), want)


@pytest.mark.parametrize("op", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_kernels_write_every_output_element(op: str) -> None:
    x = gp.asarray(np.arange(1, 13, dtype=np.float32).reshape(3, 4))[::-1]
    want = getattr(gp, op)(x, axis=1, include_initial=True).to_numpy()
    fn = kernel_for(op, x.device, (x.dtype,)).fn
    for poison in (float("nan"), 0.0):
        out = gp.full((3, 5), poison, dtype="float32")
        fn(x, out, 1, True)
        np.testing.assert_array_equal(out.to_numpy(), want)


# -- errors ---------------------------------------------------------------------------
@pytest.mark.parametrize("op", [*REDUCTION_OPS, "cumulative_sum", "cumulative_prod"])
def test_float8_and_host_inputs_are_refused(op: str) -> None:
    x = gp.ones((2, 3)).astype("float8_e4m3fn")
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        getattr(gp, op)(x, axis=1)
    with pytest.raises(TypeError, match="GPUArray"):
        getattr(gp, op)(np.ones(3), axis=0)


@pytest.mark.parametrize("op", REDUCTION_OPS)
def test_bad_axes_raise_naming_the_axis(op: str) -> None:
    x = gp.ones((2, 3))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        getattr(gp, op)(x, axis=2)
    with pytest.raises(ValueError, match="axis -3 is out of range"):
        getattr(gp, op)(x, axis=(0, -3))
    with pytest.raises(ValueError, match="repeated axis"):
        getattr(gp, op)(x, axis=(1, -1))
    with pytest.raises(TypeError, match="axis"):
        getattr(gp, op)(x, axis=1.0)
    with pytest.raises(TypeError, match="keepdims"):
        getattr(gp, op)(x, keepdims="yes")


def test_bad_dtype_and_correction_arguments() -> None:
    x = gp.ones((2, 3))
    with pytest.raises(TypeError, match="dtype must be a numeric dtype, got bool"):
        gp.sum(x, dtype="bool")
    with pytest.raises(TypeError, match="float8_e5m2"):
        gp.prod(x, dtype="float8_e5m2")
    with pytest.raises(ValueError, match="correction must be >= 0"):
        gp.var(x, correction=-1)
    with pytest.raises(TypeError, match="correction must be an int or float"):
        gp.std(x, correction="1")
    with pytest.raises(TypeError, match="sum_axis: axis must be an int"):
        gp.sum_axis(x, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        gp.sum(x, backend="nope")


SIGNATURES = {
    **{
        op: "(x, /, *, axis=None, dtype=None, keepdims=False, backend=None)"
        for op in ("sum", "prod")
    },
    **{
        op: "(x, /, *, axis=None, keepdims=False, backend=None)"
        for op in ("mean", "max", "min", "all", "any")
    },
    **{
        op: "(x, /, *, axis=None, correction=0.0, keepdims=False, backend=None)"
        for op in ("var", "std")
    },
    **{
        op: "(x, /, *, axis=None, dtype=None, include_initial=False, backend=None)"
        for op in ("cumulative_sum", "cumulative_prod")
    },
    "sum_axis": "(a, axis, *, backend=None)",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_array_api_signatures_and_explicit_backend(name: str) -> None:
    fn = getattr(gp, name)
    assert plain_signature(fn) == SIGNATURES[name]
    assert fn.__doc__ and "\n" not in fn.__doc__.strip()
    x = gp.asarray([[1.0, 2.0], [3.0, 4.0]])
    args = (x, 1) if name == "sum_axis" else (x,)
    kwargs = {} if name == "sum_axis" else {"axis": 1}
    assert fn(*args, backend="cpu", **kwargs).to_numpy().tolist() == (
        fn(*args, **kwargs).to_numpy().tolist()
    )


MY_KERNELS = (
    *REDUCTION_OPS, "cumulative_sum", "cumulative_prod", "argmax", "argmin", "count_nonzero",
    "nonzero", "searchsorted", "sort", "argsort", "unique",
)  # fmt: skip


@pytest.mark.parametrize("op", MY_KERNELS)
def test_cpu_kernels_declare_every_dtype_but_float8(op: str) -> None:
    x = gp.ones(3)
    assert kernel_for(op, x.device, (gp.bfloat16,)).provider == "cpu"
    with pytest.raises(gp.DispatchError, match="no kernel for dtype float8_e4m3fn"):
        kernel_for(op, x.device, (gp.float8_e4m3fn,), "cpu")
    for dtype in DTYPES.values():
        kernel_for(op, x.device, (dtype,), "cpu")
