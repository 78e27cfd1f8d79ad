"""Filter banks and frequency grids (mel, FFT bins), made in NumPy as librosa makes them.

These are host-side setup computed once per configuration; the transforms copy them to
the signal's device and apply them with matmul.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._arrays import positive_int, positive_rate

__all__ = [
    "chroma",
    "fft_frequencies",
    "hz_to_mel",
    "hz_to_octs",
    "mel",
    "mel_frequencies",
    "mel_to_hz",
]

# Slaney's auditory-toolbox mel scale: linear below 1 kHz, logarithmic above
_F_SP = 200.0 / 3
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0


def hz_to_mel(frequencies: Any, *, htk: bool = False) -> Any:
    """Frequencies in Hz to mels (Slaney's scale, or HTK's 2595 log10(1 + f / 700))."""
    f = np.asanyarray(frequencies)
    if htk:
        return 2595.0 * np.log10(1.0 + f / 700.0)
    mels = f / _F_SP
    if f.ndim:
        log_part = f >= _MIN_LOG_HZ
        mels[log_part] = _MIN_LOG_MEL + np.log(f[log_part] / _MIN_LOG_HZ) / _LOGSTEP
    elif f >= _MIN_LOG_HZ:
        mels = _MIN_LOG_MEL + np.log(f / _MIN_LOG_HZ) / _LOGSTEP
    return mels


def mel_to_hz(mels: Any, *, htk: bool = False) -> Any:
    """Mels back to Hz (the inverse of hz_to_mel on the same scale)."""
    m = np.asanyarray(mels)
    if htk:
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    freqs = _F_SP * m
    if m.ndim:
        log_part = m >= _MIN_LOG_MEL
        freqs[log_part] = _MIN_LOG_HZ * np.exp(_LOGSTEP * (m[log_part] - _MIN_LOG_MEL))
    elif m >= _MIN_LOG_MEL:
        freqs = _MIN_LOG_HZ * np.exp(_LOGSTEP * (m - _MIN_LOG_MEL))
    return freqs


def mel_frequencies(
    n_mels: int = 128, *, fmin: float = 0.0, fmax: float = 11025.0, htk: bool = False
) -> np.ndarray:
    """`n_mels` frequencies (Hz) evenly spaced on the mel scale from fmin to fmax."""
    n = int(n_mels)
    if n < 0:
        raise ValueError(f"mel_frequencies: n_mels must be >= 0, got {n_mels}")
    low, high = hz_to_mel(fmin, htk=htk), hz_to_mel(fmax, htk=htk)
    result: np.ndarray = mel_to_hz(np.linspace(low, high, n), htk=htk)
    return result


def fft_frequencies(*, sr: float = 22050, n_fft: int = 2048) -> np.ndarray:
    """The centre frequency (Hz) of each of the 1 + n_fft // 2 real-FFT bins."""
    rate = positive_rate(sr, "fft_frequencies")
    size = positive_int(n_fft, "fft_frequencies", "n_fft")
    return np.fft.rfftfreq(n=size, d=1.0 / rate)


def _normalize_rows(weights: np.ndarray, norm: float) -> np.ndarray:
    """Each row divided by its L-`norm` length (rows of zeros left alone)."""
    if norm == np.inf:
        lengths = np.max(np.abs(weights), axis=-1, keepdims=True)
    elif norm == -np.inf:
        lengths = np.min(np.abs(weights), axis=-1, keepdims=True)
    elif norm == 0:
        lengths = np.sum(weights != 0, axis=-1, keepdims=True).astype(weights.dtype)
    elif norm > 0:
        lengths = np.sum(np.abs(weights) ** norm, axis=-1, keepdims=True) ** (1.0 / norm)
    else:
        raise ValueError(f"norm must be 'slaney', None or a p-norm (> 0, inf), got {norm}")
    tiny = np.finfo(weights.dtype).tiny
    lengths = np.where(lengths < tiny, 1.0, lengths)  # leave empty rows at zero
    return (weights / lengths).astype(weights.dtype)


