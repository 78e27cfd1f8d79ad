"""Memory accounting: each device's pool, as seen from Python."""

from __future__ import annotations

from typing import Any

from ._device import Device
from ._placement import backend_of, resolve_device


def stats(device: Device | str | None = None) -> dict[str, Any]:
    """The pool counters of `device` (default: the default device): used, peak, ..."""
    dev = resolve_device(device)
    return backend_of(dev).memory_stats(dev)


def free_all_cached(device: Device | str | None = None) -> int:
    """Return the pool's cached (free but held) blocks to the device; the bytes released."""
    dev = resolve_device(device)
    return backend_of(dev).free_cached(dev)
