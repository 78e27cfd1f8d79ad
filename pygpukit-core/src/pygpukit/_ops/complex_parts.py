"""The parts of complex numbers: real, imag, conj and angle, plus reciprocal.

Kernel convention (complex inputs only; real inputs never reach a kernel of these ops):
``kernel(x, out)`` with ``out`` of ``x``'s shape; ``out`` is the real dtype of ``x``'s
precision (float32 for complex64) for ``real``, ``imag`` and ``angle``, and ``x``'s own
dtype for ``conj``.

For real inputs, as the standard (2024.12) asks: ``real`` and ``conj`` return a copy of
``x``, ``imag`` zeros of ``x``'s dtype; ``angle`` (NumPy's, not in the standard) is 0
or pi as a float. These run on the ``copy``/``fill``/``atan2`` kernels every backend has.
"""

from __future__ import annotations

from typing import Any

from .. import _dtypes as dt
from .._array import GPUArray
from ._core import empty, kernel_on
from .copying import astype, copy, fill
from .elementwise import apply_binary

__all__ = ["angle", "conj", "imag", "real", "reciprocal"]


def _check(op: str, x: Any) -> GPUArray:
    if not isinstance(x, GPUArray):
        raise TypeError(f"{op}: x must be a GPUArray, got {type(x).__name__}")
    if x.dtype.kind == "b" or x.dtype.is_float8:
        raise TypeError(f"{op} wants a numeric array, got {x.dtype.name}; cast with .astype()")
    return x


def _part(op: str, x: GPUArray, out_dtype: dt.DataType, backend: str | None) -> GPUArray:
    fn = kernel_on(op, x.device, (x.dtype,), backend)
    out = empty(x.shape, out_dtype, x.device)
    if out.size:
        fn(x, out)
    return out


def real(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """The real part of each element (float32 for complex64); a copy of a real array."""
    _check("real", x)
    if not x.dtype.is_complex:
        return copy(x, backend=backend)
    return _part("real", x, dt.real_of(x.dtype), backend)


def imag(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """The imaginary part of each element (float32 for complex64); zeros for a real array."""
    _check("imag", x)
    if not x.dtype.is_complex:
        out = empty(x.shape, x.dtype, x.device)
        fill(out, 0, backend)
        return out
    return _part("imag", x, dt.real_of(x.dtype), backend)


def conj(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """The complex conjugate of each element; a copy of a real array."""
    _check("conj", x)
    if not x.dtype.is_complex:
        return copy(x, backend=backend)
    return _part("conj", x, x.dtype, backend)


def angle(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """The argument (phase) of each element in radians, in (-pi, pi] (NumPy's `angle`)."""
    _check("angle", x)
    if x.dtype.is_complex:
        return _part("angle", x, dt.real_of(x.dtype), backend)
    z = x if x.dtype.is_floating else astype(x, dt.DEFAULT_FLOAT)
    return apply_binary("atan2", 0.0, z, backend)


def reciprocal(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """Elementwise 1 / x; integer inputs give the default float dtype."""
    _check("reciprocal", x)
    return apply_binary("divide", 1.0, x, backend)
