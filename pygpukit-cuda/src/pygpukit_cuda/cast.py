"""Contiguous float-to-float casts (astype, copy into another float dtype) through the
coalesced vector kernel of ``kernels/source.py`` (`cast_kernel`); any other copy goes
through the provider's generic copy kernel."""

from __future__ import annotations

from pygpukit import GPUArray

from . import launcher
from .kernels import source

BLOCK = 256


def applies(src: GPUArray, out: GPUArray) -> bool:
    """Both C-contiguous, of one shape, different float dtypes, 16-byte aligned."""
    return (
        src.dtype is not out.dtype
        and src.dtype in source.CAST_DTYPES
        and out.dtype in source.CAST_DTYPES
        and src.shape == out.shape
        and src.is_contiguous
        and out.is_contiguous
        and (src.buffer.ptr + src.offset) % 16 == 0
        and (out.buffer.ptr + out.offset) % 16 == 0
    )


def cast_contiguous(src: GPUArray, out: GPUArray) -> bool:
    """Convert src into out with the vector cast kernel; False (nothing done) when it does
    not apply."""
    if not applies(src, out):
        return False
    n = out.size
    if n == 0:
        return True
    spec = source.cast_kernel(src.dtype, out.dtype)
    per_block = BLOCK * source.CAST_UNROLL * spec.vec
    grid = max(1, -(-n // per_block))
    fn = launcher.function(out.device.index, spec.name, spec.source, spec.arg_format)
    fn.launch((grid,), (BLOCK,), (out.buffer.ptr + out.offset, src.buffer.ptr + src.offset, n))
    return True
