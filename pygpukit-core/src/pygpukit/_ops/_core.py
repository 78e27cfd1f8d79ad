"""The shared path of every op: find the inputs' device, pick the kernel, make the output."""

from __future__ import annotations

from typing import Any

import numpy as np
from _pygpukit_rust import current_task_id, task_launch_begin, task_launch_end

from .._array import GPUArray
from .._device import Device
from .._dispatch import kernel_for
from .._dtypes import DataType
from .._placement import resolve_device

Scalar = bool | int | float | complex


def scalar_or_array(x: Any, name: str) -> GPUArray | Scalar:
    """Accept a GPUArray or a Python/NumPy scalar; refuse host arrays (no hidden copies)."""
    if isinstance(x, GPUArray):
        return x
    if isinstance(x, (bool, int, float, complex)):
        return x
    if isinstance(x, np.generic) and x.dtype.kind in "biufc":
        return x.item()
    if isinstance(x, (np.ndarray, list, tuple)):
        raise TypeError(
            f"{name} is a host {type(x).__name__}: convert it with pygpukit.asarray() first "
            "(PyGPUkit never copies host data to the device behind your back)"
        )
    raise TypeError(
        f"{name} must be a GPUArray or a bool/int/float/complex, not {type(x).__name__}"
    )


def device_of(*xs: Any) -> Device:
    """The one device of the arrays among `xs`; ValueError if they differ."""
    device: Device | None = None
    for x in xs:
        if isinstance(x, GPUArray):
            if device is None:
                device = x.device
            elif x.device != device:
                raise ValueError(
                    f"arrays are on different devices ({device} and {x.device}); "
                    "move one with .to_device() first"
                )
    if device is None:
        raise TypeError("at least one argument must be a GPUArray")
    return device


def dtypes_of(*xs: Any) -> tuple[DataType, ...]:
    return tuple(x.dtype for x in xs if isinstance(x, GPUArray))


def kernel(op: str, *inputs: Any, backend: str | None = None) -> Any:
    """The kernel callable for `op` on these inputs (arrays decide device and dtypes)."""
    return kernel_on(op, device_of(*inputs), dtypes_of(*inputs), backend)


def kernel_on(
    op: str, device: Device, dtypes: tuple[DataType, ...], backend: str | None = None
) -> Any:
    """The kernel callable; inside a scheduler task, wrapped in the task's launch gate unless
    its provider gates its launches natively."""
    kernel = kernel_for(op, device, dtypes, backend)
    return task_aware(kernel.fn, kernel.gated)


def fresh_of(kernel: Any) -> Any:
    """The kernel's ``fresh`` fast path (see `pygpukit.ops_catalog`), or None. Only kernels
    whose provider gates launches natively may use one: it runs no Python launch gate."""
    return getattr(kernel.fn, "fresh", None) if kernel.gated else None


def task_aware(fn: Any, gated: bool) -> Any:
    """`fn`, or `fn` behind the Python launch gate when a scheduler task runs on this thread
    and the kernel has no native gate of its own."""
    if gated or current_task_id() is None:  # one thread-local read in Rust
        return fn
    return _gated(fn)


def _gated(fn: Any) -> Any:
    """Run `fn` once the task's token bucket and the fair-share arbiter grant the device."""

    def launch(*args: Any, **kwargs: Any) -> Any:
        token = task_launch_begin()  # blocks without the GIL; raises TaskCancelled
        try:
            return fn(*args, **kwargs)
        finally:
            task_launch_end(token)

    return launch


def empty(shape: tuple[int, ...], dtype: DataType, device: Device) -> GPUArray:
    return GPUArray.empty(shape, dtype, device)


def target_device(device: Any) -> Device:
    return resolve_device(device)


def check_numeric(op: str, *xs: Any) -> None:
    for x in xs:
        if isinstance(x, GPUArray) and (x.dtype.kind == "b" or x.dtype.is_float8):
            raise TypeError(
                f"{op} does not accept {x.dtype.name} arrays; cast with .astype() first"
            )
