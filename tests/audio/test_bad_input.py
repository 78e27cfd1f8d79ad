"""Bad input to the audio functions raises a clear ValueError / TypeError naming the problem."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from audio_signals import noise
from pygpukit import audio
from pygpukit.audio import io as audio_io


def test_n_fft_longer_than_signal_without_centring() -> None:
    with pytest.raises(ValueError, match=r"n_fft=2048 is longer than the signal \(1000 samples\)"):
        audio.stft(noise(0)[:1000], n_fft=2048, center=False)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_samples(bad: float) -> None:
    y = noise(1)
    y[10] = bad
    with pytest.raises(ValueError, match="stft: y contains NaN or infinite samples"):
        audio.stft(y)
    with pytest.raises(ValueError, match="melspectrogram: y contains NaN"):
        audio.melspectrogram(y=y, sr=16000)


def test_empty_and_zero_dim_signals() -> None:
    with pytest.raises(ValueError, match="empty signal"):
        audio.stft(np.zeros(0, np.float32))
    with pytest.raises(ValueError, match="0-d"):
        audio.stft(np.array(1.0, np.float32))


def test_wrong_types() -> None:
    with pytest.raises(TypeError, match=r"y must be a numpy\.ndarray or a pygpukit GPUArray"):
        audio.stft([0.0, 1.0])
    with pytest.raises(TypeError, match="real floating-point signal, got int16"):
        audio.stft(np.ones(4096, np.int16))
    with pytest.raises(TypeError, match="istft: stft_matrix must be complex"):
        audio.istft(np.ones((201, 4), np.float32))
    with pytest.raises(TypeError, match="hop_length must be an int"):
        audio.stft(noise(2), hop_length=12.5)  # type: ignore[arg-type]


def test_bad_sizes_and_modes() -> None:
    with pytest.raises(ValueError, match="win_length=600 must be <= n_fft=400"):
        audio.stft(noise(3), n_fft=400, win_length=600)
    with pytest.raises(ValueError, match="hop_length must be >= 1"):
        audio.stft(noise(3), hop_length=0)
    with pytest.raises(ValueError, match="pad_mode must be one of"):
        audio.stft(noise(3), pad_mode="wrap")
    with pytest.raises(ValueError, match="unknown window"):
        audio.stft(noise(3), window="nonesuch")


def test_wrong_sample_rate() -> None:
    with pytest.raises(ValueError, match="sr must be a positive sample rate, got -16000"):
        audio.melspectrogram(y=noise(4), sr=-16000)
    with pytest.raises(TypeError, match="sr must be a number"):
        audio.melspectrogram(y=noise(4), sr="16k")  # type: ignore[arg-type]


def test_melspectrogram_needs_input() -> None:
    with pytest.raises(ValueError, match="give an audio signal y or a spectrogram S"):
        audio.melspectrogram(sr=16000)


def test_stereo_where_mono_is_wanted() -> None:
    stereo = np.stack([noise(5), noise(6)])
    with pytest.raises(ValueError, match=r"onset_detect: y must be mono .* got shape \(2, 8000\)"):
        audio.onset.onset_detect(y=stereo, sr=16000)


def test_n_fft_longer_than_signal_with_centring_warns_like_librosa() -> None:
    with pytest.warns(UserWarning, match="n_fft=2048 is too large for input signal of length=1000"):
        audio.stft(noise(7)[:1000], n_fft=2048)


@pytest.mark.parametrize(
    "body",
    [b"RIFF\x10\x00\x00\x00WAVEjunkjunkjunk", b"RIFF\x04\x00\x00\x00WAVE", b"not a wav"],
    ids=["chunk-past-end", "no-chunks", "no-riff"],
)
def test_corrupt_wav_names_the_file_with_the_stdlib_reader(
    body: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the GPU machine has no soundfile, so the stdlib `wave` reader must refuse these too
    monkeypatch.setattr(audio_io, "_soundfile", lambda: None)
    bad = tmp_path / "bad.wav"
    bad.write_bytes(body)
    with pytest.raises(ValueError, match=r"bad\.wav"):
        audio.load(bad)
