"""Memory accounting: each device's pool, as seen from Python."""

from __future__ import annotations

from typing import Any

from ._device import Device
from ._placement import backend_of, resolve_device


def stats(device: Device | str | None = None) -> dict[str, Any]:
    """The pool counters of `device` (default: the default device): used, peak, ..."""
    dev = resolve_device(device)
    return backend_of(dev).memory_stats(dev)
