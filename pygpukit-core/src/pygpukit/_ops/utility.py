"""Data type functions of the Array API: can_cast, finfo, iinfo, isdtype, result_type.

(``astype`` lives with the copies in ``copying``.) No kernels: these answer from the
dtype tables alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes

from .. import _dtypes as dt
from .._array import GPUArray
from .._dtypes import DataType
from .._namespace_info import __array_namespace_info__
from .._promotion import promote_types, result_type

__all__ = [
    "__array_namespace_info__", "can_cast", "finfo", "finfo_object", "iinfo", "iinfo_object",
    "isdtype", "result_type",
]  # fmt: skip

#: the kind names of `isdtype`, each with the dtype kinds it covers
_KINDS: dict[str, str] = {
    "bool": "b",
    "signed integer": "i",
    "unsigned integer": "u",
    "integral": "iu",
    "real floating": "f",
    "complex floating": "c",
    "numeric": "iufc",
}


def _dtype_of(x: Any, fn: str) -> DataType:
    if isinstance(x, GPUArray):
        return x.dtype
    try:
        return dt.as_dtype(x)
    except TypeError:
        raise TypeError(f"{fn} wants a dtype or a GPUArray, got {x!r}") from None


@dataclass(frozen=True)
class finfo_object:
    """Machine limits of a floating dtype (Python floats, as the standard asks)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DataType

    @property
    def tiny(self) -> float:
        """NumPy's name for `smallest_normal`."""
        return self.smallest_normal


@dataclass(frozen=True)
class iinfo_object:
    """Limits of an integer dtype."""

    bits: int
    max: int
    min: int
    dtype: DataType


def finfo(type: Any, /) -> finfo_object:
    """Machine limits of a floating dtype (bfloat16 and float8 included); a complex dtype
    gives those of its real parts (float32 for complex64), as the standard says."""
    d = dt.real_of(_dtype_of(type, "finfo"))
    if not d.is_floating:
        raise TypeError(f"finfo wants a floating dtype, got {d.name}; use iinfo for integers")
    info = ml_dtypes.finfo(d.to_numpy_dtype())  # NumPy's finfo for the standard types too
    return finfo_object(
        bits=int(info.bits),
        eps=float(info.eps),
        max=float(info.max),
        min=float(info.min),
        smallest_normal=float(info.smallest_normal),
        dtype=d,
    )


def iinfo(type: Any, /) -> iinfo_object:
    """Limits of an integer dtype."""
    d = _dtype_of(type, "iinfo")
    if not d.is_integer:
        raise TypeError(f"iinfo wants an integer dtype, got {d.name}; use finfo for floats")
    info = ml_dtypes.iinfo(d.to_numpy_dtype())
    return iinfo_object(bits=int(info.bits), max=int(info.max), min=int(info.min), dtype=d)


def isdtype(dtype: Any, kind: str | DataType | tuple[str | DataType, ...]) -> bool:
    """Whether `dtype` is of `kind`: a dtype, a kind name ("integral", ...) or a tuple."""
    if not isinstance(dtype, DataType):
        raise TypeError(f"isdtype wants a dtype as its first argument, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, DataType):
        return dtype is kind
    if isinstance(kind, str):
        kinds = _KINDS.get(kind)
        if kinds is None:
            raise ValueError(
                f"isdtype: unknown kind {kind!r}; kinds are {', '.join(map(repr, _KINDS))}"
            )
        return dtype.kind in kinds
    raise TypeError(f"isdtype: kind must be a dtype, a kind name or a tuple, got {kind!r}")


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether `from_` (dtype or array) converts to `to` under the promotion rules."""
    src = _dtype_of(from_, "can_cast")
    dst = _dtype_of(to, "can_cast")
    if src is dst:
        return True
    if src.is_float8 or dst.is_float8:
        # storage types: they widen exactly into every wider float, and nothing goes in
        return src.is_float8 and dst.is_floating and not dst.is_float8
    return promote_types(src, dst) is dst
