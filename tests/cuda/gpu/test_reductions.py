"""The cuda provider's reductions, arg-reductions and scans against float64 NumPy references:
every accepted dtype, strided views, several axes and keepdims, the split (multi-block)
paths, empty and size-1 cases, poisoned outputs and refusals before launch."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit._plugins import registry
from pygpukit.testing import poison

pytestmark = pytest.mark.gpu

ACCEPTED = [d for d in dt.ALL_DTYPES if not d.is_float8]
RTOL = {"float64": 1e-10, "float32": 1e-5, "float16": 4e-3, "bfloat16": 3e-2}
OPS = ("sum", "prod", "mean", "var", "std", "max", "min", "all", "any", "count_nonzero")


@pytest.fixture(scope="module", autouse=True)
def warm_kernels() -> None:
    """Compile this file's instances in parallel into the disk cache (the conformance
    step of the device round reuses them)."""
    from pygpukit_cuda import compiler
    from pygpukit_cuda.kernels import reduction_source as rs
    from pygpukit_cuda.launcher import target_for

    target = target_for(0)
    srcs = [rs.reduction_kernel(op, d, rs.default_out(op, d)).source
            for op in rs.REDUCTION_OPS for d in ACCEPTED]  # fmt: skip
    srcs += [rs.scan_kernel(op, d, rs.default_out(op, d))[1]
             for op in ("cumulative_sum", "cumulative_prod") for d in ACCEPTED]  # fmt: skip
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        list(pool.map(lambda s: compiler.compile_source(s, "warm", target), srcs))


def kernel(op: str):  # type: ignore[no-untyped-def]
    return registry().providers["cuda"].kernels[op].fn


def data(d: dt.DataType, shape: tuple[int, ...], seed: int, op: str = "") -> np.ndarray:
    rng = np.random.default_rng(seed)
    if d.kind == "b":
        return rng.random(shape) < (0.9 if op == "all" else 0.3)
    if d.is_integer:
        lo = 0 if d.kind == "u" else -3
        hi = 3 if op == "prod" else 100
        return rng.integers(lo, hi, shape).astype(d.to_numpy_dtype())
    x = rng.uniform(-2, 2, shape)
    if op == "prod":  # near 1 in magnitude: no overflow over a few hundred factors
        x = np.sign(x) * rng.uniform(0.95, 1.05, shape)
    if op in ("all", "any", "count_nonzero"):
        x = np.round(x)
    return x.astype(np.float32).astype(d.to_numpy_dtype())


def reference(op: str, h: np.ndarray, axes: tuple[int, ...], correction: float = 0.0) -> np.ndarray:
    kw = {"axis": axes, "keepdims": True}
    wide = h.astype(np.int64) if h.dtype.kind in "biu" else h.astype(np.float64)
    with np.errstate(all="ignore"):
        if op in ("sum", "prod"):
            return (np.sum if op == "sum" else np.prod)(wide, **kw)
        f = h.astype(np.float64)
        if op == "mean":
            return np.mean(f, **kw)
        if op in ("var", "std"):
            n = int(np.prod([h.shape[a] for a in axes]))
            if n - correction <= 0:
                return np.full(np.mean(f, **kw).shape, np.nan)
            v = np.sum((f - np.mean(f, **kw)) ** 2, **kw) / (n - correction)
            return np.sqrt(v) if op == "std" else v
        if op in ("max", "min"):
            return (np.max if op == "max" else np.min)(wide, **kw)
        if op in ("all", "any"):
            return (np.all if op == "all" else np.any)(f != 0, **kw)
        return np.sum(f != 0, **kw).astype(np.int64)


def check(got: gp.GPUArray, want: np.ndarray, name: str, rtol: float = 0.0) -> None:
    g = got.to_numpy()
    assert g.shape == want.shape, (name, g.shape, want.shape)
    if got.dtype.is_floating:
        rtol = rtol or RTOL[got.dtype.name]
        np.testing.assert_allclose(g.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=rtol, equal_nan=True, err_msg=name)  # fmt: skip
    else:
        np.testing.assert_array_equal(g, want.astype(g.dtype), err_msg=name)


VIEWS = {
    "contiguous": (lambda a: a, (4, 6, 10)),
    "strided": (lambda a: a[:, ::2, 1::3], (4, 12, 30)),
    "transposed": (lambda a: a.transpose(2, 0, 1), (4, 6, 10)),
    "broadcast": (lambda a: np.broadcast_to(a, (4, 6, 10)), (1, 6, 10)),
}
AXES = [None, 0, 2, (0, 2), (1, 2), ()]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("d", ACCEPTED, ids=lambda d: d.name)
def test_reduction_matches_numpy(op: str, d: dt.DataType) -> None:
    for i, (label, (make, parent)) in enumerate(VIEWS.items()):
        host = data(d, parent, seed=i, op=op)
        g = (
            make(gp.asarray(host, device="cuda"))
            if label != "broadcast"
            else gp.broadcast_to(gp.asarray(host, device="cuda"), (4, 6, 10))
        )
        h = make(host)
        for j, axis in enumerate(AXES):
            axes = tuple(range(3)) if axis is None else ((axis,) if isinstance(axis, int) else axis)
            keep = j % 2 == 0
            params = {"correction": 1.0} if op in ("var", "std") and j % 3 == 1 else {}
            got = getattr(gp, op)(g, axis=axis, keepdims=keep, **params)
            want = reference(op, h, axes, params.get("correction", 0.0))
            if not keep:
                want = want.reshape(tuple(n for k, n in enumerate(h.shape) if k not in axes))
            check(got, want, f"{op} {d.name} {label} axis={axis}")


@pytest.mark.parametrize("op", ["sum", "mean", "var", "max", "argmax", "count_nonzero"])
@pytest.mark.parametrize("shape_axis", [((3, 70001), 1), ((70001, 3), 0), ((257, 4099), 1),
                                        ((4099, 257), 0), ((1 << 20,), 0)])  # fmt: skip
def test_split_paths_and_poisoned_outputs(op: str, shape_axis: tuple) -> None:
    shape, axis = shape_axis
    host = data(dt.float32, shape, seed=7)
    x = gp.asarray(host, device="cuda")
    out_shape = tuple(1 if k == axis else n for k, n in enumerate(shape))
    out_dtype = dt.int64 if op in ("argmax", "count_nonzero") else dt.float32
    for alternate in (False, True):
        out = poison(gp.empty(out_shape, dtype=out_dtype, device="cuda"), alternate=alternate)
        if op == "argmax":
            kernel(op)(x, out, axis)
            want = np.argmax(host, axis=axis, keepdims=True)
        else:
            kernel(op)(x, out, (axis,), **({"correction": 0.0} if op == "var" else {}))
            want = reference(op, host, (axis,))
        check(out, want, f"{op} {shape} axis={axis}", rtol=1e-4)  # long float32 sums


def test_full_sum_of_2_24_elements() -> None:
    host = np.random.default_rng(3).uniform(0, 1, 1 << 24).astype(np.float32)
    got = float(gp.sum(gp.asarray(host, device="cuda")).to_numpy())
    want = float(np.sum(host.astype(np.float64)))
    assert abs(got - want) <= 1e-5 * want
    h16 = host[: 1 << 22].astype(np.float16)
    got16 = float(gp.sum(gp.asarray(h16, device="cuda")).to_numpy())
    assert abs(got16 - float(np.sum(h16.astype(np.float64)))) <= 2e-3 * got16


@pytest.mark.parametrize("d", [dt.float16, dt.bfloat16, dt.float32, dt.float64, dt.int8,
                               dt.uint8, dt.int64, dt.bool_], ids=lambda d: d.name)  # fmt: skip
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_first_occurrence_and_nan(d: dt.DataType, op: str) -> None:
    host = data(d, (6, 40), seed=11)
    if d.is_floating:
        host[2, 5] = host[2, 30] = np.nan
        host[4, :] = host[4, 0]  # ties: the first index wins
    fn = getattr(np, op)
    g = gp.asarray(host, device="cuda")
    for axis in (None, 0, 1):
        want = fn(host.astype(np.float64) if d.is_floating else host, axis=axis)
        np.testing.assert_array_equal(getattr(gp, op)(g, axis=axis).to_numpy(), want)
    view = g[::-1, 3::2]
    np.testing.assert_array_equal(getattr(gp, op)(view, axis=1).to_numpy(),
                                  fn(host[::-1, 3::2].astype(np.float64), axis=1))  # fmt: skip


def test_nan_and_inf_propagate_like_numpy() -> None:
    host = np.array([[1.0, np.nan, 3.0], [np.inf, 2.0, 1.0], [1.0, 2.0, 3.0]], np.float32)
    g = gp.asarray(host, device="cuda")
    for op in ("sum", "max", "min", "mean", "var", "std"):
        want = getattr(np, op)(host.astype(np.float64), axis=1)
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(getattr(gp, op)(g, axis=1).to_numpy(), want, rtol=1e-6,
                                       equal_nan=True, err_msg=op)  # fmt: skip


def test_empty_and_size_one() -> None:
    e = gp.asarray(np.zeros((3, 0), np.float32), device="cuda")
    np.testing.assert_array_equal(gp.sum(e, axis=1).to_numpy(), np.zeros(3))
    np.testing.assert_array_equal(gp.prod(e, axis=1).to_numpy(), np.ones(3))
    assert np.isnan(gp.mean(e, axis=1).to_numpy()).all()
    np.testing.assert_array_equal(gp.all(e, axis=1).to_numpy(), np.ones(3, bool))
    np.testing.assert_array_equal(gp.count_nonzero(e, axis=1).to_numpy(), np.zeros(3))
    with pytest.raises(ValueError, match="axis 1 of length 0"):
        gp.max(e, axis=1)
    one = gp.asarray(np.array([2.5], np.float64), device="cuda")
    assert float(gp.sum(one).to_numpy()) == 2.5 and np.isnan(
        float(gp.var(one, correction=1).to_numpy())
    )
    scalar = gp.asarray(np.array(7, np.int32), device="cuda")
    assert int(gp.sum(scalar).to_numpy()) == 7 and int(gp.argmax(scalar).to_numpy()) == 0


def test_dtype_argument_casts_first() -> None:
    host = np.array([1.7, 2.6, -3.9, 300.2], np.float32)
    g = gp.asarray(host, device="cuda")
    assert int(gp.sum(g, dtype=gp.int32).to_numpy()) == int(host.astype(np.int32).sum())
    got = float(gp.sum(g, dtype=gp.float16).to_numpy())
    assert abs(got - float(host.astype(np.float16).astype(np.float64).sum())) <= 0.25
    big = gp.asarray(np.full(3, 2**62, np.int64), device="cuda")
    assert int(gp.sum(big).to_numpy()) == int(np.sum(np.full(3, 2**62, np.int64)))  # wraps


@pytest.mark.parametrize("op", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("d", ACCEPTED, ids=lambda d: d.name)
def test_cumulative_matches_numpy(op: str, d: dt.DataType) -> None:
    host = data(d, (5, 70), seed=5, op="prod" if op == "cumulative_prod" else "")
    if op == "cumulative_prod" and d.is_floating:
        host = np.where(np.abs(host.astype(np.float64)) < 0.9, 1.0, host / 1.5).astype(host.dtype)
    fn = np.cumsum if op == "cumulative_sum" else np.cumprod
    g = gp.asarray(host, device="cuda")
    for axis, view, hv in (
        (1, g, host),
        (0, g[:, ::3], host[:, ::3]),
        (1, g.T[::-1], host.T[::-1]),
    ):
        for include in (False, True):
            got = getattr(gp, op)(view, axis=axis, include_initial=include)
            wide = hv.astype(np.int64) if hv.dtype.kind in "biu" else hv.astype(np.float64)
            want = fn(wide, axis=axis)
            if include:
                first = np.zeros_like(np.take(want, [0], axis=axis)) + (op == "cumulative_prod")
                want = np.concatenate([first, want], axis=axis)
            check(got, want, f"{op} {d.name} axis={axis} include={include}")


def test_long_scan_and_refusals() -> None:
    host = np.random.default_rng(1).uniform(0, 1, 100_003).astype(np.float64)
    got = gp.cumulative_sum(gp.asarray(host, device="cuda")).to_numpy()
    np.testing.assert_allclose(got, np.cumsum(host), rtol=1e-12)
    f8 = gp.asarray(np.ones(4, np.float32), device="cuda").astype(gp.float8_e4m3fn)
    out = gp.empty((1,), dtype=gp.float32, device="cuda")
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        kernel("sum")(f8, out, (0,))
