"""The cuSOLVER kernels' layout logic without a GPU: linalg_solver runs on CPU arrays
against a stand-in library that does what LAPACK does to column-major memory (read
through the same addresses, leading dimensions and batch strides the kernels pass),
so every transposition the kernels rely on is checked against numpy.linalg."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import Any

import numpy as np
import pygpukit as gp
import pytest

pytest.importorskip("pygpukit_cuda._native")

from pygpukit_cuda import cusolver, linalg_solver

_NP = {0: np.float32, 1: np.float64, 4: np.complex64, 5: np.complex128}


def _mat(ptr: int, rows: int, cols: int, ld: int, code: int) -> np.ndarray:
    """A writable NumPy view of the column-major rows x cols matrix at `ptr`."""
    dtype = np.dtype(_NP[code])
    nbytes = ((cols - 1) * ld + rows) * dtype.itemsize
    raw = (ctypes.c_char * nbytes).from_address(ptr)
    return np.ndarray(
        (rows, cols), dtype, buffer=raw, strides=(dtype.itemsize, ld * dtype.itemsize)
    )


def _vec(ptr: int, n: int, dtype: Any) -> np.ndarray:
    dtype = np.dtype(dtype)
    raw = (ctypes.c_char * (n * dtype.itemsize)).from_address(ptr)
    return np.ndarray((n,), dtype, buffer=raw)


def _real(code: int) -> int:
    return {4: 0, 5: 1}.get(code, code)


def _at(b: tuple[int, int], i: int, code: int) -> int:
    return b[0] + i * b[1] * np.dtype(_NP[code]).itemsize


def _lu(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LU with partial pivoting, LAPACK's storage (unit L below, U on and above, 1-based
    pivots)."""
    a = a.copy()
    n = a.shape[0]
    piv = np.zeros(n, np.int64)
    for j in range(n):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        piv[j] = p + 1
        a[[j, p]] = a[[p, j]]
        if a[j, j] != 0:
            a[j + 1 :, j] /= a[j, j]
            a[j + 1 :, j + 1 :] -= np.outer(a[j + 1 :, j], a[j, j + 1 :])
    return a, piv


