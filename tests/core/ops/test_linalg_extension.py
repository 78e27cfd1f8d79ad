"""gp.linalg (the Array API's linalg extension) on the CPU against numpy.linalg in float64:
batches, dtypes, result tuples, empty matrices, views and bad input."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

FLOATS = (gp.float32, gp.float64, gp.complex64, gp.complex128)
TOL = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-10, "complex128": 1e-10}


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    a = rng.standard_normal(shape)
    if gp.DataType.from_numpy_dtype(np.dtype(dtype.name)).is_complex:
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype.name)


def _spd(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Well-conditioned Hermitian positive-definite matrices."""
    a = _random(rng, shape, dtype).astype(np.complex128)
    n = shape[-1]
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return (h if np.dtype(dtype.name).kind == "c" else h.real).astype(dtype.name)


def _well_conditioned(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    a = _random(rng, shape, dtype)
    return (a + 3 * shape[-1] * np.eye(shape[-1])).astype(dtype.name)


def _close(got: gp.GPUArray, want: np.ndarray, dtype: Any, scale: float = 1.0) -> None:
    """Relative error of the whole result (float64 reference) at the dtype's precision."""
    actual = got.to_numpy().astype(np.complex128)
    ref = np.asarray(want).astype(np.complex128)
    assert actual.shape == ref.shape, (actual.shape, ref.shape)
    norm = max(float(np.linalg.norm(ref)), 1e-30)
    assert float(np.linalg.norm(actual - ref)) / norm <= TOL[dtype.name] * scale


def _f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


@pytest.fixture(autouse=True)
def on_cpu() -> Iterator[None]:
    """These tests check the CPU kernels: new arrays stay on the CPU even beside a GPU (the
    cuSOLVER kernels have their own tests in tests/cuda/gpu/test_linalg_cusolver.py)."""
    with gp.config.use(device="cpu"):
        yield


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (2, 2, 3, 3)])
def test_decompositions_match_numpy_float64(rng: np.random.Generator, dtype: Any,
                                            shape: tuple[int, ...]) -> None:  # fmt: skip
    a = _well_conditioned(rng, shape, dtype)
    h = _spd(rng, shape, dtype)
    x, hx = gp.asarray(a), gp.asarray(h)
    _close(gp.linalg.inv(x), np.linalg.inv(_f64(a)), dtype, 10)
    _close(gp.linalg.det(x), np.linalg.det(_f64(a)), dtype, 10)
    sign, logabs = gp.linalg.slogdet(x)
    want_sign, want_log = np.linalg.slogdet(_f64(a))
    _close(sign, want_sign, dtype, 10)
    _close(logabs, want_log, dtype, 10)
    assert logabs.dtype is gp.linalg.svdvals(x).dtype  # the real dtype of x's precision
    lower = gp.linalg.cholesky(hx)
    _close(lower, np.linalg.cholesky(_f64(h)), dtype, 10)
    upper = gp.linalg.cholesky(hx, upper=True)
    _close(upper, np.conj(np.swapaxes(np.linalg.cholesky(_f64(h)), -1, -2)), dtype, 10)
    w, v = gp.linalg.eigh(hx)
    _close(w, np.linalg.eigvalsh(_f64(h)), dtype, 10)
    vn = v.to_numpy().astype(np.complex128)
    # eigenvectors are defined up to a phase: check h v = v diag(w) instead
    _close(gp.asarray(_f64(h) @ vn), vn * w.to_numpy()[..., None, :], dtype, 10)
    _close(gp.linalg.eigvalsh(hx), np.linalg.eigvalsh(_f64(h)), dtype, 10)
    _close(gp.linalg.svdvals(x), np.linalg.svd(_f64(a), compute_uv=False), dtype, 10)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 1, 6, 2)])
