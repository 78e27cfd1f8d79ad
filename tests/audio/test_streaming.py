"""StreamingSTFT: frames from pushed chunks equal the offline stft bit for bit."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from audio_signals import chirp, noise
from pygpukit import audio
from pygpukit.audio.streaming import StreamingSTFT


def _stream(y: np.ndarray, stream: StreamingSTFT, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    parts, i = [], 0
    while i < y.shape[-1]:
        k = int(rng.integers(1, 700))
        parts.append(stream.push(y[..., i : i + k]))
        i += k
    parts.append(stream.flush())
    return np.concatenate(parts, axis=-1)


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize(
    ("n_fft", "hop", "win"), [(400, 160, None), (512, 128, 300), (256, 256, None)]
)
def test_chunks_give_the_offline_frames(
    center: bool, n_fft: int, hop: int, win: int | None
) -> None:
    y = np.stack([chirp(), noise(1)])
    kwargs = dict(n_fft=n_fft, hop_length=hop, win_length=win, center=center)
    got = _stream(y, StreamingSTFT(**kwargs), seed=n_fft)  # type: ignore[arg-type]
    np.testing.assert_array_equal(got, audio.stft(y, **kwargs))  # type: ignore[arg-type]


def test_one_sample_at_a_time_and_reset() -> None:
    y = noise(2)[:1200]
    stream = StreamingSTFT(n_fft=256, hop_length=64)
    parts = [stream.push(y[i : i + 1]) for i in range(y.size)] + [stream.flush()]
    np.testing.assert_array_equal(
        np.concatenate(parts, axis=-1), audio.stft(y, n_fft=256, hop_length=64)
    )
    with pytest.raises(ValueError, match="flushed"):
        stream.push(y)
    stream.reset()
    assert stream.push(y[:10]).shape == (129, 0)


def test_gpuarray_chunks_stay_on_device() -> None:
    y = gp.from_numpy(chirp())
    stream = StreamingSTFT(n_fft=400, hop_length=160)
    out = stream.push(y[:4000])
    assert isinstance(out, gp.GPUArray) and out.device == y.device


def test_bad_chunks() -> None:
    stream = StreamingSTFT(n_fft=256)
    with pytest.raises(ValueError, match="NaN"):
        stream.push(np.array([0.0, np.nan], np.float32))
    stream.push(np.zeros((2, 100), np.float32))
    with pytest.raises(ValueError, match="leading shape"):
        stream.push(np.zeros(100, np.float32))
    with pytest.raises(TypeError, match="floating point"):
        StreamingSTFT().push(np.zeros(10, np.int16))
    with pytest.raises(ValueError, match="no samples"):
        StreamingSTFT().flush()
