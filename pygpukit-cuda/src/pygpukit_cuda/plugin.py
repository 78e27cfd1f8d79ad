"""The `cuda` plugin's hooks: the device type, the kernel provider, the user-kernel
namespaces (`jit`, `ElementwiseKernel`, `RawModule`, `RawKernel`, `cuda`), and diagnosis.

Loading this module touches no GPU: the driver is opened when the registry first asks the
backend for its devices, NVRTC at the first compile.
"""

from __future__ import annotations

from collections.abc import Callable

from pygpukit import DeviceBackend, KernelProvider, hookimpl

from . import diagnose
from ._loader import get_nvrtc_path, is_cuda_available, is_nvrtc_available
from .cuda_namespace import namespace as cuda_namespace
from .device import CudaBackend
from .elementwise_kernel import ElementwiseKernel
from .jit_kernel import jit
from .provider import make_provider
from .raw_module import RawModule, raw_kernel

_backend = CudaBackend()

__all__ = ["get_nvrtc_path", "is_cuda_available", "is_nvrtc_available", "jit"]


@hookimpl
def pygpukit_register_devices(register: Callable[[DeviceBackend], None]) -> None:
    register(_backend)


@hookimpl
def pygpukit_register_kernels(register: Callable[[KernelProvider], None]) -> None:
    register(make_provider())


@hookimpl
def pygpukit_register_namespaces(register: Callable[[str, object], None]) -> None:
    register("jit", jit)
    register("ElementwiseKernel", ElementwiseKernel)
    register("RawModule", RawModule)
    register("RawKernel", raw_kernel)
    register("cuda", cuda_namespace)


@hookimpl
def pygpukit_diagnose(report: Callable[[str, bool, str], None]) -> None:
    diagnose.run_checks(report)
