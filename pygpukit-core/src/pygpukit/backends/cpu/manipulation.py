"""CPU kernels of the manipulation functions that move data (concat, roll, repeat)."""

from __future__ import annotations

import numpy as np

from ..._array import GPUArray
from ..._dtypes import EVERY_DTYPE
from ..._providers import KernelProvider
from .views import view


def concat(inputs: list[GPUArray], out: GPUArray, axis: int) -> None:
    target = view(out)
    lead = (slice(None),) * axis
    start = 0
    for x in inputs:
        n = x.shape[axis]
        key = (*lead, slice(start, start + n))
        target[key] = view(x)
        start += n


def roll(x: GPUArray, out: GPUArray, shifts: tuple[int, ...], axes: tuple[int, ...]) -> None:
    view(out)[...] = np.roll(view(x), shifts, axes)


def repeat(x: GPUArray, repeats: int | GPUArray, out: GPUArray, axis: int) -> None:
    counts = repeats if isinstance(repeats, int) else view(repeats).astype(np.int64)
    view(out)[...] = np.repeat(view(x), counts, axis=axis)


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the CPU provider."""
    provider.add("concat", concat, EVERY_DTYPE)
    provider.add("roll", roll, EVERY_DTYPE)
    provider.add("repeat", repeat, EVERY_DTYPE)
