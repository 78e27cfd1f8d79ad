"""Host<->device copies of CUDA arrays, through the Rust runtime's transfer engine.

Uploads and downloads are enqueued on the current stream (the legacy default stream when
none is set), so an upload is seen by every later kernel on that stream and waits for every
earlier one, with no cross-stream event: the order CuPy and PyTorch users expect. The Rust
`StreamCopier` cuts large copies into chunks staged through pooled pinned memory, two
buffers per host thread, so the memcpy of one chunk overlaps the DMA of the previous one.
`upload` returns once the host array has been read (the last DMAs may still run);
`download` returns once `out` holds the data, having waited for that stream only: nothing
here synchronizes the whole device. Uploads below 2 MiB skip staging (the driver's
pageable path was as fast up to 1 MiB on the H100); downloads are staged at every size
(`PYGPUKIT_TRANSFER_DIRECT_BYTES` sets one threshold for both, `..._THREADS` the most host
threads per copy, `..._CHUNK_BYTES` the largest chunk). Buffers that are not blocks of
the Rust pool (the Python caching allocator, foreign DLPack memory) take the driver's
async copies from pageable memory instead.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from . import _loader, streams

# The table slots the Rust copier names in its errors, and the driver call behind each.
_CALLS = {
    "copy_h2d_async": "cuMemcpyHtoDAsync",
    "copy_d2h_async": "cuMemcpyDtoHAsync",
    "event_create": "cuEventCreate",
    "event_record": "cuEventRecord",
    "event_synchronize": "cuEventSynchronize",
}

_copiers: dict[int, Any] = {}
_lock = threading.Lock()


def _tuning() -> dict[str, int]:
    """Copier settings from the environment (unset ones keep the Rust defaults)."""
    out = {}
    for key, env in (("direct_below", "PYGPUKIT_TRANSFER_DIRECT_BYTES"),
                     ("threads", "PYGPUKIT_TRANSFER_THREADS"),
                     ("chunk_max", "PYGPUKIT_TRANSFER_CHUNK_BYTES")):  # fmt: skip
        raw = os.environ.get(env)
        if raw:
            try:
                out[key] = int(raw)
            except ValueError:
                raise ValueError(f"{env} must be an integer, got {raw!r}") from None
    return out


def copier(index: int) -> Any:
    """The Rust StreamCopier of GPU `index`, made on first use."""
    c = _copiers.get(index)
    if c is None:
        import _pygpukit_rust as rust

        from .device import allocator

        pool = allocator(index).pool
        with _lock:
            c = _copiers.get(index)
            if c is None:
                c = _copiers[index] = rust.StreamCopier(pool, **_tuning())
    return c


def _device_error(exc: Exception) -> RuntimeError:
    call = getattr(exc, "call", None)
    code = getattr(exc, "code", None)
    if call is None or code is None:
        return RuntimeError(str(exc))
    name = _CALLS.get(call, call)
    try:  # the native check: its message, and CudaContextLostError for a faulted kernel
        _loader.driver().check(int(code), name)
    except RuntimeError as native:
        return native
    return RuntimeError(f"{name} failed with CUDA error {code}")


def _check_range(what: str, buffer: Any, offset: int, host: np.ndarray) -> None:
    if not isinstance(host, np.ndarray):
        raise TypeError(f"{what} needs a NumPy array, got {type(host).__name__}")
    if not host.flags.c_contiguous:
        raise ValueError(
            f"{what} needs a C-contiguous host array; got shape {host.shape} with strides "
            f"{host.strides} (pass np.ascontiguousarray(x))"
        )
    if offset < 0 or offset + host.nbytes > buffer.nbytes:
        raise ValueError(
            f"{what} of {host.nbytes} bytes at offset {offset} does not fit the device "
            f"buffer of {buffer.nbytes} bytes"
        )


def upload(buffer: Any, offset: int, host: np.ndarray) -> None:
    """Copy `host`'s bytes into `buffer` at byte `offset` on the current stream."""
    _check_range("upload", buffer, offset, host)
    if host.nbytes:
        _copy("upload", buffer, offset, host)


def download(buffer: Any, offset: int, out: np.ndarray) -> None:
    """Fill `out` from `buffer` at byte `offset`, after the current stream's earlier work."""
    _check_range("download", buffer, offset, out)
    if not out.flags.writeable:
        raise ValueError("download needs a writable host array")
    if out.nbytes:
        _copy("download", buffer, offset, out)


def _copy(direction: str, buffer: Any, offset: int, host: np.ndarray) -> None:
    """On the current stream, through the Rust copier (pool blocks and foreign memory
    alike: it takes the device address)."""
    ctx = buffer.context
    stream = streams.current_handle(ctx.ordinal)
    if direction == "upload":
        streams.check_not_capturing("a host-to-device copy (GPUArray upload)")
    else:
        streams.check_not_capturing("a device-to-host copy (to_numpy)")
    c = copier(ctx.ordinal)
    try:
        if direction == "upload":  # the range was checked by _check_range
            c.upload_to(buffer.ptr + offset, host, stream)
        else:
            c.download_from(buffer.ptr + offset, host, stream)
    except RuntimeError as exc:
        if hasattr(exc, "code"):
            raise _device_error(exc) from None
        raise


def stats(index: int = 0) -> dict[str, Any]:
    """The copier's counters for GPU `index` (empty when none was made yet)."""
    c = _copiers.get(index)
    return dict(c.stats()) if c else {}


def trim(index: int = 0) -> int:
    """Wait for uploads in flight on GPU `index`, free its cached staging; bytes freed."""
    c = _copiers.get(index)
    return int(c.trim()) if c else 0
