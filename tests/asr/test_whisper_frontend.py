"""Whisper's log-mel front end against a float64 NumPy reference written from openai-whisper's
definition, and its mel bank against librosa's; batches, padding, pad_or_trim, bad input."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.asr import whisper
from whisper_reference import reference_log_mel, slaney_mel_bank

SR = 16000
# Whisper computes on the default device. On the CPU our float32 FFT stays within 2e-5 of the
# float64 reference in (log10 + 4) / 4 units; cuFFT's float32 roundoff, amplified by the log
# in bins near the floor, reached 5.3e-5 on the H100.
ON_GPU = gp.asarray(np.zeros(1, np.float32)).device.type != "cpu"
ATOL = 1e-4 if ON_GPU else 2e-5


def _signals(seed: int, seconds: float = 1.3) -> dict[str, np.ndarray]:
    t = np.arange(int(seconds * SR)) / SR
    rng = np.random.default_rng(seed)
    clicks = np.zeros_like(t)
    clicks[:: SR // 7] = 0.9
    sweep = 2 * np.pi * (100 * t + (6000 - 100) * t**2 / (2 * seconds))
    signals = {
        "sine": 0.4 * np.sin(2 * np.pi * 437.0 * t),
        "chirp": 0.5 * np.sin(sweep),
        "noise": 0.2 * rng.standard_normal(t.size),
        "clicks": clicks,
        "silence": np.zeros_like(t),
    }
    return {k: v.astype(np.float32) for k, v in signals.items()}


@pytest.mark.parametrize("n_mels", [80, 128])
@pytest.mark.parametrize("kind", ["sine", "chirp", "noise", "clicks", "silence"])
def test_log_mel_matches_float64_reference(kind: str, n_mels: int) -> None:
    audio = _signals(1)[kind]
    got = whisper.log_mel_spectrogram(audio, n_mels)
    want = reference_log_mel(audio, n_mels)
    assert got.shape == want.shape == (n_mels, audio.size // 160)
    assert got.dtype == np.float32
    # float32 FFT roundoff is relative to each frame's energy; bins 8 decades below the
    # loudest (the floor) carry it amplified by the log, so 2e-5 in (log10 + 4) / 4 units
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)


def test_mel_bank_is_librosas_slaney_bank() -> None:
    for n_mels in (80, 128):
        # the reference's own bank (used by every other test here) is the same Slaney bank
        np.testing.assert_allclose(whisper.mel_filters(n_mels), slaney_mel_bank(n_mels),
                                   rtol=1e-5, atol=1e-7)  # fmt: skip
    with pytest.raises(ValueError, match="80 or 128"):
        whisper.mel_filters(64)
    librosa = pytest.importorskip("librosa")  # absent on the GPU machine
    for n_mels in (80, 128):
        want = librosa.filters.mel(sr=SR, n_fft=400, n_mels=n_mels, dtype=np.float64)
        np.testing.assert_allclose(slaney_mel_bank(n_mels), want, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(whisper.mel_filters(n_mels), want, rtol=1e-5, atol=1e-7)


def test_batch_gives_each_clip_what_it_gets_alone() -> None:
    clips = _signals(2)
    batch = np.stack([clips["noise"], 0.01 * clips["sine"], clips["silence"]])
    got = whisper.log_mel_spectrogram(batch)
    assert got.shape == (3, 80, batch.shape[1] // 160)
    for row, clip in zip(got, batch, strict=True):
        alone = whisper.log_mel_spectrogram(clip)
        if ON_GPU:  # cuFFT may pick another algorithm for another batch count (6e-8 seen)
            np.testing.assert_allclose(row, alone, rtol=0, atol=1e-6)
        else:
            np.testing.assert_array_equal(row, alone)
        np.testing.assert_allclose(row, reference_log_mel(clip, 80), rtol=0, atol=ATOL)


def test_padding_and_pad_or_trim_give_30_second_windows() -> None:
    audio = _signals(3)["noise"]
    got = whisper.log_mel_spectrogram(audio, padding=whisper.N_SAMPLES)
    want = reference_log_mel(audio, 80, padding=whisper.N_SAMPLES)
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)
    window = whisper.pad_or_trim(got, whisper.N_FRAMES)
    assert window.shape == (80, whisper.N_FRAMES)
    np.testing.assert_array_equal(window, got[:, : whisper.N_FRAMES])
    short = whisper.pad_or_trim(audio)
    assert short.shape == (whisper.N_SAMPLES,)
    np.testing.assert_array_equal(short[: audio.size], audio)
    assert not short[audio.size :].any()


def test_gpuarray_input_stays_a_gpuarray() -> None:
    import pygpukit as gp

    audio = _signals(4)["chirp"]
    got = whisper.log_mel_spectrogram(gp.from_numpy(audio))
    assert isinstance(got, gp.GPUArray)
    np.testing.assert_array_equal(got.to_numpy(), whisper.log_mel_spectrogram(audio))


def test_pcm_integers_are_scaled_like_soundfile() -> None:
    audio = _signals(5)["sine"]
    pcm = np.round(audio * 32767).astype(np.int16)
    got = whisper.log_mel_spectrogram(pcm)
    np.testing.assert_allclose(got, reference_log_mel(pcm / 32768.0, 80), rtol=0, atol=ATOL)


@pytest.mark.parametrize(
    ("audio", "kwargs", "error", "match"),
    [
        (np.zeros(16000, np.float32), {"sample_rate": 44100}, ValueError, "16000 Hz"),
        (np.zeros((16000, 2), np.float32), {}, ValueError, "channels"),
        (np.zeros((2, 3, 16000), np.float32), {}, ValueError, "mono"),
        (np.zeros(0, np.float32), {}, ValueError, "empty"),
        (np.array([0.0, np.nan] * 800, np.float32), {}, ValueError, "NaN"),
        (np.array([0.0, np.inf] * 800, np.float32), {}, ValueError, "infinite"),
        (np.array(["a"] * 800), {}, TypeError, "real samples"),
        (np.zeros(16000, np.float32), {"sample_rate": 16000.0}, TypeError, "int"),
    ],
    ids=["rate", "stereo", "3d", "empty", "nan", "inf", "strings", "float-rate"],
)
def test_bad_audio_is_refused_clearly(
    audio: np.ndarray, kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        whisper.log_mel_spectrogram(audio, **kwargs)  # type: ignore[arg-type]
