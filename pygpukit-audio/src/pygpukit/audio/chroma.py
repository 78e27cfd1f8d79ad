"""Chromagrams from the STFT (librosa.feature.chroma_stft)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp

from . import filters
from ._arrays import back, on_device, positive_rate
from .spectral import spectrogram_of
from .tuning import estimate_tuning

__all__ = ["chroma_stft", "normalize_columns"]


def normalize_columns(x: Any, norm: float | None) -> Any:
    """x divided by each column's `norm` (axis -2; inf: max |x|), ~0 columns left as is."""
    if norm is None:
        return x
    if norm == np.inf:
        length = gp.max(gp.abs(x), axis=-2, keepdims=True)
    elif norm == 1:
        length = gp.sum(gp.abs(x), axis=-2, keepdims=True)
    elif norm == 2:
        length = gp.sqrt(gp.sum(gp.square(x), axis=-2, keepdims=True))
    else:
        raise ValueError(f"chroma: norm must be None, 1, 2 or np.inf, got {norm}")
    tiny = float(np.finfo(x.dtype.name).tiny)
    return x / gp.where(length < tiny, gp.ones_like(length), length)


def chroma_stft(
    *,
    y: Any = None,
    sr: float = 22050,
    S: Any = None,
    norm: float | None = np.inf,
    n_fft: int = 2048,
    hop_length: int = 512,
    win_length: int | None = None,
    window: Any = "hann",
    center: bool = True,
    pad_mode: str = "constant",
    tuning: float | None = None,
    n_chroma: int = 12,
    **kwargs: Any,
) -> Any:
    """Energy per pitch class (..., n_chroma, n_frames) from the power spectrogram.

    tuning=None estimates it from the signal (a host-side step); pass a number to keep
    the whole path on the device. `kwargs` go to filters.chroma (ctroct, octwidth, ...).
    """
    rate = positive_rate(sr, "chroma_stft")
    spec, host, size = spectrogram_of("chroma_stft", y, S, n_fft=n_fft, hop_length=hop_length,
                                      win_length=win_length, window=window, center=center,
                                      pad_mode=pad_mode, power=2.0)  # fmt: skip
    if tuning is None:
        tuning = estimate_tuning(S=spec, sr=rate, bins_per_octave=n_chroma)
    bank = filters.chroma(sr=rate, n_fft=size, tuning=tuning, n_chroma=n_chroma, **kwargs)
    if spec.dtype.is_complex:
        raise TypeError("chroma_stft: S must be a real power spectrogram")
    raw = gp.matmul(on_device(bank.astype(spec.dtype.name), spec), spec)
    return back(normalize_columns(raw, norm), host)
