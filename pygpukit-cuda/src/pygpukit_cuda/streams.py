"""Streams and events (``gp.cuda``), the current stream, and stream-ordered memory.

``with stream:`` makes a `Stream` current for the ops issued in that thread or asyncio task
(a ContextVar); every kernel the backend launches, and its host/device copies, go to the
current stream, the legacy default stream when none is set. Nothing here synchronizes the
whole device except `synchronize()` itself; ``to_numpy()`` waits for the current stream only.

Memory rule: a block allocated while a stream is current belongs to that stream; when its
last array dies it returns to that stream's cache in the Rust pool and is reused there at
once (see `allocator`). Using an array on a second stream is ordered by the user (record an
event on the first stream and ``wait_event`` on the second), as in CuPy and PyTorch.
While a stream captures a CUDA graph (`graphs`), its allocations come from the graph's
private pool (`capture_pool`).
"""

from __future__ import annotations

import contextvars
from typing import Any

from . import _loader

_current: contextvars.ContextVar[Stream | None] = contextvars.ContextVar(
    "pygpukit_cuda_stream", default=None
)


def _context(index: int) -> Any:
    from .device import context

    return context(index)


def _default_index() -> int:
    return 0


class Stream:
    """A CUDA stream of one GPU. ``with stream:`` makes it current; ``ptr`` is its handle.

    ``priority``: lower numbers run first (``stream_priority_range()`` gives the bounds);
    ``non_blocking=True`` lets it run concurrently with the legacy default stream.
    """

    # slots: the native fast paths read capture_pool, device_index and ptr on every launch
    # with a stream current, through descriptors rather than instance-dict lookups
    __slots__ = ("__dict__", "__weakref__", "_native", "_tokens", "capture_pool",
                 "device_index", "non_blocking", "priority", "ptr")  # fmt: skip

    def __init__(self, priority: int = 0, non_blocking: bool = False, *,
                 device: int | None = None, green: Any = None) -> None:  # fmt: skip
        """`green`: a native green context (see green.py) whose SMs the stream's kernels
        run on; such streams are always non-blocking."""
        self.device_index = _default_index() if device is None else int(device)
        if green is not None:
            self._native = _loader.driver().Stream(green, int(priority))
            non_blocking = True
        else:
            self._native = _loader.driver().Stream(_context(self.device_index), int(priority),
                                                    bool(non_blocking))  # fmt: skip
        self.ptr = int(self._native.handle)
        self.priority = int(priority)
        self.non_blocking = bool(non_blocking)
        #: the graph's private pool while this stream captures one (see graphs.py), else None
        self.capture_pool: Any = None
        self._tokens: list[contextvars.Token[Stream | None]] = []

    # -- current stream ------------------------------------------------------------------
    def __enter__(self) -> Stream:
        self._tokens.append(_current.set(self))
        return self

    def __exit__(self, *exc: Any) -> None:
        _current.reset(self._tokens.pop())

    def use(self) -> Stream:
        """Make this the current stream (until another `use` or an enclosing exit)."""
        _current.set(self)
        return self

    # -- work ----------------------------------------------------------------------------
    def synchronize(self) -> None:
        """Wait until everything queued on this stream has finished."""
        _no_capture(self, "Stream.synchronize()")
        self._native.synchronize()

    def query(self) -> bool:
        """True when all work queued on this stream has finished."""
        return bool(self._native.query())

    def record(self, event: Event | None = None) -> Event:
        """Record `event` (a new one when None) on this stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Later work on this stream waits until `event` has completed (no host wait)."""
        event._native.wait_on(self.ptr)

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.ptr)

    def __repr__(self) -> str:
        return f"<Stream 0x{self.ptr:x} on cuda:{self.device_index} priority={self.priority}>"


