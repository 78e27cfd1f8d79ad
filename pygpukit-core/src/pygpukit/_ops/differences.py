"""diff: the standard's (2024.12) n-th forward difference along an axis, from slices,
concat and subtract, so it runs on every provider and every numeric dtype, complex too."""

from __future__ import annotations

import operator
from typing import Any

from .._array import GPUArray
from .._promotion import result_type_with_scalar
from ._reduction import single_axis
from .creation import full
from .elementwise import apply_binary
from .manipulation import concat

__all__ = ["diff"]


def _along(x: GPUArray, axis: int, part: slice) -> GPUArray:
    key: list[Any] = [slice(None)] * x.ndim
    key[axis] = part
    return x[tuple(key)]


def _edge(name: str, value: Any, x: GPUArray, axis: int) -> GPUArray:
    """prepend/append as an array: a GPUArray as it is, a Python scalar (as NumPy takes
    it) as x's shape with length 1 along the axis, in x's dtype promoted with the scalar
    (weakly, as the standard promotes Python scalars)."""
    if isinstance(value, GPUArray):
        return value
    if isinstance(value, (bool, int, float, complex)):
        shape = list(x.shape)
        shape[axis] = 1
        dtype = result_type_with_scalar(x.dtype, value)
        return full(tuple(shape), value, dtype=dtype, device=x.device)
    raise TypeError(f"diff: {name} must be a GPUArray or a Python scalar, got "
                    f"{type(value).__name__}")  # fmt: skip


def diff(
    x: GPUArray,
    /,
    *,
    axis: int = -1,
    n: int = 1,
    prepend: Any = None,
    append: Any = None,
    backend: str | None = None,
) -> GPUArray:
    """The n-th forward difference along `axis`: out[i] = x[i+1] - x[i], applied n times,
    after `prepend` and `append` are joined on along that axis (bool data: x[i+1] != x[i],
    as NumPy does)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"diff wants a GPUArray, got {type(x).__name__}")
    if x.ndim == 0:
        raise ValueError("diff wants an array of at least one dimension, got a 0-d array")
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"diff: n must be an int, got {n!r}")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: n must be >= 0, got {n}")
    if isinstance(axis, bool) or not hasattr(axis, "__index__"):
        raise TypeError(f"diff: axis must be an int, got {axis!r}")
    index = single_axis(x, operator.index(axis))  # IndexError-style message for a bad axis
    assert index is not None
    parts = [_edge("prepend", prepend, x, index)] if prepend is not None else []
    parts.append(x)
    if append is not None:
        parts.append(_edge("append", append, x, index))
    out = concat(parts, axis=index, backend=backend) if len(parts) > 1 else x
    op = "not_equal" if out.dtype.kind == "b" else "subtract"
    for _ in range(n):
        if out.shape[index] == 0:
            break
        out = apply_binary(op, _along(out, index, slice(1, None)),
                           _along(out, index, slice(None, -1)), backend)  # fmt: skip
    return out
