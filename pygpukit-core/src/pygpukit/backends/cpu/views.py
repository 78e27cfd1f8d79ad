"""NumPy views of CPU arrays: how CPU kernels read and write GPUArray memory in place."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._array import GPUArray
from ..._dtypes import DataType, bfloat16, float16


def view(x: GPUArray) -> np.ndarray:
    """A NumPy array sharing `x`'s memory, with its shape, strides and offset."""
    if x.size == 0:  # an empty view's offset may point past its buffer; nothing to share
        return np.empty(x.shape, dtype=x.dtype.to_numpy_dtype())
    return np.ndarray(
        x.shape,
        dtype=x.dtype.to_numpy_dtype(),
        buffer=x.buffer.data,  # type: ignore[attr-defined]
        offset=x.offset,
        strides=x.strides,
    )


def math_dtype(dtype: DataType) -> np.dtype[Any]:
    """The NumPy dtype to compute in: half types are evaluated in float32, as GPUs do."""
    if dtype is float16 or dtype is bfloat16:
        return np.dtype(np.float32)
    return dtype.to_numpy_dtype()


def operand(x: Any, compute: DataType) -> Any:
    """An input as NumPy data in the compute dtype (views stay views when possible)."""
    want = math_dtype(compute)
    if isinstance(x, GPUArray):
        return view(x).astype(want, copy=False)
    # A weak Python scalar takes the array's dtype first (0.1 becomes float16(0.1) next to
    # a float16 array), then the compute type; out-of-range floats become inf quietly.
    with np.errstate(over="ignore"):
        return want.type(compute.to_numpy_dtype().type(x))
