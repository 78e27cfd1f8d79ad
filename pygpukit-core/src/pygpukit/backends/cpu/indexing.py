"""CPU kernels of indexing: take, gather/scatter by index arrays, boolean masks.

Indices are bounds-checked on the host before any data moves, so a bad index raises
IndexError and leaves the arrays untouched.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._array import GPUArray
from ..._dtypes import EVERY_DTYPE
from ..._providers import KernelProvider
from .views import view


def _checked(indices: GPUArray, n: int, axis: int) -> np.ndarray:
    """The indices as int64 NumPy data; IndexError names the first one out of [-n, n)."""
    idx = view(indices).astype(np.int64, copy=False)
    if idx.size:
        bad = (idx < -n) | (idx >= n)
        if bad.any():
            raise IndexError(
                f"index {int(idx[bad].flat[0])} is out of bounds for axis {axis} with size {n}"
            )
    return idx


def take(x: GPUArray, indices: GPUArray, out: GPUArray, axis: int) -> None:
    idx = _checked(indices, x.shape[axis], axis)
    view(out)[...] = np.take(view(x), idx, axis=axis)


def take_along_axis(x: GPUArray, indices: GPUArray, out: GPUArray, axis: int) -> None:
    idx = _checked(indices, x.shape[axis], axis)
    view(out)[...] = np.take_along_axis(view(x), idx, axis=axis)


def _front(x: GPUArray, indices: list[GPUArray], axes: tuple[int, ...]) -> tuple[Any, ...]:
    """x's NumPy view with the indexed axes moved first, and the checked index tuple."""
    idx = tuple(_checked(i, x.shape[a], a) for i, a in zip(indices, axes, strict=True))
    moved = np.moveaxis(view(x), axes, tuple(range(len(axes))))
    return moved, idx


def gather(x: GPUArray, indices: list[GPUArray], axes: tuple[int, ...], out: GPUArray) -> None:
    moved, idx = _front(x, indices, axes)
    view(out)[...] = moved[idx]


def scatter(x: GPUArray, indices: list[GPUArray], axes: tuple[int, ...], values: GPUArray) -> None:
    moved, idx = _front(x, indices, axes)
    moved[idx] = view(values)


def mask_select(x: GPUArray, mask: GPUArray) -> GPUArray:
    m = view(mask).astype(bool, copy=False)
    picked = view(x)[m] if m.ndim else view(x)[np.newaxis][m.reshape(1)]
    out = GPUArray.empty(picked.shape, x.dtype, x.device)
    view(out)[...] = picked
    return out


def mask_assign(x: GPUArray, mask: GPUArray, value: Any) -> None:
    m = view(mask).astype(bool, copy=False)
    target = view(x) if m.ndim else view(x)[np.newaxis]
    m = m if m.ndim else m.reshape(1)
    if isinstance(value, GPUArray):
        count = int(m.sum())
        src = view(value)
        if src.ndim == target.ndim - m.ndim + 1 and src.shape[0] not in (1, count):
            raise ValueError(
                f"cannot assign an array of shape {value.shape} to the {count} elements "
                f"selected by a mask of shape {mask.shape}"
            )
        value = src
    with np.errstate(all="ignore"):
        target[m] = value


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the CPU provider."""
    for name, fn in (("take", take), ("take_along_axis", take_along_axis),
                     ("gather", gather), ("scatter", scatter),
                     ("mask_select", mask_select), ("mask_assign", mask_assign)):  # fmt: skip
        provider.add(name, fn, EVERY_DTYPE)
