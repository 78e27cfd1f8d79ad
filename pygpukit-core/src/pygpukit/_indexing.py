"""Basic indexing: ints, slices, `...` and `None` turn into a view's shape, strides, offset."""

from __future__ import annotations

import operator
from typing import Any

Shape = tuple[int, ...]


def is_basic_index(key: Any) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, slice):
            continue
        if isinstance(item, bool):
            return False
        if isinstance(item, int) or (hasattr(item, "__index__") and not hasattr(item, "shape")):
            continue
        if hasattr(item, "shape") and getattr(item, "ndim", 1) == 0 and _is_int_scalar(item):
            continue
        return False
    return True


def _is_int_scalar(item: Any) -> bool:
    kind = getattr(getattr(item, "dtype", None), "kind", "")
    return kind in ("i", "u")


def basic_view(shape: Shape, strides: Shape, offset: int, key: Any) -> tuple[Shape, Shape, int]:
    """Apply a basic index to a view; IndexError names the bad index and dimension."""
    items = key if isinstance(key, tuple) else (key,)
    n_ellipsis = sum(1 for it in items if it is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_consuming = sum(1 for it in items if it is not None and it is not Ellipsis)
    if n_consuming > len(shape):
        raise IndexError(
            f"too many indices: array is {len(shape)}-dimensional, but {n_consuming} were given"
        )
    if n_ellipsis == 0:
        items = (*items, Ellipsis)
    start_offset = offset
    out_shape: list[int] = []
    out_strides: list[int] = []
    dim = 0
    for item in items:
        if item is None:
            out_shape.append(1)
            out_strides.append(0)
        elif item is Ellipsis:
            for _ in range(len(shape) - n_consuming):
                out_shape.append(shape[dim])
                out_strides.append(strides[dim])
                dim += 1
        elif isinstance(item, slice):
            start, stop, step = item.indices(shape[dim])
            length = len(range(start, stop, step))
            out_shape.append(length)
            out_strides.append(strides[dim] * step)
            if length:
                offset += start * strides[dim]
            dim += 1
        else:
            i = operator.index(item)
            n = shape[dim]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            offset += (i % n) * strides[dim]
            dim += 1
    if 0 in out_shape:
        return tuple(out_shape), tuple(out_strides), start_offset  # an empty view reads nothing
    return tuple(out_shape), tuple(out_strides), offset