class FakeSolver:
    """What the native Cusolver does, on host memory: same calls, same arguments."""

    version = 12000

    def __init__(self) -> None:
        self.q: dict[int, np.ndarray] = {}
        self.calls: list[str] = []

    def potrf_workspace(self, ctx: Any, code: int, upper: bool, n: int, a: Any) -> int:
        return 64

    def potrf(self, ctx: Any, st: int, code: int, upper: bool, n: int, a: Any, count: int,
              ws: int, ws_bytes: int, info: int) -> None:  # fmt: skip
        assert ws and ws_bytes >= 64
        self.calls.append("potrf")
        for i in range(count):
            self._potrf_one(_at(a, i, code), code, upper, n, _vec(info + 4 * i, 1, np.int32))

    def _potrf_one(self, ptr: int, code: int, upper: bool, n: int, info: np.ndarray) -> None:
        m = _mat(ptr, n, n, n, code)
        tri = np.triu(m) if upper else np.tril(m)
        full = tri + np.conj(tri.T) - np.diag(np.diag(tri).real)
        try:
            low = np.linalg.cholesky(full)
        except np.linalg.LinAlgError:
            info[0] = 1
            return
        info[0] = 0
        fac = np.conj(low.T) if upper else low
        keep = np.triu(np.ones((n, n), bool)) if upper else np.tril(np.ones((n, n), bool))
        m[keep] = fac[keep]

    def potrf_batched(self, ctx: Any, st: int, code: int, upper: bool, n: int, pointers: int,
                      count: int, info: int) -> None:  # fmt: skip
        self.calls.append("potrf_batched")
        addresses = _vec(pointers, count, np.int64)
        for i in range(count):
            self._potrf_one(int(addresses[i]), code, upper, n, _vec(info + 4 * i, 1, np.int32))

    def getrf_workspace(self, ctx: Any, code: int, n: int, a: Any) -> int:
        return 0

    def getrf(self, ctx: Any, st: int, code: int, n: int, a: Any, ipiv: Any, count: int,
              ws: int, ws_bytes: int, info: int) -> None:  # fmt: skip
        infos = _vec(info, count, np.int32)
        for i in range(count):
            m = _mat(_at(a, i, code), n, n, n, code)
            lu, piv = _lu(m)
            m[...] = lu
            _vec(ipiv[0] + i * ipiv[1] * 8, n, np.int64)[...] = piv
            infos[i] = 0 if np.all(np.diag(lu) != 0) else 1

    def getrs(self, ctx: Any, st: int, code: int, trans: int, n: int, nrhs: int, a: Any,
              ipiv: Any, b: Any, count: int, info: int) -> None:  # fmt: skip
        for i in range(count):
            lu = _mat(_at(a, i, code), n, n, n, code)
            piv = _vec(ipiv[0] + i * ipiv[1] * 8, n, np.int64)
            perm = np.arange(n)
            for j, p in enumerate(piv):
                perm[[j, p - 1]] = perm[[p - 1, j]]
            lower = np.tril(lu, -1) + np.eye(n)
            full = (np.eye(n)[perm].T @ lower @ np.triu(lu)).astype(lu.dtype)  # P^T L U
            op = full if trans == 0 else full.T
            rhs = _mat(_at(b, i, code), n, nrhs, n, code)
            rhs[...] = np.linalg.solve(op, rhs)

    def syevd_workspace(self, ctx: Any, code: int, vectors: bool, upper: bool, n: int, a: Any,
                        w: Any) -> int:  # fmt: skip
        return 0

    def syevd(self, ctx: Any, st: int, code: int, vectors: bool, upper: bool, n: int, a: Any,
              w: Any, count: int, ws: int, ws_bytes: int, info: int) -> None:  # fmt: skip
        infos = _vec(info, count, np.int32)
        for i in range(count):
            m = _mat(_at(a, i, code), n, n, n, code)
            vals, vecs = np.linalg.eigh(m, UPLO="U" if upper else "L")
            _vec(_at(w, i, _real(code)), n, _NP[_real(code)])[...] = vals
            if vectors:
                m[...] = vecs
            infos[i] = 0

    def geqrf_workspace(self, ctx: Any, code: int, m: int, n: int, a: Any, tau: Any) -> int:
        return 0

    def geqrf(self, ctx: Any, st: int, code: int, m: int, n: int, a: Any, tau: Any, count: int,
              ws: int, ws_bytes: int, info: int) -> None:  # fmt: skip
        for i in range(count):
            mat = _mat(_at(a, i, code), m, n, m, code)
            q, r = np.linalg.qr(mat, mode="complete")
            self.q[_at(a, i, code)] = q
            upper = np.triu(np.ones((m, n), bool))
            mat[upper] = r[upper]
            mat[~upper] = 7.0  # what LAPACK leaves there (reflectors): must not leak into R

    def orgqr_workspace(self, ctx: Any, code: int, m: int, cols: int, k: int, a: Any,
                        tau: Any) -> int:  # fmt: skip
        return 0

    def orgqr(self, ctx: Any, st: int, code: int, m: int, cols: int, k: int, a: Any, tau: Any,
              count: int, ws: int, ws_bytes: int, info: int) -> None:  # fmt: skip
        infos = _vec(info, count, np.int32)
        for i in range(count):
            _mat(_at(a, i, code), m, cols, m, code)[...] = self.q[_at(a, i, code)][:, :cols]
            infos[i] = 0

    def gesvd_workspace(self, ctx: Any, code: int, job: str, m: int, n: int, a: Any, s: Any,
                        u: Any, vt: Any) -> int:  # fmt: skip
        return 0

    def gesvd(self, ctx: Any, st: int, code: int, job: str, m: int, n: int, a: Any, s: Any,
              u: Any, vt: Any, count: int, ws: int, ws_bytes: int, info: int) -> None:  # fmt: skip
        assert m >= n, "cuSOLVER gesvd wants m >= n"
        infos = _vec(info, count, np.int32)
        for i in range(count):
            mat = _mat(_at(a, i, code), m, n, m, code)
            uu, ss, vv = np.linalg.svd(mat, full_matrices=job == "A")
            _vec(_at(s, i, _real(code)), n, _NP[_real(code)])[...] = ss
            if job != "N":
                _mat(_at(u, i, code), m, uu.shape[1], m, code)[...] = uu
                _mat(_at(vt, i, code), n, n, n, code)[...] = vv
            mat[...] = 0  # gesvd destroys its input
            infos[i] = 0


