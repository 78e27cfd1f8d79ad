"""`pygpukit.core.dtypes`, the seed's module path for the dtypes (same objects as `gp.*`)."""

from .._dtypes import (
    DataType,
    as_dtype,
    bfloat16,
    bool_,
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
    "DataType", "as_dtype", "bfloat16", "bool_", "float16", "float32", "float64",
    "float8_e4m3fn", "float8_e5m2", "int16", "int32", "int64", "int8", "uint8",
]  # fmt: skip
