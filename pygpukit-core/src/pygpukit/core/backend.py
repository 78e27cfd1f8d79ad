"""`pygpukit.core.backend`, the seed's module path for backend detection.

The seed had one native module and a CPU simulation; here each device type is served by a
plugin's `DeviceBackend` (CUDA by pygpukit-cuda, the CPU by NumPy in the core). These
functions answer the seed's questions from the plugin registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._device import Device, DeviceBackend
from .._placement import backend_of, default_device
from .._plugins import registry
from ..device_info import get_device_info, is_cuda_available

#: the seed's name for the base class of backends
Backend = DeviceBackend


@dataclass(frozen=True)
class DeviceProperties:
    """A device's name, memory and (for GPUs) compute capability and limits."""

    name: str
    total_memory: int
    compute_capability: tuple[int, int] | None = None
    multiprocessor_count: int = 0
    max_threads_per_block: int = 1024
    warp_size: int = 32


def get_backend(device: Device | str | None = None) -> DeviceBackend:
    """The backend serving `device` (default: the default device, a GPU when present)."""
    return backend_of(default_device() if device is None else Device.parse(device))


def get_device_properties(device: Device | str | None = None) -> DeviceProperties:
    """`DeviceProperties` of `device` from its backend's ``info()``."""
    info = get_device_info(device)
    cc = info.get("compute_capability")
    return DeviceProperties(
        name=str(info.get("name", "")),
        total_memory=int(info.get("total_memory", 0) or 0),
        compute_capability=(int(cc[0]), int(cc[1])) if cc else None,
        multiprocessor_count=int(info.get("multiprocessor_count", info.get("cores", 0)) or 0),
        max_threads_per_block=int(info.get("max_threads_per_block", 1024)),
        warp_size=int(info.get("warp_size", 32)),
    )


def has_native_module() -> bool:
    """True when the CUDA plugin is loaded (the seed's native module had its job)."""
    return "cuda" in registry().devices


def get_native_module() -> Any:
    """The CUDA plugin's namespace (``gp.cuda``); RuntimeError saying how to get it."""
    import pygpukit

    try:
        return pygpukit.cuda
    except AttributeError as exc:
        raise RuntimeError(str(exc)) from None


def is_gpu_backend() -> bool:
    """True when the default device is a GPU (False: arrays live on the CPU)."""
    return default_device().type != "cpu"


__all__ = [
    "Backend", "DeviceProperties", "get_backend", "get_device_properties", "has_native_module",
    "get_native_module", "is_cuda_available", "is_gpu_backend",
]  # fmt: skip
