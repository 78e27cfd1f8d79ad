"""Random host data and the memory layouts the op tests build GPUArrays in (no tests here)."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
from pygpukit import _dtypes as dt

LAYOUTS = ("contiguous", "transposed", "reversed", "strided")


def host_data(dtype: dt.DataType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Fresh random values of `dtype` (never all zeros for non-empty shapes)."""
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        values = rng.random(shape) < 0.5
    elif dtype.kind == "i":
        values = rng.integers(-100, 100, shape)
    elif dtype.kind == "u":
        values = rng.integers(1, 200, shape)
    else:
        values = (rng.standard_normal(shape) * 4).astype(np.float32)
    return np.asarray(values).astype(dtype.to_numpy_dtype())


def make(data: np.ndarray, layout: str) -> gp.GPUArray:
    """A GPUArray holding `data`'s values laid out as `layout` (one of LAYOUTS)."""
    if layout == "transposed":
        return gp.from_numpy(np.array(data.T, order="C")).transpose()
    if layout == "reversed" and data.ndim:
        rev = (slice(None, None, -1),) * data.ndim
        return gp.from_numpy(np.array(data[rev], order="C"))[rev]
    if layout == "strided" and data.ndim:
        wide = np.zeros((*data.shape[:-1], 2 * data.shape[-1]), data.dtype)
        wide[..., ::2] = data
        return gp.from_numpy(wide)[..., ::2]
    return gp.from_numpy(data)
