"""The framing kernel's NaN/inf flag on a GPU: kept per thread and device, read without
waiting for the work queued after the framing kernel.

The spectral hot path must raise on NaN input (the issue's bad-input rule), so one int32
flag is read back per call. Before, each call made a fresh zeroed flag (an allocation and a
fill launch) and read it on the caller's stream after the FFT was queued: that read waited
for the whole transform, so the host sat idle while the GPU finished, and the GPU sat idle
while the host set up the next call (on the H100, ~110 us of gaps per 600 s stft).

Here the flag outlives the call: it is zeroed again only when it may hold a 1 (it was seen
set, or a call stopped before reading it). An event is recorded right after the framing
kernel, and the read runs on a side stream that waits for that event only, so it returns
once the frames are checked while the FFT (and whatever follows) still runs; the next call's
host work then overlaps the device. The flag belongs to one thread, whose calls read it
synchronously, so no two calls share it in flight.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pygpukit as gp
from pygpukit import GPUArray


class Flag:
    """One device's int32 NaN flag of this thread, its event and its side stream."""

    __slots__ = ("array", "dirty", "event", "side")

    def __init__(self, like: GPUArray) -> None:
        index = like.device.index
        self.array = gp.zeros((1,), dtype=gp.int32, device=like.device)
        self.dirty = False  # True while the flag may hold a 1 from an earlier call
        self.event = _cuda().Event(timing=False, device=index)
        # non-blocking: a side stream that is not ordered after the legacy default stream
        # (where the caller's FFT runs when no stream is set)
        self.side = _cuda().Stream(non_blocking=True, device=index)

    def reader(self, fn: str, name: str) -> Callable[[], None]:
        """Mark the framing kernel just queued on the current stream; the returned call
        reads its verdict (waiting for that kernel only) and raises as finite_check."""
        self.event.record(_cuda().current_stream(self.array.device.index))

        def confirm() -> None:
            self.side.wait_event(self.event)
            with self.side:
                bad = int(self.array.to_numpy()[0])
            if bad:  # stays dirty: the next call zeroes it first
                raise ValueError(f"{fn}: {name} contains NaN or infinite samples")
            self.dirty = False

        return confirm


_local = threading.local()


def take(like: GPUArray) -> Flag | None:
    """This thread's zeroed flag on like's GPU (queued zeroing only when it may be set), or
    None while the current stream captures a CUDA graph (the caller then makes a fresh flag:
    a capture cannot read one back anyway, and its allocations belong to the graph)."""
    index = like.device.index
    if _capturing(index):
        return None
    flags: dict[int, Flag] | None = getattr(_local, "flags", None)
    if flags is None:
        flags = _local.flags = {}
    flag = flags.get(index)
    if flag is None:
        flag = flags[index] = Flag(like)
    elif flag.dirty:
        flag.array[...] = 0  # on the current stream, before this call's framing kernel
    flag.dirty = True  # until a read finds it clear
    return flag


def forget() -> None:
    """Drop this thread's flags (their device memory goes back to the pool)."""
    _local.__dict__.pop("flags", None)


def _capturing(index: int) -> bool:
    stream: Any = _cuda().current_stream(index)
    return getattr(stream, "capture_pool", None) is not None


def _cuda() -> Any:
    """gp.cuda, asked of pygpukit's module __getattr__ once (~3 us a time)."""
    global _namespace
    if _namespace is None:
        _namespace = gp.cuda
    return _namespace


_namespace: Any = None
