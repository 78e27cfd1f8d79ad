"""`pygpukit.core.array`, the seed's module path for `GPUArray` (the class `gp.GPUArray`)."""

from .._array import GPUArray

__all__ = ["GPUArray"]
