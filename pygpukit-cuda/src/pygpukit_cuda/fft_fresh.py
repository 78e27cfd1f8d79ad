"""The FFT kernels' ``fresh_for``: a repeated gp.fft call as one native ``FftCall``.

After a call that took the single-pass path (`fft_kernels._fast`), the op layer asks
``kernel.fresh_for(x, out, *args)`` (see `pygpukit.ops_catalog`) and keeps what it returns
for that input layout. The ``FftCall`` (``native/fft_call.hpp``) then does the whole call:
it checks the input's layout, takes the output, the work area (and for c2r the private
input copy) from the device's pool on the current stream, runs the scaled copy or the
cuFFT plan (or our own rfft kernel's launch plan, `rfft_kernel`) and the norm's scaling,
and returns the new array. It declines (the Python path runs) a misaligned input, another
device's stream, or a graph capture.

The plan it runs is ``plans.CUFFT``'s: when that cache, or the layout decisions of
``plans.FFT_FAST``, are cleared, every FftCall made so far is retired (it lets go of the
plan and answers None, so the op layer forgets it and plans afresh).
"""

from __future__ import annotations

from typing import Any

from pygpukit import GPUArray
from pygpukit.core import dtypes as dt

from . import _loader, cufft, device, fft_kernels, launch_plan, plans, rfft_kernel, streams
from .device_facts import BLOCK

#: every FftCall made since the plans were last cleared (retired together)
_live: list[Any] = []


def _retire_all() -> None:
    for run in _live:
        run.retire()
    _live.clear()


plans.CUFFT.on_clear.append(_retire_all)
plans.FFT_FAST.on_clear.append(_retire_all)


def _scale_plan(d: dt.DataType, size: int, index: int, copying: bool, scale: float) -> Any:
    """A launch plan scaling `size` elements of dtype d by `scale`: ``plan(stream, out)`` in
    place, or (copying) ``plan(stream, dst, src)``."""
    fn, grid, n = fft_kernels._scale_launch(d, size, index, copying)
    if copying:
        params, slots = fn.packer.pack(0, 0, n, scale), [(0, "P"), (8, "P")]
    else:
        params, slots = fn.packer.pack(0, n, scale), [(0, "P")]
    return launch_plan.make(fn.context, fn.handle, (grid,), (BLOCK,), 0, params, slots)


def _made(kind: str, x: GPUArray, out: GPUArray, axes: tuple[int, ...], direction: int,
          scale: float) -> Any:  # fmt: skip
    """The FftCall repeating kernel `kind`'s call on x's layout, or None where the call did
    not take the single-pass path (or the extension has no FftCall)."""
    key = (kind, x._shape, x._strides, x._dtype.name, out._shape, out._strides, out._dtype.name,
           tuple(axes), direction, out._device)  # fmt: skip
    entry = fft_kernels._fast_plans.get(key)
    current = streams._current.get()
    if not entry or x._device.type != "cuda" or (current and current.capture_pool is not None):
        # while capturing no plan may be made, and the FftCall would decline anyway; the
        # eager call that must precede a capture has made it
        return None
    args, copy = entry
    if copy == fft_kernels._COPY:
        return None  # a strided c2r input: the Python path makes the contiguous copy
    make = getattr(_loader.native(), "fft_call", None)
    if make is None:
        return None
    index = out._device.index
    plan = cufft.plan(index, *args)
    copier = pre = post = None
    if copy == fft_kernels._MEMCPY:
        # the copy's destination is a fresh pool block: only the elements must be whole
        align = x._dtype.itemsize // (2 if x._dtype.is_complex else 1)
        if scale != 1.0:
            pre = _scale_plan(x._dtype, x.size, index, True, scale)
        else:
            copier = device.context(index).copy_async
    else:
        # cuFFT refuses an operand not aligned to its complex element
        align = x._dtype.itemsize * (1 if x._dtype.is_complex else 2)
        if scale != 1.0:
            post = _scale_plan(out._dtype, out.size, index, False, scale)
    if len(_live) >= plans.FFT_FAST.limit:
        _retire_all()  # endlessly new layouts: start over rather than grow
    run = make(GPUArray, streams._current, plan, device.allocator(index).allocate, x._shape,
               x._strides, x._dtype, x._device, align, index, out._shape, out._strides,
               out._dtype, out.nbytes, direction, x.nbytes if copy else 0, copier, pre,
               post)  # fmt: skip
    _live.append(run)
    return run


def _made_kernel(x: GPUArray, out: GPUArray, scale: float) -> Any:
    """The FftCall repeating `rfft_kernel.run` on x's layout (its launch plan is the
    transform: no cuFFT plan, no work area), or None where it cannot be made."""
    current = streams._current.get()
    make = getattr(_loader.native(), "fft_call", None)
    if make is None or (current and current.capture_pool is not None):
        return None
    index = out._device.index
    if len(_live) >= plans.FFT_FAST.limit:
        _retire_all()
    run = make(GPUArray, streams._current, rfft_kernel.plan(x, scale),
               device.allocator(index).allocate, x._shape, x._strides, x._dtype, x._device,
               8, index, out._shape, out._strides, out._dtype, out.nbytes,
               cufft.FORWARD)  # fmt: skip
    _live.append(run)
    return run


def fresh_c2c(x: GPUArray, out: GPUArray, axes: tuple[int, ...], forward: bool,
              scale: float) -> Any:  # fmt: skip
    return _made("c2c", x, out, axes, cufft.FORWARD if forward else cufft.INVERSE, scale)


def fresh_r2c(x: GPUArray, out: GPUArray, axes: tuple[int, ...], scale: float) -> Any:
    if rfft_kernel.serves(x, out, tuple(axes)):
        return _made_kernel(x, out, scale)
    return _made("r2c", x, out, axes, cufft.FORWARD, scale)


def fresh_c2r(x: GPUArray, out: GPUArray, axes: tuple[int, ...], scale: float) -> Any:
    return _made("c2r", x, out, axes, 0, scale)
