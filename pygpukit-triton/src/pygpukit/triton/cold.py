"""Copies of a kernel's inputs, laid out as the originals, for timing launches whose inputs
are not in L2 (autotune.choose's `spread`): as the benchmark rotates input copies."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from pygpukit import GPUArray
from pygpukit.backend import as_dtype

#: the copies together span this many times the L2 (the benchmark's rotation: 4)
SPAN = 4
#: at most this many sets (the caller's own included; the benchmark's cap), and bytes of copies
MAX_SETS = 64
MAX_BYTES = 1 << 30
#: the L2 assumed where the device does not say (the benchmark's fallback too)
DEFAULT_L2 = 64 << 20


@functools.cache
def _l2_of(device: Any) -> int:
    from pygpukit._placement import backend_of

    try:
        return int(backend_of(device).info(device).get("l2_cache_bytes") or 0) or DEFAULT_L2
    except Exception:  # a backend without the attribute
        return DEFAULT_L2


def how_many(nbytes: int, l2: int) -> int:
    """Sets (the caller's included) that together span SPAN times `l2`, within the caps;
    1 when one set already does."""
    if nbytes <= 0:
        return 1
    need = math.ceil(SPAN * l2 / nbytes)
    return max(1, min(need, MAX_SETS, MAX_BYTES // nbytes + 1))


def sets(arrays: Sequence[GPUArray], l2: int | None = None) -> list[list[GPUArray]]:
    """[arrays, copy, copy, ...]: each copy views a new buffer with the original's bytes at
    the same offsets and strides, so a launch on it compiles to the same kernel (16-byte
    alignment included; a copy that would change it is dropped). Arrays that share a
    buffer (q, k and v of one projection) share its copy."""
    buffers: dict[int, Any] = {}
    for a in arrays:
        buffers.setdefault(id(a._buffer), a._buffer)
    nbytes = sum(int(b.nbytes) for b in buffers.values())
    device = arrays[0]._device
    n = how_many(nbytes, _l2_of(device) if l2 is None else l2)
    out = [list(arrays)]
    byte = as_dtype("uint8")
    for _ in range(n - 1):
        fresh = {}
        for key, buf in buffers.items():
            # the whole buffer, byte for byte: offsets and strides keep their meaning
            copy = GPUArray(buf, (int(buf.nbytes),), byte, device).copy()
            if (copy._buffer.ptr + copy._offset - buf.ptr) % 16:
                break  # a different alignment would tune another specialisation
            fresh[key] = (copy._buffer, copy._offset)
        else:
            out.append([
                GPUArray(fresh[id(a._buffer)][0], a.shape, a.dtype, device, a.strides,
                         a.offset + fresh[id(a._buffer)][1])
                for a in arrays
            ])  # fmt: skip
    return out
