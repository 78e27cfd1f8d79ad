"""Load a CUBIN made elsewhere (Triton, a vendor library) and launch its kernels through our
native launch point: the current stream, the scheduler's launch gate, graph capture.

    fn = pygpukit_cuda.cubin.load(0, image, "my_kernel", shared=49152)
    plan = fn.plan(grid=(n_blocks,), block=(128,), params=template, slots=[(0, "P"), (8, "i")])
    plan(pygpukit_cuda.cubin.current_stream(0), out_ptr, n)

A plan fixes everything but the slot values, so a launch costs one native call (see
`launch_plan`). This is public API: other plugins (pygpukit-triton) build on it.

A plan holds only the raw CUfunction handle, which dies with its CUmodule; so `load` keeps
every module it loads for the life of the process (one per distinct image and kernel, and a
second `load` of the same image reuses it): a caller may drop the `CubinFunction` and keep
the plan.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from . import _loader, launch_plan, streams
from .device import context

#: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (driver ABI)
_MAX_DYNAMIC_SHARED = 8
#: dynamic shared memory a kernel may take without opting in (every arch)
_DEFAULT_SHARED_LIMIT = 48 * 1024


class CubinFunction:
    """One kernel of a loaded CUBIN on one GPU; the module lives as long as this does (and
    `load` keeps the ones it makes for the process: plans need their module loaded)."""

    __slots__ = ("context", "device_index", "handle", "module", "name", "shared")

    def __init__(
        self, device_index: int, image: bytes | bytearray, name: str, shared: int = 0
    ) -> None:
        if not isinstance(image, (bytes, bytearray)) or not image:
            raise TypeError("cubin.load wants the CUBIN image as non-empty bytes")
        self.device_index = device_index
        self.context = context(device_index)
        self.module = _loader.driver().Module(self.context, bytes(image))
        self.handle = self.module.function(name)
        self.name = name
        self.shared = int(shared)
        if self.shared > _DEFAULT_SHARED_LIMIT:
            # kernels that want more than 48 KiB of dynamic shared memory must say so first
            self.context.set_function_attribute(self.handle, _MAX_DYNAMIC_SHARED, self.shared)

    def plan(self, grid: Sequence[int], block: Sequence[int], params: bytes,
             slots: Sequence[launch_plan.Slot]) -> Callable[..., None]:  # fmt: skip
        """A launch plan: call it as ``plan(stream, *slot_values)``."""
        return launch_plan.make(self.context, self.handle, tuple(grid), tuple(block),
                                self.shared, params, slots)  # fmt: skip

    def __repr__(self) -> str:
        return f"<CubinFunction {self.name} on cuda:{self.device_index} shared={self.shared}>"


_lock = threading.Lock()
#: every CubinFunction `load` made, by (device, image, kernel, shared): kept so the modules
#: stay loaded while plans made from them can still launch (a plan keeps only the handle)
_loaded: dict[tuple[int, bytes, str, int], CubinFunction] = {}


def load(device_index: int, image: bytes | bytearray, name: str, shared: int = 0) -> CubinFunction:
    """Load `image` on GPU `device_index` and take its kernel `name` (`shared`: the dynamic
    shared memory bytes each launch passes). The module stays loaded for the process; the
    same image and kernel loaded again is the same object (on the same context)."""
    if not isinstance(image, (bytes, bytearray)) or not image:
        raise TypeError("cubin.load wants the CUBIN image as non-empty bytes")
    key = (device_index, bytes(image), name, int(shared))
    found = _loaded.get(key)
    if found is not None and found.context is context(device_index):
        return found
    with _lock:
        found = _loaded.get(key)
        if found is None or found.context is not context(device_index):
            # a new context (the old one was lost) needs its own module; the old one goes
            found = _loaded[key] = CubinFunction(device_index, image, name, shared)
    return found


def loaded_count() -> int:
    """How many kernels `load` holds loaded (for tests and diagnostics)."""
    return len(_loaded)


#: current_stream(device_index): the CUstream handle ops on `device_index` launch on now (0:
#: the legacy stream). The launcher's own function, not a wrapper: plugins call it on every
#: launch, and a wrapper's Python frame is a measurable share of a small op's host time.
current_stream = streams.current_handle


def compute_capability(device_index: int) -> int:
    """major * 10 + minor of GPU `device_index` (90 for the H100)."""
    from .device_facts import compute_capability as cc

    return cc(device_index)


def is_capturing(device_index: int) -> bool:
    """Whether the current stream is capturing a CUDA graph (no host waits allowed then)."""
    handle = streams.current_handle(device_index)
    return bool(handle) and bool(context(device_index).is_capturing(handle))


__all__ = [
    "CubinFunction", "compute_capability", "current_stream", "is_capturing", "load",
    "loaded_count",
]  # fmt: skip
