"""CPU kernels that create, copy and convert data."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._array import GPUArray
from ..._dtypes import EVERY_DTYPE
from ..._providers import KernelProvider
from .views import view


def copy(src: GPUArray, out: GPUArray) -> None:
    s = view(src)
    d = view(out)
    with np.errstate(all="ignore"):
        if s.dtype != d.dtype and _is_ml(s.dtype) and _is_ml(d.dtype):
            s = s.astype(np.float32)
        d[...] = s


def _is_ml(dtype: np.dtype[Any]) -> bool:
    return type(dtype).__module__.startswith("ml_dtypes") or dtype.name.startswith(
        ("bfloat16", "float8")
    )


def fill(out: GPUArray, value: bool | int | float | complex) -> None:
    with np.errstate(all="ignore"):
        view(out)[...] = value


def arange(out: GPUArray, start: int | float, step: int | float) -> None:
    n = out.shape[0]
    if all(isinstance(v, int) for v in (start, step)):
        values: Any = start + np.arange(n, dtype=np.int64) * step
    else:
        values = start + np.arange(n, dtype=np.float64) * step
    with np.errstate(all="ignore"):
        view(out)[...] = values


def linspace(
    out: GPUArray,
    start: int | float | complex,
    stop: int | float | complex,
    step: float | complex,
    endpoint: bool,
) -> None:
    n = out.shape[0]
    values = start + np.arange(n, dtype=np.float64) * step
    if endpoint and n > 1:
        values[-1] = stop  # exact, whatever the rounding of the steps
    view(out)[...] = values


def eye(out: GPUArray, k: int) -> None:
    rows, cols = out.shape
    view(out)[...] = np.eye(rows, cols, k, dtype=np.float64)


def tril(x: GPUArray, out: GPUArray, k: int) -> None:
    view(out)[...] = np.tril(view(x), k)


def triu(x: GPUArray, out: GPUArray, k: int) -> None:
    view(out)[...] = np.triu(view(x), k)


def register(provider: KernelProvider) -> None:
    for name, fn in (
        ("copy", copy),
        ("fill", fill),
        ("linspace", linspace),
        ("eye", eye),
        ("tril", tril),
        ("triu", triu),
    ):
        provider.add(name, fn, EVERY_DTYPE)
    provider.add("arange", arange)  # real dtypes only, as the standard's arange
