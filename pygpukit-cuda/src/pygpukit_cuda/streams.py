"""Streams and events (``gp.cuda``), the current stream, and stream-ordered memory.

``with stream:`` makes a `Stream` current for the ops issued in that thread or asyncio task
(a ContextVar); every kernel the backend launches, and its host/device copies, go to the
current stream, the legacy default stream when none is set. Nothing here synchronizes the
whole device except `synchronize()` itself; ``to_numpy()`` waits for the current stream only.

Memory rule: a block allocated while a non-default stream is current belongs to that stream.
When its last array dies, an event is recorded on that stream and the block goes back to
the pool only once the event has completed, so no other stream can reuse memory a kernel
may still touch. Using an array on a second stream is ordered by the user (record an event
on the first stream and ``wait_event`` on the second), as in CuPy and PyTorch.
"""

from __future__ import annotations

import contextvars
import ctypes
import threading
import weakref
from typing import Any

from . import _loader
from .errors import CudaContextLostError

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

    def __init__(self, priority: int = 0, non_blocking: bool = False, *,
                 device: int | None = None) -> None:  # fmt: skip
        self.device_index = _default_index() if device is None else int(device)
        self._native = _loader.driver().Stream(_context(self.device_index), int(priority),
                                                bool(non_blocking))  # fmt: skip
        self.ptr = int(self._native.handle)
        self.priority = int(priority)
        self.non_blocking = bool(non_blocking)
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
        self._native.synchronize()
        reap()

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
        self._tokens = []

    def synchronize(self) -> None:
        _cu().cuStreamSynchronize(None)
        reap()

    def query(self) -> bool:
        return _cu().cuStreamQuery(None) == 0

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


def current_handle(device_index: int) -> int:
    """The CUstream kernels on `device_index` launch on (the fast path of the launcher)."""
    s = _current.get()
    if s is None:
        return 0
    if s.device_index != device_index:
        raise ValueError(
            f"the current stream belongs to cuda:{s.device_index}, not cuda:{device_index}"
        )
    return s.ptr


def synchronize() -> None:
    """Wait until every GPU this process used has finished all its work."""
    from .device import _contexts

    for ctx in list(_contexts.values()):
        ctx.synchronize()
    reap()


# -- stream-ordered copies (the driver's async copies through ctypes) -----------------------
_cu_lib: Any = None


def _cu() -> Any:
    global _cu_lib
    if _cu_lib is None:
        lib = ctypes.CDLL("libcuda.so.1")
        u64, vp, sz = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t
        for name, args in (
            ("cuMemcpyHtoDAsync_v2", (u64, vp, sz, vp)),
            ("cuMemcpyDtoHAsync_v2", (vp, u64, sz, vp)),
            ("cuMemcpyDtoDAsync_v2", (u64, u64, sz, vp)),
            ("cuStreamSynchronize", (vp,)),
            ("cuStreamQuery", (vp,)),
        ):
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, ctypes.c_int
        _cu_lib = lib
    return _cu_lib


def _check(rc: int, what: str) -> None:
    # the native check: same messages, and CudaContextLostError for a faulted kernel's codes
    if rc:
        _loader.driver().check(rc, what)


def upload(ctx: Any, dst: int, host_ptr: int, nbytes: int, stream: int) -> None:
    ctx.make_current()
    _check(_cu().cuMemcpyHtoDAsync_v2(dst, host_ptr, nbytes, stream), "cuMemcpyHtoDAsync")


def download(ctx: Any, host_ptr: int, src: int, nbytes: int, stream: int) -> None:
    """Copy to the host and wait for `stream` only."""
    ctx.make_current()
    lib = _cu()
    _check(lib.cuMemcpyDtoHAsync_v2(host_ptr, src, nbytes, stream), "cuMemcpyDtoHAsync")
    _check(lib.cuStreamSynchronize(stream), "cuStreamSynchronize")


def copy_device(ctx: Any, dst: int, src: int, nbytes: int, stream: int) -> None:
    if stream == 0:
        ctx.copy(dst, src, nbytes)
        return
    ctx.make_current()
    _check(_cu().cuMemcpyDtoDAsync_v2(dst, src, nbytes, stream), "cuMemcpyDtoDAsync")


# -- stream-ordered frees ---------------------------------------------------------------------
class StreamBuffer:
    """A device block allocated on a non-default stream; it returns to the pool only after
    the work queued on that stream when the block died has finished."""

    __slots__ = ("__weakref__", "inner", "stream")

    def __init__(self, inner: Any, stream: Stream) -> None:
        self.inner = inner
        self.stream = stream

    @property
    def ptr(self) -> int:
        return self.inner.ptr

    @property
    def nbytes(self) -> int:
        return self.inner.nbytes

    @property
    def context(self) -> Any:
        return self.inner.context

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"<StreamBuffer {self.inner!r} on {self.stream!r}>"


_pending: list[tuple[Any, Any]] = []  # (native event, block kept alive until it completes)
_pending_lock = threading.Lock()


def _retire(inner: Any, stream: Stream) -> None:
    try:
        ev = _loader.driver().Event(_context(stream.device_index), False)
        ev.record(stream.ptr)
    except Exception:  # the driver is gone (interpreter exit): nothing runs any more
        return
    with _pending_lock:
        _pending.append((ev, inner))


def track(buffer: Any) -> Any:
    """`buffer` tied to the current stream when one is set (else unchanged)."""
    if _pending:
        reap()
    s = _current.get()
    if s is None or not buffer.nbytes:
        return buffer
    wrapped = StreamBuffer(buffer, s)
    fin = weakref.finalize(wrapped, _retire, buffer, s)
    fin.atexit = False
    return wrapped


def reap() -> int:
    """Give back the blocks whose streams have passed their free; how many are still held."""
    with _pending_lock:
        keep = [(ev, b) for ev, b in _pending if not ev.query()]
        done = len(_pending) - len(keep)
        _pending[:] = keep
    del done
    return len(keep)


def stream_priority_range(device: int | None = None) -> tuple[int, int]:
    """(least, greatest) stream priority of a GPU; numerically, greatest <= least."""
    index = _default_index() if device is None else int(device)
    least, greatest = _context(index).stream_priority_range()
    return int(least), int(greatest)


def pending_frees() -> int:
    """Blocks freed on a stream whose work has not finished yet (held back from the pool)."""
    return reap()


class _Namespace:
    """``gp.cuda``: streams and events as CuPy users know them."""

    Stream = Stream
    Event = Event
    CudaContextLostError = CudaContextLostError
    current_stream = staticmethod(current_stream)
    get_elapsed_time = staticmethod(get_elapsed_time)
    synchronize = staticmethod(synchronize)
    pending_frees = staticmethod(pending_frees)
    stream_priority_range = staticmethod(stream_priority_range)

    def __repr__(self) -> str:
        return "<pygpukit.cuda: Stream, Event, current_stream, get_elapsed_time, synchronize>"


namespace = _Namespace()

__all__ = [
    "Event", "Stream", "current_stream", "get_elapsed_time", "pending_frees",
    "stream_priority_range", "synchronize",
]  # fmt: skip
