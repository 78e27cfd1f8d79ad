"""Onset strength and detection against librosa on clicks and tone bursts."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import SR, assert_close_scaled, clicks, noise
from pygpukit import audio

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")


def _bursts(seed: int) -> np.ndarray:
    """Five Hann-shaped 800 Hz bursts over faint noise."""
    y = 0.001 * noise(seed, 1.0)
    burst = (np.sin(2 * np.pi * 800 * np.arange(400) / SR) * np.hanning(400)).astype(np.float32)
    for k in range(5):
        y[k * 3000 + 500 : k * 3000 + 900] += burst
    return y


@pytest.mark.parametrize("kwargs", [
    {}, {"lag": 2, "max_size": 3}, {"max_size": 4, "detrend": True}, {"center": False},
    {"aggregate": np.max}, {"n_fft": 1024, "hop_length": 256, "n_mels": 64},
], ids=str)  # fmt: skip
def test_onset_strength(kwargs: dict[str, object]) -> None:
    y = np.stack([_bursts(1), clicks(1.0)])
    want = librosa.onset.onset_strength(y=y, sr=SR, **kwargs)  # type: ignore[arg-type]
    got = audio.onset.onset_strength(y=y, sr=SR, **kwargs)  # type: ignore[arg-type]
    # log-mel (dB) differences of float32 powers: 1e-5 relative to the envelope's peak
    assert_close_scaled(got, want, rtol=1e-4)


@pytest.mark.parametrize("units", ["frames", "samples", "time"])
@pytest.mark.parametrize("backtrack", [False, True])
def test_onset_detect(units: str, backtrack: bool) -> None:
    for y in (_bursts(2), clicks(1.0, every=0.15)):
        want = librosa.onset.onset_detect(y=y, sr=SR, units=units, backtrack=backtrack)
        got = audio.onset.onset_detect(y=y, sr=SR, units=units, backtrack=backtrack)
        np.testing.assert_array_equal(got, want)


def test_onset_detect_batch_mask_and_gpuarray() -> None:
    y = np.stack([_bursts(3), clicks(1.0)])
    env = librosa.onset.onset_strength(y=y, sr=SR)
    mask = audio.onset.onset_detect(onset_envelope=env, sr=SR, sparse=False)
    assert mask.shape == env.shape and mask.dtype == bool
    for i in range(2):
        want = librosa.onset.onset_detect(onset_envelope=env[i], sr=SR)
        np.testing.assert_array_equal(np.flatnonzero(mask[i]), want)
    got = audio.onset.onset_detect(y=gp.from_numpy(y[0]), sr=SR)
    assert isinstance(got, gp.GPUArray)
    with pytest.raises(ValueError, match="sparse=False for a batch"):
        audio.onset.onset_detect(onset_envelope=env, sr=SR)


def test_silence_has_no_onsets() -> None:
    assert audio.onset.onset_detect(y=np.zeros(SR, np.float32), sr=SR).size == 0
