"""`pygpukit.ops.matmul`, the seed's module path for matrix products."""

from __future__ import annotations

from .._array import GPUArray
from .._ops.linalg import matmul, matrix_transpose, tensordot, vecdot
from .._ops.nn import linear_bias_gelu

#: the seed's name for matmul over leading batch dimensions (matmul already batches)
batched_matmul = matmul


def transpose(x: GPUArray) -> GPUArray:
    """The transpose of a 2-D array (a view; ``.copy()`` for a contiguous one)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"transpose wants a GPUArray, got {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(f"transpose wants a 2-D array, got shape {x.shape}; use permute_dims")
    return x.T


__all__ = [
    "batched_matmul", "linear_bias_gelu", "matmul", "matrix_transpose", "tensordot",
    "transpose", "vecdot",
]  # fmt: skip
