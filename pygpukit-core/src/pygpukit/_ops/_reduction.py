"""Checks and keepdims plumbing shared by the reduction, searching, sorting and set ops."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from .. import _dtypes as dt
from .._array import GPUArray
from .._views import normalize_axes, normalize_axis
from ._core import empty, kernel_on

Axis = int | Sequence[int] | None


def check_array(
    op: str, x: Any, *, allow_bool: bool = True, allow_complex: bool = False, name: str = "x"
) -> GPUArray:
    """`x` itself if `op` accepts it; TypeError naming the argument or its dtype if not.

    Complex arrays are refused unless `allow_complex`: ops that order elements (max,
    sort, argmax, ...) are not defined for them."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"{op}: {name} must be a GPUArray, got {type(x).__name__}")
    if x.dtype.is_float8:
        raise TypeError(
            f"{op} does not accept {x.dtype.name} ({name} is a storage-only type); "
            "cast it with .astype(float32) first"
        )
    if x.dtype.is_complex and not allow_complex:
        raise TypeError(
            f"{op} is not defined for complex dtypes ({name} is {x.dtype.name}): complex "
            "numbers have no order; take gp.real(x), gp.imag(x) or gp.abs(x) first"
        )
    if not allow_bool and x.dtype.kind == "b":
        raise TypeError(f"{op} wants a numeric {name}, got bool; cast with .astype() first")
    return x


def reduction_axes(x: GPUArray, axis: Axis) -> tuple[int, ...]:
    """The sorted, non-negative axes `axis` names; a 0-d array has none to reduce."""
    if isinstance(axis, bool) or not (
        axis is None or hasattr(axis, "__index__") or isinstance(axis, (tuple, list))
    ):
        raise TypeError(f"axis must be an int, a tuple of ints or None, got {axis!r}")
    axes = normalize_axes(axis, x.ndim)
    return tuple(sorted(axes)) if x.ndim else ()


def single_axis(x: GPUArray, axis: Any) -> int | None:
    """One axis, normalised (None stays None); a 0-d array's axis 0 is no axis at all."""
    if axis is None:
        return None
    if isinstance(axis, bool):
        raise TypeError(f"axis must be an int or None, got {axis!r}")
    index = normalize_axis(axis, x.ndim)
    return index if x.ndim else None


def keepdims_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def check_nonempty(op: str, x: GPUArray, axes: tuple[int, ...], axis: Any) -> None:
    """ValueError naming the axis when `op` (which has no identity) would see no elements."""
    for a in axes:
        if x.shape[a] == 0:
            where = f"axis={axis!r}" if axis is not None else "axis=None"
            raise ValueError(
                f"{op}: cannot reduce over axis {a} of length 0 ({where}, shape {x.shape}); "
                f"{op} of no elements is undefined"
            )


def reduce_into(
    op: str,
    x: GPUArray,
    axes: tuple[int, ...],
    keepdims: bool,
    out_dtype: dt.DataType,
    backend: str | None,
    **params: Any,
) -> GPUArray:
    """Run a reduction kernel into a keepdims-shaped output, then drop the axes if asked."""
    fn = kernel_on(op, x.device, (x.dtype,), backend)
    out = empty(keepdims_shape(x.shape, axes), out_dtype, x.device)
    if out.size:
        fn(x, out, axes, **params)
    return out if keepdims else drop_axes(out, axes)


def drop_axes(out: GPUArray, axes: tuple[int, ...]) -> GPUArray:
    """A view of the fresh, contiguous keepdims-shaped `out` without the length-1 `axes`."""
    # dropping length-1 axes of a contiguous array keeps the others' strides: no reshape
    shape, strides = out._shape, out._strides
    if len(axes) == len(shape):  # a full reduction: the 0-d view
        return out._view((), (), out._offset)
    keep = [i for i in range(len(shape)) if i not in axes]
    return out._view(tuple(shape[i] for i in keep), tuple(strides[i] for i in keep),
                     out._offset)  # fmt: skip


def check_keepdims(op: str, keepdims: Any) -> bool:
    if not isinstance(keepdims, bool):
        raise TypeError(f"{op}: keepdims must be a bool, got {type(keepdims).__name__}")
    return keepdims


def as_index(op: str, value: Any, name: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int, got {type(value).__name__}") from None
