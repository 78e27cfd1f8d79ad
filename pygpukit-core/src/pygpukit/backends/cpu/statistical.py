"""CPU kernels of the reductions: NumPy reductions over keepdims-shaped outputs.

float16/bfloat16 data is widened to float32 before reducing (as a GPU accumulates it)
and rounded once when stored; integer means and variances are computed in float64.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._array import GPUArray
from ..._dtypes import ALL_DTYPES, COMPLEX_DTYPES
from ..._providers import KernelProvider
from .views import math_dtype, operand, view

#: every dtype but the storage-only float8 types
ACCEPTED = tuple(d for d in ALL_DTYPES if not d.is_float8)
#: and the complex dtypes, for the ops that do not order elements (sum, any, nonzero, ...)
WITH_COMPLEX = (*ACCEPTED, *COMPLEX_DTYPES)


def _count(x: GPUArray, axes: tuple[int, ...]) -> int:
    return math.prod(x.shape[a] for a in axes)


def _accumulate(fn: Any) -> Any:
    def kernel(x: GPUArray, out: GPUArray, axes: tuple[int, ...]) -> None:
        a = operand(x, out.dtype)  # the standard casts the input to the result dtype first
        with np.errstate(all="ignore"):
            view(out)[...] = fn(a, axis=axes, keepdims=True, dtype=a.dtype)

    return kernel


def _in_place_dtype(fn: Any) -> Any:
    """max/min/all/any: reduce the data as it is (half types widened exactly)."""

    def kernel(x: GPUArray, out: GPUArray, axes: tuple[int, ...]) -> None:
        view(out)[...] = fn(operand(x, x.dtype), axis=axes, keepdims=True)

    return kernel


def _float_operand(x: GPUArray, out: GPUArray) -> np.ndarray:
    """x as floats to average in: the output's math dtype, or float64 for integer input."""
    want = math_dtype(out.dtype) if x.dtype.is_inexact else np.dtype(np.float64)
    return view(x).astype(want, copy=False)


def mean(x: GPUArray, out: GPUArray, axes: tuple[int, ...]) -> None:
    a = _float_operand(x, out)
    with np.errstate(all="ignore"):  # no elements: 0 / 0 is NaN, as the standard asks
        view(out)[...] = np.sum(a, axis=axes, keepdims=True) / a.dtype.type(_count(x, axes))


def _variance(x: GPUArray, out: GPUArray, axes: tuple[int, ...], correction: float) -> Any:
    a = _float_operand(x, out)
    n = _count(x, axes)
    if n - correction <= 0:
        return np.full(out.shape, np.nan, dtype=a.dtype)
    with np.errstate(all="ignore"):  # inf input gives NaN, as in NumPy
        centred = a - np.sum(a, axis=axes, keepdims=True) / a.dtype.type(n)
        squares = np.sum(centred * centred, axis=axes, keepdims=True)
        return squares / a.dtype.type(n - correction)


def var(x: GPUArray, out: GPUArray, axes: tuple[int, ...], *, correction: float) -> None:
    view(out)[...] = _variance(x, out, axes, correction)


def std(x: GPUArray, out: GPUArray, axes: tuple[int, ...], *, correction: float) -> None:
    view(out)[...] = np.sqrt(_variance(x, out, axes, correction))


def _cumulative(fn: Any, initial: int) -> Any:
    def kernel(x: GPUArray, out: GPUArray, axis: int, include_initial: bool) -> None:
        a = operand(x, out.dtype)
        target = view(out)
        if include_initial:
            first = [slice(None)] * out.ndim
            first[axis] = slice(0, 1)
            target[tuple(first)] = initial
            first[axis] = slice(1, None)
            target = target[tuple(first)]
        with np.errstate(all="ignore"):
            target[...] = fn(a, axis=axis, dtype=a.dtype)

    return kernel


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the CPU provider."""
    kernels = {
        "sum": _accumulate(np.sum), "prod": _accumulate(np.prod),
        "max": _in_place_dtype(np.max), "min": _in_place_dtype(np.min),
        "all": _in_place_dtype(np.all), "any": _in_place_dtype(np.any),
        "mean": mean, "var": var, "std": std,
        "cumulative_sum": _cumulative(np.cumsum, 0),
        "cumulative_prod": _cumulative(np.cumprod, 1),
    }  # fmt: skip
    ordered = {"max", "min", "var", "std"}
    for op, fn in kernels.items():
        provider.add(op, fn, ACCEPTED if op in ordered else WITH_COMPLEX)
