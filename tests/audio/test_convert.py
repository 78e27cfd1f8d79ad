"""Decibel conversions against librosa."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import chirp, noise
from pygpukit import audio

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")


def _power() -> np.ndarray:
    y = np.stack([chirp(), noise(7)])
    return np.abs(librosa.stft(y, n_fft=512)) ** 2


@pytest.mark.parametrize("ref", [1.0, 0.5, np.max, np.mean])
@pytest.mark.parametrize("top_db", [80.0, 40.0, None])
@pytest.mark.parametrize("amin", [1e-10, 1e-4])
def test_power_to_db(ref: object, top_db: float | None, amin: float) -> None:
    s = _power()
    want = librosa.power_to_db(s, ref=ref, top_db=top_db, amin=amin)  # type: ignore[arg-type]
    got = audio.power_to_db(s, ref=ref, top_db=top_db, amin=amin)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)  # dB: 1e-4 dB = 2e-5 relative


@pytest.mark.parametrize("ref", [1.0, np.max])
@pytest.mark.parametrize("top_db", [80.0, None])
def test_amplitude_to_db_and_inverses(ref: object, top_db: float | None) -> None:
    mag = np.sqrt(_power())
    want = librosa.amplitude_to_db(mag, ref=ref, top_db=top_db)  # type: ignore[arg-type]
    got = audio.amplitude_to_db(mag, ref=ref, top_db=top_db)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    db = want.astype(np.float32)
    want_amplitude = librosa.db_to_amplitude(db, ref=2.0)
    np.testing.assert_allclose(audio.db_to_amplitude(db, ref=2.0), want_amplitude, rtol=1e-5,
                               atol=1e-6)  # fmt: skip
    np.testing.assert_allclose(audio.db_to_power(db), librosa.db_to_power(db), rtol=1e-5, atol=1e-6)


def test_on_gpuarray_with_np_max_reference() -> None:
    s = _power().astype(np.float32)
    got = audio.power_to_db(gp.from_numpy(s), ref=np.max)
    assert isinstance(got, gp.GPUArray)
    np.testing.assert_allclose(got.to_numpy(), librosa.power_to_db(s, ref=np.max), rtol=1e-5,
                               atol=1e-4)  # fmt: skip


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="amin must be strictly positive"):
        audio.power_to_db(_power(), amin=0.0)
    with pytest.raises(ValueError, match="top_db must be non-negative"):
        audio.amplitude_to_db(_power(), top_db=-1.0)
