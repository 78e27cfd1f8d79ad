"""The audio package's fused CUDA kernels (framing + window, |X|^2, Whisper's log tail) against
the array-op path on the CPU, for every pad mode, batch shape and precision. Skips without a
GPU. Run: pytest tests/audio/test_fused_gpu.py
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import SR, all_signals, assert_close_scaled
from pygpukit import audio
from pygpukit.asr import whisper
from pygpukit.audio import _fused

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU (pygpukit-cuda)"),
]

RNG = np.random.default_rng(11)


def _frames_on_host(y: np.ndarray, n_fft: int, hop: int, pad: int, mode: str) -> np.ndarray:
    padded = np.pad(y, [(0, 0)] * (y.ndim - 1) + [(pad, pad)], mode=mode)  # type: ignore[call-overload]
    return np.lib.stride_tricks.sliding_window_view(padded, n_fft, axis=-1)[..., ::hop, :]


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "symmetric"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "n_fft", "hop", "pad"),
                         [((3000,), 400, 160, 200), ((2, 3, 1001), 256, 64, 128),
                          ((4, 500), 64, 7, 0), ((2, 300), 400, 100, 200),
                          ((2, 100), 256, 50, 128)])  # fmt: skip
def test_windowed_frames_equal_numpy(mode: str, dtype: type, shape: tuple[int, ...], n_fft: int,
                                     hop: int, pad: int) -> None:  # fmt: skip
    y: np.ndarray = RNG.standard_normal(shape).astype(dtype)
    window: np.ndarray = RNG.random(n_fft).astype(dtype)
    want = _frames_on_host(y, n_fft, hop, pad, mode) * window
    got = _fused.windowed_frames(gp.from_numpy(y, "cuda"), gp.from_numpy(window, "cuda"),
                                 hop=hop, pad=pad, pad_mode=mode,
                                 n_frames=want.shape[-2])  # fmt: skip
    if (mode == "reflect" and pad >= shape[-1]) or (mode == "symmetric" and pad > shape[-1]):
        assert got is None  # np.pad reflects more than once: the array ops do it
        return
    assert got is not None and got.dtype.name == np.dtype(dtype).name
    np.testing.assert_array_equal(got.to_numpy(), want)  # one product each: bit-exact


@pytest.mark.parametrize("mode", ["constant", "reflect"])
@pytest.mark.parametrize(("center", "hop"), [(True, 160), (False, 160), (False, 397)])
def test_the_framing_kernels_nan_flag_sees_every_sample(mode: str, center: bool, hop: int) -> None:
    """A NaN or inf anywhere, the tail the last frame does not reach included, sets the flag
    (hop > n_fft leaves gaps between frames: the array-op test is used instead)."""
    n, n_fft = 4000, 400
    pad = n_fft // 2 if center else 0
    rows = 1 + (n + 2 * pad - n_fft) // hop
    window = gp.from_numpy(np.ones(n_fft, np.float32), "cuda")
    for at in (0, 1, 1234, n - 161, n - 2, n - 1):
        for value in (np.nan, np.inf, -np.inf):
            y = RNG.standard_normal((2, n)).astype(np.float32)
            y[1, at] = value
            bad = gp.zeros((1,), dtype=gp.int32, device="cuda")
            got = _fused.windowed_frames(gp.from_numpy(y, "cuda"), window, hop=hop, pad=pad,
                                         pad_mode=mode, n_frames=rows, bad=bad)  # fmt: skip
            if hop > n_fft:
                assert got is None
                return
            assert got is not None and int(bad.to_numpy()[0]) == 1, (at, value)
    clean = gp.zeros((1,), dtype=gp.int32, device="cuda")
    y = RNG.standard_normal((2, n)).astype(np.float32)
    _fused.windowed_frames(gp.from_numpy(y, "cuda"), window, hop=hop, pad=pad, pad_mode=mode,
                           n_frames=rows, bad=clean)  # fmt: skip
    assert int(clean.to_numpy()[0]) == 0
    with pytest.raises(ValueError, match="stft: y contains NaN"):
        y[0, -1] = np.nan
        audio.stft(gp.from_numpy(y, "cuda"), n_fft=n_fft, hop_length=hop, center=center,
                   pad_mode=mode)  # fmt: skip


def test_windowed_frames_of_a_long_signal_index_exactly() -> None:
    """Quotients up to 2**22 rows and 2**31 elements: the float reciprocal's correction."""
    n, hop, n_fft = 16000 * 3600, 16, 400  # an hour at hop 16: 3.6 M frames, 1.44 G samples
    y = (np.arange(n, dtype=np.float64) % 4096).astype(np.float32)  # exact in float32
    window = np.ones(n_fft, np.float32)
    rows = 1 + n // hop
    got = _fused.windowed_frames(gp.from_numpy(y, "cuda"), gp.from_numpy(window, "cuda"),
                                 hop=hop, pad=200, pad_mode="constant",
                                 n_frames=rows)  # fmt: skip
    assert got is not None
    host = np.pad(y, 200)
    for start in (0, 1, 2**20 - 3, 2**21 + 5, rows - 4):
        part = got[start : start + 4].to_numpy()
        want = np.stack([host[(start + r) * hop : (start + r) * hop + n_fft] for r in range(4)])
        np.testing.assert_array_equal(part[: len(want)], want[: len(part)])


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "symmetric"])
@pytest.mark.parametrize("center", [True, False])
def test_stft_and_mel_on_cuda_match_the_cpu(mode: str, center: bool) -> None:
    y = np.stack(list(all_signals(3).values()))
    kwargs: dict[str, Any] = {"n_fft": 400, "hop_length": 160, "center": center, "pad_mode": mode}
    got = audio.stft(gp.from_numpy(y, "cuda"), **kwargs).to_numpy()
    assert_close_scaled(got, audio.stft(y.astype(np.float64), **kwargs), rtol=1e-5, floor=5e-6)
    mel = audio.melspectrogram(y=gp.from_numpy(y, "cuda"), sr=SR, n_mels=80, **kwargs)
    want = audio.melspectrogram(y=y.astype(np.float64), sr=SR, n_mels=80, **kwargs)
    assert_close_scaled(mel.to_numpy(), want, rtol=1e-5, floor=5e-6)


