"""`pygpukit.ops.unary`, the seed's module path for unary elementwise ops."""

from .._ops.elementwise import (
    abs,
    cos,
    exp,
    gelu,
    log,
    negative,
    relu,
    rsqrt,
    sigmoid,
    silu,
    sin,
    sqrt,
    tanh,
)

__all__ = [
    "abs", "cos", "exp", "gelu", "log", "negative", "relu", "rsqrt", "sigmoid", "silu", "sin",
    "sqrt", "tanh",
]  # fmt: skip