class _Block:
    def __init__(self, nbytes: int) -> None:
        self.data = np.zeros(nbytes, np.uint8)
        self.ptr = self.data.ctypes.data


class _Pool:
    def allocate(self, nbytes: int, stream: int) -> _Block:
        return _Block(nbytes)


class _Stream:
    ptr = 0
    capture_pool = None


@pytest.fixture(autouse=True)
def on_cpu() -> Iterator[None]:
    """The stand-in reads and writes the kernels' buffers through host pointers, so every
    array here must be a CPU array even where the default device is a GPU (a device
    address read from the host is a segmentation fault)."""
    with gp.config.use(device="cpu"):
        yield


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeSolver:
    solver = FakeSolver()
    monkeypatch.setattr(cusolver, "library", lambda: solver)
    monkeypatch.setattr(linalg_solver, "context", lambda index: None)
    monkeypatch.setattr(linalg_solver, "allocator", lambda index: _Pool())
    monkeypatch.setattr(linalg_solver.streams, "current", lambda index: _Stream())
    return solver


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _run(op: str, *inputs: gp.GPUArray, shapes: list[tuple[tuple[int, ...], Any]],
         **kw: Any) -> list[np.ndarray]:  # fmt: skip
    outs = [gp.empty(s, dtype=d) for s, d in shapes]
    getattr(linalg_solver, op)(*inputs, *outs, *kw.values())
    return [o.to_numpy() for o in outs]


DTYPES = ["float32", "float64", "complex64", "complex128"]
TOL = {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10, "complex128": 1e-10}


