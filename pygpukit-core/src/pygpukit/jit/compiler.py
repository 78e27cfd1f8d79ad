"""`pygpukit.jit.compiler`, the seed's module path for run-time compilation of CUDA kernels:
`jit`/`JITKernel`, NVRTC and driver checks, and a warm-up of the compiler.

Compiling is the CUDA plugin's job (pygpukit-cuda, NVRTC loaded from the driver's
install or the ``nvidia-cuda-nvrtc`` wheel); without it or without a GPU these raise
RuntimeError saying what is missing, and the checks answer False with the reason.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..device_info import get_device_info, get_nvrtc_path, is_cuda_available, is_nvrtc_available

#: the oldest driver (CUDA 12.0, as MAJOR*1000 + MINOR*10) and GPU (SM 8.0) PyGPUkit supports
MIN_DRIVER_VERSION = 12000
MIN_SM_VERSION = 80


class NvrtcError(RuntimeError):
    """Compiling a kernel failed; the message carries NVRTC's log and the offending line."""


def _serve_jit() -> Callable[..., Any]:
    from .._plugins import registry

    impl = registry().namespaces.get("jit")
    if impl is None:
        raise RuntimeError(
            "pygpukit.jit needs the CUDA backend: pip install pygpukit-cuda "
            "(and an NVIDIA GPU with its driver); `python -m pygpukit doctor` says what is missing"
        )
    return impl  # type: ignore[return-value]


class JITKernel:
    """A CUDA kernel compiled from source at run time; call it to launch it.

    Arguments are the kernel's parameters in order (GPUArrays become device pointers) or by
    name; the grid comes from ``grid_size`` (or ``grid=``), else from the element count.
    """

    def __init__(
        self, source: str, func_name: str, options: Sequence[str] | None = None,
        block_size: int = 256, *, device: Any = None,
    ) -> None:  # fmt: skip
        self._kernel = _serve_jit()(
            source, func=func_name, options=tuple(options or ()), block=block_size,
            device=device,
        )  # fmt: skip
        self.source = source
        self.name = func_name
        self.options = list(options or ())
        self.block_size = block_size

    @property
    def is_compiled(self) -> bool:
        """Always True: the kernel compiles when it is made, or the constructor raises."""
        return True

    @property
    def ptx(self) -> str | None:
        """The PTX, when the compiler kept it (it may have gone straight to a cubin)."""
        return getattr(self._kernel, "ptx", None)

    def __call__(self, *args: Any, grid_size: Any = None, **kwargs: Any) -> Any:
        if grid_size is not None:
            kwargs.setdefault("grid", grid_size)
        return self._kernel(*args, **kwargs)

    def __repr__(self) -> str:
        return f"JITKernel(name={self.name}, compiled)"


def jit(
    source: str, func: str, options: Sequence[str] | None = None, block_size: int = 256,
    **kwargs: Any,
) -> Any:  # fmt: skip
    """Compile `func` from the CUDA C `source`: the kernel ``gp.jit`` returns."""
    return _serve_jit()(source, func=func, options=tuple(options or ()), block=block_size, **kwargs)


def get_nvrtc_version() -> tuple[int, int] | None:
    """NVRTC's (major, minor) when a plugin reports it, else None."""
    from .._plugins import registry

    for source in (*registry().devices.values(), *registry().namespaces.values()):
        fn = getattr(source, "get_nvrtc_version", None) or getattr(source, "nvrtc_version", None)
        if callable(fn):
            try:
                found = fn()
            except Exception:  # a probe: unavailable is an answer
                return None
            return (int(found[0]), int(found[1])) if found else None
    return None


def get_driver_requirements() -> dict[str, str]:
    """The driver and GPU PyGPUkit needs (for messages and `doctor`)."""
    return {
        "min_driver_version": f"{MIN_DRIVER_VERSION // 1000}.{MIN_DRIVER_VERSION % 1000 // 10}",
        "min_gpu_architecture": f"SM {MIN_SM_VERSION // 10}.{MIN_SM_VERSION % 10} (Ampere)",
        "notes": "a GPU driver is enough: NVRTC comes from the nvidia-cuda-nvrtc wheel",
    }


def check_driver_compatibility() -> tuple[bool, str]:
    """(ok, why): whether a CUDA GPU with a recent enough driver and architecture is here."""
    if not is_cuda_available():
        return False, "CUDA driver not detected or no GPU: falling back to the CPU backend"
    info = get_device_info("cuda")
    driver = info.get("driver_version")
    if isinstance(driver, int) and driver < MIN_DRIVER_VERSION:
        return False, f"driver {driver} is older than the minimum {MIN_DRIVER_VERSION}"
    cc = info.get("compute_capability")
    if cc and int(cc[0]) * 10 + int(cc[1]) < MIN_SM_VERSION:
        return False, f"GPU SM {cc[0]}.{cc[1]} is older than SM 8.0 (Ampere)"
    return True, f"{info.get('name', 'GPU')}: driver {driver}, compute capability {cc}"


_WARMUP_SOURCE = 'extern "C" __global__ void pygpukit_warmup(float* x, int n) {}'
_warmup_lock = threading.Lock()
_warmup_thread: threading.Thread | None = None
_warmup_done = False
_warmup_error: BaseException | None = None


def _do_warmup(callback: Callable[[], None] | None) -> bool:
    global _warmup_done, _warmup_error
    try:
        if not is_nvrtc_available():
            raise RuntimeError("NVRTC JIT compiler not available")
        jit(_WARMUP_SOURCE, "pygpukit_warmup")
        _warmup_error = None
    except Exception as exc:  # reported through get_warmup_error()
        _warmup_error = exc
    _warmup_done = True
    if callback is not None and _warmup_error is None:
        callback()
    return _warmup_error is None


def warmup(background: bool = False, callback: Callable[[], None] | None = None) -> bool:
    """Load NVRTC and compile a tiny kernel now, so the first real `jit` is quicker.

    Returns whether it worked (False without NVRTC or a GPU; `get_warmup_error()` says
    why). With ``background=True`` it runs on a thread and returns True at once.
    """
    global _warmup_thread
    with _warmup_lock:
        if _warmup_done:
            return _warmup_error is None
        running = _warmup_thread is not None and _warmup_thread.is_alive()
        if background and not running:
            _warmup_thread = threading.Thread(
                target=_do_warmup, args=(callback,), name="pygpukit-warmup", daemon=True
            )
            _warmup_thread.start()
    if background:
        return True
    if _warmup_thread is not None:
        _warmup_thread.join()
        return _warmup_error is None
    return _do_warmup(callback)


def is_warmup_done() -> bool:
    """Whether the warm-up has finished (successfully or not; `get_warmup_error` says)."""
    return _warmup_done


def get_warmup_error() -> BaseException | None:
    """Why the warm-up failed, or None."""
    return _warmup_error


__all__ = [
    "JITKernel", "MIN_DRIVER_VERSION", "MIN_SM_VERSION", "NvrtcError",
    "check_driver_compatibility", "get_driver_requirements", "get_nvrtc_path",
    "get_nvrtc_version", "get_warmup_error", "is_nvrtc_available", "is_warmup_done", "jit",
    "warmup",
]  # fmt: skip
