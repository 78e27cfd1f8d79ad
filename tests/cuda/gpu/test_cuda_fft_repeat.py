"""gp.fft's native repeat (FftCall) on a GPU: repeated calls of every single-pass transform
against NumPy, on a side stream, declined while capturing, retired with the plans, and its
results back in the pool once dropped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit._ops import fourier

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(21)


@pytest.fixture(autouse=True)
def _needs_cufft() -> None:
    from pygpukit_cuda import cufft

    if cufft.missing():
        pytest.skip(str(cufft.missing()))
    fourier._decided.clear()  # each test finds its own repeats


def _data(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    re = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        re = re + 1j * RNG.standard_normal(shape)
    return re.astype(dtype)


def _close(got: gp.GPUArray, want: np.ndarray) -> None:
    g = got.to_numpy()
    assert g.shape == want.shape
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(g, want, rtol=0, atol=2e-4 * scale)


def _repeat_of(fn: str, x: gp.GPUArray) -> Any:
    """The repeat the op layer keeps for `fn` on x's layout (None when it keeps none)."""
    for key, entry in fourier._decided.items():
        if key[0] == fn and key[1] == x.shape and key[2] == x.strides:
            return entry[4]
    return None


CASES: list[tuple[str, tuple[int, ...], type, dict[str, Any], Callable[..., np.ndarray]]] = [
    ("rfft", (300, 400), np.float32, {}, np.fft.rfft),
    ("rfft", (64, 1024), np.float32, {"norm": "ortho"}, np.fft.rfft),
    ("fft", (1 << 16,), np.complex64, {}, np.fft.fft),
    ("ifft", (16, 400), np.complex64, {}, np.fft.ifft),
    ("ifft", (16, 400), np.complex64, {"norm": "ortho"}, np.fft.ifft),
    ("irfft", (64, 201), np.complex64, {"n": 400}, np.fft.irfft),
    ("irfft", (64, 201), np.complex64, {"n": 400, "norm": "forward"}, np.fft.irfft),
    ("rfftn", (8, 32, 48), np.float32, {"axes": (1, 2)}, np.fft.rfftn),
    ("fftn", (4, 16, 16), np.complex64, {}, np.fft.fftn),
    ("fft", (400, 12), np.complex64, {"axis": 0}, np.fft.fft),
]


@pytest.mark.parametrize(("fn", "shape", "dtype", "kw", "ref"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[3]}" for c in CASES])  # fmt: skip
def test_repeated_calls_agree_with_numpy(fn: str, shape: tuple[int, ...], dtype: type,
                                         kw: dict[str, Any], ref: Callable[..., np.ndarray]
                                         ) -> None:  # fmt: skip
    a = _data(shape, dtype)
    x = gp.asarray(a, device="cuda")
    want = ref(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), **kw)
    for _ in range(3):  # the first call decides; the later ones are the native repeat
        _close(getattr(gp.fft, fn)(x, **kw), want)
    run = _repeat_of(fn, x)
    assert run is not None and run.live
    np.testing.assert_array_equal(x.to_numpy(), a)  # the input is never written


def test_the_repeat_follows_the_current_stream_and_declines_while_capturing() -> None:
    a = _data((100, 400), np.float32)
    x = gp.asarray(a, device="cuda")
    want = np.fft.rfft(a.astype(np.float64))
    gp.fft.rfft(x)
    run = _repeat_of("rfft", x)
    s = gp.cuda.Stream()
    with s:
        out = run(x)
        assert out is not NotImplemented
        s.synchronize()
        _close(out, want)
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        assert run(x) is NotImplemented  # new blocks come from the graph's pool
        captured = gp.fft.rfft(x)
    g.replay()
    gp.cuda.synchronize()
    _close(captured, want)


def test_forgetting_the_plans_retires_the_repeat() -> None:
    from pygpukit_cuda import plans

    a = _data((32, 256), np.complex64)
    x = gp.asarray(a, device="cuda")
    gp.fft.fft(x)
    run = _repeat_of("fft", x)
    plans.forget()
    assert not run.live and run(x) is None
    for _ in range(2):  # decided again, with a new plan and a new repeat
        _close(gp.fft.fft(x), np.fft.fft(a.astype(np.complex128)))
    assert _repeat_of("fft", x) is not run and _repeat_of("fft", x).live


def test_repeat_results_and_scratch_return_to_the_pool() -> None:
    from pygpukit._placement import backend_of

    x = gp.asarray(_data((256, 400), np.float32), device="cuda")
    gp.fft.rfft(x)
    gp.fft.rfft(x)
    gp.cuda.synchronize()
    used = lambda: backend_of(x.device).memory_stats(x.device)["used"]  # noqa: E731
    before = used()
    results = [gp.fft.rfft(x) for _ in range(20)]
    assert used() >= before + 20 * 256 * 201 * 8
    del results
    assert used() == before
