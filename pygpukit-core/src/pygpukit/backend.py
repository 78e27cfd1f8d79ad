"""Everything a backend plugin needs, in one public module (no private imports needed).

A plugin for new hardware subclasses `DeviceBackend` (allocate, upload, download,
synchronize, memory stats) and registers it with the ``pygpukit_register_devices`` hook;
its kernels go in a `KernelProvider` registered with ``pygpukit_register_kernels``. What
each op's kernel receives is in :mod:`pygpukit.ops_catalog`. This module also gives:

- the dtype tables (`DataType`, `as_dtype`, `ALL_DTYPES`, `NUMERIC_DTYPES`, ...) to declare
  which dtypes a kernel takes;
- the op tables `UNARY` and `BINARY` (name -> (dtype rule, summary)) to register one
  kernel per elementwise op, and `binary_dtypes` for their promotion;
- `kernel` and `kernel_for`, to call another op's kernel from a kernel or run an op a
  plugin added with `register_op`;
- `empty`, `astype`, `broadcast_shapes`, `contiguous_strides` for outputs and layouts;
- DLPack export of a device's memory (`export_dlpack`, `DLPACK_CUDA`, `DLPACK_CPU`);
- `use_front_doors`, for a native extension to put its own first step into the public
  elementwise functions (the tiny-op hot path; `ops_catalog` has the contract).
"""

from __future__ import annotations

from typing import Any

from ._array import GPUArray
from ._device import Buffer, Device, DeviceBackend
from ._dispatch import DispatchError, kernel_for
from ._dlpack import KDL_CPU as DLPACK_CPU
from ._dlpack import KDL_CUDA as DLPACK_CUDA
from ._dlpack import export_array as export_dlpack
from ._dtypes import (
    ALL_DTYPES,
    DEFAULT_FLOAT,
    DEFAULT_INT,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    NUMERIC_DTYPES,
    DataType,
    as_dtype,
)
from ._ops._core import kernel_on
from ._ops.copying import astype
from ._ops.elementwise import BINARY, UNARY, binary_dtypes, front_door_settings, use_front_doors
from ._providers import Kernel, KernelProvider
from ._views import broadcast_shapes, contiguous_strides
from .hookspecs import hookimpl
from .ops_catalog import Convention, check_kernel, convention, register_op


def kernel(op: str, *inputs: Any, backend: str | None = None) -> Any:
    """The kernel callable that runs `op` for these inputs (their device and dtypes,
    the user's settings), as the op layer would pick it; DispatchError when none can."""
    arrays = [x for x in inputs if isinstance(x, GPUArray)]
    if not arrays:
        raise TypeError(f"kernel({op!r}, ...) needs at least one GPUArray input")
    devices = {a.device for a in arrays}
    if len(devices) > 1:
        found = ", ".join(sorted(str(d) for d in devices))
        raise ValueError(f"kernel({op!r}, ...): inputs are on different devices ({found})")
    return kernel_on(op, arrays[0].device, tuple(a.dtype for a in arrays), backend)


def empty(shape: tuple[int, ...], dtype: Any, device: Device | str) -> GPUArray:
    """A new contiguous array with uninitialised contents (a kernel's output)."""
    return GPUArray.empty(tuple(shape), as_dtype(dtype), Device.parse(device))


__all__ = [
    "ALL_DTYPES", "BINARY", "Buffer", "Convention", "DEFAULT_FLOAT", "DEFAULT_INT",
    "DLPACK_CPU", "DLPACK_CUDA", "DataType", "Device", "DeviceBackend", "DispatchError",
    "FLOAT_DTYPES", "GPUArray", "INTEGER_DTYPES", "Kernel", "KernelProvider",
    "NUMERIC_DTYPES", "UNARY", "as_dtype", "astype", "binary_dtypes", "broadcast_shapes",
    "check_kernel", "contiguous_strides", "convention", "empty", "export_dlpack",
    "front_door_settings", "hookimpl", "kernel", "kernel_for", "register_op", "use_front_doors",
]  # fmt: skip