@pytest.mark.parametrize("full", [True, False])
def test_qr_and_svd_reconstruct(rng: np.random.Generator, dtype: Any, shape: tuple[int, ...],
                                full: bool) -> None:  # fmt: skip
    a = _random(rng, shape, dtype)
    x = gp.asarray(a)
    m, n = shape[-2:]
    k = min(m, n)
    q, r = gp.linalg.qr(x, mode="complete" if full else "reduced")
    assert q.shape == (*shape[:-2], m, m if full else k)
    assert r.shape == (*shape[:-2], m if full else k, n)
    qn, rn = q.to_numpy(), r.to_numpy()
    assert np.allclose(np.tril(rn, -1), 0)
    _close(gp.asarray(qn.astype(np.complex128) @ rn), a, dtype, 10)
    eye = np.eye(qn.shape[-1])
    _close(gp.asarray(np.conj(np.swapaxes(qn, -1, -2)).astype(np.complex128) @ qn), eye +
           0 * qn[..., :1, :1].real, dtype, 10)  # fmt: skip
    u, s, vh = gp.linalg.svd(x, full_matrices=full)
    assert isinstance(gp.linalg.svd(x), gp.linalg.SVDResult)
    assert u.shape == (*shape[:-2], m, m if full else k)
    assert vh.shape == (*shape[:-2], n if full else k, n)
    assert s.dtype.is_floating
    un, sn, vn = (t.to_numpy().astype(np.complex128) for t in (u, s, vh))
    _close(gp.asarray((un[..., :, :k] * sn[..., None, :]) @ vn[..., :k, :]), a, dtype, 10)
    assert np.all(np.diff(sn.real, axis=-1) <= 0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_solve_shapes_and_broadcast(rng: np.random.Generator, dtype: Any) -> None:
    a = _well_conditioned(rng, (3, 4, 4), dtype)
    for b_shape in [(4,), (4, 2), (3, 4, 2), (1, 4, 5)]:
        b = _random(rng, b_shape, dtype)
        got = gp.linalg.solve(gp.asarray(a), gp.asarray(b))
        if len(b_shape) == 1:
            want = np.linalg.solve(_f64(a), _f64(b)[..., None])[..., 0]
        else:
            want = np.linalg.solve(_f64(a), _f64(b))
        _close(got, want, dtype, 10)
    # one matrix against a batch of right-hand sides
    one = _well_conditioned(rng, (4, 4), dtype)
    b = _random(rng, (2, 4, 3), dtype)
    _close(gp.linalg.solve(gp.asarray(one), gp.asarray(b)), np.linalg.solve(_f64(one), _f64(b)),
           dtype, 10)  # fmt: skip


def test_solve_promotes_mixed_dtypes(rng: np.random.Generator) -> None:
    a = _well_conditioned(rng, (3, 3), gp.float32)
    b = rng.standard_normal(3)
    got = gp.linalg.solve(gp.asarray(a), gp.asarray(b))
    assert got.dtype is gp.float64
    _close(got, np.linalg.solve(a.astype(np.float64), b), gp.float64, 1e4)


@pytest.mark.parametrize("dtype", FLOATS)
def test_composed_functions_match_numpy(rng: np.random.Generator, dtype: Any) -> None:
    a = _random(rng, (2, 3, 4), dtype)
    x = gp.asarray(a)
    for ord_ in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        got = gp.linalg.matrix_norm(x, ord=ord_)
        assert got.dtype is gp.linalg.svdvals(x).dtype
        _close(got, np.linalg.matrix_norm(_f64(a), ord=ord_), dtype, 10)
    got = gp.linalg.matrix_norm(x, keepdims=True)
    assert got.shape == (2, 1, 1)
    for ord_ in (2, 1, 0, -1, 3, 0.5, math.inf, -math.inf):
        for axis in (None, -1, (0, 2)):
            want = np.linalg.vector_norm(_f64(a), ord=ord_, axis=axis)
            _close(gp.linalg.vector_norm(x, ord=ord_, axis=axis), want, dtype, 10)
    assert gp.linalg.vector_norm(x, axis=(0, 1), keepdims=True).shape == (1, 1, 4)
    _close(gp.linalg.pinv(x), np.linalg.pinv(_f64(a)), dtype, 100)
    assert gp.linalg.matrix_rank(x).to_numpy().tolist() == [3, 3]
    assert gp.linalg.diagonal(x, offset=1).to_numpy().tolist() == np.diagonal(
        a, offset=1, axis1=-2, axis2=-1).tolist()  # fmt: skip
    _close(gp.linalg.trace(x, offset=-1), np.trace(_f64(a), offset=-1, axis1=-2, axis2=-1),
           dtype)  # fmt: skip
    sq = _well_conditioned(rng, (2, 3, 3), dtype)
    for n in (0, 1, 2, 5, -1, -3):
        _close(gp.linalg.matrix_power(gp.asarray(sq), n), np.linalg.matrix_power(_f64(sq), n),
               dtype, 100)  # fmt: skip


def test_matrix_rank_and_pinv_of_rank_deficient_matrices(rng: np.random.Generator) -> None:
    u = rng.standard_normal((3, 5, 2))
    a = u @ np.swapaxes(u, -1, -2)  # rank 2
    x = gp.asarray(a)
    assert gp.linalg.matrix_rank(x).to_numpy().tolist() == [2, 2, 2]
    assert gp.linalg.matrix_rank(x, rtol=0.0).to_numpy().tolist() == np.linalg.matrix_rank(
        a, rtol=0.0).tolist()  # fmt: skip
    _close(gp.linalg.pinv(x), np.linalg.pinv(a), gp.float64, 1e3)
    rtol = gp.asarray(np.array([1e-12, 1e-12, 10.0]))
    assert gp.linalg.matrix_rank(x, rtol=rtol).to_numpy().tolist() == [2, 2, 0]


def test_integer_functions_keep_numeric_rules() -> None:
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    x = gp.asarray(a)
    assert gp.linalg.trace(x).to_numpy().tolist() == np.trace(a, axis1=-2, axis2=-1).tolist()
    assert gp.linalg.trace(x).dtype is gp.int64
    v, w = np.array([1, 2, 3], np.int16), np.array([4, 5, 6], np.int16)
    got = gp.linalg.cross(gp.asarray(v), gp.asarray(w))
    assert got.dtype is gp.int16 and got.to_numpy().tolist() == np.cross(v, w).tolist()
    assert gp.linalg.outer(gp.asarray(v), gp.asarray(w)).to_numpy().tolist() == np.outer(
        v, w).tolist()  # fmt: skip
    assert gp.linalg.diagonal(gp.asarray(np.eye(3, dtype=bool))).to_numpy().all()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=0, max_size=2),
    st.lists(st.integers(1, 3), min_size=0, max_size=2),
    st.integers(-2, -1),
)
def test_cross_broadcasts_like_numpy(lead1: list[int], lead2: list[int], axis: int) -> None:
    rng = np.random.default_rng(len(lead1) * 7 + len(lead2))
    s1, s2 = [*lead1, 3], [*lead2, 3]
    if axis == -2:
        s1, s2 = [*lead1, 3, 2], [*lead2, 3, 1]
    a, b = rng.standard_normal(s1), rng.standard_normal(s2)
    try:
        want = np.cross(a, b, axis=axis)
    except ValueError:
        with pytest.raises(ValueError):
            gp.linalg.cross(gp.asarray(a), gp.asarray(b), axis=axis)
        return
    _close(gp.linalg.cross(gp.asarray(a), gp.asarray(b), axis=axis), want, gp.float64)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 2), st.sampled_from(FLOATS))
