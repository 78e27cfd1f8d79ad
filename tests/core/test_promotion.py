"""Type promotion against the Array API standard's table, plus PyGPUkit's mixed-kind rules."""

from __future__ import annotations

import itertools

import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit._promotion import result_type_with_scalar

b, i1, i2, i4, i8, u1 = gp.bool_, gp.int8, gp.int16, gp.int32, gp.int64, gp.uint8
f2, bf, f4, f8 = gp.float16, gp.bfloat16, gp.float32, gp.float64

# The standard's table restricted to PyGPUkit's dtypes (written out, not computed).
STANDARD = {
    (b, b): b,
    (i1, i1): i1, (i1, i2): i2, (i1, i4): i4, (i1, i8): i8,
    (i2, i2): i2, (i2, i4): i4, (i2, i8): i8, (i4, i4): i4, (i4, i8): i8, (i8, i8): i8,
    (u1, u1): u1, (u1, i1): i2, (u1, i2): i2, (u1, i4): i4, (u1, i8): i8,
    (f2, f2): f2, (f2, f4): f4, (f2, f8): f8, (f4, f4): f4, (f4, f8): f8, (f8, f8): f8,
}  # fmt: skip


@pytest.mark.parametrize(("pair", "want"), list(STANDARD.items()), ids=str)
def test_standard_table_both_orders(
    pair: tuple[gp.DataType, gp.DataType], want: gp.DataType
) -> None:
    a, c = pair
    assert gp.promote_types(a, c) is want
    assert gp.promote_types(c, a) is want
    assert gp.result_type(a, c) is want


def test_mixed_kinds_follow_the_documented_rules() -> None:
    for d in dt.NUMERIC_DTYPES:
        assert gp.promote_types(b, d) is d  # bool joins anything
    for i, f in itertools.product(dt.INTEGER_DTYPES, dt.FLOAT_DTYPES):
        assert gp.promote_types(i, f) is f
    assert gp.promote_types(f2, bf) is f4
    assert gp.promote_types(bf, f4) is f4


def test_promotion_is_commutative_and_associative_over_all_numeric() -> None:
    ds = (b, *dt.NUMERIC_DTYPES)
    for a, c in itertools.product(ds, repeat=2):
        assert gp.promote_types(a, c) is gp.promote_types(c, a)
    for a, c, e in itertools.product(dt.FLOAT_DTYPES, repeat=3):
        left = gp.promote_types(gp.promote_types(a, c), e)
        assert left is gp.promote_types(a, gp.promote_types(c, e))


def test_float8_is_storage_only() -> None:
    with pytest.raises(TypeError, match="storage type"):
        gp.promote_types(gp.float8_e4m3fn, f4)
    x = gp.ones(2, dtype="float8_e5m2")
    with pytest.raises(TypeError, match="float8"):
        x + x


def test_promote_types_accepts_dtype_spellings() -> None:
    assert gp.promote_types("float32", "int8") is f4
    assert gp.result_type("int8", 1.0) is f4


@pytest.mark.parametrize(
    ("dtype", "scalar", "want"),
    [(i1, 5, i1), (i1, 2.5, f4), (i1, True, i1), (b, True, b), (b, 1, i8), (b, 1.5, f4),
     (f2, 1e10, f2), (bf, 3, bf), (u1, 255, u1), (f8, 1, f8)],
)  # fmt: skip
def test_python_scalars_are_weak(dtype: gp.DataType, scalar: object, want: gp.DataType) -> None:
    assert result_type_with_scalar(dtype, scalar) is want  # type: ignore[arg-type]
    x = gp.ones(2, dtype=dtype)
    if dtype.kind != "b" or isinstance(scalar, bool):
        assert (x == scalar).dtype is gp.bool_


@pytest.mark.parametrize(
    ("dtype", "scalar"), [(i1, 128), (i1, -129), (u1, -1), (u1, 256), (i8, 2**63)]
)
def test_out_of_range_int_scalar_raises(dtype: gp.DataType, scalar: int) -> None:
    with pytest.raises(OverflowError, match="out of range"):
        gp.result_type(dtype, scalar)
    with pytest.raises(OverflowError, match=dtype.name):
        gp.ones(2, dtype=dtype) + scalar


def test_result_type_errors() -> None:
    with pytest.raises(ValueError, match="at least one"):
        gp.result_type(1, 2.0)
    with pytest.raises(TypeError, match="scalar type"):
        result_type_with_scalar(f4, "x")  # type: ignore[arg-type]
