"""gp.fft on cuda arrays (cuFFT) against NumPy's complex128 results: odd and prime lengths,
padding and cropping, batches, axes, norms, views, more than three axes, graph capture."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _needs_cufft() -> None:
    from pygpukit_cuda import cufft

    if cufft.missing():
        pytest.skip(str(cufft.missing()))


RNG = np.random.default_rng(12)
TOL = {np.complex64: 2e-5, np.float32: 2e-5, np.complex128: 1e-12, np.float64: 1e-12}


def _data(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    re = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        re = re + 1j * RNG.standard_normal(shape)
    return re.astype(dtype)


def _close(got: gp.GPUArray, want: np.ndarray, dtype: type) -> None:
    """Relative to the transform's scale (max |want|), as FFT errors grow with it."""
    g = got.to_numpy()
    assert g.shape == want.shape
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(g, want, rtol=0, atol=TOL[dtype] * scale * 10)


def _ref(fn: Callable[..., np.ndarray], a: np.ndarray, **kw: object) -> np.ndarray:
    """NumPy's transform in double precision."""
    wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    return fn(wide, **kw)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("n", [1, 2, 7, 64, 400, 401, 1000, 4096])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_fft_ifft_1d(dtype: type, n: int, norm: str) -> None:
    a = _data((3, n), dtype)
    x = gp.asarray(a, device="cuda")
    _close(gp.fft.fft(x, norm=norm), _ref(np.fft.fft, a, norm=norm), dtype)
    _close(gp.fft.ifft(x, norm=norm), _ref(np.fft.ifft, a, norm=norm), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 5, 400, 1024, 1031])
def test_rfft_irfft_1d(dtype: type, n: int) -> None:
    a = _data((4, n), dtype)
    x = gp.asarray(a, device="cuda")
    spec = _ref(np.fft.rfft, a)
    _close(gp.fft.rfft(x), spec, dtype)
    half = gp.asarray(spec.astype(np.complex64 if dtype is np.float32 else np.complex128),
                      device="cuda")  # fmt: skip
    _close(gp.fft.irfft(half, n=n), np.fft.irfft(spec, n=n), dtype)
    # irfft must not write into its input (cuFFT's c2r overwrites what it reads)
    before = half.to_numpy().copy()
    gp.fft.irfft(half, n=n)
    np.testing.assert_array_equal(half.to_numpy(), before)


@pytest.mark.parametrize("n", [3, 10, 33])
def test_padding_and_cropping(n: int) -> None:
    a = _data((2, 16), np.complex64)
    x = gp.asarray(a, device="cuda")
    _close(gp.fft.fft(x, n=n), _ref(np.fft.fft, a, n=n), np.complex64)
    r = _data((2, 16), np.float32)
    _close(gp.fft.rfft(gp.asarray(r, device="cuda"), n=n), _ref(np.fft.rfft, r, n=n), np.float32)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_one_axis_of_a_3d_array(axis: int) -> None:
    a = _data((6, 5, 7), np.complex64)
    x = gp.asarray(a, device="cuda")
    _close(gp.fft.fft(x, axis=axis), _ref(np.fft.fft, a, axis=axis), np.complex64)
    r = _data((6, 5, 8), np.float64)
    y = gp.asarray(r, device="cuda")
    _close(gp.fft.rfft(y, axis=axis), _ref(np.fft.rfft, r, axis=axis), np.float64)


@pytest.mark.parametrize(
    "axes", [None, (0, 1), (1, 0), (-1,), (0, 2), (2, 0, 1), (0, 1, 2, 3)], ids=str
)
@pytest.mark.parametrize("norm", ["backward", "ortho"])
def test_fftn_rfftn_irfftn_over_axes(axes: tuple[int, ...] | None, norm: str) -> None:
    a = _data((4, 6, 5, 3), np.complex128)
    x = gp.asarray(a, device="cuda")
    _close(gp.fft.fftn(x, axes=axes, norm=norm), _ref(np.fft.fftn, a, axes=axes, norm=norm),
           np.complex128)  # fmt: skip
    _close(gp.fft.ifftn(x, axes=axes, norm=norm), _ref(np.fft.ifftn, a, axes=axes, norm=norm),
           np.complex128)  # fmt: skip
    r = _data((4, 6, 5, 4), np.float64)
    spec = np.fft.rfftn(r, axes=axes, norm=norm)
    _close(gp.fft.rfftn(gp.asarray(r, device="cuda"), axes=axes, norm=norm), spec, np.float64)
    last = (axes if axes is not None else tuple(range(4)))[-1]
    shape = [r.shape[a] for a in (axes if axes is not None else range(4))]
    back = gp.fft.irfftn(gp.asarray(spec, device="cuda"), s=shape if axes else None,
                         axes=axes, norm=norm)  # fmt: skip
    want = np.fft.irfftn(spec, s=shape if axes else None, axes=axes, norm=norm)
    assert back.shape[last] == r.shape[last]
    _close(back, want, np.float64)


