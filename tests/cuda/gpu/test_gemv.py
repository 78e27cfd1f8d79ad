"""The one-row product (gemv.py, sm_90+) against NumPy float64: each strip width, K not a
multiple of the cluster's chunks nor of a tile, N not a multiple of the strip, a strided x1,
a padded w; poisoned outputs; bit-identical repeats and graph replays; the layouts it
leaves to cuBLASLt; hypothesis over shapes."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit.testing import poison
from pygpukit_cuda import gemv, plans
from pygpukit_cuda import matmul as mm

pytestmark = pytest.mark.gpu

DTYPES = ["bfloat16", "float16"]
TOL = 1e-2  # relative Frobenius error of a 16-bit result rounded once from float32 sums


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, ...]]]:
    """The (m, n, k) of every product the kernel planned, on an sm_90+ GPU only; the plan
    caches start empty so each layout is planned again."""
    from pygpukit_cuda.device_facts import compute_capability

    if compute_capability(0) < 90:
        pytest.skip("the small-M product is sm_90+")
    calls: list[tuple[int, ...]] = []
    real = gemv.run

    def counting(x1: gp.GPUArray, x2: gp.GPUArray, out: gp.GPUArray) -> gemv.Ready | None:
        calls.append((x1.shape[0], x2.shape[1], x1.shape[1]))
        return real(x1, x2, out)

    monkeypatch.setattr(gemv, "run", counting)
    plans.forget()
    yield calls
    plans.forget()


def _draw(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(-2, 2, shape).astype(np.float32)


def _dev(a: np.ndarray, dtype: str) -> gp.GPUArray:
    return gp.asarray(a, device="cuda").astype(dtype)


def _product(x1: gp.GPUArray, x2: gp.GPUArray, dtype: str) -> np.ndarray:
    out = poison(gp.empty((x1.shape[0], x2.shape[1]), dtype=dtype, device="cuda"))
    mm.matmul(x1, x2, out, False)
    return out.astype("float64").to_numpy()


def _check(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.isfinite(got).all(), "an output element was left unwritten (poison)"
    err = np.linalg.norm(got - want) / max(float(np.linalg.norm(want)), 1e-300)
    assert err < TOL, f"relative Frobenius error {err:.2e}"


def _rounded(a: np.ndarray, dtype: str) -> np.ndarray:
    """`a` as the device holds it in `dtype`, back in float64 (the reference's inputs)."""
    return _dev(a, dtype).astype("float64").to_numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "n,k",
    [(2048, 2048), (8, 1), (136, 77), (4096, 33), (1000, 515), (264, 4099), (16, 9000),
     (520, 7), (128, 128), (2048, 300), (4096, 1000), (1024, 2816), (2816, 1024)],
)  # fmt: skip
def test_products_match_float64(dtype: str, n: int, k: int, served: list) -> None:
    m = 1
    rng = np.random.default_rng(n * 31 + k)
    a, b = _rounded(_draw(rng, (m, k)), dtype), _rounded(_draw(rng, (k, n)), dtype)
    _check(_product(_dev(a, dtype), _dev(b, dtype), dtype), a, b)
    assert served == [(m, n, k)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_through_gp_matmul_and_1d_promotion(dtype: str, served: list) -> None:
    rng = np.random.default_rng(5)
    a, b = _rounded(_draw(rng, (300,)), dtype), _rounded(_draw(rng, (300, 264)), dtype)
    got = gp.matmul(_dev(a, dtype), _dev(b, dtype))
    assert got.shape == (264,) and got.dtype.name == dtype
    _check(got.astype("float64").to_numpy()[None, :], a[None, :], b)
    assert served == [(1, 264, 300)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_x1_and_padded_w(dtype: str, served: list) -> None:
    rng = np.random.default_rng(11)
    # x1 as a column of a matrix (stride 6 bytes) and read backwards; w as a column block of
    # a wider matrix (row stride 1056 bytes, first column 16-byte aligned)
    a = _rounded(_draw(rng, (96, 3)), dtype)
    wide = _rounded(_draw(rng, (96, 528)), dtype)
    ga, gw = _dev(a, dtype), _dev(wide, dtype)
    _check(_product(ga.mT[1:2], gw[:, 8:272], dtype), a.T[1:2], wide[:, 8:272])
    _check(_product(ga.mT[2:3, ::-1], gw[::-1, :256], dtype), a.T[2:3, ::-1], wide[::-1, :256])
    assert served == [(1, 264, 96), (1, 256, 96)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_layouts_it_leaves_to_cublaslt(dtype: str, served: list) -> None:
    rng = np.random.default_rng(13)
    a = _rounded(_draw(rng, (9, 64)), dtype)
    b = _rounded(_draw(rng, (64, 200)), dtype)
    ga, gb = _dev(a, dtype), _dev(b, dtype)
    _check(_product(ga, gb, dtype), a, b)  # 9 rows
    _check(_product(ga[:2], gb, dtype), a[:2], b)  # 2 rows
    _check(_product(ga[:1], gb[:, 1:161], dtype), a[:1], b[:, 1:161])  # w not 16-byte aligned
    _check(_product(ga[:1], gb[:, :100], dtype), a[:1], b[:, :100])  # N not a multiple of 8
    _check(_product(ga[:1], gb[:, ::2][:, :96], dtype), a[:1], b[:, ::2][:, :96])
    assert served == []


def test_off_switch_leaves_products_to_cublaslt(
    served: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gemv, "ENABLED", False)
    rng = np.random.default_rng(17)
    a, b = _rounded(_draw(rng, (1, 512)), "bfloat16"), _rounded(
        _draw(rng, (512, 512)), "bfloat16")  # fmt: skip
    _check(_product(_dev(a, "bfloat16"), _dev(b, "bfloat16"), "bfloat16"), a, b)
    assert served == []


def test_repeats_and_graph_replays_are_bit_identical(served: list) -> None:
    rng = np.random.default_rng(19)
    x = _dev(_draw(rng, (1, 2048)), "bfloat16")
    w = _dev(_draw(rng, (2048, 1024)), "bfloat16")
    first = gp.matmul(x, w).to_numpy().view(np.uint16)
    assert np.array_equal(gp.matmul(x, w).to_numpy().view(np.uint16), first)
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        out = gp.matmul(x, w)
    g.replay()
    assert np.array_equal(out.to_numpy().view(np.uint16), first)
    x[...] = _dev(_draw(rng, (1, 2048)), "bfloat16")  # new values, same memory
    g.replay()
    want = gp.matmul(x, w).to_numpy().view(np.uint16)
    assert np.array_equal(out.to_numpy().view(np.uint16), want)
    assert served == [(1, 1024, 2048)]  # one plan: the capture and the eager calls reuse it


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 300), st.integers(1, 3000), st.sampled_from(DTYPES),
       st.integers(0, 2**32 - 1))  # fmt: skip
def test_hypothesis_shapes(n8: int, k: int, dtype: str, seed: int) -> None:
    from pygpukit_cuda.device_facts import compute_capability

    if compute_capability(0) < 90:
        pytest.skip("the small-M product is sm_90+")
    rng = np.random.default_rng(seed)
    m, n = 1, 8 * n8
    a, b = _rounded(_draw(rng, (m, k)), dtype), _rounded(_draw(rng, (k, n)), dtype)
    x1, x2 = _dev(a, dtype), _dev(b, dtype)
    assert gemv.serves(x1, x2, gp.empty((m, n), dtype=dtype, device="cuda"))
    _check(_product(x1, x2, dtype), a, b)
