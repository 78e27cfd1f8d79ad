"""The `linalg` extension's factorizations: checks, result tuples, empty cases, dispatch.

Kernel convention: every op below has a kernel of the same name. Inputs are float32,
float64, complex64 or complex128 arrays of at least two dimensions (any strided view);
the core casts float16/bfloat16 to float32 first and refuses integer, bool and float8
inputs. Outputs are new contiguous arrays; the leading dimensions are a batch (the
kernel runs every matrix of it). Kernels are not called when the batch or a matrix
dimension is empty: the core fills those results itself. A kernel raises
``pygpukit.linalg.LinAlgError`` (a ValueError) when the math has no answer (a matrix
that is not positive definite, a singular system) or the factorization fails to
converge.

- ``cholesky``: ``kernel(x, out, upper)``: ``x`` (..., n, n) Hermitian positive definite;
  out the lower factor L (x = L L^H), or the upper U = L^H when ``upper``; the other
  triangle zero. Only x's lower triangle is read (as LAPACK potrf with uplo L).
- ``solve``: ``kernel(x1, x2, out)``: ``x1`` (..., n, n) and ``x2`` (..., n, k), both
  broadcast to out's batch (zero strides where broadcast), of out's dtype; out (..., n, k).
- ``inv``: ``kernel(x, out)``: out (..., n, n) the inverse.
- ``det``: ``kernel(x, out)``: out (...) the determinant, x's dtype.
- ``slogdet``: ``kernel(x, sign, logabsdet)``: sign (...) of x's dtype (0 for a singular
  matrix; a unit complex number for complex x), logabsdet (...) the real dtype (-inf
  for a singular matrix).
- ``eigh``: ``kernel(x, eigenvalues, eigenvectors)``: ``x`` Hermitian, its lower
  triangle read; eigenvalues (..., n) of the real dtype in ascending order, eigenvectors
  (..., n, n) of x's dtype, one orthonormal eigenvector per column.
- ``eigvalsh``: ``kernel(x, eigenvalues)``: eigenvalues only.
- ``qr``: ``kernel(x, q, r, mode)``: ``x`` (..., m, n), k = min(m, n); mode "reduced":
  q (..., m, k), r (..., k, n); mode "complete": q (..., m, m), r (..., m, n). r upper
  triangular; signs as LAPACK's geqrf leaves them.
- ``svd``: ``kernel(x, u, s, vh, full_matrices)``: x = u @ diag(s) @ vh with s (..., k)
  real, descending; u (..., m, m) and vh (..., n, n) when ``full_matrices``, else
  (..., m, k) and (..., k, n).
- ``svdvals``: ``kernel(x, s)``: the singular values only.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .. import _dtypes as dt
from .. import _views
from .._array import GPUArray
from .._promotion import promote_types
from ._core import device_of, empty, kernel_on
from .copying import assign, astype, fill
from .creation import eye

__all__ = [
    "EighResult", "LinAlgError", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "det",
    "eigh", "eigvalsh", "inv", "qr", "slogdet", "solve", "svd", "svdvals",
]  # fmt: skip


class LinAlgError(np.linalg.LinAlgError):
    """A linear-algebra operation has no result for its input (a singular or not positive
    definite matrix, no convergence). A ValueError, and NumPy's LinAlgError too."""


class EighResult(NamedTuple):
    eigenvalues: GPUArray
    eigenvectors: GPUArray


class QRResult(NamedTuple):
    Q: GPUArray
    R: GPUArray


class SlogdetResult(NamedTuple):
    sign: GPUArray
    logabsdet: GPUArray


class SVDResult(NamedTuple):
    U: GPUArray
    S: GPUArray
    Vh: GPUArray