def test_svd_and_qr_any_shape(m: int, n: int, batch: int, dtype: Any) -> None:
    rng = np.random.default_rng(m * 100 + n * 10 + batch)
    a = _random(rng, (*(2,) * batch, m, n), dtype)
    x = gp.asarray(a)
    _close(gp.linalg.svdvals(x), np.linalg.svd(_f64(a), compute_uv=False), dtype, 10)
    q, r = gp.linalg.qr(x)
    _close(gp.asarray(q.to_numpy().astype(np.complex128) @ r.to_numpy()), a, dtype, 10)


def test_views_as_input(rng: np.random.Generator) -> None:
    a = _well_conditioned(rng, (6, 6), gp.float64)
    x = gp.asarray(a)
    _close(gp.linalg.inv(x.mT), np.linalg.inv(a.T), gp.float64)
    _close(gp.linalg.det(x[::2, ::2]), np.linalg.det(a[::2, ::2]), gp.float64)
    h = _spd(rng, (4, 4), gp.float64)
    b = gp.broadcast_to(gp.asarray(h), (3, 4, 4))
    _close(gp.linalg.cholesky(b), np.linalg.cholesky(np.broadcast_to(h, (3, 4, 4))), gp.float64)


def test_half_types_compute_in_float32(rng: np.random.Generator) -> None:
    a = _well_conditioned(rng, (3, 3), gp.float32)
    got = gp.linalg.inv(gp.asarray(a).astype(gp.float16))
    assert got.dtype is gp.float32


def test_empty_matrices_and_batches() -> None:
    z = gp.zeros((2, 0, 0))
    assert gp.linalg.det(z).to_numpy().tolist() == [1.0, 1.0]
    sign, logabs = gp.linalg.slogdet(z)
    assert sign.to_numpy().tolist() == [1.0, 1.0] and logabs.to_numpy().tolist() == [0.0, 0.0]
    assert gp.linalg.inv(z).shape == (2, 0, 0)
    assert gp.linalg.eigh(z).eigenvalues.shape == (2, 0)
    assert gp.linalg.cholesky(gp.zeros((0, 3, 3))).shape == (0, 3, 3)
    for shape in [(3, 0), (0, 3), (2, 3, 0)]:
        a = np.zeros(shape, np.float32)
        u, s, vh = gp.linalg.svd(gp.asarray(a))
        nu, ns, nvh = np.linalg.svd(a)
        assert (u.shape, s.shape, vh.shape) == (nu.shape, ns.shape, nvh.shape)
        assert np.array_equal(u.to_numpy(), nu) and np.array_equal(vh.to_numpy(), nvh)
        q, r = gp.linalg.qr(gp.asarray(a), mode="complete")
        nq, nr = np.linalg.qr(a, mode="complete")
        assert np.array_equal(q.to_numpy(), nq) and np.array_equal(r.to_numpy(), nr)
        assert gp.linalg.pinv(gp.asarray(a)).shape == np.linalg.pinv(a).shape
        assert gp.linalg.matrix_rank(gp.asarray(a)).shape == shape[:-2]


