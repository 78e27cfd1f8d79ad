"""PyGPUkit's CUDA backend: GPU arrays, NVRTC-compiled kernels and `pygpukit.jit`.

Installed next to ``pygpukit-core`` it registers, through the ``pygpukit`` entry point
(``pygpukit_cuda.plugin``), the device type ``cuda`` and the kernel provider ``cuda``. It
needs only the NVIDIA driver at run time; NVRTC (for compiling kernels) comes from the
``nvidia-cuda-nvrtc`` wheel, ``PYGPUKIT_NVRTC_PATH`` or a CUDA install.
"""

from __future__ import annotations

from ._loader import (
    driver_status,
    get_nvrtc_path,
    is_cuda_available,
    is_nvrtc_available,
    native_status,
    nvrtc_status,
)
from .errors import CudaContextLostError
from .jit_kernel import JitKernel, jit

__version__ = "0.1.0"

__all__ = [
    "CudaContextLostError",
    "JitKernel",
    "driver_status",
    "get_nvrtc_path",
    "is_cuda_available",
    "is_nvrtc_available",
    "jit",
    "native_status",
    "nvrtc_status",
]
