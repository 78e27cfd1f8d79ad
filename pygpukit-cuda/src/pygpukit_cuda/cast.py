"""Contiguous float-to-float casts (astype, copy into another float dtype) through the
coalesced vector kernel of ``kernels/source.py`` (`cast_kernel`); any other copy goes
through the provider's generic copy kernel."""

from __future__ import annotations

import struct
from typing import Any

from pygpukit import GPUArray

from . import launch_plan, launcher, plans, slicing, streams
from .device_facts import BLOCK
from .kernels import source


def applies(src: GPUArray, out: GPUArray) -> bool:
    """Both C-contiguous, of one shape, different float dtypes, 16-byte aligned."""
    return (
        _layouts_fit(src, out)
        and (src.buffer.ptr + src.offset) % 16 == 0
        and (out.buffer.ptr + out.offset) % 16 == 0
    )


def _layouts_fit(src: GPUArray, out: GPUArray) -> bool:
    """`applies` but for the alignment (which depends on the pointers, not the plan)."""
    return (
        src.dtype is not out.dtype
        and src.dtype in source.CAST_DTYPES
        and out.dtype in source.CAST_DTYPES
        and src.shape == out.shape
        and src.is_contiguous
        and out.is_contiguous
    )


def cast_contiguous(src: GPUArray, out: GPUArray) -> bool:
    """Convert src into out with the vector cast kernel; False (nothing done) when it does
    not apply. The launch is planned once per (dtypes, device, shape, strides); a call
    checks the alignment and writes two pointers (slot reads: this runs once per astype)."""
    key = (src._dtype.name, out._dtype.name, out._device.index, src._shape, src._strides,
           out._shape, out._strides)  # fmt: skip
    plan = _plans.get(key, _UNPLANNED)
    if plan is _UNPLANNED:
        plan = _plans.put(key, _new_plan(src, out))
    if plan is None:
        return False
    p = out._buffer.ptr + out._offset
    q = src._buffer.ptr + src._offset
    if (p | q) % 16:
        return False  # unaligned views: the generic copy kernel
    if plan is not _NOTHING:
        launch, nbytes = plan
        if nbytes > slicing.SLICE_BYTES and _sliced(src, out, nbytes):
            return True
        launch(streams.current_handle(out._device.index), p, q)
    return True


def _sliced(src: GPUArray, out: GPUArray, nbytes: int) -> bool:
    """A large cast of a best-effort task as runs of whole 256-element steps (each run's
    pointers keep the 16-byte alignment), each its own gated launch, yielding between them;
    False when it runs whole. Each element converts alone: the results are identical."""
    pieces = slicing.pieces_for_bytes(nbytes)
    n = out.size
    if pieces <= 1:
        return False
    parts = slicing.blocks((n,), pieces)
    for i, (run,) in enumerate(parts):
        if i:
            slicing.between_slices()
        start, stop = run.start, run.stop  # type: ignore[union-attr]
        piece = (stop - start,)
        a = GPUArray(src._buffer, piece, src._dtype, src._device, None,
                     src._offset + start * src._dtype.itemsize, True)  # fmt: skip
        b = GPUArray(out._buffer, piece, out._dtype, out._device, None,
                     out._offset + start * out._dtype.itemsize)  # fmt: skip
        key = (a._dtype.name, b._dtype.name, b._device.index, a._shape, a._strides,
               b._shape, b._strides)  # fmt: skip
        plan = _plans.get(key, _UNPLANNED)
        if plan is _UNPLANNED:
            plan = _plans.put(key, _new_plan(a, b))
        plan[0](streams.current_handle(out._device.index), _ptr(b), _ptr(a))
    return True


def _ptr(x: GPUArray) -> int:
    return int(x._buffer.ptr + x._offset)


_UNPLANNED: Any = object()
_NOTHING: Any = object()  # an empty array: nothing to launch
_plans = plans.CAST


def _new_plan(src: GPUArray, out: GPUArray) -> object:
    """(the cast's LaunchPlan, bytes it moves), _NOTHING for an empty array, None when the
    cast kernel does not apply to these dtypes and layouts (alignment is checked per call)."""
    if not _layouts_fit(src, out):
        return None
    n = out.size
    if n == 0:
        return _NOTHING
    spec = source.cast_kernel(src.dtype, out.dtype)
    per_block = BLOCK * source.CAST_UNROLL * spec.vec
    grid = max(1, -(-n // per_block))
    fn = launcher.function(out.device.index, spec.name, spec.source, spec.arg_format)
    params = struct.pack(spec.arg_format, 0, 0, n)
    launch = launch_plan.make(fn.context, fn.handle, grid, BLOCK, 0, params, [(0, "P"), (8, "P")])
    return launch, n * (src.dtype.itemsize + out.dtype.itemsize)
