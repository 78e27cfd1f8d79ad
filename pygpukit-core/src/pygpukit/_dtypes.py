"""Data types: the `DataType` objects, their NumPy twins and their kinds."""

from __future__ import annotations

from typing import Any, Final

import ml_dtypes
import numpy as np


class DataType:
    """One element type of a `GPUArray`.

    Instances are singletons (compare with `is` or `==`); each maps to exactly one NumPy
    dtype (bfloat16 and the float8 types come from `ml_dtypes`).
    """

    __slots__ = ("_np", "itemsize", "kind", "name")

    #: kind codes: "b" bool, "i" signed int, "u" unsigned int, "f" real floating,
    #: "c" complex floating
    name: str
    itemsize: int
    kind: str
    _np: np.dtype[Any]

    def __init__(self, name: str, np_dtype: Any, kind: str) -> None:
        self.name = name
        self._np = np.dtype(np_dtype)
        self.itemsize = self._np.itemsize
        self.kind = kind

    def to_numpy_dtype(self) -> np.dtype[Any]:
        return self._np

    @staticmethod
    def from_numpy_dtype(dtype: Any) -> DataType:
        """The `DataType` for a NumPy dtype (or anything `np.dtype` accepts)."""
        try:
            key = np.dtype(dtype)
        except TypeError as exc:
            raise TypeError(f"not a NumPy dtype: {dtype!r}") from exc
        found = _BY_NUMPY.get(key)
        if found is None:
            raise TypeError(
                f"dtype {key} is not supported by PyGPUkit; supported: {', '.join(_BY_NAME)}"
            )
        return found

    @staticmethod
    def from_string(name: str) -> DataType:
        found = _BY_NAME.get(name) or _ALIASES.get(name)
        if found is None:
            raise TypeError(f"unknown dtype name {name!r}; supported: {', '.join(_BY_NAME)}")
        return found

    @property
    def is_floating(self) -> bool:
        return self.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_inexact(self) -> bool:
        """Real or complex floating (the dtypes true division and exp keep)."""
        return self.kind in "fc"

    @property
    def is_integer(self) -> bool:
        return self.kind in "iu"

    @property
    def is_float8(self) -> bool:
        return self.name.startswith("float8")

    def __repr__(self) -> str:
        return f"pygpukit.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DataType):
            return self is other
        if isinstance(other, str):
            return other in (self.name,) or _ALIASES.get(other) is self
        if isinstance(other, (np.dtype, type)):
            try:
                return np.dtype(other) == self._np
            except TypeError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self) -> str:
        # pickles as the module-level constant; the boolean one is named bool_ there
        return "bool_" if self.name == "bool" else self.name


bool_ = DataType("bool", np.bool_, "b")
int8 = DataType("int8", np.int8, "i")
uint8 = DataType("uint8", np.uint8, "u")
int16 = DataType("int16", np.int16, "i")
int32 = DataType("int32", np.int32, "i")
int64 = DataType("int64", np.int64, "i")
float16 = DataType("float16", np.float16, "f")
bfloat16 = DataType("bfloat16", ml_dtypes.bfloat16, "f")
float32 = DataType("float32", np.float32, "f")
float64 = DataType("float64", np.float64, "f")
float8_e4m3fn = DataType("float8_e4m3fn", ml_dtypes.float8_e4m3fn, "f")
float8_e5m2 = DataType("float8_e5m2", ml_dtypes.float8_e5m2, "f")
complex64 = DataType("complex64", np.complex64, "c")
complex128 = DataType("complex128", np.complex128, "c")

#: Every real dtype. Complex dtypes are kept apart (COMPLEX_DTYPES): providers that build
#: tables from this tuple then never meet a dtype they have no entry for.
ALL_DTYPES: Final[tuple[DataType, ...]] = (
    bool_, int8, uint8, int16, int32, int64,
    float16, bfloat16, float32, float64, float8_e4m3fn, float8_e5m2,
)  # fmt: skip
COMPLEX_DTYPES: Final = (complex64, complex128)
#: Every dtype PyGPUkit has, real and complex.
EVERY_DTYPE: Final = (*ALL_DTYPES, *COMPLEX_DTYPES)
#: Real types arithmetic is defined on; float8 types are storage-and-cast only.
NUMERIC_DTYPES: Final = tuple(d for d in ALL_DTYPES if d.kind != "b" and not d.is_float8)
INTEGER_DTYPES: Final = tuple(d for d in ALL_DTYPES if d.is_integer)
FLOAT_DTYPES: Final = tuple(d for d in ALL_DTYPES if d.is_floating and not d.is_float8)

_BY_NAME: Final = {d.name: d for d in EVERY_DTYPE}
_BY_NUMPY: Final = {d.to_numpy_dtype(): d for d in EVERY_DTYPE}
_ALIASES: Final = {"bool_": bool_, "bf16": bfloat16, "fp16": float16, "half": float16,
                   "float": float32, "fp32": float32, "double": float64}  # fmt: skip

DEFAULT_FLOAT: Final = float32
DEFAULT_COMPLEX: Final = complex64
DEFAULT_INT: Final = int64
INDEX_DTYPE: Final = int64


def as_dtype(dtype: Any) -> DataType:
    """Accept a `DataType`, a name ("float32"), a NumPy dtype or a Python type."""
    if isinstance(dtype, DataType):
        return dtype
    if isinstance(dtype, str):
        return DataType.from_string(dtype)
    if dtype is None:  # np.dtype(None) would quietly mean float64
        raise TypeError("dtype must not be None here; pass a dtype such as pygpukit.float32")
    if dtype is bool:
        return bool_
    if dtype is int:
        return DEFAULT_INT
    if dtype is float:
        return DEFAULT_FLOAT
    if dtype is complex:
        return DEFAULT_COMPLEX
    return DataType.from_numpy_dtype(dtype)


def complex_of(dtype: DataType) -> DataType:
    """The complex dtype with `dtype`'s precision: complex128 for float64, else complex64."""
    if dtype.is_complex:
        return dtype
    return complex128 if dtype is float64 else complex64


def real_of(dtype: DataType) -> DataType:
    """The real dtype of a complex dtype's parts (float32/float64); real dtypes unchanged."""
    if dtype is complex64:
        return float32
    return float64 if dtype is complex128 else dtype