def _close(got: np.ndarray, want: np.ndarray, dtype: str) -> None:
    want = np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128),
                               rtol=TOL[dtype], atol=TOL[dtype])  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_family_layouts(fake: FakeSolver, dtype: str) -> None:
    rng = np.random.default_rng(1)
    a = (_rand(rng, (3, 4, 4), dtype) + 8 * np.eye(4)).astype(dtype)
    x = gp.asarray(a)
    real = np.empty(0, dtype).real.dtype
    (inv,) = _run("inv", x, shapes=[((3, 4, 4), dtype)])
    _close(inv, np.linalg.inv(a), dtype)
    (det,) = _run("det", x, shapes=[((3,), dtype)])
    _close(det, np.linalg.det(a), dtype)
    sign, logabs = _run("slogdet", x, shapes=[((3,), dtype), ((3,), real.name)])
    _close(sign, np.linalg.slogdet(a)[0], dtype)
    _close(logabs, np.linalg.slogdet(a)[1], dtype)
    b = _rand(rng, (3, 4, 2), dtype)
    (sol,) = _run("solve", x, gp.asarray(b), shapes=[((3, 4, 2), dtype)])
    _close(sol, np.linalg.solve(a, b), dtype)
    # a transposed view goes through the same copies
    (inv_t,) = _run("inv", x.mT, shapes=[((3, 4, 4), dtype)])
    _close(inv_t, np.linalg.inv(np.swapaxes(a, -1, -2)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_and_eigh_layouts(fake: FakeSolver, dtype: str, upper: bool) -> None:
    rng = np.random.default_rng(2)
    g = _rand(rng, (2, 5, 5), dtype)
    h = (g @ np.conj(np.swapaxes(g, -1, -2)) + 5 * np.eye(5)).astype(dtype)
    # only the lower triangle may be read: spoil the strict upper one
    spoiled = h + np.triu(np.full((5, 5), 100.0, dtype), 1)
    x = gp.asarray(spoiled)
    (fac,) = _run("cholesky", x, shapes=[((2, 5, 5), dtype)], upper=upper)
    low = np.linalg.cholesky(h)
    _close(fac, np.conj(np.swapaxes(low, -1, -2)) if upper else low, dtype)
    assert fake.calls[-1] == "potrf_batched"  # a batch is one call
    (single,) = _run("cholesky", x[0], shapes=[((5, 5), dtype)], upper=upper)
    _close(single, fac[0], dtype)
    assert fake.calls[-1] == "potrf"
    real = np.empty(0, dtype).real.dtype
    w, v = _run("eigh", x, shapes=[((2, 5), real.name), ((2, 5, 5), dtype)])
    _close(w, np.linalg.eigvalsh(h), dtype)
    _close(h @ v, v * w[..., None, :], dtype)  # h v = v diag(w), columns are eigenvectors


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (4, 4), (2, 5, 2), (2, 2, 5)])
@pytest.mark.parametrize("full", [True, False])
def test_qr_and_svd_layouts(fake: FakeSolver, dtype: str, shape: tuple[int, ...],
                            full: bool) -> None:  # fmt: skip
    rng = np.random.default_rng(3)
    a = _rand(rng, shape, dtype)
    x = gp.asarray(a)
    *batch, m, n = shape
    k = min(m, n)
    cols = m if full else k
    q, r = _run("qr", x, shapes=[((*batch, m, cols), dtype), ((*batch, cols, n), dtype)],
                mode="complete" if full else "reduced")  # fmt: skip
    nq, nr = np.linalg.qr(a, mode="complete" if full else "reduced")
    _close(q, nq, dtype)
    _close(r, nr, dtype)
    real = np.empty(0, dtype).real.dtype
    u_cols, vh_rows = (m, n) if full else (k, k)
    u, s, vh = _run("svd", x, shapes=[((*batch, m, u_cols), dtype), ((*batch, k), real.name),
                                      ((*batch, vh_rows, n), dtype)], full=full)  # fmt: skip
    ns = np.linalg.svd(a, compute_uv=False)
    _close(s, ns, dtype)
    # a wide matrix is factored as its transpose: singular vectors differ by phases, so
    # check the reconstruction and that U and Vh are unitary
    _close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype)
    for f in (u, np.conj(np.swapaxes(vh, -1, -2))):
        eye = np.broadcast_to(np.eye(f.shape[-1]), (*batch, f.shape[-1], f.shape[-1]))
        _close(np.conj(np.swapaxes(f, -1, -2)) @ f, eye, dtype)
    (sv,) = _run("svdvals", x, shapes=[((*batch, k), real.name)])
    _close(sv, ns, dtype)


def test_singular_input_raises_with_the_batch_index(fake: FakeSolver) -> None:
    a = np.stack([np.eye(3), np.zeros((3, 3))])
    with pytest.raises(gp.linalg.LinAlgError, match="batch index 1"):
        _run("inv", gp.asarray(a), shapes=[((2, 3, 3), "float64")])
    with pytest.raises(gp.linalg.LinAlgError, match="positive definite"):
        _run("cholesky", gp.asarray(-np.eye(3)), shapes=[((3, 3), "float64")], upper=False)
    with pytest.raises(gp.linalg.LinAlgError, match="batch index 1"):
        _run("cholesky", gp.asarray(np.stack([np.eye(3), -np.eye(3)])),
             shapes=[((2, 3, 3), "float64")], upper=False)  # fmt: skip


def test_batched_cholesky_falls_back_when_refused(
    fake: FakeSolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pygpukit_cuda import _loader

    def refuse(*args: Any) -> None:
        raise _loader.native().CusolverError("cusolverDn<t>potrfBatched failed: INVALID_VALUE")

    monkeypatch.setattr(fake, "potrf_batched", refuse)
    h = np.stack([np.eye(3) * 4, np.eye(3) * 9])
    (low,) = _run("cholesky", gp.asarray(h), shapes=[((2, 3, 3), "float64")], upper=False)
    _close(low, np.linalg.cholesky(h), "float64")
    assert fake.calls[-1] == "potrf"
