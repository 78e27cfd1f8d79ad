"""`pygpukit.core.stream`, the seed's module path for streams.

On a CUDA device a `Stream` is the CUDA plugin's (``gp.cuda.Stream``: ordered, asynchronous
work). On the CPU every op has finished when it returns, so a CPU stream has nothing to
wait for: it keeps its priority, and `synchronize()` returns at once.
"""

from __future__ import annotations

from typing import Any

from .._device import Device
from .._placement import resolve_device


def _cuda() -> Any:
    import pygpukit

    return pygpukit.cuda  # the CUDA plugin's namespace; AttributeError says how to get it


class CpuStream:
    """A stream of the CPU device: work is synchronous, so it is always idle."""

    def __init__(self, priority: int = 0) -> None:
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"Stream priority must be an int, got {type(priority).__name__}")
        self.priority = priority
        self.device = Device("cpu", 0)

    def synchronize(self) -> None:
        """Nothing is pending on the CPU: returns at once."""

    def query(self) -> bool:
        """True: the CPU's work is done when the op returns."""
        return True

    def __enter__(self) -> CpuStream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __repr__(self) -> str:
        return f"<CpuStream priority={self.priority}>"


class Stream:
    """A stream on `device` (default: the default device): ``gp.cuda.Stream`` on a GPU
    (lower priority numbers are more urgent, as in CUDA), a `CpuStream` on the CPU."""

    def __new__(
        cls, priority: int = 0, *, device: Device | str | None = None,
        non_blocking: bool = False,
    ) -> Any:  # fmt: skip
        dev = resolve_device(device)
        if dev.type == "cuda":
            return _cuda().Stream(priority=priority, non_blocking=non_blocking, device=dev.index)
        return CpuStream(priority)


_cpu_default = CpuStream()


def default_stream(device: Device | str | None = None) -> Any:
    """The stream ops use when none is entered: the current CUDA stream, or the CPU's."""
    dev = resolve_device(device)
    if dev.type == "cuda":
        return _cuda().current_stream()
    return _cpu_default


class StreamManager:
    """Streams made for one device, kept so they can be waited for together."""

    def __init__(self, device: Device | str | None = None) -> None:
        self.device = resolve_device(device)
        self.streams: list[Any] = []

    def create_stream(self, priority: int = 0) -> Any:
        stream = Stream(priority, device=self.device)
        self.streams.append(stream)
        return stream

    def synchronize_all(self) -> None:
        for stream in self.streams:
            stream.synchronize()

    def __len__(self) -> int:
        return len(self.streams)


def __getattr__(name: str) -> Any:
    """The seed's CUDA event names: the CUDA plugin's Event, or None without it."""
    if name in ("CudaEvent", "event_elapsed_ms", "event_elapsed_us"):
        try:
            cuda = _cuda()
        except AttributeError:
            return None
        if name == "CudaEvent":
            return cuda.Event
        scale = 1.0 if name == "event_elapsed_ms" else 1000.0
        return lambda start, end: cuda.get_elapsed_time(start, end) * scale
    raise AttributeError(f"module 'pygpukit.core.stream' has no attribute {name!r}")


__all__ = ["CpuStream", "Stream", "StreamManager", "default_stream"]
