"""Conformance specs of the linalg extension's factorization kernels, through gp.linalg.

Inputs are well-conditioned (diagonally dominant, or Hermitian positive definite) so
that float32 results are judged at matmul's tolerance against float64 NumPy. Results
that are unique only up to signs or phases (eigenvectors, Q, U, Vh) are judged by what
is unique: the reconstruction of the input, orthonormality and the triangle of R.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import pygpukit as gp

from .... import _dtypes as dt
from ...._array import GPUArray
from ...._device import Device
from ...._dtypes import DataType
from ..catalog import Case, Layout, OpSpec
from ._common import draw, f64, upload

DTYPES = (dt.float32, dt.float64, *dt.COMPLEX_DTYPES)
SQUARE = (
    Layout("batch", (3, 4, 4)),
    Layout("transposed", (5, 5), transpose=True),
    Layout("broadcast batch", (1, 4, 4), broadcast=(2, 4, 4)),
    Layout("1x1", (1, 1)),
)
RECTANGULAR = (
    Layout("tall", (6, 3)),
    Layout("wide batch", (2, 3, 5)),
    Layout("transposed", (4, 6), transpose=True),
)
Cases = Callable[[np.random.Generator, DataType, Device], list[Case]]


def _matrix(rng: np.random.Generator, shape: tuple[int, ...], d: DataType,
            kind: str) -> np.ndarray:  # fmt: skip
    """Random matrices: "general", "dominant" (well-conditioned) or "hpd"."""
    a = f64(draw(rng, shape, d, (-1.0, 1.0)))
    n = shape[-1]
    if kind == "dominant":
        a = a + 2 * n * np.eye(n)
    elif kind == "hpd":
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return a.astype(d.to_numpy_dtype())


def _inputs(rng: np.random.Generator, d: DataType, device: Device, layouts: Any,
            kind: str) -> list[tuple[str, GPUArray, np.ndarray]]:  # fmt: skip
    out = []
    for layout in layouts:
        g, h = upload(_matrix(rng, layout.parent, d, kind), layout, device)
        out.append((layout.label, g, f64(np.asarray(h))))
    return out


def _one(fn: str, kind: str, ref: Callable[[np.ndarray], Any], out_dtype: str = "same",
         layouts: Any = SQUARE, **kw: Any) -> Cases:  # fmt: skip
    """Cases of a function with one unique result (or a tuple of unique results)."""

    def cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
        result = []
        real = dt.real_of(d)
        for label, g, h in _inputs(rng, d, device, layouts, kind):

            def run(name: str, g: GPUArray = g) -> Any:
                return getattr(gp.linalg, fn)(g, backend=name, **kw)

            want = ref(h)
            dtype = real if out_dtype == "real" else d
            parts = (d, real) if isinstance(want, tuple) else ()
            result.append(Case(label, run, want, dtype, parts=parts))
        return result

    return cases


def _solve_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, g, h in _inputs(rng, d, device, SQUARE, "dominant"):
        n = h.shape[-1]
        for rhs_shape in ((n,), (*h.shape[:-2], n, 2)):
            gb, hb = upload(draw(rng, rhs_shape, d, (-1.0, 1.0)), Layout("c", rhs_shape), device)
            b = f64(np.asarray(hb))
            want = (
                np.linalg.solve(h, b[..., None])[..., 0] if b.ndim == 1 else np.linalg.solve(h, b)
            )

            def run(name: str, g: GPUArray = g, gb: GPUArray = gb) -> Any:
                return gp.linalg.solve(g, gb, backend=name)

            result.append(Case(f"{label}, b {rhs_shape}", run, want, d, needs=(d,)))
    return result


def _conj_t(x: GPUArray) -> GPUArray:
    return gp.conj(x).mT if x.dtype.is_complex else x.mT


def _eigh_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for label, g, h in _inputs(rng, d, device, SQUARE, "hpd"):

        def run(name: str, g: GPUArray = g) -> Any:
            w, v = gp.linalg.eigh(g, backend=name)
            scaled = v * gp.astype(w, v.dtype)[..., None, :]
            return w, gp.matmul(scaled, _conj_t(v))  # V diag(w) V^H must give x back

        want = (np.linalg.eigvalsh(h), h)
        result.append(Case(label, run, want, d, parts=(dt.real_of(d), d)))
    return result


def _qr_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for mode in ("reduced", "complete"):
        for label, g, h in _inputs(rng, d, device, (*RECTANGULAR, *SQUARE[:2]), "general"):

            def run(name: str, g: GPUArray = g, mode: str = mode) -> Any:
                q, r = gp.linalg.qr(g, mode=mode, backend=name)
                return gp.matmul(q, r), gp.matmul(_conj_t(q), q), gp.tril(r, k=-1)

            m, n = h.shape[-2:]
            cols = m if mode == "complete" else min(m, n)
            batch = h.shape[:-2]
            eye = np.broadcast_to(np.eye(cols), (*batch, cols, cols))
            zeros = np.zeros((*batch, cols, n))
            result.append(Case(f"{label}, {mode}", run, (h, eye, zeros), d, parts=(d, d, d)))
    return result


def _svd_cases(rng: np.random.Generator, d: DataType, device: Device) -> list[Case]:
    result = []
    for full in (True, False):
        for label, g, h in _inputs(rng, d, device, (*RECTANGULAR, *SQUARE[:2]), "general"):

            def run(name: str, g: GPUArray = g, full: bool = full) -> Any:
                u, s, vh = gp.linalg.svd(g, full_matrices=full, backend=name)
                k = s.shape[-1]
                scaled = u[..., :k] * gp.astype(s, u.dtype)[..., None, :]
                return s, gp.matmul(scaled, vh[..., :k, :])

            want = (np.linalg.svd(h, compute_uv=False), h)
            label_full = f"{label}, full_matrices={full}"
            result.append(Case(label_full, run, want, d, parts=(dt.real_of(d), d)))
    return result


def _upper(h: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(np.linalg.cholesky(h), -1, -2))


def _spec(name: str, cases: Cases) -> OpSpec:
    return OpSpec(name, "factorizations", DTYPES, cases, "matmul", function=f"linalg.{name}")


def specs() -> list[OpSpec]:
    return [
        _spec("cholesky", _one("cholesky", "hpd", np.linalg.cholesky)),
        OpSpec("cholesky", "factorizations", DTYPES, _one("cholesky", "hpd", _upper, upper=True),
               "matmul", label="cholesky-upper", function="linalg.cholesky"),
        _spec("solve", _solve_cases),
        _spec("inv", _one("inv", "dominant", np.linalg.inv)),
        _spec("det", _one("det", "dominant", np.linalg.det)),
        _spec("slogdet", _one("slogdet", "dominant", lambda h: tuple(np.linalg.slogdet(h)))),
        _spec("eigh", _eigh_cases),
        _spec("eigvalsh", _one("eigvalsh", "hpd", np.linalg.eigvalsh, "real")),
        _spec("qr", _qr_cases),
        _spec("svd", _svd_cases),
        _spec("svdvals", _one("svdvals", "general", lambda h: np.linalg.svd(h, compute_uv=False),
                              "real", (*RECTANGULAR, *SQUARE))),
    ]  # fmt: skip
