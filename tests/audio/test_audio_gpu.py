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

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU (pygpukit-cuda)"),
]


def _batch() -> np.ndarray:
    return np.stack(list(all_signals(9).values()))


def test_stft_istft_on_cuda() -> None:
    y = _batch()
    got = audio.stft(gp.from_numpy(y, device="cuda"), n_fft=400, hop_length=160)
    assert isinstance(got, gp.GPUArray) and got.device.type == "cuda"
    assert_close_scaled(got.to_numpy(), librosa.stft(y, n_fft=400, hop_length=160))
    back = audio.istft(got, hop_length=160, n_fft=400, length=y.shape[-1])
    assert back.device.type == "cuda"
    spec = librosa.stft(y, n_fft=400, hop_length=160)
    want = librosa.istft(spec, hop_length=160, length=y.shape[-1])
    assert_close_scaled(back.to_numpy(), want)


def test_log_mel_on_cuda() -> None:
    y = _batch()
    mel = audio.melspectrogram(y=gp.from_numpy(y, device="cuda"), sr=SR, n_fft=400,
                               hop_length=160, n_mels=80)  # fmt: skip
    want = librosa.feature.melspectrogram(y=y, sr=SR, n_fft=400, hop_length=160, n_mels=80)
    assert_close_scaled(mel.to_numpy(), want)
    db = audio.power_to_db(mel, ref=np.max)
    np.testing.assert_allclose(db.to_numpy(), librosa.power_to_db(want, ref=np.max), rtol=1e-5,
                               atol=1e-3)  # fmt: skip