class _NullStream(Stream):
    """The legacy default stream (handle 0) of a device."""

    def __init__(self, device: int = 0) -> None:
        self.device_index = device
        self._native = None
        self.ptr = 0
        self.priority = 0
        self.non_blocking = False
        self.capture_pool = None
        self._tokens = []

    def synchronize(self) -> None:
        _context(self.device_index).stream_synchronize(0)

    def query(self) -> bool:
        return bool(_context(self.device_index).stream_query(0))

    def __repr__(self) -> str:
        return f"<Stream null on cuda:{self.device_index}>"


class Event:
    """A CUDA event; ``timing=False`` (or ``disable_timing=True``) makes it cheaper."""

    def __init__(self, timing: bool = True, *, disable_timing: bool | None = None,
                 device: int | None = None) -> None:  # fmt: skip
        if disable_timing is not None:
            timing = not disable_timing
        self.device_index = _default_index() if device is None else int(device)
        self.timing = bool(timing)
        self._native = _loader.driver().Event(_context(self.device_index), self.timing)
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        """Record on `stream` (the current stream when None)."""
        s = current_stream(self.device_index) if stream is None else stream
        self._native.record(s.ptr)
        self._recorded = True

    def synchronize(self) -> None:
        """Wait on the host until the work before the recording has finished."""
        _no_capture(current_stream(self.device_index), "Event.synchronize()")
        self._native.synchronize()

    def query(self) -> bool:
        """True once the work before the recording has finished (or never recorded)."""
        return bool(self._native.query())

    def __repr__(self) -> str:
        return f"<Event on cuda:{self.device_index} timing={self.timing}>"


def get_elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two recorded, completed timing events."""
    return float(end._native.elapsed_since(start._native))


_nulls: dict[int, _NullStream] = {}


def current_stream(device: int | None = None) -> Stream:
    """The stream ops go to now: the one made current with ``with``, else the null stream."""
    s = _current.get()
    if s is not None:
        return s
    index = _default_index() if device is None else device
    null = _nulls.get(index)
    if null is None:
        null = _nulls[index] = _NullStream(index)
    return null


def current(device_index: int) -> Stream:
    """The stream ops on GPU `device_index` go to now (its null stream when none is set)."""
    s = _current.get()
    if s is None:
        return current_stream(device_index)
    if s.device_index != device_index:
        raise ValueError(
            f"the current stream belongs to cuda:{s.device_index}, not cuda:{device_index}"
        )
    return s


def current_handle(device_index: int) -> int:
    """The CUstream kernels on `device_index` launch on (the fast path of the launcher)."""
    s = _current.get()
    if s is None:
        return 0
    if s.device_index != device_index:
        current(device_index)  # raises, naming both devices
    return s.ptr


def synchronize() -> None:
    """Wait until every GPU this process used has finished all its work."""
    from .device import _contexts

    _no_capture(_current.get(), "gp.cuda.synchronize()")
    for ctx in list(_contexts.values()):
        ctx.synchronize()


def _no_capture(stream: Stream | None, what: str) -> None:
    """Refuse a host wait while `stream` captures a graph (the capture would be invalid)."""
    if stream is not None and stream.capture_pool is not None:
        raise RuntimeError(
            f"{what} cannot run while a CUDA graph is being captured: it waits for the GPU. "
            "Move it before the capture or after it (around replay())"
        )


def check_not_capturing(what: str) -> None:
    """Raise naming `what` when the current stream is capturing a graph (a host sync,
    to_numpy, or a host copy cannot be captured)."""
    _no_capture(_current.get(), what)


def stream_priority_range(device: int | None = None) -> tuple[int, int]:
    """(least, greatest) stream priority of a GPU; numerically, greatest <= least."""
    index = _default_index() if device is None else int(device)
    least, greatest = _context(index).stream_priority_range()
    return int(least), int(greatest)


def pending_frees() -> int:
    """Blocks held back from the pool after their arrays died: always 0, since the pool
    is stream-ordered (a block returns to its stream's cache at once). Kept for callers of
    earlier versions."""
    return 0


__all__ = [
    "Event", "Stream", "current_stream", "get_elapsed_time", "pending_frees",
    "stream_priority_range", "synchronize",
]  # fmt: skip
