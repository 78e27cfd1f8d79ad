"""CPU kernel of matmul: NumPy's matmul (BLAS for floats), half types in float32."""

from __future__ import annotations

import numpy as np

from ..._array import GPUArray
from ..._dtypes import EVERY_DTYPE
from ..._providers import KernelProvider
from .views import math_dtype, operand, view


def matmul(x1: GPUArray, x2: GPUArray, out: GPUArray, allow_tf32: bool) -> None:
    # allow_tf32 is a GPU hint; the CPU always computes float32 exactly in float32.
    a = operand(x1, out.dtype)
    b = operand(x2, out.dtype)
    target = view(out)
    if math_dtype(out.dtype) == target.dtype:
        np.matmul(a, b, out=target)  # straight into the output's memory
    else:
        target[...] = np.matmul(a, b)  # one rounding from the float32 result


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the CPU provider."""
    provider.add("matmul", matmul, EVERY_DTYPE)
