"""`pygpukit.ops.tensor`, the seed's module path for layout ops: concatenation, repeats,
fixed transposes, reshaping copies and the dtype casts (each a new array)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import _dtypes as dt
from .._array import GPUArray
from .._ops.copying import astype
from .._ops.manipulation import concat, permute_dims, repeat, reshape, stack


def _array(fn: str, x: object, ndim: int | None = None) -> GPUArray:
    if not isinstance(x, GPUArray):
        raise TypeError(f"{fn} wants a GPUArray, got {type(x).__name__}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{fn} wants a {ndim}-D array, got shape {x.shape}")
    return x


def concat_axis0(a: GPUArray, b: GPUArray) -> GPUArray:
    """`a` and `b` joined along axis 0."""
    return concat([_array("concat_axis0", a), _array("concat_axis0", b)], axis=0)


def repeat_interleave_axis1(x: GPUArray, repeats: int) -> GPUArray:
    """Each index of axis 1 repeated `repeats` times (grouped-query attention's KV heads)."""
    return repeat(_array("repeat_interleave_axis1", x), repeats, axis=1)


def transpose_3d_021(x: GPUArray) -> GPUArray:
    """A contiguous copy of a 3-D array with its last two axes swapped."""
    return permute_dims(_array("transpose_3d_021", x, 3), (0, 2, 1)).copy()


def transpose_4d_0213(x: GPUArray) -> GPUArray:
    """A contiguous copy of a 4-D array with axes 1 and 2 swapped."""
    return permute_dims(_array("transpose_4d_0213", x, 4), (0, 2, 1, 3)).copy()


def reshape_copy(x: GPUArray, shape: Sequence[int]) -> GPUArray:
    """A new contiguous array with `x`'s elements in `shape`."""
    return reshape(_array("reshape_copy", x), tuple(shape), copy=True)


def _cast(fn: str, source: dt.DataType, target: dt.DataType) -> Callable[[GPUArray], GPUArray]:
    def cast(x: GPUArray) -> GPUArray:
        if _array(fn, x).dtype is not source:
            raise TypeError(f"{fn} wants a {source.name} array, got {x.dtype.name}")
        return astype(x, target)

    cast.__name__ = cast.__qualname__ = fn
    cast.__doc__ = f"A {target.name} copy of a {source.name} array (round to nearest even)."
    return cast


cast_f32_to_bf16 = _cast("cast_f32_to_bf16", dt.float32, dt.bfloat16)
cast_f32_to_f16 = _cast("cast_f32_to_f16", dt.float32, dt.float16)
cast_bf16_to_f32 = _cast("cast_bf16_to_f32", dt.bfloat16, dt.float32)
cast_f16_to_f32 = _cast("cast_f16_to_f32", dt.float16, dt.float32)

__all__ = [
    "cast_bf16_to_f32", "cast_f16_to_f32", "cast_f32_to_bf16", "cast_f32_to_f16", "concat",
    "concat_axis0", "repeat_interleave_axis1", "reshape_copy", "stack", "transpose_3d_021",
    "transpose_4d_0213",
]  # fmt: skip
