"""Loaded kernels: compile (or take from cache), load into a device's context, launch.

`function(device_index, name, source, options)` is the one way in; it keeps every loaded
kernel in memory per (device, name, options, source), so the second call of an op costs a
dict lookup. `Function.launch` packs the arguments with a prebuilt `struct.Struct` and hands
the bytes to cuLaunchKernel; the hot paths launch through `launch_plan` instead.
"""

from __future__ import annotations

import struct
import threading
from typing import Any

from . import compiler, streams
from .device import context, driver_version_of


class Function:
    """One kernel loaded on one device."""

    __slots__ = ("context", "device_index", "handle", "image", "module", "name", "packer")

    def __init__(self, device_index: int, name: str, image: compiler.Image, arg_format: str):
        self.device_index = device_index
        self.context = context(device_index)
        self.module = self.context_module(image.data)
        self.handle = self.module.function(name)
        self.name = name
        self.image = image
        self.packer = struct.Struct(arg_format)

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
                fn = _loaded[key] = Function(device_index, name, image, arg_format)
    return fn


def loaded_count() -> int:
    return len(_loaded)
