"""The provider's rope_inplace (``pygpukit._ops.nn`` convention): q and k rotated in place,
any strides; leading batch axes that do not merge are walked one item at a time."""

from __future__ import annotations

from pygpukit import GPUArray

from ..compiled import triton_type
from ..launch import Program
from ..programs import rope as rp

_program = Program(rp.rope)


def _rotate(x: GPUArray, cos: GPUArray, sin: GPUArray) -> None:
    if x.size == 0:
        return
    if x.ndim > 4:
        for i in range(x.shape[0]):
            _rotate(x[i], cos, sin)
        return
    it = x.dtype.itemsize
    if x.ndim == 4:
        nb, sb = x.shape[0], x.strides[0] // it
    else:
        nb, sb = 1, 0
    s, h, d = x.shape[-3:]
    half = d // 2
    ci, si = cos.dtype.itemsize, sin.dtype.itemsize
    f64 = "float64" in (x.dtype.name, cos.dtype.name, sin.dtype.name)
    bd = 1 << max(0, (half - 1).bit_length())
    bh = max(1, min(1 << max(0, (h - 1).bit_length()), 4096 // max(bd, 1)))
    args = [x, cos, sin, s, h, half, sb, x.strides[-3] // it, x.strides[-2] // it,
            x.strides[-1] // it, cos.strides[0] // ci, cos.strides[1] // ci,
            sin.strides[0] // si, sin.strides[1] // si]  # fmt: skip
    types = (f"*{triton_type(x.dtype.name)}", f"*{triton_type(cos.dtype.name)}",
             f"*{triton_type(sin.dtype.name)}", "i32", "i32", "i32", *(["i64"] * 8))  # fmt: skip
    consts = (("F64", f64), ("BH", bh), ("BD", bd))
    _program((nb * s,), args, types, consts, num_warps=4)


def rope_inplace(q: GPUArray, k: GPUArray, cos: GPUArray, sin: GPUArray) -> None:
    _rotate(q, cos, sin)
    _rotate(k, cos, sin)
