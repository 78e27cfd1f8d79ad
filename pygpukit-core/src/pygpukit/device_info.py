"""What hardware and toolchain this process can use: CUDA, NVRTC, and facts about a device.

PyGPUkit's core knows no CUDA itself; plugins do. The CUDA questions are put to them:

- CUDA is available when a registered device backend of type ``"cuda"`` reports devices.
- NVRTC (the runtime compiler behind ``pygpukit.jit``) is asked of the plugins through two
  optional methods, ``is_nvrtc_available() -> bool`` and ``get_nvrtc_path() -> str | None``,
  looked up first on the ``"cuda"`` device backend, then on the other device backends, then
  on the registered namespaces (``pygpukit.cuda``, ``pygpukit.jit``, ...). The first object
  that has the method answers. With no such plugin the answers are False and None.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

from ._device import Device
from ._placement import backend_of, resolve_device
from ._plugins import registry

__all__ = ["get_device_info", "get_nvrtc_path", "is_cuda_available", "is_nvrtc_available"]


def _ask(obj: object, method: str) -> tuple[bool, Any]:
    """(answered, value) from `obj.method()`; a plugin that raises is reported, not fatal."""
    fn = getattr(obj, method, None)
    if not callable(fn):
        return False, None
    try:
        return True, fn()
    except Exception as exc:  # an availability probe must not break the caller
        warnings.warn(
            f"{type(obj).__name__}.{method}() raised {type(exc).__name__}: {exc}; "
            "treating NVRTC as unavailable",
            RuntimeWarning,
            stacklevel=3,
        )
        return True, None


def _nvrtc_sources() -> Iterator[object]:
    """Where NVRTC questions go, most specific first."""
    reg = registry()
    cuda = reg.devices.get("cuda")
    if cuda is not None:
        yield cuda
    yield from (b for kind, b in reg.devices.items() if kind != "cuda")
    yield from reg.namespaces.values()


def is_cuda_available() -> bool:
    """True when a registered CUDA device backend reports at least one device."""
    backend = registry().devices.get("cuda")
    if backend is None:
        return False
    try:
        return bool(backend.devices())
    except Exception as exc:  # a broken driver means "not available", with a reason
        warnings.warn(
            f"the cuda backend's devices() raised {type(exc).__name__}: {exc}",
            RuntimeWarning,
            stacklevel=2,
        )
        return False


def is_nvrtc_available() -> bool:
    """True when custom kernels can be compiled and run: a plugin loaded NVRTC and a CUDA
    device is present (NVRTC alone, on a machine without a GPU, cannot run `gp.jit`)."""
    if not is_cuda_available():
        return False
    for source in _nvrtc_sources():
        answered, value = _ask(source, "is_nvrtc_available")
        if answered:
            return bool(value)
    return False


def get_nvrtc_path() -> str | None:
    """The NVRTC library path a plugin found, or None."""
    for source in _nvrtc_sources():
        answered, value = _ask(source, "get_nvrtc_path")
        if answered:
            return None if value is None else str(value)
    return None


def get_device_info(device: Device | str | None = None) -> dict[str, Any]:
    """Facts about `device` (default: the default device): name, type, and the backend's info()."""
    dev = resolve_device(device)
    info: dict[str, Any] = {"name": str(dev), "type": dev.type, "index": dev.index}
    info.update(backend_of(dev).info(dev))
    return info
