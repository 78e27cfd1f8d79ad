"""The CPU device: host memory, handed out and accounted for by the CPU pool."""

from __future__ import annotations

from typing import Any

import _pygpukit_rust as _rust
import numpy as np

from ..._device import Device, DeviceBackend

CPU = Device("cpu", 0)

#: the pool may keep this many freed bytes for reuse, or as many as are in use if more;
#: beyond that its cache is handed back to the OS (a run with a 338 MB live peak once
#: ended with 1.2 GB cached)
CACHE_FLOOR = 256 * 1024**2
#: how often (in allocations) the cache is measured; large allocations always measure
_CHECK_EVERY = 256
_LARGE = 16 * 1024**2


class HostBuffer:
    """A block of host memory from the Rust pool; `data` is its uint8 NumPy view.

    The block goes back to the pool when the last array (or NumPy view) using it dies.
    """

    __slots__ = ("__weakref__", "block", "data", "nbytes")

    def __init__(self, block: Any, nbytes: int) -> None:
        self.block = block
        self.nbytes = nbytes
        self.data = (
            np.frombuffer(block, dtype=np.uint8)[:nbytes]
            if block is not None
            else (np.empty(0, dtype=np.uint8))
        )

    @property
    def ptr(self) -> int:
        return int(self.data.ctypes.data)


class CpuBackend(DeviceBackend):
    """Arrays in host memory; NumPy kernels run on them in place."""

    type = "cpu"
    priority = 0

    def __init__(self) -> None:
        self._pool = _rust.device_pool("cpu")
        self._since_check = 0

    def devices(self) -> list[Device]:
        return [CPU]

    def status(self) -> str:
        return "host memory, NumPy kernels"

    def allocate(self, device: Device, nbytes: int) -> HostBuffer:
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative size ({nbytes} bytes)")
        self._since_check += 1
        if self._since_check >= _CHECK_EVERY or nbytes >= _LARGE:
            self._since_check = 0
            self.trim_cache()
        # the pool refuses empty blocks; an empty array needs no memory at all
        return HostBuffer(self._pool.allocate(nbytes) if nbytes else None, nbytes)

    def trim_cache(self, limit: int | None = None) -> int:
        """Give cached (freed, kept for reuse) host memory back to the OS when there is
        more of it than ``max(limit, bytes in use)``; returns the bytes released."""
        stats = self._pool.stats()
        cached = int(stats.get("cached", 0))
        if cached > max(CACHE_FLOOR if limit is None else limit, int(stats.get("used", 0))):
            return int(self._pool.free_all_cached())
        return 0

    # Host transfers go through the pool's copy functions (Rust, GIL released), as a GPU's do.
    def upload(self, buffer: Any, offset: int, host: np.ndarray) -> None:
        if host.nbytes:
            self._pool.copy_from_host(buffer.block, host.reshape(-1).view(np.uint8), offset)

    def download(self, buffer: Any, offset: int, out: np.ndarray) -> None:
        if out.nbytes:
            self._pool.copy_to_host(buffer.block, out.reshape(-1).view(np.uint8), offset)

    def memory_stats(self, device: Device) -> dict[str, Any]:
        return dict(self._pool.stats())

    def free_cached(self, device: Device) -> int:
        return int(self._pool.free_all_cached())

    @property
    def pool(self) -> Any:
        """The Rust `MemoryPool` behind the CPU device."""
        return self._pool

    def info(self, device: Device) -> dict[str, Any]:
        import os
        import platform

        return {
            "name": platform.processor() or platform.machine(),
            "type": "cpu",
            "cores": os.cpu_count(),
            "numpy": np.__version__,
        }
