"""PyGPUkit: a NumPy-like array library that runs on the GPU, or on the CPU without one.

Every function here follows the Python Array API standard (2023.12) where the standard
has a name for it; the seed API (`from_numpy`, `sub`, `mul`, `div`, `neg`, `clamp`,
`rmsnorm`, ...) sits alongside. Ops dispatch to kernel providers contributed by plugins;
`pygpukit.explain(op, *args)` says which one runs and why.
"""

# No `from __future__ import annotations` and no bare typing imports here: every name
# this module binds is public API (`dir(pygpukit)` is what users and tools see).
import math as _math
from typing import Any as _Any

from . import config, fft, linalg, memory, plugins
from ._array import GPUArray
from ._device import Buffer, Device, DeviceBackend
from ._dispatch import DispatchError, Explanation
from ._dtypes import (
    DataType,
    bfloat16,
    bool_,
    complex64,
    complex128,
    float8_e4m3fn,
    float8_e5m2,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from ._explain import explain
from ._namespace_info import __array_namespace_info__
from ._ops import *
from ._ops import BINARY as _BINARY
from ._ops import UNARY as _UNARY
from ._promotion import promote_types, result_type
from ._providers import Kernel, KernelProvider
from .device_info import get_device_info, get_nvrtc_path, is_cuda_available, is_nvrtc_available
from .hookspecs import hookimpl
from .scheduler import AdmissionError, Scheduler, Task, TaskCancelled

__version__ = "0.1.0"
__array_api_version__ = "2023.12"

bool = bool_  # noqa: A001 - the Array API name of the boolean dtype

# The Array API's constants (Python floats, as the standard asks; newaxis is None).
e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
newaxis = None


def jit(source: str, /, func: str, **options: _Any) -> _Any:
    """Compile a CUDA C kernel at run time; served by the CUDA plugin (pygpukit-cuda).

    This is the signature type checkers see; at run time ``pygpukit.jit`` is the callable
    module of the same name (imported below), which makes the same call and also holds
    the seed's `JITKernel`, `warmup` and driver checks.
    """
    from .jit.compiler import jit as compile_kernel

    return compile_kernel(source, func, **options)


# Importing the submodule rebinds `pygpukit.jit` to it (a callable module, so `gp.jit(...)`
# works either way); done here so that the name means one thing from the start.
from . import jit as _jit_module  # noqa: E402
from .jit.compiler import (  # noqa: E402  (the seed's top-level names)
    JITKernel,
    NvrtcError,
    check_driver_compatibility,
    get_driver_requirements,
    get_nvrtc_version,
    get_warmup_error,
    is_warmup_done,
    warmup,
)

#: names the CUDA plugin serves (a clearer error when it is not installed)
_CUDA_NAMES = frozenset({"cuda", "ElementwiseKernel", "RawModule", "RawKernel"})


def __getattr__(name: str) -> _Any:
    """Plugin namespaces (``gp.llm``, ``gp.audio``) answer here once registered."""
    from ._plugins import registry

    namespace = registry().namespaces.get(name)
    if namespace is None:
        if name in _CUDA_NAMES:
            raise AttributeError(
                f"pygpukit.{name} needs the CUDA backend: pip install pygpukit-cuda (and an "
                "NVIDIA GPU with its driver); `python -m pygpukit doctor` says what is missing"
            )
        raise AttributeError(f"module 'pygpukit' has no attribute {name!r}")
    return namespace
