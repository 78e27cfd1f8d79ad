"""Every elementwise op on the GPU against the NumPy CPU backend, across dtypes, with
strided views, broadcasting, scalars and poisoned outputs."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit._ops.elementwise import BINARY, UNARY
from pygpukit._plugins import registry
from pygpukit.testing import poison
from pygpukit_cuda.kernels.source import binary_cases, unary_cases

pytestmark = pytest.mark.gpu

TRANSCENDENTAL = {
    "sqrt", "rsqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid",
    "silu", "gelu", "atan2", "hypot", "logaddexp", "pow", "divide",
}  # fmt: skip
RTOL = {"float64": 1e-12, "float32": 2e-6, "float16": 1e-3, "bfloat16": 8e-3}


def values(dtype: dt.DataType, shape: tuple[int, ...], op: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    npd = dtype.to_numpy_dtype()
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.is_integer:
        lo, hi = (0, 8) if "shift" in op or op == "pow" else (-100, 100)
        if dtype.kind == "u":
            lo = max(lo, 0)
        if op in ("sqrt", "log", "log2", "log10", "rsqrt", "acosh") or op == "pow":
            lo = max(lo, 1)
        return rng.integers(lo, hi, shape).astype(npd)
    x = rng.uniform(-3, 3, shape)
    if op in ("sqrt", "log", "log2", "log10", "rsqrt", "pow"):
        x = np.abs(x) + 0.1
    if op in ("asin", "acos", "atanh"):
        x = x / 3.5
    if op == "acosh":
        x = np.abs(x) + 1.1
    if op == "log1p":
        x = np.abs(x)
    x = x.astype(np.float32).astype(npd)
    if op not in ("pow",):
        x.flat[:3] = [np.nan, np.inf, -0.0] if x.size >= 3 else x.flat[:3]
    return x


def check(op: str, got: gp.GPUArray, want: np.ndarray) -> None:
    g = got.to_numpy()
    assert g.shape == want.shape and g.dtype == want.dtype, (g.dtype, want.dtype)
    if g.dtype.kind == "b" or np.issubdtype(g.dtype, np.integer):
        np.testing.assert_array_equal(g, want, err_msg=op)
        return
    rtol = RTOL[got.dtype.name] * (4 if op in TRANSCENDENTAL else 1)
    g32, w32 = g.astype(np.float64), want.astype(np.float64)
    atol = rtol if got.dtype.name in ("float16", "bfloat16") else rtol * 1e-3
    np.testing.assert_allclose(g32, w32, rtol=rtol, atol=atol, equal_nan=True, err_msg=op)


def cpu(x: gp.GPUArray) -> gp.GPUArray:
    return x.to_device("cpu")


def provider_kernel(name: str, op: str):  # type: ignore[no-untyped-def]
    return registry().providers[name].kernels[op].fn


UNARY_CASES = [(op, c) for op in UNARY for c, _ in unary_cases(op)]


@pytest.mark.parametrize(("op", "dtype"), UNARY_CASES, ids=lambda v: getattr(v, "name", v))
def test_unary_op_matches_cpu(op: str, dtype: dt.DataType) -> None:
    host = values(dtype, (5, 12), op, seed=len(op))
    x = gp.asarray(host, device="cuda")[:, 1::2]  # a strided view
    fn = getattr(gp, op)
    want = fn(cpu(x)).to_numpy()
    check(op, fn(x), want)
    # the provider kernel writes every element of a poisoned output
    out = poison(gp.empty(want.shape, dtype=gp.asarray(want[:0]).dtype, device="cuda"))
    provider_kernel("cuda", op)(x, out)
    check(op, out, want)


def test_gelu_tanh_and_int_input_to_float_ops() -> None:
    host = values(dt.float32, (64,), "gelu", 3)
    x = gp.asarray(host, device="cuda")
    check("gelu", gp.gelu(x, approximate="tanh"), gp.gelu(cpu(x), approximate="tanh").to_numpy())
    i = gp.asarray(np.arange(1, 20, dtype=np.int32), device="cuda")
    check("sqrt", gp.sqrt(i), gp.sqrt(cpu(i)).to_numpy())


BINARY_CASES = [(op, c) for op in BINARY for c, _ in binary_cases(op)]


@pytest.mark.parametrize(("op", "dtype"), BINARY_CASES, ids=lambda v: getattr(v, "name", v))
def test_binary_op_matches_cpu_with_broadcasting_and_scalars(op: str, dtype: dt.DataType) -> None:
    a_host = values(dtype, (4, 1, 6), op, seed=1)
    b_host = values(dtype, (3, 6), op, seed=2)
    if op in ("floor_divide", "remainder") and dtype.is_integer:
        b_host[b_host == 0] = 3
    a = gp.asarray(a_host, device="cuda")
    b = gp.asarray(np.ascontiguousarray(b_host.T), device="cuda").T  # transposed view
    fn = getattr(gp, op)
    check(op, fn(a, b), fn(cpu(a), cpu(b)).to_numpy())
    scalar = True if dtype.kind == "b" else (2 if dtype.is_integer else 1.5)
    check(op, fn(a, scalar), fn(cpu(a), scalar).to_numpy())
    check(op, fn(scalar, b), fn(scalar, cpu(b)).to_numpy())


@pytest.mark.parametrize("dtype", [dt.float32, dt.float16, dt.int32, dt.bool_],
                         ids=lambda d: d.name)  # fmt: skip
def test_where_with_broadcasting_and_scalars(dtype: dt.DataType) -> None:
    cond = gp.asarray(np.random.default_rng(0).random((4, 5)) < 0.5, device="cuda")
    a = gp.asarray(values(dtype, (1, 5), "where", 1), device="cuda")
    b = gp.asarray(values(dtype, (4, 1), "where", 2), device="cuda")
    check("where", gp.where(cond, a, b), gp.where(cpu(cond), cpu(a), cpu(b)).to_numpy())
    s = True if dtype.kind == "b" else 3
    check("where", gp.where(cond, a, s), gp.where(cpu(cond), cpu(a), s).to_numpy())


def test_mixed_dtypes_promote_and_inplace_ops() -> None:
    a = gp.asarray(np.arange(12, dtype=np.int8).reshape(3, 4), device="cuda")
    b = gp.asarray(np.linspace(-1, 1, 4, dtype=np.float32), device="cuda")
    check("add", a + b, (cpu(a) + cpu(b)).to_numpy())
    h = gp.asarray(np.linspace(-2, 2, 12).astype(np.float16).reshape(3, 4), device="cuda")
    check("multiply", h * b, (cpu(h) * cpu(b)).to_numpy())
    x = gp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device="cuda")
    want = x.to_numpy() * 2 + 1
    x *= 2
    x += 1
    check("add", x, want)


CAST_DTYPES = dt.ALL_DTYPES


@pytest.mark.parametrize("src", CAST_DTYPES, ids=lambda d: d.name)
def test_astype_every_pair_matches_cpu(src: dt.DataType) -> None:
    host = values(src, (3, 8), "copy", seed=5)
    if src.is_floating:
        host = np.where(np.isfinite(host.astype(np.float32)), host, 0).astype(host.dtype)
        host = (np.abs(host.astype(np.float32)) if True else host).astype(host.dtype)
    x = gp.asarray(host, device="cuda")[:, ::2]
    for dst in CAST_DTYPES:
        got = x.astype(dst).to_numpy()
        want = cpu(x).astype(dst).to_numpy()
        if dst.is_floating:
            np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64),
                                          err_msg=f"{src.name}->{dst.name}")  # fmt: skip
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{src.name}->{dst.name}")


def test_special_float_conversions() -> None:
    specials = np.array(
        [0.0, -0.0, 1.0, 448.0, 464.0, 465.0, 1e6, -1e6, 6e-5, 1e-9, np.inf, -np.inf,
         65504.0, 65520.0, 1 + 2**-8 + 2**-30],
        dtype=np.float64,
    )  # fmt: skip
    x = gp.asarray(specials, device="cuda")
    for dst in (dt.float16, dt.bfloat16, dt.float8_e4m3fn, dt.float8_e5m2, dt.float32):
        got = x.astype(dst).to_numpy().astype(np.float64)
        want = cpu(x).astype(dst).to_numpy().astype(np.float64)
        np.testing.assert_array_equal(got, want, err_msg=dst.name)
