"""complex64/complex128 on cuda against NumPy: casts, fill, parts, arithmetic (with scalars,
real operands, broadcasting and views), exp/log/sqrt, comparisons, where, sum/mean, matmul."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(7)
RTOL = {np.complex64: 2e-6, np.complex128: 1e-14}
DTYPES = [np.complex64, np.complex128]


def _c(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _check(got: gp.GPUArray, want: np.ndarray, rtol: float) -> None:
    g = got.to_numpy()
    assert g.dtype == want.dtype, (g.dtype, want.dtype)
    np.testing.assert_allclose(g, want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_casts_and_fill(dtype: type) -> None:
    real = RNG.standard_normal((4, 5)).astype(np.float32)
    x = gp.asarray(real, device="cuda")
    np.testing.assert_array_equal(x.astype(dtype).to_numpy(), real.astype(dtype))
    ints = gp.asarray(np.arange(6, dtype=np.int32), device="cuda")
    np.testing.assert_array_equal(ints.astype(dtype).to_numpy(), np.arange(6).astype(dtype))
    z = _c((3, 4), dtype)
    other = np.complex128 if dtype is np.complex64 else np.complex64
    np.testing.assert_array_equal(gp.asarray(z).astype(other).to_numpy(), z.astype(other))
    np.testing.assert_array_equal(gp.asarray(z)[:, ::2].copy().to_numpy(), z[:, ::2])
    full = gp.full((2, 3), 1.5 - 2j, dtype=dtype, device="cuda")
    np.testing.assert_array_equal(full.to_numpy(), np.full((2, 3), 1.5 - 2j, dtype=dtype))
    flags = np.array([0, 1j, -0.0, complex(np.nan, 0), 2 + 0j], dtype=dtype)
    np.testing.assert_array_equal(gp.asarray(flags).astype(gp.bool).to_numpy(), flags != 0)
    zeros = gp.zeros((5,), dtype=dtype, device="cuda")
    np.testing.assert_array_equal(zeros.to_numpy(), np.zeros(5, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_parts(dtype: type) -> None:
    z = _c((6, 7), dtype)
    x = gp.asarray(z, device="cuda")
    np.testing.assert_array_equal(gp.real(x).to_numpy(), z.real)
    np.testing.assert_array_equal(gp.imag(x).to_numpy(), z.imag)
    np.testing.assert_array_equal(gp.conj(x).to_numpy(), np.conj(z))
    np.testing.assert_array_equal((-x).to_numpy(), -z)
    _check(gp.abs(x), np.abs(z), RTOL[dtype])
    _check(gp.angle(x), np.angle(z), RTOL[dtype])
    np.testing.assert_array_equal(gp.real(x.mT).to_numpy(), z.T.real)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(_BINARY))
def test_arithmetic(dtype: type, op: str) -> None:
    fn = _BINARY[op]
    a, b = _c((5, 6), dtype), _c((5, 6), dtype)
    x, y = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
    rtol = RTOL[dtype] * 4
    _check(fn(x, y), fn(a, b), rtol)
    _check(fn(x, 2.5 - 0.5j), fn(a, dtype(2.5 - 0.5j)), rtol)  # a Python complex scalar
    _check(fn(3.0, y), fn(dtype(3.0), b), rtol)  # a real scalar on the left
    row = b[:1]
    _check(fn(x, gp.asarray(row, device="cuda")), fn(a, row), rtol)  # broadcast
    real = RNG.standard_normal((5, 6)).astype(np.float32)
    _check(fn(x, gp.asarray(real, device="cuda")), fn(a, real), rtol)  # promoted real operand
    _check(fn(x.mT, y.mT), fn(a.T, b.T), rtol)  # views


def test_divide_by_large_and_zero_divisors_like_numpy() -> None:
    a = np.array([1 + 1j, 1 + 1j, 2 - 3j, 1e300 + 1e300j], dtype=np.complex128)
    b = np.array([1e300 + 1e300j, 0j, 4e-310 + 0j, 1e300 - 1e300j], dtype=np.complex128)
    with np.errstate(all="ignore"):
        want = a / b
    got = (gp.asarray(a, device="cuda") / gp.asarray(b, device="cuda")).to_numpy()
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-14)
    assert np.array_equal(np.isinf(got), np.isinf(want))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "op",
    ["exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "square", "sinh", "cosh", "tanh",
     "sin", "cos", "tan"],
)  # fmt: skip
def test_transcendental(dtype: type, op: str) -> None:
    z = _c((64,), dtype)
    z[:4] = [0, -4 + 0j, 2j, -1e-3 - 0j]  # the branch cut and zero
    got = getattr(gp, op)(gp.asarray(z, device="cuda"))
    want = getattr(np, op)(z.astype(np.complex128)).astype(dtype)  # NumPy in double
    _check(got, want, RTOL[dtype] * 8)


@pytest.mark.parametrize("dtype", DTYPES)
def test_comparisons_and_finiteness(dtype: type) -> None:
    a = _c((8,), dtype)
    b = a.copy()
    b[::2] += 1j
    a[1] = complex(np.nan, 0)
    a[3] = complex(0, np.inf)
    x, y = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
    np.testing.assert_array_equal((x == y).to_numpy(), a == b)
    np.testing.assert_array_equal((x != y).to_numpy(), a != b)
    np.testing.assert_array_equal(gp.isnan(x).to_numpy(), np.isnan(a))
    np.testing.assert_array_equal(gp.isinf(x).to_numpy(), np.isinf(a))
    np.testing.assert_array_equal(gp.isfinite(x).to_numpy(), np.isfinite(a))


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_sum_mean(dtype: type) -> None:
    a, b = _c((6, 9), dtype), _c((6, 9), dtype)
    cond = RNG.standard_normal((6, 9)) > 0
    x, y = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
    c = gp.asarray(cond, device="cuda")
    np.testing.assert_array_equal(gp.where(c, x, y).to_numpy(), np.where(cond, a, b))
    rtol = RTOL[dtype] * 16
    _check(gp.sum(x), np.sum(a).astype(dtype), rtol)
    _check(gp.sum(x, axis=0), np.sum(a, axis=0), rtol)
    _check(gp.mean(x, axis=1), np.mean(a, axis=1), rtol)
    _check(gp.cumulative_sum(x, axis=1), np.cumsum(a, axis=1), rtol)
    small = (a / np.abs(a)).astype(dtype)  # unit moduli: the product neither grows nor fades
    z = gp.asarray(small, device="cuda")
    _check(gp.prod(z), np.prod(small.astype(np.complex128)).astype(dtype), rtol * 4)
    _check(gp.prod(z, axis=0), np.prod(small.astype(np.complex128), axis=0).astype(dtype),
           rtol)  # fmt: skip
    _check(gp.prod(z.mT, axis=1), np.prod(small.T.astype(np.complex128), axis=1).astype(dtype),
           rtol)  # fmt: skip
    big = _c((3, 5000), dtype) / np.float32(1.5)
    big = (big / np.abs(big)).astype(dtype)
    want = np.prod(big.astype(np.complex128), axis=1).astype(dtype)
    _check(gp.prod(gp.asarray(big, device="cuda"), axis=1), want, RTOL[dtype] * 2000)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [((7, 5), (5, 3)), ((2, 64, 33), (33, 17)), ((1, 9), (9, 1))])
def test_matmul_through_cublaslt(dtype: type, shape: tuple[tuple[int, ...], ...]) -> None:
    from pygpukit_cuda import cublaslt

    if cublaslt.library() is None:
        pytest.skip(cublaslt.status())
    a, b = _c(shape[0], dtype), _c(shape[1], dtype)
    x, y = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
    want = a.astype(np.complex128) @ b.astype(np.complex128)
    tol = 1e-5 if dtype is np.complex64 else 1e-12
    got = (x @ y).to_numpy()
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    got_t = (y.mT @ x.mT).to_numpy()  # transposed views: no conjugation, no copy
    np.testing.assert_allclose(got_t, np.swapaxes(want, -1, -2), rtol=tol,
                               atol=tol * np.abs(want).max())  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
def test_sign_logical_ops_and_truth_reductions(dtype: type) -> None:
    a = np.array([0, 1j, 2, -0.0, complex(np.inf, 1), complex(np.nan, 0), 3 - 4j], dtype=dtype)
    b = np.array([1, 0, 0j, 0, 1, 1j, 0], dtype=dtype)
    x, y = gp.asarray(a, device="cuda"), gp.asarray(b, device="cuda")
    np.testing.assert_allclose(gp.sign(x).to_numpy(), np.sign(a), rtol=RTOL[dtype] * 4)
    np.testing.assert_array_equal(gp.logical_not(x).to_numpy(), np.logical_not(a))
    for name in ("logical_and", "logical_or", "logical_xor"):
        got = getattr(gp, name)(x, y).to_numpy()
        np.testing.assert_array_equal(got, getattr(np, name)(a, b))
    assert bool(gp.any(x).to_numpy()) and not bool(gp.all(x).to_numpy())
    assert int(gp.count_nonzero(x).to_numpy()) == np.count_nonzero(a)
