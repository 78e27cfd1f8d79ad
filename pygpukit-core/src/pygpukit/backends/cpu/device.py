"""The CPU device: host memory, handed out and accounted for by the CPU pool."""

from __future__ import annotations

from typing import Any

import _pygpukit_rust as _rust
import numpy as np

from ..._device import Device, DeviceBackend

CPU = Device("cpu", 0)


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

    def devices(self) -> list[Device]:
        return [CPU]

    def status(self) -> str:
        return "host memory, NumPy kernels"

    def allocate(self, device: Device, nbytes: int) -> HostBuffer:
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative size ({nbytes} bytes)")
        # the pool refuses empty blocks; an empty array needs no memory at all
        return HostBuffer(self._pool.allocate(nbytes) if nbytes else None, nbytes)

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
