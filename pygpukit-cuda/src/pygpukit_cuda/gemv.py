"""The one-row product of 16-bit matrices (CUDA C in ``kernels/gemv_source.py``) and when
it serves a matmul: sm_90+ GPUs, 2-D float16 or bfloat16 operands and output, one row of
x, a w whose rows are contiguous and 16-byte aligned with N a multiple of 8.

Why: at decode shapes a product is one read of w, and cuBLASLt's own host time per call
(10-15 us on the lent H100) is most of the call. This is one plain launch through a native
LaunchPlan. Set ``PYGPUKIT_GEMV=0`` (or ``ENABLED = False``) to time cuBLASLt against it;
matmul keeps each layout's choice in its plan cache, so a change of ``ENABLED`` in a running
process holds for new layouts only (``plans.forget()`` drops the others).
"""

from __future__ import annotations

import os
import struct
from typing import Any

from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from . import launch_limits, launch_plan, launcher, streams
from .device_facts import compute_capability, sm_count
from .device_facts import data_ptr as _ptr
from .kernels import gemv_source as gs

#: whether the kernel may serve (the env variable is read at import)
ENABLED = os.environ.get("PYGPUKIT_GEMV", "1") != "0"
#: devices where the cluster launch was refused (cuBLASLt serves them from then on)
_refused: set[int] = set()


def status() -> str:
    """One line: whether and where the kernel serves products."""
    if not ENABLED:
        return "off (PYGPUKIT_GEMV=0): cuBLASLt serves one-row products"
    refused = f"; the driver refused it on cuda:{sorted(_refused)}" if _refused else ""
    return ("on: one-row float16/bfloat16 products on sm_90+ GPUs (w rows contiguous and "
            f"16-byte aligned, N a multiple of 8){refused}")  # fmt: skip


def serves(x1: GPUArray, x2: GPUArray, out: GPUArray) -> bool:
    """Whether the kernel takes out = x1 @ x2 (2-D operands of out's dtype)."""
    d = out._dtype
    if not ENABLED or (d is not dt.bfloat16 and d is not dt.float16):
        return False
    if x1._dtype is not d or x2._dtype is not d or len(x1._shape) != 2 or len(x2._shape) != 2:
        return False
    m, k = x1._shape
    n = x2._shape[1]
    if m != 1 or k == 0 or n == 0 or n % 8:
        return False
    row, step = x2._strides
    if step != 2 or row % 16 or _ptr(x2) % 16:
        return False
    if _ptr(x1) % 2 or x1._strides[1] % 2:
        return False
    index = out._device.index
    return index not in _refused and compute_capability(index) >= 90


class Ready:
    """The planned kernel for one operand layout, called as matmul's cache calls a cuBLASLt
    product: (x1, x2, out) pointers, on the current stream."""

    __slots__ = ("index", "plan")

    def __init__(self, plan: Any, index: int) -> None:
        self.plan, self.index = plan, index

    def __call__(self, a_ptr: int, b_ptr: int, out_ptr: int) -> None:
        self.plan(streams.current_handle(self.index), out_ptr, a_ptr, b_ptr)


def plan(x1: GPUArray, x2: GPUArray, out: GPUArray) -> Ready:
    """The kernel's launch for these layouts (`serves` said yes)."""
    k, n = x2.shape
    index = out.device.index
    strip = gs.strip_for(n, sm_count(index))
    name, src = gs.gemv_kernel(out.dtype, strip)
    fn = launcher.function(index, name, src, gs.ARG_FORMAT)
    # strides in bytes, as the kernel takes them
    params = struct.pack(gs.ARG_FORMAT, 0, 0, 0, n, k, x1.strides[1], x2.strides[0])
    grid = (gs.CLUSTER, -(-n // strip), 1)
    slots = [(0, "P"), (8, "P"), (16, "P")]
    return Ready(launch_plan.make(fn.context, fn.handle, grid, (gs.THREADS,), 0, params, slots),
                 index)  # fmt: skip


def run(x1: GPUArray, x2: GPUArray, out: GPUArray) -> Ready | None:
    """Plan and run out = x1 @ x2; its Ready, or None (nothing run) where the driver refused
    the cluster launch, after which this device is not tried again."""
    ready = plan(x1, x2, out)
    try:
        ready(_ptr(x1), _ptr(x2), _ptr(out))
    except RuntimeError as exc:
        if not launch_limits.cluster_launch_refused(exc):
            raise
        _refused.add(out.device.index)
        return None
    return ready
