"""Our own batched rfft of 1024-point rows (CUDA C in ``kernels/rfft_source.py``), and which
calls it takes instead of cuFFT.

Measured reason it exists (H100, 4096 rows of 1024 float32 points, one probe run of
scripts/probe_rfft_kernel.py): with the input in L2, cuFFT's r2c kernel (the one torch runs)
took 13.7 us and this one 11.1; with the input cold in DRAM, both 13.7-13.8, 1.6 us over a
plain copy of the same bytes. This kernel is a warp per row, each warp walking rows with
the next row's loads in flight. It takes ``fft_r2c`` (see `serves`) when:

- the transform is over the last axis only, of n = 1024 points (``supported``);
- the input is float32 on a cuda device, C-contiguous, 8-byte aligned; the output is the
  op layer's new contiguous array.

Everything else, and every call while ``PYGPUKIT_FFT_KERNELS=0`` (or ``ENABLED = False``),
goes to cuFFT. The norm's scaling is folded into the kernel.
"""

from __future__ import annotations

import os
from typing import Any

from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from . import launch_plan, launcher
from .device_facts import data_ptr as _ptr
from .device_facts import sm_count
from .kernels import rfft_source

#: whether our kernel may serve (the env variable is read at import)
ENABLED = os.environ.get("PYGPUKIT_FFT_KERNELS", "1") != "0"
_ARGS = "@QQqf"
#: rows (one warp each) a block transforms at a time, and blocks per SM in the grid: each
#: warp walks rows with the next one's loads in flight (scripts/probe_rfft_kernel.py times
#: the choices)
ROWS_PER_BLOCK = rfft_source.ROWS_PER_BLOCK
BLOCKS_PER_SM = 1


def serves(x: GPUArray, out: GPUArray, axes: tuple[int, ...]) -> bool:
    """Whether our kernel takes this r2c call (the rules are the module docstring's)."""
    if not ENABLED or x._dtype is not dt.float32 or x._device.type != "cuda":
        return False
    if len(axes) != 1 or axes[0] != x.ndim - 1 or not rfft_source.supported(x._shape[-1]):
        return False
    return x.is_contiguous and out.is_contiguous and _ptr(x) % 8 == 0


def _launch(x: GPUArray) -> tuple[Any, int, int, int]:
    """(kernel, grid, threads a block, rows) for x's layout."""
    n, per = x._shape[-1], ROWS_PER_BLOCK
    fn = launcher.function(x._device.index, rfft_source.kernel_name(n, per),
                           rfft_source.source(n, per), _ARGS)  # fmt: skip
    rows = x.size // n
    grid = max(1, min(-(-rows // per), sm_count(x._device.index) * BLOCKS_PER_SM))
    return fn, grid, 32 * per, rows


def run(x: GPUArray, out: GPUArray, scale: float) -> None:
    """out = rfft(x) over the last axis, times `scale` (on the current stream)."""
    fn, grid, threads, rows = _launch(x)
    fn.launch((grid,), (threads,), (_ptr(x), _ptr(out), rows, scale))


def plan(x: GPUArray, scale: float) -> Any:
    """A launch plan of `run` for x's layout: ``plan(stream, in, out)`` (the FftCall's)."""
    fn, grid, threads, rows = _launch(x)
    params = fn.packer.pack(0, 0, rows, scale)
    return launch_plan.make(fn.context, fn.handle, (grid,), (threads,), 0, params,
                            [(0, "P"), (8, "P")])  # fmt: skip
