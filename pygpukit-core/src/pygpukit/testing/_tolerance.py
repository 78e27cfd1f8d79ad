"""Per-dtype tolerances: how close a result must be to a float64 NumPy reference."""

from __future__ import annotations

from typing import Any, Final

from .._dtypes import DataType, as_dtype, real_of

#: op kinds, from tightest to loosest; each names the error a correct kernel may add
OP_KINDS: Final = ("exact", "elementwise", "transcendental", "reduction", "matmul")

# (rtol, atol) per float dtype and op kind. "elementwise" is one rounding of the result
# (+-*/, casts); "transcendental" allows a few ulps more, as GPU math libraries do;
# "reduction" and "matmul" allow the error that grows with the number of terms summed
# (and TensorFloat-32 for float32 matmul).
_FLOAT_TABLE: Final[dict[str, dict[str, tuple[float, float]]]] = {
    "float64": {
        "elementwise": (1e-12, 1e-12),
        "transcendental": (1e-10, 1e-12),
        "reduction": (1e-10, 1e-10),
        "matmul": (1e-10, 1e-10),
    },
    "float32": {
        "elementwise": (1e-6, 1e-6),
        "transcendental": (1e-5, 1e-6),
        "reduction": (1e-4, 1e-4),
        "matmul": (2e-3, 2e-3),
    },
    "float16": {
        "elementwise": (2e-3, 2e-3),
        "transcendental": (4e-3, 2e-3),
        "reduction": (1e-2, 1e-2),
        "matmul": (1e-2, 1e-2),
    },
    "bfloat16": {
        "elementwise": (1.6e-2, 1.6e-2),
        "transcendental": (3.2e-2, 1.6e-2),
        "reduction": (5e-2, 5e-2),
        "matmul": (5e-2, 5e-2),
    },
    "float8_e4m3fn": {
        "elementwise": (1.3e-1, 1.6e-2),
        "transcendental": (1.3e-1, 1.6e-2),
        "reduction": (2.5e-1, 1e-1),
        "matmul": (2.5e-1, 1e-1),
    },
    "float8_e5m2": {
        "elementwise": (2.5e-1, 3.2e-2),
        "transcendental": (2.5e-1, 3.2e-2),
        "reduction": (5e-1, 2e-1),
        "matmul": (5e-1, 2e-1),
    },
}


def tolerance(dtype: Any, op_kind: str = "elementwise") -> tuple[float, float]:
    """The (rtol, atol) a result of `dtype` from an op of `op_kind` must meet."""
    if op_kind not in OP_KINDS:
        raise ValueError(f"unknown op_kind {op_kind!r}; choose one of {', '.join(OP_KINDS)}")
    d: DataType = real_of(as_dtype(dtype))  # a complex result: its parts' precision
    if op_kind == "exact" or not d.is_floating:
        return (0.0, 0.0)  # integers and bools have one right answer
    return _FLOAT_TABLE[d.name][op_kind]
