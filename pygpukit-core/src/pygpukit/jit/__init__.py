"""`pygpukit.jit`: compile CUDA C at run time. ``gp.jit(source, func=...)`` compiles a kernel;
the seed's names (`JITKernel`, `warmup`, driver and NVRTC checks) live in
`pygpukit.jit.compiler` and here. This module is callable, so that importing it does not
take ``pygpukit.jit`` the function away from code that calls it."""

import sys as _sys
import types as _types
from typing import Any as _Any

from .compiler import (
    MIN_DRIVER_VERSION,
    MIN_SM_VERSION,
    JITKernel,
    NvrtcError,
    check_driver_compatibility,
    get_driver_requirements,
    get_nvrtc_path,
    get_nvrtc_version,
    get_warmup_error,
    is_nvrtc_available,
    is_warmup_done,
    warmup,
)
from .compiler import jit as _compile


class _CallableModule(_types.ModuleType):
    def __call__(self, source: str, /, func: str, **options: _Any) -> _Any:
        """Compile `func` from the CUDA C `source`; see ``pygpukit.jit.compiler.jit``."""
        return _compile(source, func, **options)


_sys.modules[__name__].__class__ = _CallableModule

__all__ = [
    "JITKernel", "MIN_DRIVER_VERSION", "MIN_SM_VERSION", "NvrtcError",
    "check_driver_compatibility", "get_driver_requirements", "get_nvrtc_path",
    "get_nvrtc_version", "get_warmup_error", "is_nvrtc_available", "is_warmup_done", "warmup",
]  # fmt: skip
