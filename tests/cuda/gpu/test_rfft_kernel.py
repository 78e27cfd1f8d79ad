"""Our own rfft kernel (pygpukit_cuda.rfft_kernel, n = 1024 over the last axis of
contiguous float32 arrays) against NumPy's float64 rfft and against cuFFT: batches, norms,
poisoned outputs, the native repeat path, graph capture, and the layouts it leaves to cuFFT."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.gpu

from pygpukit_cuda import fft_kernels, rfft_kernel  # noqa: E402


@pytest.fixture(autouse=True)
def _needs_cufft() -> None:
    from pygpukit_cuda import cufft

    if cufft.missing():
        pytest.skip(str(cufft.missing()))  # the op refuses without cuFFT, whoever runs it


def _data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _close(got: np.ndarray, want: np.ndarray) -> None:
    """float32 FFT error grows with the transform's scale (max |want|) and log n."""
    assert got.shape == want.shape and got.dtype == np.complex64
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * scale)


@pytest.mark.parametrize("n", [1024])
@pytest.mark.parametrize("shape", [(1,), (3,), (5, 7), (2, 3, 4), (33,)])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_matches_numpy_in_double_precision(n: int, shape: tuple[int, ...], norm: str) -> None:
    a = _data((*shape, n), n + len(shape) * 7 + sum(shape))
    x = gp.asarray(a, device="cuda")
    assert rfft_kernel.serves(
        x, gp.empty((*shape, n // 2 + 1), dtype=gp.complex64, device="cuda"), (x.ndim - 1,)
    )
    _close(gp.fft.rfft(x, norm=norm).to_numpy(), np.fft.rfft(a.astype(np.float64), norm=norm))


@pytest.mark.parametrize("n", [1024])
def test_writes_every_bin_of_a_poisoned_output(n: int) -> None:
    # called directly, as the op layer calls it: every bin (0..n/2, both parts) is written
    a = _data((9, n), 3)
    x = gp.asarray(a, device="cuda")
    out = gp.full((9, n // 2 + 1), complex("nan+nanj"), dtype=gp.complex64, device="cuda")
    fft_kernels.fft_r2c(x, out, (1,), 0.5)
    _close(out.to_numpy(), 0.5 * np.fft.rfft(a.astype(np.float64)))


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 70), n=st.just(1024),
       norm=st.sampled_from(["backward", "ortho", "forward"]),
       seed=st.integers(0, 2**31))  # fmt: skip
def test_hypothesis_rows_and_norms(rows: int, n: int, norm: str, seed: int) -> None:
    a = _data((rows, n), seed) * np.float32(10.0 ** (seed % 7 - 3))  # magnitudes 1e-3..1e3
    got = gp.fft.rfft(gp.asarray(a, device="cuda"), norm=norm).to_numpy()
    _close(got, np.fft.rfft(a.astype(np.float64), norm=norm))


def test_agrees_with_cufft(monkeypatch: pytest.MonkeyPatch) -> None:
    a = _data((4096, 1024), 5)
    x = gp.asarray(a, device="cuda")
    ours = gp.fft.rfft(x).to_numpy()
    monkeypatch.setattr(rfft_kernel, "ENABLED", False)  # the same kernel call, on cuFFT
    out = gp.empty((4096, 513), dtype=gp.complex64, device="cuda")
    fft_kernels.fft_r2c(x, out, (1,), 1.0)
    scale = float(np.max(np.abs(ours)))
    np.testing.assert_allclose(ours, out.to_numpy(), rtol=0, atol=2e-6 * scale)


@pytest.mark.parametrize("per_sm", [1, 3])
def test_warps_walking_several_rows_match_numpy(monkeypatch: pytest.MonkeyPatch,
                                                per_sm: int) -> None:  # fmt: skip
    # a small grid: each warp transforms several rows, the last ones of an odd count too
    monkeypatch.setattr(rfft_kernel, "BLOCKS_PER_SM", per_sm)
    a = _data((3, 1001, 1024), 20 + per_sm)
    out = gp.full((3, 1001, 513), complex("nan+nanj"), dtype=gp.complex64, device="cuda")
    fft_kernels.fft_r2c(gp.asarray(a, device="cuda"), out, (2,), 1.0)
    _close(out.to_numpy(), np.fft.rfft(a.astype(np.float64)))


def test_the_repeat_path_gives_the_first_calls_bits() -> None:
    # the second and later calls go through the native FftCall with our launch plan
    a = _data((64, 1024), 8)
    x = gp.asarray(a, device="cuda")
    first = gp.fft.rfft(x, norm="ortho").to_numpy()
    for _ in range(3):
        np.testing.assert_array_equal(gp.fft.rfft(x, norm="ortho").to_numpy(), first)
    b = _data((64, 1024), 9)  # new values in the same layout
    _close(gp.fft.rfft(gp.asarray(b, device="cuda"), norm="ortho").to_numpy(),
           np.fft.rfft(b.astype(np.float64), norm="ortho"))  # fmt: skip


def test_a_captured_call_replays_bit_identically() -> None:
    a = _data((16, 1024), 10)
    x = gp.asarray(a, device="cuda")
    eager = gp.fft.rfft(x).to_numpy()
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        out = gp.fft.rfft(x)
    g.replay()
    np.testing.assert_array_equal(out.to_numpy(), eager)
    b = _data((16, 1024), 11)
    x[...] = gp.asarray(b, device="cuda")
    g.replay()
    _close(out.to_numpy(), np.fft.rfft(b.astype(np.float64)))


@pytest.mark.parametrize(
    "case",
    [
        "misaligned",
        "offset by one float",
        "strided rows",
        "axis 0",
        "other length",
        "short rows",
        "float64",
    ],
)
def test_layouts_it_leaves_to_cufft_are_still_right(case: str) -> None:
    a = _data((8, 2050), 12)
    x = gp.asarray(a, device="cuda")
    if case == "misaligned":  # rows of a wider array, each starting 4 bytes past 8
        view, axis = x[:, 1:1025], -1
    elif case == "offset by one float":  # contiguous rows starting 4 bytes into a buffer
        flat = gp.asarray(_data((4 * 1024 + 1,), 15), device="cuda")
        view, axis = flat[1:].reshape(4, 1024), -1
        assert view.is_contiguous
    elif case == "strided rows":
        view, axis = x[::2, :1024], -1
    elif case == "axis 0":
        view, axis = gp.asarray(_data((1024, 3), 13), device="cuda"), 0
    elif case == "other length":
        view, axis = x[:, :512], -1
    elif case == "short rows":  # contiguous, but 128 points
        view, axis = gp.asarray(_data((8, 128), 14), device="cuda"), -1
    else:
        view, axis = gp.asarray(a[:, :1024].astype(np.float64), device="cuda"), -1
    host = view.to_numpy()
    out = gp.empty(tuple(513 if i == axis % view.ndim else s for i, s in enumerate(view.shape)),
                   dtype=gp.complex64, device="cuda")  # fmt: skip
    assert not rfft_kernel.serves(view, out, (axis % view.ndim,))
    got = gp.fft.rfft(view, axis=axis).to_numpy()
    want = np.fft.rfft(host.astype(np.float64), axis=axis)
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * scale)
