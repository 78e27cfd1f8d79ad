"""gp.linalg on the GPU (cuSOLVER) against NumPy float64: every factorization for float32,
float64, complex64 and complex128, batches, tall and wide matrices, transposed views,
the composed functions on top, singular and indefinite inputs, and explain's reason
when cuSOLVER is missing."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit_cuda import cusolver

pytestmark = pytest.mark.gpu

DTYPES = ("float32", "float64", "complex64", "complex128")
#: relative Frobenius error allowed against float64, by the dtype's precision
TOL = {"float32": 5e-5, "complex64": 5e-5, "float64": 1e-11, "complex128": 1e-11}


@pytest.fixture(autouse=True)
def _needs_cusolver() -> None:
    if cusolver.library() is None:
        pytest.skip(cusolver.status())


def _seed(*key: Any) -> int:
    return zlib.crc32(repr(key).encode())  # the same data on every run (hash() is salted)


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _dominant(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    n = shape[-1]
    return (_rand(rng, shape, dtype) + 2 * n * np.eye(n)).astype(dtype)


def _hpd(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    a = _rand(rng, shape, dtype).astype(np.complex128)
    n = shape[-1]
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return (h if dtype.startswith("complex") else h.real).astype(dtype)


def _wide(a: np.ndarray) -> np.ndarray:
    return a.astype(np.complex128)


def _close(got: gp.GPUArray | np.ndarray, want: Any, dtype: str, factor: float = 1.0) -> None:
    """Relative Frobenius error against float64; `got` a cuda result or host math on one."""
    if isinstance(got, gp.GPUArray):
        assert got.device.type == "cuda"
        got = got.to_numpy()
    actual = _wide(got)
    ref = _wide(np.asarray(want))
    assert actual.shape == ref.shape, (actual.shape, ref.shape)
    err = float(np.linalg.norm(actual - ref)) / max(float(np.linalg.norm(ref)), 1e-300)
    assert err <= TOL[dtype] * factor, f"relative error {err:.3g}"


def _cuda(a: np.ndarray) -> gp.GPUArray:
    return gp.asarray(a, device="cuda")


SQUARE = [(1, 1), (5, 5), (33, 33), (4, 6, 6), (2, 3, 8, 8)]


def _check_det(got: gp.GPUArray, a: np.ndarray, dtype: str) -> None:
    """det against float64 where it fits the dtype; where it does not (the 33 x 33 test
    matrices have det ~ 66**33, past float32's 3.4e38), NumPy in the input's own dtype
    answers inf, and so must we."""
    want = np.linalg.det(_wide(a))
    fits = np.abs(want) < np.finfo(np.empty(0, dtype).real.dtype).max
    values = got.to_numpy()
    assert values.shape == want.shape
    assert not np.isfinite(np.linalg.det(a)[~fits]).any()  # NumPy's own answer there
    assert not np.isfinite(values[~fits]).any()
    if fits.any():
        _close(values[fits], want[fits], dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE)
def test_lu_family(dtype: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(_seed(dtype, shape))
    a = _dominant(rng, shape, dtype)
    x = _cuda(a)
    ref = _wide(a)
    _close(gp.linalg.inv(x), np.linalg.inv(ref), dtype, 10)
    _check_det(gp.linalg.det(x), a, dtype)
    sign, logabs = gp.linalg.slogdet(x)
    want_sign, want_log = np.linalg.slogdet(ref)
    _close(sign, want_sign, dtype, 10)
    _close(logabs, want_log, dtype, 10)
    assert logabs.dtype.name == ("float32" if dtype in ("float32", "complex64") else "float64")
    n = shape[-1]
    for rhs in [(n,), (*shape[:-2], n, 3)]:
        b = _rand(rng, rhs, dtype)
        got = gp.linalg.solve(x, _cuda(b))
        want = (np.linalg.solve(ref, _wide(b)[..., None])[..., 0] if len(rhs) == 1
                else np.linalg.solve(ref, _wide(b)))  # fmt: skip
        _close(got, want, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE)
def test_cholesky_and_eigh(dtype: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(_seed(dtype, shape, 1))
    h = _hpd(rng, shape, dtype)
    x = _cuda(h)
    ref = _wide(h)
    lower = np.linalg.cholesky(ref)
    _close(gp.linalg.cholesky(x), lower, dtype, 10)
    _close(gp.linalg.cholesky(x, upper=True), np.conj(np.swapaxes(lower, -1, -2)), dtype, 10)
    w, v = gp.linalg.eigh(x)
    _close(w, np.linalg.eigvalsh(ref), dtype, 10)
    vn = _wide(v.to_numpy())
    _close(ref @ vn, vn * _wide(w.to_numpy())[..., None, :], dtype, 100)
    eye = np.broadcast_to(np.eye(shape[-1]), vn.shape)
    _close(np.conj(np.swapaxes(vn, -1, -2)) @ vn, eye, dtype, 100)
    _close(gp.linalg.eigvalsh(x), np.linalg.eigvalsh(ref), dtype, 10)


RECT = [(6, 3), (3, 6), (5, 5), (1, 4), (4, 1), (3, 7, 4), (2, 4, 9), (40, 17)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", RECT)
@pytest.mark.parametrize("full", [True, False])
def test_qr_svd(dtype: str, shape: tuple[int, ...], full: bool) -> None:
    rng = np.random.default_rng(_seed(dtype, shape, full))
    a = _rand(rng, shape, dtype)
    x = _cuda(a)
    ref = _wide(a)
    m, n = shape[-2:]
    k = min(m, n)
    q, r = gp.linalg.qr(x, mode="complete" if full else "reduced")
    qn, rn = _wide(q.to_numpy()), _wide(r.to_numpy())
    assert qn.shape[-2:] == (m, m if full else k) and rn.shape[-2:] == (m if full else k, n)
    assert np.all(np.tril(rn, -1) == 0)
    _close(qn @ rn, ref, dtype, 10)
    eye = np.broadcast_to(np.eye(qn.shape[-1]), (*shape[:-2], qn.shape[-1], qn.shape[-1]))
    _close(np.conj(np.swapaxes(qn, -1, -2)) @ qn, eye, dtype, 10)
    u, s, vh = gp.linalg.svd(x, full_matrices=full)
    assert u.shape[-2:] == (m, m if full else k) and vh.shape[-2:] == (n if full else k, n)
    sn = s.to_numpy()
    _close(s, np.linalg.svd(ref, compute_uv=False), dtype, 10)
    un, vn = _wide(u.to_numpy()), _wide(vh.to_numpy())
    _close((un[..., :, :k] * sn[..., None, :]) @ vn[..., :k, :], ref, dtype, 10)
    ueye = np.broadcast_to(np.eye(un.shape[-1]), (*shape[:-2], un.shape[-1], un.shape[-1]))
    _close(np.conj(np.swapaxes(un, -1, -2)) @ un, ueye, dtype, 10)
    _close(gp.linalg.svdvals(x), np.linalg.svd(ref, compute_uv=False), dtype, 10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_views_and_composed_functions(dtype: str) -> None:
    rng = np.random.default_rng(7)
    a = _dominant(rng, (3, 6, 6), dtype)
    x = _cuda(a)
    ref = _wide(a)
    # a transposed view and a stepped view go through the same kernels
    _close(gp.linalg.inv(x.mT), np.linalg.inv(np.swapaxes(ref, -1, -2)), dtype, 10)
    _close(gp.linalg.det(x[:, ::2, ::2]), np.linalg.det(ref[:, ::2, ::2]), dtype, 10)
    _close(gp.linalg.pinv(x), np.linalg.pinv(ref), dtype, 100)
    assert gp.linalg.matrix_rank(x).to_numpy().tolist() == [6, 6, 6]
    for ord_ in ("fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf):
        _close(gp.linalg.matrix_norm(x, ord=ord_), np.linalg.matrix_norm(ref.real, ord=ord_),
               dtype, 10)  # fmt: skip
    _close(gp.linalg.matrix_power(x, -2), np.linalg.matrix_power(ref, -2), dtype, 100)
    _close(gp.linalg.vector_norm(x, axis=-1, ord=3), np.linalg.vector_norm(ref, axis=-1, ord=3),
           dtype, 10)  # fmt: skip


def test_singular_and_indefinite_inputs_raise_linalg_error() -> None:
    good = np.eye(3)
    bad = np.stack([good, np.zeros((3, 3))])
    with pytest.raises(gp.linalg.LinAlgError, match="batch index 1"):
        gp.linalg.inv(_cuda(bad))
    with pytest.raises(gp.linalg.LinAlgError, match="singular"):
        gp.linalg.solve(_cuda(bad), _cuda(np.ones((2, 3, 1))))
    with pytest.raises(gp.linalg.LinAlgError, match="positive definite"):
        gp.linalg.cholesky(_cuda(-good))
    with pytest.raises(gp.linalg.LinAlgError, match="batch index 1"):  # potrfBatched
        gp.linalg.cholesky(_cuda(np.stack([good, -good])))
    # det and slogdet of a singular matrix are answers, not errors
    assert gp.linalg.det(_cuda(bad)).to_numpy().tolist() == [1.0, 0.0]
    sign, logabs = gp.linalg.slogdet(_cuda(bad))
    assert sign.to_numpy().tolist() == [1.0, 0.0]
    assert logabs.to_numpy()[1] == -np.inf


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_inputs_run_on_cusolver(dtype: str) -> None:
    z = _cuda(np.eye(3, dtype=dtype) * (1 + 2j))
    assert gp.explain("inv", z).chosen == "cuda"
    got = gp.linalg.inv(z)
    assert got.dtype.name == dtype and got.device.type == "cuda"
    np.testing.assert_allclose(got.to_numpy(), np.eye(3) / (1 + 2j), rtol=1e-6)


def test_explain_serves_linalg_on_cuda_and_says_why_not(monkeypatch: pytest.MonkeyPatch) -> None:
    x = _cuda(np.eye(3))
    assert gp.explain("solve", x, x).chosen == "cuda"
    monkeypatch.setattr(cusolver, "_tried", True)
    monkeypatch.setattr(cusolver, "_lib", None)
    monkeypatch.setattr(cusolver, "_status", "cuSOLVER not found (pip install nvidia-cusolver)")
    expl = gp.explain("solve", x, x)
    assert expl.chosen is None
    assert "nvidia-cusolver" in str(expl)
