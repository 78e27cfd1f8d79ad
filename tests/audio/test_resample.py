"""Polyphase resampling against scipy.signal.resample_poly and librosa (res_type="polyphase")."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import assert_close_scaled, chirp, clicks, noise, sine
from pygpukit import audio

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")
scipy = pytest.importorskip("scipy")
pytest.importorskip("scipy.signal")  # binds scipy.signal


@pytest.mark.parametrize(("up", "down"), [(160, 441), (441, 160), (2, 1), (1, 3), (3, 2),
                                          (147, 160), (7, 5), (4, 6)])  # fmt: skip
def test_matches_resample_poly(up: int, down: int) -> None:
    x = np.stack([chirp(), noise(1), clicks()])
    want = scipy.signal.resample_poly(x, up, down, axis=-1)
    got = audio.resample_poly(x, up, down)
    assert got.dtype == np.float32
    assert_close_scaled(got, want)


@pytest.mark.parametrize(("orig", "target"), [(44100, 16000), (16000, 44100), (48000, 44100),
                                              (22050, 16000), (8000, 8000)])  # fmt: skip
@pytest.mark.parametrize("scale", [False, True])
def test_matches_librosa_polyphase(orig: int, target: int, scale: bool) -> None:
    y = np.stack([sine(440.0, 0.3, orig), noise(2, 0.3, orig)])
    kwargs = dict(orig_sr=orig, target_sr=target, scale=scale)
    want = librosa.resample(y, res_type="polyphase", **kwargs)
    got = audio.resample(y, **kwargs)  # type: ignore[arg-type]
    assert got.shape == want.shape
    assert_close_scaled(got, want)


def test_gpuarray_and_float64() -> None:
    y = noise(3).astype(np.float64)
    got = audio.resample(gp.from_numpy(y), orig_sr=16000, target_sr=8000)
    assert isinstance(got, gp.GPUArray) and got.dtype == gp.float64
    want = librosa.resample(y, orig_sr=16000, target_sr=8000, res_type="polyphase")
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-10, atol=1e-12)


def test_bad_rates_and_types() -> None:
    with pytest.raises(ValueError, match="target_sr must be a positive sample rate"):
        audio.resample(noise(4), orig_sr=16000, target_sr=0)
    with pytest.raises(ValueError, match="integer rates"):
        audio.resample(noise(4), orig_sr=16000.5, target_sr=8000)
    with pytest.raises(ValueError, match="res_type='soxr_hq' is not available"):
        audio.resample(noise(4), orig_sr=16000, target_sr=8000, res_type="soxr_hq")
    with pytest.raises(ValueError, match="up must be an int >= 1"):
        audio.resample_poly(noise(4), 0, 2)


def test_long_signals_run_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    resample_module = importlib.import_module("pygpukit.audio.resample")  # not the function

    monkeypatch.setattr(resample_module, "_CHUNK_ELEMENTS", 20_000)  # many small chunks
    x = np.stack([chirp(), noise(5)])
    assert_close_scaled(
        audio.resample_poly(x, 160, 441), scipy.signal.resample_poly(x, 160, 441, axis=-1)
    )
