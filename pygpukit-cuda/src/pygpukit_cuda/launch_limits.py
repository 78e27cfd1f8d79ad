"""Launch configurations checked against the device's and the kernel's limits before launch.

A launch the driver would refuse (CUDA_ERROR_INVALID_VALUE and no word on which value) raises
ValueError here instead, naming the value and the limit. The checks are pure functions of a
`DeviceLimits` and a `FunctionLimits` record (testable without a GPU); `prepare` reads the
records once per device and per kernel and, for more than 48 KB of dynamic shared memory,
raises the kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first (opt-in).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

# CUdevice_attribute and CUfunction_attribute numbers (stable parts of the driver ABI)
_DEV_MAX_THREADS_PER_BLOCK = 1
_DEV_MAX_BLOCK_DIM = (2, 3, 4)
_DEV_MAX_GRID_DIM = (5, 6, 7)
_DEV_MAX_SHARED_PER_BLOCK = 8
_DEV_MAX_SHARED_PER_BLOCK_OPTIN = 97
_FUNC_MAX_THREADS_PER_BLOCK = 0
_FUNC_SHARED_SIZE_BYTES = 1
_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

_AXES = "xyz"

#: driver error names of a refused cluster launch shape (CUDA_ERROR_INVALID_CLUSTER_SIZE, ...)
_CLUSTER_REFUSALS = ("CLUSTER", "NOT_SUPPORTED", "INVALID_VALUE", "LAUNCH_OUT_OF_RESOURCES")


def cluster_launch_refused(exc: BaseException) -> bool:
    """Whether a failed launch of a thread-block cluster kernel is the driver or GPU refusing
    the cluster shape (its error name says so): the caller then takes its non-cluster path
    from now on. Any other failure is the caller's to raise."""
    return any(word in str(exc) for word in _CLUSTER_REFUSALS)


@dataclass(frozen=True)
class DeviceLimits:
    device: str  # "cuda:0", for messages
    max_threads_per_block: int
    max_block: tuple[int, int, int]
    max_grid: tuple[int, int, int]
    shared_per_block: int  # without opt-in (48 KB)
    shared_per_block_optin: int  # the most a kernel may opt in to (227 KB on H100)


@dataclass
class FunctionLimits:
    name: str
    max_threads_per_block: int  # can be < the device's for register-heavy kernels
    static_shared: int
    max_dynamic_shared: int  # the kernel's current cap; raised by opting in

    def optin_ceiling(self, dev: DeviceLimits) -> int:
        """The most dynamic shared memory this kernel can ever get on `dev`."""
        return max(0, dev.shared_per_block_optin - self.static_shared)


def normalize_dims(value: Any, what: str) -> tuple[int, int, int]:
    """1 to 3 positive ints (an int or a sequence) as (x, y, z); TypeError/ValueError else."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        dims: tuple[Any, ...] = (value,)
    elif isinstance(value, (tuple, list)):
        dims = tuple(value)
    else:
        raise TypeError(f"{what} must be an int or 1 to 3 ints, got {value!r}")
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{what} must have 1 to 3 sizes, got {len(dims)}: {value!r}")
    for axis, d in zip(_AXES, dims, strict=False):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{what}.{axis} must be an int, got {type(d).__name__} {d!r}")
        if d < 1:
            raise ValueError(f"{what}.{axis} = {int(d)}: sizes must be at least 1")
    full = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    return full[0], full[1], full[2]


def check_launch(
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    shared: int,
    dev: DeviceLimits,
    fn: FunctionLimits,
) -> None:
    """ValueError naming the first value over a limit (dims already normalized)."""
    where = f"{fn.name} on {dev.device}"
    for axis, d, limit in zip(_AXES, block, dev.max_block, strict=True):
        if d > limit:
            raise ValueError(f"{where}: block.{axis} = {d} is over the device's limit of {limit}")
    threads = block[0] * block[1] * block[2]
    if threads > dev.max_threads_per_block:
        raise ValueError(
            f"{where}: block {block} has {threads} threads, over the device's limit of "
            f"{dev.max_threads_per_block} threads per block"
        )
    if threads > fn.max_threads_per_block:
        raise ValueError(
            f"{where}: block {block} has {threads} threads, over this kernel's limit of "
            f"{fn.max_threads_per_block} threads per block (set by its register use or "
            "__launch_bounds__)"
        )
    for axis, d, limit in zip(_AXES, grid, dev.max_grid, strict=True):
        if d > limit:
            raise ValueError(f"{where}: grid.{axis} = {d} is over the device's limit of {limit}")
    if isinstance(shared, bool) or not isinstance(shared, (int, np.integer)):
        raise TypeError(f"{where}: shared_mem must be an int (bytes), got {shared!r}")
    if shared < 0:
        raise ValueError(f"{where}: shared_mem = {shared} bytes: it cannot be negative")
    ceiling = fn.optin_ceiling(dev)
    if shared > ceiling:
        raise ValueError(
            f"{where}: shared_mem = {shared} bytes of dynamic shared memory is over the limit "
            f"of {ceiling} bytes per block ({dev.shared_per_block_optin} bytes the device "
            f"allows with opt-in, less {fn.static_shared} bytes of the kernel's static "
            "shared memory)"
        )


def needs_optin(shared: int, fn: FunctionLimits) -> bool:
    """Whether the kernel's dynamic shared memory cap must be raised for `shared` bytes."""
    return shared > fn.max_dynamic_shared


# -- reading the records (once per device, once per kernel) ----------------------------------
_devices: dict[int, DeviceLimits] = {}
_functions: dict[tuple[int, int], FunctionLimits] = {}
_lock = threading.Lock()


def _three(attribute: Any, attrs: tuple[int, int, int]) -> tuple[int, int, int]:
    return int(attribute(attrs[0])), int(attribute(attrs[1])), int(attribute(attrs[2]))


def device_limits(device_index: int, ctx: Any) -> DeviceLimits:
    lim = _devices.get(device_index)
    if lim is None:
        a = ctx.attribute
        lim = DeviceLimits(
            device=f"cuda:{device_index}",
            max_threads_per_block=int(a(_DEV_MAX_THREADS_PER_BLOCK)),
            max_block=_three(a, _DEV_MAX_BLOCK_DIM),
            max_grid=_three(a, _DEV_MAX_GRID_DIM),
            shared_per_block=int(a(_DEV_MAX_SHARED_PER_BLOCK)),
            shared_per_block_optin=int(a(_DEV_MAX_SHARED_PER_BLOCK_OPTIN)),
        )
        _devices[device_index] = lim
    return lim


def function_limits(function: Any) -> FunctionLimits:
    key = (function.device_index, function.handle)
    lim = _functions.get(key)
    if lim is None:
        get = function.context.function_attribute
        lim = FunctionLimits(
            name=function.name,
            max_threads_per_block=int(get(function.handle, _FUNC_MAX_THREADS_PER_BLOCK)),
            static_shared=int(get(function.handle, _FUNC_SHARED_SIZE_BYTES)),
            max_dynamic_shared=int(get(function.handle, _FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES)),
        )
        _functions[key] = lim
    return lim


def prepare(
    function: Any, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int
) -> None:
    """Check a launch of `function` (a launcher.Function) and opt in to its shared memory."""
    fn = function_limits(function)
    check_launch(grid, block, shared, device_limits(function.device_index, function.context), fn)
    if needs_optin(shared, fn):
        with _lock:  # raise the cap once per kernel and larger size
            if needs_optin(shared, fn):
                function.context.set_function_attribute(
                    function.handle, _FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(shared)
                )
                fn.max_dynamic_shared = int(shared)
