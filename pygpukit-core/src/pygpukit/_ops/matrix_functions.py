"""The `linalg` extension's functions built from other ops: norms, trace, diagonal,
outer, cross, matrix_power, matrix_rank and pinv (no kernels of their own: a backend
that has the elementwise ops, the reductions, matmul and the factorizations runs them)."""

from __future__ import annotations

import math
import operator
from typing import Any

from .. import _dtypes as dt
from .. import _views
from .._array import GPUArray
from .._promotion import promote_types
from ._core import device_of, empty
from ._reduction import check_array
from .complex_parts import conj
from .copying import assign, astype, fill
from .creation import eye
from .elementwise import apply_binary, apply_unary, where
from .factorizations import check_float, check_matrix, inv, square_input, svd, svdvals
from .linalg import matmul
from .manipulation import stack
from .searching import count_nonzero
from .statistical import max as reduce_max
from .statistical import min as reduce_min
from .statistical import sum as reduce_sum

__all__ = [
    "cross", "diagonal", "matrix_norm", "matrix_power", "matrix_rank", "outer", "pinv",
    "trace", "vector_norm",
]  # fmt: skip


def _numeric(fn: str, x: Any, name: str = "x") -> GPUArray:
    a = check_array(f"linalg.{fn}", x, allow_bool=False, allow_complex=True, name=name)
    return a


def _int(fn: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"linalg.{fn}: {name} must be an int, got {value!r}")
    return operator.index(value)


def diagonal(x: GPUArray, /, *, offset: int = 0) -> GPUArray:
    """A read-only view of diagonal `offset` of each matrix (above the main one when
    positive), shape (..., L)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"linalg.diagonal: x must be a GPUArray, got {type(x).__name__}")
    check_matrix("diagonal", x)
    k = _int("diagonal", "offset", offset)
    m, n = x.shape[-2:]
    s_row, s_col = x.strides[-2:]
    length = max(0, min(m, n - k) if k >= 0 else min(m + k, n))
    start = x.offset + (k * s_col if k >= 0 else -k * s_row) if length else x.offset
    return x._view((*x.shape[:-2], length), (*x.strides[:-2], s_row + s_col), start,
                   readonly=True)  # fmt: skip


def trace(x: GPUArray, /, *, offset: int = 0, dtype: Any = None,
          backend: str | None = None) -> GPUArray:  # fmt: skip
    """The sum of diagonal `offset` of each matrix, with `sum`'s dtype rules."""
    a = _numeric("trace", x)
    check_matrix("trace", a)
    return reduce_sum(diagonal(a, offset=offset), axis=-1, dtype=dtype, backend=backend)


