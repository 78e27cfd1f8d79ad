"""View arithmetic: new shape, strides and offset for views; no data moves.

Strides and offsets are in bytes, as in NumPy. Every function here checks its input and
raises ValueError/IndexError/TypeError naming the problem.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

Shape = tuple[int, ...]


def contiguous_strides(shape: Shape, itemsize: int) -> Shape:
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def is_c_contiguous(shape: Shape, strides: Shape, itemsize: int) -> bool:
    step = itemsize
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n == 0:
            return True
        if n != 1 and s != step:
            return False
        step *= n
    return True


def normalize_shape(shape: Any, allow_unknown: bool = False) -> Shape:
    """A tuple of dimensions; `allow_unknown` lets one be -1 (reshape's "whatever fits")."""
    if isinstance(shape, int) or hasattr(shape, "__index__"):
        shape = (shape,)
    try:
        dims = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"a shape is an int or a sequence of ints, got {shape!r}") from None
    if any(n < (-1 if allow_unknown else 0) for n in dims):
        raise ValueError(f"negative dimension in shape {dims}")
    return dims


class AxisError(ValueError, IndexError):
    """An axis out of range: a ValueError (as the op layer's other checks) and an
    IndexError (as the Array API asks), like NumPy's AxisError."""


def normalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(axis).__name__}") from None
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise AxisError(f"{name} {axis} is out of range for an array of {ndim} dimension(s)")
    return axis % ndim if ndim else 0


def normalize_axes(axis: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int) or hasattr(axis, "__index__"):
        return (normalize_axis(axis, ndim),)  # type: ignore[arg-type]
    axes = tuple(normalize_axis(a, ndim) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in {tuple(axis)}")
    return axes


def broadcast_shapes(*shapes: Shape) -> Shape:
    """The Array API broadcast of `shapes`; ValueError names the clashing shapes."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, n in enumerate(shape, ndim - len(shape)):
            if n == out[i] or n == 1:
                continue
            if out[i] == 1:
                out[i] = n
            else:
                raise ValueError(
                    f"shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be broadcast "
                    f"together (dimension {i - ndim}: {out[i]} vs {n})"
                )
    return tuple(out)


def broadcast_strides(shape: Shape, strides: Shape, target: Shape) -> Shape:
    if len(target) < len(shape):
        raise ValueError(f"cannot broadcast shape {shape} to fewer dimensions {target}")
    lead = len(target) - len(shape)
    out = [0] * lead
    for n, s, t in zip(shape, strides, target[lead:], strict=True):
        if n == t:
            out.append(s)
        elif n == 1:
            out.append(0)
        else:
            raise ValueError(f"cannot broadcast shape {shape} to {target}")
    return tuple(out)


def reshape_strides(shape: Shape, strides: Shape, new_shape: Shape, itemsize: int) -> Shape | None:
    """Strides that view `shape`/`strides` as `new_shape`, or None when a copy is needed.

    Walks both shapes in step, matching runs of old dimensions to runs of new ones with
    the same element count; a run of old dimensions can be regrouped only if it is
    contiguous within itself.
    """
    if is_c_contiguous(shape, strides, itemsize) or 0 in shape:
        return contiguous_strides(new_shape, itemsize)
    old = [n for n in shape if n != 1]
    old_strides = [s for n, s in zip(shape, strides, strict=True) if n != 1]
    out = [itemsize] * len(new_shape)
    oi, ni = 0, 0
    while oi < len(old) and ni < len(new_shape):
        oj, nj = oi + 1, ni + 1
        o_count, n_count = old[oi], new_shape[ni]
        while o_count != n_count:
            if n_count < o_count:
                n_count *= new_shape[nj]
                nj += 1
            else:
                o_count *= old[oj]
                oj += 1
        for k in range(oi, oj - 1):
            if old_strides[k] != old[k + 1] * old_strides[k + 1]:
                return None
        out[nj - 1] = old_strides[oj - 1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new_shape[k]
        oi, ni = oj, nj
    return tuple(out)


def resolve_reshape(size: int, shape: Any) -> Shape:
    dims = list(normalize_shape(shape, allow_unknown=True))
    unknown = [i for i, n in enumerate(dims) if n == -1]
    if len(unknown) > 1:
        raise ValueError(f"only one dimension can be -1 in reshape to {tuple(dims)}")
    known = 1
    for n in dims:
        if n != -1:
            known *= n
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(dims)}")
        dims[unknown[0]] = size // known
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(dims)}")
    return tuple(dims)
