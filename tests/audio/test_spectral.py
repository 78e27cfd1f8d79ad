"""stft, istft, magphase and melspectrogram against librosa on synthesized signals."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import SR, all_signals, assert_close_scaled, chirp, noise
from pygpukit import audio

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")

SIGNALS = all_signals()


@pytest.mark.parametrize("kind", sorted(SIGNALS))
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("pad_mode", ["constant", "reflect", "edge", "symmetric"])
def test_stft_matches_librosa(kind: str, center: bool, pad_mode: str) -> None:
    y = SIGNALS[kind]
    kwargs = dict(n_fft=512, hop_length=128, center=center, pad_mode=pad_mode)
    want = librosa.stft(y, **kwargs)  # type: ignore[arg-type]
    got = audio.stft(y, **kwargs)  # type: ignore[arg-type]
    assert isinstance(got, np.ndarray) and got.dtype == np.complex64
    assert_close_scaled(got, want)


@pytest.mark.parametrize(("n_fft", "hop", "win", "window"), [
    (400, 160, None, "hann"), (2048, None, None, "hamming"), (512, 100, 300, "blackman"),
    (256, 64, 200, ("kaiser", 8.0)), (64, 16, None, "boxcar"), (401, 99, 333, "hann"),
])  # fmt: skip
def test_stft_sizes_and_windows(
    n_fft: int, hop: int | None, win: int | None, window: object
) -> None:
    y = chirp()
    kwargs = dict(n_fft=n_fft, hop_length=hop, win_length=win, window=window)
    assert_close_scaled(audio.stft(y, **kwargs), librosa.stft(y, **kwargs))  # type: ignore[arg-type]


def test_stft_float64_and_dtype_argument() -> None:
    y = noise(1).astype(np.float64)
    got = audio.stft(y, n_fft=256)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, librosa.stft(y, n_fft=256), rtol=1e-10, atol=1e-10)
    assert audio.stft(y.astype(np.float32), n_fft=256, dtype=np.complex128).dtype == np.complex128


def test_stft_batch_equals_each_signal() -> None:
    batch = np.stack([np.stack(list(SIGNALS.values()))] * 2)  # (2, 5, n)
    got = audio.stft(batch, n_fft=400, hop_length=160)
    want = librosa.stft(batch, n_fft=400, hop_length=160)
    assert got.shape == want.shape == (2, 5, 201, got.shape[-1])
    assert_close_scaled(got, want)
    for i in range(5):
        np.testing.assert_array_equal(got[1, i], audio.stft(batch[1, i], n_fft=400, hop_length=160))


def test_gpuarray_in_gpuarray_out() -> None:
    y = gp.from_numpy(np.stack([chirp(), noise(2)]))
    got = audio.stft(y, n_fft=400, hop_length=160)
    assert isinstance(got, gp.GPUArray) and got.device == y.device
    assert_close_scaled(got.to_numpy(), librosa.stft(y.to_numpy(), n_fft=400, hop_length=160))


@pytest.mark.parametrize(("n_fft", "hop", "window", "center"), [
    (400, 160, "hann", True), (512, 128, "hann", False), (2048, 512, "hamming", True),
    (401, 100, "blackman", True), (256, 64, ("tukey", 0.5), True),
])  # fmt: skip
def test_istft_matches_librosa(n_fft: int, hop: int, window: object, center: bool) -> None:
    y = np.stack([chirp(), noise(3)])
    spec = librosa.stft(y, n_fft=n_fft, hop_length=hop, window=window, center=center)
    kwargs = dict(n_fft=n_fft, hop_length=hop, window=window, center=center)
    want = librosa.istft(spec, **kwargs)  # type: ignore[arg-type]
    got = audio.istft(spec, **kwargs)  # type: ignore[arg-type]
    assert got.dtype == np.float32 and got.shape == want.shape
    # without centring, the first and last samples sit under one frame's window tail, whose
    # square is ~1e-8: both divide float32 roundoff by it, so only the interior is compared
    inner = slice(None) if center else slice(n_fft // 2, -n_fft // 2)
    assert_close_scaled(got[..., inner], want[..., inner])
    for length in (y.shape[-1], y.shape[-1] - 37):
        want = librosa.istft(spec, length=length, **kwargs)  # type: ignore[arg-type]
        got = audio.istft(spec, length=length, **kwargs)  # type: ignore[arg-type]
        assert_close_scaled(got[..., inner], want[..., inner])


def test_istft_round_trip() -> None:
    y = noise(4)
    back = audio.istft(audio.stft(y, n_fft=512, hop_length=128), hop_length=128, length=y.size)
    np.testing.assert_allclose(back, y, rtol=1e-5, atol=1e-5)


def test_istft_longer_length_pads_with_zeros() -> None:
    y = noise(5)
    spec = librosa.stft(y, n_fft=256, hop_length=64)
    got = audio.istft(spec, hop_length=64, length=y.size + 1000)
    want = librosa.istft(spec, hop_length=64, length=y.size + 1000)
    # past the signal the window overlap fades to ~0 and both divide float32 roundoff by
    # it; the reconstructed span is held to the usual tolerance, the padding must be 0
    assert_close_scaled(got[: y.size], want[: y.size])
    np.testing.assert_array_equal(got[y.size + 256 :], 0)


@pytest.mark.parametrize("power", [1.0, 2.0])
def test_magphase(power: float) -> None:
    spec = librosa.stft(chirp(), n_fft=256)
    spec[:, 0] = 0  # exact zeros: phase 1 there
    mag, phase = audio.magphase(spec, power=power)
    want_mag, want_phase = librosa.magphase(spec, power=power)
    np.testing.assert_allclose(mag, want_mag, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(phase, want_phase, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(audio.abs2(spec), np.abs(spec) ** 2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", sorted(SIGNALS))
@pytest.mark.parametrize(("n_fft", "hop", "n_mels", "power"), [
    (400, 160, 80, 2.0), (400, 160, 128, 2.0), (2048, 512, 128, 1.0), (1024, 256, 64, 2.0),
])  # fmt: skip
@pytest.mark.filterwarnings("ignore:.*[Ee]mpty.*:UserWarning")
def test_melspectrogram_matches_librosa(kind: str, n_fft: int, hop: int, n_mels: int,
                                        power: float) -> None:  # fmt: skip
    y = SIGNALS[kind]
    kwargs = dict(sr=SR, n_fft=n_fft, hop_length=hop, n_mels=n_mels, power=power)
    want = librosa.feature.melspectrogram(y=y, **kwargs)  # type: ignore[arg-type]
    got = audio.feature.melspectrogram(y=y, **kwargs)  # type: ignore[arg-type]
    assert got.dtype == np.float32
    assert_close_scaled(got, want)


def test_melspectrogram_from_s_and_htk() -> None:
    y = np.stack([chirp(), noise(6)])
    power = np.abs(librosa.stft(y, n_fft=512)) ** 2
    kwargs = dict(sr=SR, n_mels=40, htk=True, norm=None, fmin=50.0, fmax=7000.0)
    want = librosa.feature.melspectrogram(S=power, **kwargs)  # type: ignore[arg-type]
    assert_close_scaled(audio.melspectrogram(S=power, **kwargs), want)  # type: ignore[arg-type]
