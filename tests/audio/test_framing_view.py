"""The STFT's strided-view frames equal the gathered frames for every pad mode and batch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.audio._framing import PAD_MODES, frame, frame_view


@pytest.mark.parametrize("pad_mode", PAD_MODES)
@pytest.mark.parametrize(("length", "hop", "pad"), [(400, 160, 200), (64, 16, 0), (10, 3, 8)])
def test_view_equals_gather(pad_mode: str, length: int, hop: int, pad: int) -> None:
    y = gp.from_numpy(np.random.default_rng(0).standard_normal((2, 3, 1000)).astype("f4"), "cpu")
    args: dict[str, Any] = {
        "frame_length": length,
        "hop_length": hop,
        "pad": pad,
        "pad_mode": pad_mode,
    }
    view = frame_view(y, "t", **args)
    np.testing.assert_array_equal(view.to_numpy(), frame(y, "t", **args).to_numpy())
    assert not view.writable  # overlapping frames: read-only


def test_view_of_a_strided_signal() -> None:
    base = np.random.default_rng(1).standard_normal(2000).astype("f4")
    y = gp.from_numpy(base, "cpu")[::2]  # not contiguous: copied before the view
    args: dict[str, Any] = {"frame_length": 50, "hop_length": 20, "pad": 0, "pad_mode": "constant"}
    want = np.lib.stride_tricks.sliding_window_view(base[::2], 50)[::20]
    np.testing.assert_array_equal(frame_view(y, "t", **args).to_numpy(), want)


def test_view_rejects_long_frames() -> None:
    y = gp.from_numpy(np.zeros(10, "f4"), "cpu")
    with pytest.raises(ValueError, match="longer than the signal"):
        frame_view(y, "stft", frame_length=32, hop_length=4, pad=0, pad_mode="constant")


@pytest.mark.gpu
@pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU (pygpukit-cuda)")
@pytest.mark.parametrize("pad_mode", ["constant", "reflect"])
def test_view_and_stft_on_cuda(pad_mode: str) -> None:
    """The overlapping view read by the cuda elementwise kernel, and the STFT built on it,
    equal the CPU's; a NaN on the device still raises (the deferred check)."""
    from pygpukit import audio

    host = np.random.default_rng(2).standard_normal((2, 16000)).astype("f4")
    y = gp.from_numpy(host, "cuda")
    args: dict[str, Any] = {"frame_length": 400, "hop_length": 160, "pad": 200,
                            "pad_mode": pad_mode}  # fmt: skip
    want = frame(gp.from_numpy(host, "cpu"), "t", **args).to_numpy()
    np.testing.assert_array_equal(frame_view(y, "t", **args).to_numpy(), want)
    got = audio.stft(y, n_fft=400, hop_length=160, pad_mode=pad_mode).to_numpy()
    ref = audio.stft(host.astype(np.float64), n_fft=400, hop_length=160, pad_mode=pad_mode)
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()
    host[1, 5000] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        audio.stft(gp.from_numpy(host, "cuda"), n_fft=400, hop_length=160)
