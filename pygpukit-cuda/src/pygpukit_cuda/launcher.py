"""Loaded kernels: compile (or take from cache), load into a device's context, launch.

`function(device_index, name, source, options)` is the one way in; it keeps every loaded
kernel in memory per (device, name, options, source), so the second call of an op costs a
dict lookup. `Function.launch` packs the arguments with a prebuilt `struct.Struct` and hands
the bytes to cuLaunchKernel; the hot paths launch through `launch_plan` instead.
"""

from __future__ import annotations

import os
import struct
import threading
from typing import Any

from . import compiler, streams
from .device import context, driver_version_of
from .kernels.preamble import PDL_WAIT

#: programmatic dependent launch for kernels that begin with PDL_WAIT, on sm_90+ GPUs, in
#: captured CUDA graphs (native/launch.cpp says why not eagerly); PYGPUKIT_PDL=0 launches
#: every kernel plainly, for an A/B timing
PDL = os.environ.get("PYGPUKIT_PDL", "1") != "0"


class Function:
    """One kernel loaded on one device."""

    __slots__ = ("context", "device_index", "handle", "image", "module", "name", "packer",
                 "programmatic")  # fmt: skip

    def __init__(self, device_index: int, name: str, image: compiler.Image, arg_format: str,
                 programmatic: bool = False) -> None:  # fmt: skip
        self.device_index = device_index
        self.context = context(device_index)
        self.module = self.context_module(image.data)
        self.handle = self.module.function(name)
        self.name = name
        self.image = image
        self.packer = struct.Struct(arg_format)
        self.programmatic = programmatic and _pdl_capable(device_index)
        if self.programmatic:
            from ._loader import driver

            driver().set_programmatic(self.handle, True)

    def context_module(self, data: bytes) -> Any:
        from ._loader import driver

        return driver().Module(self.context, data)

    def launch(
        self,
        grid: Any,
        block: Any,
        args: tuple[Any, ...],
        shared: int = 0,
        stream: int | None = None,
    ) -> None:
        """Launch on `stream` (a CUstream handle), by default the current stream."""
        if stream is None:
            stream = streams.current_handle(self.device_index)
        self.context.launch(self.handle, grid, block, shared, stream, self.packer.pack(*args))

    def __repr__(self) -> str:
        t = self.image.target
        return f"<Function {self.name} on cuda:{self.device_index} ({t.option[6:]})>"


_loaded: dict[tuple[int, str, tuple[str, ...], int], Function] = {}
_lock = threading.Lock()


def _pdl_capable(device_index: int) -> bool:
    """Whether kernels on this device may be launched programmatically (sm_90+, a driver
    with cuLaunchKernelEx, not turned off by PYGPUKIT_PDL=0)."""
    if not PDL:
        return False
    from ._loader import driver
    from .device_facts import compute_capability

    has_ex = getattr(driver(), "has_launch_ex", None)
    return bool(has_ex and has_ex()) and compute_capability(device_index) >= 90


def target_for(device_index: int) -> compiler.Target:
    major, minor = context(device_index).compute_capability()
    return compiler.choose_target(major * 10 + minor, driver_version_of())


def function(
    device_index: int, name: str, source: str, arg_format: str, options: tuple[str, ...] = ()
) -> Function:
    """The kernel `name` of `source`, compiled for the device and loaded there (cached)."""
    key = (device_index, name, options, hash(source))
    fn = _loaded.get(key)
    if fn is None:
        image = compiler.compile_source(source, name, target_for(device_index), options)
        with _lock:
            fn = _loaded.get(key)
            if fn is None:
                fn = _loaded[key] = Function(device_index, name, image, arg_format,
                                             PDL_WAIT in source)  # fmt: skip
    return fn


def loaded_count() -> int:
    return len(_loaded)
