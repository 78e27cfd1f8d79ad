"""Searching: argmax, argmin, nonzero, searchsorted, count_nonzero (``where`` is elementwise).

Kernel calling conventions:

- ``argmax``/``argmin``: ``kernel(x, out, axis)``; ``axis`` is a non-negative int, or
  None to index ``x`` flattened in C order; ``out`` is int64 with the keepdims shape
  (every axis of length 1 when ``axis`` is None). The first occurrence wins, and NaN
  counts as the extreme of both (as in NumPy: the first NaN's index is returned).
- ``count_nonzero``: the reduction convention of ``statistical``,
  ``kernel(x, out, axes)`` with an int64 keepdims-shaped ``out``.
- ``nonzero``: ``kernel(x) -> tuple[GPUArray, ...]``: the output size depends on the
  data, so the kernel allocates one 1-D int64 array per axis of ``x`` (C order).
- ``searchsorted``: ``kernel(x1, x2, out, side, sorter, compute)``; ``x1`` is 1-D,
  ``x2`` an array or Python scalar, ``out`` int64 of ``x2``'s shape, ``sorter`` a 1-D
  integer array or None, ``compute`` the promoted dtype both are compared in. NaN sorts
  after every number, as in ``sort``.
"""

from __future__ import annotations

from typing import Any

from .. import _dtypes as dt
from .._array import GPUArray
from .._promotion import promote_types, result_type_with_scalar
from ._core import device_of, empty, kernel_on, scalar_or_array
from ._reduction import (
    Axis,
    check_array,
    check_keepdims,
    check_nonempty,
    drop_axes,
    keepdims_shape,
    reduce_into,
    reduction_axes,
    single_axis,
)

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted"]


def _arg_extreme(
    op: str, x: GPUArray, axis: int | None, keepdims: bool, backend: str | None
) -> GPUArray:
    check_array(op, x)
    keepdims = check_keepdims(op, keepdims)
    index = single_axis(x, axis)
    axes = tuple(range(x.ndim)) if index is None else (index,)
    check_nonempty(op, x, axes, axis)
    fn = kernel_on(op, x.device, (x.dtype,), backend)
    out = empty(keepdims_shape(x.shape, axes), dt.INDEX_DTYPE, x.device)
    if out.size:
        fn(x, out, index)
    return out if keepdims else drop_axes(out, axes)


def argmax(
    x: GPUArray,
    /,
    *,
    axis: int | None = None,
    keepdims: bool = False,
    backend: str | None = None,
) -> GPUArray:
    """int64 indices of the first largest element along `axis` (of the flattened x if None)."""
    return _arg_extreme("argmax", x, axis, keepdims, backend)


def argmin(
    x: GPUArray,
    /,
    *,
    axis: int | None = None,
    keepdims: bool = False,
    backend: str | None = None,
) -> GPUArray:
    """int64 indices of the first smallest element along `axis` (of the flattened x if None)."""
    return _arg_extreme("argmin", x, axis, keepdims, backend)


def count_nonzero(
    x: GPUArray, /, *, axis: Axis = None, keepdims: bool = False, backend: str | None = None
) -> GPUArray:
    """int64 count of the nonzero (true) elements over `axis`."""
    check_array("count_nonzero", x, allow_complex=True)
    axes = reduction_axes(x, axis)
    keepdims = check_keepdims("count_nonzero", keepdims)
    return reduce_into("count_nonzero", x, axes, keepdims, dt.INDEX_DTYPE, backend)


def nonzero(x: GPUArray, /, *, backend: str | None = None) -> tuple[GPUArray, ...]:
    """int64 indices of the nonzero elements, one array per axis, in C order."""
    check_array("nonzero", x, allow_complex=True)
    if x.ndim == 0:
        raise ValueError("nonzero does not accept 0-d arrays; use x[None] for a 1-D array")
    fn = kernel_on("nonzero", x.device, (x.dtype,), backend)
    return tuple(fn(x))


def searchsorted(
    x1: GPUArray,
    x2: Any,
    /,
    *,
    side: str = "left",
    sorter: GPUArray | None = None,
    backend: str | None = None,
) -> GPUArray:
    """int64 positions at which to insert x2's elements into the sorted 1-D x1."""
    check_array("searchsorted", x1, name="x1")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    values = scalar_or_array(x2, "x2")
    if isinstance(values, GPUArray):
        check_array("searchsorted", values, name="x2")
        compute = promote_types(x1.dtype, values.dtype)
        shape = values.shape
    else:
        compute = result_type_with_scalar(x1.dtype, values)
        shape = ()
    device = device_of(x1, values, sorter)
    if sorter is not None:
        check_array("searchsorted", sorter, name="sorter")
        if not sorter.dtype.is_integer:
            raise TypeError(f"searchsorted: sorter must have an integer dtype, got {sorter.dtype}")
        if sorter.shape != x1.shape:
            raise ValueError(
                f"searchsorted: sorter must have x1's shape {x1.shape}, got {sorter.shape}"
            )
    dtypes = (x1.dtype, values.dtype) if isinstance(values, GPUArray) else (x1.dtype,)
    fn = kernel_on("searchsorted", device, dtypes, backend)
    out = empty(shape, dt.INDEX_DTYPE, device)
    if out.size:
        fn(x1, values, out, side, sorter, compute)
    return out
