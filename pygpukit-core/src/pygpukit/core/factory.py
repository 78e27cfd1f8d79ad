"""`pygpukit.core.factory`, the seed's module path for the creation functions."""

from .._ops.creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)

__all__ = [
    "arange", "asarray", "empty", "empty_like", "eye", "from_numpy", "full", "full_like",
    "linspace", "ones", "ones_like", "zeros", "zeros_like",
]  # fmt: skip
