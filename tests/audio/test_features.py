"""Spectral features, zero-crossing rate, RMS, MFCC and delta against librosa."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import SR, all_signals, assert_close_scaled, chirp, noise
from pygpukit import audio

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")

SIGNALS = all_signals(11)
BATCH = np.stack(list(SIGNALS.values()))  # sine, chirp, noise, clicks, silence


@pytest.mark.parametrize("name", ["spectral_centroid", "spectral_bandwidth", "spectral_rolloff"])
@pytest.mark.parametrize(("n_fft", "hop"), [(2048, 512), (400, 160)])
def test_spectral_shape_features(name: str, n_fft: int, hop: int) -> None:
    want = getattr(librosa.feature, name)(y=BATCH, sr=SR, n_fft=n_fft, hop_length=hop)
    got = getattr(audio.feature, name)(y=BATCH, sr=SR, n_fft=n_fft, hop_length=hop)
    # A pure sine's spread is set by the STFT's roundoff floor far from the tone (weighted by
    # the squared distance), which float32 (ours) and float64-then-rounded (librosa) FFTs
    # put at different levels: the sine is held to 1 Hz, the other signals to rtol 2e-5
    # (sums of ~1000 float32 terms).
    np.testing.assert_allclose(got[0], want[0], rtol=2e-5, atol=1.0)
    assert_close_scaled(got[1:], want[1:], rtol=2e-5)


def test_spectral_features_from_s_and_options() -> None:
    mag = np.abs(librosa.stft(BATCH, n_fft=512))
    spread = dict(S=mag, sr=SR, p=3, norm=False)
    want = librosa.feature.spectral_bandwidth(**spread)  # type: ignore[arg-type]
    np.testing.assert_allclose(audio.feature.spectral_bandwidth(**spread)[1:], want[1:], rtol=2e-5)  # type: ignore[arg-type]
    want = librosa.feature.spectral_rolloff(S=mag, sr=SR, roll_percent=0.5)
    assert_close_scaled(audio.feature.spectral_rolloff(S=mag, sr=SR, roll_percent=0.5), want)
    with pytest.raises(ValueError, match="roll_percent must be in"):
        audio.feature.spectral_rolloff(S=mag, roll_percent=1.5)
    with pytest.raises(ValueError, match="non-negative magnitudes"):
        audio.feature.spectral_centroid(S=-mag)


@pytest.mark.parametrize("power", [1.0, 2.0])
def test_spectral_flatness(power: float) -> None:
    want = librosa.feature.spectral_flatness(y=BATCH, power=power)
    got = audio.feature.spectral_flatness(y=BATCH, power=power)
    # flatness lies in [0, 1]; a sine's (~1e-6) is the ratio of roundoff floors, so an
    # absolute 1e-5 is the stated bar there
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize(("frame_length", "hop"), [(2048, 512), (400, 160), (11, 3)])
def test_zero_crossing_rate_and_rms(center: bool, frame_length: int, hop: int) -> None:
    kwargs = dict(frame_length=frame_length, hop_length=hop, center=center)
    want = librosa.feature.zero_crossing_rate(BATCH, **kwargs)  # type: ignore[arg-type]
    got = audio.feature.zero_crossing_rate(BATCH, **kwargs)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, want, rtol=1e-6)  # counts / length: float32 vs float64
    want = librosa.feature.rms(y=BATCH, **kwargs)  # type: ignore[arg-type]
    np.testing.assert_allclose(audio.feature.rms(y=BATCH, **kwargs), want, rtol=1e-5, atol=1e-6)  # type: ignore[arg-type]


@pytest.mark.parametrize("frame_length", [512, 511])
def test_rms_from_spectrogram(frame_length: int) -> None:
    spec = librosa.stft(BATCH, n_fft=frame_length)
    for s in (spec, np.abs(spec)):
        want = librosa.feature.rms(S=s, frame_length=frame_length)
        assert_close_scaled(audio.feature.rms(S=s, frame_length=frame_length), want)
    with pytest.raises(ValueError, match="frame_length=1024 needs 513"):
        audio.feature.rms(S=spec, frame_length=1024)


@pytest.mark.parametrize(("n_mfcc", "dct_type", "norm", "lifter"), [
    (20, 2, "ortho", 0), (13, 2, None, 22), (40, 3, "ortho", 0), (13, 3, None, 0), (20, 1, None, 0),
])  # fmt: skip
def test_mfcc_from_log_mel(n_mfcc: int, dct_type: int, norm: str | None, lifter: float) -> None:
    log_mel = librosa.power_to_db(librosa.feature.melspectrogram(y=BATCH, sr=SR, n_mels=64))
    kwargs = dict(S=log_mel, n_mfcc=n_mfcc, dct_type=dct_type, norm=norm, lifter=lifter)
    assert_close_scaled(audio.feature.mfcc(**kwargs), librosa.feature.mfcc(**kwargs))  # type: ignore[arg-type]


def test_mfcc_from_signal_whisper_sizes() -> None:
    y = np.stack([chirp(), noise(12)])
    kwargs = dict(y=y, sr=SR, n_mfcc=13, n_fft=400, hop_length=160, n_mels=40)
    want = librosa.feature.mfcc(**kwargs)  # type: ignore[arg-type]
    # dB of float32 mel powers: 1e-5 relative on the largest coefficient (a few hundred dB)
    assert_close_scaled(audio.feature.mfcc(**kwargs), want, rtol=1e-4)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["interp", "mirror", "nearest", "constant", "wrap"])
@pytest.mark.parametrize(("width", "order"), [(9, 1), (9, 2), (3, 1), (5, 2)])
def test_delta(mode: str, width: int, order: int) -> None:
    data = librosa.feature.mfcc(y=BATCH[:3], sr=SR, n_mfcc=13)
    want = librosa.feature.delta(data, width=width, order=order, mode=mode)
    got = audio.feature.delta(data, width=width, order=order, mode=mode)
    assert_close_scaled(got, want)


def test_delta_bad_arguments() -> None:
    data = np.ones((13, 5), np.float32)
    with pytest.raises(ValueError, match="odd integer >= 3"):
        audio.feature.delta(data, width=4)
    with pytest.raises(ValueError, match="width=9 cannot exceed the 5 frames"):
        audio.feature.delta(data)
    with pytest.raises(ValueError, match="order must be a positive integer"):
        audio.feature.delta(data, width=3, order=0)


def test_features_stay_on_gpuarray() -> None:
    y = gp.from_numpy(BATCH)
    for fn in (audio.feature.spectral_centroid, audio.feature.rms, audio.feature.mfcc):
        out = fn(y=y)
        assert isinstance(out, gp.GPUArray) and out.device == y.device
    assert isinstance(audio.feature.zero_crossing_rate(y), gp.GPUArray)
