"""CPU kernels of sort and argsort: NumPy's stable sort, with a stable descending order."""

from __future__ import annotations

import numpy as np

from ..._array import GPUArray
from ..._providers import KernelProvider
from .statistical import ACCEPTED
from .views import operand, view


def order(x: GPUArray, axis: int, descending: bool) -> np.ndarray:
    """Indices that sort x stably along `axis`; NaN counts as the largest value."""
    a = operand(x, x.dtype)  # half types widened to float32, exactly
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    # Reversed input, sorted ascending and read backwards: largest first, and equal
    # elements come out in their original order (plain reversal would flip them).
    n = a.shape[axis]
    backwards = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(backwards, axis)


def sort(x: GPUArray, out: GPUArray, axis: int, descending: bool, stable: bool) -> None:
    # gather the original elements, so -0.0/0.0 and NaN payloads keep their bits
    view(out)[...] = np.take_along_axis(view(x), order(x, axis, descending), axis)


def argsort(x: GPUArray, out: GPUArray, axis: int, descending: bool, stable: bool) -> None:
    view(out)[...] = order(x, axis, descending)


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the CPU provider."""
    provider.add("sort", sort, ACCEPTED)
    provider.add("argsort", argsort, ACCEPTED)
