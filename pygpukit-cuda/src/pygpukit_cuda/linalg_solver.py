"""The `cuda` provider's linalg factorization kernels on cuSOLVER (conventions in
``pygpukit._ops.factorizations``): cholesky, solve, inv, det, slogdet, eigh, eigvalsh,
qr, svd and svdvals for float32, float64, complex64 and complex128 (``cusolver.DTYPES``).

cuSOLVER is column-major and our arrays are row-major, so each kernel picks the
transposition that costs nothing where it can: a contiguous row-major copy of A *is*
A^T in column-major order, and det(A^T) = det(A), inv(A^T)^T = inv(A), the upper
Cholesky factor of A^T read row-major is the lower factor of A, and an SVD of A^T
gives A's with U and Vh swapped. Only QR (and the SVD of a tall matrix) needs an
explicit transposed copy. A batch of Cholesky problems is one potrfBatched call; the
other factorizations have no batched form in cuSOLVER's 64-bit API, so their problems
run on the current stream one after another, sharing one device workspace from the
pool on that stream (the loop is in C++, one Python call per batch). The per-problem
LAPACK `info` is read back once at the end (a singular or not positive definite matrix
raises ``pygpukit.linalg.LinAlgError`` naming its batch index).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray, KernelProvider
from pygpukit.backend import astype
from pygpukit.core import dtypes as dt
from pygpukit.linalg import LinAlgError

from . import _loader, cusolver, streams
from .device import allocator, context
from .device_facts import data_ptr

_FILL_UPPER = True
_OP_T = 1


class _Call:
    """What every cuSOLVER call of one kernel shares: the library, the context, the
    current stream and its pool, the dtype code, the batch size and an info array."""

    def __init__(self, x: GPUArray, count: int) -> None:
        lib = cusolver.library()
        if lib is None:  # dispatch checks first; a direct kernel call gets the same reason
            raise RuntimeError(cusolver.status())
        self.lib = lib
        index = x.device.index
        self.ctx = context(index)
        stream = streams.current(index)
        self.stream = int(stream.ptr)
        self.pool = stream.capture_pool or allocator(index)
        self.dtype = cusolver.DATA_TYPE[x.dtype.name]
        self.count = count
        self.info = gp.empty((max(count, 1),), dtype=gp.int32, device=x.device)

    def workspace(self, nbytes: int) -> tuple[int, int, Any]:
        """(address, bytes, keep-alive) of a pool block on this stream (0 when none)."""
        if nbytes <= 0:
            return 0, 0, None
        block = self.pool.allocate(int(nbytes), self.stream)
        return int(block.ptr), int(nbytes), block

    def check(self, fn: str, problem: str) -> None:
        """LinAlgError naming the first failed problem of the batch (reads info back)."""
        info = self.info.to_numpy()[: self.count]
        bad = np.flatnonzero(info > 0)
        if bad.size:
            i = int(bad[0])
            where = f" at batch index {i}" if self.count > 1 else ""
            raise LinAlgError(f"linalg.{fn}: {problem}{where} (LAPACK info {int(info[i])})")
        wrong = np.flatnonzero(info < 0)
        if wrong.size:  # an argument cuSOLVER refused: a bug here, not the user's input
            raise RuntimeError(f"linalg.{fn}: cuSOLVER rejected argument {-int(info[wrong[0]])}")


def _batch(x: GPUArray) -> int:
    return math.prod(x.shape[:-2])


def _contiguous(x: GPUArray) -> GPUArray:
    """A new contiguous copy (cuSOLVER overwrites its input)."""
    return astype(x, x.dtype)


def _store(out: GPUArray, value: GPUArray) -> None:
    """out[...] = value (value: any view of out's shape, or one that broadcasts to it)."""
    out[...] = value


def _b(x: GPUArray, per: int) -> tuple[int, int]:
    return data_ptr(x), per


def _conj_t(x: GPUArray) -> GPUArray:
    """x^H as a view (real) or a new array (complex)."""
    return gp.conj(x).mT if x.dtype.is_complex else x.mT


# -- LU: det, slogdet, inv, solve ---------------------------------------------------------
def _lu(x: GPUArray) -> tuple[_Call, GPUArray, GPUArray]:
    """(call, LU of x^T in a contiguous copy, int64 pivots), info not yet checked."""
    n = x.shape[-1]
    call = _Call(x, _batch(x))
    a = _contiguous(x)
    ipiv = gp.empty((*x.shape[:-2], n), dtype=gp.int64, device=x.device)
    need = call.lib.getrf_workspace(call.ctx, call.dtype, n, _b(a, n * n))
    ws, ws_bytes, _keep = call.workspace(need)
    call.lib.getrf(call.ctx, call.stream, call.dtype, n, _b(a, n * n), _b(ipiv, n), call.count,
                   ws, ws_bytes, data_ptr(call.info))  # fmt: skip
    return call, a, ipiv


def _pivot_sign(ipiv: GPUArray, dtype: dt.DataType) -> GPUArray:
    """(-1) ** (number of row swaps), from getrf's 1-based pivots."""
    n = ipiv.shape[-1]
    rows = gp.arange(1, n + 1, dtype=gp.int64, device=ipiv.device)
    swaps = gp.count_nonzero(gp.not_equal(ipiv, rows), axis=-1)
    return gp.astype(1 - 2 * (swaps % 2), dtype)


def det(x: GPUArray, out: GPUArray) -> None:
    _, lu, ipiv = _lu(x)  # a singular matrix has a zero on U's diagonal: det 0, no error
    diag = gp.linalg.diagonal(lu)
    _store(out, gp.prod(diag, axis=-1) * _pivot_sign(ipiv, x.dtype))


def slogdet(x: GPUArray, sign: GPUArray, logabsdet: GPUArray) -> None:
    _, lu, ipiv = _lu(x)
    diag = gp.linalg.diagonal(lu)
    mag = gp.abs(diag)  # the real dtype for complex
    log = gp.sum(gp.log(mag), axis=-1)
    unit = gp.prod(diag / gp.where(mag == 0, 1.0, mag), axis=-1) * _pivot_sign(ipiv, x.dtype)
    singular = gp.isinf(log)  # log|det| is -inf exactly when a pivot is zero
    _store(sign, gp.where(singular, 0.0, unit))
    _store(logabsdet, log)


def inv(x: GPUArray, out: GPUArray) -> None:
    n = x.shape[-1]
    call, lu, ipiv = _lu(x)
    call.check("inv", "the matrix is singular")
    # inv(A^T) solved into the identity, column-major, is inv(A) read row-major
    _store(out, gp.eye(n, dtype=x.dtype, device=x.device))
    call.lib.getrs(call.ctx, call.stream, call.dtype, 0, n, n, _b(lu, n * n), _b(ipiv, n),
                   _b(out, n * n), call.count, data_ptr(call.info))  # fmt: skip


def solve(x1: GPUArray, x2: GPUArray, out: GPUArray) -> None:
    n, k = out.shape[-2:]
    call, lu, ipiv = _lu(x1)
    call.check("solve", "x1 is singular")
    # B column-major is B^T row-major; op T undoes the transposition of the factored A^T
    rhs = _contiguous(x2.mT)
    call.lib.getrs(call.ctx, call.stream, call.dtype, _OP_T, n, k, _b(lu, n * n), _b(ipiv, n),
                   _b(rhs, n * k), call.count, data_ptr(call.info))  # fmt: skip
    _store(out, rhs.mT)


# -- Cholesky and Hermitian eigenproblems --------------------------------------------------
def cholesky(x: GPUArray, out: GPUArray, upper: bool) -> None:
    n = x.shape[-1]
    call = _Call(x, _batch(x))
    a = _contiguous(x)
    # the upper factor of A^T (reading A's lower triangle), read row-major, is A's lower L
    batched = call.count > 1
    if batched:  # one potrfBatched call over an array of the matrices' addresses
        step = n * n * x.dtype.itemsize
        addresses = data_ptr(a) + step * np.arange(call.count, dtype=np.int64)
        pointers = gp.asarray(addresses, device=x.device)
        try:
            call.lib.potrf_batched(call.ctx, call.stream, call.dtype, _FILL_UPPER, n,
                                   data_ptr(pointers), call.count, data_ptr(call.info))  # fmt: skip
        except _loader.native().CusolverError:  # a status refusing the arguments (checked
            batched = False  # before any work): the per-matrix calls below take any size
    if not batched:
        need = call.lib.potrf_workspace(call.ctx, call.dtype, _FILL_UPPER, n, _b(a, n * n))
        ws, ws_bytes, _keep = call.workspace(need)
        call.lib.potrf(call.ctx, call.stream, call.dtype, _FILL_UPPER, n, _b(a, n * n),
                       call.count, ws, ws_bytes, data_ptr(call.info))  # fmt: skip
    call.check("cholesky", "the matrix is not positive definite")
    lower = gp.tril(a)
    _store(out, _conj_t(lower) if upper else lower)


def _syevd(x: GPUArray, w: GPUArray, vectors: bool, fn: str) -> GPUArray:
    n = x.shape[-1]
    call = _Call(x, _batch(x))
    a = _contiguous(x)  # A^T column-major: its upper triangle is A's lower one
    need = call.lib.syevd_workspace(call.ctx, call.dtype, vectors, _FILL_UPPER, n, _b(a, n * n),
                                    _b(w, n))  # fmt: skip
    ws, ws_bytes, _keep = call.workspace(need)
    call.lib.syevd(call.ctx, call.stream, call.dtype, vectors, _FILL_UPPER, n, _b(a, n * n),
                   _b(w, n), call.count, ws, ws_bytes, data_ptr(call.info))  # fmt: skip
    call.check(fn, "the eigenvalue iteration did not converge")
    return a


def eigh(x: GPUArray, eigenvalues: GPUArray, eigenvectors: GPUArray) -> None:
    vecs = _syevd(x, eigenvalues, True, "eigh")
    # eigenvectors of A^T = conj(A) are conj(V); read row-major they are V's transpose
    _store(eigenvectors, _conj_t(vecs))


def eigvalsh(x: GPUArray, eigenvalues: GPUArray) -> None:
    _syevd(x, eigenvalues, False, "eigvalsh")


# -- QR --------------------------------------------------------------------------------
def qr(x: GPUArray, q: GPUArray, r: GPUArray, mode: str) -> None:
    m, n = x.shape[-2:]
    k = min(m, n)
    cols = q.shape[-1]  # m when complete, else k
    call = _Call(x, _batch(x))
    width = max(n, cols)
    # column-major m x width, leading dimension m: row-major (width, m), A in the first n
    if width == n:
        a = _contiguous(x.mT)
    else:
        a = gp.zeros((*x.shape[:-2], width, m), dtype=x.dtype, device=x.device)
        a[..., :n, :] = x.mT
    tau = gp.empty((*x.shape[:-2], k), dtype=x.dtype, device=x.device)
    per = width * m
    need = call.lib.geqrf_workspace(call.ctx, call.dtype, m, n, _b(a, per), _b(tau, k))
    ws, ws_bytes, _keep = call.workspace(need)
    call.lib.geqrf(call.ctx, call.stream, call.dtype, m, n, _b(a, per), _b(tau, k), call.count,
                   ws, ws_bytes, data_ptr(call.info))  # fmt: skip
    rows = r.shape[-2]
    _store(r, gp.triu(a[..., :n, :rows].mT))  # R before orgqr overwrites the reflectors
    need = call.lib.orgqr_workspace(call.ctx, call.dtype, m, cols, k, _b(a, per), _b(tau, k))
    ws, ws_bytes, _keep = call.workspace(need)
    call.lib.orgqr(call.ctx, call.stream, call.dtype, m, cols, k, _b(a, per), _b(tau, k),
                   call.count, ws, ws_bytes, data_ptr(call.info))  # fmt: skip
    call.check("qr", "the factorization failed")
    _store(q, a[..., :cols, :].mT)


# -- SVD -------------------------------------------------------------------------------
def _gesvd(x: GPUArray, s: GPUArray, job: str) -> tuple[GPUArray | None, GPUArray | None, bool]:
    """Run gesvd on x or x^T (whichever is tall in column-major terms); returns the
    column-major U and VT buffers (row-major views of them) and whether x was transposed."""
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    wide = m < n
    # a wide A's row-major copy is the tall A^T in column-major; a tall A needs A^T copied
    a = _contiguous(x) if wide else _contiguous(x.mT)
    mm, nn = (n, m) if wide else (m, n)  # the problem cuSOLVER sees: mm >= nn
    k = nn
    call = _Call(x, _batch(x))
    u = vt = None
    if job != "N":
        ucols = mm if job == "A" else k
        u = gp.empty((*batch, ucols, mm), dtype=x.dtype, device=x.device)
        vt = gp.empty((*batch, nn, nn), dtype=x.dtype, device=x.device)
    u_b = _b(u, u.shape[-1] * u.shape[-2]) if u is not None else (0, 0)
    vt_b = _b(vt, nn * nn) if vt is not None else (0, 0)
    args = (call.ctx, call.dtype, job, mm, nn, _b(a, mm * nn), _b(s, k), u_b, vt_b)
    ws, ws_bytes, _keep = call.workspace(call.lib.gesvd_workspace(*args))
    call.lib.gesvd(call.ctx, call.stream, call.dtype, job, mm, nn, _b(a, mm * nn), _b(s, k),
                   u_b, vt_b, call.count, ws, ws_bytes, data_ptr(call.info))  # fmt: skip
    call.check("svd", "the SVD did not converge")
    return u, vt, wide


def svd(x: GPUArray, u: GPUArray, s: GPUArray, vh: GPUArray, full_matrices: bool) -> None:
    ub, vtb, wide = _gesvd(x, s, "A" if full_matrices else "S")
    assert ub is not None and vtb is not None
    if wide:  # A^T = U' S VT'  =>  A = VT'^T S U'^T: both read row-major as they are
        _store(u, vtb)
        _store(vh, ub)
    else:  # column-major U and VT read row-major are their transposes
        _store(u, ub.mT)
        _store(vh, vtb.mT)


def svdvals(x: GPUArray, s: GPUArray) -> None:
    _gesvd(x, s, "N")


def register(provider: KernelProvider) -> None:
    """Add the factorization kernels; each is passed over, with cuSOLVER's status as the
    reason, when the library is not installed."""
    for fn in (cholesky, solve, inv, det, slogdet, eigh, eigvalsh, qr, svd, svdvals):
        provider.add(fn.__name__, fn, cusolver.DTYPES, unavailable=cusolver.unavailable)
