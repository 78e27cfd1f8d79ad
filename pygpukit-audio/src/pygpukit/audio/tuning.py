"""Spectral peak tracking (piptrack) and tuning estimation, as librosa's."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from . import filters
from ._arrays import back, positive_rate
from .pitch import parabolic_shifts
from .spectral import spectrogram_of

__all__ = ["estimate_tuning", "piptrack", "pitch_tuning"]


def _along_bins(x: GPUArray) -> GPUArray:
    return gp.matrix_transpose(x)


def piptrack(
    *,
    y: Any = None,
    sr: float = 22050,
    S: Any = None,
    n_fft: int | None = 2048,
    hop_length: int | None = None,
    fmin: float = 150.0,
    fmax: float = 4000.0,
    threshold: float = 0.1,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    pad_mode: str = "constant",
    ref: Any = None,
) -> tuple[Any, Any]:
    """(pitches, magnitudes) (..., n_freq, n_frames): parabola-refined spectral peaks.

    A bin is kept where it is a local maximum over frequency, above threshold times the
    frame's peak (or an absolute `ref`), between fmin and fmax; elsewhere both are 0.
    """
    rate = positive_rate(sr, "piptrack")
    size = 2048 if n_fft is None else n_fft
    hop = size // 4 if hop_length is None else hop_length
    spec, host, size = spectrogram_of("piptrack", y, S, n_fft=size, hop_length=hop,
                                      win_length=win_length, window=window, center=center,
                                      pad_mode=pad_mode, power=1.0)  # fmt: skip
    mag = gp.abs(spec)
    bins = _along_bins(mag)  # (..., t, f): neighbours along the last axis
    n = int(bins.shape[-1])
    # np.gradient: central differences inside, one-sided at the two ends
    slope = gp.concat([bins[..., 1:2] - bins[..., :1], (bins[..., 2:] - bins[..., :-2]) / 2.0,
                       bins[..., -1:] - bins[..., -2:-1]], axis=-1)  # fmt: skip
    shift = parabolic_shifts(bins)
    skew = 0.5 * slope * shift
    if ref is None or callable(ref):
        if ref not in (None, np.max, np.amax):
            raise TypeError("piptrack: ref must be None, np.max or a number")
        floor = threshold * gp.max(bins, axis=-1, keepdims=True)
    else:
        floor = abs(float(ref))
    kept = bins * gp.astype(bins > floor, bins.dtype)
    peak = gp.concat([gp.zeros_like(kept[..., :1]) > 1,
                      (kept[..., 1:-1] > kept[..., :-2]) & (kept[..., 1:-1] >= kept[..., 2:]),
                      kept[..., -1:] > kept[..., -2:-1]], axis=-1)  # fmt: skip
    freqs = filters.fft_frequencies(sr=rate, n_fft=size)
    band = (np.maximum(fmin, 0) <= freqs) & (freqs < np.minimum(fmax, rate / 2))
    peak = peak & gp.asarray(band, device=bins.device)
    index = gp.asarray(np.arange(n, dtype=bins.dtype.name), device=bins.device)
    chosen = gp.astype(peak, bins.dtype)
    pitches = (index + shift) * (rate / size) * chosen
    mags = (bins + skew) * chosen
    return back(_along_bins(pitches), host), back(_along_bins(mags), host)


def pitch_tuning(frequencies: Any, *, resolution: float = 0.01, bins_per_octave: int = 12) -> float:
    """The most common deviation (fraction of a bin) of frequencies from A440 tuning."""
    values = np.atleast_1d(
        frequencies.to_numpy() if isinstance(frequencies, GPUArray) else np.asarray(frequencies)
    )
    values = values[values > 0]
    if not np.any(values):
        warnings.warn("pitch_tuning: no frequencies to estimate tuning from", stacklevel=2)
        return 0.0
    residual = np.mod(bins_per_octave * filters.hz_to_octs(values), 1.0)
    residual[residual >= 0.5] -= 1.0
    edges = np.linspace(-0.5, 0.5, int(np.ceil(1.0 / resolution)) + 1)
    counts, tuning = np.histogram(residual, edges)
    return float(tuning[np.argmax(counts)])


def estimate_tuning(
    *,
    y: Any = None,
    sr: float = 22050,
    S: Any = None,
    n_fft: int | None = 2048,
    resolution: float = 0.01,
    bins_per_octave: int = 12,
    **kwargs: Any,
) -> float:
    """Tuning offset (fraction of a bin) from the loudest tracked peaks (librosa's).

    The median and histogram over the selected peaks run on the host (one number out).
    """
    pitch, mag = piptrack(y=y, sr=sr, S=S, n_fft=n_fft, **kwargs)
    pitch = pitch.to_numpy() if isinstance(pitch, GPUArray) else pitch
    mag = mag.to_numpy() if isinstance(mag, GPUArray) else mag
    found = pitch > 0
    level = np.median(mag[found]) if found.any() else 0.0
    return pitch_tuning(pitch[(mag >= level) & found], resolution=resolution,
                        bins_per_octave=bins_per_octave)  # fmt: skip