def test_result_tuples_have_the_standard_fields(rng: np.random.Generator) -> None:
    x = gp.asarray(_spd(rng, (3, 3), gp.float64))
    assert gp.linalg.eigh(x)._fields == ("eigenvalues", "eigenvectors")
    assert gp.linalg.qr(x)._fields == ("Q", "R")
    assert gp.linalg.slogdet(x)._fields == ("sign", "logabsdet")
    assert gp.linalg.svd(x)._fields == ("U", "S", "Vh")


def test_dispatch_and_explain_cover_the_kernels() -> None:
    from pygpukit import ops_catalog

    x = gp.eye(3)
    for op in ("cholesky", "solve", "inv", "det", "slogdet", "eigh", "eigvalsh", "qr", "svd",
               "svdvals"):  # fmt: skip
        assert ops_catalog.convention(op).family == "factorizations"
        assert gp.explain(op, x).chosen == "cpu"
    assert "lower triangle" in ops_catalog.convention("eigh").details


BAD = [
    (lambda: gp.linalg.inv(gp.zeros((3, 4))), ValueError, "square"),
    (lambda: gp.linalg.det(gp.zeros((3,))), ValueError, "at least 2 dimensions"),
    (lambda: gp.linalg.cholesky(gp.zeros((2, 2), dtype=gp.int32)), TypeError, "int32"),
    (lambda: gp.linalg.svd(gp.zeros((2, 2), dtype=gp.bool)), TypeError, "floating-point"),
    (lambda: gp.linalg.eigh(np.eye(2)), TypeError, "GPUArray"),
    (lambda: gp.linalg.qr(gp.zeros((2, 2)), mode="r"), ValueError, "mode"),
    (lambda: gp.linalg.solve(gp.eye(3), gp.zeros((4,))), ValueError, "x2"),
    (lambda: gp.linalg.solve(gp.zeros((2, 3, 3)), gp.zeros((4, 3, 1))), ValueError, "batch"),
    (lambda: gp.linalg.inv(gp.zeros((3, 3))), gp.linalg.LinAlgError, "inv"),
    (lambda: gp.linalg.cholesky(-gp.eye(3)), np.linalg.LinAlgError, "cholesky"),
    (lambda: gp.linalg.solve(gp.zeros((2, 2)), gp.zeros((2,))), ValueError, "solve"),
    (lambda: gp.linalg.matrix_norm(gp.eye(2), ord=3), ValueError, "ord"),
    (lambda: gp.linalg.vector_norm(gp.eye(2), ord="fro"), TypeError, "ord"),
    (lambda: gp.linalg.vector_norm(gp.eye(2), axis=(0, 0)), ValueError, "repeated axis"),
    (lambda: gp.linalg.matrix_power(gp.eye(2), 1.5), TypeError, "n must be an int"),
    (lambda: gp.linalg.cross(gp.zeros((4,)), gp.zeros((4,))), ValueError, "size 3"),
    (lambda: gp.linalg.cross(gp.zeros((2, 3)), gp.zeros((3, 3))), ValueError, "broadcast"),
    (lambda: gp.linalg.outer(gp.zeros((2, 2)), gp.zeros((2,))), ValueError, "1-D"),
    (lambda: gp.linalg.trace(gp.zeros((2, 2), dtype=gp.bool)), TypeError, "bool"),
    (lambda: gp.linalg.diagonal(gp.zeros((2,))), ValueError, "(2,)"),
    (lambda: gp.linalg.cholesky(gp.eye(2), upper=1), TypeError, "upper"),
    (lambda: gp.linalg.svd(gp.eye(2), full_matrices="yes"), TypeError, "full_matrices"),
    (lambda: gp.linalg.matrix_rank(gp.eye(2), rtol="x"), TypeError, "rtol"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_is_named(case: int) -> None:
    call, kind, words = BAD[case]
    with pytest.raises(kind) as info:
        call()
    assert words in str(info.value)


def test_linalg_error_is_a_value_error() -> None:
    assert issubclass(gp.linalg.LinAlgError, ValueError)
    assert issubclass(gp.linalg.LinAlgError, np.linalg.LinAlgError)
