"""`pygpukit.core.dtypes`: the dtypes (the same objects as `gp.float32` ...) and their
tables, public for plugins (``from pygpukit.core import dtypes as dt``); the seed's path."""

from .._dtypes import (
    ALL_DTYPES,
    COMPLEX_DTYPES,
    DEFAULT_FLOAT,
    DEFAULT_INT,
    EVERY_DTYPE,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    NUMERIC_DTYPES,
    DataType,
    as_dtype,
    bfloat16,
    bool_,
    complex64,
    complex128,
    float8_e4m3fn,
    float8_e5m2,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)

__all__ = [
    "ALL_DTYPES", "COMPLEX_DTYPES", "DEFAULT_FLOAT", "DEFAULT_INT", "EVERY_DTYPE",
    "FLOAT_DTYPES", "INTEGER_DTYPES", "NUMERIC_DTYPES", "DataType", "as_dtype", "bfloat16",
    "bool_", "complex64", "complex128", "float16", "float32", "float64",
    "float8_e4m3fn", "float8_e5m2", "int16", "int32", "int64", "int8", "uint8",
]  # fmt: skip
