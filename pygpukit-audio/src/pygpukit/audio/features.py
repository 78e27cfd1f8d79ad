"""Frame-wise features: spectral centroid/bandwidth/rolloff/flatness, zero-crossing rate, RMS.

Each follows librosa.feature's function of the same name and returns (..., 1, n_frames).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from . import filters
from ._arrays import back, check_audio, on_device, positive_int, positive_rate, to_device
from ._framing import frame
from .spectral import spectrogram_of

__all__ = [
    "rms",
    "spectral_bandwidth",
    "spectral_centroid",
    "spectral_flatness",
    "spectral_rolloff",
    "zero_crossing_rate",
]


def _magnitude(fn: str, y: Any, S: Any, kw: dict[str, Any]) -> tuple[GPUArray, bool, int]:
    spec, host, n_fft = spectrogram_of(fn, y, S, power=1.0, **kw)
    if spec.dtype.is_complex:
        raise TypeError(f"{fn}: S must be a real magnitude spectrogram, got {spec.dtype.name}")
    if S is not None and bool(gp.any(spec < 0)):
        raise ValueError(f"{fn}: S must hold non-negative magnitudes")
    return spec, host, n_fft


def _frequencies(fn: str, freq: Any, sr: float, n_fft: int, spec: GPUArray) -> GPUArray:
    """The bin frequencies as a (n_freq, 1) column on spec's device (or the given `freq`)."""
    if freq is None:
        values = filters.fft_frequencies(sr=positive_rate(sr, fn), n_fft=n_fft)[:, np.newaxis]
        return on_device(values.astype(spec.dtype.name), spec)
    given, _ = to_device(freq, fn, "freq")
    if given.ndim == 1:
        if given.shape[0] != spec.shape[-2]:
            raise ValueError(f"{fn}: freq has {given.shape[0]} bins, S has {spec.shape[-2]}")
        return gp.reshape(gp.astype(given, spec.dtype), (given.shape[0], 1))
    return gp.astype(given, spec.dtype)


def _l1_columns(spec: GPUArray) -> GPUArray:
    """Each column divided by its sum of |values| (all-zero columns left at zero)."""
    total = gp.sum(gp.abs(spec), axis=-2, keepdims=True)
    tiny = float(np.finfo(spec.dtype.name).tiny)
    return spec / gp.where(total < tiny, gp.ones_like(total), total)


def _stft_kw(n_fft: int, hop_length: int, win_length: Any, window: Any, center: bool,
             pad_mode: str) -> dict[str, Any]:  # fmt: skip
    return dict(n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window,
                center=center, pad_mode=pad_mode)  # fmt: skip


def spectral_centroid(
    *,
    y: Any = None,
    sr: float = 22050,
    S: Any = None,
    n_fft: int = 2048,
    hop_length: int = 512,
    freq: Any = None,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    pad_mode: str = "constant",
) -> Any:
    """The magnitude-weighted mean frequency of each frame, (..., 1, n_frames)."""
    kw = _stft_kw(n_fft, hop_length, win_length, window, center, pad_mode)
    spec, host, size = _magnitude("spectral_centroid", y, S, kw)
    bins = _frequencies("spectral_centroid", freq, sr, size, spec)
    return back(gp.sum(bins * _l1_columns(spec), axis=-2, keepdims=True), host)


def spectral_bandwidth(
    *,
    y: Any = None,
    sr: float = 22050,
    S: Any = None,
    n_fft: int = 2048,
    hop_length: int = 512,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    pad_mode: str = "constant",
    freq: Any = None,
    centroid: Any = None,
    norm: bool = True,
    p: float = 2,
) -> Any:
    """The p-th order spread of frequencies around each frame's centroid, (..., 1, n_frames)."""
    kw = _stft_kw(n_fft, hop_length, win_length, window, center, pad_mode)
    spec, host, size = _magnitude("spectral_bandwidth", y, S, kw)
    bins = _frequencies("spectral_bandwidth", freq, sr, size, spec)
    if centroid is None:
        mean = gp.sum(bins * _l1_columns(spec), axis=-2, keepdims=True)
    else:
        mean = gp.astype(to_device(centroid, "spectral_bandwidth", "centroid")[0], spec.dtype)
    deviation = gp.abs(bins - mean)
    weights = _l1_columns(spec) if norm else spec
    return back(gp.sum(weights * deviation**p, axis=-2, keepdims=True) ** (1.0 / p), host)


