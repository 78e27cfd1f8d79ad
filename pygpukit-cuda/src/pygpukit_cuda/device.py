"""The `cuda` device type: contexts per GPU, memory, host transfers, device facts."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from pygpukit import Device, DeviceBackend

from . import _loader, interop, streams, transfers
from .allocator import DevicePool, make_device_pool

_contexts: dict[int, Any] = {}
_allocators: dict[int, DevicePool] = {}
_lock = threading.Lock()


def context(index: int) -> Any:
    """The native Context (retained primary context) of GPU `index`, made on first use."""
    ctx = _contexts.get(index)
    if ctx is None:
        mod = _loader.driver()
        with _lock:
            ctx = _contexts.get(index)
            if ctx is None:
                count = mod.device_count()
                if not 0 <= index < count:
                    raise ValueError(f"no cuda:{index}: the driver sees {count} GPU(s)")
                ctx = _contexts[index] = mod.Context(index)
    return ctx


def allocator(index: int) -> DevicePool:
    """The memory pool of GPU `index`, made on first use."""
    alloc = _allocators.get(index)
    if alloc is None:
        ctx = context(index)
        with _lock:
            alloc = _allocators.get(index)
            if alloc is None:
                alloc = _allocators[index] = make_device_pool(ctx, f"cuda:{index}")
    return alloc


def driver_version_of() -> int:
    return int(_loader.driver().driver_version())


class CudaBackend(DeviceBackend):
    """NVIDIA GPUs through the CUDA driver API (no CUDA runtime, no Toolkit)."""

    type = "cuda"
    priority = 10  # a GPU, when present, is the default device

    def devices(self) -> list[Device]:
        return [Device("cuda", i) for i in range(_loader.device_count())]

    def status(self) -> str:
        try:
            mod = _loader.driver()
        except _loader.CudaUnavailable as exc:
            return str(exc)
        n = _loader.device_count()
        if n == 0:
            return f"{mod.driver_status()}, but it sees no GPU"
        return f"{n} GPU(s), {mod.driver_status()}"

    def allocate(self, device: Device, nbytes: int) -> Any:
        # Every new array comes through here. The block belongs to the current stream (the
        # pool is stream-ordered); while that stream captures a graph, to the graph's pool.
        s = streams._current.get()
        if s is None or s.device_index != device.index:
            alloc = _allocators.get(device.index) or allocator(device.index)
            return alloc.allocate(nbytes)
        pool = s.capture_pool or _allocators.get(device.index) or allocator(device.index)
        return pool.allocate(nbytes, s.ptr)

    # Transfers go to the current stream through the Rust copier (transfers.py); a
    # download waits for that stream only.
    def upload(self, buffer: Any, offset: int, host: np.ndarray) -> None:
        transfers.upload(buffer, offset, host)

    def download(self, buffer: Any, offset: int, out: np.ndarray) -> None:
        transfers.download(buffer, offset, out)

    # Zero-copy interchange (GPUArray.__dlpack__, __cuda_array_interface__, from_dlpack).
    dlpack = staticmethod(interop.dlpack)
    dlpack_device = staticmethod(interop.dlpack_device)
    dlpack_consumer_stream = staticmethod(interop.dlpack_consumer_stream)
    cuda_array_interface = staticmethod(interop.cuda_array_interface)
    adopt_foreign = staticmethod(interop.adopt_foreign)

    def synchronize(self, device: Device) -> None:
        context(device.index).synchronize()

    def memory_stats(self, device: Device) -> dict[str, Any]:
        stats = allocator(device.index).stats()
        free, total = context(device.index).memory_info()
        stats.update(device_free=int(free), device_total=int(total))
        return stats

    def free_cached(self, device: Device) -> int:
        """Return cached blocks of `device` to the driver; the bytes of device memory
        released. The transfer engine's pinned host staging is freed too (after the
        uploads still in flight), not counted here: it is host memory."""
        transfers.trim(device.index)
        return allocator(device.index).empty_cache()

    def info(self, device: Device) -> dict[str, Any]:
        mod = _loader.driver()
        ctx = context(device.index)
        major, minor = ctx.compute_capability()
        version = driver_version_of()
        return {
            "name": ctx.name(),
            "type": "cuda",
            "index": device.index,
            "compute_capability": f"{major}.{minor}",
            "arch": f"sm_{major}{minor}",
            "total_memory": int(ctx.total_memory()),
            "multiprocessors": ctx.attribute(mod.ATTR_MULTIPROCESSOR_COUNT),
            "l2_cache_bytes": ctx.attribute(mod.ATTR_L2_CACHE_SIZE),
            "max_shared_memory_per_block_optin": ctx.attribute(
                mod.ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
            ),
            "driver_version": f"{version // 1000}.{(version % 1000) // 10}",
            "nvrtc_version": ".".join(map(str, _loader.nvrtc_version() or ())) or None,
            "nvrtc_path": _loader.get_nvrtc_path(),
        }

    # Asked by pygpukit.is_nvrtc_available() / get_nvrtc_path() (pygpukit.device_info).
    def is_nvrtc_available(self) -> bool:
        return _loader.is_nvrtc_available()

    def get_nvrtc_path(self) -> str | None:
        return _loader.get_nvrtc_path()
