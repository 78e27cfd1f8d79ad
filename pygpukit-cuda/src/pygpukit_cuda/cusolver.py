"""cuSOLVER for the linalg extension's factorizations: found at run time, opened natively.

The library is located by ``PYGPUKIT_CUSOLVER_PATH`` (a file or folder) when set, else by
NVIDIA's ``cuda-pathfinder`` (the ``nvidia-cusolver`` wheel, which brings the cuBLAS,
cuSPARSE and nvJitLink it needs, then the system's CUDA), and opened by the extension
(``_native.Cusolver``: dlopen, one handle per context). ``status()`` says in one line what
was found or why not; `unavailable` is what the provider's linalg kernels give dispatch,
so ``gp.explain("solve", x, b)`` names the missing wheel.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from pygpukit.core import dtypes as dt

from . import runtime_libs

#: cudaDataType codes of the dtypes the native layer takes
DATA_TYPE = {"float32": 0, "float64": 1, "complex64": 4, "complex128": 5}
#: dtypes the provider's linalg kernels declare: cuSOLVER's generic 64-bit API takes
#: CUDA_C_32F/CUDA_C_64F like the real types, and the cuda backend's complex copy, conj,
#: product and (plane-wise) eye/tril/triu kernels cover what runs around each call
DTYPES = (dt.float32, dt.float64, dt.complex64, dt.complex128)


def candidates() -> list[str]:
    """Paths to open, in order: ``PYGPUKIT_CUSOLVER_PATH``, then what cuda-pathfinder finds."""
    return runtime_libs.candidates("PYGPUKIT_CUSOLVER_PATH", "libcusolver.so*", _pathfinder_path())


def _pathfinder_path() -> str | None:
    """Where cuda-pathfinder finds libcusolver (loading its dependencies), or None."""
    return runtime_libs.pathfinder_path("cusolver")


_lock = threading.Lock()
_tried = False
_lib: Any = None
_status = "cuSOLVER not looked for yet"


def library() -> Any:
    """The opened ``_native.Cusolver``, or None when it is not installed (see `status`)."""
    global _tried, _lib, _status
    if not _tried:
        with _lock:
            if not _tried:
                if os.environ.get("PYGPUKIT_CUSOLVER", "1") == "0":
                    _status = "cuSOLVER disabled by PYGPUKIT_CUSOLVER=0"
                else:
                    _lib, _status = _open(candidates())
                _tried = True
    return _lib


def status() -> str:
    library()
    return _status


def unavailable() -> str | None:
    """None when cuSOLVER is open; else why not (what dispatch and explain report)."""
    return None if library() is not None else status()


def _open(paths: list[str]) -> tuple[Any, str]:
    from . import _loader

    try:
        native = _loader.native()
    except Exception as exc:  # the extension itself is missing: say so
        return None, f"cuSOLVER unusable: the pygpukit_cuda extension did not load ({exc})"

    def describe(lib: Any) -> str:
        v = int(lib.version)
        return f"cuSOLVER {v // 1000}.{(v // 100) % 10}.{v % 100} from {lib.path}"

    lib, said = runtime_libs.open_first(paths, native.Cusolver, describe)
    if lib is not None:
        return lib, said[0]
    return None, (
        "cuSOLVER not found (pip install nvidia-cusolver, or pygpukit-cuda[linalg]; or set "
        "PYGPUKIT_CUSOLVER_PATH); the linalg factorizations need it on cuda. Tried: "
        f"{runtime_libs.tried(said)}"
    )


def reset() -> None:
    """Forget what was found (tests that change the environment call this)."""
    global _tried, _lib, _status
    with _lock:
        _tried, _lib, _status = False, None, "cuSOLVER not looked for yet"
