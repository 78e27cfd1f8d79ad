"""CPU kernels of the linalg extension's factorizations: numpy.linalg (LAPACK), each
dtype in its own precision (float32 in float32, as NumPy does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._array import GPUArray
from ..._dtypes import COMPLEX_DTYPES, float32, float64
from ..._ops.factorizations import LinAlgError
from ..._providers import KernelProvider
from .views import view

_DTYPES = (float32, float64, *COMPLEX_DTYPES)


def _lapack(fn: str, call: Callable[[], Any]) -> Any:
    """Run a numpy.linalg call; its LinAlgError becomes ours, naming the function."""
    try:
        return call()
    except np.linalg.LinAlgError as exc:
        raise LinAlgError(f"linalg.{fn}: {exc}") from None


def cholesky(x: GPUArray, out: GPUArray, upper: bool) -> None:
    lower = _lapack("cholesky", lambda: np.linalg.cholesky(view(x)))
    view(out)[...] = np.conj(np.swapaxes(lower, -1, -2)) if upper else lower


def solve(x1: GPUArray, x2: GPUArray, out: GPUArray) -> None:
    # NumPy 2 treats a 2-D or higher x2 as a stack of matrices, as the core passes it
    view(out)[...] = _lapack("solve", lambda: np.linalg.solve(view(x1), view(x2)))


def inv(x: GPUArray, out: GPUArray) -> None:
    view(out)[...] = _lapack("inv", lambda: np.linalg.inv(view(x)))


def det(x: GPUArray, out: GPUArray) -> None:
    view(out)[...] = np.linalg.det(view(x))


def slogdet(x: GPUArray, sign: GPUArray, logabsdet: GPUArray) -> None:
    s, logabs = np.linalg.slogdet(view(x))
    view(sign)[...] = s
    view(logabsdet)[...] = logabs


def eigh(x: GPUArray, eigenvalues: GPUArray, eigenvectors: GPUArray) -> None:
    w, v = _lapack("eigh", lambda: np.linalg.eigh(view(x)))
    view(eigenvalues)[...] = w
    view(eigenvectors)[...] = v


def eigvalsh(x: GPUArray, eigenvalues: GPUArray) -> None:
    view(eigenvalues)[...] = _lapack("eigvalsh", lambda: np.linalg.eigvalsh(view(x)))


def qr(x: GPUArray, q: GPUArray, r: GPUArray, mode: str) -> None:
    q_, r_ = _lapack("qr", lambda: np.linalg.qr(view(x), mode=mode))  # type: ignore[call-overload]
    view(q)[...] = q_
    view(r)[...] = r_


def svd(x: GPUArray, u: GPUArray, s: GPUArray, vh: GPUArray, full_matrices: bool) -> None:
    u_, s_, vh_ = _lapack("svd", lambda: np.linalg.svd(view(x), full_matrices=full_matrices))
    view(u)[...] = u_
    view(s)[...] = s_
    view(vh)[...] = vh_


def svdvals(x: GPUArray, s: GPUArray) -> None:
    view(s)[...] = _lapack("svdvals", lambda: np.linalg.svd(view(x), compute_uv=False))


def register(provider: KernelProvider) -> None:
    """Add this module's kernels to the CPU provider."""
    for fn in (cholesky, solve, inv, det, slogdet, eigh, eigvalsh, qr, svd, svdvals):
        provider.add(fn.__name__, fn, _DTYPES)
