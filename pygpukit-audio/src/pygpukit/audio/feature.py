"""`pygpukit.audio.feature`: the feature extractors under librosa.feature's names."""

from __future__ import annotations

from .spectral import melspectrogram

__all__ = ["melspectrogram"]