# -- checks ---------------------------------------------------------------------------
def check_float(fn: str, x: Any, name: str = "x") -> GPUArray:
    """`x` as a dtype the kernels take: float32/float64/complex64/complex128 kept, half
    types cast to float32; TypeError naming `fn` and `name` for anything else."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"linalg.{fn}: {name} must be a GPUArray, got {type(x).__name__}")
    d = x.dtype
    if d.is_complex or d in (dt.float32, dt.float64):
        return x
    if d.is_floating and not d.is_float8:
        return astype(x, dt.float32)
    raise TypeError(
        f"linalg.{fn}: {name} must have a floating-point dtype (float32, float64, complex64 "
        f"or complex128), got {d.name}; cast it with .astype() first"
    )


def check_matrix(fn: str, x: GPUArray, name: str = "x", *, square: bool = False) -> None:
    """ValueError unless `x` is a stack of matrices (a square one when `square`)."""
    if x.ndim < 2:
        raise ValueError(
            f"linalg.{fn}: {name} must have at least 2 dimensions (..., M, N), got shape {x.shape}"
        )
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"linalg.{fn}: {name} must be a stack of square matrices (..., M, M), got shape "
            f"{x.shape}"
        )


def square_input(fn: str, x: Any) -> GPUArray:
    a = check_float(fn, x)
    check_matrix(fn, a, square=True)
    return a


def _run(op: str, x: GPUArray, backend: str | None, *args: Any) -> None:
    kernel_on(op, x.device, (x.dtype,), backend)(x, *args)


def _identity(shape: tuple[int, ...], dtype: dt.DataType, x: GPUArray,
              backend: str | None) -> GPUArray:  # fmt: skip
    """A new (..., n, m) stack of identity matrices."""
    out = empty(shape, dtype, x.device)
    if out.size:
        assign(out, eye(shape[-2], shape[-1], dtype=dtype, device=x.device, backend=backend),
               backend)  # fmt: skip
    return out


def _filled(shape: tuple[int, ...], dtype: dt.DataType, x: GPUArray, value: float,
            backend: str | None) -> GPUArray:  # fmt: skip
    out = empty(shape, dtype, x.device)
    if out.size:
        fill(out, value, backend)
    return out


# -- the factorizations --------------------------------------------------------------------
def cholesky(x: GPUArray, /, *, upper: bool = False, backend: str | None = None) -> GPUArray:
    """The Cholesky factor of Hermitian positive-definite matrices: lower L (x = L L^H), or
    upper U = L^H when `upper`."""
    a = square_input("cholesky", x)
    if not isinstance(upper, bool):
        raise TypeError(f"linalg.cholesky: upper must be a bool, got {upper!r}")
    out = empty(a.shape, a.dtype, a.device)
    if out.size:
        _run("cholesky", a, backend, out, upper)
    return out


def _solve_operands(x1: Any, x2: Any) -> tuple[GPUArray, GPUArray, bool]:
    a = check_float("solve", x1, "x1")
    b = check_float("solve", x2, "x2")
    device_of(a, b)
    check_matrix("solve", a, "x1", square=True)
    if b.ndim == 0:
        raise ValueError("linalg.solve: x2 must have at least 1 dimension, got a 0-d array")
    dtype = promote_types(a.dtype, b.dtype)
    a = a if a.dtype is dtype else astype(a, dtype)
    b = b if b.dtype is dtype else astype(b, dtype)
    return a, b, b.ndim == 1


def solve(x1: GPUArray, x2: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """The solution X of x1 @ X = x2 for square x1; a 1-D x2 is one right-hand side."""
    a, b, vector = _solve_operands(x1, x2)
    n = a.shape[-1]
    b2 = b.reshape((n, 1)) if vector and b.shape[0] == n else b
    if b2.ndim < 2 or b2.shape[-2] != n:
        want = f"({n},) or (..., {n}, K)"
        raise ValueError(
            f"linalg.solve: x2 of shape {b.shape} does not match x1 of shape {a.shape}: "
            f"x2 must have shape {want}"
        )
    try:
        batch = _views.broadcast_shapes(a.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ValueError(
            f"linalg.solve: the batch dimensions of x1 {a.shape} and x2 {b.shape} cannot be "
            "broadcast together"
        ) from None
    k = b2.shape[-1]
    out = empty((*batch, n, k), a.dtype, a.device)
    if out.size:
        kernel_on("solve", a.device, (a.dtype, b2.dtype), backend)(
            a.broadcast_to((*batch, n, n)), b2.broadcast_to((*batch, n, k)), out
        )
    return out.reshape((*batch, n)) if vector else out


def inv(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """The inverse of each square matrix; LinAlgError for a singular one."""
    a = square_input("inv", x)
    out = empty(a.shape, a.dtype, a.device)
    if out.size:
        _run("inv", a, backend, out)
    return out


def det(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """The determinant of each square matrix (1 for a 0 x 0 one)."""
    a = square_input("det", x)
    batch = a.shape[:-2]
    if a.shape[-1] == 0:
        return _filled(batch, a.dtype, a, 1, backend)
    out = empty(batch, a.dtype, a.device)
    if out.size:
        _run("det", a, backend, out)
    return out


def slogdet(x: GPUArray, /, *, backend: str | None = None) -> SlogdetResult:
    """The sign and the natural log of the absolute value of each determinant (sign 0,
    logabsdet -inf for a singular matrix)."""
    a = square_input("slogdet", x)
    batch = a.shape[:-2]
    real = dt.real_of(a.dtype)
    if a.shape[-1] == 0:
        return SlogdetResult(_filled(batch, a.dtype, a, 1, backend),
                             _filled(batch, real, a, 0, backend))  # fmt: skip
    sign = empty(batch, a.dtype, a.device)
    logabsdet = empty(batch, real, a.device)
    if sign.size:
        _run("slogdet", a, backend, sign, logabsdet)
    return SlogdetResult(sign, logabsdet)


def eigh(x: GPUArray, /, *, backend: str | None = None) -> EighResult:
    """Eigenvalues (ascending, real) and orthonormal eigenvectors (columns) of Hermitian
    matrices; only the lower triangle is read."""
    a = square_input("eigh", x)
    n = a.shape[-1]
    w = empty((*a.shape[:-2], n), dt.real_of(a.dtype), a.device)
    v = empty(a.shape, a.dtype, a.device)
    if v.size:
        _run("eigh", a, backend, w, v)
    return EighResult(w, v)


def eigvalsh(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """The eigenvalues (ascending, real) of Hermitian matrices."""
    a = square_input("eigvalsh", x)
    w = empty((*a.shape[:-2], a.shape[-1]), dt.real_of(a.dtype), a.device)
    if w.size:
        _run("eigvalsh", a, backend, w)
    return w


_QR_MODES = ("reduced", "complete")


def qr(x: GPUArray, /, *, mode: str = "reduced", backend: str | None = None) -> QRResult:
    """The QR factorization x = Q R: Q with orthonormal columns, R upper triangular."""
    a = check_float("qr", x)
    check_matrix("qr", a)
    if mode not in _QR_MODES:
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    *batch, m, n = a.shape
    rows = m if mode == "complete" else min(m, n)
    q_shape, r_shape = (*batch, m, rows), (*batch, rows, n)
    if math.prod(batch) and min(m, n) == 0:  # nothing to factor: Q is an identity
        return QRResult(_identity(q_shape, a.dtype, a, backend),
                        _filled(r_shape, a.dtype, a, 0, backend))  # fmt: skip
    q, r = empty(q_shape, a.dtype, a.device), empty(r_shape, a.dtype, a.device)
    if q.size:
        _run("qr", a, backend, q, r, mode)
    return QRResult(q, r)


def svd(x: GPUArray, /, *, full_matrices: bool = True, backend: str | None = None) -> SVDResult:
    """The singular value decomposition x = U @ diag(S) @ Vh, S descending."""
    a = check_float("svd", x)
    check_matrix("svd", a)
    if not isinstance(full_matrices, bool):
        raise TypeError(f"linalg.svd: full_matrices must be a bool, got {full_matrices!r}")
    *batch, m, n = a.shape
    k = min(m, n)
    u_shape = (*batch, m, m if full_matrices else k)
    vh_shape = (*batch, n if full_matrices else k, n)
    s = empty((*batch, k), dt.real_of(a.dtype), a.device)
    if math.prod(batch) and k == 0:  # the full factors of an empty matrix are identities
        return SVDResult(_identity(u_shape, a.dtype, a, backend), s,
                         _identity(vh_shape, a.dtype, a, backend))  # fmt: skip
    u, vh = empty(u_shape, a.dtype, a.device), empty(vh_shape, a.dtype, a.device)
    if s.size:
        _run("svd", a, backend, u, s, vh, full_matrices)
    return SVDResult(u, s, vh)


def svdvals(x: GPUArray, /, *, backend: str | None = None) -> GPUArray:
    """The singular values of each matrix, descending."""
    a = check_float("svdvals", x)
    check_matrix("svdvals", a)
    s = empty((*a.shape[:-2], min(a.shape[-2:])), dt.real_of(a.dtype), a.device)
    if s.size:
        _run("svdvals", a, backend, s)
    return s
