"""A pretend GPU for measuring and testing the CUDA backend's host path on a machine
without one: `install()` puts a stub driver module, context and compiler in place, so
`gp.add(a, b)` on "cuda:0" runs every Python layer and records the launch instead of
calling cuLaunchKernel. Device memory is the Rust pool over host memory.

    python scripts/stub_cuda.py [--calls 20000]   # host us/call of tiny ops, no GPU needed
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
from profile_tiny_op import per_call_us  # scripts/ is on sys.path when run


class StubContext:
    """Stands in for the native Context: launches are recorded, memory is host memory."""

    ordinal = 0

    def __init__(self) -> None:
        self.launches: list[tuple[Any, ...]] = []
        self.events: list[tuple[str, int, int]] = []
        self.record = False

    def launch(self, func: Any, grid: Any, block: Any, shared: int, stream: int, args: Any) -> None:
        if self.record:
            self.launches.append((func, grid, block, shared, stream, bytes(args)))

    def launch_plan(self, func: Any, grid: Any, block: Any, shared: int, params: bytes,
                    slots: Any) -> Callable[..., None]:  # fmt: skip
        """Like the native one, a plan costs next to nothing per call unless recording."""
        from pygpukit_cuda.launch_plan import PackedLaunch

        packed = PackedLaunch(self, func, grid, block, shared, params, slots)

        def plan(stream: int, *values: Any) -> None:
            if self.record:
                packed(stream, *values)

        return plan

    def copy_async(self, *args: Any, **kwargs: Any) -> None:
        """Device copies are not modelled (tests that count them replace this)."""

    def memset_async(self, *args: Any, **kwargs: Any) -> None:
        """Nor are fills."""

    def compute_capability(self) -> tuple[int, int]:
        return (9, 0)

    def attribute(self, attr: int) -> int:
        return 132  # multiprocessors, as on an H100

    def allocator_capsule(self) -> Any:
        import _pygpukit_rust as rust

        return rust.host_allocator_capsule()

    def synchronize(self) -> None:
        pass


class StubStream:
    """Stands in for the native Stream: a handle, work is never pending."""

    _next = 0x1000

    def __init__(self, context: Any, priority: int = 0, non_blocking: bool = False) -> None:
        StubStream._next += 0x10
        self.handle = StubStream._next

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True


class StubEvent:
    """Stands in for the native Event; records and waits go to the context's `events`
    (as ("record" | "wait", stream handle, event id)) while it records launches."""

    def __init__(self, context: Any, timing: bool = True) -> None:
        self.context = context

    def _note(self, what: str, stream: int) -> None:
        if getattr(self.context, "record", False):
            self.context.events.append((what, stream, id(self)))

    def record(self, stream: int) -> None:
        self._note("record", stream)

    def wait_on(self, stream: int) -> None:
        self._note("wait", stream)

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_since(self, start: Any) -> float:
        return 0.0


#: the kernel name behind each stub function handle (launch records carry handles)
KERNEL_NAMES: dict[int, str] = {}


class StubModule:
    def __init__(self, context: Any, data: bytes) -> None:
        pass

    def function(self, name: str) -> int:
        handle = hash(name) & 0xFFFF
        KERNEL_NAMES[handle] = name
        return handle


def install() -> StubContext:
    """Make pygpukit_cuda see one stub GPU; returns its context (set .record to capture)."""
    from pygpukit_cuda import _loader, compiler, cublaslt, device, launcher

    ctx = StubContext()
    stub = SimpleNamespace(
        ATTR_MULTIPROCESSOR_COUNT=16, Module=StubModule, driver_version=lambda: 13000,
        device_count=lambda: 1, Stream=StubStream, Event=StubEvent,
    )  # fmt: skip
    _loader.driver = lambda: stub  # type: ignore[assignment]
    _loader.device_count = lambda: 1  # type: ignore[assignment]
    device._contexts[0] = ctx
    device._allocators.pop(0, None)
    launcher._loaded.clear()

    def compile_source(source: str, name: str, target: Any, options: Any = ()) -> Any:
        return compiler.Image(b"", target, from_cache=True)

    compiler.compile_source = compile_source  # type: ignore[assignment]
    # the stub has no cuBLASLt: on a machine with the real library, products must take the
    # NVRTC kernels rather than hand the library the stub's context
    cublaslt._lib, cublaslt._tried, cublaslt._status = None, True, "the stub GPU has no cuBLASLt"
    # contents are not modelled: uploads and downloads do nothing
    device.CudaBackend.upload = lambda self, buffer, offset, host: None  # type: ignore
    device.CudaBackend.download = lambda self, buffer, offset, out: None  # type: ignore
    import pygpukit.config as config

    config.reload()  # the dispatch cache and the default device are per settings snapshot
    return ctx


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    install()
    import pygpukit as gp

    a = gp.asarray(np.ones(1, np.float32), device="cuda:0")
    b = gp.asarray(np.ones(1, np.float32), device="cuda:0")
    cases: dict[str, Callable[[], object]] = {
        "gp.add(a, b)": lambda: gp.add(a, b),
        "a + b": lambda: a + b,
        "a + 1.0": lambda: a + 1.0,
        "2 * a": lambda: 2 * a,
        "gp.exp(a)": lambda: gp.exp(a),
        "a[::1] + b": lambda: a[::1] + b,
    }
    for name, fn in cases.items():
        us = per_call_us(fn, args.calls, lambda: None)
        print(f"{name:<14} {us:7.2f} us (host only, stub launch)")
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            a + b
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
