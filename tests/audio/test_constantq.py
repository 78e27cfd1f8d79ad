"""cqt and chroma_cqt against librosa (res_type="polyphase", the same octave resampler)."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import assert_close_scaled, chirp, clicks, noise, sine
from pygpukit import audio

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")

SR = 22050
BATCH = np.stack([sine(440.0, 1.0, SR), chirp(100.0, 3000.0, 1.0, SR), noise(1, 1.0, SR),
                  clicks(1.0, 0.2, SR)])  # fmt: skip


@pytest.mark.parametrize("kwargs", [
    {},
    {"hop_length": 256, "n_bins": 60, "fmin": 55.0, "filter_scale": 0.8, "norm": 2,
     "scale": False, "sr": 16000},
    {"sr": 44100, "hop_length": 1024, "n_bins": 36, "fmin": 110.0},  # early downsampling
    {"bins_per_octave": 36, "n_bins": 252, "tuning": 0.2, "sparsity": 0.0},
    {"window": "hamming", "n_bins": 48, "fmin": 65.0},
], ids=str)  # fmt: skip
@pytest.mark.filterwarnings("ignore::UserWarning")  # librosa: n_fft longer than the octave
def test_cqt_matches_librosa(kwargs: dict[str, object]) -> None:
    options = {"sr": SR, **kwargs}
    want = librosa.cqt(BATCH, res_type="polyphase", **options)  # type: ignore[arg-type]
    got = audio.cqt(BATCH, **options)  # type: ignore[arg-type]
    assert got.dtype == np.complex64
    assert_close_scaled(got, want)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_cqt_estimated_tuning_and_gpuarray() -> None:
    y = BATCH[:2]
    tuning = librosa.estimate_tuning(y=y, sr=SR, bins_per_octave=12)
    want = librosa.cqt(y, sr=SR, tuning=tuning, res_type="polyphase")
    assert_close_scaled(audio.cqt(y, sr=SR, tuning=None), want)
    got = audio.cqt(gp.from_numpy(y[0]), sr=SR)
    assert isinstance(got, gp.GPUArray)


@pytest.mark.parametrize("kwargs", [{}, {"threshold": 0.1, "norm": 2}, {"n_chroma": 12,
                                                                       "bins_per_octave": 24}],
                         ids=str)  # fmt: skip
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_chroma_cqt(kwargs: dict[str, object]) -> None:
    per_octave = int(kwargs.get("bins_per_octave", 36))  # type: ignore[call-overload]
    magnitude = np.abs(librosa.cqt(BATCH, sr=SR, n_bins=7 * per_octave, bins_per_octave=per_octave,
                                   tuning=0.0, res_type="polyphase"))  # fmt: skip
    want = librosa.feature.chroma_cqt(C=magnitude, sr=SR, **kwargs)  # type: ignore[arg-type]
    np.testing.assert_allclose(audio.feature.chroma_cqt(C=magnitude, sr=SR, **kwargs), want,  # type: ignore[arg-type]
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    from_signal = audio.feature.chroma_cqt(y=BATCH, sr=SR, tuning=0.0, **kwargs)  # type: ignore[arg-type]
    np.testing.assert_allclose(from_signal, want, rtol=1e-4, atol=1e-5)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="above the Nyquist frequency"):
        audio.cqt(BATCH, sr=8000)
    with pytest.raises(ValueError, match="res_type='soxr_hq' is not available"):
        audio.cqt(BATCH, sr=SR, res_type="soxr_hq")
    with pytest.raises(ValueError, match="must be a multiple of n_chroma"):
        audio.feature.chroma_cqt(C=np.ones((84, 3), np.float32), bins_per_octave=18)
