"""Zero-copy exchange of CUDA arrays: DLPack (export and import) and the CUDA array
interface v3, with the stream handshake both protocols ask for.

Export (``__dlpack__(stream=s)``): the consumer names the stream it will read on (1 the
legacy default stream, 2 the per-thread one, -1 no synchronisation); when that is not our
current stream, an event recorded on ours is made a dependency of theirs, so no host wait.
Import (``gp.from_dlpack``): we name our current stream, the producer orders its work
before it, and the memory is wrapped without a copy; the producer's deleter runs when the
last array using it dies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygpukit.backend import DLPACK_CUDA as KDL_CUDA
from pygpukit.backend import export_dlpack as export_array

from . import _loader, streams

if TYPE_CHECKING:
    from pygpukit import GPUArray

_LEGACY, _PER_THREAD = 1, 2


def _consumer_handle(stream: Any) -> int | None:
    """The CUstream a DLPack/CAI stream number names; None: no synchronisation asked."""
    if stream is None:
        return 0  # the protocol's default: the legacy default stream
    s = int(stream)
    if s == -1:
        return None
    if s == 0:
        raise ValueError("stream=0 is ambiguous in DLPack; use 1 (legacy default) or 2")
    return 0 if s == _LEGACY else s  # 2 is CU_STREAM_PER_THREAD's own handle value


def order_before(array: GPUArray, consumer: int | None) -> None:
    """Make work on `consumer` wait for the work queued so far on our current stream."""
    if consumer is None:
        return
    index = array.device.index
    ours = streams.current_handle(index)
    if ours == consumer:
        return
    ev = _loader.driver().Event(streams._context(index), False)
    ev.record(ours)
    ev.wait_on(consumer)


def dlpack(array: GPUArray, *, stream: Any = None, max_version: Any = None,
           dl_device: Any = None, copy: bool | None = None) -> Any:  # fmt: skip
    order_before(array, _consumer_handle(stream))
    return export_array(
        array, KDL_CUDA, array.device.index,
        max_version=max_version, dl_device=dl_device, copy=copy,
    )  # fmt: skip


def dlpack_device(array: GPUArray) -> tuple[int, int]:
    return (KDL_CUDA, array.device.index)


def dlpack_consumer_stream(device: Any) -> int:
    """The stream number we pass to a producer: our current stream (1 for the legacy one)."""
    handle = streams.current_handle(device.index)
    return handle if handle else _LEGACY


def cuda_array_interface(array: GPUArray) -> dict[str, Any]:
    typestr = array.dtype.to_numpy_dtype().str
    handle = streams.current_handle(array.device.index)
    return {
        "shape": array.shape,
        "typestr": typestr,
        "descr": [("", typestr)],
        "data": (array.buffer.ptr + array.offset if array.size else 0, False),
        "strides": None if array.is_contiguous else array.strides,
        "version": 3,
        # the stream the data is ready on: consumers wait on it (1: legacy default stream)
        "stream": handle if handle else _LEGACY,
    }


def adopt_foreign(owner: Any, device: Any) -> Any:
    """A foreign DLPack buffer made usable by this backend (it needs a context)."""
    from .device import context

    owner.context = context(device.index)
    return owner