def test_power_is_the_squared_magnitude() -> None:
    z = RNG.standard_normal((3, 50, 201)) + 1j * RNG.standard_normal((3, 50, 201))
    for dtype in (np.complex64, np.complex128):
        x = gp.from_numpy(z.astype(dtype), "cuda")
        for view in (x, x[:, :-1, :], gp.matrix_transpose(x)):
            got = _fused.power(view)
            assert got is not None
            want = np.abs(view.to_numpy().astype(np.complex128)) ** 2
            np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-6 if dtype == np.complex64
                                       else 1e-13)  # fmt: skip


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("n", [1, 2, 3, 201, 60001 * 201])
def test_packed_power_kernel_odd_and_even_sizes(dtype: type, n: int) -> None:
    """The two-values-per-thread kernel (complex64) and its odd last value (the 600 s
    benchmark's 60001 x 201 spectrum has an odd count)."""
    from pygpukit.audio import _power

    z = (RNG.standard_normal(n) + 1j * RNG.standard_normal(n)).astype(dtype)
    real = gp.float32 if dtype == np.complex64 else gp.float64
    got = _power.power(gp.from_numpy(z, "cuda"), real)
    assert got is not None and got.dtype == real
    want = z.real * z.real + z.imag * z.imag  # (the GPU may fuse it: one rounding apart)
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-6 if dtype == np.complex64
                               else 1e-14)  # fmt: skip


@pytest.mark.parametrize(("shape", "n_fft", "kwargs"),
                         [((16000 * 3,), 400, {"n_mels": 80}),
                          ((2, 3, 5000), 400, {"n_mels": 128, "htk": True, "norm": None}),
                          ((2, 7001), 510, {"n_mels": 40, "fmin": 300.0, "fmax": 2000.0}),
                          ((1, 3000), 766, {"n_mels": 64})])  # fmt: skip
