"""hpss and softmask against librosa on noise with clicks (percussive) and tones (harmonic)."""

from __future__ import annotations

import numpy as np
import pytest
from audio_signals import assert_close_scaled, chirp, clicks, noise, sine
from pygpukit import audio

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")


def _mix() -> np.ndarray:
    return np.stack([sine() + clicks(), 0.1 * noise(1) + chirp()])


@pytest.mark.parametrize("kwargs", [
    {}, {"kernel_size": (17, 8)}, {"margin": 2.0}, {"margin": (1.0, 3.0)}, {"power": np.inf},
    {"mask": True}, {"power": 1.0},
], ids=str)  # fmt: skip
def test_hpss_on_spectrograms(kwargs: dict[str, object]) -> None:
    spec = librosa.stft(_mix(), n_fft=512)
    for s in (spec, np.abs(spec)):
        got = audio.decompose.hpss(s, **kwargs)  # type: ignore[arg-type]
        want = librosa.decompose.hpss(s, **kwargs)  # type: ignore[arg-type]
        for g, w in zip(got, want, strict=True):
            assert_close_scaled(g, w)


def test_effects_hpss_signals() -> None:
    y = _mix()
    got = audio.effects.hpss(y, n_fft=1024)
    want = librosa.effects.hpss(y, n_fft=1024)
    for g, w in zip(got, want, strict=True):
        assert_close_scaled(g, w)
    assert_close_scaled(audio.effects.harmonic(y[0]), librosa.effects.harmonic(y[0]))
    assert_close_scaled(audio.effects.percussive(y[0]), librosa.effects.percussive(y[0]))


@pytest.mark.parametrize("split_zeros", [False, True])
def test_softmask(split_zeros: bool) -> None:
    x = np.abs(noise(2)[:1000].reshape(10, 100))
    ref = np.abs(noise(3)[:1000].reshape(10, 100))
    x[0, :5] = ref[0, :5] = 0
    for power in (1.0, 2.0, np.inf):
        got = audio.decompose.softmask(x, ref, power=power, split_zeros=split_zeros)
        want = librosa.util.softmask(x, ref, power=power, split_zeros=split_zeros)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="non-negative"):
        audio.decompose.softmask(-x, ref)
