"""Mel filter banks and frequency grids against librosa."""

from __future__ import annotations

import numpy as np
import pytest
from pygpukit.audio import fft_frequencies, filters, hz_to_mel, mel_frequencies, mel_to_hz

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")

# 128 mels at n_fft 400 leave a few bands empty (librosa warns too; whisper uses that bank)
pytestmark = pytest.mark.filterwarnings("ignore:.*[Ee]mpty.*:UserWarning")


@pytest.mark.parametrize("htk", [False, True])
@pytest.mark.parametrize("norm", ["slaney", None, 1, 2, np.inf])
@pytest.mark.parametrize(("sr", "n_fft", "n_mels", "fmin", "fmax"), [
    (16000, 400, 80, 0.0, None), (16000, 400, 128, 0.0, 8000.0), (22050, 2048, 128, 30.0, 9000.0),
    (44100, 1024, 40, 0.0, None),
])  # fmt: skip
def test_mel_matches_librosa(htk: bool, norm: object, sr: int, n_fft: int, n_mels: int,
                             fmin: float, fmax: float | None) -> None:  # fmt: skip
    kwargs = dict(sr=sr, n_fft=n_fft, n_mels=n_mels, fmin=fmin, fmax=fmax, htk=htk, norm=norm)
    want = librosa.filters.mel(**kwargs)  # type: ignore[arg-type]
    got = filters.mel(**kwargs)  # type: ignore[arg-type]
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_mel_float64() -> None:
    want = librosa.filters.mel(sr=16000, n_fft=512, dtype=np.float64)
    got = filters.mel(sr=16000, n_fft=512, dtype=np.float64)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_too_many_mels_warns_like_librosa() -> None:
    with pytest.warns(UserWarning, match="empty"):
        filters.mel(sr=16000, n_fft=64, n_mels=128)


@pytest.mark.parametrize("htk", [False, True])
def test_scales_and_grids(htk: bool) -> None:
    hz = np.array([0.0, 50.0, 999.0, 1000.0, 4000.0, 11025.0])
    np.testing.assert_allclose(hz_to_mel(hz, htk=htk), librosa.hz_to_mel(hz, htk=htk), rtol=1e-12)
    mels = librosa.hz_to_mel(hz, htk=htk)
    np.testing.assert_allclose(mel_to_hz(mels, htk=htk), librosa.mel_to_hz(mels, htk=htk),
                               rtol=1e-12, atol=1e-9)  # fmt: skip
    assert float(hz_to_mel(2000.0, htk=htk)) == pytest.approx(librosa.hz_to_mel(2000.0, htk=htk))
    np.testing.assert_allclose(
        mel_frequencies(40, fmin=20.0, fmax=8000.0, htk=htk),
        librosa.mel_frequencies(40, fmin=20.0, fmax=8000.0, htk=htk), rtol=1e-12)  # fmt: skip
    np.testing.assert_array_equal(fft_frequencies(sr=16000, n_fft=400),
                                  librosa.fft_frequencies(sr=16000, n_fft=400))  # fmt: skip


def test_bad_filter_arguments() -> None:
    with pytest.raises(ValueError, match="sr must be a positive sample rate"):
        filters.mel(sr=0, n_fft=400)
    with pytest.raises(TypeError, match="n_fft must be an int"):
        filters.mel(sr=16000, n_fft=400.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fmin < fmax"):
        filters.mel(sr=16000, n_fft=400, fmin=5000.0, fmax=4000.0)
    with pytest.raises(ValueError, match="norm"):
        filters.mel(sr=16000, n_fft=400, norm="area")