def test_views_transposed_sliced_and_broadcast() -> None:
    a = _data((8, 12), np.complex64)
    x = gp.asarray(a, device="cuda")
    _close(gp.fft.fft(x.mT), _ref(np.fft.fft, a.T), np.complex64)
    _close(gp.fft.fft(x[:, ::2]), _ref(np.fft.fft, a[:, ::2]), np.complex64)
    _close(gp.fft.fft(x[::-1]), _ref(np.fft.fft, a[::-1]), np.complex64)
    row = gp.asarray(a[:1], device="cuda")
    want = _ref(np.fft.fft, np.broadcast_to(a[:1], (5, 12)))
    _close(gp.fft.fft(gp.broadcast_to(row, (5, 12))), want, np.complex64)
    r = _data((6, 10), np.float32)
    _close(gp.fft.rfft(gp.asarray(r, device="cuda").mT, axis=0), _ref(np.fft.rfft, r.T, axis=0),
           np.float32)  # fmt: skip


def test_hfft_ihfft_and_real_input_to_fft() -> None:
    a = _data((3, 9), np.complex64)
    x = gp.asarray(a, device="cuda")
    _close(gp.fft.hfft(x, n=16), _ref(np.fft.hfft, a, n=16), np.float32)
    r = _data((3, 16), np.float32)
    y = gp.asarray(r, device="cuda")
    _close(gp.fft.ihfft(y), _ref(np.fft.ihfft, r), np.complex64)
    _close(gp.fft.fft(y), _ref(np.fft.fft, r), np.complex64)  # real input promoted


def test_shifts_and_frequencies_on_cuda() -> None:
    a = _data((5, 6), np.complex64)
    x = gp.asarray(a, device="cuda")
    np.testing.assert_array_equal(gp.fft.fftshift(x).to_numpy(), np.fft.fftshift(a))
    np.testing.assert_array_equal(gp.fft.ifftshift(x, axes=0).to_numpy(),
                                  np.fft.ifftshift(a, axes=0))  # fmt: skip
    f = gp.fft.fftfreq(9, d=0.5, device="cuda")
    np.testing.assert_allclose(f.to_numpy(), np.fft.fftfreq(9, d=0.5), rtol=1e-6)


def test_big_power_of_two_and_whisper_frames() -> None:
    a = _data((1 << 20,), np.complex64)
    _close(gp.fft.fft(gp.asarray(a, device="cuda")), _ref(np.fft.fft, a), np.complex64)
    frames = _data((300, 400), np.float32)
    _close(gp.fft.rfft(gp.asarray(frames, device="cuda")), _ref(np.fft.rfft, frames),
           np.float32)  # fmt: skip


def test_work_area_comes_from_the_pool_and_plans_are_reused() -> None:
    from pygpukit_cuda import cufft

    a = _data((16, 4096), np.complex64)
    x = gp.asarray(a, device="cuda")
    gp.fft.fft(x)
    plans = len(cufft._plans)
    for _ in range(3):
        gp.fft.fft(x)
    assert len(cufft._plans) == plans


def test_a_captured_fft_replays_bit_identically() -> None:
    a = _data((32, 400), np.float32)
    x = gp.asarray(a, device="cuda")
    eager = gp.fft.irfft(gp.fft.rfft(x, norm="ortho"), n=400, norm="ortho").to_numpy()
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        out = gp.fft.irfft(gp.fft.rfft(x, norm="ortho"), n=400, norm="ortho")
    g.replay()
    np.testing.assert_array_equal(out.to_numpy(), eager)
    np.testing.assert_allclose(eager, a, atol=1e-5)
    # new data in the captured input: the replay follows it
    b = _data((32, 400), np.float32)
    x[...] = gp.asarray(b, device="cuda")
    g.replay()
    np.testing.assert_allclose(out.to_numpy(), b, atol=1e-5)


def test_a_new_plan_inside_a_capture_is_refused_by_name() -> None:
    x = gp.asarray(_data((3, 977), np.complex64), device="cuda")
    g = gp.cuda.Graph()
    with pytest.raises(RuntimeError, match="before capturing"), gp.cuda.graph(g):
        gp.fft.fft(x)


def test_repeated_calls_with_changed_arguments_on_the_fast_path() -> None:
    # each call's key differs from the one before in one thing (n, norm, axis, layout): a
    # reused decision or plan would give a wrong answer or shape
    a = _data((6, 400), np.float32)
    x = gp.asarray(a, device="cuda")
    xt = gp.permute_dims(gp.asarray(np.ascontiguousarray(a.T), device="cuda"), (1, 0))
    for kw in [{}, {"n": 256}, {}, {"norm": "ortho"}, {"norm": "forward"}, {"axis": 0}, {}]:
        _close(gp.fft.rfft(x, **kw), _ref(np.fft.rfft, a, **kw), np.complex64)  # type: ignore[arg-type]
        _close(gp.fft.rfft(xt, **kw), _ref(np.fft.rfft, a, **kw), np.complex64)  # type: ignore[arg-type]
    spec_np = np.fft.rfft(a).astype(np.complex64)
    spec = gp.asarray(spec_np, device="cuda")
    for kw in [{}, {"n": 399}, {"n": 400}, {"norm": "ortho"}, {}, {"axis": 0}]:
        _close(gp.fft.irfft(spec, **kw), _ref(np.fft.irfft, spec_np, **kw), np.float32)  # type: ignore[arg-type]
        np.testing.assert_array_equal(spec.to_numpy(), spec_np)  # cuFFT overwrote a copy
