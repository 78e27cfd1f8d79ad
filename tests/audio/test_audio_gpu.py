"""The audio functions on CUDA arrays against librosa (skips without a CUDA GPU).

These need gp.fft kernels on the CUDA backend (cuFFT); until those land the run names
the missing kernel. Run on the GPU machine: pytest tests/audio/test_audio_gpu.py
"""

from __future__ import annotations

import librosa
import numpy as np
import pygpukit as gp
import pytest
from pygpukit import audio
from signals import SR, all_signals, assert_close_scaled

DEVICE = "cuda"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU (pygpukit-cuda)"),
]


def _batch() -> np.ndarray:
    return np.stack(list(all_signals(9).values()))


def test_stft_istft_on_cuda() -> None:
    y = _batch()
    got = audio.stft(gp.from_numpy(y, device=DEVICE), n_fft=400, hop_length=160)
    assert isinstance(got, gp.GPUArray) and got.device.type == DEVICE
    assert_close_scaled(got.to_numpy(), librosa.stft(y, n_fft=400, hop_length=160))
    back = audio.istft(got, hop_length=160, n_fft=400, length=y.shape[-1])
    assert back.device.type == DEVICE
    spec = librosa.stft(y, n_fft=400, hop_length=160)
    want = librosa.istft(spec, hop_length=160, length=y.shape[-1])
    assert_close_scaled(back.to_numpy(), want)


def test_log_mel_on_cuda() -> None:
    y = _batch()
    mel = audio.melspectrogram(y=gp.from_numpy(y, device=DEVICE), sr=SR, n_fft=400,
                               hop_length=160, n_mels=80)  # fmt: skip
    want = librosa.feature.melspectrogram(y=y, sr=SR, n_fft=400, hop_length=160, n_mels=80)
    assert_close_scaled(mel.to_numpy(), want)
    db = audio.power_to_db(mel, ref=np.max)
    np.testing.assert_allclose(db.to_numpy(), librosa.power_to_db(want, ref=np.max), rtol=1e-5,
                               atol=1e-3)  # fmt: skip


def test_features_pitch_and_effects_on_cuda() -> None:
    y = _batch()[:3]
    cuda = gp.from_numpy(y, device=DEVICE)
    pairs = [
        (audio.feature.mfcc(y=cuda, sr=SR, n_mfcc=13),
         librosa.feature.mfcc(y=y, sr=SR, n_mfcc=13), 1e-4),
        (audio.feature.spectral_centroid(y=cuda, sr=SR),
         librosa.feature.spectral_centroid(y=y, sr=SR), 2e-5),
        (audio.feature.rms(y=cuda), librosa.feature.rms(y=y), 1e-5),
        (audio.feature.zero_crossing_rate(cuda), librosa.feature.zero_crossing_rate(y), 1e-6),
        (audio.resample(cuda, orig_sr=SR, target_sr=8000),
         librosa.resample(y, orig_sr=SR, target_sr=8000, res_type="polyphase"), 1e-5),
        (audio.yin(cuda[:2], fmin=65.0, fmax=2000.0, sr=SR),
         librosa.yin(y[:2], fmin=65.0, fmax=2000.0, sr=SR), 1e-5),
        (audio.onset.onset_strength(y=cuda, sr=SR), librosa.onset.onset_strength(y=y, sr=SR), 1e-4),
    ]  # fmt: skip
    for got, want, rtol in pairs:
        assert isinstance(got, gp.GPUArray) and got.device.type == DEVICE
        assert_close_scaled(got.to_numpy(), want, rtol=rtol)


def test_streaming_stft_on_cuda() -> None:
    y = _batch()[1]
    stream = audio.StreamingSTFT(n_fft=400, hop_length=160)
    parts = [
        stream.push(gp.from_numpy(y[i : i + 777], device=DEVICE)) for i in range(0, y.size, 777)
    ]
    parts.append(stream.flush())
    got = np.concatenate([p.to_numpy() for p in parts], axis=-1)
    assert_close_scaled(got, librosa.stft(y, n_fft=400, hop_length=160))
