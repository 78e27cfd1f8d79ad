"""GPU facts read once per device, the launch shape our 1-D kernels share, and an array's
data address: one home each, so every kernel module asks the same cache."""

from __future__ import annotations

from pygpukit import GPUArray

from .device import context

#: threads per block of the elementwise, copy, cast, creation, movement and reduction kernels
BLOCK = 256

_sm_counts: dict[int, int] = {}
_capabilities: dict[int, int] = {}
_l2_bytes: dict[int, int] = {}


def sm_count(device_index: int) -> int:
    """Multiprocessors of GPU `device_index`."""
    sms = _sm_counts.get(device_index)
    if sms is None:
        from ._loader import driver

        sms = _sm_counts[device_index] = context(device_index).attribute(
            driver().ATTR_MULTIPROCESSOR_COUNT
        )
    return sms


def l2_bytes(device_index: int) -> int:
    """Bytes of L2 cache of GPU `device_index`."""
    size = _l2_bytes.get(device_index)
    if size is None:
        from ._loader import driver

        size = _l2_bytes[device_index] = context(device_index).attribute(
            driver().ATTR_L2_CACHE_SIZE
        )
    return size


def compute_capability(device_index: int) -> int:
    """major * 10 + minor of GPU `device_index` (90 for the H100)."""
    cc = _capabilities.get(device_index)
    if cc is None:
        major, minor = context(device_index).compute_capability()
        cc = _capabilities[device_index] = major * 10 + minor
    return cc


def data_ptr(x: GPUArray) -> int:
    """The device address of `x`'s first element (its buffer's plus its byte offset)."""
    return int(x._buffer.ptr) + x._offset
