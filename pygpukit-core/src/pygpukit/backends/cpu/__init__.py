"""The built-in CPU backend: host memory and NumPy kernels, registered as plugin `cpu`.

It is found through the `pygpukit` entry point like any third-party backend; it has no
special path in the core.
"""

from __future__ import annotations

from collections.abc import Callable

from ..._device import DeviceBackend
from ..._providers import KernelProvider
from ...hookspecs import hookimpl
from . import (
    copying,
    decode,
    elementwise,
    factorizations,
    fft,
    indexing,
    linalg,
    manipulation,
    nn,
    searching,
    sets,
    sorting,
    statistical,
)  # fmt: skip
from .device import CpuBackend

_backend = CpuBackend()


def make_provider() -> KernelProvider:
    provider = KernelProvider(
        "cpu", device_type="cpu", priority=0, description="NumPy kernels on host memory"
    )
    for module in (copying, decode, elementwise, factorizations, fft, indexing, linalg,
                   manipulation, nn, searching, sets, sorting, statistical):  # fmt: skip
        module.register(provider)
    return provider


@hookimpl
def pygpukit_register_devices(register: Callable[[DeviceBackend], None]) -> None:
    register(_backend)


@hookimpl
def pygpukit_register_kernels(register: Callable[[KernelProvider], None]) -> None:
    register(make_provider())
