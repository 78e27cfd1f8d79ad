"""Reductions: sum, prod, mean, var, std, max, min, all, any, cumulative sums, sum_axis.

Kernel calling conventions:

- reductions ``kernel(x, out, axes, **params)``: ``axes`` is a sorted tuple of
  non-negative axes of ``x`` (empty for a 0-d ``x`` or ``axis=()``); ``out`` has the
  keepdims shape (each reduced axis kept with length 1) and the result dtype, and the
  kernel fills every element of it. The core drops the reduced axes afterwards with a
  view when ``keepdims=False``, so kernels never see that flag. Kernels are not called
  when ``out`` is empty. ``var``/``std`` get ``correction`` as a keyword.
- ``cumulative_sum``/``cumulative_prod``: ``kernel(x, out, axis, include_initial)``;
  ``out`` has the result shape (one longer along ``axis`` when ``include_initial``).

Dtype rules (the Array API's, with the choices it leaves open):

- ``sum``/``prod``/cumulative: bool and integer inputs give int64 (uint8 too, as
  PyGPUkit has no unsigned 64-bit type); floating inputs keep their dtype. ``dtype=``
  casts the input before reducing. float16/bfloat16 accumulate in float32 on every
  backend and round once at the end.
- ``mean``/``var``/``std``: floating inputs keep their dtype; bool and integer inputs are
  accepted and give float32 (the default float). A mean of no elements is NaN, and
  ``var``/``std`` are NaN where ``N - correction <= 0``.
- complex inputs: ``sum``, ``prod``, ``mean``, the cumulative ops, ``all`` and ``any``
  take them (keeping the dtype); ``max``, ``min``, ``var`` and ``std`` raise TypeError.
- ``max``/``min`` keep the dtype (bool included, as in NumPy), propagate NaN and raise
  ValueError (naming the axis) when a reduced axis has length 0. ``all``/``any``
  give bool (NaN counts as true).
- float8 inputs raise TypeError everywhere: they are storage-only types.
"""

from __future__ import annotations

import operator
from typing import Any

from .. import _dtypes as dt
from .._array import GPUArray
from ._core import empty, kernel_on
from ._reduction import (
    Axis,
    check_array,
    check_keepdims,
    check_nonempty,
    reduce_into,
    reduction_axes,
    single_axis,
)

__all__ = [
    "all", "any", "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std",
    "sum", "sum_axis", "var",
]  # fmt: skip


def accumulator_dtype(op: str, x: GPUArray, dtype: Any) -> dt.DataType:
    """The result dtype of sum/prod/cumulative ops on `x` with the `dtype=` argument."""
    if dtype is not None:
        target = dt.as_dtype(dtype)
        if target.kind == "b" or target.is_float8:
            raise TypeError(f"{op}: dtype must be a numeric dtype, got {target.name}")
        if x.dtype.is_complex and not target.is_complex:
            raise TypeError(
                f"{op}: cannot reduce {x.dtype.name} into {target.name} (complex to real "
                "loses the imaginary part; the Array API forbids it)"
            )
        return target
    if x.dtype.kind in "biu":
        return dt.DEFAULT_INT  # int64 holds every narrower int; uint8 included (no uint64)
    return x.dtype


def _mean_dtype(x: GPUArray) -> dt.DataType:
    return x.dtype if x.dtype.is_inexact else dt.DEFAULT_FLOAT


def _cast_first(x: GPUArray, target: dt.DataType) -> GPUArray:
    """x as `target` when that is a float type narrower than float32 (the standard casts
    the input first; providers accumulate half and 8-bit floats in float32, which would
    otherwise keep the input's precision)."""
    if target is x.dtype or not target.is_floating or target.itemsize >= 4:
        return x
    return x.astype(target)


def sum(
    x: GPUArray,
    /,
    *,
    axis: Axis = None,
    dtype: Any = None,
    keepdims: bool = False,
    backend: str | None = None,
) -> GPUArray:
    """Sum of the elements over `axis` (all axes when None)."""
    check_array("sum", x, allow_complex=True)
    out_dtype = accumulator_dtype("sum", x, dtype)
    x = _cast_first(x, out_dtype)
    axes = reduction_axes(x, axis)
    return reduce_into("sum", x, axes, check_keepdims("sum", keepdims), out_dtype, backend)


def prod(
    x: GPUArray,
    /,
    *,
    axis: Axis = None,
    dtype: Any = None,
    keepdims: bool = False,
    backend: str | None = None,
) -> GPUArray:
    """Product of the elements over `axis` (all axes when None)."""
    check_array("prod", x, allow_complex=True)
    out_dtype = accumulator_dtype("prod", x, dtype)
    x = _cast_first(x, out_dtype)
    axes = reduction_axes(x, axis)
    return reduce_into("prod", x, axes, check_keepdims("prod", keepdims), out_dtype, backend)


def sum_axis(a: GPUArray, axis: int, *, backend: str | None = None) -> GPUArray:
    """Sum over the single axis `axis`, which is dropped from the shape (seed API)."""
    check_array("sum_axis", a, name="a")
    if axis is None or isinstance(axis, bool) or not hasattr(axis, "__index__"):
        raise TypeError(f"sum_axis: axis must be an int, got {axis!r}")
    return sum(a, axis=operator.index(axis), backend=backend)


