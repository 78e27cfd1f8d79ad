"""CPU kernels of the searching functions (half types are widened to float32, exactly)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._array import GPUArray
from ..._dtypes import INDEX_DTYPE, DataType
from ..._providers import KernelProvider
from .statistical import ACCEPTED, WITH_COMPLEX
from .views import operand, view


def _arg_extreme(fn: Any) -> Any:
    def kernel(x: GPUArray, out: GPUArray, axis: int | None) -> None:
        view(out)[...] = fn(operand(x, x.dtype), axis=axis, keepdims=True)

    return kernel


def count_nonzero(x: GPUArray, out: GPUArray, axes: tuple[int, ...]) -> None:
    view(out)[...] = np.count_nonzero(operand(x, x.dtype), axis=axes, keepdims=True)


def nonzero(x: GPUArray) -> tuple[GPUArray, ...]:
    found = np.nonzero(operand(x, x.dtype))
    result = []
    for indices in found:
        out = GPUArray.empty(indices.shape, INDEX_DTYPE, x.device)
        if out.size:
            view(out)[...] = indices
        result.append(out)
    return tuple(result)


def searchsorted(
    x1: GPUArray,
    x2: Any,
    out: GPUArray,
    side: str,
    sorter: GPUArray | None,
    compute: DataType,
) -> None:
    order = None if sorter is None else view(sorter)
    found = np.searchsorted(operand(x1, compute), operand(x2, compute), side, order)  # type: ignore[call-overload]
    view(out)[...] = found


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the CPU provider."""
    provider.add("argmax", _arg_extreme(np.argmax), ACCEPTED)
    provider.add("argmin", _arg_extreme(np.argmin), ACCEPTED)
    provider.add("count_nonzero", count_nonzero, WITH_COMPLEX)
    provider.add("nonzero", nonzero, WITH_COMPLEX)
    provider.add("searchsorted", searchsorted, ACCEPTED)
