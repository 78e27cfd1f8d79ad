"""Sorting: sort and argsort along one axis, ascending or descending.

Kernel calling conventions: ``sort``: ``kernel(x, out, axis, descending, stable)``
fills ``out`` (x's shape and dtype) with the sorted values; ``argsort``: the same with
an int64 ``out`` of indices into ``axis``. ``axis`` is non-negative. Order rules every
backend follows:

- NaN is larger than every number: last in ascending order, first in descending order.
- -0.0 and 0.0 are equal (their relative order is that of equal elements).
- ``stable=True`` keeps equal elements in their original order in both directions
  (descending is not the reverse of ascending). ``stable=False`` lets a backend pick
  any order of equal elements; the CPU backend is always stable.

A 0-d array has no axis to sort along: ValueError, as in NumPy.
"""

from __future__ import annotations

from .. import _dtypes as dt
from .._array import GPUArray
from .._views import normalize_axis
from ._core import empty, kernel_on
from ._reduction import check_array

__all__ = ["argsort", "sort"]


def _sort(
    op: str,
    x: GPUArray,
    axis: int,
    descending: bool,
    stable: bool,
    out_dtype: dt.DataType,
    backend: str | None,
) -> GPUArray:
    for name, flag in (("descending", descending), ("stable", stable)):
        if not isinstance(flag, bool):
            raise TypeError(f"{op}: {name} must be a bool, got {flag!r}")
    if axis is None:
        raise TypeError(f"{op}: axis must be an int, got None (flatten with reshape(-1))")
    if x.ndim == 0:
        raise ValueError(f"{op} wants an array of at least one dimension, got a 0-d array")
    index = normalize_axis(axis, x.ndim)
    fn = kernel_on(op, x.device, (x.dtype,), backend)
    out = empty(x.shape, out_dtype, x.device)
    if out.size:
        fn(x, out, index, descending, stable)
    return out


def sort(
    x: GPUArray,
    /,
    *,
    axis: int = -1,
    descending: bool = False,
    stable: bool = True,
    backend: str | None = None,
) -> GPUArray:
    """A sorted copy of x along `axis` (NaN last when ascending, first when descending)."""
    check_array("sort", x)
    return _sort("sort", x, axis, descending, stable, x.dtype, backend)


def argsort(
    x: GPUArray,
    /,
    *,
    axis: int = -1,
    descending: bool = False,
    stable: bool = True,
    backend: str | None = None,
) -> GPUArray:
    """int64 indices that sort x along `axis`; stable keeps ties in original order."""
    check_array("argsort", x)
    return _sort("argsort", x, axis, descending, stable, dt.INDEX_DTYPE, backend)