@pytest.mark.filterwarnings("ignore:mel.*filters are empty")
def test_mel_power_kernel_matches_power_and_product(shape: tuple[int, ...], n_fft: int,
                                                    kwargs: dict[str, Any]) -> None:  # fmt: skip
    """The one-kernel mel (each mel summed over its nonzero bins) against |X|^2 and the
    dense product, and against the float64 CPU path; frame counts not a multiple of 32,
    batches, empty mel rows (128 htk mels of 201 bins), fmin/fmax, an odd and an even
    number of bins, and 384 bins (past the kernel's shared memory: the product serves)."""
    from pygpukit.audio import _mel_power

    y = RNG.standard_normal(shape).astype(np.float32)
    args: dict[str, Any] = {"sr": SR, "n_fft": n_fft, "hop_length": 160, **kwargs}
    x = gp.from_numpy(y, "cuda")
    got = audio.melspectrogram(y=x, **args).to_numpy()
    _mel_power.ENABLED = False
    try:
        product = audio.melspectrogram(y=x, **args).to_numpy()
    finally:
        _mel_power.ENABLED = True
    assert got.shape == product.shape
    np.testing.assert_allclose(got, product, rtol=2e-5, atol=1e-6 * float(np.abs(product).max()))
    want = audio.melspectrogram(y=y.astype(np.float64), **args)
    assert_close_scaled(got, want, rtol=1e-5, floor=5e-6)


def test_nan_flag_is_cleared_after_a_bad_call_and_on_other_streams() -> None:
    """The NaN flag outlives calls: after a call that raised, good input passes again; a
    call on a user's stream reads its own verdict (and its result is right)."""
    y = RNG.standard_normal((2, 4000)).astype(np.float32)
    bad = y.copy()
    bad[1, 17] = np.nan
    want = audio.stft(y, n_fft=400, hop_length=160)
    for _ in range(2):
        with pytest.raises(ValueError, match="stft: y contains NaN"):
            audio.stft(gp.from_numpy(bad, "cuda"), n_fft=400, hop_length=160)
        got = audio.stft(gp.from_numpy(y, "cuda"), n_fft=400, hop_length=160)
        assert_close_scaled(got.to_numpy(), want, rtol=1e-5, floor=5e-6)
    stream = gp.cuda.Stream(non_blocking=True)
    with stream:
        x = gp.from_numpy(y, "cuda")
        got = audio.melspectrogram(y=x, sr=SR, n_fft=400, hop_length=160, n_mels=80)
        with pytest.raises(ValueError, match="melspectrogram: y contains NaN"):
            audio.melspectrogram(y=gp.from_numpy(bad, "cuda"), sr=SR, n_fft=400,
                                 hop_length=160)  # fmt: skip
        again = audio.melspectrogram(y=x, sr=SR, n_fft=400, hop_length=160, n_mels=80)
    mel = audio.melspectrogram(y=y, sr=SR, n_fft=400, hop_length=160, n_mels=80)
    assert_close_scaled(got.to_numpy(), mel, rtol=1e-5, floor=5e-6)
    assert_close_scaled(again.to_numpy(), mel, rtol=1e-5, floor=5e-6)


def test_whisper_log_mel_on_cuda_matches_the_cpu_per_clip() -> None:
    """Each clip floored at its own max - 8: a loud clip beside a quiet one."""
    clips = np.stack(list(all_signals(4).values())[:3]).astype(np.float32)[:, : 16000 * 5]
    clips[1] *= 1e-3
    got = whisper.log_mel_spectrogram(gp.from_numpy(clips, "cuda"))
    want = whisper.log_mel_spectrogram(clips, device="cpu")
    assert got.shape == want.shape == (3, 80, clips.shape[-1] // 160)
    # two float32 FFTs and log10s: 5.3e-5 apart near the floor on the H100 (see test_audio_gpu)
    np.testing.assert_allclose(got.to_numpy(), want, rtol=0, atol=1e-4)
    bad = clips.copy()
    bad[2, 100] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        whisper.log_mel_spectrogram(gp.from_numpy(bad, "cuda"))
