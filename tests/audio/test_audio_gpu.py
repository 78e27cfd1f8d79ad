"""The audio functions on CUDA arrays against the same functions on NumPy input (the CPU
backend, itself checked against librosa by the other tests here). Skips without a GPU.

Needs neither librosa nor scipy, so it runs on a bare GPU machine. The spectral
functions also need the cuda backend's FFT kernels (fft_r2c/fft_c2r) and complex-part
kernels (real, imag, angle); until those land, the failures name the missing kernel.
Run: pytest tests/audio/test_audio_gpu.py
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import SR, all_signals, assert_close_scaled
from pygpukit import audio

DEVICE = "cuda"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU (pygpukit-cuda)"),
]


def _batch() -> np.ndarray:
    return np.stack(list(all_signals(9).values()))


# cuFFT and the CPU's float32 FFT each round to about 1e-6 of a frame's peak, so two of
# them differ by a few times that (H100: up to 3e-6 of the peak in hpss's output)
CUDA_FLOOR = 5e-6


def _same_on_both(fn: Callable[[Any], Any], y: np.ndarray, rtol: float = 1e-5) -> None:
    """fn on a CUDA array stays there and matches fn on the NumPy array."""
    got = fn(gp.from_numpy(y, device=DEVICE))
    want = fn(y)
    got_list = got if isinstance(got, tuple) else (got,)
    want_list = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got_list, want_list, strict=True):
        assert isinstance(g, gp.GPUArray) and g.device.type == DEVICE
        host = g.to_numpy()
        if host.dtype == bool:
            np.testing.assert_array_equal(host, w)
        else:
            assert_close_scaled(host, np.asarray(w), rtol=rtol, floor=CUDA_FLOOR)


CASES: dict[str, tuple[Callable[[Any], Any], float]] = {
    "stft": (lambda y: audio.stft(y, n_fft=400, hop_length=160), 1e-5),
    "istft": (
        lambda y: audio.istft(
            audio.stft(y, n_fft=400, hop_length=160), hop_length=160, length=y.shape[-1]
        ),
        1e-5,
    ),
    "melspectrogram": (
        lambda y: audio.melspectrogram(y=y, sr=SR, n_fft=400, hop_length=160, n_mels=80),
        1e-5,
    ),
    "power_to_db": (
        lambda y: audio.power_to_db(audio.melspectrogram(y=y, sr=SR), ref=np.max),
        1e-4,
    ),
    "mfcc": (lambda y: audio.feature.mfcc(y=y, sr=SR, n_mfcc=13), 1e-4),
    "delta": (lambda y: audio.feature.delta(audio.feature.mfcc(y=y, sr=SR)), 1e-4),
    "spectral_centroid": (lambda y: audio.feature.spectral_centroid(y=y, sr=SR), 2e-5),
    "spectral_rolloff": (lambda y: audio.feature.spectral_rolloff(y=y, sr=SR), 1e-5),
    # near-silent frames (power ~1e-11 in every bin) make flatness a ratio of two tiny
    # means: the two FFTs' roundoff moved it by 3e-4 there on the H100
    "spectral_flatness": (lambda y: audio.feature.spectral_flatness(y=y), 1e-3),
    "rms": (lambda y: audio.feature.rms(y=y), 1e-5),
    "zero_crossing_rate": (lambda y: audio.feature.zero_crossing_rate(y), 1e-6),
    "chroma_stft": (lambda y: audio.feature.chroma_stft(y=y, sr=SR, tuning=0.0), 1e-5),
    "resample": (lambda y: audio.resample(y, orig_sr=SR, target_sr=8000), 1e-5),
    "preemphasis": (lambda y: audio.effects.preemphasis(y), 1e-6),
    "energy_vad": (lambda y: audio.effects.energy_vad(y, top_db=40), 0.0),
    "yin": (lambda y: audio.yin(y[:2], fmin=65.0, fmax=2000.0, sr=SR), 1e-5),
    "onset_strength": (lambda y: audio.onset.onset_strength(y=y, sr=SR), 1e-4),
    "hpss": (lambda y: audio.decompose.hpss(audio.stft(y[:2], n_fft=512)), 1e-5),
    # magnitudes only: the vocoder's running phase accumulates each FFT's roundoff (the
    # H100's phases drifted ~1e-3 rad from the CPU's), its magnitudes do not
    "phase_vocoder": (
        lambda y: (
            gp.abs(audio.phase_vocoder(audio.stft(y[:2], n_fft=512), rate=1.3))
            if isinstance(y, gp.GPUArray)
            else np.abs(audio.phase_vocoder(audio.stft(y[:2], n_fft=512), rate=1.3))
        ),
        1e-4,
    ),
    "cqt": (lambda y: audio.cqt(y[:2], sr=SR, n_bins=60, fmin=55.0), 1e-5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_function_on_cuda_matches_cpu(name: str) -> None:
    fn, rtol = CASES[name]
    _same_on_both(fn, _batch(), rtol)


def test_streaming_stft_on_cuda() -> None:
    y = _batch()[1]
    stream = audio.StreamingSTFT(n_fft=400, hop_length=160)
    parts = [
        stream.push(gp.from_numpy(y[i : i + 777], device=DEVICE)) for i in range(0, y.size, 777)
    ]
    parts.append(stream.flush())
    got = np.concatenate([p.to_numpy() for p in parts], axis=-1)
    assert_close_scaled(got, audio.stft(y, n_fft=400, hop_length=160))


def test_pyin_on_cuda() -> None:
    y = _batch()[:2]
    f0, voiced, _ = audio.pyin(gp.from_numpy(y, device=DEVICE), fmin=65.0, fmax=1000.0, sr=SR,
                               frame_length=1024)  # fmt: skip
    want_f0, want_voiced, _ = audio.pyin(y, fmin=65.0, fmax=1000.0, sr=SR, frame_length=1024)
    np.testing.assert_array_equal(voiced.to_numpy(), want_voiced)
    np.testing.assert_allclose(f0.to_numpy(), want_f0, rtol=1e-5, equal_nan=True)