def mean(
    x: GPUArray, /, *, axis: Axis = None, keepdims: bool = False, backend: str | None = None
) -> GPUArray:
    """Arithmetic mean over `axis`; integer and bool inputs give float32."""
    check_array("mean", x, allow_complex=True)
    axes = reduction_axes(x, axis)
    return reduce_into("mean", x, axes, check_keepdims("mean", keepdims), _mean_dtype(x), backend)


def _correction(op: str, correction: Any) -> float:
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"{op}: correction must be an int or float, got {correction!r}")
    if not correction >= 0:
        raise ValueError(f"{op}: correction must be >= 0, got {correction}")
    return float(correction)


def _spread(op: str, x: GPUArray, axis: Axis, correction: Any, keepdims: bool,
            backend: str | None) -> GPUArray:  # fmt: skip
    """var and std: the checks and the reduction, `op` naming which."""
    check_array(op, x)
    c = _correction(op, correction)
    axes = reduction_axes(x, axis)
    return reduce_into(op, x, axes, check_keepdims(op, keepdims), _mean_dtype(x), backend,
                       correction=c)  # fmt: skip


def var(
    x: GPUArray,
    /,
    *,
    axis: Axis = None,
    correction: int | float = 0.0,
    keepdims: bool = False,
    backend: str | None = None,
) -> GPUArray:
    """Variance over `axis`, dividing by N - correction; integer inputs give float32."""
    return _spread("var", x, axis, correction, keepdims, backend)


def std(
    x: GPUArray,
    /,
    *,
    axis: Axis = None,
    correction: int | float = 0.0,
    keepdims: bool = False,
    backend: str | None = None,
) -> GPUArray:
    """Standard deviation over `axis`, dividing by N - correction; ints give float32."""
    return _spread("std", x, axis, correction, keepdims, backend)


def _extreme(op: str, x: GPUArray, axis: Axis, keepdims: bool, backend: str | None) -> GPUArray:
    check_array(op, x)
    axes = reduction_axes(x, axis)
    check_nonempty(op, x, axes, axis)
    return reduce_into(op, x, axes, check_keepdims(op, keepdims), x.dtype, backend)


def max(
    x: GPUArray, /, *, axis: Axis = None, keepdims: bool = False, backend: str | None = None
) -> GPUArray:
    """Largest element over `axis`; NaN propagates; an empty reduction raises ValueError."""
    return _extreme("max", x, axis, keepdims, backend)


def min(
    x: GPUArray, /, *, axis: Axis = None, keepdims: bool = False, backend: str | None = None
) -> GPUArray:
    """Smallest element over `axis`; NaN propagates; an empty reduction raises ValueError."""
    return _extreme("min", x, axis, keepdims, backend)


def all(
    x: GPUArray, /, *, axis: Axis = None, keepdims: bool = False, backend: str | None = None
) -> GPUArray:
    """Whether every element over `axis` is true (nonzero); True for no elements."""
    check_array("all", x, allow_complex=True)
    axes = reduction_axes(x, axis)
    return reduce_into("all", x, axes, check_keepdims("all", keepdims), dt.bool_, backend)


def any(
    x: GPUArray, /, *, axis: Axis = None, keepdims: bool = False, backend: str | None = None
) -> GPUArray:
    """Whether any element over `axis` is true (nonzero); False for no elements."""
    check_array("any", x, allow_complex=True)
    axes = reduction_axes(x, axis)
    return reduce_into("any", x, axes, check_keepdims("any", keepdims), dt.bool_, backend)


def _cumulative(
    op: str, x: GPUArray, axis: Any, dtype: Any, include_initial: bool, backend: str | None
) -> GPUArray:
    check_array(op, x, allow_complex=True)
    if x.ndim == 0:
        raise ValueError(f"{op} wants an array of at least one dimension, got a 0-d array")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(
                f"{op}: axis must be given for a {x.ndim}-D array (axis=None only for 1-D)"
            )
        axis = 0
    index = single_axis(x, axis)
    assert index is not None  # x has at least one dimension
    if not isinstance(include_initial, bool):
        raise TypeError(f"{op}: include_initial must be a bool, got {include_initial!r}")
    out_dtype = accumulator_dtype(op, x, dtype)
    shape = list(x.shape)
    shape[index] += int(include_initial)
    fn = kernel_on(op, x.device, (x.dtype,), backend)
    out = empty(tuple(shape), out_dtype, x.device)
    if out.size:
        fn(x, out, index, include_initial)
    return out


def cumulative_sum(
    x: GPUArray,
    /,
    *,
    axis: int | None = None,
    dtype: Any = None,
    include_initial: bool = False,
    backend: str | None = None,
) -> GPUArray:
    """Running sums along `axis` (optional for 1-D), starting with 0 if include_initial."""
    return _cumulative("cumulative_sum", x, axis, dtype, include_initial, backend)


def cumulative_prod(
    x: GPUArray,
    /,
    *,
    axis: int | None = None,
    dtype: Any = None,
    include_initial: bool = False,
    backend: str | None = None,
) -> GPUArray:
    """Running products along `axis` (optional for 1-D), starting with 1 if include_initial."""
    return _cumulative("cumulative_prod", x, axis, dtype, include_initial, backend)