def outer(x1: GPUArray, x2: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """The outer product of two vectors: out[i, j] = x1[i] * x2[j]."""
    a, b = _numeric("outer", x1, "x1"), _numeric("outer", x2, "x2")
    for name, v in (("x1", a), ("x2", b)):
        if v.ndim != 1:
            raise ValueError(f"linalg.outer: {name} must be 1-D, got shape {v.shape}")
    return apply_binary("multiply", a.reshape((a.shape[0], 1)), b.reshape((1, b.shape[0])),
                        backend)  # fmt: skip


def cross(x1: GPUArray, x2: GPUArray, /, *, axis: int = -1,
          backend: str | None = None) -> GPUArray:  # fmt: skip
    """The cross product of 3-element vectors along `axis`, other axes broadcast."""
    a, b = _numeric("cross", x1, "x1"), _numeric("cross", x2, "x2")
    device_of(a, b)
    try:
        shape = _views.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(
            f"linalg.cross: shapes {a.shape} and {b.shape} cannot be broadcast together"
        ) from None
    ax = _int("cross", "axis", axis)
    if not -len(shape) <= ax < len(shape) or min(a.ndim, b.ndim) == 0:
        raise ValueError(f"linalg.cross: axis {axis} is out of range for shapes {a.shape} "
                         f"and {b.shape}")  # fmt: skip
    ax = ax % len(shape)
    for name, v in (("x1", a), ("x2", b)):
        # the axis counts from the end of the broadcast shape; each input must hold it
        mine = ax - (len(shape) - v.ndim)
        if mine < 0 or v.shape[mine] != 3:
            raise ValueError(
                f"linalg.cross: {name} (shape {v.shape}) must have size 3 along axis {axis}"
            )
    dtype = promote_types(a.dtype, b.dtype)
    a, b = astype(a.broadcast_to(shape), dtype), astype(b.broadcast_to(shape), dtype)
    front = (slice(None),) * ax

    def part(v: GPUArray, i: int) -> GPUArray:
        return v[(*front, i)]

    def mul(p: GPUArray, q: GPUArray) -> GPUArray:
        return apply_binary("multiply", p, q, backend)

    comps = [
        apply_binary("subtract", mul(part(a, j), part(b, k)), mul(part(a, k), part(b, j)), backend)
        for j, k in ((1, 2), (2, 0), (0, 1))
    ]
    return stack(comps, axis=ax, backend=backend)


def _abs(x: GPUArray, backend: str | None) -> GPUArray:
    return apply_unary("abs", x, backend)  # complex abs gives the real dtype


def _sum_squares_sqrt(x: GPUArray, axes: tuple[int, ...], keepdims: bool,
                      backend: str | None) -> GPUArray:  # fmt: skip
    mag = _abs(x, backend)
    total = reduce_sum(apply_binary("multiply", mag, mag, backend), axis=axes,
                       keepdims=keepdims, backend=backend)  # fmt: skip
    return apply_unary("sqrt", total, backend)


def vector_norm(x: GPUArray, /, *, axis: int | tuple[int, ...] | None = None,
                keepdims: bool = False, ord: int | float = 2,
                backend: str | None = None) -> GPUArray:  # fmt: skip
    """The vector p-norm over `axis` (all axes when None, as one flattened vector); ord
    may be any real number, inf or -inf (0 counts the nonzero elements)."""
    a = check_float("vector_norm", x)
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg.vector_norm: ord must be an int or a float, got {ord!r}")
    if axis is None:
        axes = tuple(range(a.ndim))
    elif isinstance(axis, tuple):
        try:
            axes = _views.normalize_axes(axis, a.ndim)
        except ValueError as exc:
            raise ValueError(f"linalg.vector_norm: {exc} (x has shape {a.shape})") from None
    else:
        axes = (_views.normalize_axis(_int("vector_norm", "axis", axis), a.ndim),)
    real = dt.real_of(a.dtype)
    if ord == 2:
        return _sum_squares_sqrt(a, axes, keepdims, backend)
    mag = _abs(a, backend)
    if ord == math.inf:
        return reduce_max(mag, axis=axes, keepdims=keepdims, backend=backend)
    if ord == -math.inf:
        return reduce_min(mag, axis=axes, keepdims=keepdims, backend=backend)
    if ord == 0:
        count = count_nonzero(mag, axis=axes, keepdims=keepdims, backend=backend)
        return astype(count, real, backend=backend)
    if ord == 1:
        return reduce_sum(mag, axis=axes, keepdims=keepdims, backend=backend)
    p = float(ord)
    powered = apply_binary("pow", mag, p, backend)
    total = reduce_sum(powered, axis=axes, keepdims=keepdims, backend=backend)
    return apply_binary("pow", total, 1.0 / p, backend)


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def matrix_norm(x: GPUArray, /, *, keepdims: bool = False, ord: Any = "fro",
                backend: str | None = None) -> GPUArray:  # fmt: skip
    """The matrix norm of each matrix: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf."""
    a = check_float("matrix_norm", x)
    check_matrix("matrix_norm", a)
    if isinstance(ord, bool) or ord not in _MATRIX_ORDS:
        raise ValueError(
            f"linalg.matrix_norm: ord must be one of 'fro', 'nuc', 1, -1, 2, -2, inf, -inf; "
            f"got {ord!r}"
        )
    if ord == "fro":
        out = _sum_squares_sqrt(a, (a.ndim - 2, a.ndim - 1), False, backend)
    elif ord in ("nuc", 2, -2):
        s = svdvals(a, backend=backend)
        if ord == "nuc":
            out = reduce_sum(s, axis=-1, backend=backend)
        else:
            out = (reduce_max if ord == 2 else reduce_min)(s, axis=-1, backend=backend)
    else:
        # 1 / -1: the largest / smallest column sum; inf / -inf: the same over rows
        along = -2 if ord in (1, -1) else -1
        sums = reduce_sum(_abs(a, backend), axis=along, backend=backend)
        pick = reduce_max if ord in (1, math.inf) else reduce_min
        out = pick(sums, axis=-1, backend=backend)
    return out.reshape((*out.shape, 1, 1)) if keepdims else out


def matrix_power(x: GPUArray, n: int, /, *, backend: str | None = None) -> GPUArray:
    """x raised to the integer power `n` (n = 0: identities; n < 0: powers of inv(x))."""
    a = square_input("matrix_power", x)
    k = _int("matrix_power", "n", n)
    if k == 0:
        out = empty(a.shape, a.dtype, a.device)
        if out.size:
            assign(out, eye(a.shape[-1], dtype=a.dtype, device=a.device, backend=backend),
                   backend)  # fmt: skip
        return out
    base = inv(a, backend=backend) if k < 0 else a
    k = abs(k)
    result: GPUArray | None = None
    # binary powering: log2(n) squarings, one product per set bit
    while True:
        if k & 1:
            result = base if result is None else matmul(result, base, backend=backend)
        k >>= 1
        if not k:
            break
        base = matmul(base, base, backend=backend)
    assert result is not None
    return astype(result, result.dtype, backend=backend) if result is a else result


def _rtol(fn: str, rtol: Any, s: GPUArray, m: int, n: int,
          backend: str | None) -> GPUArray | float:  # fmt: skip
    """The relative cutoff per matrix: rtol (a float or an array broadcast against the
    batch), by default max(M, N) * eps of the dtype."""
    real = dt.real_of(s.dtype)
    if rtol is None:
        eps = 1.1920928955078125e-07 if real is dt.float32 else 2.220446049250313e-16
        return max(m, n) * eps
    if isinstance(rtol, GPUArray):
        if rtol.dtype.is_complex or rtol.dtype.kind not in "fiu":
            raise TypeError(f"linalg.{fn}: rtol must have a real dtype, got {rtol.dtype.name}")
        return astype(rtol, real, backend=backend).expand_dims(-1)
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)):
        raise TypeError(f"linalg.{fn}: rtol must be a float or an array, got {rtol!r}")
    return float(rtol)


