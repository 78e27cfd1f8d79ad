"""Copies, casts and assignment into views.

Kernel conventions:

- ``copy``: ``kernel(src, out)``: same shape; converts ``src.dtype`` to ``out.dtype``
  (float to int truncates toward zero; anything to bool is ``!= 0``; real to complex
  sets the imaginary part to 0). A cast is dispatched on both dtypes, (src, out).
- ``fill``: ``kernel(out, value)``: a Python scalar already checked to fit ``out.dtype``.
"""

from __future__ import annotations

from typing import Any

from .. import _dtypes as dt
from .._array import GPUArray
from .._promotion import check_int_fits
from .._views import broadcast_shapes
from ._core import empty, kernel_on, scalar_or_array
from .elementwise import BINARY, apply_binary


def copy(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """A contiguous copy of `x` on the same device."""
    out = empty(x.shape, x.dtype, x.device)
    kernel_on("copy", x.device, (x.dtype,), backend)(x, out)
    return out


def astype(
    x: GPUArray, dtype: Any, /, *, copy: bool = True, device: Any = None,
    backend: str | None = None,
) -> GPUArray:  # fmt: skip
    """`x` converted to `dtype` (a new array unless copy=False and the dtype matches),
    on `device` when given (the Array API's ``device=``: converted, then moved)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"astype wants a GPUArray, got {type(x).__name__}")
    if device is not None:
        from .._device import Device

        if Device.parse(device) != x.device:
            return astype(x, dtype, copy=copy, backend=backend).to_device(device)
    target = dt.as_dtype(dtype)
    if target is x.dtype and not copy:
        return x
    check_cast("astype", x.dtype, target)
    out = empty(x.shape, target, x.device)
    kernel_on("copy", x.device, _copy_dtypes(x.dtype, target), backend)(x, out)
    return out


def _copy_dtypes(src: dt.DataType, dst: dt.DataType) -> tuple[dt.DataType, ...]:
    """The dtypes a cast's copy kernel is chosen by: both ends, so a provider that lacks
    either (complex, say) is passed over rather than handed data it cannot convert."""
    return (src,) if src is dst else (src, dst)


def check_cast(op: str, src: dt.DataType, dst: dt.DataType) -> None:
    """TypeError for a complex -> real cast, which the Array API does not permit (-> bool,
    meaning != 0, is allowed)."""
    if src.is_complex and not dst.is_complex and dst.kind != "b":
        raise TypeError(
            f"{op}: cannot cast {src.name} to {dst.name}: complex to real casts are not "
            "permitted (they would drop the imaginary part); take gp.real(x), gp.imag(x) "
            "or gp.abs(x) first"
        )


def fill(out: GPUArray, value: bool | int | float | complex, backend: str | None = None) -> None:
    out.check_writable("fill: the target")
    if isinstance(value, complex) and not out.dtype.is_complex:
        raise TypeError(f"cannot store the complex value {value} in a {out.dtype.name} array")
    if out.dtype.is_integer and isinstance(value, int) and not isinstance(value, bool):
        check_int_fits(value, out.dtype)
    if out.dtype.is_integer and isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"cannot store {value} in a {out.dtype.name} array")
        check_int_fits(int(value), out.dtype)
    if out.size:
        kernel_on("fill", out.device, (out.dtype,), backend)(out, value)


def assign(target: GPUArray, value: Any, backend: str | None = None) -> None:
    """`target[...] = value`: a scalar, or an array broadcast to the target's shape."""
    target.check_writable("the assignment target")
    src = scalar_or_array(value, "value")
    if not isinstance(src, GPUArray):
        fill(target, src, backend)
        return
    if src.device != target.device:
        raise ValueError(
            f"cannot assign an array on {src.device} into one on {target.device}; "
            "move it with .to_device() first"
        )
    check_cast("assignment", src.dtype, target.dtype)
    shape = broadcast_shapes(src.shape, target.shape)
    if shape != target.shape:
        raise ValueError(f"cannot assign an array of shape {src.shape} into shape {target.shape}")
    if _may_overlap(src, target):
        src = copy(src, backend=backend)  # the kernel may read what it already wrote
    if target.size:
        dtypes = _copy_dtypes(src.dtype, target.dtype)
        kernel_on("copy", target.device, dtypes, backend)(src.broadcast_to(shape), target)


def _may_overlap(a: GPUArray, b: GPUArray) -> bool:
    if a.buffer is not b.buffer:
        return False
    # exactly the same elements: reading each before writing it is safe
    return not (a.offset == b.offset and a.strides == b.strides and a.shape == b.shape)


def inplace(op: str, target: GPUArray, other: Any) -> GPUArray:
    """`target op= other`: the result must keep target's shape and dtype."""
    if op not in BINARY:
        raise ValueError(f"unknown in-place op {op!r}")
    target.check_writable(f"in-place {op}: the target")
    src = scalar_or_array(other, "other")
    if isinstance(src, GPUArray) and _may_overlap(src, target):
        src = copy(src)
    return apply_binary(op, target, src, out=target)


def getitem_advanced(x: GPUArray, key: Any) -> GPUArray:
    """`x[mask]` with a boolean array, or `x[idx]` with integer arrays."""
    from .indexing import getitem_advanced as impl

    return impl(x, key)


def setitem_advanced(x: GPUArray, key: Any, value: Any) -> None:
    from .indexing import setitem_advanced as impl

    impl(x, key, value)
