"""`pygpukit.core`: the seed's module tree (dtypes, array, stream, memory, device, backend),
kept so that code written for it runs; each module re-exports the real implementation."""

from typing import Any as _Any

from . import array, backend, device, dtypes, factory, memory, stream
from .array import GPUArray
from .device import DeviceInfo, get_device_info, is_cuda_available
from .dtypes import DataType, bfloat16, float16, float32, float64, int8, int16, int32, int64
from .factory import empty, from_numpy, ones, zeros
from .stream import Stream, StreamManager, default_stream


def __getattr__(name: str) -> _Any:
    """The seed's CUDA event names (None without the CUDA plugin, as in the seed)."""
    return getattr(stream, name)


__all__ = [
    "DataType", "DeviceInfo", "GPUArray", "Stream", "StreamManager", "array", "backend",
    "bfloat16", "default_stream", "device", "dtypes", "empty", "factory", "float16", "float32",
    "float64", "from_numpy", "get_device_info", "int16", "int32", "int64", "int8",
    "is_cuda_available", "memory", "ones", "stream", "zeros",
]  # fmt: skip