def spectral_rolloff(
    *,
    y: Any = None,
    sr: float = 22050,
    S: Any = None,
    n_fft: int = 2048,
    hop_length: int = 512,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    pad_mode: str = "constant",
    freq: Any = None,
    roll_percent: float = 0.85,
) -> Any:
    """The lowest frequency below which roll_percent of each frame's energy lies."""
    if not 0.0 < roll_percent < 1.0:
        raise ValueError(f"spectral_rolloff: roll_percent must be in (0, 1), got {roll_percent}")
    kw = _stft_kw(n_fft, hop_length, win_length, window, center, pad_mode)
    spec, host, size = _magnitude("spectral_rolloff", y, S, kw)
    bins = _frequencies("spectral_rolloff", freq, sr, size, spec)
    running = gp.cumulative_sum(spec, axis=-2)
    threshold = roll_percent * running[..., -1:, :]
    candidates = gp.where(running < threshold, float("inf"), bins + gp.zeros_like(running))
    return back(gp.min(candidates, axis=-2, keepdims=True), host)


def spectral_flatness(
    *,
    y: Any = None,
    S: Any = None,
    n_fft: int = 2048,
    hop_length: int = 512,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    pad_mode: str = "constant",
    amin: float = 1e-10,
    power: float = 2.0,
) -> Any:
    """Geometric over arithmetic mean of each frame's power: 1 for white noise, ~0 for tones."""
    if amin <= 0:
        raise ValueError(f"spectral_flatness: amin must be strictly positive, got {amin}")
    kw = _stft_kw(n_fft, hop_length, win_length, window, center, pad_mode)
    spec, host, _ = _magnitude("spectral_flatness", y, S, kw)
    floored = gp.maximum(spec**power if power != 1 else spec, amin)
    geometric = gp.exp(gp.mean(gp.log(floored), axis=-2, keepdims=True))
    return back(geometric / gp.mean(floored, axis=-2, keepdims=True), host)


def zero_crossing_rate(
    y: Any,
    *,
    frame_length: int = 2048,
    hop_length: int = 512,
    center: bool = True,
    threshold: float = 1e-10,
) -> Any:
    """The fraction of sign changes in each frame, (..., 1, n_frames).

    As librosa: centring pads frame_length // 2 copies of the end samples, |y| <= threshold
    counts as 0 (positive), and a frame's first sample never counts as a crossing.
    """
    signal, host = to_device(y, "zero_crossing_rate")
    check_audio(signal, "zero_crossing_rate")
    length = positive_int(frame_length, "zero_crossing_rate", "frame_length")
    hop = positive_int(hop_length, "zero_crossing_rate", "hop_length")
    pad = length // 2 if center else 0
    frames = frame(signal, "zero_crossing_rate", frame_length=length, hop_length=hop, pad=pad,
                   pad_mode="edge")  # fmt: skip
    negative = gp.signbit(gp.where(gp.abs(frames) <= threshold, 0.0, frames))
    changes = negative[..., 1:] != negative[..., :-1]
    count = gp.sum(gp.astype(changes, signal.dtype), axis=-1)
    return back(gp.expand_dims(count / float(length), axis=-2), host)


def rms(
    *,
    y: Any = None,
    S: Any = None,
    frame_length: int = 2048,
    hop_length: int = 512,
    center: bool = True,
    pad_mode: str = "constant",
    dtype: Any = np.float32,
) -> Any:
    """Root-mean-square energy of each frame, from samples or a spectrogram, (..., 1, n_frames)."""
    length = positive_int(frame_length, "rms", "frame_length")
    hop = positive_int(hop_length, "rms", "hop_length")
    out_dtype = getattr(gp, np.dtype(dtype).name)
    if y is not None:
        signal, host = to_device(y, "rms")
        check_audio(signal, "rms")
        pad = length // 2 if center else 0
        frames = frame(signal, "rms", frame_length=length, hop_length=hop, pad=pad,
                       pad_mode=pad_mode)  # fmt: skip
        power = gp.mean(gp.square(gp.astype(frames, out_dtype)), axis=-1)
        return back(gp.expand_dims(gp.sqrt(power), axis=-2), host)
    if S is None:
        raise ValueError("rms: give an audio signal y or a spectrogram S")
    spec, host = to_device(S, "rms", "S")
    if spec.ndim < 2 or spec.shape[-2] != length // 2 + 1:
        raise ValueError(
            f"rms: S has {spec.shape[-2] if spec.ndim >= 2 else 'no'} frequency bins; "
            f"frame_length={length} needs {length // 2 + 1}"
        )
    energy = gp.square(gp.abs(spec)) if spec.dtype.is_complex else gp.square(spec)
    energy = gp.astype(energy, out_dtype)
    # the DC bin (and Nyquist for even frames) appears once in a one-sided spectrum
    edge = np.ones(spec.shape[-2], np.dtype(dtype))
    edge[0] = 0.5
    if length % 2 == 0:
        edge[-1] *= 0.5
    energy = energy * on_device(edge[:, np.newaxis], energy)
    power = 2.0 * gp.sum(energy, axis=-2, keepdims=True) / float(length) ** 2
    return back(gp.sqrt(power), host)
