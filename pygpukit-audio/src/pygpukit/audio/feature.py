"""`pygpukit.audio.feature`: the feature extractors under librosa.feature's names."""

from __future__ import annotations

from .cepstral import delta, mfcc
from .chroma import chroma_stft
from .constantq import chroma_cqt
from .features import (
    rms,
    spectral_bandwidth,
    spectral_centroid,
    spectral_flatness,
    spectral_rolloff,
    zero_crossing_rate,
)
from .spectral import melspectrogram

__all__ = [
    "chroma_cqt",
    "chroma_stft",
    "delta",
    "melspectrogram",
    "mfcc",
    "rms",
    "spectral_bandwidth",
    "spectral_centroid",
    "spectral_flatness",
    "spectral_rolloff",
    "zero_crossing_rate",
]
