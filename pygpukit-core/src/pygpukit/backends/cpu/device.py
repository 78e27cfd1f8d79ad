"""The CPU device: host memory, handed out and accounted for by the CPU pool."""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from ..._device import Device, DeviceBackend

_ALIGN = 64  # cache-line aligned blocks, so vector loads never straddle two lines

CPU = Device("cpu", 0)


class HostBuffer:
    """A block of host memory: `data` is its uint8 NumPy view."""

    __slots__ = ("data", "nbytes", "__weakref__")

    def __init__(self, nbytes: int) -> None:
        raw = np.empty(nbytes + _ALIGN, dtype=np.uint8)
        start = (-raw.ctypes.data) % _ALIGN
        self.data = raw[start : start + nbytes]
        self.nbytes = nbytes

    @property
    def ptr(self) -> int:
        return int(self.data.ctypes.data)


class CpuBackend(DeviceBackend):
    """Arrays in host memory; NumPy kernels run on them in place."""

    type = "cpu"
    priority = 0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats = {"used": 0, "peak": 0, "allocations": 0, "frees": 0, "live_blocks": 0}

    def devices(self) -> list[Device]:
        return [CPU]

    def status(self) -> str:
        return "host memory, NumPy kernels"

    def allocate(self, device: Device, nbytes: int) -> HostBuffer:
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative size ({nbytes} bytes)")
        try:
            buf = HostBuffer(nbytes)
        except MemoryError:
            raise MemoryError(
                f"CPU allocation of {nbytes} bytes failed ({self._stats['used']} bytes in use)"
            ) from None
        with self._lock:
            s = self._stats
            s["used"] += nbytes
            s["peak"] = max(s["peak"], s["used"])
            s["allocations"] += 1
            s["live_blocks"] += 1
        weakref.finalize(buf, self._release, nbytes)
        return buf

    def _release(self, nbytes: int) -> None:
        with self._lock:
            self._stats["used"] -= nbytes
            self._stats["frees"] += 1
            self._stats["live_blocks"] -= 1

    def upload(self, buffer: Any, offset: int, host: np.ndarray) -> None:
        n = host.nbytes
        buffer.data[offset : offset + n] = host.reshape(-1).view(np.uint8)

    def download(self, buffer: Any, offset: int, out: np.ndarray) -> None:
        n = out.nbytes
        out.reshape(-1).view(np.uint8)[:] = buffer.data[offset : offset + n]

    def memory_stats(self, device: Device) -> dict[str, Any]:
        with self._lock:
            return dict(self._stats)

    def info(self, device: Device) -> dict[str, Any]:
        import os
        import platform

        return {
            "name": platform.processor() or platform.machine(),
            "type": "cpu",
            "cores": os.cpu_count(),
            "numpy": np.__version__,
        }
