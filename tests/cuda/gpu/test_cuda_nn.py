"""The cuda provider's softmax, log_softmax, layernorm and rmsnorm against float64 NumPy:
each float dtype, rows from 1 to beyond the register cache (warp, block and streaming
paths), axes other than the last, strided views, mixed gamma dtypes, poisoned outputs."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit._plugins import registry
from pygpukit.testing import poison

pytestmark = pytest.mark.gpu

FLOATS = [dt.float16, dt.bfloat16, dt.float32, dt.float64]
RTOL = {"float64": 1e-10, "float32": 2e-5, "float16": 4e-3, "bfloat16": 3e-2}
SIZES = [1, 7, 512, 513, 4096, 5000, 16384, 20000]


def rows(d: dt.DataType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(0, 2, shape)
    return x.astype(np.float32).astype(d.to_numpy_dtype())


def ref(op: str, x: np.ndarray, axis: int, g: np.ndarray | None = None,
        b: np.ndarray | None = None, eps: float = 1e-5) -> np.ndarray:  # fmt: skip
    f = x.astype(np.float64)
    if op in ("softmax", "log_softmax"):
        s = f - f.max(axis=axis, keepdims=True)
        ls = np.log(np.exp(s).sum(axis=axis, keepdims=True))
        return np.exp(s - ls) if op == "softmax" else s - ls
    if op == "layernorm":
        c = f - f.mean(axis=-1, keepdims=True)
        return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + eps) * g + b
    return f / np.sqrt((f * f).mean(axis=-1, keepdims=True) + eps) * g


def check(got: gp.GPUArray, want: np.ndarray, name: str) -> None:
    rtol = RTOL[got.dtype.name]
    np.testing.assert_allclose(got.to_numpy().astype(np.float64), want, rtol=rtol, atol=rtol,
                               err_msg=name)  # fmt: skip


def call(op: str, x: gp.GPUArray, g: gp.GPUArray, b: gp.GPUArray, axis: int) -> gp.GPUArray:
    if op in ("softmax", "log_softmax"):
        return getattr(gp, op)(x, axis=axis)
    if op == "layernorm":
        return gp.layernorm(x, g, b, 1e-5)
    return gp.rmsnorm(x, g, 1e-5)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layernorm", "rmsnorm"])
@pytest.mark.parametrize("d", FLOATS, ids=lambda d: d.name)
def test_rows_of_every_length(op: str, d: dt.DataType) -> None:
    for i, n in enumerate(SIZES):
        host = rows(d, (3, n), seed=i)
        gh, bh = rows(d, (n,), seed=100 + i), rows(d, (n,), seed=200 + i)
        x, g, b = (gp.asarray(a, device="cuda") for a in (host, gh, bh))
        got = call(op, x, g, b, -1)
        check(got, ref(op, host, -1, gh.astype(np.float64), bh.astype(np.float64)), f"{op} n={n}")


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_other_axes_views_and_large_inputs(op: str) -> None:
    host = rows(dt.float32, (4, 9, 6), seed=1) * 300  # large: exp would overflow unshifted
    x = gp.asarray(host, device="cuda")
    for axis in (0, 1, 2):
        check(getattr(gp, op)(x, axis=axis), ref(op, host, axis), f"{op} axis={axis}")
    view = x[::-1, 1::2, :].transpose(2, 0, 1)
    hv = host[::-1, 1::2, :].transpose(2, 0, 1)
    check(getattr(gp, op)(view, axis=1), ref(op, hv, 1), f"{op} view")


def test_norms_with_mixed_dtypes_views_and_poisoned_outputs() -> None:
    host = rows(dt.float16, (5, 8, 300), seed=2)
    gh = rows(dt.float32, (600,), seed=3)[::2]
    bh = rows(dt.float64, (300,), seed=4)
    x = gp.asarray(host, device="cuda")[:, ::2]
    g = gp.asarray(rows(dt.float32, (600,), seed=3), device="cuda")[::2]
    b = gp.asarray(bh, device="cuda")
    hv = host[:, ::2]
    got = gp.layernorm(x, g, b)
    assert got.dtype is dt.float64
    check(got, ref("layernorm", hv, -1, gh.astype(np.float64), bh), "layernorm mixed")
    got = gp.rmsnorm(x, g)
    assert got.dtype is dt.float32
    check(got, ref("rmsnorm", hv, -1, gh.astype(np.float64)), "rmsnorm mixed")
    fns = registry().providers["cuda"].kernels
    for alternate in (False, True):
        out = poison(gp.empty((5, 4, 300), dtype=gp.float32, device="cuda"), alternate=alternate)
        fns["rmsnorm"].fn(x, g, out, 1e-5)
        check(out, ref("rmsnorm", hv, -1, gh.astype(np.float64)), "rmsnorm poisoned")
        out = poison(gp.empty((5, 4, 300), dtype=gp.float16, device="cuda"), alternate=alternate)
        fns["softmax"].fn(x, out, 2)
        check(out, ref("softmax", hv, 2), "softmax poisoned")


def test_many_rows_and_nan_rows() -> None:
    host = rows(dt.float32, (20000, 64), seed=5)
    host[7, 3] = np.nan
    got = gp.softmax(gp.asarray(host, device="cuda")).to_numpy()
    assert np.isnan(got[7]).all() and not np.isnan(np.delete(got, 7, axis=0)).any()
    np.testing.assert_allclose(np.delete(got, 7, axis=0),
                               np.delete(ref("softmax", host, -1), 7, axis=0), rtol=2e-5,
                               atol=1e-7)  # fmt: skip