def mel(
    *,
    sr: float,
    n_fft: int,
    n_mels: int = 128,
    fmin: float = 0.0,
    fmax: float | None = None,
    htk: bool = False,
    norm: str | float | None = "slaney",
    dtype: Any = np.float32,
) -> np.ndarray:
    """The (n_mels, 1 + n_fft // 2) triangular mel filter bank, as librosa.filters.mel.

    `norm="slaney"` scales each triangle to constant energy per band (area 1 in Hz / 2),
    a number p normalises each row to unit p-norm, None leaves the peaks at 1. `htk`
    picks the HTK mel scale instead of Slaney's.
    """
    rate = positive_rate(sr, "mel")
    size = positive_int(n_fft, "mel", "n_fft")
    bands = positive_int(n_mels, "mel", "n_mels")
    top = rate / 2.0 if fmax is None else float(fmax)
    if not 0 <= fmin < top:
        raise ValueError(f"mel: need 0 <= fmin < fmax, got fmin={fmin}, fmax={top}")
    if not (norm is None or norm == "slaney" or isinstance(norm, (int, float))):
        raise ValueError(f"norm must be 'slaney', None or a number, got {norm!r}")

    weights = np.zeros((bands, 1 + size // 2), dtype=dtype)
    bins = fft_frequencies(sr=rate, n_fft=size)
    edges = mel_frequencies(bands + 2, fmin=fmin, fmax=top, htk=htk)
    widths = np.diff(edges)
    ramps = np.subtract.outer(edges, bins)  # edge i minus every bin frequency
    for i in range(bands):
        rising = -ramps[i] / widths[i]
        falling = ramps[i + 2] / widths[i + 1]
        weights[i] = np.maximum(0, np.minimum(rising, falling))
    if norm == "slaney":
        weights *= (2.0 / (edges[2 : bands + 2] - edges[:bands]))[:, np.newaxis]
    elif norm is not None:
        weights = _normalize_rows(weights, float(norm))

    # a band whose lower edge is above 0 Hz yet catches no bin: too many mels for n_fft
    empty = ~((edges[:-2] == 0) | (np.max(weights, axis=1) > 0))
    if np.any(empty):
        warnings.warn(
            f"mel: {int(np.sum(empty))} of {bands} mel filters are empty; n_mels={bands} "
            f"may be too many for n_fft={size} (or fmax above sr / 2)",
            UserWarning,
            stacklevel=2,
        )
    return weights


def hz_to_octs(frequencies: Any, *, tuning: float = 0.0, bins_per_octave: int = 12) -> Any:
    """Octave numbers of frequencies, octave 4 starting at A440 / 16 * 16 (librosa's)."""
    a440 = 440.0 * 2.0 ** (tuning / bins_per_octave)
    return np.log2(np.asanyarray(frequencies) / (float(a440) / 16))


def chroma(
    *,
    sr: float,
    n_fft: int,
    n_chroma: int = 12,
    tuning: float = 0.0,
    ctroct: float = 5.0,
    octwidth: float | None = 2,
    norm: float | None = 2,
    base_c: bool = True,
    dtype: Any = np.float32,
) -> np.ndarray:
    """The (n_chroma, 1 + n_fft // 2) chroma filter bank, as librosa.filters.chroma.

    Each FFT bin feeds the pitch classes near its frequency through a Gaussian in
    chroma bins; columns are normalised (`norm`) and weighted by a Gaussian over octaves
    centred at `ctroct` (`octwidth` None: no octave weighting). base_c starts at C.
    """
    rate = positive_rate(sr, "chroma")
    size = positive_int(n_fft, "chroma", "n_fft")
    classes = positive_int(n_chroma, "chroma", "n_chroma")
    frequencies = np.linspace(0, rate, size, endpoint=False)[1:]
    positions = classes * hz_to_octs(frequencies, tuning=tuning, bins_per_octave=classes)
    positions = np.concatenate(([positions[0] - 1.5 * classes], positions))  # DC: far below
    widths = np.concatenate((np.maximum(positions[1:] - positions[:-1], 1.0), [1]))
    distance = np.subtract.outer(positions, np.arange(0, classes, dtype="d")).T
    half = np.round(float(classes) / 2)
    distance = np.remainder(distance + half + 10 * classes, classes) - half
    weights = np.exp(-0.5 * (2 * distance / np.tile(widths, (classes, 1))) ** 2)
    if norm is not None:
        weights = _normalize_rows(weights.T, float(norm)).T
    if octwidth is not None:
        weights *= np.tile(np.exp(-0.5 * (((positions / classes - ctroct) / octwidth) ** 2)),
                           (classes, 1))  # fmt: skip
    if base_c:
        weights = np.roll(weights, -3 * (classes // 12), axis=0)
    return np.ascontiguousarray(weights[:, : int(1 + size / 2)], dtype=dtype)
