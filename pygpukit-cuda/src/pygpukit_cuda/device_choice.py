"""Which GPU a user-compiled kernel is built for first, with a clear error when there is
none (shared by `jit`, `RawModule` and `ElementwiseKernel`)."""

from __future__ import annotations

from typing import Any

from . import _loader
from ._loader import CudaUnavailable


def require_gpu(what: str, device: Any = None) -> int:
    """The index of `device` (default: the first GPU); raises CudaUnavailable naming
    `what` when no driver or no GPU is there."""
    try:
        count = _loader.driver().device_count()
    except CudaUnavailable as exc:
        raise CudaUnavailable(f"{what} needs a CUDA GPU: {exc}") from None
    if count == 0:
        raise CudaUnavailable(f"{what} needs a CUDA GPU: the driver sees none")
    if device is None:
        return 0
    from pygpukit import Device

    index = Device.parse(device).index
    if not 0 <= index < count:
        raise ValueError(f"{what}: there is no cuda:{index} (the driver sees {count} GPU(s))")
    return index
