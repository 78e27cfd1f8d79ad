"""`pygpukit.ops.elementwise`, the seed's module path for binary elementwise ops, plus its
in-place forms (`add_inplace`, `mul_inplace`) and `copy_to`."""

from __future__ import annotations

from typing import Any

from .._array import GPUArray
from .._ops.aliases import div, mul, sub
from .._ops.copying import assign, inplace
from .._ops.elementwise import (
    add,
    divide,
    maximum,
    minimum,
    multiply,
    pow,
    subtract,
    where,
)


def _target(fn: str, x: Any) -> GPUArray:
    if not isinstance(x, GPUArray):
        raise TypeError(f"{fn}: the target must be a GPUArray, got {type(x).__name__}")
    return x


def add_inplace(a: GPUArray, b: Any) -> GPUArray:
    """``a += b`` (b broadcast to a's shape; a keeps its dtype); returns a."""
    return inplace("add", _target("add_inplace", a), b)


def mul_inplace(a: GPUArray, b: Any) -> GPUArray:
    """``a *= b`` (b broadcast to a's shape; a keeps its dtype); returns a."""
    return inplace("multiply", _target("mul_inplace", a), b)


def copy_to(src: GPUArray, dst: GPUArray) -> None:
    """Write `src` into `dst` (same shape or broadcastable; dtype converted)."""
    _target("copy_to", src)
    assign(_target("copy_to", dst), src)


__all__ = [
    "add", "add_inplace", "copy_to", "div", "divide", "maximum", "minimum", "mul",
    "mul_inplace", "multiply", "pow", "sub", "subtract", "where",
]  # fmt: skip
