"""`pygpukit.core.memory`, the seed's module path for memory utilities: pool counters,
freeing the cache, and copies between host and device."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._array import GPUArray
from .._device import Device
from .._ops.copying import assign
from .._placement import backend_of, resolve_device
from ..memory import free_all_cached, stats


def copy_to_host(x: GPUArray) -> np.ndarray:
    """A NumPy copy of `x` (waits for the work that writes it)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"copy_to_host wants a GPUArray, got {type(x).__name__}")
    return x.to_numpy()


def copy_to_device(host: Any, device: Device | str | None = None) -> GPUArray:
    """`host` (anything NumPy can read) copied to `device` (default: the default device)."""
    return GPUArray.from_numpy(np.asarray(host), device)


def copy(src: GPUArray, dst: GPUArray) -> None:
    """Copy `src` into `dst` (same shape, or broadcastable to it), converting the dtype."""
    if not isinstance(src, GPUArray) or not isinstance(dst, GPUArray):
        raise TypeError(
            f"copy wants two GPUArrays, got {type(src).__name__} and {type(dst).__name__}"
        )
    assign(dst, src)


def synchronize(device: Device | str | None = None) -> None:
    """Wait until the work queued on `device` (default: the default device) is done."""
    dev = resolve_device(device)
    backend_of(dev).synchronize(dev)


__all__ = ["copy", "copy_to_device", "copy_to_host", "free_all_cached", "stats", "synchronize"]
