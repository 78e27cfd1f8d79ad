"""load / save against soundfile and librosa, the stdlib fallback, and corrupt files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import chirp, noise
from pygpukit import audio
from pygpukit.audio import io as audio_io

# reference libraries: absent on the GPU machine, where this module then skips
librosa = pytest.importorskip("librosa")
soundfile = pytest.importorskip("soundfile")


@pytest.fixture(params=["soundfile", "wave"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each test with soundfile, and again with only the stdlib `wave` module."""
    if request.param == "wave":
        monkeypatch.setattr(audio_io, "_soundfile", lambda: None)
    return str(request.param)


@pytest.mark.parametrize("subtype", ["PCM_16", "PCM_24", "PCM_32", "PCM_U8"])
def test_load_pcm_like_librosa(tmp_path: Path, reader: str, subtype: str) -> None:
    path = tmp_path / "x.wav"
    stereo = 0.5 * np.stack([chirp(), noise(1)])
    soundfile.write(path, stereo.T, 16000, subtype=subtype)
    got, rate = audio.load(path, sr=None, mono=False)
    want, want_rate = librosa.load(path, sr=None, mono=False)
    assert rate == want_rate == 16000 and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    mono, _ = audio.load(path, sr=None)
    np.testing.assert_allclose(mono, librosa.load(path, sr=None)[0], rtol=1e-6, atol=1e-7)
    span, _ = audio.load(path, sr=None, offset=0.1, duration=0.2)
    np.testing.assert_array_equal(span, mono[1600:4800])


def test_load_resamples_polyphase(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "x.wav"
    soundfile.write(path, noise(2, 0.5, 44100), 44100, subtype="PCM_16")
    got, rate = audio.load(path, sr=16000)
    want, _ = librosa.load(path, sr=16000, res_type="polyphase")
    assert rate == 16000
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    on_device, _ = audio.load(path, sr=16000, device="cpu")
    assert isinstance(on_device, gp.GPUArray)


def test_save_round_trip(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "out.wav"
    y = 0.5 * np.stack([chirp(), noise(3)])
    audio.save(path, gp.from_numpy(y), 16000)
    back, rate = audio.load(path, sr=None, mono=False)
    assert rate == 16000 and back.shape == y.shape
    np.testing.assert_allclose(back, y, atol=1.0 / 32767)  # 16-bit quantisation
    assert audio.get_samplerate(path) == 16000


@pytest.mark.parametrize("content", [b"", b"RIFF\x00\x00", b"not audio at all" * 10])
def test_corrupt_file_names_the_file(tmp_path: Path, reader: str, content: bytes) -> None:
    path = tmp_path / "broken.wav"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"broken\.wav"):
        audio.load(path)


def test_truncated_wav(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "cut.wav"
    soundfile.write(path, noise(4), 16000, subtype="PCM_16")
    path.write_bytes(path.read_bytes()[:-1001])  # the header promises more than is there
    if reader == "wave":
        with pytest.raises(ValueError, match=r"cut\.wav.*truncated"):
            audio.load(path, sr=None)
    else:  # libsndfile reads what is there
        assert audio.load(path, sr=None)[0].size < noise(4).size


def test_missing_file_and_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nothere\.wav"):
        audio.load(tmp_path / "nothere.wav")
    with pytest.raises(ValueError, match="sr must be a positive int"):
        audio.save(tmp_path / "a.wav", chirp(), 0)
    with pytest.raises(ValueError, match="NaN"):
        audio.save(tmp_path / "a.wav", np.full(10, np.nan, np.float32), 16000)