def _cutoff(fn: str, s: GPUArray, rtol: Any, m: int, n: int,
            backend: str | None) -> GPUArray:  # fmt: skip
    """rtol times each matrix's largest singular value, shaped (..., 1)."""
    largest = reduce_max(s, axis=-1, keepdims=True, backend=backend)
    return apply_binary("multiply", largest, _rtol(fn, rtol, s, m, n, backend), backend)


def matrix_rank(x: GPUArray, /, *, rtol: Any = None, backend: str | None = None) -> GPUArray:
    """The number of singular values above rtol times the largest, per matrix (int64)."""
    a = check_float("matrix_rank", x)
    check_matrix("matrix_rank", a)
    m, n = a.shape[-2:]
    if min(m, n) == 0:
        out = empty(a.shape[:-2], dt.INDEX_DTYPE, a.device)
        if out.size:
            fill(out, 0, backend)
        return out
    s = svdvals(a, backend=backend)
    above = apply_binary("greater", s, _cutoff("matrix_rank", s, rtol, m, n, backend), backend)
    return count_nonzero(above, axis=-1, backend=backend)


def pinv(x: GPUArray, /, *, rtol: Any = None, backend: str | None = None) -> GPUArray:
    """The Moore-Penrose pseudo-inverse, shape (..., N, M): singular values at or below
    rtol times the largest are treated as zero."""
    a = check_float("pinv", x)
    check_matrix("pinv", a)
    *batch, m, n = a.shape
    if min(m, n) == 0 or not math.prod(batch):
        out = empty((*batch, n, m), a.dtype, a.device)
        if out.size:
            fill(out, 0, backend)
        return out
    u, s, vh = svd(a, full_matrices=False, backend=backend)
    keep = apply_binary("greater", s, _cutoff("pinv", s, rtol, m, n, backend), backend)
    safe = where(keep, s, 1.0, backend=backend)
    s_inv = where(keep, apply_binary("divide", 1.0, safe, backend), 0.0, backend=backend)
    if a.dtype.is_complex:
        u, vh = conj(u, backend=backend), conj(vh, backend=backend)
    # pinv = V diag(1/s) U^H: scale the columns of V = vh^H, then multiply by U^H
    scaled = apply_binary("multiply", vh.mT, astype(s_inv, a.dtype).expand_dims(-2), backend)
    return matmul(scaled, u.mT, backend=backend)
