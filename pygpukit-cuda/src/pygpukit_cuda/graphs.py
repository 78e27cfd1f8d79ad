"""CUDA graphs (``gp.cuda.Graph``): GPU work captured once and replayed with one launch.

Capture records what the ops enqueue on a stream instead of running it::

    g = gp.cuda.Graph()
    step(x)                      # once eagerly first: kernels compile and load on first use
    with gp.cuda.graph(g):       # or: out = g.capture(step, x)
        y = step(x)              # enqueued into the graph, not run
    x_host[...] = next_input
    x.set(x_host)                # change the inputs in place (device buffers the graph reads)
    g.replay()                   # runs the whole step with one launch; y holds its result

While capturing, every array the region allocates comes from the graph's private memory
pool: it lives as long as the graph (or longer, while an array still holds it), and replays
write into the same blocks, so arrays made inside the region are the graph's outputs. What
cannot be captured raises a RuntimeError naming the operation: host waits
(``synchronize``, ``Event.synchronize``), ``to_numpy`` and other device-to-host reads, and
uploads from host memory. Capture runs on a stream of the graph's own (non-blocking); the
device is synchronized first, so work queued before the capture is done. Replays go to the
current stream, ordered after the work queued there before.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

from . import _loader, streams
from .allocator import DevicePool

_MODES = ("global", "thread_local", "relaxed")


class Graph:
    """A CUDA graph of one GPU: capture with `graph(g)` or `capture(fn)`, then `replay`."""

    def __init__(self, device: int | None = None) -> None:
        self.device_index = 0 if device is None else int(device)
        self._exec: Any = None
        self._pool: DevicePool | None = None
        self._stream: streams.Stream | None = None
        self._token: contextvars.Token[streams.Stream | None] | None = None

    # -- capture -----------------------------------------------------------------------
    def capture_begin(self, stream: streams.Stream | None = None,
                      capture_error_mode: str = "relaxed") -> None:  # fmt: skip
        """Start capturing the ops this thread issues (on `stream`, else a new one)."""
        if self._exec is not None or self._token is not None:
            raise RuntimeError("this Graph was captured already: make a new Graph")
        if capture_error_mode not in _MODES:
            raise ValueError(
                f"capture_error_mode must be one of {', '.join(_MODES)}, got {capture_error_mode!r}"
            )
        if stream is not None and (stream.ptr == 0 or stream.device_index != self.device_index):
            raise ValueError(
                "a graph is captured on a created stream of its own device "
                f"(cuda:{self.device_index}), not {stream!r}"
            )
        from .device import context

        ctx = context(self.device_index)
        ctx.synchronize()  # the capture starts from a quiet device
        s = stream or streams.Stream(non_blocking=True, device=self.device_index)
        pool = DevicePool(ctx, f"cuda:{self.device_index} graph", keep_cache=True)
        mode = getattr(_loader.native(), f"CAPTURE_MODE_{capture_error_mode.upper()}")
        ctx.begin_capture(s.ptr, mode)
        s.capture_pool = pool
        self._stream, self._pool = s, pool
        self._token = streams._current.set(s)

    def capture_end(self) -> None:
        """End the capture and instantiate the graph (raises if the capture was invalid)."""
        if self._token is None or self._stream is None:
            raise RuntimeError("capture_end() without capture_begin()")
        from .device import context

        s = self._stream
        try:
            self._exec = _loader.native().Graph(context(self.device_index), s.ptr)
        finally:
            streams._current.reset(self._token)
            self._token = None
            s.capture_pool = None

    def capture(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Capture ``fn(*args, **kwargs)``; returns what it returned (the graph's outputs)."""
        with graph(self):
            return fn(*args, **kwargs)

    # -- replay ------------------------------------------------------------------------
    def replay(self, stream: streams.Stream | None = None) -> None:
        """Enqueue one run of the captured work on `stream` (the current stream if None)."""
        if self._exec is None:
            raise RuntimeError("replay() of a Graph that was not captured (use gp.cuda.graph)")
        handle = streams.current_handle(self.device_index) if stream is None else stream.ptr
        self._exec.launch(handle)

    @property
    def node_count(self) -> int:
        """Operations the graph holds (kernels, copies, library calls' kernels)."""
        return int(self._exec.node_count) if self._exec is not None else 0

    def memory_stats(self) -> dict[str, Any]:
        """The graph's private pool: its arrays (`used`) and blocks kept for replays."""
        return self._pool.stats() if self._pool is not None else {}

    def __repr__(self) -> str:
        state = f"{self.node_count} nodes" if self._exec is not None else "not captured"
        return f"<Graph cuda:{self.device_index} {state}>"


@contextlib.contextmanager
def graph(g: Graph, stream: streams.Stream | None = None,
          capture_error_mode: str = "relaxed") -> Iterator[Graph]:  # fmt: skip
    """Capture the ops issued inside the block into `g` (see the module note)."""
    g.capture_begin(stream, capture_error_mode)
    try:
        yield g
    except BaseException:
        with contextlib.suppress(Exception):  # the region's own error is the one to see
            g.capture_end()
        g._exec = None
        raise
    g.capture_end()
