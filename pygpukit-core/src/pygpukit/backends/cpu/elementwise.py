"""CPU kernels of the elementwise ops (NumPy ufuncs, evaluated in float32 for half types)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._array import GPUArray
from ..._dtypes import COMPLEX_DTYPES, EVERY_DTYPE, DataType
from ..._ops.elementwise import BINARY, COMPLEX_BINARY, COMPLEX_UNARY, UNARY
from ..._providers import KernelProvider
from .views import math_dtype, operand, view

_erf = np.frompyfunc(math.erf, 1, 1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp of a non-positive argument only, so large |x| neither overflows nor loses 1.0
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        c = math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + np.tanh(c * (x + 0.044715 * x**3)))
    # np.asarray: on a 0-d input the object ufunc returns a bare Python float
    erf = np.asarray(_erf(x / math.sqrt(2)), dtype=x.dtype)
    return (0.5 * x * (1 + erf)).astype(x.dtype)


def _expm1(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "c":
        return np.expm1(x)
    # NumPy's complex expm1 gets infinite parts wrong (inf + 0j gives inf + nanj);
    # exp(x) - 1 has the standard's special values there and loses nothing
    out = np.where(np.isfinite(x), np.expm1(x), np.exp(x) - 1)
    out.real[x == 0] = 0.0  # expm1(-0 + 0j) is +0 + 0j, as exp(x) - 1 gives
    return out


def _log1p(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "c":
        return np.log1p(x)
    # NumPy's complex log1p is log(1 + z) as written: near 0 it loses half the digits of a
    # complex128 and all of a complex64 (log1p(1e-10 + 0j) is 0 in complex64). There the
    # real part is log1p(2x + x^2 + y^2) / 2 (the cuda kernel's formula), in complex128;
    # NumPy's result stands elsewhere (its special values are the standard's).
    z = x.astype(np.complex128)
    out = np.array(np.log1p(z))  # an array even for 0-d input (its parts are set below)
    re, im = z.real, z.imag
    near = (np.abs(re) < 0.5) & (np.abs(im) < 0.5)
    out.real = np.where(near, 0.5 * np.log1p(re * (2 + re) + im * im), out.real)
    return out.astype(x.dtype)


def _tanh(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "c":
        return np.tanh(x)
    # the standard: tanh(+-inf + bj) = +-1 + 0j with the sign of b, for finite b
    edge = np.isinf(x.real) & np.isfinite(x.imag)
    limit = np.empty_like(x)  # parts set apart: complex arithmetic would lose -0.0
    limit.real = np.sign(x.real)
    limit.imag = np.copysign(0.0, x.imag)
    return np.where(edge, limit, np.tanh(x))


UNARY_IMPL: dict[str, Callable[..., Any]] = {
    "abs": np.abs, "negative": np.negative, "positive": np.positive, "square": np.square,
    "sign": np.sign, "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc, "round": np.rint,
    "relu": lambda x: np.maximum(x, x.dtype.type(0)),
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "exp": np.exp, "expm1": _expm1,
    "log": np.log, "log1p": _log1p, "log2": np.log2, "log10": np.log10,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": _tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "sigmoid": _sigmoid, "silu": lambda x: x * _sigmoid(x), "gelu": _gelu,
    "isfinite": np.isfinite, "isinf": np.isinf, "isnan": np.isnan, "signbit": np.signbit,
    "logical_not": np.logical_not, "bitwise_invert": np.invert,
}  # fmt: skip

BINARY_IMPL: dict[str, Callable[..., Any]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "pow": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "divide": np.true_divide,
    "atan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp,
    "copysign": np.copysign, "equal": np.equal, "not_equal": np.not_equal,
    "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "bitwise_left_shift": np.left_shift,
    "bitwise_right_shift": np.right_shift,
}  # fmt: skip


def _store(out: GPUArray, result: Any) -> None:
    view(out)[...] = result


def _unary_kernel(op: str) -> Callable[..., None]:
    fn = UNARY_IMPL[op]
    to_bool = UNARY[op][0] in ("to_bool", "logical")

    def kernel(x: GPUArray, out: GPUArray, **params: Any) -> None:
        # complex input: computed in its own dtype (abs of complex64 gives float32)
        compute: DataType = x.dtype if to_bool or x.dtype.is_complex else out.dtype
        with np.errstate(all="ignore"):
            result = fn(operand(x, compute), **params)
        _store(out, result)

    return kernel


def _binary_kernel(op: str) -> Callable[..., None]:
    fn = BINARY_IMPL[op]
    is_ufunc = isinstance(fn, np.ufunc)

    def kernel(x1: Any, x2: Any, out: GPUArray, compute: DataType) -> None:
        a = operand(x1, compute)
        b = operand(x2, compute)
        target = view(out)
        with np.errstate(all="ignore"):
            if is_ufunc and math_dtype(out.dtype) == target.dtype:
                fn(a, b, out=target)  # straight into the output's memory
            else:
                target[...] = fn(a, b)

    return kernel


def where(cond: GPUArray, x1: Any, x2: Any, out: GPUArray) -> None:
    a = operand(x1, out.dtype)
    b = operand(x2, out.dtype)
    _store(out, np.where(view(cond).astype(bool, copy=False), a, b))


def _part(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[GPUArray, GPUArray], None]:
    def kernel(x: GPUArray, out: GPUArray) -> None:
        _store(out, fn(view(x)))

    return kernel


def register(provider: KernelProvider) -> None:
    for op in UNARY:
        provider.add(op, _unary_kernel(op), EVERY_DTYPE if op in COMPLEX_UNARY else None)
    for op in BINARY:
        provider.add(op, _binary_kernel(op), EVERY_DTYPE if op in COMPLEX_BINARY else None)
    provider.add("where", where, EVERY_DTYPE)
    for op, fn in (("real", np.real), ("imag", np.imag), ("conj", np.conj), ("angle", np.angle)):
        provider.add(op, _part(fn), COMPLEX_DTYPES)
