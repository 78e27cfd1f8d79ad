"""Type promotion: the Array API standard's table, plus the documented mixed-kind rules.

Within a kind (bool, signed, unsigned, floating) the standard's lattice applies. Across
kinds the standard leaves the result open; PyGPUkit follows PyTorch and JAX: bool joins
any type, and integer with floating gives the floating type. Real with complex floating
gives the complex type of the larger precision (float64 + complex64 -> complex128), as
the standard's 2024.12 table says. Python scalars are weak: they take the array's dtype
when their kind fits (bool < int < float < complex); a Python complex next to a real
array gives the complex type of the array's precision.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from . import _dtypes as dt
from ._dtypes import DataType

_SIGNED_BY_SIZE = {1: dt.int8, 2: dt.int16, 4: dt.int32, 8: dt.int64}
_FLOAT_RANK = {dt.float16: 1, dt.bfloat16: 1, dt.float32: 2, dt.float64: 3}


def _check_arithmetic(a: DataType) -> None:
    if a.is_float8:
        raise TypeError(
            f"{a.name} is a storage type: cast it with .astype(float32) or another type first"
        )


def promote_types(a: Any, b: Any) -> DataType:
    """The result dtype of a binary op on arrays of dtypes `a` and `b` (any dtype spelling)."""
    if isinstance(a, DataType) and isinstance(b, DataType):
        return _promote(a, b)
    return _promote(dt.as_dtype(a), dt.as_dtype(b))


@cache
def _promote(a: DataType, b: DataType) -> DataType:
    if a is b:
        return a
    _check_arithmetic(a)
    _check_arithmetic(b)
    if a.kind == "b":
        return b
    if b.kind == "b":
        return a
    if a.is_complex or b.is_complex:
        parts = [dt.real_of(d) for d in (a, b) if d.is_inexact]
        wide = parts[0] if len(parts) == 1 else _promote(parts[0], parts[1])
        return dt.complex_of(wide)
    if a.is_floating or b.is_floating:
        if not (a.is_floating and b.is_floating):
            return a if a.is_floating else b
        if {a, b} == {dt.float16, dt.bfloat16}:
            return dt.float32  # neither holds the other's range and precision
        return a if _FLOAT_RANK[a] >= _FLOAT_RANK[b] else b
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    wider = _SIGNED_BY_SIZE.get(unsigned.itemsize * 2)
    if wider is None:
        raise TypeError(f"no integer type holds both {a.name} and {b.name}")
    return wider


def result_type_with_scalar(a: DataType, scalar: bool | int | float | complex) -> DataType:
    """The result dtype of an op on an array of dtype `a` and a weak Python scalar."""
    _check_arithmetic(a)
    if isinstance(scalar, bool):
        return a
    if isinstance(scalar, int):
        if a.kind == "b":
            return dt.DEFAULT_INT
        if a.is_integer:
            check_int_fits(scalar, a)
        return a
    if isinstance(scalar, float):
        return a if a.is_inexact else dt.DEFAULT_FLOAT
    if isinstance(scalar, complex):
        return dt.complex_of(a) if a.is_inexact else dt.DEFAULT_COMPLEX
    raise TypeError(
        f"unsupported scalar type {type(scalar).__name__}: use bool, int, float or complex"
    )


def check_int_fits(value: int, dtype: DataType) -> None:
    import numpy as np

    info = np.iinfo(dtype.to_numpy_dtype())
    if not info.min <= value <= info.max:
        raise OverflowError(
            f"Python int {value} is out of range for {dtype.name} [{info.min}, {info.max}]"
        )


def result_type(*operands: object) -> DataType:
    """`result_type` of the Array API: dtypes, arrays and Python scalars, in any order."""
    dtypes: list[DataType] = []
    scalars: list[bool | int | float | complex] = []
    for x in operands:
        if isinstance(x, (bool, int, float, complex)) and not isinstance(x, DataType):
            scalars.append(x)
        elif hasattr(x, "dtype") and isinstance(x.dtype, DataType):
            dtypes.append(x.dtype)
        else:
            dtypes.append(dt.as_dtype(x))
    if not dtypes:
        raise ValueError("result_type needs at least one array or dtype")
    out = dtypes[0]
    for d in dtypes[1:]:
        out = promote_types(out, d)
    for s in scalars:
        out = result_type_with_scalar(out, s)
    return out
