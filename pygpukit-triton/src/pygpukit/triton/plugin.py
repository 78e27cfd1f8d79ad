"""The `triton` plugin's hooks: the kernel provider, `gp.triton`, and doctor's checks.

Importing this module does not import Triton; the provider asks for it when the registry
loads plugins, and registers refusing kernels (with the reason) where it is missing.
"""

from __future__ import annotations

from collections.abc import Callable

from pygpukit import KernelProvider, hookimpl

from . import availability


@hookimpl
def pygpukit_register_kernels(register: Callable[[KernelProvider], None]) -> None:
    from .provider import make_provider

    register(make_provider())


@hookimpl
def pygpukit_register_namespaces(register: Callable[[str, object], None]) -> None:
    from pygpukit import triton

    register("triton", triton)


@hookimpl
def pygpukit_diagnose(report: Callable[[str, bool, str], None]) -> None:
    ok, why = availability.status()
    report("triton (the triton kernel provider)", ok, why)
    if ok and not availability.interpret():
        try:
            from pygpukit_cuda import is_cuda_available

            cuda = bool(is_cuda_available())
        except ImportError as exc:
            cuda, detail = False, f"pygpukit-cuda missing ({exc}); pip install pygpukit-cuda"
        else:
            detail = "CUDA driver found" if cuda else "no CUDA driver: triton kernels need a GPU"
        report("triton launch path (pygpukit-cuda)", cuda, detail)
