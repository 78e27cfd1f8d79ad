"""Loading the native extension, the CUDA driver and NVRTC, each once and on first use.

Nothing here touches the GPU at import: the driver is opened by the first call that needs
it, NVRTC by the first compile. Each `*_status()` says in one line what was found or why not.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import threading
from pathlib import Path
from types import ModuleType

_lock = threading.Lock()
_native: ModuleType | None = None
_native_error = ""
_driver_tried = False
_nvrtc_tried = False

#: The wheels that ship NVRTC, newest CUDA first.
NVRTC_DISTRIBUTIONS = ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu13", "nvidia-cuda-nvrtc-cu12")
#: Names and folders tried after the wheel and PYGPUKIT_NVRTC_PATH.
SYSTEM_NVRTC = ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "/usr/local/cuda/lib64")


class CudaUnavailable(RuntimeError):
    """The CUDA driver, a GPU, NVRTC or the native extension is missing."""


def native() -> ModuleType:
    """The `_native` extension module; CudaUnavailable if it failed to import."""
    global _native, _native_error
    if _native is None and not _native_error:
        try:
            from . import _native as mod  # type: ignore[attr-defined]
        except ImportError as exc:
            _native_error = f"pygpukit_cuda._native failed to import: {exc}"
        else:
            _install_gate(mod)
            _native = mod
    if _native is None:
        raise CudaUnavailable(_native_error)
    return _native


def _install_gate(mod: ModuleType) -> None:
    """Route every launch of the extension through the Rust scheduler's gate (one native
    launch point: kernels, cuBLASLt products, graph replays)."""
    import _pygpukit_rust as rust

    mod.install_launch_gate(rust.launch_gate_table(), rust.TaskCancelled)


def native_status() -> str:
    try:
        mod = native()
    except CudaUnavailable as exc:
        return str(exc)
    return f"native extension {Path(mod.__file__ or '?').name} (ABI {mod.ABI_VERSION})"


def driver() -> ModuleType:
    """The native module with the driver loaded; CudaUnavailable saying why if it can't be."""
    global _driver_tried
    mod = native()
    if not _driver_tried:
        with _lock:
            if not _driver_tried:
                mod.load_driver(os.environ.get("PYGPUKIT_CUDA_DRIVER", "libcuda.so.1"))
                _driver_tried = True
    if not mod.driver_loaded():
        raise CudaUnavailable(mod.driver_status())
    return mod


def driver_status() -> str:
    try:
        return driver().driver_status()
    except CudaUnavailable as exc:
        return str(exc)


def device_count() -> int:
    """GPUs the driver sees (0 when the driver or extension is missing)."""
    try:
        return int(driver().device_count())
    except (CudaUnavailable, RuntimeError):
        return 0


def is_cuda_available() -> bool:
    return device_count() > 0


def wheel_nvrtc_dirs() -> list[str]:
    """Folders holding libnvrtc.so* inside installed NVIDIA wheels (found without importing)."""
    found: list[str] = []
    for name in NVRTC_DISTRIBUTIONS:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if f.name.startswith("libnvrtc.so"):
                folder = str(Path(str(dist.locate_file(f))).parent)
                if folder not in found:
                    found.append(folder)
    return found


def nvrtc_candidates() -> list[str]:
    """Where NVRTC is looked for, in order: the wheel, PYGPUKIT_NVRTC_PATH, the system."""
    out = wheel_nvrtc_dirs()
    env = os.environ.get("PYGPUKIT_NVRTC_PATH")
    if env:
        out.append(env)
    out.extend(SYSTEM_NVRTC)
    return out


def nvrtc() -> ModuleType:
    """The native module with NVRTC loaded; CudaUnavailable listing what was tried if not."""
    global _nvrtc_tried
    mod = native()
    if not _nvrtc_tried:
        with _lock:
            if not _nvrtc_tried:
                mod.load_nvrtc(nvrtc_candidates())
                _nvrtc_tried = True
    if not mod.nvrtc_loaded():
        raise CudaUnavailable(
            mod.nvrtc_status() + "\nfix: pip install nvidia-cuda-nvrtc, or set "
            "PYGPUKIT_NVRTC_PATH to libnvrtc.so or its folder"
        )
    return mod


def nvrtc_status() -> str:
    try:
        return nvrtc().nvrtc_status()
    except CudaUnavailable as exc:
        return str(exc)


def is_nvrtc_available() -> bool:
    try:
        nvrtc()
    except CudaUnavailable:
        return False
    return True


def get_nvrtc_path() -> str | None:
    try:
        return nvrtc().nvrtc_path() or None
    except CudaUnavailable:
        return None


def nvrtc_version() -> tuple[int, int] | None:
    try:
        major, minor = nvrtc().nvrtc_version()
    except CudaUnavailable:
        return None
    return int(major), int(minor)
