"""Comparing GPUArrays with NumPy references, and poisoning outputs before a kernel runs."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .._array import GPUArray
from .._dtypes import DataType, as_dtype
from .._placement import backend_of
from ._tolerance import tolerance


def _as_float64(values: np.ndarray) -> np.ndarray:
    return np.asarray(values).astype(np.float64)


def assert_allclose(
    actual: GPUArray,
    expected: Any,
    dtype: Any = None,
    *,
    op_kind: str = "elementwise",
    rtol: float | None = None,
    atol: float | None = None,
    err_msg: str = "",
) -> None:
    """Assert `actual` matches the NumPy `expected` within `tolerance(dtype, op_kind)`.

    `dtype` (default: `actual.dtype`) is the dtype `actual` must have and whose row of
    the tolerance table applies; `rtol`/`atol` override the table. NaNs must sit at the
    same places and infinities must match exactly. On failure the message gives the
    number of mismatches, the largest absolute and relative errors and the worst index.
    """
    if not isinstance(actual, GPUArray):
        raise TypeError(f"assert_allclose: actual must be a GPUArray, got {type(actual).__name__}")
    want_dtype: DataType = actual.dtype if dtype is None else as_dtype(dtype)
    prefix = f"{err_msg}: " if err_msg else ""
    if actual.dtype is not want_dtype:
        raise AssertionError(f"{prefix}dtype is {actual.dtype.name}, expected {want_dtype.name}")
    exp = np.asarray(expected)
    if actual.shape != exp.shape:
        raise AssertionError(f"{prefix}shape is {actual.shape}, expected {exp.shape}")
    got = actual.to_numpy()
    table_rtol, table_atol = tolerance(want_dtype, op_kind)
    rtol = table_rtol if rtol is None else rtol
    atol = table_atol if atol is None else atol
    if want_dtype.is_complex:
        _compare_complex(got, exp.astype(np.complex128), rtol, atol, want_dtype, prefix)
        return
    if not want_dtype.is_floating:
        _compare_exact(got, exp, prefix)
        return
    _compare_close(_as_float64(got), _as_float64(exp), rtol, atol, want_dtype, prefix)


def _compare_exact(got: np.ndarray, exp: np.ndarray, prefix: str) -> None:
    if exp.dtype.kind == "f" and not np.all(np.isfinite(exp)):
        raise AssertionError(f"{prefix}expected integer results, the reference has NaN/inf")
    bad = got.astype(np.float64) != exp.astype(np.float64)
    if got.dtype.kind in "iu" and exp.dtype.kind in "iub":
        bad = got.astype(np.int64) != exp.astype(np.int64)  # exact beyond 2**53
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"{prefix}{int(bad.sum())} of {bad.size} elements differ; first at index "
            f"{where}: got {got[where]!r}, expected {exp[where]!r}"
        )


def _compare_close(
    got: np.ndarray, exp: np.ndarray, rtol: float, atol: float, dtype: DataType, prefix: str
) -> None:
    got_nan, exp_nan = np.isnan(got), np.isnan(exp)
    both_inf = np.isinf(exp) & (got == exp)
    with np.errstate(invalid="ignore", over="ignore"):
        abs_err = np.abs(got - exp)
        rel_err = abs_err / np.abs(exp)
        bad = (got_nan != exp_nan) | (
            ~exp_nan & ~both_inf & ~(abs_err <= atol + rtol * np.abs(exp))
        )
        bad |= np.isinf(exp) & ~both_inf  # inf - inf is within any tolerance of inf
    if not bad.any():
        return
    ok = ~exp_nan & ~got_nan & ~both_inf
    max_abs = float(np.max(abs_err[ok], initial=0.0))
    max_rel = float(np.max(np.nan_to_num(rel_err[ok], nan=0.0, posinf=np.inf), initial=0.0))
    with np.errstate(invalid="ignore", over="ignore"):
        excess = np.where(bad, np.nan_to_num(abs_err - rtol * np.abs(exp), nan=np.inf), -np.inf)
    flat = int(np.argmax(excess))
    worst = tuple(int(i) for i in np.unravel_index(flat, bad.shape)) if bad.ndim else ()
    raise AssertionError(
        f"{prefix}{int(bad.sum())} of {bad.size} elements differ beyond rtol={rtol:g}, "
        f"atol={atol:g} ({dtype.name}); max abs error {max_abs:.6g}, max rel error "
        f"{max_rel:.6g}; worst at index {worst}: got {got[worst]!r}, expected {exp[worst]!r}"
    )


def _compare_complex(
    got: np.ndarray, exp: np.ndarray, rtol: float, atol: float, dtype: DataType, prefix: str
) -> None:
    """Complex results: |got - exp| <= atol + rtol * |exp| (the modulus, so a tiny part
    of a large number is not held to a relative bound of its own); NaN and infinite
    parts must sit at the same places, infinite parts equal."""
    got = got.astype(np.complex128)
    parts = ((got.real, exp.real), (got.imag, exp.imag))
    odd = np.zeros(got.shape, dtype=bool)
    for g, e in parts:
        odd |= (np.isnan(g) != np.isnan(e)) | (np.isinf(e) & (g != e))
    special = np.zeros(got.shape, dtype=bool)
    for _, e in parts:
        special |= ~np.isfinite(e)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(got - exp)
        bad = odd | (~special & ~(err <= atol + rtol * np.abs(exp)))
    if not bad.any():
        return
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    raise AssertionError(
        f"{prefix}{int(bad.sum())} of {bad.size} elements differ beyond rtol={rtol:g}, "
        f"atol={atol:g} ({dtype.name}, |got - expected| against |expected|); first at "
        f"index {where}: got {got[where]!r}, expected {exp[where]!r}"
    )


def poison_value(dtype: Any, *, alternate: bool = False) -> bool | int | float | complex:
    """The value `poison` writes: NaN for floats, an extreme for ints, True for bool.

    `alternate=True` gives a second, different value (-inf, or the lowest finite value
    for float8_e4m3fn, which has no inf; the other integer extreme; False),
    so a test can poison twice and catch a kernel that skips elements of any dtype.
    """
    d = as_dtype(dtype)
    if d.is_complex:
        return complex(float("-inf"), float("-inf")) if alternate else complex("nan+nanj")
    if d.is_floating:
        if not alternate:
            return float("nan")
        np_dtype = d.to_numpy_dtype()
        has_inf = bool(np.isinf(np.array(np.inf).astype(np_dtype)))
        return float("-inf") if has_inf else float(ml_dtypes.finfo(np_dtype).min)
    if d.kind == "b":
        return not alternate
    info = np.iinfo(d.to_numpy_dtype())
    return int(info.max if alternate else info.min)


def poison(out: GPUArray, *, alternate: bool = False) -> GPUArray:
    """Fill `out` with `poison_value(out.dtype)` so a test can check every element is written.

    Contiguous arrays are written straight through the device's upload, so poisoning
    depends on no kernel; strided views fall back to an assignment.
    """
    if not isinstance(out, GPUArray):
        raise TypeError(f"poison wants a GPUArray, got {type(out).__name__}")
    value = poison_value(out.dtype, alternate=alternate)
    if out.size == 0:
        return out
    if out.is_contiguous:
        host = np.full(out.shape, value, dtype=out.dtype.to_numpy_dtype())
        backend_of(out.device).upload(out.buffer, out.offset, host)
    else:
        out[...] = value
    return out
